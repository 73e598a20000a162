//! The invariants of a generated history, checked over a whole small one: every row is one the
//! table accepts, the status mix is about right, runs group their steps and retries, and the
//! same seed writes the same rows.

use std::collections::{BTreeMap, HashSet};

use readers::invocations::InvocationStatus;
use uuid::Uuid;

use super::catalogue::APPS;
use super::history::{Invocation, RUN_ROWS};
use super::*;

const END: i64 = 1_795_000_000_000_000;

/// A row with its text owned, to look at after generation.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: Uuid,
    tenant_id: Uuid,
    app_name: &'static str,
    action: &'static str,
    subject_id: Option<Uuid>,
    workflow_run_id: Option<Uuid>,
    input: String,
    output: Option<String>,
    status: InvocationStatus,
    error: Option<&'static str>,
    duration_ms: f64,
    invoked_at: i64,
    idempotency_key: Option<String>,
    attempt: i32,
    has_usage: bool,
    usage_not_negative: bool,
}

impl Row {
    fn of(row: &Invocation<'_>) -> Self {
        Self {
            id: row.id,
            tenant_id: row.tenant_id,
            app_name: row.app_name,
            action: row.action,
            subject_id: row.subject_id,
            workflow_run_id: row.workflow_run_id,
            input: row.input.to_owned(),
            output: row.output.map(str::to_owned),
            status: row.status,
            error: row.error,
            duration_ms: row.duration_ms,
            invoked_at: row.invoked_at,
            idempotency_key: row.idempotency_key.map(str::to_owned),
            attempt: row.attempt,
            has_usage: row.usage.is_some(),
            usage_not_negative: row
                .usage
                .is_none_or(|u| u.http_requests >= 0 && u.document_reads >= 0 && u.log_lines >= 0),
        }
    }
}

fn options(seed: u64, rows: u64) -> Options {
    Options {
        rows,
        tenants: 12,
        years: 3,
        seed,
        connections: 2,
        database_url: String::new(),
        redis_url: String::new(),
    }
}

/// The whole history of `options`, stream by stream, and each stream's rows per tenant.
fn generate(options: &Options) -> (Plan, Vec<Row>, Vec<u64>) {
    let plan = Plan::new(options, END);
    let mut rows = Vec::new();
    let mut tallies = Vec::new();
    for hours in plan.timeline.split(options.connections) {
        let mut history = plan.history();
        for hour in hours {
            history.hour(hour, &mut |row| rows.push(Row::of(row)));
        }
        tallies.push(history.rows_per_tenant().to_vec());
    }
    let rows_per_tenant = add_up(&tallies);
    (plan, rows, rows_per_tenant)
}

fn share(rows: &[Row], status: InvocationStatus) -> f64 {
    rows.iter().filter(|row| row.status == status).count() as f64 / rows.len() as f64
}

fn is_asynchronous(app: &str) -> bool {
    APPS.iter().any(|a| a.name == app && a.asynchronous)
}

#[test]
fn the_history_has_exactly_the_rows_asked_for_counted_per_tenant() {
    let (plan, rows, rows_per_tenant) = generate(&options(7, 60_000));
    assert_eq!(rows.len(), 60_000);
    assert_eq!(rows_per_tenant.iter().sum::<u64>(), 60_000);
    for (tenant, &counted) in plan.population.tenants().iter().zip(&rows_per_tenant) {
        let rows = rows.iter().filter(|row| row.tenant_id == tenant.id).count();
        assert_eq!(rows as u64, counted);
    }
    let largest = rows_per_tenant.iter().max().copied().unwrap_or_default();
    let smallest = rows_per_tenant.iter().min().copied().unwrap_or_default();
    assert!(largest > 10 * smallest, "{rows_per_tenant:?}");
}

#[test]
fn every_row_passes_the_table_checks() {
    let (plan, rows, _) = generate(&options(11, 40_000));
    let ids: HashSet<Uuid> = rows.iter().map(|row| row.id).collect();
    assert_eq!(ids.len(), rows.len());
    for row in &rows {
        assert!(row.attempt > 0);
        assert!(row.duration_ms >= 0.0);
        assert!(row.usage_not_negative);
        assert!(row.invoked_at >= plan.timeline.start() && row.invoked_at <= END);
        assert!(APPS.iter().any(|app| app.name == row.app_name));
        assert_eq!(row.id.get_version_num(), 7);
        let input: serde_json::Value = serde_json::from_str(&row.input).expect("input JSON");
        assert!(input.is_object());
        if let Some(output) = &row.output {
            let output: serde_json::Value = serde_json::from_str(output).expect("output JSON");
            assert!(output.is_object());
        }
        let failed = matches!(
            row.status,
            InvocationStatus::Error | InvocationStatus::Timeout
        );
        assert_eq!(row.error.is_some(), failed, "{row:?}");
        if row.status == InvocationStatus::Success {
            assert!(row.output.is_some());
        }
    }
    let with_usage = rows.iter().filter(|row| row.has_usage).count();
    assert!(with_usage * 100 > rows.len() * 85, "{with_usage}");
    let with_subject = rows.iter().filter(|row| row.subject_id.is_some()).count();
    assert!(with_subject * 100 > rows.len() * 85, "{with_subject}");
}

