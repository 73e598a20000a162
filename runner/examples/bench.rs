//! Runner benchmark (BENCHMARKS.md, issue 3): a 1 KiB JSON echo module, measured in one run
//!   1. in process: a fresh instance + call through `call::run`, the floor, on 1 and 2 threads;
//!   2. over HTTP: `POST /v1/invoke` on keep-alive connections against the real runner binary
//!      (started through `./stack run runner`), with 1 and 2 client threads;
//!   3. the same at a paced rate, with the runner process's CPU a call.
//!
//! Prints median, p99 and calls/s of each. Not a test: nothing is asserted.
//!
//!   cargo build --release -p runner && cargo run --release -p runner --example bench
//!   BENCH_SECONDS=10 BENCH_CONNECTIONS=8 cargo run --release -p runner --example bench
//!   BENCH_LOG_LEVEL=info cargo run --release -p runner --example bench   # with access lines
//!   BENCH_RATE=700 ...   # the paced pass's offered calls/s (default 700, the webhook knee)
//!   BENCH_PASSES="http paced" ...   # some of: in-process timeout http paced

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use runner::Engine;
use runner::run_call as run;
use runner::{CallContext, Export};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TOKEN: &str = "bench-runner-token";

/// Answers `{"status":"ok","output":<the whole input document>}`, copying kernel to kernel
/// eight bytes at a time, as a PDK's output path does.
const ECHO_WAT: &str = r#"(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\22status\22:\22ok\22,\22output\22:")
  (func (export "manifest") (result i32) (i32.const 1))
  (func (export "invoke") (result i32)
    (local $n i64) (local $out i64) (local $i i64) (local $at i64)
    (local.set $n (call $input_length))
    (local.set $out (call $alloc (i64.add (local.get $n) (i64.const 25))))
      ;; the 24-byte prefix
    (block $p (loop $pl
      (br_if $p (i64.ge_u (local.get $i) (i64.const 24)))
      (call $store_u8 (i64.add (local.get $out) (local.get $i))
                      (i32.load8_u (i32.wrap_i64 (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $pl)))
    (local.set $at (i64.add (local.get $out) (i64.const 24)))
    (local.set $i (i64.const 0))
    ;; the input, word by word, then the tail byte by byte
    (block $w (loop $wl
      (br_if $w (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $n)))
      (call $store_u64 (i64.add (local.get $at) (local.get $i)) (call $input_load_u64 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 8)))
      (br $wl)))
    (block $b (loop $bl
      (br_if $b (i64.ge_u (local.get $i) (local.get $n)))
      (call $store_u8 (i64.add (local.get $at) (local.get $i)) (call $input_load_u8 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $bl)))
    (call $store_u8 (i64.add (local.get $at) (local.get $n)) (i32.const 125))
    (call $output_set (local.get $out) (i64.add (local.get $n) (i64.const 25)))
    (i32.const 0)))"#;

fn one_kib_input() -> Value {
    let text = "x".repeat(1000);
    json!({"name": "Ada Lovelace", "note": text})
}

fn seconds() -> u64 {
    std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

fn main() {
    let module = wat::parse_str(ECHO_WAT).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "machine: {} cores, {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
    println!("| measure | threads | calls/s | median µs | p99 µs |");
    println!("|---|---|---|---|---|");
    for threads in [1, 2].into_iter().filter(|_| pass("in-process")) {
        let stats = in_process(&module, threads);
        println!(
            "| in-process fresh instance + call | {threads} | {:.0} | {:.1} | {:.1} |",
            stats.0, stats.1, stats.2
        );
    }
    if pass("timeout") {
        let (median, worst) = timeout_overshoot(runtime.handle().clone());
        println!(
            "| timeout: answer after a 100 ms deadline (infinite loop), 20 calls | 1 | | overshoot median {median:.1} ms | worst {worst:.1} ms |"
        );
    }
    for threads in [1, 2].into_iter().filter(|_| pass("http")) {
        let stats = over_http(&module, threads);
        println!(
            "| POST /v1/invoke, keep-alive, {} connections | {threads} client | {:.0} | {:.1} | {:.1} |",
            connections(),
            stats.0,
            stats.1,
            stats.2
        );
    }
    if !pass("paced") {
        return;
    }
    let rate = std::env::var("BENCH_RATE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(700);
    let (per_second, median, p99, cpu) = paced(&module, rate);
    println!(
        "| POST /v1/invoke at {rate}/s offered, {} connections: runner CPU {cpu:.0} µs a call | 1 client | {per_second:.0} | {median:.1} | {p99:.1} |",
        connections()
    );
}

/// Whether `BENCH_PASSES` (words: in-process, timeout, http, paced; default all) names `name`.
fn pass(name: &str) -> bool {
    std::env::var("BENCH_PASSES")
        .map_or(true, |passes| passes.split_whitespace().any(|p| p == name))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default()
}

/// (calls/s, median µs, p99 µs) of fresh instance + call on `threads` threads, each driving its
/// calls on its own single-threaded runtime (a call is a wasmtime async call, as in the runner).
fn in_process(module: &[u8], threads: usize) -> (f64, f64, f64) {
    let engine = Arc::new(Engine::new(16).unwrap());
    let compiled = Arc::new(engine.compile(module).unwrap());
    let input = serde_json::to_vec(&json!({"call": {"id": "c", "tenantId": "t"}, "action": "echo", "config": {}, "input": one_kib_input()})).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (engine, compiled, input, stop) = (
                engine.clone(),
                compiled.clone(),
                input.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let mut samples = Vec::new();
                    let warm_until = Instant::now() + Duration::from_millis(500);
                    while !stop.load(Ordering::Relaxed) {
                        let context = CallContext::refusing(
                            Export::Invoke,
                            Instant::now() + Duration::from_secs(5),
                        );
                        let started = Instant::now();
                        let outcome = run(
                            engine.clone(),
                            compiled.clone(),
                            context,
                            input.clone(),
                            16 << 20,
                        )
                        .await;
                        let took = started.elapsed();
                        assert!(outcome.answer.is_ok(), "{:?}", outcome.answer);
                        if started > warm_until {
                            samples.push(took);
                        }
                    }
                    samples
                })
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500) + Duration::from_secs(seconds()));
    stop.store(true, Ordering::Relaxed);
    let samples: Vec<Duration> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    summarize(samples, seconds() as f64)
}

