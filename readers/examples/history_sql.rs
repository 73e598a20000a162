//! The floor under `GET /app-invocations`: the route's own SQL, run by the same reader
//! (`readers::invocations::list`, the same statements, binds and connection pool) with the same
//! parameters `loadtests/history/reads.js` draws (a tenant of the plan, one of five filter
//! combinations, a page from 1 to 20 of 50), by `CONNECTIONS` concurrent callers, without HTTP,
//! tokens, JSON or the read cache. `loadtests/history/run` runs it beside the route, with the
//! same writes going on, so their rates compare.
//!
//! pgbench could not run it: a request is one to a few dozen statements chosen from what the
//! rollups say about the months of its window, and the reader decides them as it goes.
//!
//! `cargo run --release -p readers --example history_sql -- PLAN SECONDS [CONNECTIONS] [RATE]`
//! (`DATABASE_URL` from the environment; PLAN as reads.js takes it; RATE requests a second, or
//! none for as many as the connections manage). Prints one `HISTORY_SQL` line: requests/s, p50,
//! p99 and max in milliseconds, failures.

// A command-line tool: its output is its answer.
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::Rng;
use rand::seq::IndexedRandom;
use readers::invocations::{InvocationFilter, InvocationStatus};
use readers::{Page, Tenant};
use serde::Deserialize;
use uuid::Uuid;

const USAGE: &str = "usage: history_sql PLAN SECONDS [CONNECTIONS] [RATE]";
const DAY: f64 = 86_400.0;

/// A tenant of the plan, as `loadtests/history/run` writes it.
#[derive(Debug, Deserialize)]
struct Planned {
    tenant: Uuid,
    apps: Vec<String>,
    runs: Vec<Uuid>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let plan: Vec<Planned> = serde_json::from_slice(&std::fs::read(args.next().ok_or(USAGE)?)?)?;
    let seconds: u64 = args.next().ok_or(USAGE)?.parse()?;
    let connections: usize = args.next().map_or(Ok(32), |a| a.parse())?;
    let rate: Option<f64> = args.next().map(|a| a.parse()).transpose()?;
    if plan.is_empty() {
        return Err("the plan names no tenant".into());
    }
    let pool = sqlx::postgres::PgPoolOptions::new()
        // The API's pool (DATABASE_POOL_SIZE's default).
        .max_connections(16)
        .connect(&std::env::var("DATABASE_URL")?)
        .await?;
    let plan = Arc::new(plan);
    let samples = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(0u64));
    let until = Instant::now() + Duration::from_secs(seconds);
    let interval = rate.map(|r| Duration::from_secs_f64(connections as f64 / r));
    let callers: Vec<_> = (0..connections)
        .map(|n| {
            let (pool, plan, samples, failures) = (
                pool.clone(),
                Arc::clone(&plan),
                Arc::clone(&samples),
                Arc::clone(&failures),
            );
            tokio::spawn(async move {
                let mut tick = interval.map(|every| {
                    // Callers spread over the interval, as an arrival rate would.
                    let start =
                        tokio::time::Instant::now() + every.mul_f64(n as f64 / connections as f64);
                    tokio::time::interval_at(start, every)
                });
                while Instant::now() < until {
                    if let Some(tick) = tick.as_mut() {
                        tick.tick().await;
                    }
                    let (tenant, filter, page) = draw(&plan);
                    let started = Instant::now();
                    match readers::invocations::list(&pool, tenant, &filter, page).await {
                        Ok(_) => lock(&samples).push(started.elapsed()),
                        Err(_) => *lock(&failures) += 1,
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    for caller in callers {
        caller.await?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut samples = lock(&samples).clone();
    samples.sort_unstable();
    let at = |q: f64| {
        samples
            .get(((samples.len().saturating_sub(1)) as f64 * q) as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "HISTORY_SQL {:.0} {:.2} {:.2} {:.1} {}",
        samples.len() as f64 / elapsed,
        at(0.5),
        at(0.99),
        at(1.0),
        lock(&failures)
    );
    Ok(())
}

/// One request as reads.js draws it.
fn draw(plan: &[Planned]) -> (Tenant, InvocationFilter, Page) {
    let mut rng = rand::rng();
    let planned = plan.choose(&mut rng).expect("a tenant");
    let mut filter = InvocationFilter::default();
    match rng.random_range(0..5) {
        0 => {}
        1 => filter.app_name = planned.apps.choose(&mut rng).cloned(),
        2 => filter.statuses = vec![InvocationStatus::Error, InvocationStatus::Timeout],
        3 => filter.workflow_run_id = planned.runs.choose(&mut rng).copied(),
        _ => {
            let (from, to) = window(&mut rng);
            filter.from = Some(from);
            filter.to = Some(to);
        }
    }
    let page = Page {
        limit: 50,
        offset: 50 * rng.random_range(0..20),
    };
    (Tenant::new(planned.tenant), filter, page)
}

/// A window of one hour to two weeks somewhere in the three years.
fn window(rng: &mut impl Rng) -> (DateTime<Utc>, DateTime<Utc>) {
    let history = 3.0 * 365.0 * DAY;
    let length = 3600.0 + rng.random::<f64>() * 14.0 * DAY;
    let end = Utc::now()
        - chrono::Duration::milliseconds(
            (rng.random::<f64>() * (history - length) * 1000.0) as i64,
        );
    let start = end - chrono::Duration::milliseconds((length * 1000.0) as i64);
    (start, end)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
