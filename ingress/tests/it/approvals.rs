//! Definition approvals (SPEC §2.5-§2.6, §3.4, §4.5-§4.6; docs/definitions-and-runs.md
//! "Definition approvals"): publishing under the tenant's approval settings opens a request;
//! approve publishes, reject and withdraw close it; four-eyes; one open request per key; the lists
//! and their filters; the detail's diff, dependencies, usage, approvers and discussion; the user
//! directory; isolation.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::apps::{Tenant, call_with};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::{analyst, database, token_with};

fn field_rule(value: i64) -> Value {
    json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": value}})
}

async fn create(tenant: &Tenant, kind: &str, key: &str, body: Value) -> i64 {
    let path = format!("/definitions/{kind}/{key}/versions");
    let (status, created) = tenant.call(Method::POST, &path, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created["version"].as_i64().expect("version")
}

async fn publish(tenant: &Tenant, kind: &str, key: &str, version: i64) -> (u16, Value) {
    let path = format!("/definitions/{kind}/{key}/versions/{version}/publish");
    tenant.call(Method::POST, &path, None).await
}

/// Publishes under approval: the request opened (202).
async fn request(tenant: &Tenant, kind: &str, key: &str, version: i64) -> Value {
    let (status, answer) = publish(tenant, kind, key, version).await;
    assert_eq!(status, 202, "{answer}");
    answer["approval"].clone()
}

async fn decide(tenant: &Tenant, approval: &Value, verdict: &str) -> (u16, Value) {
    let path = format!(
        "/approvals/{}/{verdict}",
        approval["id"].as_str().expect("id")
    );
    tenant.call(Method::POST, &path, None).await
}

async fn detail(tenant: &Tenant, approval: &Value) -> Value {
    let path = format!("/approvals/{}", approval["id"].as_str().expect("id"));
    let (status, detail) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{detail}");
    detail
}

async fn published_version(tenant: &Tenant, kind: &str, key: &str) -> Value {
    let (status, definition) = tenant
        .call(Method::GET, &format!("/definitions/{kind}/{key}"), None)
        .await;
    assert_eq!(status, 200, "{definition}");
    definition["publishedVersion"].clone()
}

/// The actions audited for the request, in order.
async fn audited(tenant: &Tenant) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT action FROM audit_events WHERE tenant_id = $1 \
         AND (action LIKE 'definition.approval.%' OR action LIKE '%.published') \
         ORDER BY occurred_at, id",
    )
    .bind(tenant.id)
    .fetch_all(&database().await)
    .await
    .expect("audit rows")
}

/// A tenant whose definitions need approval, with four-eyes on.
async fn under_approval() -> Tenant {
    let tenant = Tenant::new();
    tenant.set_approvals(true, true).await;
    tenant
}

