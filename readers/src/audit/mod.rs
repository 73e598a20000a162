//! The audit log (SPEC §6.1; docs/cases-activity-audit.md "The audit log"): a page of the tenant's
//! recorded actions, newest first, filtered by action, actor and an inclusive time window, with a
//! total capped like the invocation history's; and the same rows oldest first in [`Pages`], for
//! exports, written by an [`Encoder`] in one of the export [`ExportFormat`]s. The total is
//! [`total`]'s.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgPool, Postgres, QueryBuilder};
use topics::settings::ExportFormat;
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

mod total;

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    pub id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    #[sqlx(flatten)]
    pub actor: Actor,
    pub subject_type: String,
    pub subject_id: String,
    pub payload: Value,
    pub request_id: Option<String>,
}

/// Who acted: `human`, `machine`, `applicant` or `system`, with the name their token gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct Actor {
    #[serde(rename = "type")]
    #[sqlx(rename = "actor_type")]
    pub kind: String,
    #[sqlx(rename = "actor_id")]
    pub id: String,
    #[sqlx(rename = "actor_name")]
    pub name: String,
}

/// Which events a list or an export holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Any of these actions; all when empty.
    pub actions: Vec<String>,
    /// The actor's id (a token's `sub`).
    pub actor: Option<String>,
    /// Inclusive bounds on `occurredAt`.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, occurred_at, action, actor_type, actor_id, actor_name, subject_type, \
    subject_id, payload, request_id";

/// A page, newest first; `total` counts up to [`crate::page::COUNT_CAP`].
///
/// Several actions are read as one branch per action, each from its own range of the
/// `(tenant_id, action, occurred_at)` index in time order, merged: `action = ANY(...)` would
/// make Postgres 15 read every matching row and sort them to find a page.
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    filter: &Filter,
    page: Page,
) -> Result<ListPage<AuditEvent>, Error> {
    let mut select = QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM "));
    push_source(&mut select, tenant, filter, page.offset + page.limit);
    select
        .push(" ORDER BY occurred_at DESC, id DESC LIMIT ")
        .push_bind(page.limit);
    select.push(" OFFSET ").push_bind(page.offset);
    let (items, counted) = tokio::try_join!(
        select.build_query_as().fetch_all(pool),
        total::of(pool, tenant, filter),
    )?;
    Ok(ListPage::capped(items, counted))
}

/// The events the filter selects, newest first, as a table expression: the tenant's events,
/// or with actions one branch per action, each at most `each` rows.
fn push_source(query: &mut QueryBuilder<Postgres>, tenant: Tenant, filter: &Filter, each: i64) {
    push_branches(query, (tenant, filter), None, ("DESC", each));
}

