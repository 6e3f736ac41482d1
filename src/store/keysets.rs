//! Where each v2 list resumes: one keyset type per list order, read off the last row served
//! (by the `keyset` method the list's module gives its row) and handed back to the seek of the
//! read that continues the list. This module names no row type, so every list may import it and
//! none is imported back.
//! A cursor carries it as text, written and read by `contract::cursor` only
//! ([`Keyset`]): nothing between the store and the cursor restates an order.
//!
//! | list                                              | order                              | keyset            |
//! |---------------------------------------------------|------------------------------------|-------------------|
//! | DAOs                                              | id asc                             | [`DaoAfter`]      |
//! | proposals                                         | created or end time desc, id desc  | [`TimeAfter`]     |
//! | a proposal's votes                                | power desc, voter asc; or time     | [`VoteAfter`]     |
//! | a DAO's voters                                    | power desc, voter asc (with rank)  | [`RankAfter`]     |
//! | a voter's votes, events, signals, forum topics    | time desc, id desc                 | [`TimeAfter`]     |
//! | activity                                          | time desc, entry asc, id desc      | [`ActivityAfter`] |
//! | the feed                                          | sequence asc                       | [`FeedAfter`]     |
//! | a voter's delegation changes and power checkpoints | time, block, log index, all desc   | [`LogAfter`]      |
//! | a DAO's delegates                                 | power desc, address asc (with rank)| [`RankAfter`]     |
//! | a proposal's actions                              | position asc                       | [`PositionAfter`] |
use bigdecimal::BigDecimal;

use super::address::AccountBytes;
use super::sort_keys::parse_amount;
use crate::contract::{cursor::Keyset, decimal};

/// After a row of an `(time desc, id desc)` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeAfter {
    pub ms: i64,
    pub id: i64,
}

impl Keyset for TimeAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.ms.to_string(), self.id.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [ms, id] => Some(Self { ms: ms.parse().ok()?, id: id.parse().ok()? }),
            _ => None,
        }
    }
}

/// After an action of a proposal's actions, in position order (its primary key's second part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionAfter(pub i32);

impl Keyset for PositionAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [position] => position.parse().ok().filter(|p| *p >= 0).map(Self),
            _ => None,
        }
    }
}

/// After a token log of a list newest first: its block's time, then its place on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAfter {
    pub ms: i64,
    pub block: i64,
    pub log: i64,
}

impl Keyset for LogAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.ms.to_string(), self.block.to_string(), self.log.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [ms, block, log] => Some(Self { ms: ms.parse().ok()?, block: block.parse().ok()?, log: log.parse().ok()? }),
            _ => None,
        }
    }
}

/// After a DAO of the list ordered by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaoAfter(pub String);

impl Keyset for DaoAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.0.clone()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        values.first().map(|id| Self(id.clone()))
    }
}

/// After a file of the export list: its DAO, then its name (`votes.parquet`) in declared order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportAfter {
    pub dao_id: String,
    pub file: String,
}

impl Keyset for ExportAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.dao_id.clone(), self.file.clone()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [dao_id, file] => Some(Self { dao_id: dao_id.clone(), file: file.clone() }),
            _ => None,
        }
    }
}

/// A voting power in a position: the exact value, which a cursor carries as a plain decimal
/// (shorter than the key), and the sort key the seek compares, rebuilt from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PowerKey {
    pub value: BigDecimal,
    pub sort: String,
}

impl PowerKey {
    /// The power of a row: its exact text (stored valid) and its stored sort key.
    pub(super) fn of(voting_power: &str, vp_sort: &str) -> Self {
        Self { value: decimal::parse(voting_power).unwrap_or_default(), sort: vp_sort.to_owned() }
    }

    fn text(&self) -> String {
        decimal::plain(&self.value)
    }

    fn read(text: &str) -> Option<Self> {
        let (value, sort) = parse_amount(text).ok()?;
        Some(Self { value, sort })
    }
}

