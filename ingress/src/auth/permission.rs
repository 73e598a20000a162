//! Permissions and the roles that grant them (SPEC §5).

/// A permission named by SPEC §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Permission {
    AppsRead = 1 << 0,
    AppsWrite = 1 << 1,
    AppsPublish = 1 << 2,
    RunsContext = 1 << 3,
    DefinitionsRead = 1 << 4,
    AuditRead = 1 << 5,
    OpsRead = 1 << 6,
    /// Reading and setting the tenant's approval settings (not named by SPEC;
    /// docs/apps.md "Approval settings"). Admins.
    ApprovalsConfigure = 1 << 7,
    /// Creating and publishing definition versions (not named by SPEC;
    /// docs/definitions-and-runs.md). Admins.
    DefinitionsWrite = 1 << 8,
    /// Reading workflow runs (not named by SPEC; docs/definitions-and-runs.md). Admins and
    /// analysts; the context's values need `runs:context` too.
    RunsRead = 1 << 9,
    /// Starting and cancelling workflow runs (not named by SPEC). Admins.
    RunsWrite = 1 << 10,
    /// Listing and reading a subject's documents (not named by SPEC; docs/documents.md).
    /// Admins and analysts.
    DocumentsRead = 1 << 11,
    /// Adding documents to a subject (not named by SPEC; docs/documents.md). Admins.
    DocumentsWrite = 1 << 12,
    /// Approving and rejecting definition approval requests, and withdrawing anyone's (not
    /// named by SPEC; docs/definitions-and-runs.md "Definition approvals"). Admins.
    ApprovalsDecide = 1 << 13,
    /// Reading the tenant's user directory (not named by SPEC; docs/definitions-and-runs.md "The
    /// user directory"). Admins.
    UsersRead = 1 << 14,
    /// Reading cases (not named by SPEC; docs/cases-activity-audit.md "Cases"). Admins and
    /// analysts.
    CasesRead = 1 << 15,
    /// Opening and deciding cases (not named by SPEC; docs/cases-activity-audit.md "Cases"). Admins
    /// and analysts.
    CasesWrite = 1 << 16,
    /// Setting the tenant's scheduled audit export (not named by SPEC; docs/cases-activity-audit.md
    /// "The audit log"). Admins.
    AuditExport = 1 << 17,
    /// Reading backtests (not named by SPEC; docs/definitions-and-runs.md "Backtests").
    /// Admins and analysts.
    BacktestsRead = 1 << 18,
    /// Starting backtests (not named by SPEC; docs/definitions-and-runs.md "Backtests").
    /// Admins and analysts.
    BacktestsRun = 1 << 19,
    /// Managing the tenant's webhook endpoints and reading and retrying their deliveries (not
    /// named by SPEC; docs/outbound-webhooks.md). Admins.
    WebhooksManage = 1 << 20,
    /// Reading the tenant's notifications and marking them read (not named by SPEC;
    /// docs/outbound-webhooks.md "Notifications"). Admins and analysts; analysts see those
    /// addressed to everyone.
    NotificationsRead = 1 << 21,
}

impl Permission {
    pub const ALL: [Permission; 22] = [
        Permission::AppsRead,
        Permission::AppsWrite,
        Permission::AppsPublish,
        Permission::RunsContext,
        Permission::DefinitionsRead,
        Permission::AuditRead,
        Permission::OpsRead,
        Permission::ApprovalsConfigure,
        Permission::DefinitionsWrite,
        Permission::RunsRead,
        Permission::RunsWrite,
        Permission::DocumentsRead,
        Permission::DocumentsWrite,
        Permission::ApprovalsDecide,
        Permission::UsersRead,
        Permission::CasesRead,
        Permission::CasesWrite,
        Permission::AuditExport,
        Permission::BacktestsRead,
        Permission::BacktestsRun,
        Permission::WebhooksManage,
        Permission::NotificationsRead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::AppsRead => "apps:read",
            Permission::AppsWrite => "apps:write",
            Permission::AppsPublish => "apps:publish",
            Permission::RunsContext => "runs:context",
            Permission::DefinitionsRead => "definitions:read",
            Permission::AuditRead => "audit:read",
            Permission::OpsRead => "ops:read",
            Permission::ApprovalsConfigure => "approvals:configure",
            Permission::DefinitionsWrite => "definitions:write",
            Permission::RunsRead => "runs:read",
            Permission::RunsWrite => "runs:write",
            Permission::DocumentsRead => "documents:read",
            Permission::DocumentsWrite => "documents:write",
            Permission::ApprovalsDecide => "approvals:decide",
            Permission::UsersRead => "users:read",
            Permission::CasesRead => "cases:read",
            Permission::CasesWrite => "cases:write",
            Permission::AuditExport => "audit:export",
            Permission::BacktestsRead => "backtests:read",
            Permission::BacktestsRun => "backtests:run",
            Permission::WebhooksManage => "webhooks:manage",
            Permission::NotificationsRead => "notifications:read",
        }
    }

    /// The permission a `perms` claim string names; strings of other parts of the service are
    /// not ours and are ignored.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// What analysts hold: reads, working cases, backtests, and their notifications.
const ANALYST_GRANTS: [Permission; 8] = [
    Permission::AppsRead,
    Permission::RunsRead,
    Permission::DocumentsRead,
    Permission::CasesRead,
    Permission::CasesWrite,
    Permission::BacktestsRead,
    Permission::BacktestsRun,
    Permission::NotificationsRead,
];

/// A role of the `roles` claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Analyst,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Analyst => "analyst",
        }
    }

    /// The role a `roles` claim entry names, when it is one of ours.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "admin" => Some(Role::Admin),
            "analyst" => Some(Role::Analyst),
            _ => None,
        }
    }

    /// Admins hold every permission named here; analysts read apps (SPEC §5), runs and
    /// documents, work cases, and run backtests.
    pub fn grants(self) -> PermissionSet {
        match self {
            Role::Admin => Permission::ALL.into_iter().collect(),
            Role::Analyst => ANALYST_GRANTS.into_iter().collect(),
        }
    }
}

/// A set of permissions as a bit set: checking one is a single AND.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PermissionSet(u32);

impl PermissionSet {
    pub fn contains(self, permission: Permission) -> bool {
        self.0 & permission as u32 != 0
    }

    pub fn insert(&mut self, permission: Permission) {
        self.0 |= permission as u32;
    }

    pub fn union(self, other: PermissionSet) -> PermissionSet {
        PermissionSet(self.0 | other.0)
    }
}

impl FromIterator<Permission> for PermissionSet {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        let mut set = PermissionSet::default();
        for permission in iter {
            set.insert(permission);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admins_hold_everything_analysts_read_apps_runs_and_documents_work_cases_and_backtest_and_see_notifications()
     {
        let admin = Role::Admin.grants();
        assert!(Permission::ALL.iter().all(|p| admin.contains(*p)));
        let analyst = Role::Analyst.grants();
        let reads = [
            Permission::AppsRead,
            Permission::RunsRead,
            Permission::DocumentsRead,
            Permission::CasesRead,
            Permission::CasesWrite,
            Permission::BacktestsRead,
            Permission::BacktestsRun,
            Permission::NotificationsRead,
        ];
        assert!(reads.iter().all(|p| analyst.contains(*p)));
        for p in Permission::ALL.into_iter().filter(|p| !reads.contains(p)) {
            assert!(!analyst.contains(p), "{}", p.as_str());
        }
    }

    #[test]
    fn parses_every_name_and_ignores_others() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()), Some(p));
        }
        assert_eq!(Permission::parse("cases:delete"), None);
    }
}
