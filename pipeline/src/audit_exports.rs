//! Scheduled audit exports (SPEC runbook facts; docs/cases-activity-audit.md "The audit log"):
//! every minute (`AUDIT_EXPORT_EVERY_SECONDS`) the worker looks for a tenant's schedule with a
//! window due, and writes that window's audit events to object storage as one file,
//! `audit-exports/<tenant>/<from>_<to>.<ndjson|csv>`.
//!
//! - A window is `[coveredUntil, coveredUntil + intervalHours)`, due once it ended five minutes
//!   ago (a stage's transaction that recorded an event at the window's end has committed by
//!   then). A schedule behind by several windows catches up one window a turn.
//! - A file over 256 MiB fails the run: the upload is abandoned and the run recorded `failed`
//!   with its error; so is a storage failure. A failed run leaves `coveredUntil` where it was, so
//!   the next run covers its window again (a shorter `intervalHours` makes the next file
//!   smaller); that run waits a turn (`AUDIT_EXPORT_EVERY_SECONDS`), and other tenants' windows
//!   go first meanwhile.
//! - A worker claims a window with a lease on its schedule (`lease_id`, `running_until`,
//!   [`LEASE`]), taken, renewed with each part uploaded and given back in short transactions:
//!   a change of the schedule (the apps stage) never waits behind a running export. Only the
//!   lease's holder renews it, gives it back or marks its window covered; a worker that finds
//!   its lease gone abandons its upload and records nothing. A worker that dies mid-way records
//!   nothing; once its lease expires the window is written again, under the same key. The
//!   window is marked covered only if it still starts where the schedule does, so a window is
//!   never counted twice.
//! - A worker without object storage (`STORAGE_ENDPOINT`) never starts a run.

use std::future::Future;
use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use chrono::{DateTime, Utc};
use readers::audit::{Encoder, Filter, Pages};
use service::storage::StorageConfig;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use topics::settings::ExportFormat;
use uuid::Uuid;

use crate::Error;
use crate::job::Job;
use crate::lease::{AUDIT_EXPORTS, Lease};
use crate::periodic;

/// The largest file (SPEC runbook facts).
const MAX_FILE_BYTES: usize = 256 * 1024 * 1024;
/// The size of each uploaded part (S3 wants 5 MiB or more, but for the last).
const PART_BYTES: usize = 8 * 1024 * 1024;
/// How long a claimed window is the claimer's: far longer than a 256 MiB file takes.
const LEASE: Duration = Duration::from_secs(15 * 60);

/// The job: writes due windows, looking every `every`, until stopped; stops at once without
/// object storage.
pub(crate) struct AuditExports {
    pub(crate) pool: PgPool,
    pub(crate) storage: Option<StorageConfig>,
    pub(crate) every: Duration,
}

impl Job for AuditExports {
    fn run(self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        run(self.pool, (self.storage, self.every), stop)
    }
}

async fn run(
    pool: PgPool,
    (storage, every): (Option<StorageConfig>, Duration),
    stop: CancellationToken,
) {
    let Some(storage) = storage else {
        tracing::info!("no object storage: scheduled audit exports do not run here");
        return;
    };
    let store = Store {
        client: storage.client(),
        bucket: storage.bucket.clone(),
    };
    let turns = stop.clone();
    periodic::every(every, every, turns, || async {
        while !stop.is_cancelled() {
            match export_due(&pool, &store, (MAX_FILE_BYTES, every)).await {
                Ok(Ran::Written) => {}
                Ok(Ran::Failed | Ran::NothingDue) => break,
                Err(error) => {
                    tracing::warn!(%error, "scheduled audit exports not run; next turn");
                    break;
                }
            }
        }
    })
    .await;
}

/// What a look for a due window came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ran {
    /// A window was written; another may be due.
    Written,
    /// A window failed (recorded); it waits a turn.
    Failed,
    NothingDue,
}

/// The bucket files go to.
#[derive(Debug, Clone)]
struct Store {
    client: Client,
    bucket: String,
}

/// A window to write.
#[derive(Debug, sqlx::FromRow)]
struct Due {
    tenant_id: Uuid,
    interval_hours: i32,
    format: String,
    covered_until: DateTime<Utc>,
}

