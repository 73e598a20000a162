//! The input and output JSON of seeded invocations, written as text straight into a reused
//! buffer: building a `serde_json::Value` per row would cost more than Postgres spends storing
//! it. Each shape writes the fields its kind of vendor call has, then repeats its list item
//! (watchlist matches, checks, tradelines, ...) until the object reaches a size drawn for it.
//!
//! Payloads are kept at the small end of real ones (inputs mostly 100 to 200 bytes, outputs 60
//! to 600, a few of either up to about 4 KB): with its five indexes and fixed columns a row
//! costs about 620 bytes before any JSON, and 10 M rows must stay well within the disk.

use std::fmt::Write;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::catalogue::{InputShape, OutputShape};
use super::random::{log_normal, one_of};
use super::vocabulary::*;

/// Median sizes in bytes drawn for the objects (an input's own fields usually exceed it): every
/// 10 bytes more per row is 100 MB more per 10 M rows.
const INPUT_MEDIAN: f64 = 80.0;
const OUTPUT_MEDIAN: f64 = 80.0;

/// Writes the input of a call of `shape` about `subject` (its number at the tenant and its id)
/// into `out`. What identifies the subject (names, documents, accounts) is drawn from the
/// subject itself, so every call about it says the same; the request's context varies.
pub(super) fn input(
    rng: &mut impl Rng,
    shape: InputShape,
    subject: Option<(u64, Uuid)>,
    out: &mut String,
) {
    let size = drawn_size(rng, INPUT_MEDIAN, 0.003);
    let identity = subject.map_or_else(|| rng.random(), |(_, id)| id.as_u64_pair().0);
    let who = &mut SmallRng::seed_from_u64(identity);
    let mut json = Json::new(out);
    if let Some((number, _)) = subject {
        json.key("subjectRef");
        let _ = write!(json.out, "\"cus_{number:x}\"");
    }
    match shape {
        InputShape::Person => person(who, &mut json),
        InputShape::Document => document(who, &mut json),
        InputShape::Company => company(who, &mut json),
        InputShape::BankAccount => bank_account(who, &mut json),
        InputShape::Device => device(rng, &mut json),
        InputShape::Contact => contact(who, &mut json),
    }
    json.list("context", size, |json| {
        let (key, values) = one_of(rng, CONTEXT);
        json.open_object();
        json.text("key", key);
        json.text("value", one_of(rng, values));
        json.close_object();
    });
    json.close_object();
}

/// Writes the output of a call of `shape` into `out`.
pub(super) fn output(rng: &mut impl Rng, shape: OutputShape, out: &mut String) {
    let size = drawn_size(rng, OUTPUT_MEDIAN, 0.006);
    let mut json = Json::new(out);
    match shape {
        OutputShape::Screening => screening(rng, &mut json, size),
        OutputShape::Verification => verification(rng, &mut json, size),
        OutputShape::Score => score(rng, &mut json, size),
        OutputShape::CreditReport => credit_report(rng, &mut json, size),
        OutputShape::Lookup => lookup(rng, &mut json, size),
    }
    json.close_object();
}

/// Writes the context run `run` of workflow `journey` started with, about subject `subject`
/// (its number at the tenant), into `out`: where the request came from. Drawn from the run's
/// id, not from the hour's generator, so the hour's invocations are what they were before runs
/// were written.
pub(super) fn run_context(run: Uuid, journey: &str, subject: u64, out: &mut String) {
    let rng = &mut SmallRng::seed_from_u64(run.as_u64_pair().1);
    let mut json = Json::new(out);
    json.key("subjectRef");
    let _ = write!(json.out, "\"cus_{subject:x}\"");
    json.text("journey", journey);
    json.text("channel", one_of(rng, CHANNELS));
    json.text("locale", one_of(rng, LOCALES));
    json.close_object();
}

/// Log-normal around `median` bytes, with a `large` share between 1 and 4 KB.
fn drawn_size(rng: &mut impl Rng, median: f64, large: f64) -> usize {
    let size = if rng.random_bool(large) {
        1024.0 * 4f64.powf(rng.random::<f64>())
    } else {
        log_normal(rng, median, 0.5)
    };
    size.clamp(60.0, 4096.0) as usize
}

