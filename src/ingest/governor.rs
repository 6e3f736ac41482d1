//! On-chain governors over Ethereum JSON-RPC: OpenZeppelin Governor and Compound GovernorBravo
//! (which share every event signature read here), and the governance token's delegation events.
//!
//! Logs are read with `eth_getLogs` in bounded block ranges (halved when a node refuses a range)
//! up to `head - confirmations`, so a reorg cannot rewrite what was stored; the next run resumes
//! after the last block read. Events are decoded by ABI types. Amounts are uint256 and stay
//! exact: decimal text of the integer in the token's smallest unit (wei).
//!
//! The proposal state, the tallies and the quorum come from the governor itself (`state`,
//! `proposalVotes`, `quorum`), read for every proposal the run saw and every stored one that can
//! still change.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

use bigdecimal::BigDecimal;

use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_sol_types::{SolCall, SolEvent, sol};
use anyhow::{Context, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::registry::OnchainSource;
use super::{Connector, Resume, Sink, Upstream, UpstreamError};
use crate::contract::counting::{self, CountingModule};
use crate::contract::events::notable_delegation;
use crate::contract::vocabulary::{PowerCause, ProposalSource, ProposalState};
use crate::store::apply::Watermark;
use crate::store::staging::{
    DelegateRecord, DelegationChangeRecord, DelegationRecord, PowerCheckpointRecord, ProposalRecord, ProposalRef,
    ProposalUpdate, Record, VoteRecord,
};

sol! {
    event ProposalCreated(uint256 proposalId, address proposer, address[] targets, uint256[] values, string[] signatures, bytes[] calldatas, uint256 voteStart, uint256 voteEnd, string description);
    event VoteCast(address indexed voter, uint256 proposalId, uint8 support, uint256 weight, string reason);
    event VoteCastWithParams(address indexed voter, uint256 proposalId, uint8 support, uint256 weight, string reason, bytes params);
    event ProposalQueued(uint256 proposalId, uint256 etaSeconds);
    event ProposalExecuted(uint256 proposalId);
    event ProposalCanceled(uint256 proposalId);
    event DelegateVotesChanged(address indexed delegate, uint256 previousVotes, uint256 newVotes);
    event DelegateChanged(address indexed delegator, address indexed fromDelegate, address indexed toDelegate);

    function state(uint256 proposalId) external view returns (uint8);
    function proposalVotes(uint256 proposalId) external view returns (uint256 againstVotes, uint256 forVotes, uint256 abstainVotes);
    function proposalSnapshot(uint256 proposalId) external view returns (uint256);
    function proposalDeadline(uint256 proposalId) external view returns (uint256);
    function quorum(uint256 timepoint) external view returns (uint256);
    function COUNTING_MODE() external view returns (string);
    function CLOCK_MODE() external view returns (string);
    function usedVotes(uint256 proposalId, address account) external view returns (uint256);
    function totalSupply() external view returns (uint256);
    function getPastTotalSupply(uint256 timepoint) external view returns (uint256);
}

pub const ORIGIN: &str = "governor-logs";
/// Simple counting: Against = 0, For = 1, Abstain = 2. A vote's choice is `support + 1`, so it
/// indexes these labels from 1 as Snapshot choices do.
pub const CHOICES: [&str; 3] = ["Against", "For", "Abstain"];
/// `IGovernor.ProposalState`, in enum order (GovernorBravo's is the same).
const STATES: [ProposalState; 8] = [
    ProposalState::Pending,
    ProposalState::Active,
    ProposalState::Canceled,
    ProposalState::Defeated,
    ProposalState::Succeeded,
    ProposalState::Queued,
    ProposalState::Expired,
    ProposalState::Executed,
];

pub struct GovernorConnector {
    pub upstream: Upstream,
    pub dao_id: String,
    pub source: OnchainSource,
}

#[derive(Debug, Deserialize)]
struct RpcResponse<T> {
    result: Option<T>,
    error: Option<RpcError>,
}

#[derive(Debug, Deserialize)]
struct RpcError {
    code: i64,
    message: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Log {
    address: Address,
    topics: Vec<B256>,
    data: Bytes,
    block_number: U256,
    #[serde(default)]
    log_index: Option<U256>,
    /// The block's time, which recent nodes (geth, reth, anvil) put in each log: when present, no
    /// `eth_getBlockByNumber` is needed for it.
    #[serde(default)]
    block_timestamp: Option<U256>,
    transaction_hash: Option<B256>,
    #[serde(default)]
    removed: bool,
}

#[derive(Debug, Deserialize)]
struct Block {
    timestamp: U256,
}

/// A proposal first seen in this run, completed with the governor's view before staging.
struct Created {
    event: ProposalCreated,
    block: u64,
    tx: B256,
}

impl Connector for GovernorConnector {
    async fn fetch(&self, resume: &Resume, sink: &mut Sink<'_>) -> anyhow::Result<Watermark> {
        let chain: U256 = self.rpc("eth_chainId", json!([])).await?;
        if chain != U256::from(self.source.chain_id) {
            bail!("{} serves chain {chain}, the registry says {}", self.source.rpc_url, self.source.chain_id);
        }
        let head = u64_of(self.rpc::<U256>("eth_blockNumber", json!([])).await?)?;
        let safe = head.saturating_sub(self.source.confirmations);
        let from = match resume.position.as_deref().map(str::parse::<u64>) {
            Some(Ok(done)) => done + 1,
            Some(Err(_)) => bail!("unreadable resume position {:?}", resume.position),
            None => self.source.start_block,
        };
        let governor: Address = self.source.governor.parse().context("governor address")?;
        let token: Address = self.source.token.parse().context("token address")?;

        // How the governor counts, as it declares it (GovernorBravo declares neither).
        let modes = Modes {
            counting: self.call(COUNTING_MODECall {}).await.ok(),
            clock: self.call(CLOCK_MODECall {}).await.ok(),
        };
        let fractional = modes.counting.as_deref().map(counting::module) == Some(CountingModule::Fractional);
        let mut split: BTreeMap<(U256, Address), Split> = BTreeMap::new();
        let mut times = BlockTimes::default();
        let mut created: Vec<Created> = Vec::new();
        let mut touched: BTreeSet<U256> = BTreeSet::new();
        let mut powers: BTreeMap<Address, (U256, u64)> = BTreeMap::new();
        let mut delegations: BTreeMap<Address, (Address, u64)> = BTreeMap::new();
        let mut history = History { dao_id: &self.dao_id, decimals: self.source.token_decimals, open: None };
        let mut supplies: HashMap<u64, Option<U256>> = HashMap::new();
        let mut ranges = BlockRanges::new(from, safe, self.source.block_range);
        while let Some((start, end)) = ranges.next() {
            let logs = match self.logs(governor, token, start, end).await {
                Ok(logs) => logs,
                Err(e) => {
                    ranges.refused(e)?;
                    continue;
                }
            };
            for log in logs.into_iter().filter(|l| !l.removed) {
                let block = u64_of(log.block_number)?;
                if let Some(seconds) = log.block_timestamp {
                    times.note(block, seconds)?;
                }
                let tx = log.transaction_hash.unwrap_or_default();
                let Some(topic0) = log.topics.first().copied() else { continue };
                if log.address == token {
                    let index = log.log_index.map(u64_of).transpose()?.context("a token log without logIndex")?;
                    let place = Place { block, index: index as i64, tx, at_ms: times.get(self, block).await? };
                    if topic0 == DelegateVotesChanged::SIGNATURE_HASH {
                        let e = DelegateVotesChanged::decode_raw_log(log.topics.iter().copied(), &log.data)?;
                        powers.insert(e.delegate, (e.newVotes, block));
                        let record = history.checkpoint(&e, place);
                        sink.push(Record::PowerCheckpoint(record)).await?;
                    } else if topic0 == DelegateChanged::SIGNATURE_HASH {
                        let e = DelegateChanged::decode_raw_log(log.topics.iter().copied(), &log.data)?;
                        delegations.insert(e.delegator, (e.toDelegate, block));
                        if let Some(done) = history.change(&e, place) {
                            let done = self.judged(done, &modes, &mut supplies).await;
                            sink.push(Record::DelegationChange(done)).await?;
                        }
                    }
                    continue;
                }
                match topic0 {
                    t if t == ProposalCreated::SIGNATURE_HASH => {
                        let event = ProposalCreated::decode_raw_log(log.topics.iter().copied(), &log.data)?;
                        touched.insert(event.proposalId);
                        created.push(Created { event, block, tx });
                    }
                    t if t == VoteCast::SIGNATURE_HASH || t == VoteCastWithParams::SIGNATURE_HASH => {
                        let cast = Cast::decode(&log)?;
                        let at = times.get(self, block).await?;
                        touched.insert(cast.proposal);
                        if fractional {
                            // A voter may cast several times on a fractional governor: its vote is
                            // the sum of its casts, recorded once they are all read.
                            split.entry((cast.proposal, cast.voter)).or_default().add(cast, at, block, tx);
                        } else {
                            sink.push(Record::Vote(self.vote(cast, at, block, tx))).await?;
                        }
                    }
                    t if t == ProposalQueued::SIGNATURE_HASH => {
                        touched
                            .insert(ProposalQueued::decode_raw_log(log.topics.iter().copied(), &log.data)?.proposalId);
                    }
                    t if t == ProposalExecuted::SIGNATURE_HASH => {
                        touched.insert(
                            ProposalExecuted::decode_raw_log(log.topics.iter().copied(), &log.data)?.proposalId,
                        );
                    }
                    t if t == ProposalCanceled::SIGNATURE_HASH => {
                        touched.insert(
                            ProposalCanceled::decode_raw_log(log.topics.iter().copied(), &log.data)?.proposalId,
                        );
                    }
                    _ => {}
                }
            }
            // A transaction lies in one block, so nothing after this range completes a change.
            if let Some(done) = history.finish() {
                let done = self.judged(done, &modes, &mut supplies).await;
                sink.push(Record::DelegationChange(done)).await?;
            }
            ranges.read(end);
        }

        let created_ids: BTreeSet<U256> = created.iter().map(|c| c.event.proposalId).collect();
        for ((proposal, voter), s) in split {
            // A proposal created in this run has all its casts in it; an older one may have
            // casts from earlier runs, which the stored vote already summed and this run's
            // record replaces: they are read again.
            let s = if created_ids.contains(&proposal) || from <= self.source.start_block {
                s
            } else {
                let since =
                    resume.created_blocks.get(&proposal.to_string()).copied().unwrap_or(self.source.start_block);
                let earlier = Earlier { proposal, voter, since, before: from - 1, safe };
                self.with_earlier_casts(earlier, s, &mut times).await?
            };
            sink.push(Record::Vote(self.split_vote(proposal, voter, s))).await?;
        }
        // The governor's own view of every proposal that was seen or can still change.
        for c in created {
            let view = self.view(c.event.proposalId, head, &mut times).await?;
            let at = times.get(self, c.block).await?;
            sink.push(Record::Proposal(Box::new(self.proposal(c, view, at, &modes)))).await?;
        }
        let open = resume.open_proposals.iter().filter_map(|id| id.parse::<U256>().ok());
        for id in touched.into_iter().chain(open).collect::<BTreeSet<_>>().difference(&created_ids) {
            let view = self.view(*id, head, &mut times).await?;
            sink.push(Record::ProposalUpdate(ProposalUpdate {
                dao_id: self.dao_id.clone(),
                proposal: ProposalRef { source: ProposalSource::Onchain, external_id: id.to_string() },
                state: view.state,
                scores: view.scores.clone(),
                scores_total: view.total.clone(),
                quorum: view.quorum.clone(),
                start_ms: view.start_ms,
                end_ms: view.end_ms,
                counting_mode: modes.counting.clone(),
                clock_mode: modes.clock.clone(),
            }))
            .await?;
        }
        let as_of = times.get(self, safe).await?;
        for (delegate, (votes, _)) in powers {
            sink.push(Record::Delegate(DelegateRecord {
                dao_id: self.dao_id.clone(),
                address: lower(delegate),
                voting_power_raw: votes.to_string(),
                decimals: self.source.token_decimals,
                // Counted at publication from every delegation stored for the DAO.
                delegators_count: None,
                as_of_ms: as_of,
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
        let position = if safe >= from { safe } else { from.saturating_sub(1) };
        Ok(Watermark { data_as_of_ms: as_of, position: Some(position.to_string()) })
    }
}

/// The governor's current view of one proposal; `None` where the governor does not say
/// (GovernorBravo has no `proposalVotes`, a quorum is only defined once voting started).
#[derive(Debug, Default)]
struct View {
    state: Option<ProposalState>,
    scores: Option<Vec<String>>,
    total: Option<String>,
    quorum: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

impl GovernorConnector {
    async fn rpc<T: DeserializeOwned>(&self, method: &str, params: serde_json::Value) -> anyhow::Result<T> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response: RpcResponse<T> = self.upstream.post_json(&self.source.rpc_url, &body).await?;
        if let Some(e) = response.error {
            return Err(UpstreamError::Protocol {
                url: self.source.rpc_url.clone(),
                reason: format!("{method}: JSON-RPC error {}: {}", e.code, e.message),
            }
            .into());
        }
        response.result.ok_or_else(|| {
            UpstreamError::Malformed { url: self.source.rpc_url.clone(), reason: format!("{method}: no `result`") }
                .into()
        })
    }

    async fn logs(&self, governor: Address, token: Address, from: u64, to: u64) -> anyhow::Result<Vec<Log>> {
        let topics = [
            ProposalCreated::SIGNATURE_HASH,
            VoteCast::SIGNATURE_HASH,
            VoteCastWithParams::SIGNATURE_HASH,
            ProposalQueued::SIGNATURE_HASH,
            ProposalExecuted::SIGNATURE_HASH,
            ProposalCanceled::SIGNATURE_HASH,
            DelegateVotesChanged::SIGNATURE_HASH,
            DelegateChanged::SIGNATURE_HASH,
        ];
        let filter = json!([{
            "fromBlock": format!("{from:#x}"),
            "toBlock": format!("{to:#x}"),
            "address": [governor, token],
            "topics": [topics],
        }]);
        self.rpc("eth_getLogs", filter).await
    }

    async fn call<C: SolCall>(&self, call: C) -> anyhow::Result<C::Return> {
        self.call_at(call, json!("latest")).await
    }

    /// `call` as the governor answered at `block` (a number or a tag).
    async fn call_at<C: SolCall>(&self, call: C, block: serde_json::Value) -> anyhow::Result<C::Return> {
        self.call_to(&self.source.governor, call, block).await
    }

    /// `call` to the contract at `to`, as it answered at `block`.
    async fn call_to<C: SolCall>(&self, to: &str, call: C, block: serde_json::Value) -> anyhow::Result<C::Return> {
        let tx = json!({"to": to, "data": Bytes::from(call.abi_encode())});
        let out: Bytes = self.rpc("eth_call", json!([tx, block])).await?;
        Ok(C::abi_decode_returns(&out)?)
    }

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
    async fn judged(
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

    /// Completes a voter's casts on a fractional governor with those of earlier runs.
    ///
    /// `usedVotes(proposal, voter)` at the last block read says how much weight the voter has
    /// cast in all: when this run's casts account for all of it there is nothing before them
    /// (one call per voter, the common case). Otherwise the voter's casts are read back from
    /// the proposal's creation (the voter is an indexed topic, so the node filters them), and
    /// their sum must then equal `usedVotes`: a vote is never stored as part of itself.
    async fn with_earlier_casts(&self, e: Earlier, run: Split, times: &mut BlockTimes) -> anyhow::Result<Split> {
        let used = self
            .call_at(usedVotesCall { proposalId: e.proposal, account: e.voter }, json!(format!("{:#x}", e.safe)))
            .await
            .ok();
        if used == Some(run.weight) {
            return Ok(run);
        }
        let governor: Address = self.source.governor.parse().context("governor address")?;
        let mut all = Split::default();
        let mut ranges = BlockRanges::new(e.since, e.before, self.source.block_range);
        while let Some((start, end)) = ranges.next() {
            let filter = json!([{
                "fromBlock": format!("{start:#x}"),
                "toBlock": format!("{end:#x}"),
                "address": governor,
                "topics": [[VoteCast::SIGNATURE_HASH, VoteCastWithParams::SIGNATURE_HASH], e.voter.into_word()],
            }]);
            let logs: Vec<Log> = match self.rpc("eth_getLogs", filter).await {
                Ok(logs) => logs,
                Err(err) => {
                    ranges.refused(err)?;
                    continue;
                }
            };
            for log in logs.into_iter().filter(|l| !l.removed) {
                let cast = Cast::decode(&log)?;
                if cast.proposal != e.proposal || cast.voter != e.voter {
                    continue;
                }
                let block = u64_of(log.block_number)?;
                if let Some(seconds) = log.block_timestamp {
                    times.note(block, seconds)?;
                }
                all.add(cast, times.get(self, block).await?, block, log.transaction_hash.unwrap_or_default());
            }
            ranges.read(end);
        }
        all.then(run);
        if let Some(used) = used
            && used != all.weight
        {
            bail!(
                "{} on proposal {}: usedVotes says {used}, its casts sum to {}",
                lower(e.voter),
                e.proposal,
                all.weight
            );
        }
        Ok(all)
    }

    async fn view(&self, id: U256, head: u64, times: &mut BlockTimes) -> anyhow::Result<View> {
        let mut view = View::default();
        let state = self.call(stateCall { proposalId: id }).await.context("governor.state")?;
        view.state = STATES.get(state as usize).copied();
        if let Ok(votes) = self.call(proposalVotesCall { proposalId: id }).await {
            let scores = [votes.againstVotes, votes.forVotes, votes.abstainVotes];
            view.total = Some(scores.iter().fold(U256::ZERO, |a, b| a.saturating_add(*b)).to_string());
            view.scores = Some(scores.iter().map(U256::to_string).collect());
        }
        if let Ok(snapshot) = self.call(proposalSnapshotCall { proposalId: id }).await {
            let snapshot = u64_of(snapshot)?;
            if snapshot < head {
                view.start_ms = Some(times.get(self, snapshot).await?);
                view.quorum =
                    self.call(quorumCall { timepoint: U256::from(snapshot) }).await.ok().map(|q| q.to_string());
            }
        }
        if let Ok(deadline) = self.call(proposalDeadlineCall { proposalId: id }).await {
            let deadline = u64_of(deadline)?;
            if deadline <= head {
                view.end_ms = Some(times.get(self, deadline).await?);
            }
        }
        Ok(view)
    }

    fn proposal(&self, c: Created, view: View, created_ms: i64, modes: &Modes) -> ProposalRecord {
        let e = c.event;
        let description = e.description;
        ProposalRecord {
            dao_id: self.dao_id.clone(),
            source: ProposalSource::Onchain,
            external_id: e.proposalId.to_string(),
            title: title(&description),
            body: Some(description),
            author: lower(e.proposer),
            voting_type: Some("governor".to_owned()),
            state: view.state.unwrap_or(ProposalState::Pending),
            choices: Some(CHOICES.iter().map(|c| (*c).to_owned()).collect()),
            scores: view.scores,
            scores_total: view.total,
            scores_state: None,
            quorum: view.quorum,
            start_ms: view.start_ms,
            end_ms: view.end_ms,
            created_ms,
            upstream_vote_count: None,
            url: None,
            discussion_url: None,
            ipfs: None,
            snapshot_block: Some(e.voteStart.to_string()),
            tx_hash: Some(format!("{:#x}", c.tx)),
            block_number: Some(c.block as i64),
            counting_mode: modes.counting.clone(),
            clock_mode: modes.clock.clone(),
            privacy: None,
            origin: ORIGIN.to_owned(),
        }
    }

    /// A voter's casts on a fractional governor as one vote: its weight the sum of the casts,
    /// its choice the one support it went to (`2` for For), or the exact split across supports
    /// (`{"1":…,"2":…}`, choice numbers to weights in the token's smallest unit), its time,
    /// block and transaction the last cast's.
    fn split_vote(&self, proposal: U256, voter: Address, s: Split) -> VoteRecord {
        let used: Vec<(usize, U256)> = s.parts.iter().copied().enumerate().filter(|(_, w)| !w.is_zero()).collect();
        let choice = match used.as_slice() {
            [(index, _)] => (index + 1).to_string(),
            // Snapshot's weighted form with exact integers, which `rules::tally` reads.
            _ => {
                let parts: Vec<String> = used.iter().map(|(i, w)| format!("\"{}\":{w}", i + 1)).collect();
                format!("{{{}}}", parts.join(","))
            }
        };
        VoteRecord {
            dao_id: self.dao_id.clone(),
            proposal: ProposalRef { source: ProposalSource::Onchain, external_id: proposal.to_string() },
            voter: lower(voter),
            choice,
            voting_power: s.weight.to_string(),
            vp_from_float: ProposalSource::Onchain.power_from_float(),
            reason: Some(s.reason).filter(|r| !r.is_empty()),
            created_ms: s.at_ms,
            ipfs: None,
            tx_hash: Some(format!("{:#x}", s.tx)),
            block_number: Some(s.block as i64),
        }
    }

    fn vote(&self, cast: Cast, created_ms: i64, block: u64, tx: B256) -> VoteRecord {
        VoteRecord {
            dao_id: self.dao_id.clone(),
            proposal: ProposalRef { source: ProposalSource::Onchain, external_id: cast.proposal.to_string() },
            voter: lower(cast.voter),
            choice: (u32::from(cast.support) + 1).to_string(),
            voting_power: cast.weight.to_string(),
            vp_from_float: ProposalSource::Onchain.power_from_float(),
            reason: Some(cast.reason).filter(|r| !r.is_empty()),
            created_ms,
            ipfs: None,
            tx_hash: Some(format!("{tx:#x}")),
            block_number: Some(block as i64),
        }
    }
}

/// One vote, from `VoteCast` or `VoteCastWithParams` (the same vote with extra parameters,
/// which simple counting ignores).
struct Cast {
    voter: Address,
    proposal: U256,
    support: u8,
    weight: U256,
    reason: String,
    params: Bytes,
}

impl Cast {
    fn decode(log: &Log) -> anyhow::Result<Self> {
        let topics = log.topics.iter().copied();
        let (voter, proposal, support, weight, reason, params) =
            if log.topics.first() == Some(&VoteCastWithParams::SIGNATURE_HASH) {
                let e = VoteCastWithParams::decode_raw_log(topics, &log.data)?;
                (e.voter, e.proposalId, e.support, e.weight, e.reason, e.params)
            } else {
                let e = VoteCast::decode_raw_log(topics, &log.data)?;
                (e.voter, e.proposalId, e.support, e.weight, e.reason, Bytes::new())
            };
        Ok(Self { voter, proposal, support, weight, reason, params })
    }
}

/// The governor's `COUNTING_MODE()` and `CLOCK_MODE()`, when it declares them.
struct Modes {
    counting: Option<String>,
    clock: Option<String>,
}

/// One voter's casts on one proposal of a fractional governor, summed.
#[derive(Default)]
struct Split {
    /// Weight per support: against, for, abstain.
    parts: [U256; 3],
    weight: U256,
    reason: String,
    at_ms: i64,
    block: u64,
    tx: B256,
}

impl Split {
    /// Adds a cast: a full vote (support 0, 1 or 2) puts its weight on one support; a fractional
    /// one (support 255) splits it as its params say (three packed uint128: against, for,
    /// abstain), exactly as `GovernorCountingFractional._countVote` does.
    fn add(&mut self, cast: Cast, at_ms: i64, block: u64, tx: B256) {
        match cast.support {
            s @ 0..=2 => self.parts[s as usize] += cast.weight,
            counting::FRACTIONAL_SUPPORT if cast.params.len() == 48 => {
                for (i, part) in cast.params.chunks(16).enumerate() {
                    self.parts[i] += U256::from_be_slice(part);
                }
            }
            // The governor reverts any other cast; nothing else reaches a log.
            _ => {}
        }
        self.weight += cast.weight;
        if !cast.reason.is_empty() {
            self.reason = cast.reason;
        }
        (self.at_ms, self.block, self.tx) = (at_ms, block, tx);
    }

    /// Adds the casts of `later`, which came after these.
    fn then(&mut self, later: Split) {
        for (part, more) in self.parts.iter_mut().zip(later.parts) {
            *part += more;
        }
        self.weight += later.weight;
        if !later.reason.is_empty() {
            self.reason = later.reason;
        }
        (self.at_ms, self.block, self.tx) = (later.at_ms, later.block, later.tx);
    }
}

/// Where to look for a voter's casts from earlier runs: blocks `since..=before`, checked
/// against the governor at block `safe`.
struct Earlier {
    proposal: U256,
    voter: Address,
    since: u64,
    before: u64,
    safe: u64,
}

/// Where a token log sits on chain.
#[derive(Debug, Clone, Copy)]
struct Place {
    block: u64,
    index: i64,
    tx: B256,
    at_ms: i64,
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
struct History<'a> {
    dao_id: &'a str,
    decimals: u32,
    /// The latest delegation change, until the checkpoints that follow it are seen.
    open: Option<Open>,
}

struct Open {
    record: DelegationChangeRecord,
    tx: B256,
    delegator: Address,
    /// The checkpoints attributed so far (at most two), and the amount they moved.
    attributed: u8,
    moved: Option<U256>,
}

impl History<'_> {
    /// Opens a delegation change; returns the one it closes, complete.
    fn change(&mut self, e: &DelegateChanged, at: Place) -> Option<DelegationChangeRecord> {
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

    fn checkpoint(&mut self, e: &DelegateVotesChanged, at: Place) -> PowerCheckpointRecord {
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
    fn finish(&mut self) -> Option<DelegationChangeRecord> {
        self.open.take().map(|mut o| {
            o.record.power_moved_raw = o.moved.unwrap_or(U256::ZERO).to_string();
            o.record
        })
    }
}

/// Block timestamps, read once per block.
#[derive(Default)]
struct BlockTimes(HashMap<u64, i64>);

impl BlockTimes {
    /// Keeps the time of `block` a log carried.
    fn note(&mut self, block: u64, seconds: U256) -> anyhow::Result<()> {
        let ms = i64::try_from(u64_of(seconds)?).context("block timestamp")?.saturating_mul(1000);
        self.0.insert(block, ms);
        Ok(())
    }

    async fn get(&mut self, c: &GovernorConnector, block: u64) -> anyhow::Result<i64> {
        if let Some(ms) = self.0.get(&block) {
            return Ok(*ms);
        }
        let b: Option<Block> = c.rpc("eth_getBlockByNumber", json!([format!("{block:#x}"), false])).await?;
        let b = b.with_context(|| format!("block {block} is unknown to the node"))?;
        self.note(block, b.timestamp)?;
        Ok(self.0[&block])
    }
}

/// Blocks `from..=to` walked in ranges of at most `range` blocks, the range halved whenever a
/// node refuses one for its size (`refused_range`), down to single blocks.
struct BlockRanges {
    start: u64,
    to: u64,
    range: u64,
}

impl BlockRanges {
    fn new(from: u64, to: u64, range: u64) -> Self {
        Self { start: from, to, range: range.max(1) }
    }

    /// The next range to read, first and last block, or `None` when every block was read.
    fn next(&self) -> Option<(u64, u64)> {
        (self.start <= self.to).then(|| (self.start, (self.start + self.range - 1).min(self.to)))
    }

    /// The range ending at `end` was read.
    fn read(&mut self, end: u64) {
        self.start = end + 1;
    }

    /// Reading the next range failed with `e`: the range is halved when the node refused its
    /// size (the same start is read again); any other failure, or a single block refused, is
    /// the run's.
    fn refused(&mut self, e: anyhow::Error) -> anyhow::Result<()> {
        if self.range > 1 && refused_range(&e) {
            self.range = (self.range / 2).max(1);
            tracing::debug!(start = self.start, range = self.range, "the node refused the block range; halving it");
            return Ok(());
        }
        Err(e)
    }
}

/// Whether a node refused `eth_getLogs` for the size of the range or of its answer.
fn refused_range(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}").to_ascii_lowercase();
    ["range", "limit", "too many", "exceed", "-32005", "response size"].iter().any(|w| text.contains(w))
}

fn u64_of(v: U256) -> anyhow::Result<u64> {
    u64::try_from(v).map_err(|_| anyhow::anyhow!("{v} does not fit a block number"))
}

fn lower(a: Address) -> String {
    format!("{a:#x}")
}

/// A proposal's title: the first non-empty line of its description, without Markdown heading marks.
fn title(description: &str) -> String {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let line = line.trim_start_matches('#').trim();
    let mut title: String = line.chars().take(200).collect();
    if title.is_empty() {
        title = "(untitled)".to_owned();
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_halve_on_a_refused_size_and_cover_every_block_once() {
        let mut ranges = BlockRanges::new(10, 29, 8);
        assert_eq!(ranges.next(), Some((10, 17)));
        ranges.refused(anyhow::anyhow!("query returned more than 10000 results; limit exceeded")).unwrap();
        assert_eq!(ranges.next(), Some((10, 13)), "the same start, half the range");
        ranges.read(13);
        assert_eq!(ranges.next(), Some((14, 17)));
        assert!(ranges.refused(anyhow::anyhow!("connection reset")).is_err(), "not a size refusal");
        ranges.read(17);
        ranges.read(21);
        ranges.read(25);
        assert_eq!(ranges.next(), Some((26, 29)));
        ranges.read(29);
        assert_eq!(ranges.next(), None);
        let mut one = BlockRanges::new(5, 5, 1);
        assert!(one.refused(anyhow::anyhow!("block range too large")).is_err(), "a single block refused fails");
    }

    #[test]
    fn event_signatures_match_the_reference_topics() {
        // topic0 of each event, as `../shared/reference/governance-data.md` and OpenZeppelin 5.7's
        // receipts on anvil give them.
        let expected = [
            (ProposalCreated::SIGNATURE_HASH, "0x7d84a6263ae0d98d3329bd7b46bb4e8d6f98cd35a7adb45c274c8b7fd5ebd5e0"),
            (VoteCast::SIGNATURE_HASH, "0xb8e138887d0aa13bab447e82de9d5c1777041ecd21ca36ba824ff1e6c07ddda4"),
            (VoteCastWithParams::SIGNATURE_HASH, "0xe2babfbac5889a709b63bb7f598b324e08bc5a4fb9ec647fb3cbc9ec07eb8712"),
            (ProposalQueued::SIGNATURE_HASH, "0x9a2e42fd6722813d69113e7d0079d3d940171428df7373df9c7f7617cfda2892"),
            (ProposalExecuted::SIGNATURE_HASH, "0x712ae1383f79ac853f8d882153778e0260ef8f03b504e2866e0593e04d2b291f"),
            (ProposalCanceled::SIGNATURE_HASH, "0x789cf55be980739dad1d0699b93b58e806b51c9d96619bfa8fe0a28abaa7b30c"),
            (
                DelegateVotesChanged::SIGNATURE_HASH,
                "0xdec2bacdd2f05b59de34da9b523dff8be42e5e38e818c82fdb0bae774387a724",
            ),
            (DelegateChanged::SIGNATURE_HASH, "0x3134e8a2e6d97e929a7e54011ea5485d7d196dd5f0ba4d4ef95803e8e3fc257f"),
        ];
        for (hash, topic0) in expected {
            assert_eq!(format!("{hash:#x}"), topic0);
        }
    }

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title("# Proposal A\nFund the test grants program."), "Proposal A");
        assert_eq!(title("\n\n  Plain title  \nbody"), "Plain title");
        assert_eq!(title(""), "(untitled)");
    }
}
