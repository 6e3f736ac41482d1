//! Each proposal's execution lifecycle, from the governor's own logs: `ProposalQueued` (with the
//! ETA it carries), `ProposalExecuted` and `ProposalCanceled`, each with its block, the block's
//! time and its transaction. OpenZeppelin's Governor (4.x and 5.x, with `GovernorTimelockControl`
//! or `GovernorTimelockCompound`) and Compound's GovernorBravo emit the same three events (the
//! same topic0s), so one reading serves them all.
//!
//! The grace period after which a queued proposal expires is the timelock's `GRACE_PERIOD()`
//! (Compound's Timelock: 14 days); OpenZeppelin's TimelockController has none, and its call
//! reverts. It is read at the latest block, as the governor's own `state()` reads it when it
//! decides `Expired`, once per run that read a queue.
//!
//! Proposals stored before lifecycles were kept (migration 28) have their logs in blocks an
//! earlier run read: those blocks are read again once per DAO, for these three events only
//! (`read_lifecycle_history`), and a marker staged with what they held keeps them from being
//! read again.
use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use serde_json::json;

use alloy_sol_types::SolEvent;

use super::abi::{GRACE_PERIODCall, ProposalCanceled, ProposalExecuted, ProposalQueued, timelockCall};
use super::actions::reverted;
use super::block_ranges::BlockRanges;
use super::rpc::{BlockTimes, u64_of};
use super::{GovernorConnector, lower};
use crate::contract::vocabulary::ProposalSource;
use crate::ingest::Sink;
use crate::store::staging::{
    ChainPlace, LifecycleHistoryRecord, ProposalExecutionRecord, ProposalRef, QueuedRecord, Record,
};

/// Where one log of the lifecycle is: its block and transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    pub(super) block: u64,
    pub(super) tx: B256,
}

/// What one run's logs said of one proposal's lifecycle.
#[derive(Debug, Default)]
pub(super) struct Lifecycle {
    /// `ProposalQueued` and its ETA.
    pub(super) queued: Option<(Step, U256)>,
    pub(super) executed: Option<Step>,
    pub(super) canceled: Option<Step>,
}

impl GovernorConnector {
    /// Stages what the run read of each proposal's lifecycle, after the proposals themselves.
    pub(super) async fn stage_lifecycles(
        &self,
        lifecycles: BTreeMap<U256, Lifecycle>,
        times: &mut BlockTimes,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        let grace_period_s = match lifecycles.values().any(|l| l.queued.is_some()) {
            true => self.grace_period().await?,
            false => None,
        };
        for (id, l) in lifecycles {
            let queued = match l.queued {
                Some((step, eta)) => {
                    Some(QueuedRecord { place: self.place(step, times).await?, eta: eta.to_string(), grace_period_s })
                }
                None => None,
            };
            let executed = match l.executed {
                Some(step) => Some(self.place(step, times).await?),
                None => None,
            };
            let canceled = match l.canceled {
                Some(step) => Some(self.place(step, times).await?),
                None => None,
            };
            sink.push(Record::ProposalExecution(ProposalExecutionRecord {
                dao_id: self.dao_id.clone(),
                proposal: ProposalRef { source: ProposalSource::Onchain, external_id: id.to_string() },
                queued,
                executed,
                canceled,
            }))
            .await?;
        }
        Ok(())
    }

    /// Reads the governor's lifecycle logs in blocks `from..=to` (read by earlier runs, before
    /// lifecycles were kept) into `lifecycles`, keeping what the run's own scan found, and returns
    /// the record that marks the DAO's history read.
    pub(super) async fn read_lifecycle_history(
        &self,
        governor: Address,
        (from, to): (u64, u64),
        lifecycles: &mut BTreeMap<U256, Lifecycle>,
        times: &mut BlockTimes,
    ) -> anyhow::Result<Record> {
        let topics =
            [ProposalQueued::SIGNATURE_HASH, ProposalExecuted::SIGNATURE_HASH, ProposalCanceled::SIGNATURE_HASH];
        let mut ranges = BlockRanges::new(from, to, self.source.block_range);
        while let Some((start, end)) = ranges.next() {
            let logs = match self.logs_of(&[governor], &topics, start, end).await {
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
                let step = Step { block, tx: log.transaction_hash.unwrap_or_default() };
                let (topics, data) = (log.topics.iter().copied(), &log.data);
                match log.topics.first().copied() {
                    Some(t) if t == ProposalQueued::SIGNATURE_HASH => {
                        let e = ProposalQueued::decode_raw_log(topics, data)?;
                        lifecycles.entry(e.proposalId).or_default().queued.get_or_insert((step, e.etaSeconds));
                    }
                    Some(t) if t == ProposalExecuted::SIGNATURE_HASH => {
                        let id = ProposalExecuted::decode_raw_log(topics, data)?.proposalId;
                        lifecycles.entry(id).or_default().executed.get_or_insert(step);
                    }
                    Some(t) if t == ProposalCanceled::SIGNATURE_HASH => {
                        let id = ProposalCanceled::decode_raw_log(topics, data)?.proposalId;
                        lifecycles.entry(id).or_default().canceled.get_or_insert(step);
                    }
                    _ => {}
                }
            }
            ranges.read(end);
        }
        Ok(Record::LifecycleHistory(LifecycleHistoryRecord {
            dao_id: self.dao_id.clone(),
            from: from as i64,
            through: to as i64,
        }))
    }

    async fn place(&self, step: Step, times: &mut BlockTimes) -> anyhow::Result<ChainPlace> {
        Ok(ChainPlace {
            block: step.block as i64,
            at_ms: times.get(self, step.block).await?,
            tx: format!("{:#x}", step.tx),
        })
    }

    /// The governor's timelock's `GRACE_PERIOD()` in seconds; `None` for a governor without a
    /// timelock or a timelock without a grace period (its call reverts). A node that could not
    /// be asked fails the run: an answer is never stored without it.
    async fn grace_period(&self) -> anyhow::Result<Option<i64>> {
        let timelock = match self.call(timelockCall {}).await {
            Ok(t) if t != Address::ZERO => t,
            Ok(_) => return Ok(None),
            Err(e) if reverted(&e) => return Ok(None),
            Err(e) => return Err(e.context("governor.timelock")),
        };
        match self.call_to(&lower(timelock), GRACE_PERIODCall {}, json!("latest")).await {
            // A period beyond i64 seconds is no period any chain's time reaches.
            Ok(seconds) => Ok(i64::try_from(seconds).ok()),
            Err(e) if reverted(&e) => Ok(None),
            Err(e) => Err(e.context("timelock.GRACE_PERIOD")),
        }
    }
}
