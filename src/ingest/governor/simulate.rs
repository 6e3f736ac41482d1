//! Simulated effects (issue 47): each active, succeeded or queued proposal's actions executed
//! with revm on the state of the run's safe block (`head - confirmations`), read from the node
//! on demand, and staged as a `ProposalSimulation` record (`rules::actions::simulation` shapes
//! the answer).
//!
//! How the execution is modelled:
//! - The sender is the executor (the governor's timelock, or the governor where it has none),
//!   as `Decoding` found it; EIP-3607 is off so that a contract can send.
//! - The actions run in order, each as its own transaction over the same state, committed one
//!   after the other, as TimelockController's `executeBatch` (and the Governor's own execution)
//!   calls them one by one in one transaction. The first action that reverts reverts the whole
//!   execution, as the batch does: the answer is that action and its reason, with no logs and no
//!   balance changes. Gas is the actions' transactions' gas, summed (each counts the 21,000
//!   intrinsic gas a single transaction would not pay again).
//! - The actions' values are sent with the execution: the Governor's `execute` is payable and
//!   forwards `msg.value` to the timelock's `executeBatch`. The executor is credited with their sum
//!   before the actions run (paid by whoever executes, an account not among the changes), so
//!   its own balance changes only by what it sends beyond that.
//! - An action that calls the governor itself (a setting under `onlyGovernance`, such as
//!   `updateQuorumNumerator`) passes only when the Governor's `execute` queued the hash of its
//!   calldata first (OpenZeppelin's `_governanceCall`). Where such an action reverts, the queue's
//!   slot is found among the governor slots the call read (the one holding an empty
//!   `DoubleEndedQueue`: begin = end), the hash is queued there as `execute` would, and the
//!   action runs again; where no single slot fits, the revert stands.
//! - The block is the one after the safe block: its number + 1, its time + 12 s (one slot), no
//!   base fee, gas price 0. Each action may use `SIMULATION_GAS_PER_ACTION`.
//!
//! revm is synchronous: the simulation runs on a blocking thread (`spawn_blocking`), and each
//! state read blocks that thread on the runtime's handle, never a runtime thread. Reads are
//! bounded (`SIMULATION_STATE_READS`) and so is the time (`SIMULATION_TIMEOUT_SECS`): past
//! either, or when the node refuses a method (a JSON-RPC error), the simulation is kept as
//! failed with the reason. A node that cannot be reached keeps nothing (reported and retried on
//! the next run): a simulation is never a guess.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use anyhow::Context as _;
use revm::context::TxEnv;
use revm::context_interface::result::{EVMError, ExecResultAndState, ExecutionResult};
use revm::database::CacheDB;
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::primitives::TxKind;
use revm::state::{AccountInfo, Bytecode, EvmState};
use revm::{Context, DatabaseCommit, ExecuteEvm, MainBuilder, MainContext};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::GovernorConnector;
use super::actions::Decoding;
use crate::contract::limits::{
    SIMULATION_GAS_PER_ACTION, SIMULATION_REDO_BLOCKS, SIMULATION_STATE_READS, SIMULATION_TIMEOUT_SECS,
};
use crate::contract::vocabulary::{ProposalSource, ProposalState};
use crate::ingest::{Sink, UpstreamError};
use crate::rules::actions::simulation::{self, ActionRun, Outcome, RawLog, RevertInfo, Simulation};
use crate::rules::actions::{self, Known, ProposedAction, Revert};
use crate::store::staging::{ProposalRef, ProposalSimulationRecord, Record, SimulationInput};

/// What `prepare_simulation` read: the decoding context and the safe block's header.
pub struct PreparedSimulation {
    decoding: Decoding,
    header: Header,
    safe: u64,
}

/// One proposal the run may simulate: its state as the governor sees it now, its actions, and
/// its latest kept simulation (block, state).
pub(super) struct Candidate {
    pub(super) id: String,
    pub(super) state: ProposalState,
    pub(super) actions: Result<Vec<ProposedAction>, String>,
    pub(super) simulated: Option<(i64, String)>,
}

