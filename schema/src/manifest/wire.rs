//! Wire forms of the manifest that differ from its typed fields.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// A whole number into `T`, also from a float without a fraction: JSON Schema's `integer`
/// accepts `64.0`, so the typed fields must too.
pub(super) fn whole_number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(f))
            .map(|f| f as u64)
    });
    whole
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("{number} is not a whole number in range")))
}

/// `needs` on the wire, a flag in the typed manifest.
pub(super) mod needs {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    const DOCUMENTS: &str = "documents";

    pub(in crate::manifest) fn serialize<S: Serializer>(
        documents: &bool,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let needs: &[&str] = if *documents { &[DOCUMENTS] } else { &[] };
        needs.serialize(serializer)
    }

    pub(in crate::manifest) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<bool, D::Error> {
        let needs = Vec::<String>::deserialize(deserializer)?;
        match needs.as_slice() {
            [] => Ok(false),
            [only] if only == DOCUMENTS => Ok(true),
            _ => Err(D::Error::custom("needs is [] or [\"documents\"]")),
        }
    }
}

/// `async: {callbackTimeoutSeconds}` on the wire, the number alone in the typed action.
pub(super) mod async_action {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Async {
        #[serde(deserialize_with = "super::whole_number")]
        callback_timeout_seconds: u32,
    }

    pub(in crate::manifest) fn serialize<S: Serializer>(
        seconds: &Option<u32>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        seconds
            .map(|callback_timeout_seconds| Async {
                callback_timeout_seconds,
            })
            .serialize(serializer)
    }

    pub(in crate::manifest) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u32>, D::Error> {
        Ok(Option::<Async>::deserialize(deserializer)?.map(|a| a.callback_timeout_seconds))
    }
}
