//! The diff of an approval detail (SPEC §2.6): what changes between two versions of a
//! definition, as a list of `changes` and, for workflows, `steps` matched by step id.
//!
//! Rules of the walk (docs/definitions-and-runs.md "Definition approvals"):
//! - objects compare key by key; a key only in the new version is `added`, only in the old one
//!   `removed`;
//! - a list whose elements all carry an identity (an object's `id`, or the `rule` a `{rule: key}`
//!   entry names), unique within the list, is matched by identity: an element that keeps its
//!   identity but not its place among the others is `moved` (the fewest moves that explain the
//!   new order: the elements outside a longest run kept in order), and its contents are compared
//!   wherever it went; other lists compare by position;
//! - anything else that differs is `changed`, with `before` and `after`.
//!
//! Paths are JSON Pointers into the new version, and into the old one for what was removed.
//! `delta` counts the changes by op.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

/// A diff between two versions of one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub kind: String,
    pub key: String,
    pub from: i32,
    pub to: i32,
    pub changes: Vec<Change>,
    pub delta: Delta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepChange>>,
}

/// What happened to a part of the definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Added,
    Removed,
    Changed,
    Moved,
    /// Steps only: the step is there, in its place, as it was.
    Unchanged,
}

/// One change (SPEC §2.6 `changes[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub op: Op,
    pub path: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// The changes counted by op.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Delta {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    pub moved: usize,
}

/// One workflow step across the two versions (SPEC §2.6 `steps[]`). Positions count from 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepChange {
    pub id: String,
    pub op: Op,
    pub from: Option<usize>,
    pub to: Option<usize>,
    /// What the step does, in a few words (`call_app vendor-app/check`).
    pub before: Option<String>,
    pub after: Option<String>,
    /// The summaries of the changes inside the step.
    pub changes: Vec<String>,
}

/// The diff from version `from` (`before`) to version `to` (`after`) of a definition.
pub fn between(
    kind: &str,
    key: &str,
    (from, before): (i32, &Value),
    (to, after): (i32, &Value),
) -> Diff {
    let mut changes = Vec::new();
    walk("", before, after, &mut changes);
    let mut delta = Delta::default();
    for change in &changes {
        match change.op {
            Op::Added => delta.added += 1,
            Op::Removed => delta.removed += 1,
            Op::Changed => delta.changed += 1,
            Op::Moved => delta.moved += 1,
            Op::Unchanged => {}
        }
    }
    let steps = (kind == "workflow").then(|| steps(before, after)).flatten();
    Diff {
        kind: kind.to_owned(),
        key: key.to_owned(),
        from,
        to,
        changes,
        delta,
        steps,
    }
}

fn walk(path: &str, before: &Value, after: &Value, out: &mut Vec<Change>) {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            for (name, value) in old {
                if !new.contains_key(name) {
                    out.push(removed(&pointer(path, name), value));
                }
            }
            for (name, value) in new {
                let at = pointer(path, name);
                match old.get(name) {
                    Some(was) => walk(&at, was, value, out),
                    None => out.push(added(&at, value)),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => match (identities(old), identities(new)) {
            (Some(old_ids), Some(new_ids)) => {
                walk_identified(path, (old, &old_ids), (new, &new_ids), out);
            }
            _ => walk_positional(path, old, new, out),
        },
        _ if before == after => {}
        _ => out.push(Change {
            op: Op::Changed,
            path: path.to_owned(),
            summary: format!(
                "{} changed from {} to {}",
                shown_path(path),
                short(before),
                short(after)
            ),
            before: Some(before.clone()),
            after: Some(after.clone()),
        }),
    }
}

fn walk_positional(path: &str, old: &[Value], new: &[Value], out: &mut Vec<Change>) {
    for (i, (was, is)) in old.iter().zip(new).enumerate() {
        walk(&pointer(path, &i.to_string()), was, is, out);
    }
    for (i, was) in old.iter().enumerate().skip(new.len()) {
        out.push(removed(&pointer(path, &i.to_string()), was));
    }
    for (i, is) in new.iter().enumerate().skip(old.len()) {
        out.push(added(&pointer(path, &i.to_string()), is));
    }
}

fn walk_identified(
    path: &str,
    (old, old_ids): (&[Value], &[String]),
    (new, new_ids): (&[Value], &[String]),
    out: &mut Vec<Change>,
) {
    let (old_index, new_index) = (index_of(old_ids), index_of(new_ids));
    for (i, id) in old_ids.iter().enumerate() {
        if !new_index.contains_key(id.as_str()) {
            out.push(removed(&pointer(path, &i.to_string()), &old[i]));
        }
    }
    let moved = moved_elements(old_ids, &new_index);
    for (j, id) in new_ids.iter().enumerate() {
        let at = pointer(path, &j.to_string());
        let Some(&i) = old_index.get(id.as_str()) else {
            out.push(added(&at, &new[j]));
            continue;
        };
        if moved.contains(&i) {
            out.push(Change {
                op: Op::Moved,
                path: at.clone(),
                summary: format!(
                    "Moved {} from position {} to {}",
                    describe(&new[j]),
                    i + 1,
                    j + 1
                ),
                before: Some(Value::from(i + 1)),
                after: Some(Value::from(j + 1)),
            });
        }
        walk(&at, &old[i], &new[j], out);
    }
}

/// Each id's place in `ids`.
fn index_of(ids: &[String]) -> HashMap<&str, usize> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect()
}

