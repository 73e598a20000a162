//! Keys whose values never reach a log line (SPEC "Operations reference: Logs"): censored at
//! the top level of a line and one level down, inside a field logged as a JSON object, and
//! under `req.headers`.

use serde_json::{Map, Value};

/// Written in place of a censored value.
pub(crate) const REDACTED: &str = "[redacted]";

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
pub(crate) fn is_censored_key(key: &str) -> bool {
    CENSORED_KEYS.contains(&key)
}

/// Censors the object logged under `name`: its own censored keys, and for `req` the keys of
/// its `headers` too (request headers sit two levels down there).
pub(crate) fn censor_object(name: &str, object: &mut Map<String, Value>) {
    censor_level(object);
    if name == "req"
        && let Some(Value::Object(headers)) = object.get_mut("headers")
    {
        censor_level(headers);
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
    use serde_json::json;

    use super::*;

    fn censored(name: &str, value: Value) -> Value {
        let Value::Object(mut map) = value else {
            panic!("test input must be an object")
        };
        censor_object(name, &mut map);
        Value::Object(map)
    }

    #[test]
    fn censors_every_listed_key_one_level_down() {
        for key in CENSORED_KEYS {
            let object = censored(
                "config",
                json!({ *key: "canary-0xC0FFEE", "keep": "visible" }),
            );
            assert_eq!(object[*key], REDACTED, "{key}");
            assert_eq!(object["keep"], "visible");
            assert!(is_censored_key(key));
        }
    }

    #[test]
    fn request_headers_are_censored_two_levels_down() {
        let req = censored(
            "req",
            json!({ "headers": { "authorization": "Bearer canary" }, "password": "canary" }),
        );
        assert_eq!(req["headers"]["authorization"], REDACTED);
        assert_eq!(req["password"], REDACTED);
    }

    #[test]
    fn a_censored_object_is_replaced_whole() {
        let object = censored("x", json!({ "secrets": { "apiKey": "canary" } }));
        assert_eq!(object["secrets"], REDACTED);
    }
}
