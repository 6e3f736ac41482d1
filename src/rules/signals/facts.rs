//! What the rules read, derived from rows: a proposal's vote facts (the tally, the two leading
//! choices, the weightiest votes) and its standing among its DAO's proposals.
//!
//! `store::facts` keeps the vote facts of every proposal (so publication never reads all votes
//! again) and uses [`leading_pair`] for them; [`analyse_votes`] is the same analysis over votes
//! held in memory, the reference the stored facts are checked against.
use std::collections::BTreeSet;

use bigdecimal::{BigDecimal, Zero};

use super::{DaoContext, Pair, ProposalInput, VoteFacts, VoteInput, is_closed, start_of, vote_count};
use crate::contract::decimal;
use crate::contract::voting::tally_method;
use crate::rules::tally::Tally;

/// The tally, the two leading choices and the weightiest votes of one proposal.
pub fn analyse_votes(p: &ProposalInput, votes: &[VoteInput]) -> VoteFacts {
    let vt = p.voting_type.as_deref();
    let mut tally = Tally::default();
    for v in votes {
        tally.add(vt, &v.choice, &v.voting_power);
    }
    let upstream = p.upstream_vote_count.unwrap_or(0);
    let complete = !votes.is_empty() && tally.votes_unreadable == 0 && votes.len() as i64 >= upstream;
    let pair = leading_pair(vt, &tally);
    let power = |v: &VoteInput| decimal::parse(&v.voting_power).unwrap_or_default();
    let largest = votes
        .iter()
        .filter(|v| decimal::parse(&v.voting_power).is_ok())
        .max_by(|a, b| power(a).cmp(&power(b)).then_with(|| b.voter.cmp(&a.voter)))
        .cloned();
    let most_effective = pair.as_ref().and_then(|pair| {
        let leader = pair.leader?;
        let runner_up = if leader == pair.first { pair.second } else { pair.first };
        votes
            .iter()
            .filter_map(|v| {
                let mut one = Tally::default();
                one.add(vt, &v.choice, &v.voting_power);
                let zero = BigDecimal::zero();
                let effect = one.scores.get(&leader).unwrap_or(&zero) - one.scores.get(&runner_up).unwrap_or(&zero);
                (effect > zero).then_some((v, effect))
            })
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.voter.cmp(&a.0.voter)))
            .map(|(v, e)| (v.clone(), e))
    });
    VoteFacts { tally, complete, votes: votes.len() as u64, pair, largest, most_effective }
}

/// For and Against for `basic` (Abstain decides nothing), the top two choices otherwise; none
/// where the store's tally does not decide the outcome (ranked-choice and copeland first
/// preferences, quadratic allocations: `contract::voting`) or when nothing was counted.
pub fn leading_pair(voting_type: Option<&str>, tally: &Tally) -> Option<Pair> {
    if !tally_method(voting_type).decides() {
        return None;
    }
    let zero = BigDecimal::zero();
    let score = |c: u32| tally.scores.get(&c).cloned().unwrap_or_else(BigDecimal::zero);
    let (first, second, first_score, second_score, counted) = match voting_type {
        Some("basic") => {
            let (f, a) = (score(1), score(2));
            let counted = &f + &a;
            (1, 2, f, a, counted)
        }
        _ => {
            let ranked = tally.ranked();
            let (c1, s1) = ranked.first().cloned()?;
            let (c2, s2) = ranked.get(1).cloned().unwrap_or((0, BigDecimal::zero()));
            (c1, c2, s1, s2, tally.scores_sum())
        }
    };
    if counted <= zero {
        return None;
    }
    let leader = match first_score.cmp(&second_score) {
        std::cmp::Ordering::Greater => Some(first),
        std::cmp::Ordering::Less => Some(second),
        std::cmp::Ordering::Equal => None,
    };
    let margin = (&first_score - &second_score).abs();
    Some(Pair { leader, first, second, first_score, second_score, margin, counted })
}

/// Each proposal's standing in its DAO, in the order of `proposals` (sorted by DAO, creation
/// time, external id).
pub fn dao_contexts(proposals: &[ProposalInput]) -> Vec<DaoContext> {
    let mut out = vec![DaoContext::default(); proposals.len()];
    let mut start = 0;
    while start < proposals.len() {
        let dao_id = &proposals[start].dao_id;
        let end = start + proposals[start..].iter().take_while(|p| &p.dao_id == dao_id).count();
        let group = &proposals[start..end];
        // new_author: earlier proposals, in the given order.
        let mut authors: BTreeSet<&str> = BTreeSet::new();
        for (i, p) in group.iter().enumerate() {
            out[start + i].prior_proposals = i as u64;
            out[start + i].first_by_author = authors.insert(p.author.as_str());
        }
        // unusual_turnout: closed proposals that started strictly earlier, by start time.
        let mut closed: Vec<usize> = (0..group.len()).filter(|&i| is_closed(&group[i])).collect();
        closed.sort_by_key(|&i| (start_of(&group[i]), i));
        let mut history: Vec<i64> = Vec::new();
        let mut j = 0;
        while j < closed.len() {
            let t = start_of(&group[closed[j]]);
            let same: Vec<usize> = closed[j..].iter().copied().take_while(|&i| start_of(&group[i]) == t).collect();
            for &i in &same {
                out[start + i].turnout_history = median(&history).map(|m| (m, history.len() as u64));
            }
            for &i in &same {
                let n = vote_count(&group[i]);
                let at = history.partition_point(|&x| x <= n);
                history.insert(at, n);
            }
            j += same.len();
        }
        start = end;
    }
    out
}

/// The exact median of sorted values.
fn median(sorted: &[i64]) -> Option<BigDecimal> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        BigDecimal::from(sorted[n / 2])
    } else {
        (BigDecimal::from(sorted[n / 2 - 1]) + BigDecimal::from(sorted[n / 2])) / BigDecimal::from(2)
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn races_are_judged_only_on_tallies_that_decide() {
        let mut t = Tally::default();
        t.add(Some("single-choice"), "1", "10");
        t.add(Some("single-choice"), "2", "9.9");
        assert!(leading_pair(Some("single-choice"), &t).is_some());
        for voting_type in ["ranked-choice", "copeland", "quadratic"] {
            assert!(leading_pair(Some(voting_type), &t).is_none(), "{voting_type}");
        }
    }

    #[test]
    fn turnout_history_is_the_exact_median_of_earlier_closed_proposals() {
        let a = ["0xa"; 7];
        // Odd history (9..13): the middle value.
        let ps = history(&[9, 10, 11, 12, 13, 14], &a);
        assert_eq!(dao_contexts(&ps)[5].turnout_history, Some((decimal::parse("11").unwrap(), 5)));
        // Even history (9..14): the exact mean of the middle two.
        let ps = history(&[9, 10, 11, 12, 13, 14, 0], &a);
        assert_eq!(dao_contexts(&ps)[6].turnout_history, Some((decimal::parse("11.5").unwrap(), 6)));
        // The first proposal has no history.
        assert_eq!(dao_contexts(&ps)[0].turnout_history, None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn authors_are_new_once_per_dao() {
        let ps = history(&[1, 1, 1], &["0xa", "0xb", "0xa"]);
        let ctx = dao_contexts(&ps);
        let firsts: Vec<(u64, bool)> = ctx.iter().map(|c| (c.prior_proposals, c.first_by_author)).collect();
        assert_eq!(firsts, [(0, true), (1, true), (2, false)]);
    }
}
