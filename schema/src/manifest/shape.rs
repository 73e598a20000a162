//! The manifest's shape, checked against `runner/manifest.schema.json`: every error of the
//! schema as an issue at the field it concerns.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;

use crate::Issue;
use crate::issue::pointer;

/// Issues for one error of the shape check. Unknown and missing fields point at the field
/// itself, and a bad action name at the action.
pub(super) fn issues(error: &ValidationError<'_>, issues: &mut Vec<Issue>) {
    let at = error.instance_path().to_string();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for name in unexpected {
                issues.push(Issue::new(
                    pointer(&at, name),
                    format!("{name:?} is not a field here"),
                ));
            }
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            issues.push(Issue::new(
                pointer(&at, name),
                format!("{name} is required"),
            ));
        }
        ValidationErrorKind::PropertyNames { error: inner } => {
            let name = inner.instance().as_str().unwrap_or_default().to_owned();
            issues.push(Issue::new(
                pointer(&at, &name),
                format!(
                    "the name {}",
                    inner.masked_with("").to_string().trim_start()
                ),
            ));
        }
        ValidationErrorKind::OneOfNotValid { .. }
            if at == "/handles/webhookExternalId" || at == "/handles/webhookEventId" =>
        {
            issues.push(Issue::new(
                at,
                "must be one of {\"json\": JSON Pointer such as \"/data/id\"}, \
                 {\"header\": lower-case header name}, {\"query\": parameter name}",
            ));
        }
        ValidationErrorKind::Not { .. } if at == "/name" => {
            issues.push(Issue::new(
                at,
                "approvals, health and uploads are reserved and cannot name an app",
            ));
        }
        _ => issues.push(Issue::new(at, error.masked().to_string())),
    }
}