#[test]
fn statuses_are_mostly_success_and_only_asynchronous_apps_pend() {
    let (_, rows, _) = generate(&options(3, 80_000));
    let success = share(&rows, InvocationStatus::Success);
    let error = share(&rows, InvocationStatus::Error);
    let timeout = share(&rows, InvocationStatus::Timeout);
    let pending = share(&rows, InvocationStatus::Pending);
    assert!((0.86..0.94).contains(&success), "success {success}");
    assert!((0.04..0.065).contains(&error), "error {error}");
    assert!((0.013..0.03).contains(&timeout), "timeout {timeout}");
    assert!((0.01..0.06).contains(&pending), "pending {pending}");
    for row in &rows {
        if row.status == InvocationStatus::Pending {
            assert!(is_asynchronous(row.app_name), "{}", row.app_name);
        }
        if row.status == InvocationStatus::Timeout {
            let action = APPS
                .iter()
                .filter(|app| app.name == row.app_name)
                .flat_map(|app| app.actions)
                .find(|action| action.name == row.action)
                .expect("catalogued");
            assert!(row.duration_ms >= action.timeout_ms);
        }
    }
    let mut durations: Vec<f64> = rows.iter().map(|row| row.duration_ms).collect();
    durations.sort_by(f64::total_cmp);
    let median = durations[durations.len() / 2];
    assert!((80.0..300.0).contains(&median), "median {median}");
    assert!(durations[durations.len() - 1] >= 10_000.0);
}

#[test]
fn runs_group_up_to_six_invocations_and_number_each_steps_attempts() {
    let (_, rows, _) = generate(&options(5, 50_000));
    let mut runs: BTreeMap<Uuid, Vec<&Row>> = BTreeMap::new();
    let mut single_calls = 0;
    for row in &rows {
        match row.workflow_run_id {
            Some(run) => runs.entry(run).or_default().push(row),
            None => {
                single_calls += 1;
                assert_eq!(row.attempt, 1);
                assert_eq!(row.idempotency_key, None);
            }
        }
    }
    let single_share = single_calls as f64 / rows.len() as f64;
    assert!((0.05..0.4).contains(&single_share), "{single_share}");
    let mut retried = 0;
    for (run, rows) in &runs {
        assert!((1..=RUN_ROWS as usize).contains(&rows.len()));
        assert!(rows.iter().all(|row| row.tenant_id == rows[0].tenant_id));
        assert!(rows.iter().all(|row| row.subject_id == rows[0].subject_id));
        let mut steps: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
        for row in rows {
            let key = row.idempotency_key.as_deref().expect("a step's key");
            let step = key
                .strip_prefix(&format!("run:{run}:step:"))
                .expect("run:<run>:step:<step>");
            assert_eq!(step, row.app_name);
            steps.entry(key).or_default().push(row);
        }
        for attempts in steps.values() {
            for (k, attempt) in attempts.iter().enumerate() {
                assert_eq!(attempt.attempt, k as i32 + 1);
                if k > 0 {
                    let before = attempts[k - 1];
                    assert!(matches!(
                        before.status,
                        InvocationStatus::Error | InvocationStatus::Timeout
                    ));
                    assert!(attempt.invoked_at > before.invoked_at);
                    assert_eq!(attempt.input, before.input);
                }
            }
            retried += usize::from(attempts.len() > 1);
        }
    }
    assert!(retried > 0);
    let multi_step = runs.values().filter(|rows| rows.len() > 1).count();
    assert!(multi_step * 2 > runs.len(), "most runs have several steps");
}

#[test]
fn a_seed_writes_the_same_history_whatever_the_connections() {
    let (_, two, _) = generate(&options(21, 20_000));
    let (_, three, _) = generate(&Options {
        connections: 3,
        ..options(21, 20_000)
    });
    let (_, other, _) = generate(&options(22, 20_000));
    assert!(two == three);
    assert!(two != other);
}

#[test]
fn rows_come_in_about_time_order() {
    let (_, rows, _) = generate(&options(8, 30_000));
    // A run's later steps follow its start by seconds to minutes, never by more than an hour.
    let mut latest = rows[0].invoked_at;
    for row in &rows {
        assert!(row.invoked_at > latest - timeline::HOUR_MICROS);
        latest = latest.max(row.invoked_at);
    }
}
