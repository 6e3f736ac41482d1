//! `quorum_reached`: the upstream score total reached the proposal's quorum (closed or active).
use super::{Desired, Proposal, dec};
use crate::contract::signals::SignalKind;
use crate::rules::tally;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    let (st, q) = (p.scores_total.as_ref()?, p.quorum.as_ref()?);
    // Pending proposals have no votes to count yet; a canceled one never will.
    if !(p.closed || p.active) || st < q {
        return None;
    }
    let summary = format!(
        "Quorum reached on \"{}\": scores_total {} ≥ quorum {} ({} of the quorum).",
        p.title,
        dec(st),
        dec(q),
        tally::share(st, q)
    );
    let mut e = p.with_quorum(p.evidence(SignalKind::QuorumReached));
    if !p.closed {
        e.as_of_ms = Some(p.as_of);
    }
    Some(p.signal(SignalKind::QuorumReached, p.detected, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn reached(state: &str, scores_total: &str, quorum: &str) -> bool {
        eval(evaluate, &proposal("basic", state, scores_total, quorum), &[("0x1", "1", "1")]).is_some()
    }

    #[test]
    fn quorum_boundary() {
        assert!(!reached("closed", "9999999.999999999", "10000000"), "just below");
        assert!(reached("closed", "10000000", "10000000"), "exactly the quorum");
        assert!(reached("closed", "10000000.000000001", "1e7"), "just above");
    }

    #[test]
    fn only_a_positive_quorum_of_a_voted_proposal() {
        assert!(!reached("closed", "5", "0"), "no quorum");
        assert!(!reached("pending", "10", "5"));
        assert!(!reached("canceled", "10", "5"));
        // Active: reached as of the data time.
        let d = eval_at(evaluate, &proposal("basic", "active", "10", "5"), &[], END - H).unwrap();
        assert_eq!((d.detected_ms, d.evidence.as_of_ms), (END - H, Some(END - H)));
        assert_eq!(d.evidence.quorum_share.as_deref(), Some("2"));
    }
}
