//! The compiler child: `runner compile-module <memory MiB> <cpu seconds>` reads module bytes on
//! standard input and writes the compiled artifact on standard output. It limits and confines
//! itself before it reads a byte, so whatever the module makes cranelift do, the kernel stops it
//! at the address-space or CPU-time limit or refuses the call ([`super::sandbox`]), and the
//! server that spawned it carries on.

use std::io::{Read, Write};
use std::process::ExitCode;

use rustix::process::{Resource, Rlimit, setrlimit};

use super::{EXIT_INVALID_MODULE, EXIT_SETUP, USAGE_PREFIX, WARNING_PREFIX};
use schema::module::MAX_MODULE_BYTES;

/// The argument that turns the `runner` binary into the compiler child.
pub(crate) const ARG: &str = "compile-module";

/// Runs the child; `args` are the ones after [`ARG`].
pub(crate) fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(problem) => {
            eprintln!("compiler child: {problem}");
            ExitCode::from(EXIT_SETUP)
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let [memory_mib, cpu_seconds] = args else {
        return Err(format!("expected <memory MiB> <cpu seconds>, got {args:?}"));
    };
    let memory_mib: u64 = memory_mib.parse().map_err(|_| "bad memory limit")?;
    let cpu_seconds: u64 = cpu_seconds.parse().map_err(|_| "bad CPU limit")?;
    let memory_bytes = memory_mib.saturating_mul(1024 * 1024);
    limit(Resource::As, memory_bytes, memory_bytes)?;
    // Past the soft limit the kernel sends SIGXCPU (which terminates); a second later, SIGKILL.
    limit(Resource::Cpu, cpu_seconds, cpu_seconds.saturating_add(1))?;
    // A child stopped by a limit must not leave a core file of up to its address space.
    limit(Resource::Core, 0, 0)?;
    // If the server dies, so does its compilation.
    #[cfg(target_os = "linux")]
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| format!("parent death signal: {e}"))?;
    // Before the first byte of the module is read. A kernel without seccomp leaves the child
    // with its limits only; the server logs the warning.
    #[cfg(target_os = "linux")]
    let confined = super::sandbox::confine();
    #[cfg(not(target_os = "linux"))]
    let confined: Result<(), String> = Err("seccomp exists on Linux only".into());
    if let Err(why) = confined {
        eprintln!("{WARNING_PREFIX}the compiler runs without its seccomp filter: {why}");
    }

    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_MODULE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading the module: {e}"))?;
    if bytes.len() > MAX_MODULE_BYTES {
        return Err(format!("the module is over {MAX_MODULE_BYTES} bytes"));
    }
    let engine = wasmtime::Engine::new(&crate::engine::compilation_config())
        .map_err(|e| format!("engine: {e}"))?;
    match engine.precompile_module(&bytes) {
        Ok(artifact) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&artifact)
                .and_then(|()| out.flush())
                .map_err(|e| format!("writing the artifact: {e}"))?;
            report_usage();
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("{error:#}");
            Ok(ExitCode::from(EXIT_INVALID_MODULE))
        }
    }
}

/// What the compilation cost, for the server's log line: CPU time of all threads and the peak
/// resident set, as `<prefix><cpu ms> <peak KiB>` on standard error.
fn report_usage() {
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let cpu_ms = cpu.tv_sec as u64 * 1000 + cpu.tv_nsec as u64 / 1_000_000;
    let peak_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| {
                    value
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .unwrap_or(0);
    eprintln!("{USAGE_PREFIX}{cpu_ms} {peak_kib}");
}

fn limit(resource: Resource, current: u64, maximum: u64) -> Result<(), String> {
    setrlimit(
        resource,
        Rlimit {
            current: Some(current),
            maximum: Some(maximum),
        },
    )
    .map_err(|e| format!("setrlimit {resource:?}: {e}"))
}
