//! `GET /audit-events/export` (`audit:read`; docs/cases-activity-audit.md "The audit log"): every
//! event the filters of `GET /audit-events` select, oldest first, as NDJSON (`format=ndjson`, the
//! default) or CSV (`format=csv`), streamed. Events are read a page at a time
//! ([`readers::audit::Pages`]: each a short query, so an export holds no connection while its
//! client reads) and sent in chunks of about 64 KiB, a few ahead of the client: the process holds a
//! page and a few chunks, not the export. Rows are counted in `svc.audit.export.rows`.
//!
//! Without `to`, an export ends at the moment it started.
//!
//! At most [`AUDIT_EXPORTS_AT_ONCE`](crate::state::AUDIT_EXPORTS_AT_ONCE) exports run in a process
//! (beyond: 503 `overloaded` with `Retry-After`); a client that takes nothing for [`STALLED`] is
//! dropped. A read that fails mid-way ends the body without its final chunk, so the client sees a
//! broken transfer rather than a short file that looks whole.

use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use readers::audit::{Encoder, Filter, Pages};
use service::http::Body;
use sqlx::PgPool;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use topics::settings::ExportFormat;

use super::audit_events::filter;
use crate::call::Call;
use crate::error::Error;
use crate::query::Query;

/// The size a chunk grows to before it is sent.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks written ahead of the client.
const CHUNKS_AHEAD: usize = 4;
/// How long a client may take nothing before its export is dropped.
const STALLED: Duration = Duration::from_secs(60);

type Chunk = Result<Frame<Bytes>, std::io::Error>;

pub(crate) async fn export(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, raw_query) = (call.state, call.principal, call.query());
    let mut query = Query::parse(raw_query);
    let filter = filter(&mut query);
    let format = match query.one("format") {
        None => ExportFormat::Ndjson,
        Some(text) => ExportFormat::parse(&text).unwrap_or_else(|| {
            query.reject("format", "must be ndjson or csv");
            ExportFormat::Ndjson
        }),
    };
    query.finish()?;
    // An export without an end ends where it started: events written while it runs are the
    // next export's, or a busy tenant's export might never end.
    let filter = Filter {
        to: filter.to.or_else(|| Some(chrono::Utc::now())),
        ..filter
    };
    let Ok(permit) = state.audit_exports.clone().try_acquire_owned() else {
        return Err(Error::Overloaded {
            retry_after_seconds: 30,
        });
    };
    let (sender, receiver) = mpsc::channel::<Chunk>(CHUNKS_AHEAD);
    let export = Export {
        pool: state.reads.pool.clone(),
        tenant: principal.tenant,
        format,
        _permit: permit,
    };
    tokio::spawn(export.write(filter, sender));
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

/// One export on its way.
struct Export {
    pool: PgPool,
    tenant: uuid::Uuid,
    format: ExportFormat,
    /// Held until the export ends.
    _permit: OwnedSemaphorePermit,
}

impl Export {
    /// Writes every page to `sender` in chunks until the pages end, the client goes or stalls,
    /// or a read fails.
    async fn write(self, filter: Filter, sender: mpsc::Sender<Chunk>) {
        let counter = metrics::counter!(
            "svc.audit.export.rows",
            "tenant" => self.tenant.to_string(),
            "format" => self.format.as_str(),
        );
        let mut pages = Pages::new(readers::Tenant::new(self.tenant), filter);
        let mut encoder = Encoder::new(self.format);
        loop {
            let page = match pages.next(&self.pool).await {
                Ok(Some(page)) => page,
                Ok(None) => break,
                Err(error) => {
                    tracing::error!(%error, "an audit export failed while reading");
                    let broken = std::io::Error::other("the export failed while reading");
                    let _ = tokio::time::timeout(STALLED, sender.send(Err(broken))).await;
                    return;
                }
            };
            for event in &page {
                encoder.write(event);
                if encoder.len() >= CHUNK_BYTES && !send(&sender, encoder.take()).await {
                    return;
                }
            }
            counter.increment(page.len() as u64);
        }
        if !encoder.is_empty() {
            send(&sender, encoder.take()).await;
        }
    }
}

/// Sends a chunk; `false` when the client went or took nothing for [`STALLED`].
async fn send(sender: &mpsc::Sender<Chunk>, chunk: Vec<u8>) -> bool {
    let frame = Ok(Frame::data(Bytes::from(chunk)));
    matches!(
        tokio::time::timeout(STALLED, sender.send(frame)).await,
        Ok(Ok(()))
    )
}
