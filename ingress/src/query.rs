//! Query-string parameters with validation issues instead of failures: every problem of a
//! request is collected and answered together in one `validation_error`.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{Error, Issue, Location};

/// Largest `offset` accepted: deeper pages should narrow with `from`/`to` instead.
pub(crate) const MAX_OFFSET: i64 = 1_000_000;

/// The page size of most lists when `limit` is absent, and the largest they take (SPEC §4.5's
/// for `GET /approvals`, followed by the lists SPEC leaves open).
pub(crate) const LIST_LIMIT: i64 = 50;
pub(crate) const LIST_MAX_LIMIT: i64 = 200;

/// The parameters of one request and the issues found reading them.
#[derive(Debug)]
pub(crate) struct Query<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    taken: Vec<bool>,
    issues: Vec<Issue>,
}

impl<'a> Query<'a> {
    pub(crate) fn parse(raw: Option<&'a str>) -> Self {
        let pairs: Vec<_> = raw
            .map(|q| form_urlencoded::parse(q.as_bytes()).collect())
            .unwrap_or_default();
        let taken = vec![false; pairs.len()];
        Self {
            pairs,
            taken,
            issues: Vec::new(),
        }
    }

    fn issue(&mut self, name: &str, message: impl Into<String>) {
        self.issues.push(Issue::new(Location::Query, name, message));
    }

    /// Every value of `name`, marking them read.
    pub(crate) fn all(&mut self, name: &str) -> Vec<Cow<'a, str>> {
        let mut values = Vec::new();
        for (i, (key, value)) in self.pairs.iter().enumerate() {
            if key == name {
                self.taken[i] = true;
                values.push(value.clone());
            }
        }
        values
    }

    /// The single value of `name`; given twice is an issue.
    pub(crate) fn one(&mut self, name: &str) -> Option<Cow<'a, str>> {
        let mut values = self.all(name);
        if values.len() > 1 {
            self.issue(name, "must be given at most once");
            return None;
        }
        values.pop()
    }

    pub(crate) fn uuid(&mut self, name: &str) -> Option<Uuid> {
        let raw = self.one(name)?;
        let id = crate::path::uuid(&raw);
        if id.is_none() {
            self.issue(name, "must be a UUID");
        }
        id
    }

    /// An RFC 3339 date-time (`2026-11-22T10:00:00Z`, an offset, fractions allowed).
    pub(crate) fn date_time(&mut self, name: &str) -> Option<DateTime<Utc>> {
        let raw = self.one(name)?;
        match DateTime::parse_from_rfc3339(&raw) {
            Ok(time) => Some(time.with_timezone(&Utc)),
            Err(_) => {
                self.issue(
                    name,
                    "must be an RFC 3339 date-time such as 2026-11-22T10:00:00Z",
                );
                None
            }
        }
    }

    /// An integer in `[min, max]`, or `default` when absent.
    pub(crate) fn integer(&mut self, name: &str, min: i64, max: i64, default: i64) -> i64 {
        let Some(raw) = self.one(name) else {
            return default;
        };
        match raw.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => n,
            _ => {
                self.issue(name, format!("must be an integer from {min} to {max}"));
                default
            }
        }
    }

    /// The single value of `name` when it is an app name (SPEC §1); anything else is an issue.
    pub(crate) fn app_name(&mut self, name: &str) -> Option<String> {
        let value = self.one(name)?;
        if crate::path::is_app_name(&value) {
            return Some(value.into_owned());
        }
        self.issue(
            name,
            "must be 1 to 100 lowercase letters, digits or '-', starting with a letter or digit",
        );
        None
    }

    /// `limit` (1 to `max`, `default` when absent) and `offset` (0 to [`MAX_OFFSET`]).
    pub(crate) fn page(&mut self, default: i64, max: i64) -> readers::Page {
        let limit = self.integer("limit", 1, max, default);
        let offset = self.integer("offset", 0, MAX_OFFSET, 0);
        readers::Page { limit, offset }
    }

    /// `true` or `false`; `default` when absent.
    pub(crate) fn boolean(&mut self, name: &str, default: bool) -> bool {
        match self.one(name).as_deref() {
            None => default,
            Some("true") => true,
            Some("false") => false,
            Some(_) => {
                self.issue(name, "must be true or false");
                default
            }
        }
    }

    /// Adds an issue found by the caller's own check.
    pub(crate) fn reject(&mut self, name: &str, message: impl Into<String>) {
        self.issue(name, message);
    }

    /// Fails with every issue found, unknown parameters included.
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        let unknown: Vec<String> = self
            .pairs
            .iter()
            .zip(&self.taken)
            .filter(|(_, taken)| !**taken)
            .map(|((key, _), _)| key.to_string())
            .collect();
        for name in unknown {
            if !self.issues.iter().any(|i| i.path == name) {
                self.issue(&name, "is not a parameter of this route");
            }
        }
        if self.issues.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(self.issues))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issues(result: Result<(), Error>) -> Vec<String> {
        match result {
            Err(Error::Validation(issues)) => issues.into_iter().map(|i| i.path).collect(),
            other => panic!("expected validation error, got {other:?}"),
        }
    }

    #[test]
    fn reads_values_and_defaults() {
        let mut q = Query::parse(Some(
            "limit=20&status=error&status=timeout&from=2026-01-01T00:00:00%2B02:00",
        ));
        assert_eq!(q.integer("limit", 1, 100, 50), 20);
        assert_eq!(q.integer("offset", 0, 10, 0), 0);
        assert_eq!(q.all("status"), vec!["error", "timeout"]);
        let from = q.date_time("from").expect("from");
        assert_eq!(from.to_rfc3339(), "2025-12-31T22:00:00+00:00");
        assert!(q.finish().is_ok());
    }

    #[test]
    fn collects_every_issue_and_unknown_parameters() {
        let mut q = Query::parse(Some("limit=0&offset=-1&id=nope&from=yesterday&x=1&limit=3"));
        q.integer("limit", 1, 100, 50);
        q.integer("offset", 0, 10, 0);
        q.uuid("id");
        q.date_time("from");
        let paths = issues(q.finish());
        assert_eq!(paths, vec!["limit", "offset", "id", "from", "x"]);
    }

    #[test]
    fn rejects_non_integers_and_overflow() {
        for raw in [
            "limit=abc",
            "limit=1.5",
            "limit=99999999999999999999",
            "limit=",
            "limit=%20",
        ] {
            let mut q = Query::parse(Some(raw));
            q.integer("limit", 1, 100, 50);
            assert_eq!(issues(q.finish()), vec!["limit"], "{raw}");
        }
    }
}
