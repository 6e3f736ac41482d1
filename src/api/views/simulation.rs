//! A proposal's simulated execution as served (`simulation` on a proposal's detail): built from
//! the kept answer (`rules::actions::simulation::Simulation`, JSON in `proposal_simulations`).
use poem_openapi::{Enum, Object};
use serde_json::Value;

use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ProposalState;
use crate::rules::actions::simulation::{self, Outcome};
use crate::store::entities::proposal_simulation;

/// How a simulated execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum SimulationOutcome {
    /// Every action succeeded.
    Success,
    /// An action reverted: the whole execution reverts, as the timelock's batch does.
    Reverted,
    /// The simulation could not run; `failure` says why. No result is shown.
    Failed,
}

/// What an on-chain proposal's actions would do if executed now: its actions run in order with
/// revm, on the state of the latest block govdata reads (the chain's head less the DAO's
/// confirmation depth), sent by the executor (the governor's timelock, or the governor), each
/// as its own transaction over the state the ones before it left; the first that reverts
/// reverts them all. The values the actions send come with the execution (`execute` is payable),
/// so the executor's own balance changes only by what it receives or sends beyond them. Kept for
/// active, succeeded and queued proposals, redone when the proposal's state changes or after
/// {{SIMULATION_REDO_BLOCKS}} blocks; never run on a request.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalSimulation {
    pub outcome: SimulationOutcome,
    /// The block whose state the actions ran on.
    pub block: i64,
    /// The proposal's state when it was simulated.
    pub proposal_state: ProposalState,
    pub simulated_at: Timestamp,
    /// The sender of the actions (checksummed): the timelock, or the governor.
    pub executor: String,
    /// Gas the actions used, summed, each counted as its own transaction (with its 21,000
    /// intrinsic gas); absent when the simulation failed.
    pub gas_used: Option<i64>,
    /// Why the simulation could not run (a node refusing a state read, more than
    /// {{SIMULATION_STATE_READS}} state reads, longer than {{SIMULATION_TIMEOUT_SECS}} s).
    pub failure: Option<String>,
    /// The actions that ran, in order, up to and including one that reverted.
    pub actions: Vec<SimulatedAction>,
    /// The action that reverted, and why.
    pub revert: Option<SimulationRevert>,
    /// The logs the execution would emit, in order (none when it reverts).
    pub logs: Vec<SimulatedLog>,
    /// Native currency balances that would change (wei, exact), from the state before and
    /// after.
    pub native_changes: Vec<NativeBalanceChange>,
    /// ERC-20 balances that would change, summed from the `Transfer` logs (raw integers in the
    /// token's smallest unit, exact, signed).
    pub token_changes: Vec<TokenBalanceChange>,
    /// The state reads (JSON-RPC requests) the simulation made.
    pub state_reads: i64,
}

/// One action as it ran.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct SimulatedAction {
    /// The action's index in the proposal, from 0.
    pub position: i32,
    pub success: bool,
    pub gas_used: i64,
}

/// The action that reverted and its revert data, decoded where a known error matches.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct SimulationRevert {
    /// The reverting action's index in the proposal, from 0.
    pub position: i32,
    /// The revert data, 0x-hex (`0x` for none).
    pub data: String,
    /// What stopped the action where it did not revert (out of gas, an invalid opcode).
    pub halt: Option<String>,
    /// The error's name (`Error`, `ERC20InsufficientBalance`), where the data decodes.
    pub error: Option<String>,
    /// The error's canonical signature.
    pub signature: Option<String>,
    /// `Error(string)`'s message, or what a `Panic(uint256)` code means.
    pub reason: Option<String>,
    /// The error's arguments, where the data decodes.
    pub arguments: Option<Vec<SimulationArgument>>,
    /// Why the data did not decode (`unknown_selector`, `too_short`, …), where it did not.
    pub undecoded: Option<String>,
}

/// One log the execution would emit, decoded where a known event matches.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct SimulatedLog {
    /// The index of the action that emitted it.
    pub position: i32,
    /// The emitting contract (checksummed).
    pub address: String,
    /// The topics, 0x-hex.
    pub topics: Vec<String>,
    /// The data, 0x-hex.
    pub data: String,
    /// The event's name, where the log decodes.
    pub event: Option<String>,
    /// The event's canonical signature.
    pub signature: Option<String>,
    /// The event's parameters in order, indexed ones marked.
    pub arguments: Option<Vec<SimulationArgument>>,
    /// Why the log did not decode (`unknown_selector`, `ambiguous_selector`, …), where it did not.
    pub undecoded: Option<String>,
}

