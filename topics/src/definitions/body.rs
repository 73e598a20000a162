//! Definition bodies (SPEC §1), as the API reads them and the stages run them: what each kind
//! holds, the checks a body passes before it is stored, and the app calls it makes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Kind;

/// A definition's body, by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Body {
    Workflow(Workflow),
    Rule(Rule),
    RuleSet(RuleSet),
    CollectionFlow(CollectionFlow),
}

impl Body {
    /// Reads `body` as a definition of `kind`; the error says where the first mismatch is.
    pub fn parse(
        kind: Kind,
        body: Value,
    ) -> Result<Self, serde_path_to_error::Error<serde_json::Error>> {
        Ok(match kind {
            Kind::Workflow => Body::Workflow(serde_path_to_error::deserialize(body)?),
            Kind::Rule => Body::Rule(serde_path_to_error::deserialize(body)?),
            Kind::RuleSet => Body::RuleSet(serde_path_to_error::deserialize(body)?),
            Kind::CollectionFlow => Body::CollectionFlow(serde_path_to_error::deserialize(body)?),
        })
    }

    /// Every app call the body writes out, in order, with where (rules named by key are
    /// their own definitions' calls).
    pub fn app_calls(&self) -> Vec<AppCall<'_>> {
        let mut calls = Vec::new();
        match self {
            Body::Workflow(workflow) => {
                for (i, step) in workflow.steps.iter().enumerate() {
                    match &step.run {
                        StepRun::CallApp(call) => calls.push(AppCall {
                            app: &call.app,
                            action: &call.action,
                            from_rule: false,
                            path: format!("/steps/{i}"),
                        }),
                        StepRun::RuleSet(set) => {
                            push_rule_calls(&set.rules, &format!("/steps/{i}"), &mut calls);
                        }
                        StepRun::OpenCase(_) => {}
                    }
                }
            }
            Body::Rule(rule) => rule.push_call(String::new(), &mut calls),
            Body::RuleSet(set) => push_rule_calls(&set.rules, "", &mut calls),
            Body::CollectionFlow(_) => {}
        }
        calls
    }
}

impl Body {
    /// What the body names (SPEC §2.6 `dependencies`): each app with the actions it calls, and
    /// the rules, rule sets and workflows it names by key; each once, in order of first mention.
    pub fn names(&self) -> Vec<Named> {
        let mut named: Vec<Named> = Vec::new();
        let mut name = |kind: &'static str, key: &str, action: Option<&str>| {
            let at = match named.iter().position(|n| n.kind == kind && n.key == key) {
                Some(at) => at,
                None => {
                    named.push(Named {
                        kind,
                        key: key.to_owned(),
                        actions: Vec::new(),
                    });
                    named.len() - 1
                }
            };
            if let Some(action) = action.filter(|a| !named[at].actions.iter().any(|b| b == a)) {
                named[at].actions.push(action.to_owned());
            }
        };
        let rules = |entries: &[RuleEntry],
                     name: &mut dyn FnMut(&'static str, &str, Option<&str>)| {
            for entry in entries {
                match entry {
                    RuleEntry::Named { rule } => name("rule", rule, None),
                    RuleEntry::Inline(Rule::App(rule)) => {
                        name("app", &rule.app, Some(&rule.action))
                    }
                    RuleEntry::Inline(Rule::Field(_)) => {}
                }
            }
        };
        match self {
            Body::Workflow(workflow) => {
                for step in &workflow.steps {
                    match &step.run {
                        StepRun::CallApp(call) => name("app", &call.app, Some(&call.action)),
                        StepRun::RuleSet(set) => {
                            if let Some(key) = &set.rule_set {
                                name("rule_set", key, None);
                            }
                            rules(&set.rules, &mut name);
                        }
                        StepRun::OpenCase(_) => {}
                    }
                }
            }
            Body::Rule(Rule::App(rule)) => name("app", &rule.app, Some(&rule.action)),
            Body::Rule(Rule::Field(_)) => {}
            Body::RuleSet(set) => rules(&set.rules, &mut name),
            Body::CollectionFlow(flow) => name("workflow", &flow.workflow, None),
        }
        named
    }
}

/// Something a definition names: an app (with the actions called) or another definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// `app`, `rule`, `rule_set` or `workflow`.
    pub kind: &'static str,
    pub key: String,
    pub actions: Vec<String>,
}

