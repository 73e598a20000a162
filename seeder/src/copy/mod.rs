//! Seeded rows as the text format of `COPY <table> (...) FROM STDIN`: one line per row,
//! columns separated by tabs, `\N` for NULL, and backslash, tab, newline and carriage return
//! escaped with a backslash wherever they occur in a value (error texts have line breaks, JSON
//! has its own backslash escapes).
//!
//! A batch holds the lines of up to four tables: invocations, the runs they belong to, the
//! runs' rule evaluations and, when asked for, the runs' steps. A run is generated within one
//! hour, after its invocations, so it is in the same batch as them; the batch is copied in one
//! transaction, and a reader never sees a run's invocations without the run.

mod evaluation;
mod fields;
mod invocation;
mod run;

use std::sync::Arc;

use sqlx::{Connection, PgConnection};

use super::evaluation::RuleBook;
use super::history::{Invocation, Sink};
use super::run::Run;

/// Lines ready to send, per table.
#[derive(Debug)]
pub(super) struct Batch {
    invocations: Vec<u8>,
    runs: Vec<u8>,
    evaluations: Vec<u8>,
    /// `None` when the runs' steps are not written.
    steps: Option<Vec<u8>>,
    /// The rule sets the evaluations are of.
    book: Arc<RuleBook>,
    /// Invocation rows: what the command counts.
    pub(super) rows: u64,
}

impl Batch {
    pub(super) fn new(run_steps: bool, book: Arc<RuleBook>) -> Self {
        Self {
            invocations: Vec::new(),
            runs: Vec::new(),
            evaluations: Vec::new(),
            steps: run_steps.then(Vec::new),
            book,
            rows: 0,
        }
    }

    /// This batch, leaving an empty one that writes the same tables.
    pub(super) fn take(&mut self) -> Self {
        let next = Self::new(self.steps.is_some(), self.book.clone());
        std::mem::replace(self, next)
    }
}

impl Sink for Batch {
    fn invocation(&mut self, row: &Invocation<'_>) {
        invocation::encode(row, &mut self.invocations);
        self.rows += 1;
    }

    fn run(&mut self, run: &Run<'_>) {
        run::encode(run, &mut self.runs);
        evaluation::encode(&self.book, run, &mut self.evaluations);
        if let Some(steps) = &mut self.steps {
            run::encode_steps(run, steps);
        }
    }
}

/// Sends `batch` as one COPY per table, runs before their steps, committed together.
pub(super) async fn send(connection: &mut PgConnection, batch: Batch) -> Result<(), sqlx::Error> {
    let mut transaction = connection.begin().await?;
    let tables = [
        (invocation::STATEMENT, batch.invocations),
        (run::RUNS, batch.runs),
        (evaluation::STATEMENT, batch.evaluations),
        (run::STEPS, batch.steps.unwrap_or_default()),
    ];
    for (statement, lines) in tables {
        if lines.is_empty() {
            continue;
        }
        let mut copy = transaction.copy_in_raw(statement).await?;
        copy.send(lines).await?;
        copy.finish().await?;
    }
    transaction.commit().await
}
