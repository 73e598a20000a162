//! What compiling costs (BENCHMARKS.md, issue 3): modules of generated shapes compiled by the
//! compiler child of the release binary under the runner's default limits, printing wall time,
//! the child's CPU time and peak resident set, or the refusal. Not a test: nothing is asserted.
//!
//!   cargo build --release -p runner && cargo run --release -p runner --example compile_cost
//!   COMPILE_SHAPES=1x300000,20000x200 cargo run --release -p runner --example compile_cost
//!
//! A shape `FxO` is F functions of O additions each (`tests/it/support/costly.rs`): cranelift's time
//! follows the total number of instructions, its memory the largest function.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[allow(unreachable_pub)]
#[path = "../tests/it/support/costly.rs"]
mod costly;

use std::path::PathBuf;

use runner::{CompileLimits as Limits, Compiler};

const DEFAULT_SHAPES: &str = "10x10,2000x200,1x30000,1x300000,20000x200";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let program = std::env::var("RUNNER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/runner")
        });
    let limits = Limits {
        memory_mib: env_or("RUNNER_COMPILE_MEMORY_MIB", 2048),
        cpu_seconds: env_or("RUNNER_COMPILE_CPU_SECONDS", 60),
    };
    let shapes = std::env::var("COMPILE_SHAPES").unwrap_or_else(|_| DEFAULT_SHAPES.into());
    println!(
        "limits: {} MiB, {} CPU s; program {}",
        limits.memory_mib,
        limits.cpu_seconds,
        program.display()
    );
    println!("| shape | module MB | outcome | wall s | CPU s | peak RSS MiB | artifact MB |");
    println!("|---|---|---|---|---|---|---|");
    let compiler = Compiler::new(program, limits);
    for shape in shapes.split(',') {
        let (functions, ops) = shape.split_once('x').unwrap();
        let bytes = costly::module(functions.parse().unwrap(), ops.parse().unwrap());
        let started = std::time::Instant::now();
        let size = mb(bytes.len());
        match compiler.compile(&bytes).await {
            Ok(compiled) => {
                let usage = compiled.usage.unwrap();
                println!(
                    "| {shape} | {size:.1} | compiled | {:.2} | {:.2} | {} | {:.1} |",
                    compiled.wall.as_secs_f64(),
                    usage.cpu.as_secs_f64(),
                    usage.peak_rss_kib / 1024,
                    mb(compiled.artifact.len()),
                );
            }
            Err(error) => println!(
                "| {shape} | {size:.1} | {error} | {:.2} | | | |",
                started.elapsed().as_secs_f64()
            ),
        }
    }
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1_000_000.0
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