fn person(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.text("firstName", one_of(rng, FIRST_NAMES));
    json.text("lastName", one_of(rng, LAST_NAMES));
    json.date("dob", rng.random_range(1940..2007), rng);
    json.text("country", one_of(rng, COUNTRIES));
    if rng.random_bool(0.1) {
        address(rng, json, "address");
    }
}

fn document(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.key("documentId");
    let _ = write!(json.out, "\"doc_{:016x}\"", rng.random::<u64>());
    json.text("documentType", one_of(rng, DOCUMENT_TYPES));
    json.text("issuingCountry", one_of(rng, COUNTRIES));
    json.number("pages", rng.random_range(1..=4));
    json.text(
        "mimeType",
        one_of(rng, &["image/jpeg", "image/png", "application/pdf"]),
    );
}

fn company(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.text("companyName", one_of(rng, COMPANIES));
    json.key("registrationNumber");
    let _ = write!(json.out, "\"HRB {}\"", rng.random_range(10_000..999_999));
    json.text("jurisdiction", one_of(rng, COUNTRIES));
}

fn bank_account(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.key("iban");
    let _ = write!(
        json.out,
        "\"{}{:02}{:018}\"",
        one_of(rng, &["DE", "GB", "FR", "NL"]),
        rng.random_range(10..99),
        rng.random_range(0..999_999_999_999_999_999u64)
    );
    json.text("accountHolder", one_of(rng, LAST_NAMES));
    json.text("currency", one_of(rng, &["EUR", "GBP", "USD"]));
}

fn device(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.key("deviceId");
    let _ = write!(json.out, "\"dev_{:012x}\"", rng.random::<u64>() >> 16);
    json.key("ip");
    let _ = write!(
        json.out,
        "\"{}.{}.{}.{}\"",
        rng.random_range(1..224),
        rng.random::<u8>(),
        rng.random::<u8>(),
        rng.random_range(1..255)
    );
    json.text("userAgent", one_of(rng, USER_AGENTS));
}

fn contact(rng: &mut impl Rng, json: &mut Json<'_>) {
    json.key("email");
    json.out.push('"');
    push_lowercase_letters(json.out, one_of(rng, FIRST_NAMES));
    json.out.push('.');
    push_lowercase_letters(json.out, one_of(rng, LAST_NAMES));
    let _ = write!(json.out, "{}@", rng.random_range(1..100));
    json.out.push_str(one_of(rng, EMAIL_DOMAINS));
    json.out.push('"');
    json.key("phone");
    let _ = write!(
        json.out,
        "\"+44 7700 {:06}\"",
        rng.random_range(0..1_000_000)
    );
}

/// The letters of `name`, lowercased, for an email address.
fn push_lowercase_letters(out: &mut String, name: &str) {
    out.extend(
        name.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase),
    );
}

fn address(rng: &mut impl Rng, json: &mut Json<'_>, key: &str) {
    json.key(key);
    json.open_object();
    json.key("line1");
    let _ = write!(json.out, "\"{} ", rng.random_range(1..200));
    json.out.push_str(one_of(rng, STREETS));
    json.out.push('"');
    json.text("city", one_of(rng, CITIES));
    json.key("postcode");
    let _ = write!(json.out, "\"{:05}\"", rng.random_range(1000..99_999));
    json.text("country", one_of(rng, COUNTRIES));
    json.close_object();
}

fn screening(rng: &mut impl Rng, json: &mut Json<'_>, size: usize) {
    json.text(
        "decision",
        one_of(rng, &["clear", "clear", "clear", "review", "hit"]),
    );
    json.fraction("score", rng.random());
    json.date("listVersion", 2026, rng);
    json.list("matches", size, |json| {
        json.open_object();
        json.key("name");
        json.out.push('"');
        json.out.push_str(one_of(rng, FIRST_NAMES));
        json.out.push(' ');
        json.out.push_str(one_of(rng, LAST_NAMES));
        json.out.push('"');
        json.text("list", one_of(rng, WATCHLISTS));
        json.fraction("score", rng.random());
        json.text("country", one_of(rng, COUNTRIES));
        json.close_object();
    });
}

