//! `delegation_shift`: large delegated power moved shortly before an on-chain proposal's voting
//! power was fixed.
//!
//! An OpenZeppelin or Compound governor weighs each vote by `getPastVotes(voter,
//! proposalSnapshot)`: power moved after the snapshot cannot count on the proposal, power moved
//! just before it can, and moving it there (borrowed tokens, a whale re-delegating after the
//! proposal is known) is what a delegate dashboard wants flagged. The rule reads the DAO's
//! notable delegation changes (each at least `NOTABLE_DELEGATION_MIN_SHARE` of the token's
//! supply, judged at ingestion) in the window that ends at the snapshot.
use bigdecimal::BigDecimal;

use super::{CitationRecord, Desired, Proposal, ShiftInput, dec};
use crate::contract::decimal;
use crate::contract::signals::{DELEGATION_SHIFT_WINDOW_MS, SignalKind};
use crate::contract::vocabulary::ProposalSource;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    if p.row.source != ProposalSource::Onchain {
        return None;
    }
    // The snapshot's time (on-chain proposals keep their voting start there).
    let snapshot = p.row.start_ms?;
    let changes = &p.ctx.notable_delegations;
    let from = changes.partition_point(|c| c.at_ms < snapshot - DELEGATION_SHIFT_WINDOW_MS);
    let to = changes.partition_point(|c| c.at_ms <= snapshot);
    let cited: Vec<ShiftInput> = changes[from..to].to_vec();
    let last = cited.last()?;
    let moved: BigDecimal = cited.iter().filter_map(|c| decimal::parse(&c.power_moved_raw).ok()).sum();
    let largest =
        cited.iter().max_by_key(|c| decimal::parse(&c.power_moved_raw).ok()).expect("at least one change is cited");
    let share = |c: &ShiftInput| match (decimal::parse(&c.power_moved_raw), decimal::parse(&c.supply_raw)) {
        (Ok(m), Ok(s)) if !bigdecimal::Zero::is_zero(&s) => {
            dec(&(m * BigDecimal::from(100) / s).with_scale_round(2, bigdecimal::RoundingMode::Down))
        }
        _ => "?".to_owned(),
    };
    let summary = format!(
        "{} notable delegation change{} moved {} raw units in the {} hours before voting power was fixed for \"{}\" \
         (largest: {} to {}, {}% of the supply).",
        cited.len(),
        if cited.len() == 1 { "" } else { "s" },
        dec(&moved),
        DELEGATION_SHIFT_WINDOW_MS / 3_600_000,
        p.title,
        largest.delegator,
        largest.to_delegate,
        share(largest),
    );
    let mut e = p.evidence(SignalKind::DelegationShift);
    e.window_start_ms = Some(snapshot - DELEGATION_SHIFT_WINDOW_MS);
    e.window_end_ms = Some(snapshot);
    e.citations.extend(cited.iter().map(|c| CitationRecord {
        supports: vec!["delegationChanges".to_owned()],
        source: ProposalSource::Onchain.as_str().to_owned(),
        url: None,
        snapshot_id: None,
        ipfs: None,
        tx_hash: Some(c.tx_hash.clone()),
        block_number: Some(c.block_number.to_string()),
    }));
    let detected = last.at_ms;
    e.delegation_changes = Some(cited);
    Some(p.signal(SignalKind::DelegationShift, detected, summary, e))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::fixtures::*;
    use super::super::{DaoContext, proposal_signals};
    use super::*;

    fn change(at_ms: i64, moved: &str) -> ShiftInput {
        ShiftInput {
            delegator: "0xholder".to_owned(),
            from_delegate: "0x0000000000000000000000000000000000000000".to_owned(),
            to_delegate: "0xdelegate".to_owned(),
            power_moved_raw: moved.to_owned(),
            supply_raw: "1000".to_owned(),
            decimals: 18,
            block_number: at_ms / 1000,
            log_index: 0,
            tx_hash: format!("0x{at_ms:x}"),
            at_ms,
        }
    }

    fn shift(source: ProposalSource, changes: Vec<ShiftInput>) -> Option<Desired> {
        let mut p = proposal("basic", "active", "0", "0");
        p.source = source;
        let ctx = DaoContext { notable_delegations: Arc::new(changes), ..DaoContext::default() };
        proposal_signals(&p, None, &ctx, END - H).into_iter().find(|d| d.kind == SignalKind::DelegationShift)
    }

    #[test]
    fn window_ends_at_the_snapshot() {
        let start = END - 100 * H;
        let before = |ms: i64| vec![change(start - ms, "10")];
        assert!(shift(ProposalSource::Onchain, before(0)).is_some(), "at the snapshot: counts");
        assert!(shift(ProposalSource::Onchain, before(DELEGATION_SHIFT_WINDOW_MS)).is_some(), "the window's start");
        assert!(shift(ProposalSource::Onchain, before(DELEGATION_SHIFT_WINDOW_MS + 1)).is_none(), "too early");
        assert!(shift(ProposalSource::Onchain, vec![change(start + 1, "10")]).is_none(), "after: cannot count");
        assert!(shift(ProposalSource::Snapshot, before(0)).is_none(), "on-chain proposals only");
    }

    #[test]
    fn cites_every_change_and_is_detected_at_the_last() {
        let start = END - 100 * H;
        let d = shift(
            ProposalSource::Onchain,
            vec![change(start - 80 * H, "1"), change(start - 2 * H, "7"), change(start - H, "30")],
        )
        .unwrap();
        assert_eq!(d.detected_ms, start - H);
        let cited = d.evidence.delegation_changes.unwrap();
        assert_eq!(cited.len(), 2, "the change 80 hours before is outside the window");
        assert!(d.summary.contains("2 notable delegation changes moved 37 raw units"), "{}", d.summary);
        assert!(d.summary.contains("3% of the supply"), "{}", d.summary);
        assert_eq!(d.natural_key, "delegation_shift:testdao:onchain:0xp");
    }
}
