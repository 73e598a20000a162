//! Keys whose values never reach a log line (SPEC "Operations reference: Logs").
//!
//! The rule is applied to the finished JSON object of a line, at the top level and one level
//! down, so a field recorded as a JSON object (`headers`, `req`) is censored too.

use serde_json::{Map, Value};

/// Replacement written in place of a censored value.
pub const REDACTED: &str = "[redacted]";

/// Keys censored wherever they appear at the top level or one level down.
const CENSORED_KEYS: &[&str] = &[
    "authorization",
    "token",
    "secrets",
    "apiKey",
    "secretKey",
    "webhookSecret",
    "password",
    "submissionUrl",
    "link",
];

/// True when a value under `key` must not be logged.
pub fn is_censored_key(key: &str) -> bool {
    CENSORED_KEYS.contains(&key)
}

/// Censors `line` in place: top-level keys, keys of objects one level down, and
/// `req.headers.authorization` (headers are two levels down under `req`).
pub fn censor_line(line: &mut Map<String, Value>) {
    for (key, value) in line.iter_mut() {
        if is_censored_key(key) {
            *value = Value::String(REDACTED.to_owned());
            continue;
        }
        if let Value::Object(inner) = value {
            censor_level(inner);
            if key == "req"
                && let Some(Value::Object(headers)) = inner.get_mut("headers")
            {
                censor_level(headers);
            }
        }
    }
}

fn censor_level(object: &mut Map<String, Value>) {
    for (key, value) in object.iter_mut() {
        if is_censored_key(key) {
            *value = Value::String(REDACTED.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn censored(value: Value) -> Value {
        let Value::Object(mut map) = value else {
            panic!("test input must be an object")
        };
        censor_line(&mut map);
        Value::Object(map)
    }

    #[test]
    fn censors_every_listed_key_at_the_top_level() {
        for key in CENSORED_KEYS {
            let line = censored(json!({ *key: "canary-0xC0FFEE", "keep": "visible" }));
            assert_eq!(line[*key], REDACTED, "{key}");
            assert_eq!(line["keep"], "visible");
        }
    }

    #[test]
    fn censors_one_level_down_and_request_headers() {
        let line = censored(json!({
            "headers": { "authorization": "Bearer canary", "accept": "*/*" },
            "req": { "headers": { "authorization": "Bearer canary" }, "password": "canary" },
            "config": { "apiKey": "canary", "region": "eu" },
        }));
        assert_eq!(line["headers"]["authorization"], REDACTED);
        assert_eq!(line["headers"]["accept"], "*/*");
        assert_eq!(line["req"]["headers"]["authorization"], REDACTED);
        assert_eq!(line["req"]["password"], REDACTED);
        assert_eq!(line["config"]["apiKey"], REDACTED);
        assert_eq!(line["config"]["region"], "eu");
    }

    #[test]
    fn a_censored_object_is_replaced_whole() {
        let line = censored(json!({ "secrets": { "apiKey": "canary" } }));
        assert_eq!(line["secrets"], REDACTED);
    }
}
