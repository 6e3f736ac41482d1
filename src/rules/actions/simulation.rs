//! A proposal's simulated execution as it is kept and served: the outcome, the logs it would
//! emit (decoded where an ABI is known), and the native and ERC-20 balance changes per address.
//!
//! Pure: ingestion runs the EVM (`ingest::governor::simulate`) and hands over what it saw; this
//! module shapes it. Amounts are exact decimal text; a change is signed (`-12345`).
use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256, b256};
use serde::{Deserialize, Serialize};

use super::{Known, decode_log, hex};

/// `Transfer(address,address,uint256)`: ERC-20's with two indexed parameters (three topics),
/// ERC-721's with three (four topics, not a fungible amount).
pub const TRANSFER_TOPIC: B256 = b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// How a simulation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every action succeeded.
    Success,
    /// An action reverted (or halted): the whole execution reverts, as the executor's batch does.
    Reverted,
    /// The simulation could not run (`failure` says why): no result is shown.
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Reverted => "reverted",
            Outcome::Failed => "failed",
        }
    }
}

/// One simulation of a proposal's actions, as kept (JSON) and served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Simulation {
    pub outcome: Outcome,
    /// The block whose state the execution ran on (the connector's confirmation-depth block).
    pub block: u64,
    /// The account the actions were sent from (the timelock, or the governor), checksummed.
    pub executor: String,
    /// Gas the actions used, summed (each as its own transaction: 21,000 intrinsic gas each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gas_used: Option<u64>,
    /// The actions that ran, in order: up to and including the one that reverted.
    #[serde(default)]
    pub actions: Vec<ActionRun>,
    /// Which action reverted, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<RevertInfo>,
    /// Why the simulation could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The logs the execution would emit, in order (none when it reverts).
    #[serde(default)]
    pub logs: Vec<SimulatedLog>,
    /// Native currency balance changes (wei), from the state before and after.
    #[serde(default)]
    pub native_changes: Vec<BalanceChange>,
    /// ERC-20 balance changes, summed from the `Transfer` logs.
    #[serde(default)]
    pub token_changes: Vec<TokenChange>,
    /// State reads the simulation asked the node for.
    pub state_reads: u64,
}

/// One action as it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRun {
    /// The action's index in the proposal, from 0.
    pub position: usize,
    pub success: bool,
    pub gas_used: u64,
}

/// The action that reverted, with its revert data decoded (`rules::actions::Revert` as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertInfo {
    pub position: usize,
    /// 0x-hex revert data (empty for a halt).
    pub data: String,
    /// What stopped it where it is not a revert (out of gas, an invalid opcode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt: Option<String>,
    /// `rules::actions::Revert`, as it serialises.
    pub decoded: serde_json::Value,
}

/// One log the execution would emit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulatedLog {
    /// The action that emitted it.
    pub position: usize,
    /// The emitting contract, checksummed.
    pub address: String,
    pub topics: Vec<String>,
    pub data: String,
    /// `rules::actions::Log`, as it serialises.
    pub decoded: serde_json::Value,
}

/// A native balance before and after, with the change (signed), all exact wei.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BalanceChange {
    pub address: String,
    pub before: String,
    pub after: String,
    pub change: String,
}

/// An ERC-20 balance change (signed, exact, in the token's smallest unit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenChange {
    pub token: String,
    pub address: String,
    pub change: String,
}

/// A log as the EVM gave it.
pub struct RawLog {
    pub position: usize,
    pub address: Address,
    pub topics: Vec<B256>,
    pub data: Vec<u8>,
}

/// The logs, decoded where `known` (or the bundled table) has the event.
pub fn logs(known: &Known, raw: &[RawLog]) -> Vec<SimulatedLog> {
    raw.iter()
        .map(|l| SimulatedLog {
            position: l.position,
            address: l.address.to_checksum(None),
            topics: l.topics.iter().map(|t| hex(t.as_slice())).collect(),
            data: hex(&l.data),
            decoded: serde_json::to_value(decode_log(known, &l.address, &l.topics, &l.data))
                .expect("a decoded log serialises"),
        })
        .collect()
}

/// `plus - minus` as signed decimal text.
fn signed(plus: U256, minus: U256) -> String {
    if plus >= minus { (plus - minus).to_string() } else { format!("-{}", minus - plus) }
}

