//! Groups that move (G15, shortened; `loadtests/groups/run` is the five-minute run with the
//! services themselves): three worker processes share a topic's eight partitions while commands
//! arrive at 100 a second, and every few seconds one of them leaves (SIGTERM: it stops as the
//! services do, committing what it stored and leaving the group) or a new one joins. Every
//! command is applied exactly once, none is lost, and the longest wait between a command's send
//! and its first delivery (which bounds how long any partition went unconsumed after a change)
//! is printed.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime};

use uuid::Uuid;

use crate::support::{
    Counting, Probe, WorkerProcess, command, database, fresh_topic_with, produce_keyed, producer,
    stage_handler,
};

const PARTITIONS: i32 = 8;
const RATE: u64 = 100;
const PRODUCING: Duration = Duration::from_secs(40);
/// A member leaves or joins this often.
const CHANGE_EVERY: Duration = Duration::from_secs(5);
const WORKERS: usize = 3;

/// Runs as a child process of the churn test: the probe stage, counting deliveries, committing
/// offsets as the services do (every 500 ms).
#[tokio::test]
#[ignore = "started as a child process by the group churn test"]
async fn churn_worker_process() {
    let pool = database().await;
    WorkerProcess::serve(Counting(stage_handler(&pool).await, pool)).await;
}

fn join(topic: &str, group: &str) -> WorkerProcess {
    WorkerProcess::start_committing(
        "group_churn::churn_worker_process",
        topic,
        group,
        Duration::from_millis(500),
    )
}

#[tokio::test]
async fn members_joining_and_leaving_lose_nothing_and_apply_nothing_twice() {
    let pool = database().await;
    let topic = fresh_topic_with(PARTITIONS).await;
    let group = format!("churn-{}", Uuid::new_v4().simple());
    let mut members: VecDeque<WorkerProcess> = (0..WORKERS).map(|_| join(&topic, &group)).collect();

    let sending = {
        let (producer, topic) = (producer("churn-test"), topic.clone());
        tokio::spawn(async move {
            let mut sent_at = HashMap::new();
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
            let until = Instant::now() + PRODUCING;
            while Instant::now() < until {
                tick.tick().await;
                let sent = command(Probe::Add { value: 1 });
                let at = SystemTime::now();
                produce_keyed(&producer, &topic, &sent).await;
                sent_at.insert(sent.id, at);
            }
            sent_at
        })
    };

    // Leave, join, leave, ...: the group is never below two members nor above three.
    let mut changes = 0;
    let started = Instant::now();
    while started.elapsed() + CHANGE_EVERY < PRODUCING {
        tokio::time::sleep(CHANGE_EVERY).await;
        if members.len() == WORKERS {
            members.pop_front().expect("a member").terminate().await;
        } else {
            members.push_back(join(&topic, &group));
        }
        changes += 1;
    }
    let sent_at = sending.await.expect("sender");
    let ids: Vec<Uuid> = sent_at.keys().copied().collect();

    let deadline = Instant::now() + Duration::from_secs(120);
    let applied = loop {
        let applied: i64 = sqlx::query_scalar(
            "SELECT count(DISTINCT command_id) FROM test_pipeline_effects WHERE command_id = ANY($1)",
        )
        .bind(&ids)
        .fetch_one(&pool)
        .await
        .expect("count");
        if applied as usize == ids.len() || Instant::now() > deadline {
            break applied;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    for member in members {
        member.terminate().await;
    }
    assert_eq!(
        applied as usize,
        ids.len(),
        "every command applied: none lost"
    );
    let twice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT command_id FROM test_pipeline_effects
          WHERE command_id = ANY($1) GROUP BY command_id HAVING count(*) > 1) t",
    )
    .bind(&ids)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(twice, 0, "no command applied twice");

    let first_deliveries: Vec<(Uuid, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(
        "SELECT command_id, min(at) FROM test_pipeline_deliveries
          WHERE command_id = ANY($1) GROUP BY command_id",
    )
    .bind(&ids)
    .fetch_all(&pool)
    .await
    .expect("deliveries");
    let deliveries: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM test_pipeline_deliveries WHERE command_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_one(&pool)
    .await
    .expect("count");
    let mut waits: Vec<Duration> = first_deliveries
        .iter()
        .filter_map(|(id, at)| {
            let sent: chrono::DateTime<chrono::Utc> = sent_at[id].into();
            (*at - sent).to_std().ok()
        })
        .collect();
    waits.sort();
    let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    eprintln!(
        "group churn: {} commands at {RATE}/s over {} partitions, {changes} membership changes; \
         {deliveries} deliveries; from send to first delivery p50 {:.0} ms, \
         p99 {:.0} ms, longest {:.0} ms",
        ids.len(),
        PARTITIONS,
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