/// Vote list orders: the `Order` a [`VoteAfter`] is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteOrder {
    /// Largest voting power first, then voter address (`ix_votes_proposal_power`; on PostgreSQL
    /// with the choice indexes, `store::vote_arms`).
    Power,
    /// Newest first (the choice + time index's walks merged, `store::vote_arms`).
    Time,
}

/// After a vote of a proposal's votes, in one of its orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoteAfter {
    Power { power: PowerKey, voter: AccountBytes },
    Time(TimeAfter),
}

impl Keyset for VoteAfter {
    type Order = VoteOrder;
    fn values(&self) -> Vec<String> {
        match self {
            Self::Power { power, voter } => vec![power.text(), voter.lower()],
            Self::Time(t) => t.values(),
        }
    }
    fn read(values: &[String], order: VoteOrder) -> Option<Self> {
        match (order, values) {
            (VoteOrder::Power, [power, voter]) => {
                Some(Self::Power { power: PowerKey::read(power)?, voter: AccountBytes::parse(voter).ok()? })
            }
            (VoteOrder::Power, _) => None,
            (VoteOrder::Time, _) => TimeAfter::read(values, ()).map(Self::Time),
        }
    }
}

/// After a voter of a DAO's ranking, with the rank it was served at (the next page counts on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankAfter {
    pub power: PowerKey,
    pub voter: String,
    pub rank: u64,
}

impl Keyset for RankAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.power.text(), self.voter.clone(), self.rank.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [power, voter, rank] => {
                Some(Self { power: PowerKey::read(power)?, voter: voter.clone(), rank: rank.parse().ok()? })
            }
            _ => None,
        }
    }
}

/// After an entry of the activity feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityAfter {
    pub ms: i64,
    /// `activity::ENTRY_EVENT` or `activity::ENTRY_SIGNAL`.
    pub entry: String,
    pub id: i64,
}

impl Keyset for ActivityAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.ms.to_string(), self.entry.clone(), self.id.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [ms, entry, id] => Some(Self { ms: ms.parse().ok()?, entry: entry.clone(), id: id.parse().ok()? }),
            _ => None,
        }
    }
}

/// After an entry of the feed: its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedAfter(pub i64);

impl Keyset for FeedAfter {
    type Order = ();
    fn values(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }
    fn read(values: &[String], (): ()) -> Option<Self> {
        match values {
            [seq] => seq.parse().ok().map(Self),
            _ => None,
        }
    }
}

/// After a row of a list keyed by one integer, as the feed is by its sequence: a partner's
/// webhooks by row id (ascending), a webhook's attempts by row id (descending: before it).
pub use FeedAfter as IdAfter;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_read_back_as_written() {
        let time = TimeAfter { ms: 1_700_000_000_000, id: 42 };
        assert_eq!(TimeAfter::read(&time.values(), ()), Some(time));
        let power = PowerKey::read("1234.50").unwrap();
        assert_eq!(power.text(), "1234.5");
        assert_eq!(power.sort, "20412345");
        let voter = AccountBytes::parse("0x00000000000000000000000000000000000000aa").unwrap();
        let vote = VoteAfter::Power { power: power.clone(), voter };
        assert_eq!(VoteAfter::read(&vote.values(), VoteOrder::Power), Some(vote.clone()));
        assert_eq!(VoteAfter::read(&vote.values(), VoteOrder::Time), None, "a power position is no time position");
        let rank = RankAfter { power, voter: "0xab".into(), rank: 26 };
        assert_eq!(RankAfter::read(&rank.values(), ()), Some(rank));
        let entry = ActivityAfter { ms: 5, entry: "signal".into(), id: 7 };
        assert_eq!(ActivityAfter::read(&entry.values(), ()), Some(entry));
        let log = LogAfter { ms: 5, block: 19_000_000, log: 311 };
        assert_eq!(LogAfter::read(&log.values(), ()), Some(log));
        assert_eq!(TimeAfter::read(&["5".into()], ()), None);
        assert_eq!(TimeAfter::read(&["x".into(), "1".into()], ()), None);
    }
}
