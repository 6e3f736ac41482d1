//! `proposal_passed` / `proposal_failed`: the outcome of a closed proposal. Any proposal that
//! missed its quorum failed; a `basic` one that met it (or has none) passed iff For beat Against
//! in the complete tally (Abstain counts for neither). Other voting types have no outcome rule.
use bigdecimal::{BigDecimal, Zero};

use super::{Desired, Proposal, dec};
use crate::contract::signals::SignalKind;
use crate::rules::tally;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    if !p.closed {
        return None;
    }
    let quorum_failed = match (&p.scores_total, &p.quorum) {
        (Some(st), Some(q)) => Some(st < q),
        (None, Some(_)) => None, // a quorum with no score total: nothing can be said
        (_, None) => Some(false),
    };
    if quorum_failed == Some(true) {
        let (st, q) = (p.scores_total.clone().unwrap_or_default(), p.quorum.clone().unwrap_or_default());
        let mut e = p.with_quorum(p.evidence(SignalKind::ProposalFailed));
        e.outcome_basis = Some("quorum_not_reached".to_owned());
        let summary = format!(
            "\"{}\" failed: scores_total {} below quorum {} ({} of the quorum).",
            p.title,
            dec(&st),
            dec(&q),
            tally::share(&st, &q)
        );
        return Some(p.signal(SignalKind::ProposalFailed, p.detected, summary, e));
    }
    let basic = p.row.voting_type.as_deref() == Some("basic");
    // Only a complete tally is the result: the votes not held could turn it.
    let (Some(false), true, Some(f)) = (quorum_failed, basic, p.complete()) else {
        return None;
    };
    let zero = BigDecimal::zero();
    let score = |c: u32| f.tally.scores.get(&c).unwrap_or(&zero).clone();
    let (for_, against, abstain) = (score(1), score(2), score(3));
    // A tie fails: a proposal passes only when For beats Against.
    let passed = for_ > against;
    let kind = if passed { SignalKind::ProposalPassed } else { SignalKind::ProposalFailed };
    let mut e = p.with_tally(p.with_quorum(p.evidence(kind)), f);
    e.outcome_basis = Some("tally".to_owned());
    e.citations[0].supports = vec!["tally".to_owned(), "scoresTotal".to_owned(), "quorum".to_owned()];
    let quorum_text = match &p.quorum {
        Some(q) => format!("quorum {} met", dec(q)),
        None => "no quorum".to_owned(),
    };
    let summary = if passed {
        format!(
            "\"{}\" passed: For {} > Against {} (Abstain {}); {quorum_text}.",
            p.title,
            dec(&for_),
            dec(&against),
            dec(&abstain)
        )
    } else {
        format!(
            "\"{}\" failed: Against {} ≥ For {} (Abstain {}); {quorum_text}.",
            p.title,
            dec(&against),
            dec(&for_),
            dec(&abstain)
        )
    };
    Some(p.signal(kind, p.detected, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// The outcome of a closed proposal with these votes.
    fn outcome(voting_type: &str, scores_total: &str, quorum: &str, votes: &[(&str, &str, &str)]) -> Option<Desired> {
        eval(evaluate, &proposal(voting_type, "closed", scores_total, quorum), votes)
    }

    fn kind(voting_type: &str, scores_total: &str, quorum: &str, votes: &[(&str, &str, &str)]) -> Option<SignalKind> {
        outcome(voting_type, scores_total, quorum, votes).map(|d| d.kind)
    }

    #[test]
    fn for_against_boundary() {
        let basic = |f: &str, a: &str| kind("basic", "100", "50", &[("0x1", "1", f), ("0x2", "2", a)]);
        assert_eq!(basic("50.000001", "50"), Some(SignalKind::ProposalPassed));
        assert_eq!(basic("50", "50"), Some(SignalKind::ProposalFailed), "a tie fails");
        assert_eq!(basic("49.999999", "50"), Some(SignalKind::ProposalFailed));
    }

    #[test]
    fn abstain_does_not_count_against() {
        let d = outcome("basic", "100", "50", &[("0x1", "1", "10"), ("0x2", "2", "9"), ("0x3", "3", "81")]).unwrap();
        assert_eq!(d.kind, SignalKind::ProposalPassed);
        assert_eq!(d.summary, "\"T\" passed: For 10 > Against 9 (Abstain 81); quorum 50 met.");
    }

    #[test]
    fn quorum_boundary() {
        // Just below the quorum: failed whatever the tally, for any voting type.
        let short = outcome("basic", "49.99", "50", &[("0x1", "1", "49.99")]).unwrap();
        assert_eq!(short.kind, SignalKind::ProposalFailed);
        assert_eq!(short.evidence.outcome_basis.as_deref(), Some("quorum_not_reached"));
        assert_eq!(kind("single-choice", "49.99", "50", &[]), Some(SignalKind::ProposalFailed));
        // Exactly the quorum, or above: decided by the tally.
        for st in ["50", "50.01"] {
            let met = outcome("basic", st, "50", &[("0x1", "1", "50")]).unwrap();
            assert_eq!((met.kind, met.evidence.outcome_basis.as_deref()), (SignalKind::ProposalPassed, Some("tally")));
        }
    }

    #[test]
    fn no_outcome_without_a_rule_or_a_result() {
        // Other types with the quorum met (or none): no pass/fail rule.
        assert_eq!(kind("single-choice", "100", "50", &[("0x1", "1", "100")]), None);
        // Basic with no votes held: the outcome is unknown.
        assert_eq!(kind("basic", "100", "0", &[]), None);
        // Active proposals have no outcome yet.
        let active = proposal("basic", "active", "100", "0");
        assert!(eval_at(evaluate, &active, &[("0x1", "1", "1")], END - 100 * H).is_none());
    }
}