fn verification(rng: &mut impl Rng, json: &mut Json<'_>, size: usize) {
    json.key("verified");
    json.out.push_str(if rng.random_bool(0.9) {
        "true"
    } else {
        "false"
    });
    json.fraction("confidence", rng.random_range(0.5..1.0));
    json.key("reference");
    let _ = write!(json.out, "\"ref_{:016x}\"", rng.random::<u64>());
    json.list("checks", size, |json| {
        json.open_object();
        json.text("name", one_of(rng, CHECKS));
        json.text("result", one_of(rng, RESULTS));
        json.close_object();
    });
}

fn score(rng: &mut impl Rng, json: &mut Json<'_>, size: usize) {
    let score = rng.random_range(0..1000);
    json.number("score", score);
    json.text(
        "band",
        if score < 300 {
            "high"
        } else if score < 700 {
            "medium"
        } else {
            "low"
        },
    );
    json.list("signals", size, |json| {
        json.open_object();
        json.text("name", one_of(rng, SIGNALS));
        json.text("level", one_of(rng, &["low", "low", "medium", "high"]));
        json.close_object();
    });
}

fn credit_report(rng: &mut impl Rng, json: &mut Json<'_>, size: usize) {
    json.text(
        "bureau",
        one_of(rng, &["experian", "equifax", "transunion", "schufa"]),
    );
    json.key("reportId");
    let _ = write!(json.out, "\"cr_{:016x}\"", rng.random::<u64>());
    json.number("score", rng.random_range(300..900));
    if rng.random_bool(0.2) {
        // Some vendors pass their raw HTTP answer along: escapes inside the JSON text.
        json.text(
            "raw",
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstatus=\"ok\"\tpath=C:\\reports",
        );
    }
    json.list("tradelines", size, |json| {
        json.open_object();
        json.text("creditor", one_of(rng, CREDITORS));
        json.number("balance", rng.random_range(0..50_000));
        json.text(
            "status",
            one_of(rng, &["current", "current", "current", "late_30", "closed"]),
        );
        json.close_object();
    });
}

fn lookup(rng: &mut impl Rng, json: &mut Json<'_>, size: usize) {
    json.key("matched");
    json.out.push_str(if rng.random_bool(0.85) {
        "true"
    } else {
        "false"
    });
    json.list("candidates", size, |json| {
        json.open_object();
        json.key("line1");
        let _ = write!(json.out, "\"{} ", rng.random_range(1..200));
        json.out.push_str(one_of(rng, STREETS));
        json.out.push('"');
        json.text("city", one_of(rng, CITIES));
        json.fraction("confidence", rng.random());
        json.close_object();
    });
}

/// A JSON object written as text into a buffer that is cleared first.
struct Json<'a> {
    out: &'a mut String,
}

impl<'a> Json<'a> {
    fn new(out: &'a mut String) -> Self {
        out.clear();
        out.push('{');
        Self { out }
    }

    /// A comma unless a value or key is the first of its object or array.
    fn separate(&mut self) {
        if !matches!(self.out.as_bytes().last(), Some(b'{' | b'[' | b':')) {
            self.out.push(',');
        }
    }

    fn key(&mut self, key: &str) {
        self.separate();
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    fn text(&mut self, key: &str, value: &str) {
        self.key(key);
        push_string(self.out, value);
    }

    fn number(&mut self, key: &str, value: impl std::fmt::Display) {
        self.key(key);
        let _ = write!(self.out, "{value}");
    }

    /// A number between 0 and 1 with two decimals.
    fn fraction(&mut self, key: &str, value: f64) {
        self.key(key);
        let _ = write!(self.out, "{value:.2}");
    }

    fn date(&mut self, key: &str, year: u32, rng: &mut impl Rng) {
        self.key(key);
        let _ = write!(
            self.out,
            "\"{year}-{:02}-{:02}\"",
            rng.random_range(1..=12),
            rng.random_range(1..=28)
        );
    }

    fn open_object(&mut self) {
        self.separate();
        self.out.push('{');
    }

    fn close_object(&mut self) {
        self.out.push('}');
    }

    /// An array under `key` whose elements `item` writes until the whole text is `size` bytes
    /// or more; no key at all when it is already.
    fn list(&mut self, key: &str, size: usize, mut item: impl FnMut(&mut Self)) {
        if self.out.len() + key.len() + 8 >= size {
            return;
        }
        self.key(key);
        self.out.push('[');
        while self.out.len() + 2 < size {
            item(self);
        }
        self.out.push(']');
    }
}

/// `value` as a JSON string.
fn push_string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{Purpose, generator};

