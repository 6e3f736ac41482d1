//! The numbers a proposal's evidence states: each choice's exact score and share, and whether
//! the quorum is reached. Pure: the caller passes what the store holds.
use bigdecimal::{BigDecimal, Zero};

use super::tally::{self, Tally};
use crate::contract::{counting, decimal};

/// One choice with its exact score and its share of all choices' scores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceShare {
    /// 1-based, as Snapshot numbers choices; 0 for a choice the votes name but no label has.
    pub choice: u32,
    pub label: Option<String>,
    pub score: String,
    pub share: String,
}

/// Per-choice scores and where they come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChoiceShares {
    /// The upstream's own per-choice scores (all of them readable).
    Upstream(Vec<ChoiceShare>),
    /// Computed from the ingested votes: every labelled choice, and any other the votes name.
    IngestedVotes(Vec<ChoiceShare>),
}

/// The choices of a proposal with `labels` (upstream order, choice 1 first): from the upstream's
/// `upstream_scores` when every one of them is a readable decimal, else from the `tally` of the
/// ingested votes.
pub fn choice_shares(labels: &[String], upstream_scores: Option<&[String]>, tally: &Tally) -> ChoiceShares {
    let label = |i: u32| labels.get(i as usize - 1).cloned();
    let upstream: Option<Vec<BigDecimal>> = upstream_scores
        .and_then(|s| s.iter().map(|v| decimal::parse(v).ok()).collect::<Option<Vec<_>>>())
        .filter(|s| !s.is_empty());
    if let Some(scores) = upstream {
        let sum: BigDecimal = scores.iter().sum();
        let rows = scores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = i as u32 + 1;
                ChoiceShare { choice: n, label: label(n), score: tally::score_text(s), share: tally::share(s, &sum) }
            })
            .collect();
        return ChoiceShares::Upstream(rows);
    }
    let sum = tally.scores_sum();
    let mut indexes: Vec<u32> = (1..=labels.len() as u32).collect();
    indexes.extend(tally.scores.keys().filter(|c| **c as usize > labels.len() || **c == 0));
    indexes.sort_unstable();
    indexes.dedup();
    let rows = indexes
        .into_iter()
        .map(|n| {
            let score = tally.scores.get(&n).cloned().unwrap_or_else(BigDecimal::zero);
            ChoiceShare {
                choice: n,
                label: if n == 0 { None } else { label(n) },
                score: tally::score_text(&score),
                share: tally::share(&score, &sum),
            }
        })
        .collect();
    ChoiceShares::IngestedVotes(rows)
}

/// Where a proposal stands against its quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quorum {
    /// The upstream `scores_total` is at least the quorum.
    Reached,
    /// The upstream `scores_total` is below the quorum.
    NotReached,
    /// The quorum is zero: there is none to reach.
    NoQuorum,
    /// The quorum or the total is unknown or unreadable.
    Unknown,
}

/// The votes that count toward a proposal's quorum, exact: for an on-chain governor that declares
/// its counting (`COUNTING_MODE()`), the sum of the supports it counts (`contract::counting`;
/// For and Abstain for OpenZeppelin's modules, so Against never helps reach a quorum); otherwise
/// the upstream total, which Snapshot compares its quorum with.
pub fn quorum_votes(
    counting_mode: Option<&str>,
    scores: Option<&[String]>,
    scores_total: Option<&str>,
) -> Option<String> {
    match counting_mode.and_then(counting::quorum_counts) {
        Some(counts) => scores.and_then(|s| counting::counted(s, &counts)).map(|v| decimal::plain(&v)),
        None => scores_total.map(str::to_owned),
    }
}

/// Where the votes that count toward the quorum (`quorum_votes`, or the upstream `scores_total`)
/// stand against the `quorum`: reached at or above it.
pub fn quorum(quorum: Option<&str>, scores_total: Option<&str>) -> Quorum {
    let (Some(total), Some(quorum)) = (scores_total, quorum) else {
        return Quorum::Unknown;
    };
    match (decimal::parse(total), decimal::parse(quorum)) {
        (_, Ok(q)) if q.is_zero() => Quorum::NoQuorum,
        (Ok(t), Ok(q)) if t >= q => Quorum::Reached,
        (Ok(_), Ok(_)) => Quorum::NotReached,
        _ => Quorum::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn the_quorum_is_reached_at_exactly_the_quorum() {
        assert_eq!(quorum(Some("1000"), Some("999.999")), Quorum::NotReached);
        assert_eq!(quorum(Some("1000"), Some("1000")), Quorum::Reached);
        assert_eq!(quorum(Some("1000"), Some("1e3")), Quorum::Reached);
        assert_eq!(quorum(Some("0"), Some("5")), Quorum::NoQuorum);
        assert_eq!(quorum(Some("0"), Some("n/a")), Quorum::NoQuorum, "a zero quorum needs no total");
        assert_eq!(quorum(None, Some("5")), Quorum::Unknown);
        assert_eq!(quorum(Some("10"), Some("n/a")), Quorum::Unknown);
    }

    #[test]
    fn a_governor_counts_toward_its_quorum_what_it_declares() {
        let scores = ["900".to_owned(), "60".to_owned(), "40".to_owned()];
        let simple = Some("support=bravo&quorum=for,abstain");
        assert_eq!(quorum_votes(simple, Some(&scores), Some("1000")).as_deref(), Some("100"), "Against is not counted");
        assert_eq!(quorum(Some("100"), quorum_votes(simple, Some(&scores), None).as_deref()), Quorum::Reached);
        assert_eq!(quorum(Some("101"), quorum_votes(simple, Some(&scores), None).as_deref()), Quorum::NotReached);
        let bravo = Some("support=bravo&quorum=bravo");
        assert_eq!(quorum_votes(bravo, Some(&scores), None).as_deref(), Some("60"));
        assert_eq!(quorum_votes(None, Some(&scores), Some("1000")).as_deref(), Some("1000"), "Snapshot: the total");
        assert_eq!(quorum_votes(simple, None, Some("1000")), None, "no scores: unknown, not the total");
    }

    #[test]
    fn upstream_scores_are_used_when_all_are_readable() {
        let t = Tally::default();
        let upstream = labels(&["1", "3"]);
        let ChoiceShares::Upstream(rows) = choice_shares(&labels(&["For", "Against"]), Some(&upstream), &t) else {
            panic!("upstream scores are readable");
        };
        assert_eq!(
            rows[0],
            ChoiceShare { choice: 1, label: Some("For".into()), score: "1".into(), share: "0.25".into() }
        );
        assert_eq!(rows[1].share, "0.75");
        // One unreadable score: the ingested votes are counted instead.
        let bad = labels(&["1", "x"]);
        assert!(matches!(choice_shares(&labels(&["For", "Against"]), Some(&bad), &t), ChoiceShares::IngestedVotes(_)));
    }

    #[test]
    fn ingested_votes_list_every_label_and_any_unlabelled_choice() {
        let t =
            Tally { scores: BTreeMap::from([(2, BigDecimal::from(3)), (5, BigDecimal::from(1))]), ..Tally::default() };
        let ChoiceShares::IngestedVotes(rows) = choice_shares(&labels(&["A", "B"]), None, &t) else {
            panic!("no upstream scores");
        };
        let got: Vec<_> =
            rows.iter().map(|r| (r.choice, r.label.as_deref(), r.score.as_str(), r.share.as_str())).collect();
        assert_eq!(got, [(1, Some("A"), "0", "0"), (2, Some("B"), "3", "0.75"), (5, None, "1", "0.25")]);
    }
}