#[tokio::test]
async fn a_request_opens_instead_of_publishing_and_another_admin_approves_it() {
    let requester = under_approval().await;
    let approver = requester.other_admin();
    let version = create(&requester, "rule", "high-score", field_rule(50)).await;
    let path = format!("/definitions/rule/high-score/versions/{version}/publish");
    let body = json!({"comment": "tighten the threshold"});
    let (status, answer) = requester.call(Method::POST, &path, Some(body)).await;
    assert_eq!(status, 202, "{answer}");
    let approval = answer["approval"].clone();
    assert_eq!(
        (
            &approval["kind"],
            &approval["key"],
            &approval["version"],
            &approval["comment"],
            &approval["decision"],
            &approval["tenantId"]
        ),
        (
            &json!("rule"),
            &json!("high-score"),
            &json!(1),
            &json!("tighten the threshold"),
            &Value::Null,
            &json!(requester.id)
        )
    );
    assert_eq!(answer["definition"]["published"], false);
    assert_eq!(
        published_version(&requester, "rule", "high-score").await,
        Value::Null
    );

    // One open request per key: a second publish names the open one.
    let (status, again) = publish(&requester, "rule", "high-score", version).await;
    assert_eq!(
        (
            status,
            &again["error"]["code"],
            &again["error"]["details"]["approvalId"]
        ),
        (409, &json!("conflict"), &approval["id"])
    );

    // Four-eyes: the requester cannot approve their own request.
    let (status, refused) = decide(&requester, &approval, "approve").await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("four_eyes"))
    );

    let path = format!(
        "/approvals/{}/approve",
        approval["id"].as_str().expect("id")
    );
    let body = json!({"comment": "looks right"});
    let (status, approved) = approver.call(Method::POST, &path, Some(body)).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(
        (&approved["decision"], &approved["decisionComment"]),
        (&json!("approved"), &json!("looks right"))
    );
    assert!(approved["decidedAt"].is_string() && approved["decidedBy"].is_string());
    assert_eq!(
        published_version(&requester, "rule", "high-score").await,
        json!(1)
    );
    assert_eq!(
        audited(&requester).await,
        [
            "definition.approval.requested",
            "definition.approval.approved",
            "rule.published"
        ]
    );

    // Any decision on a decided request is a conflict.
    for verdict in ["approve", "reject", "withdraw"] {
        let (status, decided) = decide(&approver, &approval, verdict).await;
        assert_eq!(
            (status, &decided["error"]["code"]),
            (409, &json!("conflict")),
            "{verdict}"
        );
    }
}

#[tokio::test]
async fn rejected_and_withdrawn_versions_can_be_requested_again() {
    let requester = under_approval().await;
    let approver = requester.other_admin();
    let version = create(
        &requester,
        "rule_set",
        "screening",
        json!({"rules": [field_rule(1)]}),
    )
    .await;
    let first = request(&requester, "rule_set", "screening", version).await;
    let (status, rejected) = decide(&approver, &first, "reject").await;
    assert_eq!(
        (status, &rejected["decision"]),
        (200, &json!("rejected")),
        "{rejected}"
    );
    assert_eq!(
        published_version(&requester, "rule_set", "screening").await,
        Value::Null
    );

    let second = request(&requester, "rule_set", "screening", version).await;
    assert_ne!(first["id"], second["id"]);
    // Someone who may write definitions but not decide cannot withdraw another's request.
    let writer = Tenant {
        id: requester.id,
        token: token_with(
            requester.id,
            &[],
            &["definitions:write", "definitions:read"],
        ),
    };
    let (status, refused) = decide(&writer, &second, "withdraw").await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("forbidden")),
        "{refused}"
    );
    let (status, refused) = decide(&writer, &second, "approve").await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("forbidden"))
    );
    let (status, withdrawn) = decide(&requester, &second, "withdraw").await;
    assert_eq!(
        (status, &withdrawn["decision"]),
        (200, &json!("withdrawn")),
        "{withdrawn}"
    );
    let (status, late) = decide(&approver, &second, "approve").await;
    assert_eq!((status, &late["error"]["code"]), (409, &json!("conflict")));

    let third = request(&requester, "rule_set", "screening", version).await;
    // An approver may withdraw anyone's request.
    let (status, withdrawn) = decide(&approver, &third, "withdraw").await;
    assert_eq!((status, &withdrawn["decidedBy"].is_string()), (200, &true));
    assert_eq!(
        audited(&requester).await,
        [
            "definition.approval.requested",
            "definition.approval.rejected",
            "definition.approval.requested",
            "definition.approval.withdrawn",
            "definition.approval.requested",
            "definition.approval.withdrawn"
        ]
    );
}

