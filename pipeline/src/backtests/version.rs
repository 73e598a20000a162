//! The version a backtest replays, read once when it starts: its body, and each rule a rule set
//! names at its published version then (as a run starting then would run it).

use std::collections::HashMap;

use readers::Tenant;
use sqlx::PgPool;
use topics::backtests::Target;
use topics::definitions::{Rule, RuleEntry, RuleSet, StepRun, Workflow};
use uuid::Uuid;

use super::replay::{Version, VersionRule, VersionStep};
use crate::Error;
use topics::definitions::rules;

/// The target's version, or why it cannot be replayed (the backtest fails with it).
pub(crate) async fn load(
    pool: &PgPool,
    tenant: Uuid,
    target: &Target,
) -> Result<Result<Version, String>, Error> {
    let tenant = Tenant::new(tenant);
    let Some(found) =
        readers::definitions::version(pool, tenant, target.kind(), target.key(), target.version())
            .await?
    else {
        return Ok(Err(format!(
            "{} {} version {} does not exist",
            target.kind(),
            target.key(),
            target.version()
        )));
    };
    let unreadable = |error: serde_json::Error| format!("the version does not read: {error}");
    let mut named = Named::default();
    Ok(match target {
        Target::Rule { key, .. } => match serde_json::from_value::<Rule>(found.body) {
            Ok(rule) => Ok(Version::Rule {
                key: key.clone(),
                rule,
            }),
            Err(error) => Err(unreadable(error)),
        },
        Target::RuleSet { .. } => match serde_json::from_value::<RuleSet>(found.body) {
            Ok(set) => Ok(Version::RuleSet {
                rules: named.resolve(pool, tenant, &set.rules).await?,
            }),
            Err(error) => Err(unreadable(error)),
        },
        Target::Workflow { .. } => match serde_json::from_value::<Workflow>(found.body) {
            Ok(workflow) => {
                let mut steps = Vec::with_capacity(workflow.steps.len());
                for step in &workflow.steps {
                    steps.push(named.step(pool, tenant, step).await?);
                }
                Ok(Version::Workflow { steps })
            }
            Err(error) => Err(unreadable(error)),
        },
    })
}

/// Published rules and rule sets read so far, each once per backtest.
#[derive(Debug, Default)]
struct Named {
    rules: HashMap<String, Option<Rule>>,
    sets: HashMap<String, Option<Vec<RuleEntry>>>,
}

impl Named {
    async fn step(
        &mut self,
        pool: &PgPool,
        tenant: Tenant,
        step: &topics::definitions::Step,
    ) -> Result<VersionStep, Error> {
        let StepRun::RuleSet(set) = &step.run else {
            return Ok(VersionStep {
                output_key: step.id.clone(),
                rules: None,
            });
        };
        let output_key = set.output_key.clone().unwrap_or_else(|| step.id.clone());
        let entries = match &set.rule_set {
            Some(key) => match self.set(pool, tenant, key).await? {
                Some(entries) => entries,
                // A run fails on a rule set with no published version: the replay errs.
                None => {
                    return Ok(VersionStep {
                        output_key,
                        rules: Some(vec![VersionRule {
                            id: key.clone(),
                            rule: None,
                        }]),
                    });
                }
            },
            None => set.rules.clone(),
        };
        Ok(VersionStep {
            output_key,
            rules: Some(self.resolve(pool, tenant, &entries).await?),
        })
    }

    async fn resolve(
        &mut self,
        pool: &PgPool,
        tenant: Tenant,
        entries: &[RuleEntry],
    ) -> Result<Vec<VersionRule>, Error> {
        let mut resolved = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            resolved.push(match entry {
                RuleEntry::Inline(rule) => VersionRule {
                    id: rules::rule_id(rule, index),
                    rule: Some(rule.clone()),
                },
                RuleEntry::Named { rule: key } => VersionRule {
                    id: key.clone(),
                    rule: self.rule(pool, tenant, key).await?,
                },
            });
        }
        Ok(resolved)
    }

    async fn rule(
        &mut self,
        pool: &PgPool,
        tenant: Tenant,
        key: &str,
    ) -> Result<Option<Rule>, Error> {
        if let Some(rule) = self.rules.get(key) {
            return Ok(rule.clone());
        }
        let rule = readers::definitions::published(pool, tenant, "rule", key)
            .await?
            .and_then(|found| serde_json::from_value(found.body).ok());
        self.rules.insert(key.to_owned(), rule.clone());
        Ok(rule)
    }

    async fn set(
        &mut self,
        pool: &PgPool,
        tenant: Tenant,
        key: &str,
    ) -> Result<Option<Vec<RuleEntry>>, Error> {
        if let Some(set) = self.sets.get(key) {
            return Ok(set.clone());
        }
        // A published set that does not read runs no rules, as in a run.
        let set = readers::definitions::published(pool, tenant, "rule_set", key)
            .await?
            .map(|found| {
                serde_json::from_value::<RuleSet>(found.body)
                    .map_or_else(|_| Vec::new(), |set| set.rules)
            });
        self.sets.insert(key.to_owned(), set.clone());
        Ok(set)
    }
}
