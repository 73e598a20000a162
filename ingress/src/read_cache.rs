//! In-process cache of read answers, per tenant, dropped when the tenant's records change.
//!
//! Reads of invocation history repeat far more often than the history changes, and each miss
//! costs Postgres a count and a page query. The cache keeps the serialised answer keyed by
//! tenant, the tenant's *generation*, the caller's visibility and the normalised request. A
//! committed change of a tenant's records (told by its writer over Redis, see
//! `read_cache_listener`) bumps that tenant's generation, so later lookups use a new key and
//! the old answers age out; no entry is ever updated in place. A writer that died between its
//! commit and its message leaves answers stale for at most [`TIME_TO_LIVE`].
//!
//! A query that raced a change stores its answer under the generation it started with, which no
//! lookup uses any more: a stale answer can never be served after the message arrived.
//! While the listener is not connected, changes could go unseen, so every lookup bypasses the
//! cache until it is back (and the reconnect starts a new epoch for every tenant).

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use foldhash::quality::RandomState;
use readers::redaction::Visibility;
use uuid::Uuid;

/// Upper bound on the bytes of cached answers per process.
pub(crate) const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Even a change nobody told cannot keep an answer alive longer than this.
pub(crate) const TIME_TO_LIVE: Duration = Duration::from_secs(60);

/// The version of a tenant's records a cached answer was read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Generation {
    /// Bumped for everyone when the listener (re)connects or a `TRUNCATE` is seen.
    epoch: u64,
    /// Bumped for one tenant on each message naming it.
    tenant: u64,
}

/// What a cached answer answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    tenant: Uuid,
    generation: Generation,
    visibility: Visibility,
    /// The route and what of the request decides the answer, e.g. `invocations:list?limit=10`
    /// (the query as sent, once it parsed) or `invocations:get:{id}`.
    request: String,
}

#[derive(Debug)]
pub(crate) struct ReadCache {
    answers: moka::sync::Cache<Key, Bytes, RandomState>,
    tenants: RwLock<HashMap<Uuid, u64>>,
    epoch: AtomicU64,
    listening: AtomicBool,
    /// Configured without memory (`API_READ_CACHE_MB=0`): every read goes to the database.
    off: bool,
}

impl Default for ReadCache {
    fn default() -> Self {
        Self::new(MAX_BYTES, TIME_TO_LIVE)
    }
}

