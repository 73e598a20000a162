//! The compiler child (`runner compile-module`): what it compiles loads into the server's
//! pooling engine, and a module too costly to compile is stopped by the kernel's limits and
//! refused, without the caller's process paying for it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::costly;
use crate::support::wat::Fixture;
use runner::Engine;
use runner::{Compilation, CompileLimits as Limits, Compiler, artifact};
use runner::{Error, Refusal};

fn compiler(memory_mib: u64, cpu_seconds: u64) -> Compiler {
    Compiler::new(
        PathBuf::from(env!("CARGO_BIN_EXE_runner")),
        Limits {
            memory_mib,
            cpu_seconds,
        },
    )
}

fn refusal(result: Result<Compilation, Error>) -> String {
    match result {
        Err(Error::InvalidModule {
            refusal: Refusal::InvalidModule,
            message,
            ..
        }) => message,
        other => panic!(
            "expected an invalid_module refusal, got {:?}",
            other.map(|compilation| compilation.artifact.len())
        ),
    }
}

#[tokio::test]
async fn what_the_child_compiles_links_into_the_servers_engine() {
    let bytes = Fixture::invoke("(i32.const 0)").bytes();
    let compilation = compiler(512, 10).compile(&bytes).await.expect("compiles");
    let usage = compilation.usage.expect("the child reports what it used");
    assert!(usage.peak_rss_kib > 0);
    let engine = Engine::new(2).expect("engine");
    let module = artifact::load(engine.wasmtime(), &compilation.artifact).expect("loads");
    let compiled = engine.link(module).expect("links");
    assert!(compiled.has_export("invoke"));
    assert!(compiled.has_export("manifest"));
}

#[tokio::test]
async fn bytes_wasmtime_refuses_are_invalid_module_with_its_reason() {
    let not_a_module = b"\0asm\x01\0\0\0\x01\xff\xff\xff\xff\x0f".to_vec();
    let message = refusal(compiler(512, 10).compile(&not_a_module).await);
    assert!(!message.is_empty());
    assert!(!message.contains("compiling the module needs"), "{message}");
}

#[tokio::test]
async fn a_module_over_the_memory_limit_is_refused_naming_the_limit() {
    // One function of 300,000 additions: cranelift needs about 1.9 GB for it.
    let bytes = costly::module(1, 300_000);
    let message = refusal(compiler(256, 600).compile(&bytes).await);
    assert!(message.contains("256 MiB of memory"), "{message}");
}

#[tokio::test]
async fn a_module_over_the_cpu_limit_is_refused_naming_the_limit() {
    // 2,000 functions of 200 additions: about 5 CPU seconds even in a release build.
    let bytes = costly::module(2_000, 200);
    let started = Instant::now();
    let message = refusal(compiler(2048, 1).compile(&bytes).await);
    assert!(message.contains("1 s of CPU time"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn a_caller_that_stops_waiting_leaves_no_compiler_running() {
    let bytes = costly::module(2_000, 200);
    // The CPU limit doubles as this test's mark on its child's command line.
    let compiler = compiler(2048, MARK_CPU_SECONDS);
    let gave_up = tokio::time::timeout(Duration::from_millis(500), compiler.compile(&bytes)).await;
    assert!(
        gave_up.is_err(),
        "the compilation should still have been running"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !compiler_children(MARK_CPU_SECONDS).is_empty() {
        assert!(
            Instant::now() < deadline,
            "compiler children still running: {:?}",
            compiler_children(MARK_CPU_SECONDS)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const MARK_CPU_SECONDS: u64 = 599;

#[tokio::test]
async fn the_child_compiles_under_its_seccomp_filter() {
    const MARK: u64 = 598;
    let bytes = costly::module(2_000, 200);
    let compiler = compiler(2048, MARK);
    let compiling = compiler.compile(&bytes);
    tokio::pin!(compiling);
    // The child confines itself right after it starts, before it reads the module, and the
    // compilation then takes seconds: the mode must show while it runs.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::select! {
            _ = &mut compiling => panic!("the compilation ended before its child showed the filter"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let modes: Vec<String> = compiler_children(MARK)
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Seccomp:"))
                    .map(|mode| mode.trim().to_owned())
            })
            .collect();
        // 2 = SECCOMP_MODE_FILTER.
        if modes.iter().any(|mode| mode == "2") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no filtered compiler child: {modes:?}"
        );
    }
}

/// Compiler children of this test process whose CPU limit is `mark` (each test uses its own, so
/// the other tests' children running beside it are not counted).
fn compiler_children(mark: u64) -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`: comm may hold spaces, so split after its `)`.
        let after_comm = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("");
        let ppid = after_comm.split(' ').nth(1).unwrap_or("");
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_compiler = args.get(1) == Some(&&b"compile-module"[..])
            && args.get(3) == Some(&mark.to_string().as_bytes());
        // A zombie awaiting its reaping no longer runs.
        let running = !after_comm.starts_with('Z');
        if ppid == me && is_compiler && running {
            found.push(pid);
        }
    }
    found
}
