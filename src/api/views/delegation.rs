//! On-chain delegation changes as every surface serves them: a voter's history, a DAO's notable
//! changes and the feed's `delegation_changed` entries.
use poem_openapi::Object;

use crate::contract::{
    decimal::{self, DELEGATED_POWER_FROM_FLOAT},
    time::Timestamp,
};
use crate::store::staging::DelegationChangeRecord;

/// The address a token writes for "no delegate".
const NO_DELEGATE: &str = "0x0000000000000000000000000000000000000000";

/// Decimals of `shareOfSupply`.
const SHARE_DECIMALS: i64 = 6;

/// One change of delegation: a holder moving its votes from one delegate to another.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct DelegationChange {
    pub dao_id: String,
    /// The holder (lowercase 0x address).
    pub delegator: String,
    /// The delegate the holder left; absent when it had none.
    pub from_delegate: Option<String>,
    /// The delegate the holder chose; absent when it withdrew its delegation.
    pub to_delegate: Option<String>,
    /// The voting power that moved with the change (the holder's balance then), in token units,
    /// exact; 0 for a holder without tokens.
    pub voting_power_moved: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// The same power as the raw integer in the token's smallest unit.
    pub voting_power_moved_raw: String,
    pub decimals: i32,
    /// For a notable change only: the token's total supply at the block, raw integer in its
    /// smallest unit (`totalSupply()` as of the block).
    pub total_supply_raw: Option<String>,
    /// For a notable change only: the power moved ÷ that supply, rounded down to six decimals;
    /// at least {{NOTABLE_DELEGATION_SHARE}} by the rule that made the change notable.
    pub share_of_supply: Option<String>,
    pub block_number: String,
    /// The log's index in its block: with `blockNumber`, its place on chain.
    pub log_index: String,
    pub transaction_hash: String,
    /// The block's time.
    pub at: Timestamp,
}

impl poem_openapi::types::Example for DelegationChange {
    fn example() -> Self {
        Self {
            dao_id: "uniswap".to_owned(),
            delegator: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8".to_owned(),
            from_delegate: None,
            to_delegate: Some("0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned()),
            voting_power_moved: "7777777.777777777777777777".to_owned(),
            voting_power_from_float: false,
            voting_power_moved_raw: "7777777777777777777777777".to_owned(),
            decimals: 18,
            total_supply_raw: Some("1000000000000000000000000000".to_owned()),
            share_of_supply: Some("0.007777".to_owned()),
            block_number: "19000012".to_owned(),
            log_index: "41".to_owned(),
            transaction_hash: "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060".to_owned(),
            at: Timestamp::known("2026-03-01T12:00:00.000Z"),
        }
    }
}

/// Token units of a stored raw integer (stored valid by ingestion).
pub(crate) fn units(raw: &str, decimals: i32) -> String {
    decimal::scale_down(raw, decimals.max(0) as u32).map(|d| decimal::plain(&d)).unwrap_or_else(|_| raw.to_owned())
}

fn delegate_of(address: String) -> Option<String> {
    (address != NO_DELEGATE).then_some(address)
}

/// `moved ÷ supply`, rounded down to [`SHARE_DECIMALS`] decimals: a notable change is never
/// shown as more than it was.
fn share(moved: &str, supply: &str) -> Option<String> {
    let (moved, supply) = (decimal::parse(moved).ok()?, decimal::parse(supply).ok()?);
    if bigdecimal::Zero::is_zero(&supply) {
        return None;
    }
    let share = (moved / supply).with_scale_round(SHARE_DECIMALS, bigdecimal::RoundingMode::Down);
    Some(decimal::plain(&share))
}

/// A stored change as served (a row, or a feed entry's record of one).
pub(crate) fn change_item(c: impl Into<DelegationChangeRecord>) -> DelegationChange {
    let c: DelegationChangeRecord = c.into();
    DelegationChange {
        voting_power_moved: units(&c.power_moved_raw, c.decimals as i32),
        voting_power_from_float: DELEGATED_POWER_FROM_FLOAT,
        share_of_supply: c.supply_raw.as_deref().and_then(|s| share(&c.power_moved_raw, s)),
        total_supply_raw: c.supply_raw,
        voting_power_moved_raw: c.power_moved_raw,
        decimals: c.decimals as i32,
        dao_id: c.dao_id,
        delegator: c.delegator,
        from_delegate: delegate_of(c.from_delegate),
        to_delegate: delegate_of(c.to_delegate),
        block_number: c.block_number.to_string(),
        log_index: c.log_index.to_string(),
        transaction_hash: c.tx_hash,
        at: Timestamp::from_ms(c.at_ms),
    }
}
