//! `unusual_turnout`: a closed proposal's vote count is at least a factor above, or at most a
//! factor below, the median of the DAO's earlier closed proposals (with enough of them).
use bigdecimal::{BigDecimal, Zero};

use super::{Desired, Proposal, dec, threshold, vote_count};
use crate::contract::signals::{self as contract, SignalKind};
use crate::rules::tally;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    let (median, history) = p.ctx.turnout_history.as_ref().filter(|_| p.closed)?;
    let factor = threshold(contract::UNUSUAL_TURNOUT_FACTOR);
    let count = BigDecimal::from(vote_count(p.row));
    // A median of a few proposals, or of nothing, says nothing.
    if *history < contract::UNUSUAL_TURNOUT_MIN_HISTORY || *median <= BigDecimal::zero() {
        return None;
    }
    let high = count >= &factor * median;
    let low = &count * &factor <= *median;
    if !high && !low {
        return None;
    }
    let mut e = p.evidence(SignalKind::UnusualTurnout);
    e.median_upstream_votes = Some(dec(median));
    e.history_proposals = Some(history.to_string());
    e.turnout_ratio = Some(tally::share(&count, median));
    let summary = format!(
        "Unusually {} turnout on \"{}\": upstream vote count {} vs a median of {} over {} earlier closed proposals ({} \
         of the median).",
        if high { "high" } else { "low" },
        p.title,
        dec(&count),
        dec(median),
        history,
        tally::share(&count, median),
    );
    Some(p.signal(SignalKind::UnusualTurnout, p.detected, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// The summary of the last proposal's signal, given the upstream vote counts of one DAO.
    fn turnout(counts: &[i64]) -> Option<String> {
        eval_last(evaluate, &history(counts, &["0xa"; 8])).map(|d| d.summary)
    }

    #[test]
    fn high_boundary() {
        // Median 10 over 5 earlier proposals: at least 30 is high.
        assert!(turnout(&[10, 10, 10, 10, 10, 29]).is_none());
        assert!(turnout(&[10, 10, 10, 10, 10, 30]).unwrap().starts_with("Unusually high turnout"));
        assert!(turnout(&[10, 10, 10, 10, 10, 31]).unwrap().starts_with("Unusually high turnout"));
    }

    #[test]
    fn low_boundary() {
        // Median 9: at most 3 is low.
        assert!(turnout(&[9, 9, 9, 9, 9, 4]).is_none());
        assert!(turnout(&[9, 9, 9, 9, 9, 3]).unwrap().starts_with("Unusually low turnout"));
        assert!(turnout(&[9, 9, 9, 9, 9, 2]).unwrap().starts_with("Unusually low turnout"));
        // Median 10: 10/3 is not a count; 3 is below it, 4 above.
        assert!(turnout(&[10, 10, 10, 10, 10, 3]).unwrap().starts_with("Unusually low turnout"));
        assert!(turnout(&[10, 10, 10, 10, 10, 4]).is_none());
    }

    #[test]
    fn history_boundary() {
        assert!(turnout(&[10, 10, 10, 10, 30]).is_none(), "4 earlier closed proposals: too few");
        assert!(turnout(&[10, 10, 10, 10, 10, 30]).is_some(), "5: enough");
        assert!(turnout(&[0, 0, 0, 0, 0, 30]).is_none(), "a median of 0");
    }

    #[test]
    fn only_closed_proposals() {
        let mut ps = history(&[10, 10, 10, 10, 10, 30], &["0xa"; 6]);
        ps[5].state = crate::contract::vocabulary::ProposalState::Active;
        assert!(eval_last(evaluate, &ps).is_none());
    }

    #[test]
    fn evidence_and_summary() {
        let d = eval_last(evaluate, &history(&[10, 10, 10, 10, 10, 30], &["0xa"; 6])).unwrap();
        assert_eq!(d.evidence.turnout_ratio.as_deref(), Some("3"));
        assert_eq!(d.evidence.median_upstream_votes.as_deref(), Some("10"));
        assert_eq!(
            d.summary,
            "Unusually high turnout on \"T\": upstream vote count 30 vs a median of 10 over 5 earlier closed proposals \
             (3 of the median)."
        );
    }
}
