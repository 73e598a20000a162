//! Compilation in a child process with an address-space and a CPU-time limit.
//!
//! Cranelift cannot be interrupted and does not bound its own memory, and a module of 32 MiB can
//! ask for seconds of CPU and hundreds of MiB. So the runner compiles in a child (its own binary,
//! [`child`]) that limits itself with `setrlimit` before reading the module: a module too costly
//! to compile is refused (`invalid_module`), the child is killed when its caller stops waiting,
//! and the server's memory never holds cranelift's working set. The child answers the artifact
//! of `Engine::precompile_module`, which the server loads with [`artifact::load`].

pub mod artifact;
pub(crate) mod child;
#[cfg(target_os = "linux")]
pub(crate) mod sandbox;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::Semaphore;

use crate::{Error, Refusal};

/// The child's exit code when wasmtime refuses the module; its standard error says why.
pub(crate) const EXIT_INVALID_MODULE: u8 = 65;
/// The child's exit code when it could not set itself up (arguments, limits, pipes).
pub(crate) const EXIT_SETUP: u8 = 70;
/// How much of the child's standard error is kept for the answer and the log.
const STDERR_BYTES: u64 = 4 * 1024;
/// How the child's last line on standard error starts when it reports what it used.
pub(crate) const USAGE_PREFIX: &str = "compile-usage ";
/// How the child's lines on standard error start when the server should log them as warnings.
pub(crate) const WARNING_PREFIX: &str = "compile-warning ";
/// What Rust's allocation-failure handler prints before it aborts.
const ALLOCATION_FAILED: &str = "memory allocation of";
/// What Rust's stack-overflow handler prints before it aborts.
const STACK_OVERFLOW: &str = "has overflowed its stack";

/// What one compilation may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space of the child (`RUNNER_COMPILE_MEMORY_MIB`).
    pub memory_mib: u64,
    /// CPU time of the child, all its threads together (`RUNNER_COMPILE_CPU_SECONDS`).
    pub cpu_seconds: u64,
}

impl Limits {
    /// How long a caller waits for the child: its CPU time on one core, plus room for a busy
    /// machine. Past it the child is killed and the caller answered `timeout`.
    pub fn wall(&self) -> Duration {
        Duration::from_secs(self.cpu_seconds.saturating_mul(2).saturating_add(5))
    }
}

/// A compiled module, and what compiling it cost.
#[derive(Debug)]
pub struct Compilation {
    /// For [`artifact::load`].
    pub artifact: Vec<u8>,
    pub wall: Duration,
    /// As the child reported it (absent if it could not read its own figures).
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// CPU time of all the child's threads.
    pub cpu: Duration,
    /// Peak resident set of the child.
    pub peak_rss_kib: u64,
}

#[derive(Debug)]
pub struct Compiler {
    program: PathBuf,
    limits: Limits,
    /// Compiling takes whole cores: one at a time, so that a burst of new modules cannot starve
    /// the calls in flight.
    turn: Arc<Semaphore>,
}

impl Compiler {
    /// A compiler that runs `program compile-module ...`: the runner's own binary.
    pub fn new(program: PathBuf, limits: Limits) -> Self {
        Self {
            program,
            limits,
            turn: Arc::new(Semaphore::new(1)),
        }
    }

