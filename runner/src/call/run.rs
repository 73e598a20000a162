//! Runs one export on a fresh instance: store with the call's limits and deadline, instantiate
//! from the module's `InstancePre`, `_initialize` when exported, call, then read the answer the
//! Extism way (an error set by the module wins; then a non-zero return code; then the output).
//!
//! Calls are wasmtime async calls, run first on the caller's own task: a module runs on a fiber
//! stack from the pool, and a vendor request or document read waits as a future. Almost every
//! call ends within microseconds there, with no thread handed anything (a blocking thread per
//! call cost wake-ups and context switches worth a quarter of the runner's CPU at 700 calls/s).
//! A call still computing at an epoch tick has shown it is long: it yields, and the rest of it
//! runs on a blocking thread of its own, where the kernel shares the cores between long calls
//! and the runtime's workers instead of a long call holding a worker that serves every other
//! request, health check and vendor answer of the process.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Instant;

use tracing::Instrument;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::{CallContext, CallState, Export, Usage};
use crate::Error;
use crate::engine::{Compiled, Engine};
use crate::kernel::HostTrap;
use crate::wasi::ProcExit;

/// Largest answer a module may give (SPEC §4.10).
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Longest module error text kept.
const MAX_ERROR_CHARS: usize = 1000;

/// What a call produced and used.
#[derive(Debug)]
pub struct CallOutcome {
    /// The answer's bytes with every secret value already replaced.
    pub answer: Result<Vec<u8>, Error>,
    pub usage: Usage,
}

/// Runs `context.export` of `compiled` with `input`: on this task until the module computes
/// past an epoch tick, then on a blocking thread until it ends (its deadline included).
pub async fn run(
    engine: Arc<Engine>,
    compiled: Arc<Compiled>,
    context: CallContext,
    input: Vec<u8>,
    memory_bytes: usize,
) -> CallOutcome {
    let long = Arc::new(AtomicBool::new(false));
    let marked = long.clone();
    let mut call: Pin<Box<dyn Future<Output = CallOutcome> + Send>> = Box::pin(async move {
        run_marking(&engine, &compiled, context, &input, memory_bytes, marked).await
    });
    let here = std::future::poll_fn(|cx| match call.as_mut().poll(cx) {
        Poll::Ready(outcome) => Poll::Ready(Some(outcome)),
        // A long call's yield: hand it over rather than poll it here again.
        Poll::Pending if long.load(Ordering::Acquire) => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    })
    .await;
    if let Some(outcome) = here {
        return outcome;
    }
    let runtime = tokio::runtime::Handle::current();
    let span = tracing::Span::current();
    match tokio::task::spawn_blocking(move || runtime.block_on(call.instrument(span))).await {
        Ok(outcome) => outcome,
        Err(error) => CallOutcome {
            answer: Err(Error::Internal(format!("call thread: {error}"))),
            usage: Usage::default(),
        },
    }
}

/// The call itself, wherever it is polled; `long` is set at its first epoch tick.
async fn run_marking(
    engine: &Engine,
    compiled: &Compiled,
    context: CallContext,
    input: &[u8],
    memory_bytes: usize,
    long: Arc<AtomicBool>,
) -> CallOutcome {
    let started = Instant::now();
    let deadline = context.deadline;
    let export = context.export;
    let mut store = Store::new(
        engine.wasmtime(),
        CallState::new(context, input, memory_bytes),
    );
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline {
            return Ok(UpdateDeadline::Interrupt);
        }
        long.store(true, Ordering::Release);
        // tokio's own yield: the executor looks at its sockets and timers before it polls
        // this task again (a bare wake would poll it again first, for up to 61 turns).
        Ok(UpdateDeadline::YieldCustom(
            1,
            Box::pin(tokio::task::yield_now()),
        ))
    });
    let answer = execute(&mut store, compiled, export)
        .await
        .map_err(|failure| match failure {
            Failure::Error(error) => error,
            Failure::Wasm(error) => classify(&error, deadline, started, store.data()),
        });
    let answer = answer.map(|bytes| store.data().context.secrets.scrub_answer(&bytes));
    CallOutcome {
        answer,
        usage: store.data().usage(),
    }
}