/// Writes one due window, if any, and records its run. A failed window's schedule rests for
/// `every` before it is claimed again.
async fn export_due(
    pool: &PgPool,
    store: &Store,
    (max_bytes, every): (usize, Duration),
) -> Result<Ran, Error> {
    let lease = Uuid::now_v7();
    let due: Option<Due> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE audit_export_schedules SET {} \
         WHERE tenant_id = (SELECT tenant_id FROM audit_export_schedules \
             WHERE enabled AND covered_until + make_interval(hours => interval_hours) \
                   + interval '5 minutes' <= now() AND {} \
             ORDER BY covered_until LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING tenant_id, interval_hours, format, covered_until",
        AUDIT_EXPORTS.take(1, 2),
        AUDIT_EXPORTS.free("")
    )))
    .bind(lease)
    .bind(LEASE.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    let Some(due) = due else {
        return Ok(Ran::NothingDue);
    };
    let format = ExportFormat::parse(&due.format)
        .ok_or_else(|| Error::Invalid(format!("an export format {:?}", due.format)))?;
    let from = due.covered_until;
    let to = from + chrono::Duration::hours(i64::from(due.interval_hours));
    let key = format!(
        "audit-exports/{}/{}_{}.{}",
        due.tenant_id,
        from.format("%Y%m%dT%H%M%SZ"),
        to.format("%Y%m%dT%H%M%SZ"),
        format.as_str()
    );
    let started = Utc::now();
    // `to` is exclusive; the filter's bounds are inclusive, to the microsecond.
    let filter = Filter {
        from: Some(from),
        to: Some(to - chrono::Duration::microseconds(1)),
        ..Filter::default()
    };
    let pages = Pages::new(readers::Tenant::new(due.tenant_id), filter);
    let held = Held {
        pool,
        lease: Lease::new(&AUDIT_EXPORTS, due.tenant_id, lease, LEASE),
    };
    let written = write_file(&held, store, &key, pages, (format, max_bytes)).await;
    if matches!(&written, Err(failure) if failure.lost) {
        tracing::warn!(tenant = %due.tenant_id, "an audit export's lease was taken over; dropped");
        return Ok(Ran::Failed);
    }
    let (status, rows, bytes, error) = match &written {
        Ok((rows, bytes)) => ("succeeded", *rows, *bytes, None),
        Err(failure) => (
            "failed",
            failure.rows,
            failure.bytes,
            Some(failure.reason.clone()),
        ),
    };
    let mut tx = pool.begin().await?;
    // Ours still, or the run is not ours to record.
    if !held.lease.still_ours(&mut tx).await? {
        return Ok(Ran::Failed);
    }
    sqlx::query(
        "INSERT INTO audit_export_runs (id, tenant_id, window_from, window_to, format, status, \
         rows, bytes, object_key, error, started_at, finished_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now())",
    )
    .bind(Uuid::now_v7())
    .bind(due.tenant_id)
    .bind(from)
    .bind(to)
    .bind(format.as_str())
    .bind(status)
    .bind(rows)
    .bind(bytes)
    .bind(written.is_ok().then_some(&key))
    .bind(&error)
    .bind(started)
    .execute(&mut *tx)
    .await?;
    if error.is_some() {
        tracing::warn!(tenant = %due.tenant_id, error, "a scheduled audit export failed");
    }
    // A written window gives the lease back; a failed one keeps it for a turn, so the window
    // is not tried again at once (and the other tenants' windows go first).
    sqlx::query(
        "UPDATE audit_export_schedules SET lease_id = NULL, \
         running_until = CASE WHEN $3 THEN NULL ELSE now() + make_interval(secs => $5) END, \
         covered_until = CASE WHEN $3 AND covered_until = $2 THEN $4 ELSE covered_until END \
         WHERE tenant_id = $1",
    )
    .bind(due.tenant_id)
    .bind(from)
    .bind(written.is_ok())
    .bind(to)
    .bind(every.as_secs_f64())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if written.is_ok() {
        // The rows of a written file, as `GET /audit-events/export` counts the rows it sends.
        metrics::counter!(
            "svc.audit.export.rows",
            "tenant" => due.tenant_id.to_string(),
            "format" => format.as_str(),
        )
        .increment(u64::try_from(rows).unwrap_or(0));
    }
    Ok(if written.is_ok() {
        Ran::Written
    } else {
        Ran::Failed
    })
}

/// A claimed window's lease, as its holder renews it.
struct Held<'a> {
    pool: &'a PgPool,
    lease: Lease,
}

impl Held<'_> {
    /// Renews the lease; `false` when it is no longer ours (or the database did not say).
    async fn renew(&self) -> bool {
        matches!(self.lease.renew(self.pool).await, Ok(true))
    }
}

/// Why a file was not written, and how far it got.
#[derive(Debug)]
struct Failure {
    reason: String,
    rows: i64,
    bytes: i64,
    /// The lease was taken over: nothing of this run is recorded.
    lost: bool,
}

