//! The wasmtime engine every call shares: the pooling allocator (instance slots, memories kept
//! resident between calls, fiber stacks), epoch interruption driven by a 10 ms ticker (a call
//! yields to the executor at each tick and stops at its deadline), and the linker with the
//! kernel, the platform functions and WASI. A module is compiled once into a [`Compiled`]
//! whose `InstancePre` makes each call's fresh instance cheap.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{
    Config, InstanceAllocationStrategy, InstancePre, Linker, Module, OptLevel,
    PoolingAllocationConfig,
};

use crate::Error;
use crate::call::CallState;

/// How often the epoch advances: a call past its deadline stops within about one tick.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);
/// The largest memory any module may have (SPEC §2.8 `memoryMiB` at most 256).
pub(crate) const MAX_MEMORY_BYTES: usize = 256 * 1024 * 1024;
/// Bytes of each memory slot kept mapped between calls: resetting them is a memset, cheaper
/// than faulting fresh pages in for the next instance.
const KEEP_RESIDENT_BYTES: usize = 1024 * 1024;

#[derive(Debug)]
pub struct Engine {
    engine: wasmtime::Engine,
    linker: Linker<CallState>,
    ticker: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

/// A compiled module, ready to instantiate.
pub struct Compiled {
    pub(crate) pre: InstancePre<CallState>,
    pub(crate) exports: HashSet<String>,
    pub(crate) has_initialize: bool,
    /// The maximum of the module's exported memory, in bytes: for a stored module, the
    /// manifest's `memoryMiB` written at inspection.
    pub(crate) memory_maximum: Option<usize>,
}

impl Compiled {
    /// Whether the module exports a function named `name`.
    pub fn has_export(&self, name: &str) -> bool {
        self.exports.contains(name)
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("exports", &self.exports)
            .field("has_initialize", &self.has_initialize)
            .field("memory_maximum", &self.memory_maximum)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine with `slots` instances that can exist at once (calls in flight plus
    /// inspections).
    pub fn new(slots: u32) -> Result<Self, Error> {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_core_instances(slots)
            .total_memories(slots)
            .total_tables(slots)
            // One fiber stack per call in flight (calls are wasmtime async calls).
            .total_stacks(slots)
            .max_memories_per_module(1)
            .max_tables_per_module(4)
            .max_memory_size(MAX_MEMORY_BYTES)
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(64 * 1024);
        let mut config = compilation_config();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = wasmtime::Engine::new(&config).map_err(internal)?;
        let mut linker = Linker::new(&engine);
        crate::kernel::link(&mut linker).map_err(internal)?;
        crate::host::link(&mut linker).map_err(internal)?;
        crate::wasi::link(&mut linker).map_err(internal)?;
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = spawn_ticker(engine.clone(), stop.clone()).map_err(internal)?;
        Ok(Self {
            engine,
            linker,
            ticker: Some(ticker),
            stop,
        })
    }

    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.engine
    }

    /// Compiles `bytes` (already checked against the module rules) and links it.
    pub fn compile(&self, bytes: &[u8]) -> Result<Compiled, Error> {
        let module = Module::new(&self.engine, bytes)
            .map_err(|e| Error::refused(crate::Refusal::InvalidModule, e.to_string()))?;
        self.link(module)
    }

    /// Links an already compiled module (e.g. one read back from the disk cache).
    pub fn link(&self, module: Module) -> Result<Compiled, Error> {
        let mut linker = self.linker.clone();
        crate::wasi::stub_missing(&mut linker, &module).map_err(internal)?;
        let exports = module
            .exports()
            .filter(|e| e.ty().func().is_some())
            .map(|e| e.name().to_owned())
            .collect::<HashSet<_>>();
        let has_initialize = exports.contains("_initialize");
        let memory_maximum = module
            .exports()
            .find_map(|e| e.ty().memory().and_then(|m| m.maximum()))
            .and_then(|pages| usize::try_from(pages.saturating_mul(65536)).ok());
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| Error::refused(crate::Refusal::ForbiddenImport, e.to_string()))?;
        Ok(Compiled {
            pre,
            exports,
            has_initialize,
            memory_maximum,
        })
    }
}

/// Everything that shapes the machine code: the compiler child builds its engine from this
/// alone, so what it compiles deserializes here (the instance allocator is not part of a
/// compiled module's compatibility).
pub(crate) fn compilation_config() -> Config {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .cranelift_opt_level(OptLevel::Speed)
        .wasm_memory64(false)
        .max_wasm_stack(512 * 1024);
    config
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

fn spawn_ticker(
    engine: wasmtime::Engine,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
}

fn internal(error: impl std::fmt::Display) -> Error {
    Error::Internal(format!("engine: {error}"))
}
