//! Enums that travel and are stored as their names: statuses, kinds, priorities, decisions,
//! failure codes, permissions. [`labels!`](crate::labels!) writes each once: its serde names,
//! `ALL`, `as_str` for binding it to a `text` column or writing it in a message, `parse`, and
//! `TryFrom<String>` for reading it back (sqlx's `#[sqlx(try_from = "String")]`), so no status
//! is ever compared as a string and no name table is written twice.

/// A name that names no value of the enum read (a row written by a newer build, or a column
/// outside the enum's check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is no {what}")]
pub struct Unknown {
    pub what: &'static str,
    pub text: String,
}

#[macro_export]
macro_rules! labels {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
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

            fn try_from(text: String) -> Result<Self, $crate::labels::Unknown> {
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
