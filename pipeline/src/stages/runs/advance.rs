//! Takes a run as far as it goes now, from its stored state: the step at the run's position
//! runs ([`steps`](super::steps)); a finished step's output lands in the context under its
//! `outputKey` (SPEC §4.12 rule 6) and the run moves on; a step that waits (a retry's delay, a
//! callback) leaves the run where it is until a timer or a callback resumes it; a failed step
//! fails the run. Each move commits on its own, conditional on the position it moves from, so
//! running this twice (a redelivery, a timer that fires twice) changes nothing the second time.

use serde_json::{Map, Value};
use sqlx::PgPool;
use topics::cases::Opening;
use topics::definitions::{Step, StepRun, Workflow};
use uuid::Uuid;

use super::call::Calls;
use super::evaluation::{self, Evaluation};
use super::steps::{self, StepOutcome};
use crate::Error;
use crate::task_failures::{self, Owner, Reason};

/// A run as the engine reads it, with its workflow version's body.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct RunRow {
    pub(crate) id: Uuid,
    pub(crate) tenant_id: Uuid,
    pub(crate) definition_key: String,
    pub(crate) definition_version: i32,
    pub(crate) subject_id: Option<Uuid>,
    pub(crate) status: String,
    pub(crate) context: Value,
    pub(crate) position: i32,
    pub(crate) body: Value,
}

/// Advances run `id` of `tenant` until it waits or ends.
pub(crate) async fn run(
    calls: &Calls,
    tenant: Uuid,
    id: Uuid,
    request_id: &str,
) -> Result<(), Error> {
    loop {
        let Some(run) = load(&calls.pool, tenant, id).await? else {
            return Ok(());
        };
        if !matches!(run.status.as_str(), "running" | "waiting_callback") {
            return Ok(());
        }
        let workflow: Workflow = match serde_json::from_value(run.body.clone()) {
            Ok(workflow) => workflow,
            Err(error) => {
                task_failures::count(
                    Owner::Of(Some(run.tenant_id)),
                    <super::RunsStage as crate::stage::Stage>::NAME,
                    Reason::VersionUnreadable,
                );
                let error = format!("the workflow version does not read: {error}");
                return fail(&calls.pool, &run, None, &error).await;
            }
        };
        let position = usize::try_from(run.position).unwrap_or(usize::MAX);
        let Some(step) = workflow.steps.get(position) else {
            return complete(&calls.pool, &run).await;
        };
        begin_step(&calls.pool, &run, step).await?;
        let span = tracing::info_span!(
            "activity",
            otel.name = %format_args!("activity.{}", step_type(step)),
            svc.tenant_id = %run.tenant_id,
            svc.run_id = %run.id,
            svc.step_id = %step.id,
            svc.workflow_id = %run.definition_key,
            svc.definition.key = %run.definition_key,
        );
        let outcome =
            tracing::Instrument::instrument(steps::run(calls, &run, step, request_id), span)
                .await?;
        match outcome {
            StepOutcome::Done(output) => finish_step(&calls.pool, &run, step, output, None).await?,
            StepOutcome::Evaluated(evaluation) => {
                let output = evaluation.output.clone();
                finish_step(&calls.pool, &run, step, output, Some(&evaluation)).await?;
            }
            StepOutcome::Waiting => return Ok(()),
            StepOutcome::Pending { external_id } => {
                return wait_for_callback(&calls.pool, &run, step, &external_id).await;
            }
            StepOutcome::Failed(error) => return fail(&calls.pool, &run, Some(step), &error).await,
            StepOutcome::OpensCase(opening) => {
                open_case(&calls.pool, &run, step, &opening).await?;
            }
        }
    }
}

fn step_type(step: &Step) -> &'static str {
    match step.run {
        StepRun::CallApp(_) => "call_app",
        StepRun::RuleSet(_) => "rule_set",
        StepRun::OpenCase(_) => "open_case",
    }
}

/// Where a step's output lands in the context.
fn output_key(step: &Step) -> &str {
    let key = match &step.run {
        StepRun::CallApp(call) => call.output_key.as_deref(),
        StepRun::RuleSet(set) => set.output_key.as_deref(),
        StepRun::OpenCase(case) => case.output_key.as_deref(),
    };
    key.unwrap_or(&step.id)
}

/// The context with a step's output under its key (SPEC §4.12 rule 6).
fn with_output(context: &Value, key: &str, output: Value) -> Value {
    let mut fields = match context {
        Value::Object(fields) => fields.clone(),
        _ => Map::new(),
    };
    fields.insert(key.to_owned(), output);
    Value::Object(fields)
}

/// Where an asynchronous action's external id lands in the context (SPEC §4.12 rule 6).
fn external_id_key(step: &Step) -> String {
    format!("{}ExternalId", output_key(step))
}

