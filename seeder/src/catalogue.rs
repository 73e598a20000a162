//! The vendor apps a seeded history calls: what risk-management tenants install, with their
//! actions, how long those take and which apps answer asynchronously (only those leave
//! `pending` invocations).

use self::InputShape::*;
use self::OutputShape::*;

/// What an action's input describes, which sets the shape of its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InputShape {
    Person,
    Document,
    Company,
    BankAccount,
    Device,
    Contact,
}

/// What an action answers, which sets the shape of its output JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OutputShape {
    Screening,
    Verification,
    Score,
    CreditReport,
    Lookup,
}

#[derive(Debug)]
pub(super) struct Action {
    pub(super) name: &'static str,
    /// The runner stops the call here; a `timeout` row lasted this long.
    pub(super) timeout_ms: f64,
    /// The median duration of a call that answered.
    pub(super) median_ms: f64,
    pub(super) input: InputShape,
    pub(super) output: OutputShape,
}

#[derive(Debug)]
pub(super) struct App {
    pub(super) name: &'static str,
    /// Answers `pending` and completes by callback.
    pub(super) asynchronous: bool,
    pub(super) actions: &'static [Action],
}

const fn action(
    name: &'static str,
    timeout_s: u32,
    median_ms: u32,
    input: InputShape,
    output: OutputShape,
) -> Action {
    Action {
        name,
        timeout_ms: timeout_s as f64 * 1000.0,
        median_ms: median_ms as f64,
        input,
        output,
    }
}

pub(super) const APPS: &[App] = &[
    App {
        name: "kyc-check",
        asynchronous: false,
        actions: &[
            action("verify-identity", 10, 200, Person, Verification),
            action("refresh", 10, 180, Person, Verification),
        ],
    },
    App {
        name: "aml-screening",
        asynchronous: false,
        actions: &[
            action("screen", 10, 200, Person, Screening),
            action("rescreen", 10, 160, Person, Screening),
            action("screen-company", 10, 260, Company, Screening),
        ],
    },
    App {
        name: "pep-watch",
        asynchronous: false,
        actions: &[
            action("check", 5, 120, Person, Screening),
            action("subscribe", 5, 90, Person, Verification),
        ],
    },
    App {
        name: "doc-verify",
        asynchronous: true,
        actions: &[
            action("verify-document", 30, 350, Document, Verification),
            action("extract", 30, 450, Document, Lookup),
        ],
    },
    App {
        name: "address-lookup",
        asynchronous: false,
        actions: &[
            action("lookup", 3, 60, Person, Lookup),
            action("validate", 3, 45, Person, Verification),
        ],
    },
    App {
        name: "credit-bureau",
        asynchronous: false,
        actions: &[
            action("report", 30, 500, Person, CreditReport),
            action("score", 10, 220, Person, Score),
        ],
    },
    App {
        name: "device-intel",
        asynchronous: false,
        actions: &[action("assess", 2, 40, Device, Score)],
    },
    App {
        name: "sanctions-list",
        asynchronous: false,
        actions: &[
            action("screen", 5, 90, Person, Screening),
            action("screen-company", 5, 110, Company, Screening),
        ],
    },
    App {
        name: "fraud-score",
        asynchronous: false,
        actions: &[
            action("score", 3, 80, Device, Score),
            action("feedback", 3, 50, Contact, Verification),
        ],
    },
    App {
        name: "bank-verify",
        asynchronous: true,
        actions: &[
            action("verify-account", 30, 350, BankAccount, Verification),
            action("confirm-ownership", 30, 300, BankAccount, Verification),
        ],
    },
    App {
        name: "email-risk",
        asynchronous: false,
        actions: &[action("check", 3, 70, Contact, Score)],
    },
    App {
        name: "phone-verify",
        asynchronous: true,
        actions: &[
            action("send-code", 10, 150, Contact, Verification),
            action("check-code", 5, 80, Contact, Verification),
        ],
    },
    App {
        name: "company-registry",
        asynchronous: false,
        actions: &[
            action("lookup", 10, 250, Company, Lookup),
            action("officers", 10, 300, Company, Screening),
        ],
    },
    App {
        name: "liveness-check",
        asynchronous: true,
        actions: &[
            action("start-session", 10, 120, Device, Verification),
            action("verify-selfie", 30, 500, Document, Verification),
        ],
    },
    App {
        name: "ubo-discovery",
        asynchronous: true,
        actions: &[action("discover", 30, 600, Company, Screening)],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the table accepts (`^[a-z0-9][a-z0-9-]{0,99}$`).
    fn is_name(text: &str) -> bool {
        let bytes = text.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 100
            && bytes[0] != b'-'
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    }

    #[test]
    fn every_app_has_a_valid_unique_name_and_one_to_three_actions() {
        let mut names: Vec<_> = APPS.iter().map(|app| app.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), APPS.len());
        for app in APPS {
            assert!(is_name(app.name), "{}", app.name);
            assert!((1..=3).contains(&app.actions.len()), "{}", app.name);
            for action in app.actions {
                assert!(is_name(action.name), "{}", action.name);
                assert!(action.median_ms < action.timeout_ms);
            }
        }
        assert!(APPS.len() >= 8, "a tenant installs up to eight apps");
    }
}