#[tokio::test]
async fn settings_decide_which_kinds_need_approval() {
    let tenant = Tenant::new();
    let body = json!({"required": true, "requiredFor": ["workflow"], "fourEyes": true});
    let (status, settings) = tenant
        .call(Method::PUT, "/approval-settings", Some(body))
        .await;
    assert_eq!(status, 200, "{settings}");
    let version = create(&tenant, "rule", "direct", field_rule(3)).await;
    let (status, published) = publish(&tenant, "rule", "direct", version).await;
    assert_eq!(
        (status, &published["definition"]["published"]),
        (200, &json!(true))
    );
    let body =
        json!({"steps": [{"id": "score", "type": "rule_set", "rules": [{"rule": "direct"}]}]});
    let version = create(&tenant, "workflow", "gated", body).await;
    let approval = request(&tenant, "workflow", "gated", version).await;
    assert_eq!(approval["kind"], "workflow");
}

#[tokio::test]
async fn an_approve_racing_a_withdraw_has_one_winner() {
    let requester = under_approval().await;
    let approver = requester.other_admin();
    for round in 0..5 {
        let key = format!("race-{round}");
        let version = create(&requester, "rule", &key, field_rule(round)).await;
        let approval = request(&requester, "rule", &key, version).await;
        let (approved, withdrawn) = tokio::join!(
            decide(&approver, &approval, "approve"),
            decide(&requester, &approval, "withdraw")
        );
        let statuses = (approved.0, withdrawn.0);
        assert!(
            statuses == (200, 409) || statuses == (409, 200),
            "{statuses:?}: {approved:?} {withdrawn:?}"
        );
        let expected = if approved.0 == 200 {
            json!(1)
        } else {
            Value::Null
        };
        assert_eq!(published_version(&requester, "rule", &key).await, expected);
        let shown = detail(&requester, &approval).await;
        let winner = if approved.0 == 200 {
            "approved"
        } else {
            "withdrawn"
        };
        assert_eq!(shown["approval"]["decision"], winner);
    }
}

#[tokio::test]
async fn lists_filter_by_status_kind_mine_and_stale() {
    let requester = under_approval().await;
    let colleague = requester.other_admin();
    let mut opened = Vec::new();
    for (who, kind, key) in [
        (&requester, "rule", "old-rule"),
        (&colleague, "rule", "fresh-rule"),
        (&requester, "rule_set", "a-set"),
    ] {
        let body = match kind {
            "rule" => field_rule(7),
            _ => json!({"rules": [field_rule(9)]}),
        };
        let version = create(who, kind, key, body).await;
        opened.push(request(who, kind, key, version).await);
    }
    // The first was requested two days ago: stale.
    sqlx::query(
        "UPDATE definition_approval_requests SET requested_at = now() - interval '2 days' \
         WHERE id = $1",
    )
    .bind(Uuid::parse_str(opened[0]["id"].as_str().expect("id")).expect("uuid"))
    .execute(&database().await)
    .await
    .expect("backdated");

    let ids = |page: &Value| -> Vec<Value> {
        page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["id"].clone())
            .collect()
    };
    let list = |query: &'static str| {
        let requester = &requester;
        async move {
            let (status, page) = requester
                .call(Method::GET, &format!("/approvals{query}"), None)
                .await;
            assert_eq!(status, 200, "{query}: {page}");
            page
        }
    };
    let open = list("").await;
    assert_eq!(
        ids(&open),
        [
            opened[0]["id"].clone(),
            opened[1]["id"].clone(),
            opened[2]["id"].clone()
        ]
    );
    assert_eq!(open["total"], 3);
    assert_eq!(
        ids(&list("?kind=rule_set").await),
        [opened[2]["id"].clone()]
    );
    assert_eq!(
        ids(&list("?mine=true").await),
        [opened[0]["id"].clone(), opened[2]["id"].clone()]
    );
    assert_eq!(ids(&list("?stale=true").await), [opened[0]["id"].clone()]);
    assert_eq!(
        ids(&list("?stale=false&kind=rule").await),
        [opened[0]["id"].clone(), opened[1]["id"].clone()]
    );
    let page = list("?limit=1&offset=1").await;
    assert_eq!(
        (ids(&page), &page["total"]),
        (vec![opened[1]["id"].clone()], &json!(3))
    );

    // Decided: newest decision first.
    assert_eq!(decide(&colleague, &opened[0], "reject").await.0, 200);
    assert_eq!(decide(&requester, &opened[1], "approve").await.0, 200);
    let decided = list("?status=decided").await;
    assert_eq!(
        ids(&decided),
        [opened[1]["id"].clone(), opened[0]["id"].clone()]
    );
    assert_eq!(ids(&list("").await), [opened[2]["id"].clone()]);

    for bad in [
        "?limit=201",
        "?status=closed",
        "?kind=app",
        "?stale=yes",
        "?mine=1",
        "?colour=red",
    ] {
        let (status, refused) = requester
            .call(Method::GET, &format!("/approvals{bad}"), None)
            .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!("validation_error")),
            "{bad}"
        );
    }
    let analyst = call_with(&analyst(requester.id), Method::GET, "/approvals", None).await;
    assert_eq!(
        (analyst.0, &analyst.1["error"]["code"]),
        (403, &json!("forbidden"))
    );
}

