//! Who is calling, as established from a verified token.

use std::borrow::Cow;
use std::sync::Arc;

use uuid::Uuid;

use super::claims::{Claims, Kind};
use super::permission::{Permission, PermissionSet};
use crate::error::AuthFailure;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    pub tenant: Uuid,
    pub kind: Kind,
    pub sub: Arc<str>,
    pub name: Arc<str>,
    /// The collection submission an applicant acts on.
    pub submission: Option<Uuid>,
    permissions: PermissionSet,
}

impl Principal {
    /// Checks the claims' own consistency and derives the permissions they grant.
    pub(crate) fn from_claims(claims: Claims) -> Result<Self, AuthFailure> {
        if claims.sub.is_empty() || claims.tenant.is_nil() {
            return Err(AuthFailure::BadClaims);
        }
        // The subject and name are recorded (audit rows, commands) in text columns, which cannot
        // hold U+0000: such a token could never have a write applied.
        if claims.sub.contains('\0') || claims.name.contains('\0') {
            return Err(AuthFailure::BadClaims);
        }
        if (claims.kind == Kind::Applicant) != claims.submission.is_some() {
            // Applicants act on exactly one submission; nobody else names one.
            return Err(AuthFailure::BadClaims);
        }
        let mut permissions = PermissionSet::default();
        // Applicants hold no role permissions, whatever the token says.
        if claims.kind != Kind::Applicant {
            for role in &claims.roles {
                permissions = permissions.union(role.grants());
            }
            for name in &claims.perms {
                if let Some(permission) = Permission::parse(name) {
                    permissions.insert(permission);
                }
            }
        }
        Ok(Self {
            tenant: claims.tenant,
            kind: claims.kind,
            sub: claims.sub.into(),
            name: claims.name.into(),
            submission: claims.submission,
            permissions,
        })
    }

    pub(crate) fn has(&self, permission: Permission) -> bool {
        self.permissions.contains(permission)
    }

    /// `svc.principal.id`: the subject, or for applicants a sha256 prefix of the submission id
    /// (SPEC "Traces"), so submission ids never reach telemetry.
    pub(crate) fn telemetry_id(&self) -> Cow<'_, str> {
        match (self.kind, self.submission) {
            (Kind::Applicant, Some(submission)) => {
                use sha2::{Digest, Sha256};
                let digest = Sha256::digest(submission.as_bytes());
                Cow::Owned(hex::encode(&digest[..8]))
            }
            _ => Cow::Borrowed(&self.sub),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::permission::Role;

    /// Claims of a user of a new tenant, no roles.
    pub(crate) fn claims(kind: Kind) -> Claims {
        Claims {
            sub: "user-1".into(),
            tenant: Uuid::new_v4(),
            name: "Ada".into(),
            kind,
            roles: vec![],
            perms: vec![],
            submission: None,
            exp: 0,
            iat: None,
            nbf: None,
            iss: None,
            aud: None,
        }
    }

    #[test]
    fn roles_and_extra_perms_add_up() {
        let mut c = claims(Kind::Human);
        c.roles = vec![Role::Analyst];
        c.perms = vec!["runs:context".into(), "unknown:perm".into()];
        let p = Principal::from_claims(c).expect("valid");
        assert!(p.has(Permission::AppsRead));
        assert!(p.has(Permission::RunsContext));
        assert!(!p.has(Permission::AppsWrite));
    }

    #[test]
    fn applicants_need_a_submission_and_get_no_role_permissions() {
        let mut c = claims(Kind::Applicant);
        c.roles = vec![Role::Admin];
        assert_eq!(
            Principal::from_claims(c.clone()),
            Err(AuthFailure::BadClaims)
        );
        c.submission = Some(Uuid::new_v4());
        let p = Principal::from_claims(c).expect("valid");
        assert!(Permission::ALL.iter().all(|perm| !p.has(*perm)));
        assert_eq!(p.telemetry_id().len(), 16);
        let mut human = claims(Kind::Human);
        human.submission = Some(Uuid::new_v4());
        assert_eq!(Principal::from_claims(human), Err(AuthFailure::BadClaims));
    }

    #[test]
    fn empty_subject_or_nil_tenant_is_refused() {
        let mut c = claims(Kind::Machine);
        c.sub = String::new();
        assert_eq!(Principal::from_claims(c), Err(AuthFailure::BadClaims));
        let mut c = claims(Kind::Machine);
        c.tenant = Uuid::nil();
        assert_eq!(Principal::from_claims(c), Err(AuthFailure::BadClaims));
    }

    #[test]
    fn a_nul_in_the_subject_or_name_is_refused() {
        let mut c = claims(Kind::Human);
        c.sub = "user\u{0}1".into();
        assert_eq!(Principal::from_claims(c), Err(AuthFailure::BadClaims));
        let mut c = claims(Kind::Human);
        c.name = "Ada\u{0}".into();
        assert_eq!(Principal::from_claims(c), Err(AuthFailure::BadClaims));
    }
}