/// The old indexes of the elements kept in both lists that are not in a longest run kept in
/// the same order: the fewest moves that turn the old order into the new one. Among runs of
/// that length, the one whose elements travelled least stays, so the element that went far
/// is the one called moved (`[a, c]` to `[c, a]` moves `c`, not `a`).
fn moved_elements(old_ids: &[String], new_index: &HashMap<&str, usize>) -> HashSet<usize> {
    let kept: Vec<(usize, usize)> = old_ids
        .iter()
        .enumerate()
        .filter_map(|(i, id)| new_index.get(id.as_str()).map(|&j| (i, j)))
        .collect();
    let in_order = longest_run(&kept);
    kept.iter()
        .enumerate()
        .filter(|(k, _)| !in_order.contains(k))
        .map(|(_, &(i, _))| i)
        .collect()
}

/// Above this many common elements the run is found in O(n log n) without the tie-break.
const WEIGHED_RUN_LIMIT: usize = 1000;

/// The indexes into `pairs` (old index, new index; in old order) of a longest run whose new
/// indexes increase.
fn longest_run(pairs: &[(usize, usize)]) -> HashSet<usize> {
    if pairs.len() > WEIGHED_RUN_LIMIT {
        let values: Vec<usize> = pairs.iter().map(|&(_, j)| j).collect();
        return longest_increasing(&values);
    }
    // best[k]: (length, -travel) of the best run ending at k, and the element before k.
    let travel = |(i, j): (usize, usize)| i.abs_diff(j) as i64;
    let mut best: Vec<((usize, i64), Option<usize>)> = Vec::with_capacity(pairs.len());
    for k in 0..pairs.len() {
        let mut here = ((1, -travel(pairs[k])), None);
        for p in 0..k {
            if pairs[p].1 < pairs[k].1 {
                let ((length, score), _) = best[p];
                let through = (length + 1, score - travel(pairs[k]));
                if through > here.0 {
                    here = (through, Some(p));
                }
            }
        }
        best.push(here);
    }
    let mut run = HashSet::new();
    let mut at = (0..best.len()).max_by_key(|&k| (best[k].0, std::cmp::Reverse(k)));
    while let Some(k) = at {
        run.insert(k);
        at = best[k].1;
    }
    run
}

/// The indexes into `values` of one longest strictly increasing subsequence (patience
/// sorting, O(n log n)).
fn longest_increasing(values: &[usize]) -> HashSet<usize> {
    let mut tails: Vec<usize> = Vec::new();
    let mut previous = vec![usize::MAX; values.len()];
    for (k, &value) in values.iter().enumerate() {
        let place = tails.partition_point(|&t| values[t] < value);
        if place > 0 {
            previous[k] = tails[place - 1];
        }
        if place == tails.len() {
            tails.push(k);
        } else {
            tails[place] = k;
        }
    }
    let mut run = HashSet::new();
    let mut at = tails.last().copied();
    while let Some(k) = at {
        run.insert(k);
        at = (previous[k] != usize::MAX).then_some(previous[k]);
    }
    run
}