    /// The running executable itself (`/proc/self/exe` names the file this process runs even
    /// after a deploy replaced it on disk, so child and server are always the same build).
    pub fn of_this_binary(limits: Limits) -> std::io::Result<Self> {
        let proc_self = PathBuf::from("/proc/self/exe");
        let program = if proc_self.exists() {
            proc_self
        } else {
            std::env::current_exe()?
        };
        Ok(Self::new(program, limits))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Compiles `bytes` (already checked against the module rules) into an artifact for
    /// [`artifact::load`]. Dropping the future kills the child.
    pub async fn compile(&self, bytes: &[u8]) -> Result<Compilation, Error> {
        let _turn = self.turn.acquire().await.map_err(internal)?;
        let started = std::time::Instant::now();
        let mut child = Command::new(&self.program)
            .arg(child::ARG)
            .arg(self.limits.memory_mib.to_string())
            .arg(self.limits.cpu_seconds.to_string())
            .env_clear()
            // The address-space limit counts what malloc reserves as well as what it uses: a
            // couple of arenas, not one per core. The operator's thread count is kept.
            .env("MALLOC_ARENA_MAX", "2")
            .envs(std::env::var_os("RAYON_NUM_THREADS").map(|n| ("RAYON_NUM_THREADS", n)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| internal(format!("starting {}: {e}", self.program.display())))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(internal("the child's pipes are missing"));
        };
        let exchange = async {
            let write = async {
                // A child that died early closes its end: its exit status says why.
                let _ = stdin.write_all(bytes).await;
                drop(stdin);
            };
            let (_, artifact, message) = tokio::join!(
                write,
                read_keeping(stdout, artifact_limit(bytes.len(), self.limits)),
                read_keeping(stderr, STDERR_BYTES)
            );
            let status = child.wait().await.map_err(internal)?;
            Ok::<_, Error>((
                status,
                artifact.map_err(internal)?,
                message.unwrap_or_default().0,
            ))
        };
        let (status, (artifact, artifact_over), stderr) =
            tokio::time::timeout(self.limits.wall(), exchange)
                .await
                .map_err(|_| Error::Timeout {
                    deadline_ms: self.limits.wall().as_millis() as u64,
                })??;
        let stderr = String::from_utf8_lossy(&stderr);
        for warning in stderr
            .lines()
            .filter_map(|l| l.strip_prefix(WARNING_PREFIX))
        {
            tracing::warn!(warning, "compiler child");
        }
        // What the caller may read: the compiler's own words, not the child's reports.
        let message = stderr
            .lines()
            .filter(|l| !l.starts_with(WARNING_PREFIX) && !l.starts_with(USAGE_PREFIX))
            .collect::<Vec<_>>()
            .join("\n");
        verdict(status, message.trim(), self.limits)?;
        if artifact_over {
            return Err(Error::refused(
                Refusal::InvalidModule,
                format!(
                    "the compiled module is over {} MiB",
                    artifact_limit(bytes.len(), self.limits) / (1024 * 1024)
                ),
            ));
        }
        let compilation = Compilation {
            artifact,
            wall: started.elapsed(),
            usage: usage(&stderr),
        };
        tracing::info!(
            module_bytes = bytes.len(),
            artifact_bytes = compilation.artifact.len(),
            wall_ms = compilation.wall.as_millis() as u64,
            cpu_ms = compilation.usage.map(|u| u.cpu.as_millis() as u64),
            peak_rss_mib = compilation.usage.map(|u| u.peak_rss_kib / 1024),
            "module compiled"
        );
        Ok(compilation)
    }
}

/// What the child's exit says about the module.
fn verdict(status: ExitStatus, message: &str, limits: Limits) -> Result<(), Error> {
    if status.success() {
        return Ok(());
    }
    if status.code() == Some(i32::from(EXIT_INVALID_MODULE)) {
        return Err(Error::refused(Refusal::InvalidModule, message));
    }
    // SIGXCPU comes at the soft CPU limit, a second before the hard limit's SIGKILL; a SIGKILL
    // alone is the kernel's out-of-memory killer or an operator, not the module: `internal`.
    if status.signal() == Some(rustix::process::Signal::XCPU.as_raw()) {
        return Err(Error::refused(
            Refusal::InvalidModule,
            format!(
                "compiling the module needs more than {} s of CPU time",
                limits.cpu_seconds
            ),
        ));
    }
    if message.contains(STACK_OVERFLOW) {
        return Err(Error::refused(
            Refusal::InvalidModule,
            "compiling the module overflows the compiler's stack",
        ));
    }
    if message.contains(ALLOCATION_FAILED) {
        return Err(Error::refused(
            Refusal::InvalidModule,
            format!(
                "compiling the module needs more than {} MiB of memory",
                limits.memory_mib
            ),
        ));
    }
    Err(internal(format!(
        "the compiler child failed ({status}): {message}"
    )))
}

/// The usage line of a successful child (see [`child`]).
fn usage(stderr: &str) -> Option<Usage> {
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(USAGE_PREFIX))?;
    let (cpu_ms, peak_kib) = line.trim().split_once(' ')?;
    Some(Usage {
        cpu: Duration::from_millis(cpu_ms.parse().ok()?),
        peak_rss_kib: peak_kib.parse().ok()?,
    })
}

