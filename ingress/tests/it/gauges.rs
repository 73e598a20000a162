//! The worker's observable gauges (SPEC Operations "Metrics" rule 3): counted when `/metrics` is
//! read on the pipeline's `METRICS_PORT`, an answer standing 30 s.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::cases::open_case;
use crate::support::apps::Tenant;
use crate::support::pipeline_metrics;

#[tokio::test]
async fn pending_approvals_and_open_cases_are_counted_per_tenant() {
    let tenant = Tenant::new();
    tenant.set_approvals(true, true).await;
    let rule = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 5}});
    for key in ["g1", "g2"] {
        let path = format!("/definitions/rule/{key}/versions");
        assert_eq!(
            tenant.call(Method::POST, &path, Some(rule.clone())).await.0,
            201
        );
        let path = format!("/definitions/rule/{key}/versions/1/publish");
        assert_eq!(tenant.call(Method::POST, &path, None).await.0, 202);
    }
    open_case(
        &tenant,
        json!({"type": "kyc_review", "title": "t", "priority": "high"}),
    )
    .await;
    let expected = [
        format!(
            "svc_approval_pending{{tenant=\"{}\",kind=\"rule\"}} 2",
            tenant.id
        ),
        format!(
            "svc_case_open{{tenant=\"{}\",priority=\"high\",sla_state=\"within\"}} 1",
            tenant.id
        ),
    ];
    // An answer stands 30 s: the counts show within that and a little.
    let mut text = String::new();
    for _ in 0..45 {
        text = pipeline_metrics().await;
        if expected.iter().all(|line| text.contains(line.as_str())) {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{expected:?} not in the pipeline's metrics:\n{text}");
}