impl Body {
    /// What the body's types cannot say: step ids unique and not empty, mapping values that
    /// are paths, comparisons that fit their operator, keys that can name a definition. Each
    /// problem as `(JSON Pointer, message)`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        match self {
            Body::Workflow(workflow) => {
                if workflow.steps.is_empty() {
                    problems.push(("/steps".into(), "a workflow has at least one step".into()));
                }
                let mut seen = std::collections::HashSet::new();
                for (i, step) in workflow.steps.iter().enumerate() {
                    let at = format!("/steps/{i}");
                    if step.id.is_empty() || step.id.len() > 100 {
                        problems.push((
                            format!("{at}/id"),
                            "a step id is 1 to 100 characters".into(),
                        ));
                    } else if !seen.insert(step.id.as_str()) {
                        problems.push((
                            format!("{at}/id"),
                            format!("step id {} is used twice", step.id),
                        ));
                    }
                    match &step.run {
                        StepRun::CallApp(call) => {
                            mapping_problems(call.input_mapping.as_ref(), &at, &mut problems);
                            output_key_problems(call.output_key.as_deref(), &at, &mut problems);
                        }
                        StepRun::RuleSet(set) => {
                            if set.rule_set.is_none() && set.rules.is_empty() {
                                problems.push((
                                    at.clone(),
                                    "a rule_set step names a ruleSet or has rules".into(),
                                ));
                            }
                            if let Some(key) = &set.rule_set {
                                key_problems(key, &format!("{at}/ruleSet"), &mut problems);
                            }
                            rules_problems(&set.rules, &at, &mut problems);
                            output_key_problems(set.output_key.as_deref(), &at, &mut problems);
                        }
                        StepRun::OpenCase(case) => case_problems(case, &at, &mut problems),
                    }
                }
            }
            Body::Rule(rule) => rule_problems(rule, "", &mut problems),
            Body::RuleSet(set) => {
                if set.rules.is_empty() {
                    problems.push(("/rules".into(), "a rule set has at least one rule".into()));
                }
                rules_problems(&set.rules, "", &mut problems);
            }
            Body::CollectionFlow(flow) => key_problems(&flow.workflow, "/workflow", &mut problems),
        }
        problems
    }
}

/// SPEC §1: a definition key is 1 to 100 lowercase letters, digits, `_` and `-`, starting
/// with a letter or digit.
pub fn is_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    (1..=100).contains(&bytes.len())
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

fn key_problems(key: &str, at: &str, problems: &mut Vec<(String, String)>) {
    if !is_key(key) {
        problems.push((at.into(), "a definition key is 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit".into()));
    }
}

fn case_problems(case: &OpenCaseStep, at: &str, problems: &mut Vec<(String, String)>) {
    if !is_key(&case.case_type) {
        problems.push((format!("{at}/caseType"), "a case type is 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit".into()));
    }
    if case
        .title
        .as_ref()
        .is_some_and(|t| t.is_empty() || t.chars().count() > MAX_CASE_TITLE_CHARS)
    {
        problems.push((
            format!("{at}/title"),
            format!("a title is 1 to {MAX_CASE_TITLE_CHARS} characters"),
        ));
    }
    if !(1..=MAX_SLA_HOURS).contains(&case.sla_hours) {
        problems.push((
            format!("{at}/slaHours"),
            format!("an SLA is 1 to {MAX_SLA_HOURS} hours"),
        ));
    }
    if case.when.as_ref().is_some_and(|w| w.path.is_empty()) {
        problems.push((
            format!("{at}/when/path"),
            "a path is a dot path into the run context".into(),
        ));
    }
    output_key_problems(case.output_key.as_deref(), at, problems);
}

fn output_key_problems(key: Option<&str>, at: &str, problems: &mut Vec<(String, String)>) {
    if key.is_some_and(|key| key.is_empty() || key.contains('.')) {
        problems.push((
            format!("{at}/outputKey"),
            "an output key is a non-empty name without dots".into(),
        ));
    }
}

fn mapping_problems(
    mapping: Option<&Map<String, Value>>,
    at: &str,
    problems: &mut Vec<(String, String)>,
) {
    for (field, path) in mapping.into_iter().flatten() {
        if path.as_str().is_none_or(str::is_empty) {
            let pointer = format!(
                "{at}/inputMapping/{}",
                field.replace('~', "~0").replace('/', "~1")
            );
            problems.push((
                pointer,
                "a mapping is a dot path into the run context".into(),
            ));
        }
    }
}

fn rules_problems(rules: &[RuleEntry], parent: &str, problems: &mut Vec<(String, String)>) {
    for (j, entry) in rules.iter().enumerate() {
        let at = format!("{parent}/rules/{j}");
        match entry {
            RuleEntry::Named { rule } => key_problems(rule, &format!("{at}/rule"), problems),
            RuleEntry::Inline(rule) => rule_problems(rule, &at, problems),
        }
    }
}

