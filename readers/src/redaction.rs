//! What a caller without `runs:context` sees of recorded inputs, outputs and errors (SPEC 2.3,
//! 2.4): every value replaced by `[redacted]`, the keys kept so the shape stays recognisable.

use serde_json::Value;

pub const REDACTED: &str = "[redacted]";

/// Whether the caller may read recorded payloads in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// Holds `runs:context`.
    Full,
    /// Everyone else.
    Redacted,
}

/// Replaces each value of an object by `[redacted]`, keeping its keys. Anything that is not an
/// object becomes `[redacted]` whole; `null` stays `null` (there is nothing to hide).
pub fn redact_values(value: Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, _)| (k, Value::String(REDACTED.to_owned())))
                .collect(),
        ),
        _ => Value::String(REDACTED.to_owned()),
    }
}

/// An error text as a caller without `runs:context` sees it.
pub fn redact_text(text: Option<String>) -> Option<String> {
    text.map(|_| REDACTED.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_keys_and_hides_every_value() {
        let hidden = redact_values(json!({"name": "Ada", "nested": {"ssn": "123"}, "n": 4}));
        assert_eq!(
            hidden,
            json!({"name": REDACTED, "nested": REDACTED, "n": REDACTED})
        );
    }

    #[test]
    fn scalars_and_arrays_are_hidden_whole_and_null_stays() {
        assert_eq!(redact_values(json!([1, 2])), json!(REDACTED));
        assert_eq!(redact_values(json!("secret")), json!(REDACTED));
        assert_eq!(redact_values(Value::Null), Value::Null);
        assert_eq!(redact_text(Some("boom".into())), Some(REDACTED.into()));
        assert_eq!(redact_text(None), None);
    }
}
