//! The apps lifecycle as the API reads it (SPEC §4.7): a tenant's view of app versions
//! ([`versions`]), the catalogue of app names ([`catalogue`]), its installs ([`installs`]) and
//! how its apps' calls fare ([`health`]) (the publish requests of its own versions are
//! [`crate::approvals::apps`]); what a version stored at upload holds, read by id ([`stored_version`]).
//!
//! What a tenant sees (SPEC §3.1): every platform version; its own versions once published or
//! withdrawn; its own `uploaded` versions only when the viewer administers apps.

pub mod catalogue;
pub mod health;
pub mod installs;
pub mod modules;
pub mod stored_version;
pub mod versions;

use crate::Tenant;

/// Who reads: the tenant, and whether the viewer sees `uploaded` versions (holds
/// `apps:publish`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewer {
    pub tenant: Tenant,
    pub sees_uploaded: bool,
}

/// The SQL condition for the versions `viewer` sees, over `app_versions` as `v`, with the
/// tenant as `$1` and `sees_uploaded` as `$2`.
pub(crate) const VISIBLE: &str =
    "(v.tenant_id IS NULL OR (v.tenant_id = $1 AND (v.status <> 'uploaded' OR $2)))";

/// Orders version texts newest first: by semantic version, unparsable ones last.
pub(crate) fn newest_first(a: &str, b: &str) -> std::cmp::Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => b.cmp(&a),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_semver_not_text() {
        let mut versions = vec!["1.2.0", "1.10.0", "1.10.0-rc.1", "0.9.0"];
        versions.sort_by(|a, b| newest_first(a, b));
        assert_eq!(versions, vec!["1.10.0", "1.10.0-rc.1", "1.2.0", "0.9.0"]);
    }
}
