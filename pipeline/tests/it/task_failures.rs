//! `svc.workflow.task.failures` (SPEC runbook "Workflow task failures", the alert of
//! `ops/prometheus/alerts.yml`): the stack's pipeline counts a command its stage cannot read and
//! parks, under the command's tenant, on its `METRICS_PORT`.

use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::support::{dead_lettered, produce_raw, stack};

/// A runs command written by a newer build (a body version this pipeline does not know, as in a
/// rolling deploy gone wrong) is dead-lettered and counted as its tenant's task failure.
#[tokio::test]
async fn a_command_the_runs_stage_cannot_read_counts_as_its_tenants_task_failure() {
    let tenant = Uuid::new_v4();
    let id = Uuid::now_v7();
    let newer = serde_json::json!({
        "id": id,
        "tenant": tenant,
        "principal": {"kind": "system", "id": "test"},
        "request_id": "req-task-failure",
        "time": "2026-11-27T10:00:00Z",
        "v": 9999,
        "body": {"type": "start"}
    });
    let payload = serde_json::to_vec(&newer).expect("json");
    produce_raw(topics::catalogue::RUNS.name, &payload, id).await;

    let metrics = format!("{}/metrics", stack().var("PIPELINE_METRICS_URL"));
    let tenant_label = format!("tenant=\"{tenant}\"");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = reqwest::get(&metrics)
            .await
            .expect("the pipeline's metrics")
            .text()
            .await
            .expect("text");
        let counted = text.lines().find(|line| {
            line.starts_with("svc_workflow_task_failures_total{")
                && line.contains(&tenant_label)
                && line.contains("stage=\"runs\"")
                && line.contains("reason=\"dead_lettered\"")
        });
        if let Some(line) = counted {
            assert!(line.ends_with(" 1"), "counted once: {line}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no task failure of tenant {tenant} in the pipeline's metrics"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        dead_lettered(&id.to_string()).await,
        "parked on the dead-letter topic"
    );
}
