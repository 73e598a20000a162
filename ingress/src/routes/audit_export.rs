//! `GET /audit-events/export` (`audit:read`; README "The audit log"): every event the filters
//! of `GET /audit-events` select, oldest first, as NDJSON (`format=ndjson`, the default) or CSV
//! (`format=csv`), streamed: rows are read from Postgres as the client takes the body, a chunk
//! of about 64 KiB at a time, so the process holds a chunk and not the export (the memory is
//! the same for a thousand rows or ten million). Rows are counted in `svc.audit.export.rows`.
//! A read that fails mid-export ends the body without its final chunk, so the client sees a
//! broken transfer rather than a short file that looks whole.

use bytes::Bytes;
use futures::StreamExt;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use readers::audit::{self, AuditEvent};
use service::http::Body;
use tokio::sync::mpsc;

use super::audit_events::filter;
use crate::auth::Principal;
use crate::error::Error;
use crate::query::Query;
use crate::state::State;

/// The size a chunk grows to before it is sent.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks written ahead of the client.
const CHUNKS_AHEAD: usize = 4;

/// The file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Ndjson,
    Csv,
}

impl Format {
    fn as_str(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
        }
    }
}

/// The CSV columns; `payload` is the payload's JSON.
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

type Chunk = Result<Frame<Bytes>, std::io::Error>;

pub(crate) async fn export(
    state: &State,
    principal: &Principal,
    raw_query: Option<&str>,
) -> Result<Response<Body>, Error> {
    let mut query = Query::parse(raw_query);
    let filter = filter(&mut query);
    let format = match query.one("format").as_deref() {
        None | Some("ndjson") => Format::Ndjson,
        Some("csv") => Format::Csv,
        Some(_) => {
            query.reject("format", "must be ndjson or csv");
            Format::Ndjson
        }
    };
    query.finish()?;
    let (sender, receiver) = mpsc::channel::<Chunk>(CHUNKS_AHEAD);
    let pool = state.pool.clone();
    let tenant = principal.tenant;
    tokio::spawn(async move {
        let rows = audit::export(&pool, readers::Tenant::new(tenant), filter);
        write(rows, format, tenant, sender).await;
    });
    let body = StreamBody::new(futures::stream::unfold(receiver, |mut receiver| async {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    }));
    let extension = format.as_str();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, format.content_type())
        .header(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"audit-events.{extension}\""),
        )
        .body(BodyExt::boxed(body))
        .map_err(|e| Error::Internal(e.to_string()))
}

/// Writes `rows` to `sender` in chunks until the rows end, the client goes or a read fails.
async fn write(
    rows: impl futures::Stream<Item = Result<AuditEvent, readers::Error>>,
    format: Format,
    tenant: uuid::Uuid,
    sender: mpsc::Sender<Chunk>,
) {
    let counter = metrics::counter!(
        "svc.audit.export.rows",
        "tenant" => tenant.to_string(),
        "format" => format.as_str(),
    );
    let mut chunk = Vec::with_capacity(CHUNK_BYTES + 4096);
    if format == Format::Csv {
        csv_line(&mut chunk, CSV_HEADER.iter().map(|c| c.as_bytes()));
    }
    let mut rows = std::pin::pin!(rows);
    while let Some(row) = rows.next().await {
        let event = match row {
            Ok(event) => event,
            Err(error) => {
                tracing::error!(%error, "an audit export failed while reading");
                let broken = std::io::Error::other("the export failed while reading");
                let _ = sender.send(Err(broken)).await;
                return;
            }
        };
        match format {
            Format::Ndjson => {
                if serde_json::to_writer(&mut chunk, &event).is_err() {
                    continue;
                }
                chunk.push(b'\n');
            }
            Format::Csv => csv_event(&mut chunk, &event),
        }
        counter.increment(1);
        if chunk.len() >= CHUNK_BYTES {
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK_BYTES + 4096));
            if sender
                .send(Ok(Frame::data(Bytes::from(full))))
                .await
                .is_err()
            {
                return;
            }
        }
    }
    if !chunk.is_empty() {
        let _ = sender.send(Ok(Frame::data(Bytes::from(chunk)))).await;
    }
}

fn csv_event(chunk: &mut Vec<u8>, event: &AuditEvent) {
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
    csv_line(chunk, fields.iter().map(|f| f.as_bytes()));
}

/// One CSV record (RFC 4180 quoting, by the `csv` crate) appended to `chunk`.
fn csv_line<'a>(chunk: &mut Vec<u8>, fields: impl Iterator<Item = &'a [u8]>) {
    let mut writer = csv::Writer::from_writer(chunk);
    // Writing into memory cannot fail.
    let _ = writer.write_record(fields);
    let _ = writer.flush();
}