#[tokio::test]
async fn the_detail_diffs_from_the_published_version_with_what_it_names_and_who_may_approve() {
    let requester = Tenant::new();
    let approver = requester.other_admin();
    let rule_set = json!({"rules": [field_rule(50)]});
    let set_version = create(&requester, "rule_set", "fraud", rule_set).await;
    assert_eq!(
        publish(&requester, "rule_set", "fraud", set_version)
            .await
            .0,
        200
    );
    let step = |id: &str, action: &str| json!({"id": id, "type": "call_app", "app": "kyc-vendor", "action": action});
    let screen = json!({"id": "screen", "type": "rule_set", "ruleSet": "fraud"});
    let v1 = json!({"steps": [step("kyc", "check"), screen.clone(), step("aml", "screen")]});
    let v2 = json!({"steps": [step("aml", "screen"), step("kyc", "check")]});
    let v3 = json!({"steps": [step("aml", "screen_v2"), step("kyc", "check"), screen.clone()]});
    for body in [v1, v2, v3] {
        create(&requester, "workflow", "onboarding", body).await;
    }
    assert_eq!(
        publish(&requester, "workflow", "onboarding", 1).await.0,
        200
    );
    requester.set_approvals(true, true).await;
    let approval = request(&requester, "workflow", "onboarding", 3).await;

    let shown = detail(&approver, &approval).await;
    assert_eq!(shown["approval"]["id"], approval["id"]);
    assert_eq!(shown["definition"]["version"], 3);
    assert_eq!(shown["publishedVersion"], 1);
    assert_eq!(shown["backtest"], Value::Null);
    let diff = &shown["diff"];
    assert_eq!((&diff["from"], &diff["to"]), (&json!(1), &json!(3)));
    let changes: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["op"].as_str().expect("op"),
                c["path"].as_str().expect("path"),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [("moved", "/steps/0"), ("changed", "/steps/0/action")]
    );
    assert_eq!(
        diff["delta"],
        json!({"added": 0, "removed": 0, "changed": 1, "moved": 1})
    );
    let steps: Vec<(&str, &str, Value, Value)> = diff["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["id"].as_str().expect("id"),
                s["op"].as_str().expect("op"),
                s["from"].clone(),
                s["to"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("aml", "changed", json!(3), json!(1)),
            ("kyc", "unchanged", json!(1), json!(2)),
            ("screen", "unchanged", json!(2), json!(3)),
        ]
    );
    assert_eq!(
        shown["dependencies"],
        json!([
            {"kind": "app", "key": "kyc-vendor", "actions": ["screen_v2", "check"]},
            {"kind": "rule_set", "key": "fraud", "version": 1}
        ])
    );
    assert_eq!(shown["usage"], json!([]));

    // The rule set is named by the published workflow.
    let set_v2 = create(
        &requester,
        "rule_set",
        "fraud",
        json!({"rules": [field_rule(40)]}),
    )
    .await;
    let set_approval = request(&requester, "rule_set", "fraud", set_v2).await;
    let set_detail = detail(&approver, &set_approval).await;
    assert_eq!(
        set_detail["usage"],
        json!([{"kind": "workflow", "key": "onboarding", "version": 1}])
    );
    assert_eq!(
        set_detail["diff"]["changes"][0]["summary"],
        "/rules/0/failWhen/value changed from 50 to 40"
    );

    // Once approved, the version is the published one: the diff is from the previous version.
    assert_eq!(decide(&approver, &approval, "approve").await.0, 200);
    let after = detail(&approver, &approval).await;
    assert_eq!(
        (
            &after["publishedVersion"],
            &after["diff"]["from"],
            &after["diff"]["to"]
        ),
        (&json!(3), &json!(2), &json!(3))
    );

    // Approvers from the directory: both admins have been seen; the requester may not approve.
    let approvers = eventually_approvers(&approver, &approval, 2).await;
    let requester_entry = approvers
        .iter()
        .find(|a| a["mayApprove"] == false)
        .expect("the requester is listed");
    assert!(
        requester_entry["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("four_eyes"))
    );
    assert_eq!(
        approvers.iter().filter(|a| a["mayApprove"] == true).count(),
        1
    );
}

