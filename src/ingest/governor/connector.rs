//! The governor connector: one run reads the governor's and the token's logs from where the last
//! one stopped up to `head - confirmations`, and stages what they say.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolEvent;
use anyhow::{Context, bail};
use serde_json::json;

use super::abi::{
    CLOCK_MODECall, COUNTING_MODECall, DelegateChanged, DelegateVotesChanged, ProposalCanceled, ProposalCreated,
    ProposalExecuted, ProposalQueued, VoteCast, VoteCastWithParams,
};
use super::block_ranges::BlockRanges;
use super::delegation_history::{History, Place};
use super::lifecycle::{Lifecycle, Step};
use super::proposals::Created;
use super::rpc::{BlockTimes, Log, u64_of};
use super::votes::{Cast, Split};
use crate::contract::counting::{self, CountingModule};
use crate::ingest::registry::OnchainSource;
use crate::ingest::{Connector, Resume, Sink, Upstream};
use crate::store::apply::Watermark;
use crate::store::staging::Record;

#[derive(Clone)]
pub struct GovernorConnector {
    pub upstream: Upstream,
    pub dao_id: String,
    pub source: OnchainSource,
    /// The store, for what decoding learns about contracts (`store::contracts`), kept as it is
    /// learned rather than staged: it is bookkeeping, not published data.
    pub db: sea_orm::DatabaseConnection,
    /// Where contracts' verified ABIs are looked up, when configured.
    pub sourcify: Option<crate::ingest::sourcify::Sourcify>,
}

/// The governor's `COUNTING_MODE()` and `CLOCK_MODE()`, when it declares them.
pub(super) struct Modes {
    pub(super) counting: Option<String>,
    pub(super) clock: Option<String>,
}

/// The blocks one run reads, `from..=safe`, under a chain head at `head`, and the two contracts
/// whose logs it reads.
pub(super) struct Span {
    head: u64,
    pub(super) safe: u64,
    pub(super) from: u64,
    governor: Address,
    token: Address,
}

/// One run's scan of the logs: what it looks for, and what the logs said so far that is staged
/// only once every range is read.
struct Scan<'a> {
    token: Address,
    /// Whether the governor counts fractionally: a voter's casts are summed before they are staged.
    fractional: bool,
    times: BlockTimes,
    history: History<'a>,
    /// The token's supply per block, read once (`judged`).
    supplies: HashMap<u64, Option<U256>>,
    /// Proposals created in the run, staged with the governor's view of them.
    created: Vec<Created>,
    /// Every proposal a log named: the governor's view of each is read again.
    touched: BTreeSet<U256>,
    /// Each proposal's queue, execution and cancellation the logs recorded.
    lifecycles: BTreeMap<U256, Lifecycle>,
    /// A fractional governor's casts per (proposal, voter).
    split: BTreeMap<(U256, Address), Split>,
    /// Each delegate's latest voting power and its block.
    powers: BTreeMap<Address, (U256, u64)>,
    /// Each delegator's latest delegate and its block.
    delegations: BTreeMap<Address, (Address, u64)>,
}