async fn load(pool: &PgPool, tenant: Uuid, id: Uuid) -> Result<Option<RunRow>, Error> {
    Ok(sqlx::query_as(
        "SELECT r.id, r.tenant_id, r.definition_key, r.definition_version, r.subject_id, r.status, r.context, \
         r.position, d.body \
         FROM workflow_runs r JOIN definition_versions d ON d.tenant_id = r.tenant_id \
           AND d.kind = 'workflow' AND d.key = r.definition_key \
           AND d.version = r.definition_version \
         WHERE r.id = $1 AND r.tenant_id = $2",
    )
    .bind(id)
    .bind(tenant)
    .fetch_optional(pool)
    .await?)
}

async fn begin_step(pool: &PgPool, run: &RunRow, step: &Step) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO workflow_run_steps (run_id, step_id, position, type, status, started_at) \
         VALUES ($1, $2, $3, $4, 'running', now()) ON CONFLICT (run_id, step_id) DO NOTHING",
    )
    .bind(run.id)
    .bind(&step.id)
    .bind(run.position)
    .bind(step_type(step))
    .execute(pool)
    .await?;
    Ok(())
}

/// The step's output goes into the context and the run moves to the next step; a rule set's
/// evaluation is recorded (and its decision counted in `svc.decision.count`) with the move, or
/// not at all when the run moved on meanwhile.
async fn finish_step(
    pool: &PgPool,
    run: &RunRow,
    step: &Step,
    output: Value,
    evaluation: Option<&Evaluation>,
) -> Result<(), Error> {
    let mut tx = pool.begin().await?;
    if move_on(&mut tx, run, step, output).await? {
        if let Some(evaluation) = evaluation {
            evaluation::record(&mut tx, run, step, evaluation).await?;
        }
        tx.commit().await?;
        // Counted with the move, as it is recorded: once, however often the step ran.
        if let Some(evaluation) = evaluation {
            metrics::counter!(
                "svc.decision.count",
                "tenant" => run.tenant_id.to_string(),
                "outcome" => evaluation.decision.as_str(),
                "source" => "workflow",
                "definition_key" => run.definition_key.clone(),
            )
            .increment(1);
        }
    }
    Ok(())
}

/// An `open_case` step: the case (once per run and step: a step run again finds the one it
/// opened), its SLA timer, and the run moved on, in one transaction.
async fn open_case(
    pool: &PgPool,
    run: &RunRow,
    step: &Step,
    opening: &Opening,
) -> Result<(), Error> {
    let mut tx = pool.begin().await?;
    let case_id: Uuid = sqlx::query_scalar(
        "WITH opened AS ( \
           INSERT INTO cases (id, tenant_id, type, title, subject_id, priority, status, \
             sla_due_at, opened_by, opened_by_name, opened_at, workflow_run_id, step_id) \
           VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8, $8, now(), $9, $10) \
           ON CONFLICT (workflow_run_id, step_id) DO NOTHING RETURNING id) \
         SELECT id FROM opened UNION ALL \
         SELECT id FROM cases WHERE workflow_run_id = $9 AND step_id = $10 LIMIT 1",
    )
    .bind(Uuid::now_v7())
    .bind(run.tenant_id)
    .bind(&opening.case_type)
    .bind(&opening.title)
    .bind(opening.subject_id)
    .bind(opening.priority.as_str())
    .bind(opening.sla_due_at)
    .bind(format!("workflow:{}", run.definition_key))
    .bind(run.id)
    .bind(&step.id)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO case_timers (case_id, tenant_id, due_at) \
         SELECT id, tenant_id, sla_due_at FROM cases WHERE id = $1 AND status = 'open' \
         ON CONFLICT (case_id) DO NOTHING",
    )
    .bind(case_id)
    .execute(&mut *tx)
    .await?;
    let output = serde_json::json!({"opened": true, "caseId": case_id});
    // A run that moved on (or ended) meanwhile keeps no case of this step's: the transaction
    // is dropped, and the case with it.
    if move_on(&mut tx, run, step, output).await? {
        tx.commit().await?;
    }
    Ok(())
}

/// Within `tx`: the step's output into the context, and the run to its next step, if it is
/// still where it was read; answers whether it was.
async fn move_on(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    run: &RunRow,
    step: &Step,
    output: Value,
) -> Result<bool, Error> {
    let context = with_output(&run.context, output_key(step), output.clone());
    let moved = sqlx::query(
        "UPDATE workflow_runs SET context = $3, position = position + 1, status = 'running', \
         updated_at = now() WHERE id = $1 AND position = $2 \
           AND status IN ('running', 'waiting_callback')",
    )
    .bind(run.id)
    .bind(run.position)
    .bind(context)
    .execute(&mut **tx)
    .await?;
    if moved.rows_affected() == 1 {
        sqlx::query(
            "UPDATE workflow_run_steps SET status = 'completed', output = $3, \
             finished_at = now() WHERE run_id = $1 AND step_id = $2",
        )
        .bind(run.id)
        .bind(&step.id)
        .bind(&output)
        .execute(&mut **tx)
        .await?;
    }
    Ok(moved.rows_affected() == 1)
}