/// `(branch UNION ALL ...) AS events`: one branch per action of the filter (one without),
/// each ordered `direction` by time and id, after `after` (in that direction) when given, and
/// at most `each` rows.
fn push_branches(
    query: &mut QueryBuilder<Postgres>,
    (tenant, filter): (Tenant, &Filter),
    after: Option<(DateTime<Utc>, Uuid)>,
    (direction, each): (&'static str, i64),
) {
    let actions: Vec<Option<&str>> = if filter.actions.is_empty() {
        vec![None]
    } else {
        filter.actions.iter().map(|a| Some(a.as_str())).collect()
    };
    query.push("(");
    for (i, action) in actions.into_iter().enumerate() {
        if i > 0 {
            query.push(" UNION ALL ");
        }
        query.push("(SELECT * FROM audit_events");
        push_conditions(query, tenant, filter, action);
        if let Some((at, id)) = after {
            let beyond = if direction == "DESC" { "<" } else { ">" };
            query
                .push(format!(" AND (occurred_at, id) {beyond} ("))
                .push_bind(at)
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        query.push(format!(
            " ORDER BY occurred_at {direction}, id {direction} LIMIT "
        ));
        query.push_bind(each).push(")");
    }
    query.push(") AS events");
}

fn push_conditions(
    query: &mut QueryBuilder<Postgres>,
    tenant: Tenant,
    filter: &Filter,
    action: Option<&str>,
) {
    query.push(" WHERE tenant_id = ").push_bind(tenant.id());
    if let Some(action) = action {
        query.push(" AND action = ").push_bind(action.to_owned());
    }
    if let Some(actor) = &filter.actor {
        query.push(" AND actor_id = ").push_bind(actor.clone());
    }
    if let Some(from) = filter.from {
        query.push(" AND occurred_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND occurred_at <= ").push_bind(to);
    }
}

/// Every matching event, oldest first, a page at a time: each page is one short query from
/// where the last ended (by time and id), so an export holds no connection, and no snapshot,
/// while its client reads.
#[derive(Debug)]
pub struct Pages {
    tenant: Tenant,
    filter: Filter,
    after: Option<(DateTime<Utc>, Uuid)>,
    done: bool,
}

/// Events a page holds.
pub const PAGE_ROWS: i64 = 5000;

impl Pages {
    pub fn new(tenant: Tenant, filter: Filter) -> Self {
        Self {
            tenant,
            filter,
            after: None,
            done: false,
        }
    }

    /// The next page; `None` once every event was read.
    pub async fn next(&mut self, pool: &PgPool) -> Result<Option<Vec<AuditEvent>>, Error> {
        if self.done {
            return Ok(None);
        }
        let mut query = QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM "));
        push_branches(
            &mut query,
            (self.tenant, &self.filter),
            self.after,
            ("ASC", PAGE_ROWS),
        );
        query
            .push(" ORDER BY occurred_at, id LIMIT ")
            .push_bind(PAGE_ROWS);
        let page: Vec<AuditEvent> = query.build_query_as().fetch_all(pool).await?;
        self.done = (page.len() as i64) < PAGE_ROWS;
        self.after = page.last().map(|event| (event.occurred_at, event.id));
        if page.is_empty() {
            return Ok(None);
        }
        Ok(Some(page))
    }
}

/// The CSV columns.
const CSV_HEADER: [&str; 10] = [
    "id",
    "occurredAt",
    "action",
    "actorType",
    "actorId",
    "actorName",
    "subjectType",
    "subjectId",
    "requestId",
    "payload",
];

/// Writes events in a format into a buffer the caller takes from time to time.
pub struct Encoder {
    format: ExportFormat,
    out: Vec<u8>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("format", &self.format)
            .finish()
    }
}

impl Encoder {
    /// An encoder with what a file starts with (the CSV header) already written.
    pub fn new(format: ExportFormat) -> Self {
        let mut encoder = Self {
            format,
            out: Vec::new(),
        };
        if format == ExportFormat::Csv {
            encoder.csv_record(&CSV_HEADER);
        }
        encoder
    }

    /// One CSV record (RFC 4180 quoting, by the `csv` crate).
    fn csv_record(&mut self, fields: &[&str]) {
        let mut writer = csv::WriterBuilder::new()
            .buffer_capacity(1024)
            .from_writer(&mut self.out);
        // Writing into memory cannot fail.
        let _ = writer.write_record(
            fields
                .iter()
                .map(|f| inert(f))
                .collect::<Vec<_>>()
                .iter()
                .map(|c| c.as_bytes()),
        );
        let _ = writer.flush();
    }

    /// Appends `event`.
    pub fn write(&mut self, event: &AuditEvent) {
        match self.format {
            ExportFormat::Ndjson => {
                // An event is plain JSON values: serialising it into memory cannot fail.
                let _ = serde_json::to_writer(&mut self.out, event);
                self.out.push(b'\n');
            }
            ExportFormat::Csv => {
                let id = event.id.to_string();
                let occurred = event
                    .occurred_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
                let payload = event.payload.to_string();
                let fields: [&str; 10] = [
                    &id,
                    &occurred,
                    &event.action,
                    &event.actor.kind,
                    &event.actor.id,
                    &event.actor.name,
                    &event.subject_type,
                    &event.subject_id,
                    event.request_id.as_deref().unwrap_or(""),
                    &payload,
                ];
                self.csv_record(&fields);
            }
        }
    }

    /// What was written since the last take.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// How much is waiting to be taken.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A CSV cell a spreadsheet will not run as a formula: one starting with `=`, `+`, `-`, `@`, a
/// tab or a carriage return gets a leading `'` (names and ids come from tokens and callers).
fn inert(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r') => format!("'{cell}").into(),
        _ => cell.into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(name: &str) -> AuditEvent {
        AuditEvent {
            id: Uuid::nil(),
            occurred_at: DateTime::UNIX_EPOCH,
            action: "case.decided".into(),
            actor: Actor {
                kind: "human".into(),
                id: "ada".into(),
                name: name.into(),
            },
            subject_type: "case".into(),
            subject_id: "c1".into(),
            payload: json!({"outcome": "approved"}),
            request_id: None,
        }
    }

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let mut encoder = Encoder::new(ExportFormat::Csv);
        encoder.write(&event("=HYPERLINK(\"x\")"));
        encoder.write(&event("Lovelace, \"Ada\""));
        let text = String::from_utf8(encoder.take()).expect("utf-8");
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let names: Vec<String> = reader
            .records()
            .map(|r| r.expect("record")[5].to_owned())
            .collect();
        assert_eq!(names, ["'=HYPERLINK(\"x\")", "Lovelace, \"Ada\""]);
        assert!(encoder.is_empty());
    }

    #[test]
    fn ndjson_is_one_event_a_line() {
        let mut encoder = Encoder::new(ExportFormat::Ndjson);
        encoder.write(&event("Ada"));
        encoder.write(&event("Grace"));
        let text = String::from_utf8(encoder.take()).expect("utf-8");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines[1]["actor"]["name"], "Grace");
    }
}
