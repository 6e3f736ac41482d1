//! Votes from the governor's logs: each cast decoded, and on a fractional governor a voter's
//! casts summed into one vote, completed with those of earlier runs.
use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_sol_types::SolEvent;
use anyhow::{Context, bail};
use serde_json::json;

use super::abi::*;
use super::block_ranges::BlockRanges;
use super::connector::Span;
use super::rpc::{BlockTimes, Log, u64_of};
use super::{GovernorConnector, lower};
use crate::contract::counting;
use crate::contract::vocabulary::ProposalSource;
use crate::ingest::{Resume, Sink};
use crate::store::staging::{ProposalRef, Record, VoteRecord};

/// One vote, from `VoteCast` or `VoteCastWithParams` (the same vote with extra parameters,
/// which simple counting ignores).
pub(super) struct Cast {
    pub(super) voter: Address,
    pub(super) proposal: U256,
    pub(super) support: u8,
    pub(super) weight: U256,
    pub(super) reason: String,
    pub(super) params: Bytes,
}

impl Cast {
    pub(super) fn decode(log: &Log) -> anyhow::Result<Self> {
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

/// One voter's casts on one proposal of a fractional governor, summed.
#[derive(Default)]
pub(super) struct Split {
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
    pub(super) fn add(&mut self, cast: Cast, at_ms: i64, block: u64, tx: B256) {
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

impl GovernorConnector {
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

    pub(super) fn vote(&self, cast: Cast, created_ms: i64, block: u64, tx: B256) -> VoteRecord {
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

    /// Stages a fractional governor's votes, each the sum of the voter's casts. A proposal
    /// created in this run has all its casts in it; an older one may have casts from earlier
    /// runs, which the stored vote already summed and this run's record replaces: they are read
    /// again.
    pub(super) async fn stage_summed_votes(
        &self,
        resume: &Resume,
        span: &Span,
        split: BTreeMap<(U256, Address), Split>,
        created_ids: &BTreeSet<U256>,
        times: &mut BlockTimes,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        let (from, safe) = (span.from, span.safe);
        for ((proposal, voter), s) in split {
            let s = if created_ids.contains(&proposal) || from <= self.source.start_block {
                s
            } else {
                let since =
                    resume.created_blocks.get(&proposal.to_string()).copied().unwrap_or(self.source.start_block);
                let earlier = Earlier { proposal, voter, since, before: from - 1, safe };
                self.with_earlier_casts(earlier, s, times).await?
            };
            sink.push(Record::Vote(self.split_vote(proposal, voter, s))).await?;
        }
        Ok(())
    }
}
