//! The token's delegation history from its logs: delegation changes and power checkpoints with
//! their causes, the token's supply that says whether a change is notable, and the latest power
//! of each delegate and delegate of each delegator.
use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use alloy_primitives::{Address, B256, U256};
use bigdecimal::BigDecimal;
use serde_json::json;

use super::abi::*;
use super::connector::Modes;
use super::{GovernorConnector, lower};
use crate::contract::counting;
use crate::contract::events::notable_delegation;
use crate::contract::vocabulary::PowerCause;
use crate::ingest::Sink;
use crate::store::staging::{DelegateRecord, DelegationChangeRecord, DelegationRecord, PowerCheckpointRecord, Record};

/// Where a token log sits on chain.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    pub(super) block: u64,
    pub(super) index: i64,
    pub(super) tx: B256,
    pub(super) at_ms: i64,
}

/// The token's history as its logs come, in chain order: each `DelegateChanged` becomes a
/// delegation change and each `DelegateVotesChanged` a power checkpoint with its cause.
///
/// ERC20Votes (OpenZeppelin, Compound's Comp) emits, for a delegation, `DelegateChanged` and then
/// at most two `DelegateVotesChanged` (the old delegate losing the holder's units, the new one
/// gaining them) moving the same amount; for a transfer, mint or burn, `Transfer` and then the
/// same pair. Transfers are not read (a busy token has millions), so a checkpoint is the
/// delegation's when it directly follows that delegation in its transaction and moves the same
/// amount, and a transfer's otherwise.
pub(super) struct History<'a> {
    pub(super) dao_id: &'a str,
    pub(super) decimals: u32,
    /// The latest delegation change, until the checkpoints that follow it are seen.
    pub(super) open: Option<Open>,
}

pub(super) struct Open {
    record: DelegationChangeRecord,
    tx: B256,
    delegator: Address,
    /// The checkpoints attributed so far (at most two), and the amount they moved.
    attributed: u8,
    moved: Option<U256>,
}

impl History<'_> {
    /// Opens a delegation change; returns the one it closes, complete.
    pub(super) fn change(&mut self, e: &DelegateChanged, at: Place) -> Option<DelegationChangeRecord> {
        let done = self.finish();
        self.open = Some(Open {
            record: DelegationChangeRecord {
                dao_id: self.dao_id.to_owned(),
                delegator: lower(e.delegator),
                from_delegate: lower(e.fromDelegate),
                to_delegate: lower(e.toDelegate),
                power_moved_raw: "0".to_owned(),
                decimals: self.decimals,
                block_number: at.block as i64,
                log_index: at.index,
                tx_hash: format!("{:#x}", at.tx),
                at_ms: at.at_ms,
                supply_raw: None,
            },
            tx: at.tx,
            delegator: e.delegator,
            attributed: 0,
            moved: None,
        });
        done
    }

    pub(super) fn checkpoint(&mut self, e: &DelegateVotesChanged, at: Place) -> PowerCheckpointRecord {
        let delta =
            if e.newVotes >= e.previousVotes { e.newVotes - e.previousVotes } else { e.previousVotes - e.newVotes };
        let delegator = match &mut self.open {
            Some(o) if o.tx == at.tx && o.attributed < 2 && o.moved.is_none_or(|m| m == delta) => {
                o.attributed += 1;
                o.moved = Some(delta);
                Some(lower(o.delegator))
            }
            _ => None,
        };
        if delegator.is_none()
            && let Some(o) = &mut self.open
        {
            // Something else came between: the open change takes no later checkpoint.
            o.attributed = 2;
        }
        PowerCheckpointRecord {
            dao_id: self.dao_id.to_owned(),
            delegate: lower(e.delegate),
            previous_raw: e.previousVotes.to_string(),
            power_raw: e.newVotes.to_string(),
            decimals: self.decimals,
            cause: if delegator.is_some() { PowerCause::Delegation } else { PowerCause::Transfer },
            cause_delegator: delegator,
            block_number: at.block as i64,
            log_index: at.index,
            tx_hash: format!("{:#x}", at.tx),
            at_ms: at.at_ms,
        }
    }

    /// The open change, complete.
    pub(super) fn finish(&mut self) -> Option<DelegationChangeRecord> {
        self.open.take().map(|mut o| {
            o.record.power_moved_raw = o.moved.unwrap_or(U256::ZERO).to_string();
            o.record
        })
    }
}