/// Each (token, holder)'s net ERC-20 change from the `Transfer` logs (three topics, one word of
/// data), nets of zero left out, and the zero address (mint and burn) too: it holds no balance.
/// Ordered by token, then holder.
pub fn token_changes(raw: &[RawLog]) -> Vec<TokenChange> {
    let mut net: BTreeMap<(Address, Address), (U256, U256)> = BTreeMap::new();
    for l in raw {
        if l.topics.len() != 3 || l.topics[0] != TRANSFER_TOPIC || l.data.len() != 32 {
            continue;
        }
        let from = Address::from_word(l.topics[1]);
        let to = Address::from_word(l.topics[2]);
        let amount = U256::from_be_slice(&l.data);
        let out = net.entry((l.address, from)).or_default();
        out.1 = out.1.saturating_add(amount);
        let into = net.entry((l.address, to)).or_default();
        into.0 = into.0.saturating_add(amount);
    }
    net.into_iter()
        .filter(|((_, holder), (plus, minus))| *holder != Address::ZERO && plus != minus)
        .map(|((token, holder), (plus, minus))| TokenChange {
            token: token.to_checksum(None),
            address: holder.to_checksum(None),
            change: signed(plus, minus),
        })
        .collect()
}

/// The native balances that differ between `before` and `after` (both per address), ordered
/// by address.
pub fn native_changes(before: &BTreeMap<Address, U256>, after: &BTreeMap<Address, U256>) -> Vec<BalanceChange> {
    after
        .iter()
        .filter_map(|(address, post)| {
            let pre = before.get(address).copied().unwrap_or(U256::ZERO);
            (pre != *post).then(|| BalanceChange {
                address: address.to_checksum(None),
                before: pre.to_string(),
                after: post.to_string(),
                change: signed(*post, pre),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use alloy_primitives::address;

    use super::*;

    fn transfer(token: Address, from: Address, to: Address, amount: u128) -> RawLog {
        RawLog {
            position: 0,
            address: token,
            topics: vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            data: U256::from(amount).to_be_bytes::<32>().to_vec(),
        }
    }

    #[test]
    fn token_changes_are_summed_per_token_and_holder_exactly() {
        let token = address!("1111111111111111111111111111111111111111");
        let other = address!("2222222222222222222222222222222222222222");
        let (a, b) = (
            address!("00000000000000000000000000000000000000aa"),
            address!("00000000000000000000000000000000000000bb"),
        );
        let big = 12_345_678_901_234_567_890_123u128;
        let raw = vec![
            transfer(token, a, b, big),
            transfer(token, b, a, 3),
            transfer(other, Address::ZERO, a, 5),
            // An ERC-721 Transfer (the id in a fourth topic) moves no fungible amount.
            RawLog {
                topics: vec![TRANSFER_TOPIC, a.into_word(), b.into_word(), B256::ZERO],
                data: vec![],
                ..transfer(token, a, b, 0)
            },
            // A transfer back and forth nets to nothing and is left out.
            transfer(other, a, b, 9),
            transfer(other, b, a, 9),
        ];
        let changes = token_changes(&raw);
        let got: Vec<(String, String, String)> = changes.into_iter().map(|c| (c.token, c.address, c.change)).collect();
        let cs = |x: Address| x.to_checksum(None);
        assert_eq!(
            got,
            vec![
                (cs(token), cs(a), format!("-{}", big - 3)),
                (cs(token), cs(b), (big - 3).to_string()),
                (cs(other), cs(a), "5".to_owned()),
            ]
        );
    }

    #[test]
    fn native_changes_are_signed_and_only_where_a_balance_moved() {
        let (a, b, c) = (
            address!("00000000000000000000000000000000000000aa"),
            address!("00000000000000000000000000000000000000bb"),
            address!("00000000000000000000000000000000000000cc"),
        );
        let before = BTreeMap::from([(a, U256::from(10)), (b, U256::from(5))]);
        let after = BTreeMap::from([(a, U256::from(3)), (b, U256::from(5)), (c, U256::from(7))]);
        let changes = native_changes(&before, &after);
        assert_eq!(changes.len(), 2);
        assert_eq!(
            (changes[0].before.as_str(), changes[0].after.as_str(), changes[0].change.as_str()),
            ("10", "3", "-7")
        );
        assert_eq!((changes[1].before.as_str(), changes[1].change.as_str()), ("0", "7"));
    }
}
