//! Enums that travel and are stored as their snake_case names: statuses, kinds, priorities,
//! decisions. [`labels!`] writes each once: its serde names, `as_str` for binding it to a `text`
//! column, `parse`, and `TryFrom<String>` for reading it back (sqlx's `#[sqlx(try_from =
//! "String")]`), so no status is ever compared as a string.

/// A name that names no value of the enum read (a row written by a newer build, or a column
/// outside the enum's check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is no {what}")]
pub struct Unknown {
    pub what: &'static str,
    pub text: String,
}

macro_rules! labels {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// Its name, as stored and sent.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }

            /// The value `text` names.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $( $text => Some(Self::$variant), )+
                    _ => None,
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::labels::Unknown;

            fn try_from(text: String) -> Result<Self, Self::Error> {
                Self::parse(&text).ok_or_else(|| $crate::labels::Unknown {
                    what: stringify!($name),
                    text,
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use labels;

#[cfg(test)]
mod tests {
    use crate::callbacks::SessionStatus;

    #[test]
    fn a_label_reads_back_as_itself_and_nothing_else() {
        for status in SessionStatus::ALL {
            assert_eq!(SessionStatus::parse(status.as_str()), Some(*status));
            let json = serde_json::to_value(status).expect("serialises");
            assert_eq!(json, serde_json::json!(status.as_str()));
            assert_eq!(SessionStatus::try_from(status.to_string()), Ok(*status));
        }
        assert_eq!(SessionStatus::TimedOut.as_str(), "timed_out");
        let unknown = SessionStatus::try_from("lost".to_owned()).expect_err("no such status");
        assert_eq!(unknown.to_string(), "\"lost\" is no SessionStatus");
        assert!(serde_json::from_str::<SessionStatus>("\"TimedOut\"").is_err());
    }
}