impl ReadCache {
    pub(crate) fn new(max_bytes: u64, time_to_live: Duration) -> Self {
        Self {
            answers: moka::sync::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|key: &Key, answer: &Bytes| {
                    u32::try_from(key.request.len() + answer.len() + 64).unwrap_or(u32::MAX)
                })
                .time_to_live(time_to_live)
                .build_with_hasher(RandomState::default()),
            tenants: RwLock::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            listening: AtomicBool::new(false),
            off: max_bytes == 0,
        }
    }

    /// The key of `request` for `tenant` as of now, or `None` when the cache cannot be trusted
    /// (the change listener is not connected) and the read must go to the database.
    pub(crate) fn key(&self, tenant: Uuid, visibility: Visibility, request: String) -> Option<Key> {
        if self.off {
            return None;
        }
        if !self.listening.load(Ordering::Acquire) {
            metrics::counter!("ingress.read_cache.lookups", "outcome" => "bypass").increment(1);
            return None;
        }
        let generation = Generation {
            epoch: self.epoch.load(Ordering::Acquire),
            tenant: self.tenant_generation(tenant),
        };
        Some(Key {
            tenant,
            generation,
            visibility,
            request,
        })
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Bytes> {
        let found = self.answers.get(key);
        let outcome = if found.is_some() { "hit" } else { "miss" };
        metrics::counter!("ingress.read_cache.lookups", "outcome" => outcome).increment(1);
        found
    }

    pub(crate) fn insert(&self, key: Key, answer: Bytes) {
        self.answers.insert(key, answer);
    }

    /// A committed change named `tenant`.
    pub(crate) fn tenant_changed(&self, tenant: Uuid) {
        let mut tenants = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        *tenants.entry(tenant).or_insert(0) += 1;
    }

    /// Every tenant may have changed (a `TRUNCATE`, or notifications may have been missed).
    pub(crate) fn everything_changed(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        // Nothing can look the old entries up any more; free their memory now.
        self.answers.invalidate_all();
        self.tenants
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The listener is connected (`true`) or lost (`false`). Connecting starts a new epoch: what
    /// changed while nobody listened is unknown.
    pub(crate) fn set_listening(&self, listening: bool) {
        if listening {
            self.everything_changed();
        }
        self.listening.store(listening, Ordering::Release);
        if !listening {
            self.everything_changed();
        }
    }

    fn tenant_generation(&self, tenant: Uuid) -> u64 {
        let tenants = self.tenants.read().unwrap_or_else(|e| e.into_inner());
        tenants.get(&tenant).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listening_cache() -> ReadCache {
        let cache = ReadCache::default();
        cache.set_listening(true);
        cache
    }

    fn key(cache: &ReadCache, tenant: Uuid, request: &str) -> Key {
        cache
            .key(tenant, Visibility::Full, request.to_owned())
            .expect("listening")
    }

    #[test]
    fn an_answer_is_served_until_its_tenant_changes() {
        let cache = listening_cache();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        cache.insert(key(&cache, a, "list"), Bytes::from_static(b"a1"));
        cache.insert(key(&cache, b, "list"), Bytes::from_static(b"b1"));
        assert_eq!(
            cache.get(&key(&cache, a, "list")).as_deref(),
            Some(&b"a1"[..])
        );

        cache.tenant_changed(a);
        assert_eq!(cache.get(&key(&cache, a, "list")), None);
        assert_eq!(
            cache.get(&key(&cache, b, "list")).as_deref(),
            Some(&b"b1"[..])
        );
    }

    #[test]
    fn an_answer_read_before_a_change_is_never_served_after_it() {
        let cache = listening_cache();
        let tenant = Uuid::new_v4();
        let before = key(&cache, tenant, "list");
        cache.tenant_changed(tenant); // the change commits while the query runs
        cache.insert(before, Bytes::from_static(b"stale"));
        assert_eq!(cache.get(&key(&cache, tenant, "list")), None);
    }

    #[test]
    fn visibility_and_request_are_part_of_the_key() {
        let cache = listening_cache();
        let tenant = Uuid::new_v4();
        cache.insert(key(&cache, tenant, "list"), Bytes::from_static(b"full"));
        let redacted = cache
            .key(tenant, Visibility::Redacted, "list".into())
            .expect("listening");
        assert_eq!(cache.get(&redacted), None);
        assert_eq!(cache.get(&key(&cache, tenant, "get")), None);
    }

    #[test]
    fn without_a_listener_every_read_bypasses_the_cache() {
        let cache = ReadCache::default();
        assert!(
            cache
                .key(Uuid::new_v4(), Visibility::Full, "list".into())
                .is_none()
        );
        let cache = listening_cache();
        let tenant = Uuid::new_v4();
        cache.insert(key(&cache, tenant, "list"), Bytes::from_static(b"x"));
        cache.set_listening(false);
        assert!(cache.key(tenant, Visibility::Full, "list".into()).is_none());
        cache.set_listening(true);
        assert_eq!(cache.get(&key(&cache, tenant, "list")), None);
    }

    #[test]
    fn a_cache_without_memory_is_off() {
        let cache = ReadCache::new(0, TIME_TO_LIVE);
        cache.set_listening(true);
        assert!(
            cache
                .key(Uuid::new_v4(), Visibility::Full, "list".into())
                .is_none()
        );
    }

    #[test]
    fn everything_changed_drops_every_tenant() {
        let cache = listening_cache();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        cache.insert(key(&cache, a, "list"), Bytes::from_static(b"a"));
        cache.insert(key(&cache, b, "list"), Bytes::from_static(b"b"));
        cache.everything_changed();
        assert_eq!(cache.get(&key(&cache, a, "list")), None);
        assert_eq!(cache.get(&key(&cache, b, "list")), None);
    }
}
