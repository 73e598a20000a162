//! The generator of a seeded history, one hour of the timeline at a time: each hour's rows
//! start at sorted random instants, mostly as workflow runs (one to six invocations sharing a
//! `workflow_run_id`, a step's retries numbered 1..n under its `run:<run>:step:<step>` key) and
//! otherwise as single calls outside any run. Each run comes out once, after its invocations,
//! as its `workflow_runs` row with its steps ([`run`](super::run)).
//!
//! An hour is generated from its own seeded generator, so it is the same whichever stream
//! writes it. Rows come out in time order but for a run's later steps, which follow their
//! first step by seconds to minutes: close enough for inserts to append to the time indexes.
//! What only the run rows need (their context) is drawn from the run's id rather than from the
//! hour's generator, so adding them left every invocation of a seed as it was.

use rand::Rng;
use rand::rngs::SmallRng;
use readers::invocations::{InvocationStatus, Usage};
use uuid::Uuid;

use super::attempt::{self, Outcome};
use super::catalogue::Action;
use super::payload;
use super::population::{Install, Population};
use super::random::{self, Purpose};
use super::run::{Run, RunState, RunStep, StepEnd, StepFailure};
use super::timeline::{HOUR_MICROS, Timeline};

/// Share of the calls that start a workflow run rather than stand alone.
const RUN_SHARE: f64 = 0.8;
/// The most invocations one run records, retries included.
pub(super) const RUN_ROWS: u32 = 6;
/// The most attempts of one step.
const ATTEMPTS: i32 = 3;
/// Runs always concern a subject; single calls mostly do.
const SINGLE_CALL_SUBJECT: f64 = 0.7;
/// The runner reported usage from this far into the span on, and then for nearly every row.
const USAGE_SINCE: f64 = 0.15;
const USAGE_MISSING: f64 = 0.03;

/// One row of `app_invocations` as generated; the text fields borrow the generator's buffers.
#[derive(Debug)]
pub(super) struct Invocation<'a> {
    pub(super) id: Uuid,
    pub(super) tenant_id: Uuid,
    pub(super) app_name: &'static str,
    pub(super) version_id: Uuid,
    pub(super) action: &'static str,
    pub(super) subject_id: Option<Uuid>,
    pub(super) workflow_run_id: Option<Uuid>,
    pub(super) input: &'a str,
    pub(super) output: Option<&'a str>,
    pub(super) status: InvocationStatus,
    pub(super) error: Option<&'static str>,
    pub(super) duration_ms: f64,
    /// Microseconds since the Unix epoch.
    pub(super) invoked_at: i64,
    pub(super) idempotency_key: Option<&'a str>,
    pub(super) attempt: i32,
    pub(super) usage: Option<Usage>,
}

/// Where the generated rows go.
pub(super) trait Sink {
    fn invocation(&mut self, row: &Invocation<'_>);
    /// A run, after every invocation of it.
    fn run(&mut self, run: &Run<'_>);
}

/// Generates hours of the history and counts the rows of each tenant.
#[derive(Debug)]
pub(super) struct History<'p> {
    seed: u64,
    population: &'p Population,
    timeline: &'p Timeline,
    rows_per_tenant: Vec<u64>,
    starts: Vec<i64>,
    input: String,
    output: String,
    idempotency_key: String,
    steps: Vec<RunStep>,
    context: String,
}

/// One app call about to be attempted.
struct Call<'p> {
    tenant: usize,
    install: &'p Install,
    action: &'p Action,
    subject: Option<(u64, Uuid)>,
    /// The run and the step's id in it.
    step_of: Option<(Uuid, &'static str)>,
}

/// How a call's attempts ended.
struct Attempted {
    rows: u32,
    last_invoked_at: i64,
    end: StepEnd,
}

impl<'p> History<'p> {
    pub(super) fn new(seed: u64, population: &'p Population, timeline: &'p Timeline) -> Self {
        Self {
            seed,
            population,
            timeline,
            rows_per_tenant: vec![0; population.tenants().len()],
            starts: Vec::new(),
            input: String::with_capacity(4096),
            output: String::with_capacity(4096),
            idempotency_key: String::with_capacity(64),
            steps: Vec::with_capacity(5),
            context: String::with_capacity(128),
        }
    }