/// The largest artifact taken for a module of `module_bytes`: compiled code is a few times the
/// size of the wasm it comes from at most (0.1-0.2x for the generated modules measured).
fn artifact_limit(module_bytes: usize, limits: Limits) -> u64 {
    (module_bytes as u64)
        .saturating_mul(8)
        .saturating_add(64 * 1024 * 1024)
        .min(limits.memory_mib.saturating_mul(1024 * 1024))
}

/// Reads `pipe` to its end, keeping the first `keep` bytes, so that the child never blocks on
/// (or dies writing to) a pipe nobody reads. Answers the kept bytes and whether there was more.
async fn read_keeping(
    mut pipe: impl AsyncRead + Unpin,
    keep: u64,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    (&mut pipe).take(keep).read_to_end(&mut kept).await?;
    let rest = tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await?;
    Ok((kept, rest > 0))
}

fn internal(error: impl std::fmt::Display) -> Error {
    Error::Internal(format!("compiler: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        memory_mib: 512,
        cpu_seconds: 7,
    };

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn killed_by(signal: rustix::process::Signal) -> ExitStatus {
        ExitStatus::from_raw(signal.as_raw())
    }

    fn refusal_message(result: Result<(), Error>) -> String {
        match result {
            Err(Error::InvalidModule {
                refusal: Refusal::InvalidModule,
                message,
                ..
            }) => message,
            other => panic!("expected an invalid_module refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_clean_exit_is_an_artifact() {
        assert!(verdict(exited(0), "", LIMITS).is_ok());
    }

    #[test]
    fn wasmtime_refusing_the_module_is_invalid_module_with_its_reason() {
        let message = refusal_message(verdict(exited(65), "unsupported feature", LIMITS));
        assert_eq!(message, "unsupported feature");
    }

    #[test]
    fn the_cpu_limit_is_invalid_module_naming_the_limit() {
        let message = refusal_message(verdict(
            killed_by(rustix::process::Signal::XCPU),
            "",
            LIMITS,
        ));
        assert!(message.contains("7 s of CPU time"), "{message}");
    }

    #[test]
    fn a_kill_alone_is_the_machines_not_the_modules() {
        let found = verdict(killed_by(rustix::process::Signal::KILL), "", LIMITS);
        assert!(matches!(found, Err(Error::Internal(_))), "{found:?}");
    }

    #[test]
    fn a_stack_overflow_is_invalid_module() {
        let message = refusal_message(verdict(
            killed_by(rustix::process::Signal::ABORT),
            "thread '<unnamed>' has overflowed its stack",
            LIMITS,
        ));
        assert!(message.contains("stack"), "{message}");
    }

    #[test]
    fn the_artifact_limit_follows_the_module_within_the_memory_limit() {
        assert_eq!(artifact_limit(1024 * 1024, LIMITS), (8 + 64) * 1024 * 1024);
        assert_eq!(artifact_limit(100 * 1024 * 1024, LIMITS), 512 * 1024 * 1024);
    }

    #[test]
    fn an_allocation_failure_is_invalid_module_naming_the_limit() {
        let message = refusal_message(verdict(
            killed_by(rustix::process::Signal::ABORT),
            "memory allocation of 4096 bytes failed",
            LIMITS,
        ));
        assert!(message.contains("512 MiB of memory"), "{message}");
    }

    #[test]
    fn any_other_failure_is_the_runners_own() {
        let found = verdict(killed_by(rustix::process::Signal::SEGV), "", LIMITS);
        assert!(matches!(found, Err(Error::Internal(_))), "{found:?}");
        let found = verdict(exited(i32::from(EXIT_SETUP)), "bad memory limit", LIMITS);
        assert!(matches!(found, Err(Error::Internal(m)) if m.contains("bad memory limit")));
    }

    #[test]
    fn the_childs_usage_line_is_read_from_the_end_of_its_stderr() {
        let found = usage("a warning\ncompile-usage 1234 56789\n");
        assert_eq!(
            found,
            Some(Usage {
                cpu: Duration::from_millis(1234),
                peak_rss_kib: 56789
            })
        );
        assert_eq!(usage("compile-usage twelve 3"), None);
        assert_eq!(usage(""), None);
    }

    #[test]
    fn a_caller_waits_for_the_cpu_time_on_one_core_and_some() {
        assert_eq!(LIMITS.wall(), Duration::from_secs(19));
    }
}
