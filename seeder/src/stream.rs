//! One COPY stream: a stretch of the timeline generated on a blocking thread, batch after
//! batch, while the stream's own connection copies the batch before. Generation and Postgres
//! share two cores, so the generator runs at most one batch ahead.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{Connection, PgConnection};
use tokio::sync::mpsc;

use super::Plan;
use super::copy::{self, Batch};
use crate::Error;

/// Rows per COPY, at least: the statement triggers hand each COPY's rows to the rollups as
/// arrays, which stay small at this size, and per-statement costs vanish.
const BATCH_ROWS: u64 = 25_000;

/// For this session only: the triggers' transition table holds a whole batch (about 15 MB),
/// which the default `work_mem` would spill to disk.
const SESSION: &str = "SET work_mem = '64MB'";

/// Writes the rows of `hours` (invocations and their runs), adding each committed batch's
/// invocations to `written`. Returns the invocations written per tenant.
pub(super) async fn write(
    database_url: &str,
    plan: Arc<Plan>,
    hours: Range<usize>,
    written: Arc<AtomicU64>,
) -> Result<Vec<u64>, Error> {
    let mut connection = PgConnection::connect(database_url).await?;
    sqlx::raw_sql(SESSION).execute(&mut connection).await?;
    let (batches, mut ready) = mpsc::channel(1);
    let generator = tokio::task::spawn_blocking(move || generate(&plan, hours, &batches));
    while let Some(batch) = ready.recv().await {
        let rows = batch.rows;
        copy::send(&mut connection, batch).await?;
        written.fetch_add(rows, Ordering::Relaxed);
    }
    match generator.await {
        Ok(rows_per_tenant) => Ok(rows_per_tenant),
        // A panic of the generator is a bug: it goes on as the same panic.
        Err(error) => std::panic::resume_unwind(
            error
                .try_into_panic()
                .unwrap_or_else(|error| Box::new(error.to_string())),
        ),
    }
}

/// Generates `hours` into batches until done or the copying side stopped listening.
fn generate(plan: &Plan, hours: Range<usize>, batches: &mpsc::Sender<Batch>) -> Vec<u64> {
    let mut history = plan.history();
    let mut batch = Batch::new(plan.run_steps, plan.rule_book.clone());
    for hour in hours {
        history.hour(hour, &mut batch);
        if batch.rows >= BATCH_ROWS && batches.blocking_send(batch.take()).is_err() {
            break;
        }
    }
    if batch.rows > 0 {
        let _ = batches.blocking_send(batch);
    }
    history.rows_per_tenant().to_vec()
}
