//! The secret values of one call: reachable by the module through `secret_get`, and removed from
//! everything the module sends back (its answer, its log lines, its error text) before the host
//! looks at it (SPEC §4.10).

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use serde_json::Value;

/// What a secret value becomes wherever the module echoes it.
pub(crate) const REDACTED: &str = "[redacted]";

#[derive(Debug, Default)]
pub(crate) struct Secrets {
    values: HashMap<String, String>,
    /// Every value, raw and as it appears inside a JSON string, longest first. `Err` when the
    /// matcher could not be built: then nothing the module sends back is let through.
    scrubber: Option<Result<AhoCorasick, ()>>,
}

impl Secrets {
    pub(crate) fn new(values: HashMap<String, String>) -> Self {
        let mut needles: Vec<String> = Vec::new();
        for value in values.values().filter(|v| !v.is_empty()) {
            needles.push(value.clone());
            let escaped = json_escaped(value);
            if escaped != *value {
                needles.push(escaped);
            }
        }
        needles.sort_by_key(|needle| std::cmp::Reverse(needle.len()));
        needles.dedup();
        let scrubber = (!needles.is_empty()).then(|| {
            // The matcher lives for one call and searches one answer: a DFA (the default for a
            // few needles) took longer to build than every search of the call together.
            AhoCorasick::builder()
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .match_kind(MatchKind::LeftmostLongest)
                .build(&needles)
                .map_err(|error| {
                    tracing::error!(%error, "secret matcher could not be built; everything the module sends back is withheld");
                })
        });
        Self { values, scrubber }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `bytes` with every secret value replaced by [`REDACTED`].
    pub(crate) fn scrub(&self, bytes: &[u8]) -> Vec<u8> {
        match &self.scrubber {
            Some(Ok(scrubber)) => {
                let replacements = vec![REDACTED.as_bytes(); scrubber.patterns_len()];
                scrubber.replace_all_bytes(bytes, &replacements)
            }
            Some(Err(())) => REDACTED.as_bytes().to_vec(),
            None => bytes.to_vec(),
        }
    }

    /// A module's answer with every secret value replaced, before the host parses it (SPEC
    /// §4.10): first in the bytes as written; then, if the answer uses escapes (`\u0073`, `\/`)
    /// that could spell a value the bytes do not show, in every string and key of the parsed
    /// document. An answer without a backslash decodes to exactly its bytes, so the second pass
    /// is skipped for it.
    pub(crate) fn scrub_answer(&self, bytes: &[u8]) -> Vec<u8> {
        let scrubbed = self.scrub(bytes);
        if self.scrubber.is_none() || !scrubbed.contains(&b'\\') {
            return scrubbed;
        }
        let Ok(mut document) = serde_json::from_slice::<Value>(&scrubbed) else {
            // Not JSON: the call fails as `bad_output` without the answer being read.
            return scrubbed;
        };
        if self.scrub_strings(&mut document) {
            serde_json::to_vec(&document).unwrap_or_else(|_| REDACTED.as_bytes().to_vec())
        } else {
            scrubbed
        }
    }

    /// Scrubs every string and key of `value` in place; whether anything changed.
    fn scrub_strings(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => self.scrub_in_place(text),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.scrub_strings(item) | changed),
            Value::Object(fields) => {
                let mut changed = false;
                let entries = std::mem::take(fields);
                for (mut key, mut item) in entries {
                    changed |= self.scrub_in_place(&mut key);
                    changed |= self.scrub_strings(&mut item);
                    fields.insert(key, item);
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    fn scrub_in_place(&self, text: &mut String) -> bool {
        let scrubbed = self.scrub_text(text);
        if scrubbed == *text {
            false
        } else {
            *text = scrubbed;
            true
        }
    }

    pub(crate) fn scrub_text(&self, text: &str) -> String {
        String::from_utf8_lossy(&self.scrub(text.as_bytes())).into_owned()
    }
}

/// The value as serde_json writes it inside a string literal (without the quotes).
fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(value)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(pairs: &[(&str, &str)]) -> Secrets {
        Secrets::new(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn every_value_is_replaced_raw_and_json_escaped() {
        let s = secrets(&[("API_KEY", "sk-canary-123"), ("PASS", "a\"b\\c")]);
        let answer = br#"{"k":"sk-canary-123","x":"pre sk-canary-123 post","p":"a\"b\\c"}"#;
        let scrubbed = String::from_utf8(s.scrub(answer)).expect("utf8");
        assert!(!scrubbed.contains("canary"));
        assert!(!scrubbed.contains(r#"a\"b"#));
        assert_eq!(scrubbed.matches(REDACTED).count(), 3);
        let parsed: Value = serde_json::from_str(&scrubbed).expect("still JSON");
        assert_eq!(parsed["k"], REDACTED);
    }

    #[test]
    fn a_value_spelled_with_json_escapes_is_found_after_decoding() {
        let s = secrets(&[("API_KEY", "sk-canary/123")]);
        // `\u0073` is `s`, `\/` is `/`: the bytes never show the value, its decoding does.
        let answer =
            br#"{"status":"ok","output":{"k":"\u0073k-canary\/123 tail","\u0073k-canary/123":1}}"#;
        let scrubbed = s.scrub_answer(answer);
        let parsed: Value = serde_json::from_slice(&scrubbed).expect("JSON");
        assert_eq!(parsed["output"]["k"], "[redacted] tail");
        assert_eq!(parsed["output"][REDACTED], 1);
        assert!(!parsed.to_string().contains("canary"));
    }

    #[test]
    fn an_answer_without_escapes_or_secrets_is_left_as_written() {
        let s = secrets(&[("API_KEY", "sk-canary")]);
        let answer = br#"{"status":"ok","output":{"b":1,  "a":"x\n"}}"#;
        assert_eq!(s.scrub_answer(answer), answer.to_vec());
        let none = secrets(&[]);
        assert_eq!(
            none.scrub_answer(b"{\"a\":\"\\u0073\"}"),
            b"{\"a\":\"\\u0073\"}".to_vec()
        );
    }

    #[test]
    fn the_longest_overlapping_value_wins() {
        let s = secrets(&[("A", "abc"), ("B", "abcdef")]);
        assert_eq!(s.scrub(b"xabcdefx"), b"x[redacted]x".to_vec());
    }

    #[test]
    fn no_secrets_and_empty_values_change_nothing() {
        let s = secrets(&[("EMPTY", "")]);
        assert_eq!(s.scrub(b"anything"), b"anything".to_vec());
        assert_eq!(s.get("EMPTY"), Some(""));
        assert_eq!(s.get("OTHER"), None);
    }
}
