//! `quorum_at_risk`: an active proposal's upstream score total is well below its quorum with
//! little (but some) voting time left.
use bigdecimal::BigDecimal;

use super::{Desired, Proposal, dec, threshold};
use crate::contract::signals::{self as contract, SignalKind};
use crate::rules::tally;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    let (st, q) = (p.scores_total.as_ref()?, p.quorum.as_ref()?);
    // Some time left, at most the window: once voting is over the quorum is missed, not at risk.
    let left = p.time_left.filter(|&t| t > 0 && t <= contract::QUORUM_AT_RISK_WINDOW_MS)?;
    if !p.active || *st >= threshold(contract::QUORUM_AT_RISK_MAX_SHARE) * q {
        return None;
    }
    let summary = format!(
        "Quorum at risk on \"{}\": scores_total {} is {} of quorum {} with {} hours of voting left.",
        p.title,
        dec(st),
        tally::share(st, q),
        dec(q),
        dec(&(BigDecimal::from(left) / BigDecimal::from(3_600_000))),
    );
    let mut e = p.with_quorum(p.evidence(SignalKind::QuorumAtRisk));
    e.as_of_ms = Some(p.as_of);
    e.time_left_ms = Some(left.to_string());
    // Active, so detected at the data time.
    Some(p.signal(SignalKind::QuorumAtRisk, p.as_of, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn at(scores_total: &str, as_of: i64) -> Option<Desired> {
        eval_at(evaluate, &proposal("single-choice", "active", scores_total, "100"), &[], as_of)
    }

    #[test]
    fn quorum_share_boundary() {
        let window = contract::QUORUM_AT_RISK_WINDOW_MS;
        // Strictly below 0.8 of the quorum.
        assert!(at("79.999", END - window).is_some());
        assert!(at("80", END - window).is_none());
        assert!(at("81", END - window).is_none());
    }

    #[test]
    fn time_left_boundary() {
        let window = contract::QUORUM_AT_RISK_WINDOW_MS;
        // More than the window left: not yet; exactly the window: at risk.
        assert!(at("10", END - window - 1).is_none());
        assert!(at("10", END - window).is_some());
        // The last millisecond still counts; none left: over, not at risk.
        assert!(at("10", END - 1).is_some());
        assert!(at("10", END).is_none());
    }

    #[test]
    fn only_active_proposals() {
        assert!(eval_at(evaluate, &proposal("basic", "closed", "10", "100"), &[], END - H).is_none());
        assert!(eval_at(evaluate, &proposal("basic", "pending", "10", "100"), &[], END - H).is_none());
        assert!(eval_at(evaluate, &proposal("basic", "active", "10", "0"), &[], END - H).is_none(), "no quorum");
    }

    #[test]
    fn evidence_and_summary() {
        let risk = eval_at(evaluate, &proposal("basic", "active", "10", "100"), &[], END - H).unwrap();
        assert_eq!(risk.detected_ms, END - H);
        assert_eq!(risk.evidence.time_left_ms.as_deref(), Some("3600000"));
        assert_eq!(risk.evidence.quorum_share.as_deref(), Some("0.1"));
        assert!(
            risk.summary.contains("scores_total 10 is 0.1 of quorum 100 with 1 hours of voting left"),
            "{}",
            risk.summary
        );
    }
}
