//! One reason a document is invalid: where (a JSON Pointer into it) and what is wrong there.
//! Issue messages never quote the value found, which may be a secret.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `base` with one more JSON Pointer token (RFC 6901 escaping).
pub fn pointer(base: &str, token: &str) -> String {
    format!("{base}/{}", token.replace('~', "~0").replace('/', "~1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_escaped() {
        assert_eq!(pointer("/actions", "a/b~c"), "/actions/a~1b~0c");
        assert_eq!(pointer("", "x"), "/x");
    }
}
