//! The webhook burst's lighter generator: `loadtests/webhooks.js` in Rust, for the passes where
//! k6's own CPU decides the figure on two cores (k6 spends about 0.4 ms of CPU a webhook; this
//! about a quarter of it). Same deliveries, same open loop: delivery `i` is sent at `i / RATE`
//! seconds whether or not earlier ones were answered, at most `max(300, RATE)` in flight (k6's
//! `maxVUs`; a delivery due while that many wait is dropped and counted, as k6 drops
//! iterations). It writes what `loadtests/webhooks/run` reads of k6: a summary in k6's
//! `--summary-export` shape (`SUMMARY`) and a line per `received` or `stale` answer
//! (`ANSWERS`).
//!
//! ```sh
//! GENERATOR=rust loadtests/webhooks/run
//! TARGET=http://127.0.0.1:8080 PREFIX=p SETTLED=1000 RATE=2000 DURATION=20 \
//!   SUMMARY=summary.json ANSWERS=answers.txt cargo run --release -p ingress --example webhook_burst
//! ```

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What one delivery came to.
#[derive(Debug, Default)]
struct Tally {
    /// Milliseconds from send to the whole answer read, or to the failure (as k6 counts).
    durations: Vec<f64>,
    received: u64,
    duplicate: u64,
    stale: u64,
    /// Any other answer, or none (a connection that failed).
    refused: u64,
    /// Deliveries answered neither 200 nor 202, or not at all (k6's failed check).
    not_2xx: u64,
    /// `received <eventId>` and `stale <eventId>` lines.
    answers: String,
}

fn var(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// The delivery of iteration `i`: which session, which event (as `webhooks.js`).
fn delivery(prefix: &str, settled: u64, i: u64) -> (String, String) {
    let (block, slot) = (i / 10, i % 10);
    if slot < 7 {
        let n = block * 7 + slot;
        return (format!("{prefix}-{n}"), format!("{prefix}-e-{n}"));
    }
    if slot < 9 {
        // A repeat of a fresh event sent one to six blocks (10 to 60 deliveries) earlier; in
        // the first blocks, the first event (as `Math.max(0, ...)` there).
        let n = ((block as i64 - 1 - (i % 6) as i64) * 7 + (i % 7) as i64).max(0);
        return (format!("{prefix}-{n}"), format!("{prefix}-e-{n}"));
    }
    let j = block % settled.max(1);
    (
        format!("{prefix}-settled-{j}"),
        format!("{prefix}-late-{i}"),
    )
}

fn main() {
    let target = var("TARGET", "http://127.0.0.1:8080");
    let prefix = var("PREFIX", "bench");
    let settled: u64 = var("SETTLED", "1000").parse().expect("SETTLED: a number");
    let rate: u64 = var("RATE", "500").parse().expect("RATE: a number");
    let seconds: u64 = var("DURATION", "60")
        .trim_end_matches('s')
        .parse()
        .expect("DURATION: seconds");
    let summary_path = var("SUMMARY", "summary.json");
    let answers_path = var("ANSWERS", "answers.txt");

    // One thread: the generator's cost stays small beside what it measures.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (tally, dropped) = runtime.block_on(burst(&target, &prefix, settled, rate, seconds));
    let tally = Arc::try_unwrap(tally)
        .expect("every delivery finished")
        .into_inner()
        .expect("tally");
    std::fs::write(&answers_path, &tally.answers).expect("answers file");
    let summary = summary(&tally, dropped);
    std::fs::write(&summary_path, summary.to_string()).expect("summary file");
}

/// Sends `rate` deliveries a second for `seconds`; answers the tally and the deliveries dropped.
async fn burst(
    target: &str,
    prefix: &str,
    settled: u64,
    rate: u64,
    seconds: u64,
) -> (Arc<Mutex<Tally>>, u64) {
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");
    let url = format!("{target}/webhooks/apps/vendor-app");
    let tally = Arc::new(Mutex::new(Tally::default()));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(rate.max(300) as usize));
    let total = rate * seconds;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut dropped = 0;
    let mut next = 0;
    while next < total {
        let due = ((started.elapsed().as_secs_f64() * rate as f64) as u64 + 1).min(total);
        while next < due {
            let i = next;
            next += 1;
            let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                dropped += 1;
                continue;
            };
            let (session_id, event_id) = delivery(prefix, settled, i);
            let body = json!({"sessionId": session_id, "eventId": event_id, "result": "approved"});
            let (client, url, tally) = (client.clone(), url.clone(), tally.clone());
            tasks.spawn(async move {
                let sent = Instant::now();
                let answered = client.post(&url).json(&body).send().await;
                let answer = match answered {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        let body: Value = response.json().await.unwrap_or(Value::Null);
                        Some((status, body))
                    }
                    Err(_) => None,
                };
                drop(permit);
                record(&tally, &event_id, answer, sent.elapsed());
            });
        }
        // Reap what finished, so the set does not grow with the run.
        while tasks.try_join_next().is_some() {}
        let next_due = Duration::from_secs_f64(next as f64 / rate as f64);
        tokio::time::sleep_until((started + next_due).into()).await;
    }
    while tasks.join_next().await.is_some() {}
    (tally, dropped)
}

fn record(tally: &Mutex<Tally>, event_id: &str, answer: Option<(u16, Value)>, took: Duration) {
    let mut tally = tally.lock().expect("tally");
    tally.durations.push(took.as_secs_f64() * 1000.0);
    let Some((status, body)) = answer else {
        tally.refused += 1;
        tally.not_2xx += 1;
        return;
    };
    if status != 200 && status != 202 {
        tally.not_2xx += 1;
    }
    if status == 202 && body["received"] == true {
        tally.received += 1;
        let _ = writeln!(tally.answers, "received {event_id}");
    } else if status == 200 && body["duplicate"] == true {
        tally.duplicate += 1;
    } else if status == 200 && body["stale"] == true {
        tally.stale += 1;
        let _ = writeln!(tally.answers, "stale {event_id}");
    } else {
        tally.refused += 1;
    }
}

/// The tally in the shape of k6's `--summary-export`, the metrics the run script reads.
fn summary(tally: &Tally, dropped: u64) -> Value {
    let mut durations = tally.durations.clone();
    durations.sort_by(f64::total_cmp);
    // Interpolated between the two nearest ranks, as k6's trends are.
    let at = |q: f64| -> f64 {
        let Some(last) = durations.len().checked_sub(1) else {
            return 0.0;
        };
        let rank = last as f64 * q;
        let (below, above) = (rank.floor() as usize, rank.ceil() as usize);
        durations[below] + (durations[above] - durations[below]) * (rank - below as f64)
    };
    let sent = durations.len() as u64;
    json!({
        "metrics": {
            "http_req_duration": {"med": at(0.5), "p(90)": at(0.9), "p(99)": at(0.99), "max": at(1.0)},
            "http_reqs": {"count": sent},
            "checks": {"passes": sent - tally.not_2xx, "fails": tally.not_2xx},
            "webhooks_received": {"count": tally.received},
            "webhooks_duplicate": {"count": tally.duplicate},
            "webhooks_stale": {"count": tally.stale},
            "webhooks_refused": {"count": tally.refused},
            "dropped_iterations": {"count": dropped},
        }
    })
}
