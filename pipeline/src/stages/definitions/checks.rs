//! What publishing a version checks against the tenant's installs and published definitions
//! (issue 10, docs/definitions-and-runs.md). Warnings do not stop the publish, since an app
//! can be installed or enabled afterwards:
//! - `unknown_app`: a step or rule calls an app the tenant has not installed;
//! - `app_disabled`: it calls a disabled install;
//! - `unknown_action`: the installed version has no such action;
//! - `unknown_rule`, `unknown_rule_set`, `unknown_workflow`: a key named that has no published
//!   version.
//!
//! A refusal does: `async_action_in_rule`, an app rule (written out, or a published rule named
//! by a rule set) calling an action that answers through a webhook (SPEC §4.12 rule 7).

use serde_json::{Value, json};
use sqlx::{Postgres, Transaction};
pub(super) use topics::definitions::Finding;
use topics::definitions::{Body, Kind, Rule, RuleEntry, StepRun};

use crate::Error;

/// A refusal's finding as an issue of a 400 answer.
pub(super) fn issue(finding: &Finding) -> Value {
    json!({ "in": "body", "path": finding.path, "message": finding.message, "code": finding.code })
}

#[derive(Debug, Default)]
pub(super) struct Checked {
    pub(super) warnings: Vec<Finding>,
    pub(super) refusals: Vec<Finding>,
}

/// Checks every app call and every reference of `body`.
pub(super) async fn check(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    body: &Body,
) -> Result<Checked, Error> {
    let mut checked = Checked::default();
    for call in body.app_calls() {
        check_call(
            tx,
            tenant,
            call.app,
            call.action,
            call.from_rule,
            call.path,
            &mut checked,
        )
        .await?;
    }
    match body {
        Body::Workflow(workflow) => {
            for (i, step) in workflow.steps.iter().enumerate() {
                if let StepRun::RuleSet(set) = &step.run {
                    let path = format!("/steps/{i}");
                    if let Some(key) = &set.rule_set {
                        check_rule_set(tx, tenant, key, &path, &mut checked).await?;
                    }
                    check_named_rules(tx, tenant, &set.rules, &path, &mut checked).await?;
                }
            }
        }
        Body::RuleSet(set) => check_named_rules(tx, tenant, &set.rules, "", &mut checked).await?,
        Body::CollectionFlow(flow) => {
            let published = readers::definitions::published(
                &mut **tx,
                tenant,
                Kind::Workflow.as_str(),
                &flow.workflow,
            )
            .await?;
            if published.is_none() {
                checked.warnings.push(Finding {
                    code: "unknown_workflow".into(),
                    path: "/workflow".into(),
                    message: format!("No workflow {} is published.", flow.workflow),
                });
            }
        }
        Body::Rule(_) => {}
    }
    Ok(checked)
}

async fn check_call(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    app: &str,
    action: &str,
    from_rule: bool,
    path: String,
    checked: &mut Checked,
) -> Result<(), Error> {
    let install: Option<(bool, Value)> = sqlx::query_as(
        "SELECT i.enabled, v.manifest FROM app_installs i JOIN app_versions v ON v.id = i.version_id \
         WHERE i.tenant_id = $1 AND i.app_name = $2",
    )
    .bind(tenant.id())
    .bind(app)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((enabled, manifest)) = install else {
        checked.warnings.push(Finding {
            code: "unknown_app".into(),
            path,
            message: format!("The app {app} is not installed."),
        });
        return Ok(());
    };
    if !enabled {
        checked.warnings.push(Finding {
            code: "app_disabled".into(),
            path: path.clone(),
            message: format!(
                "The install of {app} is disabled; its calls fail until it is enabled."
            ),
        });
    }
    let declared = &manifest["actions"][action];
    if !declared.is_object() {
        checked.warnings.push(Finding {
            code: "unknown_action".into(),
            path,
            message: format!("The installed version of {app} has no action {action}."),
        });
    } else if from_rule && declared.get("async").is_some_and(Value::is_object) {
        checked.refusals.push(Finding {
            code: "async_action_in_rule".into(),
            path,
            message: format!(
                "{app} {action} answers through a webhook; an app rule needs a synchronous action."
            ),
        });
    }
    Ok(())
}

/// A rule set named by a step: it must be published, and its rules are checked as if written
/// out in the step (their app calls, and the rules they name).
async fn check_rule_set(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    key: &str,
    path: &str,
    checked: &mut Checked,
) -> Result<(), Error> {
    let Some(set) = published_body(tx, tenant, Kind::RuleSet, key).await? else {
        checked.warnings.push(unknown(
            "unknown_rule_set",
            "rule set",
            key,
            format!("{path}/ruleSet"),
        ));
        return Ok(());
    };
    let Body::RuleSet(set) = set else {
        return Ok(());
    };
    // Findings inside the named rule set point at the step's `ruleSet`: the body has no path
    // into another definition.
    let at = format!("{path}/ruleSet");
    for entry in &set.rules {
        match entry {
            RuleEntry::Inline(Rule::App(rule)) => {
                check_call(
                    tx,
                    tenant,
                    &rule.app,
                    &rule.action,
                    true,
                    at.clone(),
                    checked,
                )
                .await?;
            }
            RuleEntry::Inline(Rule::Field(_)) => {}
            RuleEntry::Named { rule } => {
                check_named_rule(tx, tenant, rule, at.clone(), checked).await?;
            }
        }
    }
    Ok(())
}

async fn check_named_rules(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    rules: &[RuleEntry],
    parent: &str,
    checked: &mut Checked,
) -> Result<(), Error> {
    for (j, entry) in rules.iter().enumerate() {
        if let RuleEntry::Named { rule } = entry {
            check_named_rule(tx, tenant, rule, format!("{parent}/rules/{j}"), checked).await?;
        }
    }
    Ok(())
}

async fn check_named_rule(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    key: &str,
    path: String,
    checked: &mut Checked,
) -> Result<(), Error> {
    match published_body(tx, tenant, Kind::Rule, key).await? {
        None => checked
            .warnings
            .push(unknown("unknown_rule", "rule", key, path)),
        Some(Body::Rule(Rule::App(rule))) => {
            check_call(tx, tenant, &rule.app, &rule.action, true, path, checked).await?;
        }
        Some(_) => {}
    }
    Ok(())
}

async fn published_body(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    kind: Kind,
    key: &str,
) -> Result<Option<Body>, Error> {
    let Some(version) =
        readers::definitions::published(&mut **tx, tenant, kind.as_str(), key).await?
    else {
        return Ok(None);
    };
    Body::parse(kind, version.body).map(Some).map_err(|e| {
        Error::Invalid(format!(
            "a stored {} that does not read: {e}",
            kind.as_str()
        ))
    })
}

fn unknown(code: &str, what: &str, key: &str, path: String) -> Finding {
    Finding {
        code: code.to_owned(),
        path,
        message: format!("No {what} {key} is published."),
    }
}