impl Candidate {
    /// Whether the proposal is simulated in this run at `safe`: it is in a simulated state, and
    /// it has no kept simulation, or one of another state, or one `SIMULATION_REDO_BLOCKS` old.
    pub(super) fn due(&self, safe: u64) -> bool {
        ProposalState::SIMULATED.contains(&self.state)
            && match &self.simulated {
                None => true,
                Some((block, state)) => {
                    state != self.state.as_str()
                        || safe.saturating_sub(u64::try_from(*block).unwrap_or(0)) >= SIMULATION_REDO_BLOCKS
                }
            }
    }
}

/// The stored actions of a proposal, as proposed.
pub(super) fn stored_actions(input: &SimulationInput) -> Result<Vec<ProposedAction>, String> {
    input
        .actions
        .iter()
        .map(|a| {
            let target = a.target.parse::<Address>().map_err(|e| format!("action {}: target: {e}", a.position))?;
            let value =
                U256::from_str_radix(&a.value_wei, 10).map_err(|e| format!("action {}: value: {e}", a.position))?;
            let calldata = alloy_primitives::hex::decode(&a.calldata)
                .map_err(|e| format!("action {}: calldata: {e}", a.position))?;
            Ok(ProposedAction { target, value, signature: a.signature.clone(), calldata })
        })
        .collect()
}

/// What the EVM sends for an action: the calldata, behind the signature's selector where the
/// proposer gave a signature (Compound's rule, `Timelock.executeTransaction`).
fn call_data(a: &ProposedAction) -> Bytes {
    match &a.signature {
        Some(signature) => {
            let mut data = keccak256(signature.as_bytes())[..4].to_vec();
            data.extend_from_slice(&a.calldata);
            data.into()
        }
        None => a.calldata.clone().into(),
    }
}

/// The safe block's header fields the simulated block follows.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    timestamp: U256,
    #[serde(default)]
    miner: Option<Address>,
    #[serde(default)]
    mix_hash: Option<B256>,
}

