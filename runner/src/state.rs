//! What every route can reach: configuration, the engine and module cache, admission, the
//! vendor HTTP client and the API's internal listener.

use std::sync::Arc;

use service::health::Readiness;
use service::telemetry::MetricsHandle;

use crate::Error;
use crate::compiler::Compiler;
use crate::config::Config;
use crate::engine::Engine;
use crate::internal_api::InternalApi;
use crate::limits::Admission;
use crate::module_cache::ModuleCache;
use outbound::OutboundClient;

/// Instance slots beyond the calls in flight: inspections and a margin for instances still
/// being torn down.
const EXTRA_SLOTS: u32 = 4;

#[derive(Debug, Clone)]
pub(crate) struct State(Arc<Inner>);

#[derive(Debug)]
pub(crate) struct Inner {
    pub config: Config,
    pub modules: ModuleCache,
    pub admission: Arc<Admission>,
    pub outbound: OutboundClient,
    pub api: Option<Arc<InternalApi>>,
    pub readiness: Readiness,
    pub metrics: MetricsHandle,
}

impl std::ops::Deref for State {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl State {
    pub(crate) fn new(
        config: Config,
        readiness: Readiness,
        metrics: MetricsHandle,
    ) -> Result<Self, Error> {
        crate::contract::compile_all();
        let slots = u32::try_from(config.concurrency)
            .unwrap_or(u32::MAX)
            .saturating_add(EXTRA_SLOTS);
        let engine = Arc::new(Engine::new(slots)?);
        let api = match &config.api_internal_url {
            Some(url) => Some(Arc::new(
                InternalApi::new(url, config.runner_token.clone())
                    .map_err(|e| Error::Internal(format!("internal API client: {e}")))?,
            )),
            None => None,
        };
        let compiler = Compiler::of_this_binary(config.compile_limits)
            .map_err(|e| Error::Internal(format!("compiler: {e}")))?;
        let modules = ModuleCache::new(
            engine,
            compiler,
            api.clone(),
            config.module_cache_entries,
            config.module_cache_dir.clone(),
        );
        let outbound = OutboundClient::new()
            .map_err(|e| Error::Internal(format!("vendor HTTP client: {e}")))?;
        Ok(Self(Arc::new(Inner {
            admission: Admission::new(config.concurrency, config.tenant_concurrency),
            config,
            modules,
            outbound,
            api,
            readiness,
            metrics,
        })))
    }
}
