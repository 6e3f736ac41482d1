//! Where a stored value is parsed: the vocabulary (`contract::vocabulary`, `contract::events`,
//! `contract::signals`) as sea-orm column types, string-valued active enums over the existing text
//! columns (no schema change: each reports `String`'s column type); the JSON lists a proposal or a
//! forum topic holds ([`Choices`], [`Scores`], [`Tags`]) and a stored tally's per-choice scores
//! ([`TallyScores`]), typed over their text columns the same way.
//!
//! Entities and read rows carry these enums, so a value is parsed once, when its row is read,
//! and nothing downstream parses stored text again.
//!
//! **An unknown stored value fails the read.** Text a column holds that this build does not know
//! (a kind added by a newer writer, a typo written by hand) makes the row's decoding fail with
//! `DbErr::Type` naming the value and its vocabulary; the API answers such a failure as every
//! other store defect: a logged `store error` and a 500 `INTERNAL_ERROR`
//! (`store::failures::problem_marking_read_failed`). Why not skip the row: a skipped row makes a list, a total, a brief or
//! a cursor page silently incomplete while saying it is whole, and a value is never served as
//! another one. A loud failure is the only answer that stays honest, and it cannot happen with
//! the writers of this build (they write from the same enums). The same holds for a JSON list
//! column whose text is not an array of strings: every writer writes one from its `Vec<String>`
//! (`store::apply`, `sample`), so no stored row holds numbers or other values there; and for a
//! stored tally that is not the object [`TallyScores`] writes (`store::facts`).
use std::collections::BTreeMap;

use bigdecimal::BigDecimal;
use sea_orm::sea_query::{ArrayType, ColumnType, Nullable, Value, ValueType, ValueTypeErr};
use sea_orm::{ActiveEnum, ColIdx, ColumnDef, DbErr, QueryResult, TryGetError, TryGetable};

use crate::contract::decimal;
use crate::contract::events::EventKind;
use crate::contract::feed::FeedKind;
use crate::contract::signals::{Severity, SignalKind};
use crate::contract::vocabulary::{
    DaoId, ItemKind, PowerCause, ProposalSource, ProposalState, RunStatus, RunTrigger, SourceKind,
};

/// The column type of a type stored as text: `String`'s, its text parsed by `$parse`
/// (`&String` → `Result<Self, DbErr>`) when its row is read, a parse failure failing the read.
macro_rules! read_from_text {
    ($name:ident, $parse:expr) => {
        impl Nullable for $name {
            fn null() -> Value {
                <String as Nullable>::null()
            }
        }

        impl ValueType for $name {
            fn try_from(v: Value) -> Result<Self, ValueTypeErr> {
                let text = <String as ValueType>::try_from(v)?;
                $parse(&text).map_err(|_| ValueTypeErr)
            }

            fn type_name() -> String {
                stringify!($name).to_owned()
            }

            fn array_type() -> ArrayType {
                <String as ValueType>::array_type()
            }

            fn column_type() -> ColumnType {
                <String as ValueType>::column_type()
            }
        }

        impl TryGetable for $name {
            fn try_get_by<I: ColIdx>(res: &QueryResult, idx: I) -> Result<Self, TryGetError> {
                let text = <String as TryGetable>::try_get_by(res, idx)?;
                $parse(&text).map_err(TryGetError::DbErr)
            }
        }
    };
}

/// Makes each vocabulary a string-valued active enum (what `DeriveActiveEnum` with
/// `rs_type = "String"` generates, written here because `contract` stays free of the database).
macro_rules! stored_as_text {
    ($($name:ident),+ $(,)?) => {$(
        impl sea_orm::Iterable for $name {
            type Iterator = std::iter::Copied<std::slice::Iter<'static, Self>>;

            fn iter() -> Self::Iterator {
                Self::ALL.iter().copied()
            }
        }

        impl ActiveEnum for $name {
            type Value = String;
            type ValueVec = Vec<String>;

            fn name() -> sea_orm::sea_query::DynIden {
                sea_orm::sea_query::Alias::new(stringify!($name)).into()
            }

            fn to_value(&self) -> String {
                self.as_str().to_owned()
            }

            fn try_from_value(v: &String) -> Result<Self, DbErr> {
                Self::parse(v).map_err(|e| DbErr::Type(e.to_string()))
            }

            fn db_type() -> ColumnDef {
                sea_orm::prelude::ColumnTypeTrait::def(<String as ValueType>::column_type())
            }
        }

        impl From<$name> for Value {
            fn from(v: $name) -> Value {
                Value::from(v.as_str())
            }
        }

        read_from_text!($name, <$name as ActiveEnum>::try_from_value);
    )+};
}

stored_as_text!(
    SourceKind,
    ProposalSource,
    ItemKind,
    ProposalState,
    RunStatus,
    RunTrigger,
    EventKind,
    FeedKind,
    SignalKind,
    Severity,
    PowerCause
);

/// A DAO named in a query binds as its id's text (the `dao_id` columns hold the ids of the
/// registry, each a [`DaoId`]).
impl From<&DaoId> for Value {
    fn from(id: &DaoId) -> Value {
        Value::from(id.as_str())
    }
}

