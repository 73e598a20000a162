//! The secret values of one call: reachable by the module through `secret_get`, and removed from
//! everything the module sends back (its answer, its log lines, its error text) before the host
//! looks at it (SPEC §4.10).

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, MatchKind};

/// What a secret value becomes wherever the module echoes it.
pub const REDACTED: &str = "[redacted]";

#[derive(Debug, Default)]
pub struct Secrets {
    values: HashMap<String, String>,
    /// Every value, raw and as it appears inside a JSON string, longest first.
    scrubber: Option<AhoCorasick>,
}

impl Secrets {
    pub fn new(values: HashMap<String, String>) -> Self {
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
        let scrubber = (!needles.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&needles)
                    .ok()
            })
            .flatten();
        Self { values, scrubber }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `bytes` with every secret value replaced by [`REDACTED`].
    pub fn scrub(&self, bytes: &[u8]) -> Vec<u8> {
        match &self.scrubber {
            Some(scrubber) => {
                let replacements = vec![REDACTED.as_bytes(); scrubber.patterns_len()];
                scrubber.replace_all_bytes(bytes, &replacements)
            }
            None => bytes.to_vec(),
        }
    }

    pub fn scrub_text(&self, text: &str) -> String {
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
        let parsed: serde_json::Value = serde_json::from_str(&scrubbed).expect("still JSON");
        assert_eq!(parsed["k"], REDACTED);
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
