//! The governor connector: one run reads the governor's and the token's logs from where the last
//! one stopped up to `head - confirmations`, and stages what they say.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy_primitives::{Address, U256};
use alloy_sol_types::SolEvent;
use anyhow::{Context, bail};
use serde_json::json;

use super::abi::*;
use super::block_ranges::BlockRanges;
use super::delegation_history::{History, Place};
use super::lower;
use super::proposals::Created;
use super::rpc::{BlockTimes, u64_of};
use super::votes::{Cast, Earlier, Split};
use crate::contract::counting::{self, CountingModule};
use crate::contract::vocabulary::ProposalSource;
use crate::ingest::registry::OnchainSource;
use crate::ingest::{Connector, Resume, Sink, Upstream};
use crate::store::apply::Watermark;
use crate::store::staging::{DelegateRecord, DelegationRecord, ProposalRef, ProposalUpdate, Record};

pub struct GovernorConnector {
    pub upstream: Upstream,
    pub dao_id: String,
    pub source: OnchainSource,
}

/// The governor's `COUNTING_MODE()` and `CLOCK_MODE()`, when it declares them.
pub(super) struct Modes {
    pub(super) counting: Option<String>,
    pub(super) clock: Option<String>,
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
