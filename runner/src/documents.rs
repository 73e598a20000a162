//! A call's access to the tenant's documents: only for apps whose manifest declares
//! `needs: ['documents']`, through the per-call token the caller passes in (the runner never
//! holds the key that signs it), at most 10 reads per call (SPEC §4.13, §8).

use std::sync::Arc;

use crate::internal_api::InternalApi;

pub(crate) const MAX_READS_PER_CALL: u32 = 10;

#[derive(Debug, Clone)]
pub(crate) struct DocumentAccess {
    pub api: Arc<InternalApi>,
    pub call_id: String,
    pub token: String,
}