/// How long after its deadline a spinning module's call answers (median, worst; ms).
fn timeout_overshoot(handle: tokio::runtime::Handle) -> (f64, f64) {
    let engine = Arc::new(Engine::new(4).unwrap());
    let spin = wat::parse_str(r#"(module (memory 1) (func (export "invoke") (result i32) (loop $l (br $l)) (i32.const 0)))"#).unwrap();
    let compiled = Arc::new(engine.compile(&spin).unwrap());
    let mut overshoots: Vec<f64> = (0..20)
        .map(|_| {
            let deadline = Instant::now() + Duration::from_millis(100);
            let context = CallContext::refusing(Export::Invoke, deadline);
            let outcome = handle.block_on(run(
                engine.clone(),
                compiled.clone(),
                context,
                b"{}".to_vec(),
                16 << 20,
            ));
            assert!(matches!(outcome.answer, Err(runner::Error::Timeout { .. })));
            Instant::now().duration_since(deadline).as_secs_f64() * 1000.0
        })
        .collect();
    overshoots.sort_by(f64::total_cmp);
    (overshoots[10], overshoots[19])
}

fn summarize(mut samples: Vec<Duration>, seconds: f64) -> (f64, f64, f64) {
    samples.sort();
    let at = |q: f64| {
        samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6
    };
    (samples.len() as f64 / seconds, at(0.5), at(0.99))
}

fn connections() -> usize {
    std::env::var("BENCH_CONNECTIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8)
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Serves the module by hash, as the API's internal listener does.
async fn serve_module(listener: tokio::net::TcpListener, modules: Arc<HashMap<String, Vec<u8>>>) {
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        let modules = modules.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<Incoming>| {
                let modules = modules.clone();
                async move {
                    let sha = request
                        .uri()
                        .path()
                        .rsplit('/')
                        .next()
                        .unwrap_or("")
                        .to_owned();
                    let (status, body) = match modules.get(&sha) {
                        Some(bytes) => (200, bytes.clone()),
                        None if request.uri().path() == "/health" => (200, b"{}".to_vec()),
                        None => (404, b"{}".to_vec()),
                    };
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .status(status)
                            .body(Full::new(Bytes::from(body)))
                            .unwrap(),
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

struct RunnerProcess(Child);

impl Drop for RunnerProcess {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        let _ = self.0.wait();
    }
}

/// A runner started through `./stack run runner`, fetching `module` from a stand-in of the
/// API's internal listener. Answers the process and its port; must be called in a runtime.
async fn start_runner(module: &[u8]) -> (RunnerProcess, u16) {
    let sha = hex::encode(Sha256::digest(module));
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_url = format!("http://{}", upstream.local_addr().unwrap());
    tokio::spawn(serve_module(
        upstream,
        Arc::new(HashMap::from([(sha, module.to_vec())])),
    ));
    let port = free_port();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let runner = RunnerProcess(
        Command::new(root.join("stack"))
            .args(["run", "runner"])
            .env("RUNNER_HOST", "127.0.0.1")
            .env("RUNNER_PORT", port.to_string())
            .env("API_INTERNAL_URL", &upstream_url)
            .env("APP_RUNNER_TOKEN", TOKEN)
            .env("APP_RUNNER_CONCURRENCY", connections().to_string())
            .env("RUNNER_MODULE_CACHE_DIR", "off")
            // `BENCH_LOG_LEVEL=info` adds the access line of every call, as the stack logs.
            .env(
                "LOG_LEVEL",
                std::env::var("BENCH_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..300 {
        if reqwest::get(format!("{base}/health")).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (runner, port)
}

/// The invoke request connection `i` sends.
fn invoke_body(module: &[u8], i: usize) -> Bytes {
    let sha = hex::encode(Sha256::digest(module));
    Bytes::from(
        serde_json::to_vec(&json!({
            "module": sha,
            "app": {"name": "bench"},
            "call": {"id": format!("bench-{i}"), "tenantId": uuid::Uuid::new_v4()},
            "action": "echo",
            "config": {},
            "input": one_kib_input(),
            "timeoutMs": 5000
        }))
        .unwrap(),
    )
}

fn client_runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap()
}

/// Calls back to back on every connection: the most the runner answers.
fn over_http(module: &[u8], client_threads: usize) -> (f64, f64, f64) {
    client_runtime(client_threads).block_on(async {
        let (_runner, port) = start_runner(module).await;
        let deadline = Instant::now() + Duration::from_millis(500) + Duration::from_secs(seconds());
        let warm_until = Instant::now() + Duration::from_millis(500);
        let tasks: Vec<_> = (0..connections())
            .map(|i| {
                let body = invoke_body(module, i);
                tokio::spawn(
                    async move { connection(port, body, deadline, warm_until, None).await },
                )
            })
            .collect();
        let mut samples = Vec::new();
        for task in tasks {
            samples.extend(task.await.unwrap());
        }
        summarize(samples, seconds() as f64)
    })
}

/// Calls at `rate` a second spread over the connections, as webhooks arrive: the runner's CPU
/// a call when it is not saturated (its wake-ups, not its most). Answers (calls/s, median µs,
/// p99 µs, runner CPU µs a call).
fn paced(module: &[u8], rate: u32) -> (f64, f64, f64, f64) {
    client_runtime(1).block_on(async {
        let (runner, port) = start_runner(module).await;
        let connections = connections();
        let interval = Duration::from_secs_f64(connections as f64 / f64::from(rate));
        let warm_until = Instant::now() + Duration::from_millis(500);
        let deadline = warm_until + Duration::from_secs(seconds());
        let tasks: Vec<_> = (0..connections)
            .map(|i| {
                let body = invoke_body(module, i);
                // Connections start spread over one interval, so the calls do not arrive in
                // bursts of `connections`.
                let offset = interval.mul_f64(i as f64 / connections as f64);
                tokio::spawn(async move {
                    tokio::time::sleep(offset).await;
                    connection(port, body, deadline, warm_until, Some(interval)).await
                })
            })
            .collect();
        tokio::time::sleep_until(warm_until.into()).await;
        let cpu_before = process_cpu(runner.0.id());
        let mut samples = Vec::new();
        for task in tasks {
            samples.extend(task.await.unwrap());
        }
        let cpu = process_cpu(runner.0.id()) - cpu_before;
        let calls = samples.len() as f64;
        let (per_second, median, p99) = summarize(samples, seconds() as f64);
        (per_second, median, p99, cpu.as_secs_f64() * 1e6 / calls)
    })
}

/// User and system CPU a process has used, from `/proc` (10 ms resolution).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// One keep-alive connection sending calls until `deadline`: back to back, or one every
/// `interval` (a late call is sent at once, the next keeps the schedule).
async fn connection(
    port: u16,
    body: Bytes,
    deadline: Instant,
    warm_until: Instant,
    interval: Option<Duration>,
) -> Vec<Duration> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut samples = Vec::new();
    let mut ticks = interval.map(|every| {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks
    });
    while Instant::now() < deadline {
        if let Some(ticks) = ticks.as_mut() {
            ticks.tick().await;
        }
        let request = hyper::Request::post("/v1/invoke")
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .unwrap();
        let started = Instant::now();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status();
        let answer = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            status,
            200,
            "the runner answered {}",
            String::from_utf8_lossy(&answer)
        );
        if started > warm_until {
            samples.push(started.elapsed());
        }
    }
    samples
}