/// One decoded argument of a log or error.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct SimulationArgument {
    /// The name the ABI gives it.
    pub name: Option<String>,
    /// The canonical Solidity type.
    #[oai(rename = "type")]
    pub ty: String,
    /// The value as text: integers exact decimal, addresses checksummed, bytes 0x-hex, booleans
    /// `true`/`false`; an array or tuple as its JSON text.
    pub value: String,
    /// A parameter in a topic (an indexed string, bytes, array or tuple is its hash there).
    pub indexed: Option<bool>,
}

/// A native balance that would change.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct NativeBalanceChange {
    /// The account (checksummed).
    pub address: String,
    /// Wei before, exact.
    pub before: String,
    /// Wei after, exact.
    pub after: String,
    /// `after - before`, exact and signed.
    pub change: String,
}

/// An ERC-20 balance that would change.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct TokenBalanceChange {
    /// The token contract (checksummed).
    pub token: String,
    /// The holder (checksummed).
    pub address: String,
    /// The net change in the token's smallest unit, exact and signed.
    pub change: String,
}

impl ProposalSimulation {
    /// The kept simulation, as served; `None` when the kept row does not read (a newer
    /// server's shape), which then serves nothing rather than a guess.
    pub fn from_model(m: &proposal_simulation::Model) -> Option<Self> {
        let s: simulation::Simulation = serde_json::from_str(&m.result).ok()?;
        Some(Self {
            outcome: match s.outcome {
                Outcome::Success => SimulationOutcome::Success,
                Outcome::Reverted => SimulationOutcome::Reverted,
                Outcome::Failed => SimulationOutcome::Failed,
            },
            block: m.block_number,
            proposal_state: ProposalState::parse(&m.proposal_state).ok()?,
            simulated_at: Timestamp::from_ms(m.simulated_ms),
            executor: s.executor,
            gas_used: s.gas_used.map(|g| i64::try_from(g).unwrap_or(i64::MAX)),
            failure: s.failure,
            actions: s
                .actions
                .iter()
                .map(|a| SimulatedAction {
                    position: a.position as i32,
                    success: a.success,
                    gas_used: i64::try_from(a.gas_used).unwrap_or(i64::MAX),
                })
                .collect(),
            revert: s.revert.map(|r| {
                let decoded = &r.decoded;
                SimulationRevert {
                    position: r.position as i32,
                    data: r.data,
                    halt: r.halt,
                    error: text(decoded, "error"),
                    signature: text(decoded, "signature"),
                    reason: text(decoded, "reason"),
                    arguments: arguments(decoded),
                    undecoded: (decoded["kind"] == "undecoded").then(|| text(decoded, "reason")).flatten(),
                }
            }),
            logs: s
                .logs
                .into_iter()
                .map(|l| {
                    let d = &l.decoded;
                    SimulatedLog {
                        position: l.position as i32,
                        address: l.address,
                        topics: l.topics,
                        data: l.data,
                        event: text(d, "event"),
                        signature: text(d, "signature"),
                        arguments: arguments(d),
                        undecoded: (d["kind"] == "undecoded").then(|| text(d, "reason")).flatten(),
                    }
                })
                .collect(),
            native_changes: s
                .native_changes
                .into_iter()
                .map(|c| NativeBalanceChange { address: c.address, before: c.before, after: c.after, change: c.change })
                .collect(),
            token_changes: s
                .token_changes
                .into_iter()
                .map(|c| TokenBalanceChange { token: c.token, address: c.address, change: c.change })
                .collect(),
            state_reads: i64::try_from(s.state_reads).unwrap_or(i64::MAX),
        })
    }
}

/// A text member of a decoded answer (`rules::actions` as JSON). An undecoded revert's or log's
/// `reason` is its reason code; a decoded revert's is its message.
fn text(v: &Value, key: &str) -> Option<String> {
    match (v["kind"].as_str(), key) {
        (Some("undecoded"), "reason") => v[key].as_str().map(str::to_owned),
        (Some("decoded"), _) => v[key].as_str().map(str::to_owned),
        _ => None,
    }
}

/// A decoded answer's arguments (`rules::actions::Argument` as JSON).
fn arguments(v: &Value) -> Option<Vec<SimulationArgument>> {
    if v["kind"] != "decoded" {
        return None;
    }
    let list = v["arguments"].as_array()?;
    Some(
        list.iter()
            .map(|a| SimulationArgument {
                name: a["name"].as_str().map(str::to_owned),
                ty: a["type"].as_str().unwrap_or_default().to_owned(),
                value: match &a["value"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                indexed: a["indexed"].as_bool(),
            })
            .collect(),
    )
}