/// An asynchronous action answered `pending`: `<outputKey>ExternalId` goes into the context
/// and the run waits for the callback (SPEC §3.2, §4.12 rule 6).
async fn wait_for_callback(
    pool: &PgPool,
    run: &RunRow,
    step: &Step,
    external_id: &str,
) -> Result<(), Error> {
    let mut tx = pool.begin().await?;
    let moved = sqlx::query(
        "UPDATE workflow_runs SET status = 'waiting_callback', updated_at = now(), \
         context = jsonb_set(context, ARRAY[$3::text], to_jsonb($4::text)) \
         WHERE id = $1 AND position = $2 AND status = 'running'",
    )
    .bind(run.id)
    .bind(run.position)
    .bind(external_id_key(step))
    .bind(external_id)
    .execute(&mut *tx)
    .await?;
    if moved.rows_affected() == 1 {
        sqlx::query(
            "UPDATE workflow_run_steps SET status = 'waiting_callback' \
             WHERE run_id = $1 AND step_id = $2",
        )
        .bind(run.id)
        .bind(&step.id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

async fn complete(pool: &PgPool, run: &RunRow) -> Result<(), Error> {
    finish(pool, run, "completed", None, None).await
}

async fn fail(pool: &PgPool, run: &RunRow, step: Option<&Step>, error: &str) -> Result<(), Error> {
    finish(pool, run, "failed", step, Some(error)).await
}

/// Ends the run (and its current step, when it failed it).
async fn finish(
    pool: &PgPool,
    run: &RunRow,
    status: &str,
    step: Option<&Step>,
    error: Option<&str>,
) -> Result<(), Error> {
    let mut tx = pool.begin().await?;
    let ended: Option<(f64,)> = sqlx::query_as(
        "UPDATE workflow_runs SET status = $3, error = $4, updated_at = now(), \
         finished_at = now() \
         WHERE id = $1 AND position = $2 AND status IN ('running', 'waiting_callback') \
         RETURNING extract(epoch FROM finished_at - created_at)::float8",
    )
    .bind(run.id)
    .bind(run.position)
    .bind(status)
    .bind(error)
    .fetch_optional(&mut *tx)
    .await?;
    if let (Some(_), Some(step)) = (&ended, step) {
        sqlx::query(
            "UPDATE workflow_run_steps SET status = 'failed', error = $3, finished_at = now() \
             WHERE run_id = $1 AND step_id = $2",
        )
        .bind(run.id)
        .bind(&step.id)
        .bind(error)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("DELETE FROM run_timers WHERE run_id = $1")
        .bind(run.id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if let Some((seconds,)) = ended {
        super::observe_finished(run.tenant_id, &run.definition_key, status, seconds);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(body: Value) -> Step {
        serde_json::from_value(body).expect("a step")
    }

    #[test]
    fn rule_6_the_output_lands_under_the_output_key_or_else_the_step_id() {
        let keyed = step(
            json!({"id": "kyc", "type": "call_app", "app": "a", "action": "b",
                                "outputKey": "screening"}),
        );
        let context = json!({"subject": {"name": "Ada"}, "screening": "old"});
        assert_eq!(
            with_output(&context, output_key(&keyed), json!({"score": 1})),
            json!({"subject": {"name": "Ada"}, "screening": {"score": 1}})
        );
        let unkeyed = step(json!({"id": "kyc", "type": "call_app", "app": "a", "action": "b"}));
        assert_eq!(output_key(&unkeyed), "kyc");
        let rules = step(json!({"id": "checks", "type": "rule_set", "rules": [],
                                "outputKey": "verdict"}));
        assert_eq!(output_key(&rules), "verdict");
    }

    #[test]
    fn rule_6_an_asynchronous_action_also_writes_its_external_id_key() {
        let keyed = step(
            json!({"id": "kyc", "type": "call_app", "app": "a", "action": "b",
                                "outputKey": "idv"}),
        );
        assert_eq!(external_id_key(&keyed), "idvExternalId");
        let unkeyed = step(json!({"id": "kyc", "type": "call_app", "app": "a", "action": "b"}));
        assert_eq!(external_id_key(&unkeyed), "kycExternalId");
    }
}