    /// Rows generated so far, by tenant (in the population's order).
    pub(super) fn rows_per_tenant(&self) -> &[u64] {
        &self.rows_per_tenant
    }

    /// Hands each row of `hour` to `sink`, in about time order.
    pub(super) fn hour(&mut self, hour: usize, sink: &mut impl Sink) {
        let mut rng = random::generator(self.seed, Purpose::Hour(hour));
        let start = self.timeline.hour_start(hour);
        let rows = self.timeline.rows_in(hour);
        let tenants = self.population.traffic_at(self.timeline.progress(start));
        self.starts.clear();
        self.starts
            .extend((0..rows).map(|_| start + rng.random_range(0..HOUR_MICROS)));
        self.starts.sort_unstable();
        let mut written = 0;
        while written < rows {
            let at = self.starts[written as usize];
            let tenant = random::pick(&mut rng, &tenants);
            let budget = rows - written;
            written += if rng.random_bool(RUN_SHARE) {
                self.run(&mut rng, tenant, at, budget, sink)
            } else {
                self.single_call(&mut rng, tenant, at, sink)
            };
        }
    }

    /// A workflow run from `at`: its steps in order until one fails for good; at most
    /// `budget` rows, then the run itself. Returns the rows written.
    fn run(
        &mut self,
        rng: &mut SmallRng,
        tenant_index: usize,
        mut at: i64,
        budget: u32,
        sink: &mut impl Sink,
    ) -> u32 {
        let population = self.population;
        let tenant = &population.tenants()[tenant_index];
        let run_id = random::uuid_v7(rng, at);
        let subject = tenant.pick_subject(rng);
        let workflow = tenant.pick_workflow(rng);
        let budget = budget.min(RUN_ROWS);
        let horizon = self.timeline.end();
        let mut rows = 0;
        let mut last_invoked_at = at;
        self.steps.clear();
        for step in &workflow.steps {
            if rows == budget || at > horizon {
                break;
            }
            let install = &tenant.installs[step.install];
            let call = Call {
                tenant: tenant_index,
                install,
                action: install.action(step.action),
                subject: Some(subject),
                step_of: Some((run_id, install.app.name)),
            };
            let attempted = self.attempts(rng, &call, at, budget - rows, sink);
            rows += attempted.rows;
            last_invoked_at = attempted.last_invoked_at;
            let reached = RunStep::seen_at(install.app.name, at, attempted.end, horizon);
            self.steps.push(reached);
            let Some(settled_at) = attempted.end.settled_at() else {
                break;
            };
            at = settled_at + rng.random_range(20_000..400_000);
        }
        let steps = workflow.steps.len();
        let Some(state) = RunState::at_horizon(&self.steps, steps, last_invoked_at, at, horizon)
        else {
            return rows;
        };
        payload::run_context(run_id, workflow.key, subject.0, &mut self.context);
        sink.run(&Run {
            id: run_id,
            tenant_id: tenant.id,
            definition_key: workflow.key,
            subject_id: Some(subject.1),
            context: &self.context,
            state,
            steps: &self.steps,
        });
        rows
    }

    /// A call outside any run: one attempt. Returns the rows written (one).
    fn single_call(
        &mut self,
        rng: &mut SmallRng,
        tenant_index: usize,
        at: i64,
        sink: &mut impl Sink,
    ) -> u32 {
        let population = self.population;
        let tenant = &population.tenants()[tenant_index];
        let install = &tenant.installs[tenant.pick_install(rng)];
        let subject = rng
            .random_bool(SINGLE_CALL_SUBJECT)
            .then(|| tenant.pick_subject(rng));
        let call = Call {
            tenant: tenant_index,
            install,
            action: install.action(install.pick_action(rng)),
            subject,
            step_of: None,
        };
        self.attempts(rng, &call, at, 1, sink).rows
    }