/// Writes every page to `key`: one object when it fits a part, else a multipart upload,
/// abandoned once past `max_bytes`. Answers the rows and bytes written.
async fn write_file(
    held: &Held<'_>,
    store: &Store,
    key: &str,
    mut pages: Pages,
    (format, max_bytes): (ExportFormat, usize),
) -> Result<(i64, i64), Failure> {
    let mut encoder = Encoder::new(format);
    let mut upload = Upload::new(store, key);
    let (mut rows, mut bytes) = (0i64, 0usize);
    let failed = |reason: String, rows, bytes: usize| Failure {
        reason,
        rows,
        bytes: bytes as i64,
        lost: false,
    };
    loop {
        let page = match pages.next(held.pool).await {
            Ok(Some(page)) => page,
            Ok(None) => break,
            Err(error) => {
                upload.abandon().await;
                return Err(failed(format!("reading the events: {error}"), rows, bytes));
            }
        };
        for event in &page {
            encoder.write(event);
        }
        rows += page.len() as i64;
        bytes += encoder.len();
        if bytes > max_bytes {
            upload.abandon().await;
            let reason = format!("the file is over {} MiB", max_bytes / (1024 * 1024));
            return Err(failed(reason, rows, bytes));
        }
        match upload.add(encoder.take()).await {
            Ok(false) => {}
            // A part went up: the lease is renewed, or found lost.
            Ok(true) if held.renew().await => {}
            Ok(true) => {
                upload.abandon().await;
                let lost = "the lease was taken over".to_owned();
                return Err(Failure {
                    lost: true,
                    ..failed(lost, rows, bytes)
                });
            }
            Err(reason) => {
                upload.abandon().await;
                return Err(failed(reason, rows, bytes));
            }
        }
    }
    if let Err(reason) = upload.finish(encoder.take()).await {
        upload.abandon().await;
        return Err(failed(reason, rows, bytes));
    }
    Ok((rows, bytes as i64))
}

/// A file on its way to the bucket: held in memory up to a part, then uploaded part by part.
struct Upload<'s> {
    store: &'s Store,
    key: &'s str,
    buffer: Vec<u8>,
    /// The multipart upload's id and parts, once the file outgrew one part.
    multipart: Option<(String, Vec<CompletedPart>)>,
}

impl<'s> Upload<'s> {
    fn new(store: &'s Store, key: &'s str) -> Self {
        Self {
            store,
            key,
            buffer: Vec::new(),
            multipart: None,
        }
    }

    /// Adds `bytes`; answers whether a part went up.
    async fn add(&mut self, bytes: Vec<u8>) -> Result<bool, String> {
        self.buffer.extend_from_slice(&bytes);
        let mut uploaded = false;
        while self.buffer.len() >= PART_BYTES {
            let rest = self.buffer.split_off(PART_BYTES);
            let part = std::mem::replace(&mut self.buffer, rest);
            self.upload_part(part).await?;
            uploaded = true;
        }
        Ok(uploaded)
    }

    async fn upload_part(&mut self, part: Vec<u8>) -> Result<(), String> {
        let client = &self.store.client;
        if self.multipart.is_none() {
            let created = client
                .create_multipart_upload()
                .bucket(&self.store.bucket)
                .key(self.key)
                .send()
                .await
                .map_err(|e| format!("starting the upload: {}", describe(&e)))?;
            let id = created.upload_id().unwrap_or_default().to_owned();
            self.multipart = Some((id, Vec::new()));
        }
        let Some((id, parts)) = &mut self.multipart else {
            return Err("no upload".into());
        };
        let number = i32::try_from(parts.len() + 1).unwrap_or(i32::MAX);
        let uploaded = client
            .upload_part()
            .bucket(&self.store.bucket)
            .key(self.key)
            .upload_id(id.as_str())
            .part_number(number)
            .body(ByteStream::from(part))
            .send()
            .await
            .map_err(|e| format!("uploading part {number}: {}", describe(&e)))?;
        parts.push(
            CompletedPart::builder()
                .part_number(number)
                .set_e_tag(uploaded.e_tag().map(str::to_owned))
                .build(),
        );
        Ok(())
    }

    async fn finish(&mut self, last: Vec<u8>) -> Result<(), String> {
        self.buffer.extend_from_slice(&last);
        let rest = std::mem::take(&mut self.buffer);
        if self.multipart.is_none() {
            return self
                .store
                .client
                .put_object()
                .bucket(&self.store.bucket)
                .key(self.key)
                .body(ByteStream::from(rest))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| format!("writing the file: {}", describe(&e)));
        }
        if !rest.is_empty() {
            self.upload_part(rest).await?;
        }
        let Some((id, parts)) = self.multipart.take() else {
            return Err("no upload".into());
        };
        self.store
            .client
            .complete_multipart_upload()
            .bucket(&self.store.bucket)
            .key(self.key)
            .upload_id(id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| format!("completing the upload: {}", describe(&e)))
    }

    /// Drops what was uploaded of a file that will not be completed.
    async fn abandon(&mut self) {
        if let Some((id, _)) = self.multipart.take() {
            let aborted = self
                .store
                .client
                .abort_multipart_upload()
                .bucket(&self.store.bucket)
                .key(self.key)
                .upload_id(id)
                .send()
                .await;
            if let Err(error) = aborted {
                tracing::warn!(error = %describe(&error), "an abandoned export upload stays");
            }
        }
    }
}

/// The service's own message of an SDK error, not the SDK's generic "service error".
fn describe<E: std::error::Error>(error: &E) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    text
}