#[tokio::test]
async fn with_four_eyes_and_one_admin_nobody_may_approve() {
    let only_admin = under_approval().await;
    let version = create(&only_admin, "rule", "lonely", field_rule(5)).await;
    let approval = request(&only_admin, "rule", "lonely", version).await;
    let approvers = eventually_approvers(&only_admin, &approval, 1).await;
    assert_eq!(approvers[0]["mayApprove"], false);
    assert_eq!(decide(&only_admin, &approval, "approve").await.0, 403);
    // Without four-eyes the same admin may.
    only_admin.set_approvals(true, false).await;
    let approvers = eventually_approvers(&only_admin, &approval, 1).await;
    assert_eq!(
        (&approvers[0]["mayApprove"], &approvers[0]["reason"]),
        (&json!(true), &Value::Null)
    );
    assert_eq!(decide(&only_admin, &approval, "approve").await.0, 200);
}

/// The detail's approvers once the directory holds `count` of them (it is written off the
/// request path, shortly after a token is first seen).
async fn eventually_approvers(tenant: &Tenant, approval: &Value, count: usize) -> Vec<Value> {
    for _ in 0..100 {
        let approvers = detail(tenant, approval).await["approvers"]
            .as_array()
            .expect("approvers")
            .clone();
        if approvers.len() >= count {
            return approvers;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the directory never held {count} approvers");
}

#[tokio::test]
async fn the_discussion_is_kept_oldest_first_even_after_the_decision() {
    let requester = under_approval().await;
    let approver = requester.other_admin();
    let version = create(&requester, "rule", "talked", field_rule(2)).await;
    let approval = request(&requester, "rule", "talked", version).await;
    let path = format!(
        "/approvals/{}/comments",
        approval["id"].as_str().expect("id")
    );
    for (who, text) in [(&approver, "why 2?"), (&requester, "fraud team asked")] {
        let (status, comment) = who
            .call(Method::POST, &path, Some(json!({"body": text})))
            .await;
        assert_eq!((status, &comment["body"]), (201, &json!(text)), "{comment}");
    }
    assert_eq!(decide(&approver, &approval, "reject").await.0, 200);
    let (status, _) = approver
        .call(
            Method::POST,
            &path,
            Some(json!({"body": "fine, next time"})),
        )
        .await;
    assert_eq!(status, 201);
    let texts: Vec<Value> = detail(&requester, &approval).await["discussion"]
        .as_array()
        .expect("discussion")
        .iter()
        .map(|c| c["body"].clone())
        .collect();
    assert_eq!(
        texts,
        [
            json!("why 2?"),
            json!("fraud team asked"),
            json!("fine, next time")
        ]
    );
    for bad in [
        json!({"body": "   "}),
        json!({"body": "x".repeat(4001)}),
        json!({}),
        json!({"body": "a", "extra": 1}),
    ] {
        let (status, refused) = requester.call(Method::POST, &path, Some(bad.clone())).await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!("validation_error")),
            "{bad}"
        );
    }
    let long = json!({"comment": "x".repeat(2001)});
    let path = format!(
        "/approvals/{}/approve",
        approval["id"].as_str().expect("id")
    );
    assert_eq!(approver.call(Method::POST, &path, Some(long)).await.0, 400);
}

