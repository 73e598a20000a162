//! How a record of the wire contract (`topics`: a case, a run, a version) is read from a row.
//! [`row_of!`] declares the row once, field by field as its columns read, and its conversion
//! into the record: a label column (a status, a kind) reads as [`Label`] and becomes its enum,
//! any other field as itself ([`Column`]).

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::{Decode, Postgres, Type};
use topics::labels::Unknown;

/// The label a `text` column holds, read as its enum: a name the enum does not know fails the
/// read, naming the column's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label<T>(pub(crate) T);

impl<T> Type<Postgres> for Label<T> {
    fn type_info() -> PgTypeInfo {
        <String as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <String as Type<Postgres>>::compatible(ty)
    }
}

impl<'r, T: TryFrom<String, Error = Unknown>> Decode<'r, Postgres> for Label<T> {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <String as Decode<Postgres>>::decode(value)?;
        Ok(Label(T::try_from(text)?))
    }
}

/// A column's value as the record's field: itself, or a label's enum.
pub(crate) trait Column<T> {
    fn into_field(self) -> T;
}

impl<T> Column<T> for T {
    fn into_field(self) -> T {
        self
    }
}

impl<T> Column<T> for Label<T> {
    fn into_field(self) -> T {
        self.0
    }
}

impl<T> Column<Option<T>> for Option<Label<T>> {
    fn into_field(self) -> Option<T> {
        self.map(|Label(value)| value)
    }
}

/// Declares `struct $row`, read with `sqlx::FromRow`, and `From<$row>` for the record, whose
/// fields are the row's, each through [`Column`].
macro_rules! row_of {
    (
        $(#[$meta:meta])*
        struct $row:ident => $record:ty {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(sqlx::FromRow)]
        struct $row {
            $( $(#[$fmeta])* $field: $ty, )+
        }

        impl From<$row> for $record {
            fn from(row: $row) -> Self {
                Self {
                    $( $field: $crate::row::Column::into_field(row.$field), )+
                }
            }
        }
    };
}

pub(crate) use row_of;
