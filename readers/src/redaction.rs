//! What a caller without `runs:context` sees of recorded inputs, outputs and errors (SPEC 2.3,
//! 2.4): every leaf value becomes `[redacted]`, at every depth; objects keep their keys and
//! arrays their length, so the shape stays recognisable and nothing else does.

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

/// A recorded payload as a caller without `runs:context` sees it. An absent payload (`null` at
/// the top) stays `null`: there is nothing to hide.
pub fn redact_values(value: Value) -> Value {
    match value {
        Value::Null => Value::Null,
        other => redact(other),
    }
}

fn redact(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, redact(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(redact).collect()),
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
    fn keys_are_kept_and_every_leaf_is_hidden_at_every_depth() {
        let hidden = redact_values(json!({
            "name": "Ada",
            "n": 4,
            "nested": { "ssn": "123", "deeper": { "ok": true, "none": null } },
            "list": [1, { "k": "v" }, [2]]
        }));
        assert_eq!(
            hidden,
            json!({
                "name": REDACTED,
                "n": REDACTED,
                "nested": { "ssn": REDACTED, "deeper": { "ok": REDACTED, "none": REDACTED } },
                "list": [REDACTED, { "k": REDACTED }, [REDACTED]]
            })
        );
    }

    #[test]
    fn scalars_are_hidden_and_an_absent_payload_stays_absent() {
        assert_eq!(redact_values(json!("secret")), json!(REDACTED));
        assert_eq!(redact_values(json!([1, 2])), json!([REDACTED, REDACTED]));
        assert_eq!(redact_values(Value::Null), Value::Null);
        assert_eq!(redact_text(Some("boom".into())), Some(REDACTED.into()));
        assert_eq!(redact_text(None), None);
    }
}
