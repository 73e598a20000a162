//! The invariants of a generated history, checked over a whole small one: every row is one the
//! table accepts, the status mix is about right, runs group their steps and retries, each run
//! has one row whose lifetime holds its invocations, and the same seed writes the same rows.

use std::collections::{BTreeMap, HashSet};

use readers::invocations::InvocationStatus;
use uuid::Uuid;

use super::catalogue::APPS;
use super::history::{Invocation, RUN_ROWS, Sink};
use super::run::{Run, RunState, RunStatus, RunStep};
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

/// A run with its text owned.
#[derive(Debug, Clone, PartialEq)]
struct RunRow {
    id: Uuid,
    tenant_id: Uuid,
    definition_key: &'static str,
    subject_id: Option<Uuid>,
    context: String,
    state: RunState,
    steps: Vec<RunStep>,
}

impl RunRow {
    fn of(run: &Run<'_>) -> Self {
        Self {
            id: run.id,
            tenant_id: run.tenant_id,
            definition_key: run.definition_key,
            subject_id: run.subject_id,
            context: run.context.to_owned(),
            state: run.state,
            steps: run.steps.to_vec(),
        }
    }
}

/// What a history generated, in the order it came out.
#[derive(Debug, Default)]
struct Collected {
    rows: Vec<Row>,
    runs: Vec<RunRow>,
}

impl Sink for Collected {
    fn invocation(&mut self, row: &Invocation<'_>) {
        self.rows.push(Row::of(row));
    }

    fn run(&mut self, run: &Run<'_>) {
        self.runs.push(RunRow::of(run));
    }
}

/// A whole generated history.
struct Seeded {
    plan: Plan,
    rows: Vec<Row>,
    runs: Vec<RunRow>,
    rows_per_tenant: Vec<u64>,
}

fn options(seed: u64, rows: u64) -> Options {
    Options {
        rows,
        tenants: 12,
        years: 3,
        seed,
        connections: 2,
        run_steps: true,
        database_url: String::new(),
        redis_url: String::new(),
    }
}

/// The whole history of `options`, stream by stream, with the rows per tenant.
fn generate(options: &Options) -> Seeded {
    let plan = Plan::new(options, END);
    let mut collected = Collected::default();
    let mut tallies = Vec::new();
    for hours in plan.timeline.split(options.connections) {
        let mut history = plan.history();
        for hour in hours {
            history.hour(hour, &mut collected);
        }
        tallies.push(history.rows_per_tenant().to_vec());
    }
    let rows_per_tenant = add_up(&tallies);
    Seeded {
        plan,
        rows: collected.rows,
        runs: collected.runs,
        rows_per_tenant,
    }
}

fn is_finished(status: RunStatus) -> bool {
    !matches!(status, RunStatus::Running | RunStatus::WaitingCallback)
}

/// The invocations of each run, by run id, in the order they came out.
fn invocations_by_run(rows: &[Row]) -> BTreeMap<Uuid, Vec<&Row>> {
    let mut runs: BTreeMap<Uuid, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        if let Some(run) = row.workflow_run_id {
            runs.entry(run).or_default().push(row);
        }
    }
    runs
}

fn share(rows: &[Row], status: InvocationStatus) -> f64 {
    rows.iter().filter(|row| row.status == status).count() as f64 / rows.len() as f64
}

fn is_asynchronous(app: &str) -> bool {
    APPS.iter().any(|a| a.name == app && a.asynchronous)
}