fn rule_problems(rule: &Rule, at: &str, problems: &mut Vec<(String, String)>) {
    let condition = match rule {
        Rule::App(rule) => {
            mapping_problems(rule.input_mapping.as_ref(), at, problems);
            &rule.fail_when
        }
        Rule::Field(rule) => &rule.fail_when,
    };
    let fits = match condition.op {
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => condition.value.is_number(),
        Op::In => condition.value.is_array(),
        Op::Eq | Op::Ne | Op::Exists | Op::Missing => true,
    };
    if !fits {
        problems.push((
            format!("{at}/failWhen/value"),
            "gt, gte, lt and lte compare with a number; in with an array".into(),
        ));
    }
}

fn push_rule_calls<'a>(rules: &'a [RuleEntry], parent: &str, calls: &mut Vec<AppCall<'a>>) {
    for (j, entry) in rules.iter().enumerate() {
        if let RuleEntry::Inline(rule) = entry {
            rule.push_call(format!("{parent}/rules/{j}"), calls);
        }
    }
}

/// Where a definition calls an app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppCall<'a> {
    pub app: &'a str,
    pub action: &'a str,
    /// `true` for an app rule (which needs a synchronous action).
    pub from_rule: bool,
    /// JSON Pointer of the step or rule in the body.
    pub path: String,
}

/// A workflow: its steps run in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workflow {
    pub steps: Vec<Step>,
}

/// One step of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Unique within the workflow; names the step in the run and in idempotency keys.
    pub id: String,
    #[serde(flatten)]
    pub run: StepRun,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StepRun {
    /// Calls an action of an installed app (SPEC §4.12).
    CallApp(CallApp),
    /// Evaluates rules; the outcome lands under `outputKey`.
    RuleSet(RuleSetStep),
    /// Opens a case for the run's subject (docs/cases-activity-audit.md "Cases"), or only `when`
    /// the context says so.
    OpenCase(OpenCaseStep),
}

/// A `call_app` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallApp {
    pub app: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
    /// Input field → dot path into the run context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_mapping: Option<Map<String, Value>>,
    /// Where the output lands in the run context (and `<outputKey>ExternalId` for an
    /// asynchronous action); the step id when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_key: Option<String>,
}

/// A `rule_set` step: the rules of a published rule set (`ruleSet`), or its own (`rules`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSetStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_set: Option<String>,
    #[serde(default)]
    pub rules: Vec<RuleEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_key: Option<String>,
}

/// An `open_case` step. Its output is `{opened, caseId}` (`caseId` only when one opened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenCaseStep {
    /// The case's type: a definition-key-like label (`kyc_review`).
    pub case_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub priority: crate::cases::Priority,
    /// The SLA: the case is due this many hours after it opens (1 to 8760).
    pub sla_hours: u32,
    /// Opens the case only when the value at `path` of the context compares true (a rule set's
    /// outcome: `{path: "screening.outcome", op: "eq", value: "fail"}`); always when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_key: Option<String>,
}

/// A comparison of a context value: true when the value at `path` compares true by `op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    pub path: String,
    pub op: Op,
    #[serde(default)]
    pub value: Value,
}

impl When {
    /// The same comparison as a rule's condition.
    pub fn condition(&self) -> Condition {
        Condition {
            op: self.op,
            value: self.value.clone(),
        }
    }
}

/// The longest case title.
pub const MAX_CASE_TITLE_CHARS: usize = 200;
/// The longest SLA, in hours (a year).
pub const MAX_SLA_HOURS: u32 = 8760;

/// A rule set definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleSet {
    pub rules: Vec<RuleEntry>,
}

/// A rule of a rule set: written out, or a published rule named by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RuleEntry {
    Named { rule: String },
    Inline(Rule),
}

/// A rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Rule {
    /// Calls a synchronous action and compares the output's `resultPath` with `failWhen`.
    App(AppRule),
    /// Compares the value at `path` of the rule data with `failWhen`.
    Field(FieldRule),
}

impl Rule {
    fn push_call<'a>(&'a self, path: String, calls: &mut Vec<AppCall<'a>>) {
        if let Rule::App(rule) = self {
            calls.push(AppCall {
                app: &rule.app,
                action: &rule.action,
                from_rule: true,
                path,
            });
        }
    }
}

/// An app rule (SPEC §4.12 rule 7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub app: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_mapping: Option<Map<String, Value>>,
    /// Dot path into the output.
    pub result_path: String,
    pub fail_when: Condition,
}