/// Each element's identity, when every one has one and none repeats.
fn identities(list: &[Value]) -> Option<Vec<String>> {
    let ids: Vec<String> = list.iter().map(identity).collect::<Option<_>>()?;
    let mut seen = HashSet::new();
    ids.iter().all(|id| seen.insert(id.as_str())).then_some(ids)
}

fn identity(element: &Value) -> Option<String> {
    let object = element.as_object()?;
    if let Some(id) = object.get("id").and_then(Value::as_str) {
        return Some(format!("id:{id}"));
    }
    match (object.len(), object.get("rule").and_then(Value::as_str)) {
        (1, Some(rule)) => Some(format!("rule:{rule}")),
        _ => None,
    }
}

/// The workflow's steps matched by id, in the new version's order, removed ones after.
fn steps(before: &Value, after: &Value) -> Option<Vec<StepChange>> {
    let old = before.get("steps")?.as_array()?;
    let new = after.get("steps")?.as_array()?;
    let id_of = |step: &Value| step.get("id").and_then(Value::as_str).map(str::to_owned);
    let old_ids: Vec<String> = old.iter().map(id_of).collect::<Option<_>>()?;
    let new_ids: Vec<String> = new.iter().map(id_of).collect::<Option<_>>()?;
    let (old_index, new_index) = (index_of(&old_ids), index_of(&new_ids));
    let moved = moved_elements(&old_ids, &new_index);
    let mut steps = Vec::with_capacity(new.len());
    for (j, id) in new_ids.iter().enumerate() {
        let Some(&i) = old_index.get(id.as_str()) else {
            steps.push(StepChange {
                id: id.clone(),
                op: Op::Added,
                from: None,
                to: Some(j + 1),
                before: None,
                after: Some(step_label(&new[j])),
                changes: Vec::new(),
            });
            continue;
        };
        let mut inside = Vec::new();
        walk(&format!("/steps/{j}"), &old[i], &new[j], &mut inside);
        let op = if !inside.is_empty() {
            Op::Changed
        } else if moved.contains(&i) {
            Op::Moved
        } else {
            Op::Unchanged
        };
        steps.push(StepChange {
            id: id.clone(),
            op,
            from: Some(i + 1),
            to: Some(j + 1),
            before: Some(step_label(&old[i])),
            after: Some(step_label(&new[j])),
            changes: inside.into_iter().map(|change| change.summary).collect(),
        });
    }
    for (i, id) in old_ids.iter().enumerate() {
        if !new_index.contains_key(id.as_str()) {
            steps.push(StepChange {
                id: id.clone(),
                op: Op::Removed,
                from: Some(i + 1),
                to: None,
                before: Some(step_label(&old[i])),
                after: None,
                changes: Vec::new(),
            });
        }
    }
    Some(steps)
}

/// What a step does in a few words.
fn step_label(step: &Value) -> String {
    let text = |name: &str| step.get(name).and_then(Value::as_str);
    match text("type") {
        Some("call_app") => format!(
            "call_app {}/{}",
            text("app").unwrap_or("?"),
            text("action").unwrap_or("?")
        ),
        Some("rule_set") => match text("ruleSet") {
            Some(set) => format!("rule_set {set}"),
            None => {
                let rules = step
                    .get("rules")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                format!("rule_set of {rules} rules")
            }
        },
        Some("open_case") => format!(
            "open_case {} ({})",
            text("caseType").unwrap_or("?"),
            text("priority").unwrap_or("?")
        ),
        Some(other) => other.to_owned(),
        None => "step".to_owned(),
    }
}

fn added(path: &str, value: &Value) -> Change {
    Change {
        op: Op::Added,
        path: path.to_owned(),
        summary: format!("Added {} at {}", describe(value), shown_path(path)),
        before: None,
        after: Some(value.clone()),
    }
}

fn removed(path: &str, value: &Value) -> Change {
    Change {
        op: Op::Removed,
        path: path.to_owned(),
        summary: format!("Removed {} at {}", describe(value), shown_path(path)),
        before: Some(value.clone()),
        after: None,
    }
}

