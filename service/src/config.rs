//! The environment, read once at start-up. A service reads every variable it uses through one
//! [`Env`], which collects every problem instead of stopping at the first, so an operator sees
//! all of them in one attempt; the process then refuses to start rather than run
//! half-configured.
//!
//! `Env` also remembers each variable it was asked for and the default it would take, which is
//! how the README's configuration table is checked against the code (see each service's
//! `config` tests).

use std::collections::HashMap;
use std::fmt::Display;
use std::str::FromStr;

/// The configuration could not be read; lists every problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration:\n  - {}", .0.join("\n  - "))]
pub struct ConfigError(pub Vec<String>);

/// What a variable falls back to when it is unset or empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// The service refuses to start without it.
    Required,
    /// Nothing: the feature it configures is off or the value is absent.
    Unset,
    /// This value, as it would be written in the variable.
    Value(String),
}

/// A variable a service read, and what it falls back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    pub fallback: Fallback,
}

/// Reads variables, collecting problems and the variables read.
pub struct Env {
    values: HashMap<String, String>,
    problems: Vec<String>,
    read: Vec<Variable>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be secrets: only the names are shown.
        f.debug_struct("Env")
            .field("read", &self.read)
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Self {
        Self::from_pairs(std::env::vars())
    }

    /// A given environment (tests, documentation checks).
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            problems: Vec::new(),
            read: Vec::new(),
        }
    }

    fn remember(&mut self, name: &'static str, fallback: Fallback) {
        if !self.read.iter().any(|v| v.name == name) {
            self.read.push(Variable { name, fallback });
        }
    }

    fn value(&self, name: &str) -> Option<String> {
        self.values
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// An optional text value (unset or empty: `None`).
    pub fn text(&mut self, name: &'static str) -> Option<String> {
        self.remember(name, Fallback::Unset);
        self.value(name)
    }

    /// A text value with a default.
    pub fn text_or(&mut self, name: &'static str, default: &str) -> String {
        self.remember(name, Fallback::Value(default.to_owned()));
        self.value(name).unwrap_or_else(|| default.to_owned())
    }

    /// A value the service cannot run without.
    pub fn required(&mut self, name: &'static str) -> String {
        self.remember(name, Fallback::Required);
        self.value(name).unwrap_or_else(|| {
            self.problems.push(format!("{name} is required"));
            String::new()
        })
    }

    /// A parsed value, `default` when unset; a value that does not parse is a problem.
    pub fn parsed<T: FromStr + Display>(&mut self, name: &'static str, default: T) -> T {
        self.remember(name, Fallback::Value(default.to_string()));
        self.parse(name).unwrap_or(default)
    }

    /// An optional parsed value.
    pub fn parsed_opt<T: FromStr>(&mut self, name: &'static str) -> Option<T> {
        self.remember(name, Fallback::Unset);
        self.parse(name)
    }

    fn parse<T: FromStr>(&mut self, name: &'static str) -> Option<T> {
        let raw = self.value(name)?;
        match raw.parse() {
            Ok(value) => Some(value),
            Err(_) => {
                self.problems.push(format!("{name}={raw:?} is not valid"));
                None
            }
        }
    }

    /// A `true`/`false` flag (case-insensitive), `default` when unset.
    pub fn flag(&mut self, name: &'static str, default: bool) -> bool {
        self.remember(name, Fallback::Value(default.to_string()));
        match self.value(name).map(|v| v.to_ascii_lowercase()) {
            None => default,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                self.problems
                    .push(format!("{name}={v:?} is not valid: true or false"));
                default
            }
        }
    }

    /// Every variable whose name starts with `pattern` without its trailing `*` (`KAFKA_CLIENT_*`),
    /// by name; remembered as `pattern`, with nothing to fall back to.
    pub fn prefixed(&mut self, pattern: &'static str) -> Vec<(String, String)> {
        self.remember(pattern, Fallback::Unset);
        let prefix = pattern.trim_end_matches('*');
        let mut found: Vec<(String, String)> = self
            .values
            .keys()
            .filter(|name| name.starts_with(prefix))
            .filter_map(|name| Some((name.clone(), self.value(name)?)))
            .collect();
        found.sort();
        found
    }

    /// A problem found by the caller's own check.
    pub fn problem(&mut self, problem: impl Into<String>) {
        self.problems.push(problem.into());
    }

    /// The value of an optional setting the caller checked itself (`Ok(None)`: not set); a
    /// failed check is reported as a problem and reads as not set.
    pub fn checked<T, E: Display>(&mut self, checked: Result<Option<T>, E>) -> Option<T> {
        checked.unwrap_or_else(|problem| {
            self.problem(problem.to_string());
            None
        })
    }

    /// The variables read so far, in the order they were first read.
    pub fn variables(&self) -> &[Variable] {
        &self.read
    }

    /// `config` when nothing was wrong, else every problem.
    pub fn finish<T>(self, config: T) -> Result<T, ConfigError> {
        if self.problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError(self.problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_is_a_problem_and_reads_as_not_set() {
        let mut env = Env::from_pairs([("KEY", "short")]);
        let set: Result<Option<u8>, String> = Ok(Some(7));
        assert_eq!(env.checked(set), Some(7));
        let failed: Result<Option<u8>, String> = Err("KEY is too short".to_owned());
        assert_eq!(env.checked(failed), None);
        let problems = env.finish(()).expect_err("the failed check");
        assert_eq!(problems.0, vec!["KEY is too short".to_owned()]);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut env = Env::from_pairs([("PORT", "eighty"), ("FLAG", "yes")]);
        let port = env.parsed("PORT", 8080u16);
        let _ = env.required("DATABASE_URL");
        let _ = env.flag("FLAG", false);
        assert_eq!(port, 8080, "a bad value leaves the default in place");
        let problems = env.finish(()).expect_err("three problems").0;
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("PORT"));
        assert!(problems[1].contains("DATABASE_URL is required"));
    }

    #[test]
    fn empty_values_count_as_unset_and_values_are_trimmed() {
        let mut env = Env::from_pairs([("A", "  "), ("B", " 42 ")]);
        assert_eq!(env.text("A"), None);
        assert_eq!(env.parsed("B", 1u32), 42);
        assert_eq!(env.text_or("C", "x"), "x");
        assert!(env.finish(()).is_ok());
    }

    #[test]
    fn variables_read_are_remembered_with_their_fallback() {
        let mut env = Env::from_pairs(Vec::<(String, String)>::new());
        env.parsed("API_PORT", 8080u16);
        env.required("DATABASE_URL");
        env.text("STORAGE_ENDPOINT");
        env.parsed("API_PORT", 8080u16);
        assert_eq!(
            env.variables(),
            [
                Variable {
                    name: "API_PORT",
                    fallback: Fallback::Value("8080".into())
                },
                Variable {
                    name: "DATABASE_URL",
                    fallback: Fallback::Required
                },
                Variable {
                    name: "STORAGE_ENDPOINT",
                    fallback: Fallback::Unset
                },
            ]
        );
    }

    #[test]
    fn prefixed_variables_are_read_together_and_remembered_as_their_pattern() {
        let mut env = Env::from_pairs([
            ("KAFKA_CLIENT_B", "2"),
            ("KAFKA_CLIENT_A", " 1 "),
            ("KAFKA_CLIENT_EMPTY", ""),
            ("KAFKA_BROKERS", "b:9092"),
        ]);
        assert_eq!(
            env.prefixed("KAFKA_CLIENT_*"),
            [
                ("KAFKA_CLIENT_A".to_owned(), "1".to_owned()),
                ("KAFKA_CLIENT_B".to_owned(), "2".to_owned())
            ]
        );
        assert_eq!(env.variables()[0].name, "KAFKA_CLIENT_*");
    }

    #[test]
    fn debug_output_never_shows_values() {
        let env = Env::from_pairs([("JWT_SECRET", "canary-0xC0FFEE")]);
        assert!(!format!("{env:?}").contains("canary"));
    }
}
