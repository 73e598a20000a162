//! An invocation's input or output as Postgres hands it over: JSON text, passed through to the
//! answer unparsed (a page of 50 records carries about 35 KB of it, which parsing into values
//! and writing out again cost the API more than the rest of the page), and redacted from text
//! to text.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::redaction::{REDACTED, redact_json};

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// As stored (`jsonb`'s text), written into the answer as it is.
    Stored(Box<RawValue>),
    /// For a caller who may see the keys but not the values: the stored text with every value
    /// replaced.
    Redacted(Box<RawValue>),
}

impl Payload {
    pub(super) fn redacted(self) -> Self {
        match self {
            Payload::Stored(raw) => Payload::Redacted(
                redact_json(raw.get())
                    .and_then(|text| String::from_utf8(text).ok())
                    .and_then(|text| RawValue::from_string(text).ok())
                    // Postgres hands over valid JSON; should it not, nothing of it is shown.
                    .unwrap_or_else(hidden),
            ),
            redacted => redacted,
        }
    }
}

/// The whole payload hidden.
fn hidden() -> Box<RawValue> {
    serde_json::value::to_raw_value(REDACTED).unwrap_or_default()
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Stored(a), Payload::Stored(b)) => a.get() == b.get(),
            (Payload::Redacted(a), Payload::Redacted(b)) => a.get() == b.get(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn stored(text: &str) -> Payload {
        Payload::Stored(RawValue::from_string(text.to_owned()).expect("json"))
    }

    #[test]
    fn a_stored_payload_is_answered_byte_for_byte() {
        let text = r#"{"b": [1, 2.50, "x\u00e9"], "a": {"n": null}}"#;
        assert_eq!(serde_json::to_string(&stored(text)).expect("written"), text);
    }

    #[test]
    fn a_redacted_payload_keeps_its_keys_and_loses_its_values() {
        let redacted = stored(r#"{"ssn": "123", "tags": ["a"], "n": null}"#).redacted();
        assert_eq!(
            serde_json::to_value(&redacted).expect("written"),
            json!({"ssn": REDACTED, "tags": [REDACTED], "n": REDACTED})
        );
        assert_eq!(
            serde_json::to_value(stored("null").redacted()).expect("written"),
            Value::Null
        );
    }
}
