//! What Postgres can store: its `text` and `jsonb` hold no U+0000, so a document carrying one is
//! refused where it arrives (a request body, a module's manifest) rather than failing the
//! command that would store it.

use serde_json::Value;

use crate::issue::pointer;

/// What an issue about a NUL says.
pub const NUL_MESSAGE: &str = "text may not contain the character U+0000";

/// The JSON Pointer of the first string or object key in `value` that holds U+0000.
pub fn nul_at(value: &Value) -> Option<String> {
    nul_below(value, "")
}

fn nul_below(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(|| at.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| nul_below(item, &pointer(at, &index.to_string()))),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            let here = pointer(at, key);
            if key.contains('\0') {
                Some(here)
            } else {
                nul_below(item, &here)
            }
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_nul_is_found_in_values_and_keys_at_any_depth() {
        assert_eq!(
            nul_at(&json!({"a": [1, "x", {"b": "c\u{0}"}]})),
            Some("/a/2/b".into())
        );
        assert_eq!(nul_at(&json!({"k\u{0}": 1})), Some("/k\u{0}".into()));
        assert_eq!(nul_at(&json!("\u{0}")), Some(String::new()));
        assert_eq!(
            nul_at(&json!({"a": "\\u0000", "b": [null, true, 1.5]})),
            None
        );
    }
}
