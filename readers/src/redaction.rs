//! What a caller without `runs:context` sees of recorded inputs, outputs and errors (SPEC 2.3,
//! 2.4): every leaf value becomes `[redacted]`, at every depth; objects keep their keys and
//! arrays their length, so the shape stays recognisable and nothing else does.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
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

/// [`redact_values`] of a JSON document given as text, written straight out as text: no value
/// tree is built, which for a page of invocations cost the API more than the rest of its answer
/// (BENCHMARKS.md "Twice the webhooks", fourth stop: "Redacted payloads without a value
/// tree"). Keys keep the order they have in the text. `None` when `text` is not one JSON
/// document.
pub(crate) fn redact_json(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut document = serde_json::Deserializer::from_str(text);
    Redact {
        out: &mut out,
        top: true,
    }
    .deserialize(&mut document)
    .ok()?;
    document.end().ok()?;
    Some(out)
}

/// Writes the redacted form of the value it is handed to `out`.
struct Redact<'o> {
    out: &'o mut Vec<u8>,
    /// The document itself, whose `null` stays `null`.
    top: bool,
}

impl Redact<'_> {
    fn leaf<E>(self) -> Result<(), E> {
        self.out.push(b'"');
        self.out.extend_from_slice(REDACTED.as_bytes());
        self.out.push(b'"');
        Ok(())
    }

    fn inner(&mut self) -> Redact<'_> {
        Redact {
            out: self.out,
            top: false,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Redact<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, value: D) -> Result<(), D::Error> {
        value.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Redact<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        if self.top {
            self.out.extend_from_slice(b"null");
            Ok(())
        } else {
            self.leaf()
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut items: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            // The separator goes before an item; taken back when there is none.
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            if items.next_element_seed(self.inner())?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut entries: A) -> Result<(), A::Error> {
        self.out.push(b'{');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            if entries.next_key_seed(Key { out: self.out })?.is_none() {
                self.out.truncate(mark);
                break;
            }
            self.out.push(b':');
            entries.next_value_seed(self.inner())?;
            first = false;
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Writes an object's key, as the JSON string it is, to `out`.
struct Key<'o> {
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, key: D) -> Result<(), D::Error> {
        key.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, key).map_err(E::custom)
    }
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

    /// The text redactor answers what the value redactor does, for any document.
    fn same_as_values(text: &str) {
        let streamed = redact_json(text).expect("one JSON document");
        let streamed: Value = serde_json::from_slice(&streamed).expect("it writes JSON");
        let value: Value = serde_json::from_str(text).expect("json");
        assert_eq!(streamed, redact_values(value), "{text}");
    }

    #[test]
    fn the_text_redactor_hides_what_the_value_redactor_hides() {
        for text in [
            r#"{"name": "Ada", "n": 4, "f": -1.5e3, "big": 18446744073709551615,
                "nested": {"ssn": "123", "deeper": {"ok": true, "none": null}},
                "list": [1, {"k": "v"}, [2], [], {}], "esc\"aped\u00e9\n": "x\"y"}"#,
            "[]",
            "{}",
            "[null, [null]]",
            r#""secret""#,
            "0",
            "null",
            "  {\"a\" : [ 1 , 2 ] }  ",
        ] {
            same_as_values(text);
        }
    }

    #[test]
    fn the_text_redactor_keeps_the_keys_order_and_refuses_what_is_not_one_document() {
        assert_eq!(
            redact_json(r#"{"b": 1, "a": [true, null]}"#).as_deref(),
            Some(br#"{"b":"[redacted]","a":["[redacted]","[redacted]"]}"#.as_slice())
        );
        assert_eq!(redact_json("null").as_deref(), Some(b"null".as_slice()));
        for broken in ["", "{", "[1,]", "{} {}", "nul"] {
            assert_eq!(redact_json(broken), None, "{broken:?}");
        }
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
