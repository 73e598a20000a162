//! The words seeded payloads and errors are made of. A few carry what real data carries and
//! careless encoders break on: non-ASCII letters, apostrophes, quotes, backslashes, tabs and
//! line breaks.

pub(super) const FIRST_NAMES: &[&str] = &[
    "Ada",
    "Grace",
    "Alan",
    "Linus",
    "Margaret",
    "Katherine",
    "Tim",
    "Barbara",
    "Edsger",
    "Frances",
    "Zoë",
    "José",
    "Søren",
    "Małgorzata",
    "Chiara",
    "Amara",
    "Kenji",
    "Priya",
    "Oluwaseun",
    "Ingrid",
];

pub(super) const LAST_NAMES: &[&str] = &[
    "Lovelace",
    "Hopper",
    "Turing",
    "Torvalds",
    "Hamilton",
    "Johnson",
    "Berners-Lee",
    "Liskov",
    "Dijkstra",
    "Allen",
    "Müller",
    "García",
    "Kierkegaard",
    "Wiśniewska",
    "Rossi",
    "O'Brien",
    "Nakamura",
    "Raghunathan",
    "Adeyemi",
    "Ångström",
];

pub(super) const COUNTRIES: &[&str] = &[
    "GB", "DE", "FR", "NL", "ES", "IT", "PL", "SE", "IE", "US", "CA", "NG", "IN", "JP", "BR",
];

pub(super) const CITIES: &[&str] = &[
    "London",
    "Berlin",
    "Paris",
    "Amsterdam",
    "Madrid",
    "Milano",
    "Kraków",
    "Göteborg",
    "Dublin",
    "New York",
    "Toronto",
    "Lagos",
    "Bengaluru",
    "Osaka",
    "São Paulo",
];

pub(super) const STREETS: &[&str] = &[
    "High Street",
    "Hauptstraße",
    "Rue de la Paix",
    "Keizersgracht",
    "Calle Mayor",
    "Via Roma",
    "ul. Floriańska",
    "Drottninggatan",
    "Grafton Street",
    "Main St",
];

pub(super) const COMPANIES: &[&str] = &[
    "Nordwind Logistik GmbH",
    "Acme Payments Ltd",
    "Blue Harbour Trading B.V.",
    "Société Générale des Eaux",
    "Kowalski & Syn Sp. z o.o.",
    "O'Hara Holdings plc",
    "Lumen \"Capital\" Partners LLP",
    "Sakura Fintech K.K.",
    "Rio Verde Comércio Ltda",
    "Tallinn Crypto OÜ",
];

pub(super) const EMAIL_DOMAINS: &[&str] = &["example.com", "mail.example", "example.org"];

/// The keys of the workflows a tenant defines, its main one (onboarding) first: each is the
/// customer journey its runs serve, so a run's context names its workflow as its journey.
pub(super) const WORKFLOWS: &[&str] = &["onboarding", "periodic_review", "payout", "login"];

pub(super) const CHANNELS: &[&str] = &["web", "ios", "android", "branch"];

pub(super) const LOCALES: &[&str] = &["en-GB", "de-DE", "fr-FR", "es-ES", "pl-PL"];

/// A request's context: a key and the values it takes.
pub(super) const CONTEXT: &[(&str, &[&str])] = &[
    ("channel", CHANNELS),
    ("journey", WORKFLOWS),
    ("locale", LOCALES),
    ("campaign", &["spring-promo", "referral", "partner-api"]),
];

pub(super) const DOCUMENT_TYPES: &[&str] = &[
    "passport",
    "id_card",
    "driving_licence",
    "residence_permit",
    "utility_bill",
];

pub(super) const WATCHLISTS: &[&str] = &[
    "OFAC SDN",
    "UN Consolidated",
    "EU Financial Sanctions",
    "HMT Consolidated",
    "PEP Tier 1",
    "PEP Tier 2",
    "Adverse Media",
];

pub(super) const CHECKS: &[&str] = &[
    "mrz",
    "face_match",
    "document_expiry",
    "tamper",
    "name_match",
    "dob_match",
    "address_match",
    "account_holder",
    "otp",
    "liveness",
    "registry_status",
];

pub(super) const RESULTS: &[&str] = &["pass", "pass", "pass", "pass", "warn", "fail"];

pub(super) const SIGNALS: &[&str] = &[
    "ip_country_mismatch",
    "emulator",
    "velocity_1h",
    "disposable_email",
    "tor_exit_node",
    "new_device",
    "vpn",
    "sim_swap_recent",
    "email_age_days",
    "phone_carrier_voip",
];

pub(super) const CREDITORS: &[&str] = &[
    "Barclaycard",
    "Santander",
    "Klarna",
    "American Express",
    "ING",
    "Commerzbank",
    "Monzo",
    "Nationwide",
];

pub(super) const USER_AGENTS: &[&str] = &[
    "iOS/17.4 app/5.12.0",
    "Android/14 app/5.11.3",
    "Chrome/124.0 Windows",
    "Safari/17.4 macOS",
    "okhttp/4.12.0",
];

/// What a failed attempt says: the text, whether another attempt may go otherwise, and
/// whether the module's output was kept (an answer its schema rejected).
#[derive(Debug, Clone, Copy)]
pub(super) struct Failure {
    pub(super) text: &'static str,
    pub(super) retryable: bool,
    pub(super) kept_output: bool,
}

const fn failure(text: &'static str, retryable: bool, kept_output: bool) -> Failure {
    Failure {
        text,
        retryable,
        kept_output,
    }
}

pub(super) const FAILURES: &[Failure] = &[
    failure("vendor answered 503 Service Unavailable", true, false),
    failure(
        "rate limited by the vendor (429), retry after 30 s",
        true,
        false,
    ),
    failure("subject not found", false, false),
    failure("document unreadable: glare on page 1", false, false),
    failure("invalid credentials for the vendor account", false, false),
    failure(
        "trapped: wasm trap: out of bounds memory access",
        true,
        false,
    ),
    failure(
        "the output does not match the action's output schema: /output/score: expected number",
        false,
        true,
    ),
    failure(
        "upstream error:\n<html>\r\n<body>502 Bad Gateway</body>\r\n</html>",
        true,
        false,
    ),
    failure("consent expired\tcode=E_CONSENT_EXPIRED", false, false),
    failure(
        "vendor said: \"name mismatch\" at C:\\vendor\\match.dll",
        false,
        false,
    ),
];

/// The text of a timed out attempt, by the action's timeout in seconds.
pub(super) fn timeout_text(timeout_ms: f64) -> &'static str {
    match timeout_ms as u32 / 1000 {
        0..=2 => "timeout: the module ran longer than 2 s",
        3 => "timeout: the module ran longer than 3 s",
        4..=5 => "timeout: the module ran longer than 5 s",
        6..=10 => "timeout: the module ran longer than 10 s",
        _ => "timeout: the module ran longer than 30 s",
    }
}