impl Connector for GovernorConnector {
    async fn fetch(&self, resume: &Resume, sink: &mut Sink<'_>) -> anyhow::Result<Watermark> {
        let span = self.span(resume).await?;
        let modes = self.modes().await;
        let mut scan = self.read_logs(&span, &modes, sink).await?;
        // Only a run with actions to decode, or proposals that may be simulated, asks for the
        // executor (and reads the ABIs).
        let mut decoding =
            if scan.created.is_empty() && resume.without_actions.is_empty() && resume.simulation_inputs.is_empty() {
                None
            } else {
                Some(self.decoding(span.governor).await?)
            };
        let created_ids: BTreeSet<U256> = scan.created.iter().map(|c| c.event.proposalId).collect();
        self.stage_summed_votes(resume, &span, scan.split, &created_ids, &mut scan.times, sink).await?;
        // The governor's own view of every proposal that was seen or can still change.
        let open = resume.open_proposals.iter().filter_map(|id| id.parse::<U256>().ok());
        let updated = scan.touched.into_iter().chain(open).filter(|id| !created_ids.contains(id)).collect();
        // Each new proposal's actions, decoded once, applied after the proposal they belong to.
        let mut proposed = std::collections::HashMap::new();
        if let Some(decoding) = &mut decoding {
            for c in &scan.created {
                let record = self.actions(&c.event, decoding, sink).await?;
                sink.push(record).await?;
                proposed.insert(c.event.proposalId.to_string(), Ok(super::actions::proposed(&c.event)));
            }
        }
        let states = self.stage_proposals(scan.created, updated, span.head, &modes, &mut scan.times, sink).await?;
        // Lifecycles of proposals stored before they were kept: their blocks read again, once.
        let history = match resume.lifecycle_history_from {
            Some(from) if from < span.from => {
                let blocks = (from, span.from - 1);
                Some(self.read_lifecycle_history(span.governor, blocks, &mut scan.lifecycles, &mut scan.times).await?)
            }
            _ => None,
        };
        self.stage_lifecycles(std::mem::take(&mut scan.lifecycles), &mut scan.times, sink).await?;
        if let Some(history) = history {
            sink.push(history).await?;
        }
        // What the active, succeeded and queued ones would do, simulated when due.
        if let Some(decoding) = &decoding {
            for (id, input) in &resume.simulation_inputs {
                proposed.entry(id.clone()).or_insert_with(|| super::simulate::stored_actions(input));
            }
            let candidates = states
                .into_iter()
                .filter_map(|(id, state)| {
                    let id = id.to_string();
                    let actions = proposed.remove(&id)?;
                    let simulated = resume.simulation_inputs.get(&id).and_then(|i| i.simulated.clone());
                    Some(super::simulate::Candidate { id, state: state?, actions, simulated })
                })
                .collect();
            self.simulate_due(candidates, decoding, span.safe, sink).await?;
        }
        if let Some(decoding) = &mut decoding {
            self.backfill_actions(&resume.without_actions, span.governor, span.safe, decoding, sink).await?;
        }
        let as_of = scan.times.get(self, span.safe).await?;
        self.stage_latest(scan.powers, scan.delegations, as_of, sink).await?;
        let (from, safe) = (span.from, span.safe);
        let position = if safe >= from { safe } else { from.saturating_sub(1) };
        Ok(Watermark { data_as_of_ms: as_of, position: Some(position.to_string()) })
    }
}

impl GovernorConnector {
    /// The blocks this run reads: after the last one read (or from the registry's start block)
    /// up to `confirmations` below the head, on the chain the registry names.
    async fn span(&self, resume: &Resume) -> anyhow::Result<Span> {
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
        Ok(Span { head, safe, from, governor, token })
    }

    /// How the governor counts, as it declares it (GovernorBravo declares neither).
    async fn modes(&self) -> Modes {
        Modes { counting: self.call(COUNTING_MODECall {}).await.ok(), clock: self.call(CLOCK_MODECall {}).await.ok() }
    }

    /// Reads the logs of `span` range by range. What is complete when read (a vote counted once,
    /// the token's history) is staged as it comes; the rest is gathered in the scan.
    async fn read_logs<'a>(&'a self, span: &Span, modes: &Modes, sink: &mut Sink<'_>) -> anyhow::Result<Scan<'a>> {
        let mut scan = Scan {
            token: span.token,
            fractional: modes.counting.as_deref().map(counting::module) == Some(CountingModule::Fractional),
            times: BlockTimes::default(),
            history: History { dao_id: &self.dao_id, decimals: self.source.token_decimals, open: None },
            supplies: HashMap::new(),
            created: Vec::new(),
            touched: BTreeSet::new(),
            lifecycles: BTreeMap::new(),
            split: BTreeMap::new(),
            powers: BTreeMap::new(),
            delegations: BTreeMap::new(),
        };
        let mut ranges = BlockRanges::new(span.from, span.safe, self.source.block_range);
        while let Some((start, end)) = ranges.next() {
            let logs = match self.logs(span.governor, span.token, start, end).await {
                Ok(logs) => logs,
                Err(e) => {
                    ranges.refused(e)?;
                    continue;
                }
            };
            for log in logs.into_iter().filter(|l| !l.removed) {
                self.read_log(&log, modes, &mut scan, sink).await?;
            }
            // A transaction lies in one block, so nothing after this range completes a change.
            if let Some(done) = scan.history.finish() {
                let done = self.judged(done, modes, &mut scan.supplies).await;
                sink.push(Record::DelegationChange(done)).await?;
            }
            ranges.read(end);
        }
        Ok(scan)
    }