/// A value named in a sentence: an element by its identity, a scalar by itself.
fn describe(value: &Value) -> String {
    match value {
        Value::Object(object) => {
            let text = |name: &str| object.get(name).and_then(Value::as_str);
            match (text("type"), text("id"), text("rule")) {
                (Some(kind), Some(id), _) => format!("{kind} \"{id}\""),
                (None, Some(id), _) => format!("\"{id}\""),
                (_, None, Some(rule)) => format!("rule \"{rule}\""),
                (Some(kind), None, None) => format!("a {kind}"),
                (None, None, None) => "an object".to_owned(),
            }
        }
        Value::Array(items) => format!("a list of {}", items.len()),
        scalar => short(scalar),
    }
}

/// A value in at most 60 characters.
fn short(value: &Value) -> String {
    const MAX: usize = 60;
    let text = match value {
        Value::Object(_) | Value::Array(_) => return describe(value),
        scalar => scalar.to_string(),
    };
    if text.chars().count() <= MAX {
        text
    } else {
        let cut: String = text.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
}

fn shown_path(path: &str) -> &str {
    if path.is_empty() {
        "the definition"
    } else {
        path
    }
}

/// `parent` extended by one reference token, escaped per RFC 6901.
fn pointer(parent: &str, token: &str) -> String {
    format!("{parent}/{}", token.replace('~', "~0").replace('/', "~1"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ops(diff: &Diff) -> Vec<(Op, &str)> {
        diff.changes
            .iter()
            .map(|c| (c.op, c.path.as_str()))
            .collect()
    }

    #[test]
    fn scalars_and_keys_are_changed_added_and_removed() {
        let before = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 50}, "id": "r"});
        let after = json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": 40}, "note": "x"});
        let diff = between("rule", "score", (1, &before), (2, &after));
        assert_eq!(
            ops(&diff),
            [
                (Op::Removed, "/id"),
                (Op::Changed, "/failWhen/value"),
                (Op::Added, "/note")
            ]
        );
        assert_eq!(
            diff.changes[1].summary,
            "/failWhen/value changed from 50 to 40"
        );
        assert_eq!(
            (
                diff.changes[1].before.clone(),
                diff.changes[1].after.clone()
            ),
            (Some(json!(50)), Some(json!(40)))
        );
        assert_eq!(
            diff.delta,
            Delta {
                added: 1,
                removed: 1,
                changed: 1,
                moved: 0
            }
        );
        assert!(diff.steps.is_none());
    }

    #[test]
    fn reordered_steps_are_moved_and_keep_their_inner_changes() {
        let a = json!({"id": "a", "type": "call_app", "app": "kyc", "action": "check"});
        let b = json!({"id": "b", "type": "rule_set", "ruleSet": "fraud"});
        let c = json!({"id": "c", "type": "call_app", "app": "aml", "action": "screen"});
        let mut c2 = c.clone();
        c2["action"] = json!("screen_v2");
        let d = json!({"id": "d", "type": "rule_set", "rules": [{"rule": "pep"}]});
        let e = json!({"id": "e", "type": "rule_set", "ruleSet": "limits"});
        let before = json!({"steps": [a, b, c, e]});
        let after = json!({"steps": [c2, a, d, e]});
        let diff = between("workflow", "onboarding", (3, &before), (4, &after));
        assert_eq!(
            ops(&diff),
            [
                (Op::Removed, "/steps/1"),
                (Op::Moved, "/steps/0"),
                (Op::Changed, "/steps/0/action"),
                (Op::Added, "/steps/2"),
            ]
        );
        assert_eq!(
            diff.changes[1].summary,
            "Moved call_app \"c\" from position 3 to 1"
        );
        let steps: Vec<(&str, Op, Option<usize>, Option<usize>)> = diff
            .steps
            .as_ref()
            .expect("a workflow's steps")
            .iter()
            .map(|s| (s.id.as_str(), s.op, s.from, s.to))
            .collect();
        assert_eq!(
            steps,
            [
                ("c", Op::Changed, Some(3), Some(1)),
                ("a", Op::Unchanged, Some(1), Some(2)),
                ("d", Op::Added, None, Some(3)),
                ("e", Op::Unchanged, Some(4), Some(4)),
                ("b", Op::Removed, Some(2), None),
            ]
        );
        let step_c = &diff.steps.as_ref().expect("steps")[0];
        assert_eq!(step_c.before.as_deref(), Some("call_app aml/screen"));
        assert_eq!(step_c.after.as_deref(), Some("call_app aml/screen_v2"));
        assert_eq!(
            step_c.changes,
            ["/steps/0/action changed from \"screen\" to \"screen_v2\""]
        );
    }

    #[test]
    fn a_step_only_moved_is_moved() {
        let step = |id: &str| json!({"id": id, "type": "call_app", "app": "x", "action": "y"});
        let before = json!({"steps": [step("a"), step("b"), step("c")]});
        let after = json!({"steps": [step("b"), step("c"), step("a")]});
        let diff = between("workflow", "w", (1, &before), (2, &after));
        assert_eq!(ops(&diff), [(Op::Moved, "/steps/2")]);
        let ops: Vec<Op> = diff.steps.expect("steps").iter().map(|s| s.op).collect();
        assert_eq!(ops, [Op::Unchanged, Op::Unchanged, Op::Moved]);
    }

    #[test]
    fn named_rules_are_matched_by_what_they_name_and_nested_changes_have_paths() {
        let before = json!({"rules": [{"rule": "pep"}, {"type": "field", "path": "age", "failWhen": {"op": "lt", "value": 18}}]});
        let after = json!({"rules": [{"rule": "sanctions"}, {"rule": "pep"}, {"type": "field", "path": "age", "failWhen": {"op": "lt", "value": 21}}]});
        // The inline rule has no identity: the list compares by position.
        let diff = between("rule_set", "screening", (1, &before), (2, &after));
        assert_eq!(
            ops(&diff),
            [
                (Op::Changed, "/rules/0/rule"),
                (Op::Removed, "/rules/1/failWhen"),
                (Op::Removed, "/rules/1/path"),
                (Op::Removed, "/rules/1/type"),
                (Op::Added, "/rules/1/rule"),
                (Op::Added, "/rules/2")
            ]
        );
        let named_before = json!({"rules": [{"rule": "pep"}, {"rule": "age"}]});
        let named_after =
            json!({"rules": [{"rule": "sanctions"}, {"rule": "pep"}, {"rule": "age"}]});
        let diff = between(
            "rule_set",
            "screening",
            (1, &named_before),
            (2, &named_after),
        );
        assert_eq!(ops(&diff), [(Op::Added, "/rules/0")]);
        assert_eq!(
            diff.changes[0].summary,
            "Added rule \"sanctions\" at /rules/0"
        );
    }

    #[test]
    fn identical_versions_have_no_changes_and_pointers_are_escaped() {
        let body =
            json!({"steps": [{"id": "a/b~c", "type": "call_app", "app": "x", "action": "y"}]});
        let diff = between("workflow", "w", (1, &body), (2, &body));
        assert!(diff.changes.is_empty());
        assert_eq!(diff.steps.expect("steps")[0].op, Op::Unchanged);
        let before = json!({"input": {"a/b": 1}});
        let after = json!({"input": {"a/b": 2}});
        let diff = between("workflow", "w", (1, &before), (2, &after));
        assert_eq!(diff.changes[0].path, "/input/a~1b");
    }

    #[test]
    fn a_long_value_is_cut_in_the_summary() {
        let before = json!({"v": "a".repeat(200)});
        let after = json!({"v": "b"});
        let diff = between("rule", "r", (1, &before), (2, &after));
        assert!(diff.changes[0].summary.chars().count() < 120);
        assert_eq!(diff.changes[0].after, Some(json!("b")));
    }

    #[test]
    fn a_long_list_finds_the_one_element_moved() {
        let step = |id: usize| json!({"id": format!("s{id}"), "type": "call_app", "app": "x", "action": "y"});
        let before: Vec<Value> = (0..1500).map(step).collect();
        let mut after = before.clone();
        let moved = after.remove(10);
        after.push(moved);
        let diff = between(
            "workflow",
            "w",
            (1, &json!({"steps": before})),
            (2, &json!({"steps": after})),
        );
        assert_eq!(ops(&diff), [(Op::Moved, "/steps/1499")]);
    }
}