    const INPUTS: [InputShape; 6] = [
        InputShape::Person,
        InputShape::Document,
        InputShape::Company,
        InputShape::BankAccount,
        InputShape::Device,
        InputShape::Contact,
    ];
    const OUTPUTS: [OutputShape; 5] = [
        OutputShape::Screening,
        OutputShape::Verification,
        OutputShape::Score,
        OutputShape::CreditReport,
        OutputShape::Lookup,
    ];

    /// The share of `sizes` from `low` to `high` bytes, and their mean.
    fn spread(sizes: &[usize], low: usize, high: usize) -> (f64, usize) {
        let within = sizes.iter().filter(|&&s| (low..=high).contains(&s)).count();
        let mean = sizes.iter().sum::<usize>() / sizes.len();
        (within as f64 / sizes.len() as f64, mean)
    }

    #[test]
    fn inputs_are_json_objects_mostly_of_100_to_600_bytes() {
        let mut rng = generator(9, Purpose::Population);
        let mut out = String::new();
        let mut sizes = Vec::new();
        for k in 0..6000u64 {
            let subject = Some((k, Uuid::from_u128(u128::from(k))));
            input(&mut rng, INPUTS[k as usize % 6], subject, &mut out);
            let value: serde_json::Value = serde_json::from_str(&out).expect(&out);
            assert!(value.is_object());
            sizes.push(out.len());
        }
        let (within, mean) = spread(&sizes, 100, 600);
        assert!(within > 0.7, "{within}");
        assert!(mean < 160, "{mean}");
        assert!(sizes.iter().all(|&s| s <= 4400));
        assert!(sizes.iter().any(|&s| s > 2000));
    }

    #[test]
    fn outputs_are_json_objects_mostly_of_60_to_600_bytes() {
        let mut rng = generator(10, Purpose::Population);
        let mut out = String::new();
        let mut sizes = Vec::new();
        for k in 0..6000 {
            output(&mut rng, OUTPUTS[k % 5], &mut out);
            let value: serde_json::Value = serde_json::from_str(&out).expect(&out);
            assert!(value.is_object());
            sizes.push(out.len());
        }
        let (within, mean) = spread(&sizes, 60, 600);
        assert!(within > 0.95, "{within}");
        assert!(mean < 150, "{mean}");
        assert!(sizes.iter().all(|&s| s <= 4400));
        assert!(sizes.iter().any(|&s| s > 2000));
    }

    #[test]
    fn the_same_subject_is_described_the_same_way_every_time() {
        let mut rng = generator(11, Purpose::Population);
        let subject = Some((7, Uuid::from_u128(7)));
        let mut first = String::new();
        let mut again = String::new();
        input(&mut rng, InputShape::Person, subject, &mut first);
        input(&mut rng, InputShape::Person, subject, &mut again);
        let name = |text: &str| {
            let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
            (
                value["firstName"].clone(),
                value["lastName"].clone(),
                value["dob"].clone(),
            )
        };
        assert_eq!(name(&first), name(&again));
    }

    #[test]
    fn a_run_context_is_a_small_object_naming_its_subject_and_journey() {
        let mut out = String::new();
        run_context(Uuid::from_u128(0xfeed), "payout", 0x2a, &mut out);
        let value: serde_json::Value = serde_json::from_str(&out).expect(&out);
        assert_eq!(value["subjectRef"], "cus_2a");
        assert_eq!(value["journey"], "payout");
        assert!(CHANNELS.contains(&value["channel"].as_str().expect("a channel")));
        assert!(LOCALES.contains(&value["locale"].as_str().expect("a locale")));
        assert!(out.len() < 120, "{out}");
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut out = String::new();
        push_string(&mut out, "a\"b\\c\nd\te\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\te\u0001é""#);
    }
}