    /// The attempts of `call` from `at`, retried while they fail retryably (steps only), at
    /// most `budget` of them and none after the end of the timeline.
    fn attempts(
        &mut self,
        rng: &mut SmallRng,
        call: &Call<'_>,
        mut at: i64,
        budget: u32,
        sink: &mut impl Sink,
    ) -> Attempted {
        let population = self.population;
        let tenant = &population.tenants()[call.tenant];
        payload::input(rng, call.action.input, call.subject, &mut self.input);
        self.idempotency_key.clear();
        if let Some((run, step)) = call.step_of {
            self.idempotency_key.push_str("run:");
            self.idempotency_key
                .push_str(run.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
            self.idempotency_key.push_str(":step:");
            self.idempotency_key.push_str(step);
        }
        let retries = if call.step_of.is_some() { ATTEMPTS } else { 1 };
        let mut rows = 0;
        let mut last_invoked_at = at;
        // Replaced by the first attempt, which is always made.
        let mut end = StepEnd::Stopped { at };
        for attempt in 1..=retries {
            if rows == budget || at > self.timeline.end() {
                end = StepEnd::Stopped { at };
                break;
            }
            let outcome = attempt::draw(rng, call.install.app, call.action);
            if outcome.has_output {
                payload::output(rng, call.action.output, &mut self.output);
            }
            let progress = self.timeline.progress(at);
            let row = Invocation {
                id: random::uuid_v7(rng, at),
                tenant_id: tenant.id,
                app_name: call.install.app.name,
                version_id: call.install.version_at(progress),
                action: call.action.name,
                subject_id: call.subject.map(|(_, id)| id),
                workflow_run_id: call.step_of.map(|(run, _)| run),
                input: &self.input,
                output: outcome.has_output.then_some(self.output.as_str()),
                status: outcome.status,
                error: outcome.error,
                duration_ms: outcome.duration_ms,
                invoked_at: at,
                idempotency_key: call.step_of.map(|_| self.idempotency_key.as_str()),
                attempt,
                usage: reported_usage(rng, progress, &outcome, call.action),
            };
            sink.invocation(&row);
            rows += 1;
            self.rows_per_tenant[call.tenant] += 1;
            last_invoked_at = at;
            at += (outcome.duration_ms * 1000.0) as i64;
            end = match outcome.status {
                InvocationStatus::Success => StepEnd::Answered { at },
                InvocationStatus::Pending => StepEnd::CalledBack {
                    at: at + callback_delay(rng),
                },
                InvocationStatus::Error | InvocationStatus::Timeout => StepEnd::Failed {
                    at,
                    failure: StepFailure {
                        app: call.install.app.name,
                        action: call.action.name,
                        code: outcome.status.as_str(),
                    },
                },
            };
            if end.settled_at().is_some() || !outcome.retryable {
                break;
            }
            // Drawn after the last attempt too, as it always was: skipping it would change every
            // later row of the hour.
            at += backoff(rng, attempt);
        }
        Attempted {
            rows,
            last_invoked_at,
            end,
        }
    }
}

/// Usage counters, unless the row predates the runner reporting them.
fn reported_usage(
    rng: &mut SmallRng,
    progress: f64,
    outcome: &Outcome,
    action: &Action,
) -> Option<Usage> {
    if progress < USAGE_SINCE || rng.random_bool(USAGE_MISSING) {
        return None;
    }
    Some(attempt::usage(rng, outcome.status, action))
}

/// The run's exponential retry delay after attempt `attempt`, in microseconds.
fn backoff(rng: &mut SmallRng, attempt: i32) -> i64 {
    (1_000_000 << (attempt - 1)) + rng.random_range(0..250_000)
}

/// How long a vendor takes to call back, in microseconds: seconds to minutes.
fn callback_delay(rng: &mut SmallRng) -> i64 {
    (random::log_normal(rng, 20.0, 1.0).min(600.0) * 1_000_000.0) as i64
}