/// A rule on the data alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Dot path into the rule data (the run context).
    pub path: String,
    pub fail_when: Condition,
}

/// When a rule fails: the compared value against `value` by `op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    pub op: Op,
    #[serde(default)]
    pub value: Value,
}

/// A comparison. `exists` fails the rule when the value is there; `missing` when it is not;
/// the ordered ones compare numbers only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Exists,
    Missing,
}

/// A collection flow: the workflow its submissions run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CollectionFlow {
    pub workflow: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_workflow_reads_with_both_step_types() {
        let body = json!({"steps": [
            {"id": "kyc", "type": "call_app", "app": "vendor-app", "action": "check",
             "input": {"depth": 1}, "inputMapping": {"name": "subject.name"}, "outputKey": "kyc"},
            {"id": "score", "type": "rule_set", "rules": [
                {"type": "app", "app": "aml", "action": "screen", "resultPath": "hits",
                 "failWhen": {"op": "gt", "value": 0}},
                {"type": "field", "path": "kyc.score", "failWhen": {"op": "lt", "value": 0.5}},
                {"rule": "pep-check"}
            ]}
        ]});
        let parsed = Body::parse(Kind::Workflow, body.clone()).expect("reads");
        let calls: Vec<(&str, &str, bool, String)> = parsed
            .app_calls()
            .into_iter()
            .map(|c| (c.app, c.action, c.from_rule, c.path))
            .collect();
        assert_eq!(
            calls,
            [
                ("vendor-app", "check", false, "/steps/0".to_owned()),
                ("aml", "screen", true, "/steps/1/rules/0".to_owned())
            ]
        );
        assert_eq!(serde_json::to_value(&parsed).expect("writes"), body);
    }

    #[test]
    fn unknown_fields_and_step_types_are_refused() {
        let typo = json!({"steps": [{"id": "a", "type": "call_app", "app": "x", "action": "y", "imput": {}}]});
        assert!(Body::parse(Kind::Workflow, typo).is_err());
        let unknown = json!({"steps": [{"id": "a", "type": "sleep"}]});
        assert!(Body::parse(Kind::Workflow, unknown).is_err());
        assert!(Body::parse(Kind::Rule, json!({"type": "field", "path": "a"})).is_err());
        assert!(Body::parse(Kind::CollectionFlow, json!({"workflow": "onboarding"})).is_ok());
    }

    #[test]
    fn problems_name_where() {
        let body = json!({"steps": [
            {"id": "a", "type": "call_app", "app": "x", "action": "y", "inputMapping": {"n": 3}},
            {"id": "a", "type": "rule_set", "ruleSet": "Bad Key", "rules": [
                {"type": "field", "path": "p", "failWhen": {"op": "gt", "value": "ten"}}
            ], "outputKey": "a.b"}
        ]});
        let problems: Vec<String> = Body::parse(Kind::Workflow, body)
            .expect("reads")
            .problems()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(
            problems,
            [
                "/steps/0/inputMapping/n",
                "/steps/1/id",
                "/steps/1/ruleSet",
                "/steps/1/rules/0/failWhen/value",
                "/steps/1/outputKey"
            ]
        );
        let empty = Body::parse(Kind::Workflow, json!({"steps": []})).expect("reads");
        assert_eq!(empty.problems().len(), 1);
        assert!(is_key("kyc_check-2") && !is_key("_kyc") && !is_key("KYC") && !is_key(""));
    }

    #[test]
    fn names_are_each_app_and_key_once_in_order() {
        let body = json!({"steps": [
            {"id": "a", "type": "call_app", "app": "kyc", "action": "check"},
            {"id": "b", "type": "rule_set", "ruleSet": "fraud", "rules": [
                {"rule": "pep"},
                {"type": "app", "app": "kyc", "action": "score", "resultPath": "s", "failWhen": {"op": "gt", "value": 1}}
            ]},
            {"id": "c", "type": "call_app", "app": "kyc", "action": "check"}
        ]});
        let named: Vec<(&str, String, Vec<String>)> = Body::parse(Kind::Workflow, body)
            .expect("reads")
            .names()
            .into_iter()
            .map(|n| (n.kind, n.key, n.actions))
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            named,
            [
                ("app", "kyc".to_owned(), strings(&["check", "score"])),
                ("rule_set", "fraud".to_owned(), vec![]),
                ("rule", "pep".to_owned(), vec![]),
            ]
        );
        let flow =
            Body::parse(Kind::CollectionFlow, json!({"workflow": "onboarding"})).expect("reads");
        assert_eq!(flow.names()[0].kind, "workflow");
    }
}
