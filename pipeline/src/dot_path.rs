//! Dot paths into JSON (`a.b.0.c`), as workflow input mappings and rules name a value of the
//! run's context or of an action's output.

use serde_json::Value;

/// The value at a dot path (`a.b.0.c`: object keys, and array indexes where the value is an
/// array), or `None` when any segment does not resolve. A key holding `null` resolves to it.
pub(crate) fn resolve<'v>(source: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return None;
    }
    path.split('.')
        .try_fold(source, |value, segment| match value {
            Value::Object(fields) => fields.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}
