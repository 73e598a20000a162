//! The free-text comment that may go with a decision or a request (an app version's approve or
//! reject, a definition's publish request and its decision, a case's decision): optional, at
//! most [`MAX_CHARS`] characters.

use serde::Deserialize;

use crate::call::Call;
use crate::error::{Error, Location};

/// The longest comment.
pub(crate) const MAX_CHARS: usize = 2000;

/// A body that is only the optional comment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Commented {
    #[serde(default)]
    comment: Option<String>,
}

/// The comment of a body `{comment?}` (an empty body has none).
pub(crate) async fn read(call: Call<'_>) -> Result<Option<String>, Error> {
    let Commented { comment } = call.json().await?;
    check(comment.as_deref())?;
    Ok(comment)
}

/// Refuses a comment over [`MAX_CHARS`], at `/comment`.
pub(crate) fn check(comment: Option<&str>) -> Result<(), Error> {
    if comment.is_some_and(|c| c.chars().count() > MAX_CHARS) {
        let message = format!("must be at most {MAX_CHARS} characters");
        return Err(Error::validation(Location::Body, "/comment", message));
    }
    Ok(())
}
