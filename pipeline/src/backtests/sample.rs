//! The recorded evaluations a backtest replays: the newest `limit` of the last `lastDays` days
//! (SPEC §2.7's `sample`) of the evaluations that ran the rule, of the rule set, or, for a
//! workflow, of its runs (each run once: its evaluations' combined decision, the data of its
//! newest one). Newest first, at most 5,000: counted, then streamed to the replay as the rows
//! arrive (a workflow's runs are gathered first).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;
use sqlx::PgPool;
use topics::backtests::{Sample, Target};
use uuid::Uuid;

use super::replay::{Recorded, RecordedRule, Verdict};
use crate::Error;

/// What a workflow's sample reads of each evaluation: all of it.
const RUN_COLUMNS: &str = "id, subject_id, run_id, evaluated_at, decision, rules, data";

/// Rows a workflow's sample reads at a time while it gathers runs.
const RUN_PAGE: i64 = 5000;

#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    subject_id: Option<Uuid>,
    run_id: Uuid,
    evaluated_at: DateTime<Utc>,
    decision: String,
    rules: Value,
    data: Value,
}

impl From<Row> for Recorded {
    fn from(row: Row) -> Self {
        let rules = match row.rules {
            Value::Array(rules) => rules.iter().map(recorded_rule).collect(),
            _ => Vec::new(),
        };
        Recorded {
            id: row.id,
            subject_id: row.subject_id,
            evaluated_at: row.evaluated_at,
            decision: Verdict::stored(&row.decision),
            rules,
            data: row.data,
        }
    }
}

fn recorded_rule(rule: &Value) -> RecordedRule {
    let text = |field: &str| rule.get(field).and_then(Value::as_str).map(str::to_owned);
    RecordedRule {
        id: text("id").unwrap_or_default(),
        key: text("key"),
        outcome: Verdict::stored(&text("outcome").unwrap_or_default()),
    }
}

/// What a replay reads of each recorded evaluation ([`Version::reads`](super::replay::Version::reads)):
/// the data always, the recorded rules' outcomes only when the replay uses them (a rule's, and
/// a set's with app rules). A 5,000-evaluation sample of a 20-rule set is 9.3 MB with its
/// recorded rules and 2.2 MB without. (Reading only the values at the rules' paths costs the
/// database more than sending the whole data: each path unpacks the compressed value again.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reads {
    pub(crate) rules: bool,
}

/// A sample as it is read: how many evaluations it holds (counted first), and each of them in
/// turn as it arrives, so the replay runs while the database still sends the rest.
pub(crate) struct Reading<'p> {
    pub(crate) total: usize,
    pub(crate) evaluations: BoxStream<'p, Result<Recorded, Error>>,
}

pub(crate) async fn read<'p>(
    pool: &'p PgPool,
    tenant: Uuid,
    target: &Target,
    (sample, reads): (Sample, Reads),
) -> Result<Reading<'p>, Error> {
    let since = Utc::now() - chrono::Duration::days(i64::from(sample.last_days));
    let limit = i64::from(sample.limit);
    let (filter, key) = match target {
        Target::Rule { key, .. } => ("rule_keys @> ARRAY[$3]", key.clone()),
        Target::RuleSet { key, .. } => ("rule_set_key = $3", key.clone()),
        Target::Workflow { key, .. } => {
            let runs = runs(pool, tenant, key, (since, limit)).await?;
            return Ok(Reading {
                total: runs.len(),
                evaluations: futures::stream::iter(runs.into_iter().map(Ok)).boxed(),
            });
        }
    };
    let matching =
        format!("FROM rule_evaluations WHERE tenant_id = $1 AND evaluated_at >= $2 AND {filter}");
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT 1 {matching} LIMIT $4) AS sample"
    )))
    .bind(tenant)
    .bind(since)
    .bind(&key)
    .bind(limit)
    .fetch_one(pool)
    .await?;
    let rules = if reads.rules {
        "rules"
    } else {
        "'[]'::jsonb AS rules"
    };
    let evaluations = sqlx::query_as::<_, Row>(sqlx::AssertSqlSafe(format!(
        "SELECT id, subject_id, run_id, evaluated_at, decision, {rules}, data {matching} \
         ORDER BY evaluated_at DESC, id DESC LIMIT $4"
    )))
    .bind(tenant)
    .bind(since)
    .bind(key)
    .bind(limit)
    .fetch(pool)
    .map(|row| row.map(Recorded::from).map_err(Error::from))
    .boxed();
    Ok(Reading {
        total: usize::try_from(total).unwrap_or_default(),
        evaluations,
    })
}

/// The newest `limit` runs of workflow `key` with evaluations since `since`, each as one
/// recorded evaluation: the newest one's id, subject, time and data, with the decision of all
/// of the run's evaluations combined and all their rules' outcomes, newest first.
async fn runs(
    pool: &PgPool,
    tenant: Uuid,
    key: &str,
    (since, limit): (DateTime<Utc>, i64),
) -> Result<Vec<Recorded>, Error> {
    let mut order: Vec<Uuid> = Vec::new();
    let mut newest: HashMap<Uuid, Row> = HashMap::new();
    let mut after: Option<(DateTime<Utc>, Uuid)> = None;
    while (order.len() as i64) < limit {
        let page: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM rule_evaluations WHERE tenant_id = $1 AND workflow_key = $2 \
             AND evaluated_at >= $3 \
             AND ($4::timestamptz IS NULL OR (evaluated_at, id) < ($4, $5)) \
             ORDER BY evaluated_at DESC, id DESC LIMIT $6"
        )))
        .bind(tenant)
        .bind(key)
        .bind(since)
        .bind(after.map(|(at, _)| at))
        .bind(after.map(|(_, id)| id))
        .bind(RUN_PAGE)
        .fetch_all(pool)
        .await?;
        let last = page.len() < RUN_PAGE as usize;
        after = page.last().map(|row| (row.evaluated_at, row.id));
        for row in page {
            if !newest.contains_key(&row.run_id) && (order.len() as i64) < limit {
                order.push(row.run_id);
                newest.insert(row.run_id, row);
            }
        }
        if last {
            break;
        }
    }
    // Every evaluation of the chosen runs, for their combined decisions and all their rules'
    // outcomes (a run's older ones may lie beyond the pages read).
    let all: Vec<(Uuid, String, Value)> = sqlx::query_as(
        "SELECT run_id, decision, rules FROM rule_evaluations \
         WHERE run_id = ANY($1) AND tenant_id = $2 ORDER BY evaluated_at DESC, id DESC",
    )
    .bind(&order)
    .bind(tenant)
    .fetch_all(pool)
    .await?;
    let mut of_run: HashMap<Uuid, (Vec<Verdict>, Vec<RecordedRule>)> = HashMap::new();
    for (run, decision, rules) in all {
        let (decisions, recorded) = of_run.entry(run).or_default();
        decisions.push(Verdict::stored(&decision));
        if let Value::Array(rules) = rules {
            recorded.extend(rules.iter().map(recorded_rule));
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|run| {
            let mut recorded = Recorded::from(newest.remove(&run)?);
            let (decisions, rules) = of_run.remove(&run).unwrap_or_default();
            recorded.decision = Verdict::combined(decisions);
            recorded.rules = rules;
            Some(recorded)
        })
        .collect())
}