#[tokio::test]
async fn another_tenants_requests_are_absent() {
    let owner = under_approval().await;
    let version = create(&owner, "rule", "private", field_rule(1)).await;
    let approval = request(&owner, "rule", "private", version).await;
    let id = approval["id"].as_str().expect("id");
    let stranger = Tenant::new();
    let random = Uuid::new_v4();
    assert_foreign_is_absent(
        &stranger.token,
        &format!("/approvals/{id}"),
        &format!("/approvals/{random}"),
    )
    .await;
    for action in ["approve", "reject", "withdraw", "comments"] {
        let body = (action == "comments").then(|| json!({"body": "hello"}));
        for target in [id.to_owned(), random.to_string()] {
            let path = format!("/approvals/{target}/{action}");
            let (status, refused) = stranger.call(Method::POST, &path, body.clone()).await;
            assert_eq!(
                (status, &refused["error"]["code"]),
                (404, &json!("not_found")),
                "{path}"
            );
        }
    }
    let (status, page) = stranger.call(Method::GET, "/approvals", None).await;
    assert_eq!((status, &page["total"]), (200, &json!(0)));
    let (status, refused) = stranger
        .call(Method::GET, "/approvals/not-a-uuid", None)
        .await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (400, &json!("validation_error"))
    );
    // Still open and undecided for its owner.
    assert_eq!(
        detail(&owner, &approval).await["approval"]["decision"],
        Value::Null
    );
}

#[tokio::test]
async fn the_directory_lists_the_tenants_people_for_admins() {
    let tenant = Tenant::new();
    let reader = analyst(tenant.id);
    // The analyst is seen by calling anything.
    assert_eq!(call_with(&reader, Method::GET, "/apps", None).await.0, 200);
    let mut users = Vec::new();
    for _ in 0..100 {
        let (status, page) = tenant.call(Method::GET, "/users", None).await;
        assert_eq!(status, 200, "{page}");
        users = page["items"].as_array().expect("items").clone();
        if users.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(users.len(), 2, "{users:?}");
    let roles: Vec<&Value> = users.iter().map(|u| &u["roles"]).collect();
    assert!(roles.contains(&&json!(["admin"])) && roles.contains(&&json!(["analyst"])));
    let analyst_entry = users
        .iter()
        .find(|u| u["roles"] == json!(["analyst"]))
        .expect("analyst");
    assert_eq!(analyst_entry["kind"], "human");
    assert!(
        analyst_entry["perms"]
            .as_array()
            .expect("perms")
            .contains(&json!("apps:read"))
    );
    assert!(
        !analyst_entry["perms"]
            .as_array()
            .expect("perms")
            .contains(&json!("approvals:decide"))
    );
    let (status, refused) = call_with(&reader, Method::GET, "/users", None).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (403, &json!("forbidden"))
    );
    let stranger = Tenant::new();
    let (_, page) = stranger.call(Method::GET, "/users", None).await;
    assert!(
        page["items"].as_array().expect("items").len() <= 1,
        "only the stranger itself"
    );
}
