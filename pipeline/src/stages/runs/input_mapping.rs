//! The input of an app call, built from a step's or an app rule's literal `input` and its
//! `inputMapping` exactly as SPEC §4.12 says:
//!
//! 1. start from the literal `input` object;
//! 2. each mapped field takes the value at its dot path into the source (the run context, or
//!    the rule data), overriding a literal of the same name;
//! 3. a path that does not resolve leaves the literal, or nothing, in place;
//! 4. a field name with dots sets a nested path, creating intermediate objects as needed and
//!    merging into literal objects (the definition's literal itself is never changed: the
//!    input is a copy);
//! 5. an intermediate that already holds a non-object is left alone, and the value lands under
//!    the literal dotted key, where the action's input schema reports it.
//!
//! Rules 6 and 7 (where the output goes, what an app rule compares) belong to the step
//! ([`advance`](super::advance)) and the rule ([`rules`](topics::definitions::rules)), tested there.
//!
//! Mapped fields apply parents first (fewer dots first, then by name), so `a` mapped to an
//! object and `a.b` mapped too gives `a` with `b` merged in, whatever order the definition lists
//! them in.

use serde_json::{Map, Value};
use topics::definitions::rules::resolve;

/// The call's input: `literal` (an object, or nothing) with `mapping` applied from `source`.
pub(crate) fn build(
    literal: Option<&Value>,
    mapping: Option<&Map<String, Value>>,
    source: &Value,
) -> Value {
    let mut input = match literal {
        Some(Value::Object(fields)) => fields.clone(),
        _ => Map::new(),
    };
    let Some(mapping) = mapping else {
        return Value::Object(input);
    };
    let mut fields: Vec<(&String, &str)> = mapping
        .iter()
        .filter_map(|(field, path)| path.as_str().map(|path| (field, path)))
        .collect();
    fields.sort_by(|a, b| depth(a.0).cmp(&depth(b.0)).then_with(|| a.0.cmp(b.0)));
    for (field, path) in fields {
        if let Some(value) = resolve(source, path) {
            set(&mut input, field, value.clone());
        }
    }
    Value::Object(input)
}

fn depth(field: &str) -> usize {
    field.matches('.').count()
}

/// Sets `field` (dotted: a nested path) in `input` per rules 4 and 5.
fn set(input: &mut Map<String, Value>, field: &str, value: Value) {
    let segments: Vec<&str> = field.split('.').collect();
    if segments.len() == 1 || segments.iter().any(|s| s.is_empty()) {
        input.insert(field.to_owned(), value);
        return;
    }
    if !path_is_open(input, &segments[..segments.len() - 1]) {
        input.insert(field.to_owned(), value);
        return;
    }
    insert_nested(input, &segments, value);
}