enum Failure {
    Error(Error),
    Wasm(wasmtime::Error),
}

impl From<wasmtime::Error> for Failure {
    fn from(error: wasmtime::Error) -> Self {
        Failure::Wasm(error)
    }
}

async fn execute(
    store: &mut Store<CallState>,
    compiled: &Compiled,
    export: Export,
) -> Result<Vec<u8>, Failure> {
    let name = export.name();
    if !compiled.has_export(name) {
        return Err(Failure::Error(Error::MissingExport(name.to_owned())));
    }
    let instance = compiled.pre.instantiate_async(&mut *store).await?;
    if compiled.has_initialize
        && let Ok(initialize) = instance.get_typed_func::<(), ()>(&mut *store, "_initialize")
    {
        initialize.call_async(&mut *store, ()).await?;
    }
    let code = if let Ok(func) = instance.get_typed_func::<(), i32>(&mut *store, name) {
        exited_ok(func.call_async(&mut *store, ()).await)?
    } else if let Ok(func) = instance.get_typed_func::<(), ()>(&mut *store, name) {
        exited_ok(func.call_async(&mut *store, ()).await.map(|()| 0))?
    } else {
        return Err(Failure::Error(Error::MissingExport(format!(
            "{name} (must take nothing and return i32)"
        ))));
    };
    read_answer(store.data(), code).map_err(Failure::Error)
}

/// `proc_exit(0)` ends a call normally (as in Extism); any other exit is a failure.
fn exited_ok(result: wasmtime::Result<i32>) -> wasmtime::Result<i32> {
    match result {
        Err(error) if matches!(error.downcast_ref::<ProcExit>(), Some(ProcExit(0))) => Ok(0),
        other => other,
    }
}

fn read_answer(state: &CallState, code: i32) -> Result<Vec<u8>, Error> {
    if let Some(message) = state.arena.block(state.error).filter(|m| !m.is_empty()) {
        return Err(Error::Trapped(module_text(state, message)));
    }
    if code != 0 {
        return Err(Error::Trapped(format!("the export returned {code}")));
    }
    let Some((at, len)) = state.output else {
        return Err(Error::BadOutput("the module set no output".into()));
    };
    if len as usize > MAX_ANSWER_BYTES {
        return Err(Error::BadOutput(format!(
            "the answer is {len} bytes, more than {MAX_ANSWER_BYTES}"
        )));
    }
    state
        .arena
        .slice(at, len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| Error::BadOutput("the output range is outside kernel memory".into()))
}

/// Maps a wasm failure to the runner's: past the deadline is always `timeout`.
fn classify(
    error: &wasmtime::Error,
    deadline: Instant,
    started: Instant,
    state: &CallState,
) -> Error {
    if matches!(error.downcast_ref::<Trap>(), Some(Trap::Interrupt)) || Instant::now() >= deadline {
        let deadline_ms = deadline.saturating_duration_since(started).as_millis() as u64;
        return Error::Timeout { deadline_ms };
    }
    if let Some(exit) = error.downcast_ref::<ProcExit>() {
        return Error::Trapped(exit.to_string());
    }
    if let Some(HostTrap(message)) = error.downcast_ref::<HostTrap>() {
        return Error::Trapped(module_text(state, message.as_bytes()));
    }
    if error
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return Error::Busy("no free instance slot");
    }
    // A module that sets an error and then traps (AssemblyScript's `abort`) said why.
    if let Some(message) = state.arena.block(state.error).filter(|m| !m.is_empty()) {
        return Error::Trapped(module_text(state, message));
    }
    let text = match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => error.to_string(),
    };
    Error::Trapped(module_text(state, text.as_bytes()))
}

/// Text that came from (or through) the module: secrets scrubbed, length bounded.
fn module_text(state: &CallState, bytes: &[u8]) -> String {
    let text = state
        .context
        .secrets
        .scrub_text(&String::from_utf8_lossy(bytes));
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}
