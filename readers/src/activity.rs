//! The activity feed (SPEC §2.2, §4.1): the tenant's newest audit events among the actions the
//! caller may see, each as a sentence naming the actor from the user directory, a console link
//! and a tone. Nothing of a payload beyond the outcome, keys and versions reaches an item.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Error, Tenant};

/// What everyone with the feed sees.
pub const CASE_ACTIONS: [&str; 2] = ["case.decided", "case.sla.breached"];

/// What holders of `definitions:read` see besides.
pub const DEFINITION_ACTIONS: [&str; 8] = [
    "workflow.published",
    "rule.published",
    "rule_set.published",
    "collection_flow.published",
    "definition.approval.requested",
    "definition.approval.approved",
    "definition.approval.rejected",
    "definition.approval.withdrawn",
];

/// One item (SPEC §2.2): exactly these fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub action: String,
    pub actor: Actor,
    pub text: String,
    pub href: Option<String>,
    pub tone: Tone,
}

/// Who acted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub name: String,
}

/// `alert` where something went wrong: an SLA breached, a change refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    Neutral,
    Alert,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    occurred_at: DateTime<Utc>,
    action: String,
    actor_type: String,
    actor_id: String,
    actor_name: String,
    payload: Value,
}

/// The `limit` newest events among `actions`, links built on `console` when there is one.
pub async fn newest(
    pool: &PgPool,
    tenant: Tenant,
    actions: &[&str],
    limit: i64,
    console: Option<&str>,
) -> Result<Vec<Item>, Error> {
    // Each action's newest `limit` from its own index range, then the newest of those: a
    // tenant's millions of other events are never walked to find five.
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT a.id, a.occurred_at, a.action, a.actor_type, a.actor_id, \
         coalesce(u.name, a.actor_name) AS actor_name, a.payload \
         FROM unnest($2::text[]) AS wanted(action) \
         CROSS JOIN LATERAL (SELECT * FROM audit_events e \
           WHERE e.tenant_id = $1 AND e.action = wanted.action \
           ORDER BY e.occurred_at DESC, e.id DESC LIMIT $3) AS a \
         LEFT JOIN tenant_users u \
           ON u.tenant_id = a.tenant_id AND u.subject = a.actor_id AND a.actor_type <> 'system' \
         ORDER BY a.occurred_at DESC, a.id DESC LIMIT $3",
    )
    .bind(tenant.id())
    .bind(actions)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|row| item(row, console)).collect())
}

fn item(row: Row, console: Option<&str>) -> Item {
    let name = match row.actor_type.as_str() {
        "system" => "The platform".to_owned(),
        _ => row.actor_name,
    };
    let said = Said {
        action: &row.action,
        payload: &row.payload,
    };
    let text = said.sentence(&name);
    let href = console.and_then(|base| said.path().map(|path| format!("{base}{path}")));
    let tone = said.tone();
    Item {
        id: row.id,
        occurred_at: row.occurred_at,
        text,
        href,
        tone,
        action: row.action,
        actor: Actor {
            kind: row.actor_type,
            id: row.actor_id,
            name,
        },
    }
}

/// What an event says, read from its payload's outcome, keys and versions only.
struct Said<'a> {
    action: &'a str,
    payload: &'a Value,
}