/// Why a simulation stopped short of a result.
#[derive(Debug, Clone)]
enum Stop {
    /// Kept as a failed simulation, with this reason.
    Failed(String),
    /// The node could not be reached: nothing is kept, the next run tries again.
    Unreachable(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Failed(m) | Stop::Unreachable(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Stop {}
impl DBErrorMarker for Stop {}

/// The state of one block, read from the node as the EVM asks for it.
struct Node {
    connector: GovernorConnector,
    handle: tokio::runtime::Handle,
    /// The block tag every read is pinned to (0x-hex).
    block: String,
    reads: AtomicU64,
    deadline: Instant,
}

impl Node {
    /// `method`, as the node answers it at the pinned block, counted against the bounds.
    fn read<T: DeserializeOwned>(&self, method: &'static str, params: serde_json::Value) -> Result<T, Stop> {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if n > SIMULATION_STATE_READS {
            return Err(Stop::Failed(format!(
                "the execution needs more than {SIMULATION_STATE_READS} state reads from the node"
            )));
        }
        let timeout = Stop::Failed(format!("the simulation took longer than {SIMULATION_TIMEOUT_SECS} s"));
        let left = self.deadline.checked_duration_since(Instant::now()).ok_or_else(|| timeout.clone())?;
        match self.handle.block_on(tokio::time::timeout(left, self.connector.rpc::<T>(method, params))) {
            Err(_) => Err(timeout),
            Ok(Ok(v)) => Ok(v),
            // The node answered with a JSON-RPC error (a method it does not serve, a state it
            // does not keep): an answer about this node, kept.
            Ok(Err(e)) => match e.downcast_ref::<UpstreamError>() {
                Some(UpstreamError::Protocol { reason, .. }) => {
                    Err(Stop::Failed(format!("the node refused a state read: {reason}")))
                }
                _ => Err(Stop::Unreachable(format!("{method}: {e:#}"))),
            },
        }
    }
}

impl DatabaseRef for Node {
    type Error = Stop;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Stop> {
        let balance: U256 = self.read("eth_getBalance", json!([address, self.block]))?;
        let nonce: U256 = self.read("eth_getTransactionCount", json!([address, self.block]))?;
        let code: Bytes = self.read("eth_getCode", json!([address, self.block]))?;
        let nonce = u64::try_from(nonce).map_err(|_| Stop::Failed(format!("{address}: nonce {nonce} out of range")))?;
        if balance.is_zero() && nonce == 0 && code.is_empty() {
            return Ok(None);
        }
        let code = Bytecode::new_raw(code);
        Ok(Some(AccountInfo::new(balance, nonce, code.hash_slow(), code)))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Stop> {
        // Never asked: every account is read with its code.
        Err(Stop::Failed(format!("code asked by hash ({code_hash}), which a node does not serve")))
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Stop> {
        let slot = B256::from(index);
        let value: B256 = self.read("eth_getStorageAt", json!([address, slot, self.block]))?;
        Ok(value.into())
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Stop> {
        #[derive(Deserialize)]
        struct Hashed {
            hash: B256,
        }
        let block: Option<Hashed> = self.read("eth_getBlockByNumber", json!([format!("{number:#x}"), false]))?;
        // A block the node does not know reads as BLOCKHASH does for one out of range: zero.
        Ok(block.map_or(B256::ZERO, |b| b.hash))
    }
}

impl GovernorConnector {
    /// Simulates every due candidate at `safe` and stages each answer.
    pub(super) async fn simulate_due(
        &self,
        candidates: Vec<Candidate>,
        decoding: &Decoding,
        safe: u64,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        let due: Vec<Candidate> = candidates.into_iter().filter(|c| c.due(safe)).collect();
        if due.is_empty() {
            return Ok(());
        }
        let header: Option<Header> = self.rpc("eth_getBlockByNumber", json!([format!("{safe:#x}"), false])).await?;
        let Some(header) = header else {
            sink.skip(format!("{}: block {safe} is unknown to the node: no simulation this run", self.dao_id));
            return Ok(());
        };
        for c in due {
            let started = Instant::now();
            let result = match c.actions {
                Ok(proposed) => self.simulate(proposed, decoding, safe, &header).await,
                Err(e) => Err(Stop::Failed(format!("the stored actions do not read: {e}"))),
            };
            let simulation = match result {
                Ok(s) => s,
                Err(Stop::Unreachable(e)) => {
                    sink.skip(format!(
                        "{}: proposal {}: not simulated, the node could not be read ({e}); tried again next run",
                        self.dao_id, c.id
                    ));
                    continue;
                }
                Err(Stop::Failed(why)) => failed(why, safe, decoding.base.executor, 0),
            };
            tracing::info!(
                dao = self.dao_id,
                proposal = c.id,
                block = safe,
                outcome = simulation.outcome.as_str(),
                reads = simulation.state_reads,
                ms = started.elapsed().as_millis() as u64,
                "proposal simulated"
            );
            sink.push(Record::ProposalSimulation(ProposalSimulationRecord {
                dao_id: self.dao_id.clone(),
                proposal: ProposalRef { source: ProposalSource::Onchain, external_id: c.id },
                block: safe as i64,
                state: c.state,
                outcome: simulation.outcome.as_str().to_owned(),
                result: serde_json::to_string(&simulation).expect("a simulation serialises"),
            }))
            .await?;
        }
        Ok(())
    }

    /// What a run reads once before simulating at `safe`: the executor (with the registry's
    /// ABIs) and the safe block's header. With `simulate_prepared`, one simulation outside a run,
    /// as `bench --simulate` measures it.
    pub async fn prepare_simulation(&self, safe: u64) -> anyhow::Result<PreparedSimulation> {
        let governor = self.source.governor.parse::<Address>().context("the registry's governor address")?;
        let decoding = self.decoding(governor).await?;
        let header: Option<Header> = self.rpc("eth_getBlockByNumber", json!([format!("{safe:#x}"), false])).await?;
        let header = header.with_context(|| format!("block {safe} is unknown to the node"))?;
        Ok(PreparedSimulation { decoding, header, safe })
    }

    /// One proposal's simulation, as a run makes it for each due proposal (`simulate_due`),
    /// including the state it reads from the node: a node that cannot be read is an error,
    /// anything else is the simulation (a failed one says why).
    pub async fn simulate_prepared(
        &self,
        prepared: &PreparedSimulation,
        proposed: Vec<ProposedAction>,
    ) -> anyhow::Result<Simulation> {
        match self.simulate(proposed, &prepared.decoding, prepared.safe, &prepared.header).await {
            Ok(s) => Ok(s),
            Err(Stop::Unreachable(e)) => Err(anyhow::anyhow!("the node could not be read: {e}")),
            Err(Stop::Failed(why)) => Ok(failed(why, prepared.safe, prepared.decoding.base.executor, 0)),
        }
    }

    /// One proposal's execution, on a blocking thread.
    async fn simulate(
        &self,
        proposed: Vec<ProposedAction>,
        decoding: &Decoding,
        safe: u64,
        header: &Header,
    ) -> Result<Simulation, Stop> {
        let node = Node {
            connector: self.clone(),
            handle: tokio::runtime::Handle::current(),
            block: format!("{safe:#x}"),
            reads: AtomicU64::new(0),
            deadline: Instant::now() + Duration::from_secs(SIMULATION_TIMEOUT_SECS),
        };
        let (known, executor, chain_id, header) =
            (decoding.base.known.clone(), decoding.base.executor, self.source.chain_id, header.clone());
        let governor = self.source.governor.parse::<Address>().map_err(|e| Stop::Failed(format!("governor: {e}")))?;
        tokio::task::spawn_blocking(move || {
            execute(node, &known, governor, executor, chain_id, safe, &header, &proposed)
        })
        .await
        .map_err(|e| Stop::Failed(format!("the simulation stopped: {e}")))?
    }
}

/// A simulation that could not run, and why.
fn failed(why: String, block: u64, executor: Address, reads: u64) -> Simulation {
    Simulation {
        outcome: Outcome::Failed,
        block,
        executor: executor.to_checksum(None),
        gas_used: None,
        actions: Vec::new(),
        revert: None,
        failure: Some(why),
        logs: Vec::new(),
        native_changes: Vec::new(),
        token_changes: Vec::new(),
        state_reads: reads,
    }
}

/// One action as its own transaction, not committed.
fn transact(
    cache: &mut CacheDB<Node>,
    tx: TxEnv,
    chain_id: u64,
    safe: u64,
    header: &Header,
) -> Result<ExecResultAndState<ExecutionResult, EvmState>, EVMError<Stop>> {
    let mut evm = Context::mainnet()
        .with_db(cache)
        .modify_block_chained(|b: &mut revm::context::BlockEnv| {
            b.number = U256::from(safe + 1);
            b.timestamp = header.timestamp.saturating_add(U256::from(12));
            b.beneficiary = header.miner.unwrap_or_default();
            b.prevrandao = Some(header.mix_hash.unwrap_or_default());
            b.basefee = 0;
        })
        .modify_cfg_chained(|c: &mut revm::context::CfgEnv| {
            c.chain_id = chain_id;
            c.disable_nonce_check = true;
            c.disable_eip3607 = true;
            c.tx_gas_limit_cap = Some(SIMULATION_GAS_PER_ACTION);
        })
        .build_mainnet();
    evm.transact(tx)
}

/// The governor's queue of governance calls (OpenZeppelin's `_governanceCall`, a
/// `DoubleEndedQueue` whose `_begin` and `_end` share one slot, `_begin` in the low half), as a
/// reverted call from the timelock read it: the one governor slot the call read whose two halves
/// are equal (an empty queue). `None` unless exactly one slot fits: then nothing is emulated.
fn governance_queue(state: &EvmState, governor: Address) -> Option<(U256, U256)> {
    let low = U256::from(u128::MAX);
    let mut empty = state
        .get(&governor)?
        .storage
        .iter()
        .filter(|(_, s)| (s.present_value >> 128) == (s.present_value & low))
        .map(|(k, s)| (*k, s.present_value));
    let first = empty.next()?;
    empty.next().is_none().then_some(first)
}

/// Runs `proposed` from `executor` over `node`'s state (blocking).
#[allow(clippy::too_many_arguments)]
fn execute(
    node: Node,
    known: &Known,
    governor: Address,
    executor: Address,
    chain_id: u64,
    safe: u64,
    header: &Header,
    proposed: &[ProposedAction],
) -> Result<Simulation, Stop> {
    let mut cache = CacheDB::new(node);
    let balance = |cache: &CacheDB<Node>, a: Address| -> Result<U256, Stop> {
        Ok(cache.basic_ref(a)?.map_or(U256::ZERO, |i| i.balance))
    };
    let mut before: BTreeMap<Address, U256> = BTreeMap::new();
    before.insert(executor, balance(&cache, executor)?);
    // The values come with the execution (`execute` is payable and forwards msg.value).
    let sent = proposed.iter().fold(U256::ZERO, |sum, a| sum.saturating_add(a.value));
    let account = cache.load_account(executor)?;
    account.info.balance = account.info.balance.saturating_add(sent);

    let mut runs = Vec::new();
    let mut raw = Vec::new();
    let mut revert = None;
    let mut gas = 0u64;
    for (position, action) in proposed.iter().enumerate() {
        let tx = TxEnv {
            caller: executor,
            kind: TxKind::Call(action.target),
            data: call_data(action),
            value: action.value,
            gas_limit: SIMULATION_GAS_PER_ACTION,
            gas_price: 0,
            chain_id: Some(chain_id),
            ..Default::default()
        };
        let mut outcome = transact(&mut cache, tx.clone(), chain_id, safe, header);
        // The Governor's own settings (`onlyGovernance`) accept a call from its timelock only
        // when `execute` queued the call's hash first: do what `execute` does, then call again.
        if let Ok(done) = &outcome
            && !done.result.is_success()
            && action.target == governor
            && executor != governor
            && let Some((slot, value)) = governance_queue(&done.state, governor)
        {
            let begin = value & U256::from(u128::MAX);
            cache.insert_account_storage(governor, slot, ((begin + U256::from(1)) << 128) | begin)?;
            let mut key = begin.to_be_bytes::<32>().to_vec();
            key.extend_from_slice(&(slot + U256::from(1)).to_be_bytes::<32>());
            let hash = keccak256(&tx.data);
            cache.insert_account_storage(
                governor,
                U256::from_be_bytes(keccak256(&key).0),
                U256::from_be_bytes(hash.0),
            )?;
            outcome = transact(&mut cache, tx, chain_id, safe, header);
        }
        let done = match outcome {
            Ok(done) => done,
            Err(EVMError::Database(stop)) => return Err(stop),
            Err(e) => {
                let reads = cache.db.reads.load(Ordering::Relaxed);
                return Ok(failed(format!("action {position} could not be executed: {e:?}"), safe, executor, reads));
            }
        };
        // Each account's balance before the execution: the first time an action touches it,
        // the state before that action (which no earlier action changed).
        for address in done.state.keys() {
            if !before.contains_key(address) {
                let pre = balance(&cache, *address)?;
                before.insert(*address, pre);
            }
        }
        let used = done.result.tx_gas_used();
        gas = gas.saturating_add(used);
        runs.push(ActionRun { position, success: done.result.is_success(), gas_used: used });
        match done.result {
            ExecutionResult::Success { logs, .. } => {
                raw.extend(logs.into_iter().map(|l| RawLog {
                    position,
                    address: l.address,
                    topics: l.data.topics().to_vec(),
                    data: l.data.data.to_vec(),
                }));
                cache.commit(done.state);
            }
            ExecutionResult::Revert { output, .. } => {
                let decoded = actions::decode_revert(known, Some(&action.target), &output);
                revert = Some(RevertInfo {
                    position,
                    data: actions::hex(&output),
                    halt: None,
                    decoded: serde_json::to_value(decoded).expect("a revert serialises"),
                });
                break;
            }
            ExecutionResult::Halt { reason, .. } => {
                revert = Some(RevertInfo {
                    position,
                    data: "0x".to_owned(),
                    halt: Some(format!("{reason:?}")),
                    decoded: serde_json::to_value(Revert::Empty).expect("a revert serialises"),
                });
                break;
            }
        }
    }
    let reads = cache.db.reads.load(Ordering::Relaxed);
    let executor_text = executor.to_checksum(None);
    if revert.is_some() {
        return Ok(Simulation {
            outcome: Outcome::Reverted,
            block: safe,
            executor: executor_text,
            gas_used: Some(gas),
            actions: runs,
            revert,
            failure: None,
            logs: Vec::new(),
            native_changes: Vec::new(),
            token_changes: Vec::new(),
            state_reads: reads,
        });
    }
    let mut after = BTreeMap::new();
    for address in before.keys() {
        after.insert(*address, balance(&cache, *address)?);
    }
    // The executor's `before` is its balance without the values the execution brings, so its
    // change is what it received and sent beyond them (nothing, when it only passes them on).
    Ok(Simulation {
        outcome: Outcome::Success,
        block: safe,
        executor: executor_text,
        gas_used: Some(gas),
        actions: runs,
        revert: None,
        failure: None,
        logs: simulation::logs(known, &raw),
        native_changes: simulation::native_changes(&before, &after),
        token_changes: simulation::token_changes(&raw),
        state_reads: reads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(state: ProposalState, simulated: Option<(i64, &str)>) -> Candidate {
        Candidate { id: "1".into(), state, actions: Ok(Vec::new()), simulated: simulated.map(|(b, s)| (b, s.into())) }
    }

    #[test]
    fn a_simulation_is_due_when_missing_when_the_state_changed_or_when_it_is_old() {
        let safe = 1_000;
        assert!(candidate(ProposalState::Active, None).due(safe));
        assert!(!candidate(ProposalState::Pending, None).due(safe), "pending: not simulated");
        assert!(!candidate(ProposalState::Executed, None).due(safe));
        assert!(!candidate(ProposalState::Active, Some((1_000, "active"))).due(safe));
        assert!(candidate(ProposalState::Succeeded, Some((1_000, "active"))).due(safe), "a new state");
        let fresh = safe - SIMULATION_REDO_BLOCKS + 1;
        assert!(!candidate(ProposalState::Queued, Some((fresh as i64, "queued"))).due(safe));
        assert!(candidate(ProposalState::Queued, Some((fresh as i64 - 1, "queued"))).due(safe), "old");
    }

    #[test]
    fn a_signature_puts_its_selector_before_the_arguments() {
        let a = ProposedAction {
            target: Address::ZERO,
            value: U256::ZERO,
            signature: Some("transfer(address,uint256)".into()),
            calldata: vec![1, 2],
        };
        assert_eq!(call_data(&a).to_vec(), [0xa9, 0x05, 0x9c, 0xbb, 1, 2]);
        let plain = ProposedAction { signature: None, ..a };
        assert_eq!(call_data(&plain).to_vec(), [1, 2]);
    }
}
