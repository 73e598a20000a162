//! What a stage applies a command in: the batch's transaction, the command being applied (its
//! tenant, principal and ids: [`Header`]) and the audit rows the batch recorded, written in one
//! statement before the commit ([`Context::finish`]). One value instead of a stage's functions
//! each taking the transaction, the envelope and the tenant one by one.

use sqlx::{Postgres, Transaction};
use topics::Header;
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

/// A batch being applied, at the command it is at.
#[derive(Debug)]
pub struct Context {
    /// The batch's transaction: every effect of every command of the batch, and their inbox
    /// rows and outcomes, commit together.
    pub tx: Transaction<'static, Postgres>,
    /// The command being applied, without its body.
    pub command: Header,
    /// The stage's name, for the errors it names.
    stage: &'static str,
    /// The batch's audit rows, written by [`Context::finish`].
    audit: Vec<audit::Row>,
}

impl topics::Scope for Context {
    type Error = Error;
}

impl Context {
    pub(crate) fn new(tx: Transaction<'static, Postgres>, stage: &'static str) -> Self {
        let command = Header {
            id: Uuid::nil(),
            tenant: None,
            principal: topics::Principal::system(stage),
            request_id: String::new(),
            traceparent: None,
            time: chrono::Utc::now(),
            v: 0,
            body: (),
        };
        Context {
            tx,
            command,
            stage,
            audit: Vec::new(),
        }
    }

    /// Moves on to `command`.
    pub(crate) fn at(&mut self, command: Header) {
        self.command = command;
    }

    /// The tenant the command names; one without is malformed, so poison.
    pub fn tenant(&self) -> Result<Uuid, Error> {
        self.command
            .tenant
            .ok_or_else(|| Error::Invalid(format!("a {} command without a tenant", self.stage)))
    }

    /// Records `event` as done by the command's principal: written with the batch's other
    /// audit rows, in the batch's transaction.
    pub(crate) fn audit(&mut self, event: AuditEvent) {
        self.audit.push(audit::Row::of(&self.command, event));
    }

    /// Writes the batch's audit rows (one statement, so the count trigger runs once for them
    /// all) and hands back the transaction, to commit.
    pub(crate) async fn finish(mut self) -> Result<Transaction<'static, Postgres>, Error> {
        audit::record_all(&mut self.tx, &self.audit).await?;
        Ok(self.tx)
    }
}