impl<'a> Said<'a> {
    fn text(&self, name: &str) -> Option<&'a str> {
        self.payload.get(name).and_then(Value::as_str)
    }

    fn version(&self) -> Option<i64> {
        self.payload.get("version").and_then(Value::as_i64)
    }

    fn get(&self, name: &str) -> &'a str {
        self.text(name).unwrap_or("?")
    }

    /// `rule set fraud version 3`.
    fn definition(&self) -> String {
        let kind = self.get("kind").replace('_', " ");
        let version = self
            .version()
            .map_or_else(String::new, |v| format!(" version {v}"));
        format!("{kind} {}{version}", self.get("key"))
    }

    /// `a kyc_review case`: the case's type is the key of its kind; its priority and title are
    /// payload beyond keys and outcomes (SPEC §4.1) and stay out.
    fn case(&self) -> String {
        format!("a {} case", self.get("type"))
    }

    fn sentence(&self, actor: &str) -> String {
        match self.action {
            "case.decided" => format!(
                "{actor} decided {}: {}.",
                self.case(),
                self.get("outcome").replace('_', " ")
            ),
            "case.sla.breached" => {
                format!("{actor} recorded that {} breached its SLA.", self.case())
            }
            "definition.approval.requested" => {
                format!("{actor} asked to publish {}.", self.definition())
            }
            "definition.approval.approved" => format!("{actor} approved {}.", self.definition()),
            "definition.approval.rejected" => {
                format!("{actor} rejected publishing {}.", self.definition())
            }
            "definition.approval.withdrawn" => format!(
                "{actor} withdrew the request to publish {}.",
                self.definition()
            ),
            _ => format!("{actor} published {}.", self.definition()),
        }
    }

    /// The console path of what the event is about.
    fn path(&self) -> Option<String> {
        let text = |name| self.text(name);
        match self.action {
            "case.decided" | "case.sla.breached" => Some(format!("/cases/{}", text("caseId")?)),
            action if action.starts_with("definition.approval.") => {
                Some(format!("/approvals/{}", text("requestId")?))
            }
            _ => Some(format!(
                "/definitions/{}/{}/versions/{}",
                text("kind")?,
                text("key")?,
                self.version()?
            )),
        }
    }

    fn tone(&self) -> Tone {
        match self.action {
            "case.sla.breached" | "definition.approval.rejected" => Tone::Alert,
            _ => Tone::Neutral,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn row(action: &str, actor_type: &str, payload: Value) -> Row {
        Row {
            id: Uuid::nil(),
            occurred_at: DateTime::UNIX_EPOCH,
            action: action.to_owned(),
            actor_type: actor_type.to_owned(),
            actor_id: "ada".to_owned(),
            actor_name: "Ada Lovelace".to_owned(),
            payload,
        }
    }

    #[test]
    fn sentences_name_the_actor_and_only_outcomes_keys_and_versions() {
        let decided = item(
            row(
                "case.decided",
                "human",
                json!({"caseId": "c1", "type": "kyc_review", "priority": "high", "outcome": "no_action", "title": "Jane Doe"}),
            ),
            Some("https://console.example"),
        );
        assert_eq!(
            decided.text,
            "Ada Lovelace decided a kyc_review case: no action."
        );
        assert_eq!(
            decided.href.as_deref(),
            Some("https://console.example/cases/c1")
        );
        assert_eq!(decided.tone, Tone::Neutral);
        assert!(!decided.text.contains("Jane") && !decided.text.contains("high"));

        let breached = item(
            row(
                "case.sla.breached",
                "system",
                json!({"caseId": "c1", "type": "kyc_review", "priority": "low"}),
            ),
            None,
        );
        assert_eq!(
            breached.text,
            "The platform recorded that a kyc_review case breached its SLA."
        );
        assert_eq!((breached.tone, breached.href), (Tone::Alert, None));
        assert_eq!(breached.actor.name, "The platform");

        let published = item(
            row(
                "rule_set.published",
                "human",
                json!({"kind": "rule_set", "key": "fraud", "version": 3, "previousVersion": 2}),
            ),
            Some("https://c"),
        );
        assert_eq!(
            published.text,
            "Ada Lovelace published rule set fraud version 3."
        );
        assert_eq!(
            published.href.as_deref(),
            Some("https://c/definitions/rule_set/fraud/versions/3")
        );

        let rejected = item(
            row(
                "definition.approval.rejected",
                "human",
                json!({"kind": "workflow", "key": "onboarding", "version": 4, "requestId": "r9"}),
            ),
            Some("https://c"),
        );
        assert_eq!(
            rejected.text,
            "Ada Lovelace rejected publishing workflow onboarding version 4."
        );
        assert_eq!(
            (rejected.tone, rejected.href.as_deref()),
            (Tone::Alert, Some("https://c/approvals/r9"))
        );
    }

    #[test]
    fn an_item_has_exactly_the_fields_of_spec_2_2() {
        let shown = serde_json::to_value(item(row("case.decided", "human", json!({})), None))
            .expect("serialises");
        let mut fields: Vec<&String> = shown.as_object().expect("object").keys().collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "action",
                "actor",
                "href",
                "id",
                "occurredAt",
                "text",
                "tone"
            ]
        );
        let mut actor: Vec<&String> = shown["actor"].as_object().expect("actor").keys().collect();
        actor.sort();
        assert_eq!(actor, ["id", "name", "type"]);
    }
}