/// Sets `value` at `segments` under `fields`, creating the objects on the way (every
/// intermediate is an object or absent: `path_is_open`).
fn insert_nested(fields: &mut Map<String, Value>, segments: &[&str], value: Value) {
    match segments {
        [] => {}
        [last] => {
            fields.insert((*last).to_owned(), value);
        }
        [first, rest @ ..] => {
            let slot = fields
                .entry((*first).to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(inner) = slot {
                insert_nested(inner, rest, value);
            }
        }
    }
}

/// Whether every intermediate of the path is an object or absent (rule 5 otherwise).
fn path_is_open(input: &Map<String, Value>, intermediates: &[&str]) -> bool {
    let mut fields = input;
    for segment in intermediates {
        match fields.get(*segment) {
            None => return true,
            Some(Value::Object(inner)) => fields = inner,
            Some(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mapped(literal: Value, mapping: Value, source: Value) -> Value {
        let mapping = mapping.as_object().cloned();
        build(Some(&literal), mapping.as_ref(), &source)
    }

    #[test]
    fn rule_1_starts_from_the_literal_input() {
        let input = mapped(json!({"country": "DE", "depth": 2}), json!({}), json!({}));
        assert_eq!(input, json!({"country": "DE", "depth": 2}));
        assert_eq!(build(None, None, &json!({"a": 1})), json!({}));
        assert_eq!(
            build(Some(&json!("not an object")), None, &json!({})),
            json!({})
        );
    }

    #[test]
    fn rule_2_mapped_values_override_literals_of_the_same_name() {
        let input = mapped(
            json!({"name": "literal", "country": "DE"}),
            json!({"name": "subject.fullName", "birth": "subject.dob"}),
            json!({"subject": {"fullName": "Ada Lovelace", "dob": "1815-12-10"}}),
        );
        assert_eq!(
            input,
            json!({"name": "Ada Lovelace", "country": "DE", "birth": "1815-12-10"})
        );
    }

    #[test]
    fn rule_3_an_unresolved_path_leaves_the_literal_or_nothing() {
        let input = mapped(
            json!({"name": "literal"}),
            json!({"name": "subject.missing", "other": "nowhere.at.all", "idx": "list.7"}),
            json!({"subject": {"fullName": "x"}, "list": [1, 2]}),
        );
        assert_eq!(input, json!({"name": "literal"}));
        // A key holding null resolves (to null); array indexes resolve.
        let input = mapped(
            json!({"name": "literal"}),
            json!({"name": "subject.nothing", "second": "list.1"}),
            json!({"subject": {"nothing": null}, "list": [1, 2]}),
        );
        assert_eq!(input, json!({"name": null, "second": 2}));
    }

    #[test]
    fn rule_4_dotted_fields_set_nested_paths_creating_objects() {
        let input = mapped(
            json!({}),
            json!({"person.name.first": "subject.first", "person.age": "subject.age"}),
            json!({"subject": {"first": "Ada", "age": 36}}),
        );
        assert_eq!(
            input,
            json!({"person": {"name": {"first": "Ada"}, "age": 36}})
        );
    }

    #[test]
    fn rule_4_literal_objects_are_merged_into_and_never_changed() {
        let literal = json!({"address": {"street": "Main St", "city": "literal city"}});
        let mapping = json!({"address.city": "subject.city", "address.zip": "subject.zip"});
        let source = json!({"subject": {"city": "Berlin", "zip": "10115"}});
        let before = literal.clone();
        let input = build(Some(&literal), mapping.as_object(), &source);
        assert_eq!(
            input,
            json!({"address": {"street": "Main St", "city": "Berlin", "zip": "10115"}})
        );
        assert_eq!(literal, before, "the definition's literal is untouched");
        // A parent mapped to a context object gets its children merged in, and the context
        // keeps its own value.
        let source = json!({"subject": {"address": {"street": "Elm"}, "zip": "1"}});
        let mapping = json!({"address.zip": "subject.zip", "address": "subject.address"});
        let input = build(None, mapping.as_object(), &source);
        assert_eq!(input, json!({"address": {"street": "Elm", "zip": "1"}}));
        assert_eq!(source["subject"]["address"], json!({"street": "Elm"}));
    }

    #[test]
    fn rule_5_a_non_object_intermediate_is_left_alone() {
        let input = mapped(
            json!({"address": "Main St 1"}),
            json!({"address.city": "subject.city", "deep.x.y": "subject.city"}),
            json!({"subject": {"city": "Berlin"}}),
        );
        assert_eq!(
            input,
            json!({"address": "Main St 1", "address.city": "Berlin", "deep": {"x": {"y": "Berlin"}}})
        );
        let input = mapped(
            json!({"a": {"b": 5}}),
            json!({"a.b.c": "v"}),
            json!({"v": true}),
        );
        assert_eq!(input, json!({"a": {"b": 5}, "a.b.c": true}));
    }

    #[test]
    fn odd_field_names_land_under_their_literal_key() {
        let input = mapped(
            json!({}),
            json!({".x": "v", "y.": "v", "": "v"}),
            json!({"v": 1}),
        );
        assert_eq!(input, json!({".x": 1, "y.": 1, "": 1}));
        // A mapping value that is not a path string is ignored.
        assert_eq!(
            mapped(json!({}), json!({"a": 3}), json!({"3": 1})),
            json!({})
        );
    }
}
