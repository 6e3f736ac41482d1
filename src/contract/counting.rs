//! How an on-chain governor counts votes, as the governor itself declares it: `COUNTING_MODE()`
//! (a URL query string, e.g. `support=bravo&quorum=for,abstain`, IGovernor) and `CLOCK_MODE()`
//! (ERC-6372: `mode=blocknumber&from=default` or `mode=timestamp`). The strings are kept and
//! served verbatim; this module reads what the API explains from them: which counting module
//! the governor uses and which votes count toward its quorum.
//!
//! OpenZeppelin's modules answer:
//! - `GovernorCountingSimple`: `support=bravo&quorum=for,abstain`;
//! - `GovernorCountingFractional`: `support=bravo,fractional&quorum=for,abstain&params=fractional`
//!   (a vote with `support = 255` splits its weight across Against/For/Abstain, in `params` as
//!   three packed `uint128`);
//! - the retired `GovernorCompatibilityBravo`: `support=bravo&quorum=bravo` (only For counts).
//!
//! Both count toward the quorum exactly as `_quorumReached` does:
//! `quorum(proposalSnapshot) <= sum of the counted supports`.
use bigdecimal::BigDecimal;
use poem_openapi::Enum;

use super::decimal;
use super::vocabulary::vocabulary;

vocabulary! {
    /// A governor's counting module, read from its `COUNTING_MODE()`.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    CountingModule ("counting module") {
        /// `GovernorCountingSimple` (or Compound's Bravo): one vote, all its weight to Against, For
        /// or Abstain.
        Simple = "simple",
        /// `GovernorCountingFractional`: a vote may split its weight across Against, For and
        /// Abstain, and a voter may vote again with what it has not used.
        Fractional = "fractional",
        /// A mode this API does not interpret; the mode text is served as the governor gave it.
        Other = "other",
    }
}

vocabulary! {
    /// A vote's support on a governor (`support`: 0, 1, 2).
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    Support ("support") {
        Against = "against",
        For = "for",
        Abstain = "abstain",
    }
}

impl Support {
    /// The index of the support in a governor's scores (`proposalVotes`: against, for, abstain),
    /// which is also its choice number less one.
    pub const fn index(self) -> usize {
        match self {
            Self::Against => 0,
            Self::For => 1,
            Self::Abstain => 2,
        }
    }
}

vocabulary! {
    /// What a timepoint counts (ERC-6372's clock mode): a proposal's snapshot, where every vote's
    /// voting power is read.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    Clock ("clock") {
        /// A block number (Snapshot proposals, on the space's network; governors whose
        /// `CLOCK_MODE()` is `mode=blocknumber`, or that declare none).
        Blocknumber = "blocknumber",
        /// A Unix time in seconds (governors whose `CLOCK_MODE()` is `mode=timestamp`).
        Timestamp = "timestamp",
    }
}

/// The clock a governor's `CLOCK_MODE()` names; a block number when it declares none (ERC-6372's
/// default, and GovernorBravo's).
pub fn clock(clock_mode: Option<&str>) -> Clock {
    if clock_mode.is_some_and(clock_is_timestamp) { Clock::Timestamp } else { Clock::Blocknumber }
}

/// `support = 255`: a fractional vote (`GovernorCountingFractional.VOTE_TYPE_FRACTIONAL`).
pub const FRACTIONAL_SUPPORT: u8 = 255;

/// One `key=value` of the mode's query string.
fn part<'a>(mode: &'a str, key: &str) -> Option<&'a str> {
    mode.split('&').find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
}

/// The counting module `mode` names.
pub fn module(mode: &str) -> CountingModule {
    let support = part(mode, "support").unwrap_or_default();
    let params = part(mode, "params").unwrap_or_default();
    if support.split(',').any(|s| s == "fractional") || params == "fractional" {
        CountingModule::Fractional
    } else if support == "bravo" {
        CountingModule::Simple
    } else {
        CountingModule::Other
    }
}

/// The supports whose votes count toward the quorum, in score order; `None` when the mode says
/// nothing this API reads.
pub fn quorum_counts(mode: &str) -> Option<Vec<Support>> {
    let quorum = part(mode, "quorum")?;
    if quorum == "bravo" {
        return Some(vec![Support::For]);
    }
    let mut counts = Vec::new();
    for s in quorum.split(',') {
        counts.push(match s {
            "for" => Support::For,
            "abstain" => Support::Abstain,
            "against" => Support::Against,
            _ => return None,
        });
    }
    counts.sort_by_key(|s| s.index());
    counts.dedup();
    (!counts.is_empty()).then_some(counts)
}

/// The votes that count toward the quorum: the sum of `scores` (against, for, abstain, exact
/// text) over the supports `counts`; `None` when a score is missing or unreadable.
pub fn counted(scores: &[String], counts: &[Support]) -> Option<BigDecimal> {
    counts.iter().try_fold(BigDecimal::from(0), |sum, s| Some(sum + decimal::parse(scores.get(s.index())?).ok()?))
}

/// Whether the clock mode counts in seconds (`mode=timestamp`) rather than block numbers.
pub fn clock_is_timestamp(clock: &str) -> bool {
    part(clock, "mode") == Some("timestamp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openzeppelin_modes_are_read() {
        let simple = "support=bravo&quorum=for,abstain";
        let fractional = "support=bravo,fractional&quorum=for,abstain&params=fractional";
        assert_eq!(module(simple), CountingModule::Simple);
        assert_eq!(module(fractional), CountingModule::Fractional);
        assert_eq!(module("support=bravo&quorum=bravo"), CountingModule::Simple);
        assert_eq!(module("support=custom"), CountingModule::Other);
        assert_eq!(quorum_counts(simple), Some(vec![Support::For, Support::Abstain]));
        assert_eq!(quorum_counts(fractional), Some(vec![Support::For, Support::Abstain]));
        assert_eq!(quorum_counts("support=bravo&quorum=for"), Some(vec![Support::For]));
        assert_eq!(quorum_counts("support=bravo&quorum=bravo"), Some(vec![Support::For]));
        assert_eq!(quorum_counts("support=bravo&quorum=majority"), None);
        assert_eq!(quorum_counts("support=bravo"), None);
    }

    #[test]
    fn counted_votes_are_exact() {
        let scores = ["7".to_owned(), "345043375299837213698988".to_owned(), "1".to_owned()];
        let counts = quorum_counts("support=bravo&quorum=for,abstain").unwrap();
        assert_eq!(decimal::plain(&counted(&scores, &counts).unwrap()), "345043375299837213698989");
        assert_eq!(decimal::plain(&counted(&scores, &[Support::For]).unwrap()), "345043375299837213698988");
        assert_eq!(counted(&scores[..1], &counts), None, "a missing score counts as unknown, not zero");
    }

    #[test]
    fn clocks() {
        assert!(clock_is_timestamp("mode=timestamp"));
        assert!(!clock_is_timestamp("mode=blocknumber&from=default"));
    }
}
