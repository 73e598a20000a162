//! Permissions and the roles that grant them (SPEC §5).

service::labels! {
    /// A permission named by SPEC §5; its place in this list is its bit in a [`PermissionSet`].
    pub enum Permission {
        AppsRead = "apps:read",
        AppsWrite = "apps:write",
        AppsPublish = "apps:publish",
        RunsContext = "runs:context",
        DefinitionsRead = "definitions:read",
        AuditRead = "audit:read",
        OpsRead = "ops:read",
        /// Reading and setting the tenant's approval settings (not named by SPEC;
        /// docs/apps.md "Approval settings"). Admins.
        ApprovalsConfigure = "approvals:configure",
        /// Creating and publishing definition versions (not named by SPEC;
        /// docs/definitions-and-runs.md). Admins.
        DefinitionsWrite = "definitions:write",
        /// Reading workflow runs (not named by SPEC; docs/definitions-and-runs.md). Admins and
        /// analysts; the context's values need `runs:context` too.
        RunsRead = "runs:read",
        /// Starting and cancelling workflow runs (not named by SPEC). Admins.
        RunsWrite = "runs:write",
        /// Listing and reading a subject's documents (not named by SPEC; docs/documents.md).
        /// Admins and analysts.
        DocumentsRead = "documents:read",
        /// Adding documents to a subject (not named by SPEC; docs/documents.md). Admins.
        DocumentsWrite = "documents:write",
        /// Approving and rejecting definition approval requests, and withdrawing anyone's (not
        /// named by SPEC; docs/definitions-and-runs.md "Definition approvals"). Admins.
        ApprovalsDecide = "approvals:decide",
        /// Reading the tenant's user directory (not named by SPEC; docs/definitions-and-runs.md "The
        /// user directory"). Admins.
        UsersRead = "users:read",
        /// Reading cases (not named by SPEC; docs/cases-activity-audit.md "Cases"). Admins and
        /// analysts.
        CasesRead = "cases:read",
        /// Opening and deciding cases (not named by SPEC; docs/cases-activity-audit.md "Cases"). Admins
        /// and analysts.
        CasesWrite = "cases:write",
        /// Setting the tenant's scheduled audit export (not named by SPEC; docs/cases-activity-audit.md
        /// "The audit log"). Admins.
        AuditExport = "audit:export",
        /// Reading backtests (not named by SPEC; docs/definitions-and-runs.md "Backtests").
        /// Admins and analysts.
        BacktestsRead = "backtests:read",
        /// Starting backtests (not named by SPEC; docs/definitions-and-runs.md "Backtests").
        /// Admins and analysts.
        BacktestsRun = "backtests:run",
        /// Managing the tenant's webhook endpoints and reading and retrying their deliveries (not
        /// named by SPEC; docs/outbound-webhooks.md). Admins.
        WebhooksManage = "webhooks:manage",
        /// Reading the tenant's notifications and marking them read (not named by SPEC;
        /// docs/outbound-webhooks.md "Notifications"). Admins and analysts; analysts see those
        /// addressed to everyone.
        NotificationsRead = "notifications:read",
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

service::labels! {
    /// A role of the `roles` claim.
    pub enum Role {
        Admin = "admin",
        Analyst = "analyst",
    }
}

impl Role {
    /// Admins hold every permission named here; analysts read apps (SPEC §5), runs and
    /// documents, work cases, and run backtests.
    pub fn grants(self) -> PermissionSet {
        match self {
            Role::Admin => Permission::ALL.iter().copied().collect(),
            Role::Analyst => ANALYST_GRANTS.into_iter().collect(),
        }
    }
}

/// A set of permissions as a bit set: checking one is a single AND.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PermissionSet(u32);

impl PermissionSet {
    pub fn contains(self, permission: Permission) -> bool {
        self.0 & Self::bit(permission) != 0
    }

    pub fn insert(&mut self, permission: Permission) {
        self.0 |= Self::bit(permission);
    }

    fn bit(permission: Permission) -> u32 {
        1 << permission as u32
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
        for p in Permission::ALL
            .iter()
            .copied()
            .filter(|p| !reads.contains(p))
        {
            assert!(!analyst.contains(p), "{}", p.as_str());
        }
    }

    #[test]
    fn parses_every_name_and_ignores_others() {
        for &p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()), Some(p));
        }
        assert_eq!(Permission::parse("cases:delete"), None);
    }
}