#[test]
fn the_history_has_exactly_the_rows_asked_for_counted_per_tenant() {
    let Seeded {
        plan,
        rows,
        rows_per_tenant,
        ..
    } = generate(&options(7, 60_000));
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
    let Seeded { plan, rows, .. } = generate(&options(11, 40_000));
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
    let Seeded { rows, .. } = generate(&options(3, 80_000));
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
    let Seeded { rows, .. } = generate(&options(5, 50_000));
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
fn every_run_of_the_invocations_has_exactly_one_run_row_of_its_tenant_and_subject() {
    let Seeded {
        plan, rows, runs, ..
    } = generate(&options(13, 50_000));
    let invoked = invocations_by_run(&rows);
    let mut rows_per_run: BTreeMap<Uuid, usize> = BTreeMap::new();
    for run in &runs {
        *rows_per_run.entry(run.id).or_default() += 1;
    }
    assert!(
        rows_per_run.values().all(|&count| count == 1),
        "a run written twice"
    );
    assert!(
        invoked.keys().eq(rows_per_run.keys()),
        "runs and invocations disagree"
    );
    for run in &runs {
        let invocations = &invoked[&run.id];
        assert!(invocations.iter().all(|row| row.tenant_id == run.tenant_id));
        assert!(
            invocations
                .iter()
                .all(|row| row.subject_id == run.subject_id)
        );
        let tenant = plan
            .population
            .tenants()
            .iter()
            .find(|tenant| tenant.id == run.tenant_id)
            .expect("a seeded tenant");
        let workflow = tenant
            .workflows
            .iter()
            .find(|workflow| workflow.key == run.definition_key)
            .expect("one of the tenant's workflows");
        assert!(run.steps.len() <= workflow.steps.len());
        let context: serde_json::Value = serde_json::from_str(&run.context).expect("JSON");
        assert_eq!(context["journey"], run.definition_key);
        // One step row per step reached, in the order the invocations reached them.
        let mut reached: Vec<&str> = Vec::new();
        for row in invocations {
            if reached.last() != Some(&row.app_name) {
                reached.push(row.app_name);
            }
        }
        let steps: Vec<&str> = run.steps.iter().map(|step| step.id).collect();
        assert_eq!(steps, reached);
    }
}

/// What readers rely on: every invocation of a run has `created_at <= invoked_at` and
/// `(finished_at IS NULL OR invoked_at <= finished_at)`.
#[test]
fn every_invocation_of_a_run_falls_within_the_runs_lifetime() {
    let Seeded { rows, runs, .. } = generate(&options(17, 60_000));
    let invoked = invocations_by_run(&rows);
    for run in &runs {
        let state = &run.state;
        let invocations = &invoked[&run.id];
        for row in invocations {
            assert!(state.created_at <= row.invoked_at, "{run:?}\n{row:?}");
            assert!(
                state.finished_at.is_none_or(|at| row.invoked_at <= at),
                "{run:?}\n{row:?}"
            );
            assert!(row.invoked_at <= state.updated_at, "{run:?}\n{row:?}");
        }
        let first = invocations.iter().map(|row| row.invoked_at).min();
        assert_eq!(
            Some(state.created_at),
            first,
            "a run starts with its first attempt"
        );
        assert!(state.updated_at <= END && state.finished_at.is_none_or(|at| at <= END));
        assert_eq!(state.finished_at.is_some(), is_finished(state.status));
        if let Some(finished_at) = state.finished_at {
            assert_eq!(state.updated_at, finished_at);
        }
        for (position, step) in run.steps.iter().enumerate() {
            let attempts = invocations.iter().filter(|row| row.app_name == step.id);
            let (first, last) = attempts.fold((i64::MAX, i64::MIN), |(first, last), row| {
                (first.min(row.invoked_at), last.max(row.invoked_at))
            });
            assert_eq!(step.started_at, first);
            assert!(step.finished_at.is_none_or(|at| last <= at));
            assert_eq!(step.finished_at.is_some(), is_finished(step.status));
            if position + 1 < run.steps.len() {
                assert_eq!(step.status, RunStatus::Completed);
            }
        }
    }
}

#[test]
fn a_run_completes_when_every_step_did_and_fails_with_a_step_that_failed_for_good() {
    let Seeded {
        plan, rows, runs, ..
    } = generate(&options(19, 80_000));
    let invoked = invocations_by_run(&rows);
    // When the last run or single call of each hour started.
    let single_calls = rows.iter().filter(|row| row.workflow_run_id.is_none());
    let starts = single_calls
        .map(|row| row.invoked_at)
        .chain(runs.iter().map(|run| run.state.created_at));
    let mut latest_start: BTreeMap<i64, i64> = BTreeMap::new();
    for start in starts {
        let hour = (start - plan.timeline.start()) / timeline::HOUR_MICROS;
        let latest = latest_start.entry(hour).or_insert(start);
        *latest = (*latest).max(start);
    }
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    for run in &runs {
        let state = &run.state;
        *statuses.entry(state.status.as_str()).or_default() += 1;
        let done = run
            .steps
            .iter()
            .filter(|step| step.status == RunStatus::Completed);
        assert_eq!(state.position as usize, done.count());
        let last_step = run.steps.last().expect("a step reached");
        let last_row = invoked[&run.id].last().expect("an invocation");
        match state.status {
            RunStatus::Completed => {
                assert!(run.steps.iter().all(|s| s.status == RunStatus::Completed));
                assert!(matches!(
                    last_row.status,
                    InvocationStatus::Success | InvocationStatus::Pending
                ));
            }
            RunStatus::Failed => {
                assert_eq!(last_step.status, RunStatus::Failed);
                assert_eq!(state.failure, last_step.failure);
                let failure = state.failure.expect("why it failed");
                assert_eq!(failure.app, last_row.app_name);
                assert_eq!(failure.code, last_row.status.as_str());
                assert!(matches!(
                    last_row.status,
                    InvocationStatus::Error | InvocationStatus::Timeout
                ));
            }
            // The generator stopped it: its rows, or its hour's, ran out.
            RunStatus::Cancelled => {
                let hour = (state.created_at - plan.timeline.start()) / timeline::HOUR_MICROS;
                let last_of_its_hour = latest_start[&hour] == state.created_at;
                assert!(invoked[&run.id].len() == RUN_ROWS as usize || last_of_its_hour);
            }
            // Only a run still going at the end of the span is unfinished.
            RunStatus::Running | RunStatus::WaitingCallback => {
                assert!(last_row.invoked_at > END - timeline::HOUR_MICROS, "{run:?}");
            }
        }
        assert_eq!(state.failure.is_some(), state.status == RunStatus::Failed);
    }
    // A small history has few rows an hour, so many runs are cut short; of the others, about
    // one in ten fails.
    let count = |status: &str| statuses.get(status).copied().unwrap_or(0) as f64;
    let failed = count("failed") / (count("failed") + count("completed"));
    assert!((0.04..0.2).contains(&failed), "{statuses:?}");
}

#[test]
fn a_seed_writes_the_same_history_whatever_the_connections() {
    let two = generate(&options(21, 20_000));
    let three = generate(&Options {
        connections: 3,
        ..options(21, 20_000)
    });
    let other = generate(&options(22, 20_000));
    assert!(two.rows == three.rows && two.runs == three.runs);
    assert!(two.rows != other.rows && two.runs != other.runs);
}

#[test]
fn rows_come_in_about_time_order() {
    let Seeded { rows, .. } = generate(&options(8, 30_000));
    // A run's later steps follow its start by seconds to minutes, never by more than an hour.
    let mut latest = rows[0].invoked_at;
    for row in &rows {
        assert!(row.invoked_at > latest - timeline::HOUR_MICROS);
        latest = latest.max(row.invoked_at);
    }
}