/// Makes each list a JSON-array-of-strings column type over the existing text column (no
/// schema change): written as the JSON text of its strings, parsed once when its row is read.
/// Text that is not a JSON array of strings fails the read, as an unknown vocabulary value does
/// (the writers of this build write only from these lists, `store::apply`).
macro_rules! stored_as_json_strings {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name(pub Vec<String>);

        impl $name {
            /// The text a column holds.
            pub fn to_json(&self) -> String {
                serde_json::to_string(&self.0).expect("a list of strings serialises")
            }

            /// The list a column's text holds.
            pub fn from_json(text: &str) -> Result<Self, DbErr> {
                serde_json::from_str(text).map(Self).map_err(|e| {
                    DbErr::Type(format!("`{text}` is not a JSON array of strings ({}): {e}", stringify!($name)))
                })
            }
        }

        impl From<$name> for Value {
            fn from(v: $name) -> Value {
                Value::from(v.to_json())
            }
        }

        read_from_text!($name, $name::from_json);
    )+};
}

stored_as_json_strings!(
    /// A proposal's choice labels, in upstream order (choice `n` is the `n`-th, from 1).
    Choices,
    /// A proposal's per-choice upstream scores, exact decimal text as received, in choice order.
    Scores,
    /// A forum topic's tags.
    Tags,
);

/// A stored tally's per-choice scores (`proposal_facts.scores`): each choice (1-based) → its
/// exact score and how many counted votes gave it a share. The column holds the JSON object
/// `{"<choice>":["<score>",<votes>],…}`, keys in text order (`"1"`, `"10"`, `"2"`) and scores as
/// `rules::tally::score_text` writes them: the text every store already holds. Parsed once when
/// its row is read; a key that is no choice number or a score that is no exact decimal fails the
/// read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TallyScores(pub BTreeMap<u32, (BigDecimal, u64)>);

impl TallyScores {
    /// The text the column holds.
    pub fn to_json(&self) -> String {
        let text: BTreeMap<String, (String, u64)> = self
            .0
            .iter()
            .map(|(choice, (score, votes))| (choice.to_string(), (crate::rules::tally::score_text(score), *votes)))
            .collect();
        serde_json::to_string(&text).expect("a map of strings serialises")
    }

    /// The scores the column's text holds.
    pub fn from_json(text: &str) -> Result<Self, DbErr> {
        let bad = |e: &dyn std::fmt::Display| DbErr::Type(format!("`{text}` is not a stored tally (TallyScores): {e}"));
        let stored: BTreeMap<String, (String, u64)> = serde_json::from_str(text).map_err(|e| bad(&e))?;
        stored
            .into_iter()
            .map(|(choice, (score, votes))| {
                let choice = choice.parse::<u32>().map_err(|e| bad(&e))?;
                Ok((choice, (decimal::parse(&score).map_err(|e| bad(&e))?, votes)))
            })
            .collect::<Result<_, DbErr>>()
            .map(Self)
    }
}

impl From<TallyScores> for Value {
    fn from(v: TallyScores) -> Value {
        Value::from(v.to_json())
    }
}

read_from_text!(TallyScores, TallyScores::from_json);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_is_the_served_text_and_unknown_text_fails() {
        for &s in ProposalState::ALL {
            assert_eq!(<ProposalState as ActiveEnum>::try_from_value(&s.as_str().to_owned()).ok(), Some(s));
            assert_eq!(Value::from(s), Value::from(s.as_str()));
        }
        let err = <SignalKind as ActiveEnum>::try_from_value(&"close-race".to_owned()).unwrap_err();
        assert_eq!(err.to_string(), "Type Error: `close-race` is not a known signal kind");
        assert_eq!(<EventKind as ValueType>::column_type(), <String as ValueType>::column_type());
    }

    #[test]
    fn json_lists_are_strings_or_fail() {
        let choices = Choices(vec!["For".into(), "Against".into()]);
        assert_eq!(choices.to_json(), r#"["For","Against"]"#);
        assert_eq!(Choices::from_json(&choices.to_json()).unwrap(), choices);
        assert!(Scores::from_json("[1, 2.5]").is_err(), "a number is no exact decimal text");
        assert!(Tags::from_json("not json").is_err());
        assert_eq!(<Scores as ValueType>::column_type(), <String as ValueType>::column_type());
    }

    #[test]
    fn tally_scores_keep_the_stored_text() {
        // Written before the column was typed (`BTreeMap<String, (String, u64)>` through serde_json):
        // keys in text order, plain exact scores.
        let stored = r#"{"1":["1234.5",3],"10":["0.000000000000000211",1],"2":["0",2]}"#;
        let scores = TallyScores::from_json(stored).unwrap();
        assert_eq!(scores.0.keys().copied().collect::<Vec<_>>(), [1, 2, 10]);
        assert_eq!(scores.0[&10], (decimal::parse("2.11e-16").unwrap(), 1));
        assert_eq!(scores.to_json(), stored);
        assert_eq!(TallyScores::default().to_json(), "{}");
        assert!(TallyScores::from_json(r#"{"one":["1",1]}"#).is_err(), "a key that is no choice number");
        assert!(TallyScores::from_json(r#"{"1":[1.5,1]}"#).is_err(), "a score that is no exact decimal text");
        assert!(TallyScores::from_json(r#"{"1":["1e",1]}"#).is_err(), "a score that is no decimal");
        assert_eq!(<TallyScores as ValueType>::column_type(), <String as ValueType>::column_type());
    }
}
