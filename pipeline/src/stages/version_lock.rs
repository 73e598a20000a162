//! The order of an app version's status changes and the installs that read its status: a
//! transition (publish, withdraw, an approval's decision, the catalogue's) holds the version's
//! lock alone until it commits, an install holds it shared with other installs, so an install
//! either commits before a withdraw reads the row or reads the withdrawn status after it.
//!
//! Postgres's advisory locks, not row locks: `FOR SHARE` on the version row had every install
//! of a popular version write a lock into that one row (a multixact when installs overlap, and
//! a WAL record each), so installs of one version across tenants queued on the row's page.
//! An advisory lock lives only in the lock manager. The pipeline's transactions are READ
//! COMMITTED, so the statements after the lock read what committed before it was granted.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::Error;

/// The lock class of versions (the first of the two-key form, whose space the one-key locks
/// elsewhere do not share).
const VERSIONS: i32 = 0x7665_7273;

/// The second key: the version id folded to 32 bits. Two versions that fold alike only wait
/// for each other.
fn key(id: Uuid) -> i32 {
    let bits = id.as_u128();
    let folded = (bits as u64) ^ ((bits >> 64) as u64);
    ((folded as u32) ^ ((folded >> 32) as u32)) as i32
}

/// Holds version `id` for a transition until the transaction ends.
pub(crate) async fn transition(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<(), Error> {
    hold(tx, "SELECT pg_advisory_xact_lock($1, $2)", id).await
}

/// Holds version `id` for an install until the transaction ends: installs go on together, a
/// transition waits for them.
pub(crate) async fn install(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<(), Error> {
    hold(tx, "SELECT pg_advisory_xact_lock_shared($1, $2)", id).await
}

/// Takes version `id`'s lock with `lock`, one of the two-key advisory lock functions.
async fn hold(
    tx: &mut Transaction<'_, Postgres>,
    lock: &'static str,
    id: Uuid,
) -> Result<(), Error> {
    sqlx::query(lock)
        .bind(VERSIONS)
        .bind(key(id))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_has_one_key_and_others_mostly_another() {
        let id = Uuid::now_v7();
        assert_eq!(key(id), key(id));
        let others = (0..1000).filter(|_| key(Uuid::now_v7()) == key(id)).count();
        assert!(others < 5, "{others} of 1,000 versions share a key");
    }
}
