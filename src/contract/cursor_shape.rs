//! What a v2 list's cursors are bound to: each list operation declares one type holding the
//! filters and sort of a request ([`cursor_shape!`], beside its handler), and that type
//! produces the filters of the list's [`QueryShape`]: each parameter by its public name, in a
//! fixed order, its value as text ([`ShapeText`]), absent ones empty. A handler fills its
//! operation's type; it never spells a parameter's name or formats a value for a cursor.
//!
//! Every cursor already issued carries its list's shape (as a fingerprint): a name, an order or
//! a value's text changed refuses every cursor in flight, so `api::v2`'s tests pin each shape.
#[cfg(doc)]
use super::cursor::QueryShape;
use super::events::{ActivityKind, EventKind};
use super::feed::{FeedKind, FeedPosition};
use super::operations::Operation;
use super::params::DaoScope;
use super::signals::{Severity, SignalKind};
use super::vocabulary::{ProposalSource, ProposalState};

/// The filters of one list operation's requests, as its cursors' query shape.
pub trait CursorShape {
    /// The list operation whose cursors the shape binds.
    type Op: Operation;
    /// Each parameter's public name and its value as text (empty when absent), in a fixed order.
    fn filters(&self) -> Vec<(&'static str, String)>;
}

/// How a filter's value reads in a query shape.
pub trait ShapeText {
    fn shape_text(&self) -> String;
}

impl<T: ShapeText + ?Sized> ShapeText for &T {
    fn shape_text(&self) -> String {
        (**self).shape_text()
    }
}

/// An absent filter is empty.
impl<T: ShapeText> ShapeText for Option<T> {
    fn shape_text(&self) -> String {
        self.as_ref().map(ShapeText::shape_text).unwrap_or_default()
    }
}

/// An address, a key, an id or a choice: as given.
impl ShapeText for str {
    fn shape_text(&self) -> String {
        self.to_owned()
    }
}

/// A time window in epoch milliseconds, `from..to`.
impl ShapeText for (i64, i64) {
    fn shape_text(&self) -> String {
        format!("{}..{}", self.0, self.1)
    }
}

/// A start in epoch milliseconds (`since`).
impl ShapeText for i64 {
    fn shape_text(&self) -> String {
        self.to_string()
    }
}

/// A `daoId` filter: [`DaoScope::shape`].
impl ShapeText for DaoScope {
    fn shape_text(&self) -> String {
        self.shape()
    }
}

/// A feed position: its sequence.
impl ShapeText for FeedPosition {
    fn shape_text(&self) -> String {
        self.0.to_string()
    }
}

/// Feed kinds: comma-joined, empty for every kind.
impl ShapeText for [FeedKind] {
    fn shape_text(&self) -> String {
        self.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(",")
    }
}

/// A vocabulary value: the text it is served as.
macro_rules! served_text {
    ($($name:ty),+) => {$(
        impl ShapeText for $name {
            fn shape_text(&self) -> String {
                self.as_str().to_owned()
            }
        }
    )+};
}

served_text!(EventKind, ActivityKind, SignalKind, Severity, ProposalSource, ProposalState);

/// Declares a list operation's shape type: a struct of its filters in shape order, each field
/// with the public name it is bound under, and its [`CursorShape`] for the operation.
macro_rules! cursor_shape {
    ($(#[$doc:meta])* $name:ident $(<$lt:lifetime>)? for $op:ty {
        $($field:ident: $ty:ty => $param:expr),+ $(,)?
    }) => {
        $(#[$doc])*
        pub struct $name $(<$lt>)? {
            $(pub $field: $ty),+
        }

        impl $(<$lt>)? $crate::contract::cursor_shape::CursorShape for $name $(<$lt>)? {
            type Op = $op;

            fn filters(&self) -> Vec<(&'static str, String)> {
                use $crate::contract::cursor_shape::ShapeText as _;
                vec![$(($param, self.$field.shape_text())),+]
            }
        }
    };
}

/// Used by each v2 list's controller, beside its handler.
pub(crate) use cursor_shape;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::vocabulary::DaoId;

    #[test]
    fn each_value_reads_as_cursors_have_always_carried_it() {
        let text = |v: &dyn ShapeText| v.shape_text();
        assert_eq!(text(&DaoScope::Dao(DaoId::from_request("Uniswap").unwrap())), "uniswap");
        assert_eq!(text(&DaoScope::NoDao("no.such".to_owned())), "no.such");
        assert_eq!(text(&DaoScope::NoDao(String::new())), "");
        assert_eq!(text(&DaoScope::Every), "");
        assert_eq!(text(&Some((1_000_i64, 2_000_i64))), "1000..2000");
        assert_eq!(text(&None::<(i64, i64)>), "");
        assert_eq!(text(&7_i64), "7");
        assert_eq!(text(&"0xab"), "0xab");
        assert_eq!(text(&Some(FeedPosition(42))), "42");
        assert_eq!(
            text(&[FeedKind::SignalRaised, FeedKind::ProposalClosed].as_slice()),
            "signal_raised,proposal_closed"
        );
        let every_kind: &[FeedKind] = &[];
        assert_eq!(text(&every_kind), "");
        assert_eq!(text(&Some(ActivityKind::Signal)), "signal");
        assert_eq!(text(&Some(EventKind::VoteCast)), "vote_cast");
        assert_eq!(text(&Some(SignalKind::CloseRace)), "close_race");
        assert_eq!(text(&Some(Severity::Warning)), "warning");
        assert_eq!(text(&Some(ProposalSource::Snapshot)), "snapshot");
        assert_eq!(text(&Some(ProposalState::Closed)), "closed");
        assert_eq!(text(&None::<ProposalState>), "");
    }
}