impl GovernorConnector {
    /// The token's total supply at `block` (whose time is `at_ms`); `None` when the token
    /// answers neither way.
    async fn supply_at(&self, block: u64, at_ms: i64, modes: &Modes) -> Option<U256> {
        let token = &self.source.token;
        if let Ok(supply) = self.call_to(token, totalSupplyCall {}, json!(format!("{block:#x}"))).await {
            return Some(supply);
        }
        let timepoint = match counting::clock(modes.clock.as_deref()) {
            counting::Clock::Timestamp => U256::from(at_ms / 1000),
            counting::Clock::Blocknumber => U256::from(block),
        };
        match self.call_to(token, getPastTotalSupplyCall { timepoint }, json!("latest")).await {
            Ok(supply) => Some(supply),
            Err(e) => {
                tracing::warn!(dao = self.dao_id, block, "the token's supply is unreadable: {e:#}");
                None
            }
        }
    }

    /// A delegation change with the token's supply at its block when it is notable
    /// (`contract::events::notable_delegation`). The supply is read once per block, and only
    /// for changes that moved something: `totalSupply()` as of the block (any node that keeps
    /// that state: an archive node, anvil), else the token's own history of it,
    /// `getPastTotalSupply(timepoint)` (ERC20Votes; a timepoint of the token's clock). A token
    /// that answers neither leaves the change unjudged, never judged on a guess.
    pub(super) async fn judged(
        &self,
        mut change: DelegationChangeRecord,
        modes: &Modes,
        supplies: &mut HashMap<u64, Option<U256>>,
    ) -> DelegationChangeRecord {
        let Ok(moved) = change.power_moved_raw.parse::<U256>() else { return change };
        if moved.is_zero() {
            return change;
        }
        let block = change.block_number as u64;
        let supply = match supplies.get(&block) {
            Some(known) => *known,
            None => {
                let read = self.supply_at(block, change.at_ms, modes).await;
                supplies.insert(block, read);
                read
            }
        };
        if let Some(supply) = supply {
            let (m, s) = (BigDecimal::from_str(&moved.to_string()), BigDecimal::from_str(&supply.to_string()));
            if let (Ok(m), Ok(s)) = (m, s)
                && notable_delegation(&m, &s)
            {
                change.supply_raw = Some(supply.to_string());
            }
        }
        change
    }

    /// Stages the latest voting power of each delegate (as of `as_of_ms`) and the latest delegate
    /// of each delegator.
    pub(super) async fn stage_latest(
        &self,
        powers: BTreeMap<Address, (U256, u64)>,
        delegations: BTreeMap<Address, (Address, u64)>,
        as_of_ms: i64,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        for (delegate, (votes, _)) in powers {
            sink.push(Record::Delegate(DelegateRecord {
                dao_id: self.dao_id.clone(),
                address: lower(delegate),
                voting_power_raw: votes.to_string(),
                decimals: self.source.token_decimals,
                // Counted at publication from every delegation stored for the DAO.
                delegators_count: None,
                as_of_ms,
            }))
            .await?;
        }
        for (delegator, (delegate, block)) in delegations {
            sink.push(Record::Delegation(DelegationRecord {
                dao_id: self.dao_id.clone(),
                delegator: lower(delegator),
                delegate: lower(delegate),
                block_number: block as i64,
            }))
            .await?;
        }
        Ok(())
    }
}