    /// Reads one log, the token's or the governor's.
    async fn read_log(&self, log: &Log, modes: &Modes, scan: &mut Scan<'_>, sink: &mut Sink<'_>) -> anyhow::Result<()> {
        let block = u64_of(log.block_number)?;
        if let Some(seconds) = log.block_timestamp {
            scan.times.note(block, seconds)?;
        }
        let tx = log.transaction_hash.unwrap_or_default();
        let Some(topic0) = log.topics.first().copied() else { return Ok(()) };
        if log.address == scan.token {
            let index = log.log_index.map(u64_of).transpose()?.context("a token log without logIndex")?;
            let place = Place { block, index: index as i64, tx, at_ms: scan.times.get(self, block).await? };
            return self.read_token_log(log, topic0, place, modes, scan, sink).await;
        }
        self.read_governor_log(log, topic0, block, tx, scan, sink).await
    }

    /// A governor log: a proposal created, a vote, or a proposal queued, executed or canceled
    /// (kept for its lifecycle; its new state is read from the governor at the end of the run).
    async fn read_governor_log(
        &self,
        log: &Log,
        topic0: B256,
        block: u64,
        tx: B256,
        scan: &mut Scan<'_>,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        match topic0 {
            t if t == ProposalCreated::SIGNATURE_HASH => {
                let event = ProposalCreated::decode_raw_log(log.topics.iter().copied(), &log.data)?;
                scan.touched.insert(event.proposalId);
                scan.created.push(Created { event, block, tx });
            }
            t if t == VoteCast::SIGNATURE_HASH || t == VoteCastWithParams::SIGNATURE_HASH => {
                let cast = Cast::decode(log)?;
                let at = scan.times.get(self, block).await?;
                scan.touched.insert(cast.proposal);
                if scan.fractional {
                    // A voter may cast several times on a fractional governor: its vote is
                    // the sum of its casts, recorded once they are all read.
                    scan.split.entry((cast.proposal, cast.voter)).or_default().add(cast, at, block, tx);
                } else {
                    sink.push(Record::Vote(self.vote(cast, at, block, tx))).await?;
                }
            }
            t if t == ProposalQueued::SIGNATURE_HASH => {
                let e = ProposalQueued::decode_raw_log(log.topics.iter().copied(), &log.data)?;
                scan.touched.insert(e.proposalId);
                scan.lifecycles.entry(e.proposalId).or_default().queued = Some((Step { block, tx }, e.etaSeconds));
            }
            t if t == ProposalExecuted::SIGNATURE_HASH => {
                let id = ProposalExecuted::decode_raw_log(log.topics.iter().copied(), &log.data)?.proposalId;
                scan.touched.insert(id);
                scan.lifecycles.entry(id).or_default().executed = Some(Step { block, tx });
            }
            t if t == ProposalCanceled::SIGNATURE_HASH => {
                let id = ProposalCanceled::decode_raw_log(log.topics.iter().copied(), &log.data)?.proposalId;
                scan.touched.insert(id);
                scan.lifecycles.entry(id).or_default().canceled = Some(Step { block, tx });
            }
            _ => {}
        }
        Ok(())
    }

    /// A token log: a delegate's power checkpoint, or a delegation change (staged, judged, once
    /// the checkpoints that follow it are read).
    async fn read_token_log(
        &self,
        log: &Log,
        topic0: B256,
        place: Place,
        modes: &Modes,
        scan: &mut Scan<'_>,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        if topic0 == DelegateVotesChanged::SIGNATURE_HASH {
            let e = DelegateVotesChanged::decode_raw_log(log.topics.iter().copied(), &log.data)?;
            scan.powers.insert(e.delegate, (e.newVotes, place.block));
            let record = scan.history.checkpoint(&e, place);
            sink.push(Record::PowerCheckpoint(record)).await?;
        } else if topic0 == DelegateChanged::SIGNATURE_HASH {
            let e = DelegateChanged::decode_raw_log(log.topics.iter().copied(), &log.data)?;
            scan.delegations.insert(e.delegator, (e.toDelegate, place.block));
            if let Some(done) = scan.history.change(&e, place) {
                let done = self.judged(done, modes, &mut scan.supplies).await;
                sink.push(Record::DelegationChange(done)).await?;
            }
        }
        Ok(())
    }
}
