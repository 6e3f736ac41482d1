//! Each proposal's actions, as its `ProposalCreated` log proposed them, decoded once here
//! (`rules::actions`) and staged with the proposal; and the one-time backfill of proposals stored
//! before actions were kept, read from their creation logs by the block the store recorded.
use alloy_primitives::{Address, U256};
use alloy_sol_types::SolEvent;

use super::GovernorConnector;
use super::abi::{ProposalCreated, timelockCall};
use crate::contract::vocabulary::ProposalSource;
use crate::ingest::staged_actions;
use crate::ingest::{Sink, UpstreamError};
use crate::rules::actions::{AbiSource, Known, ProposedAction};
use crate::store::entities::proposal_action::ExecutionPath;
use crate::store::staging::{ProposalActionsRecord, ProposalRef, Record};

/// What decoding one run's actions needs: the ABIs the registry names (read once per run) and
/// the account that executes them (the governor's timelock where it has one, else the governor).
pub(super) struct Decoding {
    /// The ABIs, tokens and labels known, and the executor.
    pub(super) base: staged_actions::Decoding,
    /// What the run learned of contracts so far (`contracts`).
    pub(super) learned: super::contracts::Learned,
}

impl GovernorConnector {
    /// What decoding needs, read when a run has actions to decode: the registry's ABIs (parsed
    /// once, when the registry was loaded) and the executor.
    pub(super) async fn decoding(&self, governor: Address) -> anyhow::Result<Decoding> {
        let mut known = Known::default();
        for file in &self.source.abis {
            let loaded = file.abi()?;
            let (address, abi) = &*loaded;
            known.abis.entry(*address).or_default().push((AbiSource::Registry, abi.clone()));
        }
        // A governor without `timelock()` (its call reverts, or answers nothing decodable)
        // executes its proposals itself; OpenZeppelin's timelock extensions and GovernorBravo
        // all answer `timelock()`.
        // A node that could not be asked is no answer: the run fails rather than store actions
        // decoded for the wrong sender (actions are stored once).
        let executor = match self.call(timelockCall {}).await {
            Ok(timelock) if timelock != Address::ZERO => {
                known.labels.insert(timelock, "the timelock".to_owned());
                timelock
            }
            Ok(_) => governor,
            Err(e) if reverted(&e) => governor,
            Err(e) => return Err(e.context("governor.timelock")),
        };
        known.labels.entry(governor).or_insert_with(|| "the governor".to_owned());
        Ok(Decoding { base: staged_actions::Decoding { known, executor }, learned: Default::default() })
    }

    /// The actions of `event`, decoded (with what the contracts they call tell, learned first),
    /// as staged.
    pub(super) async fn actions(
        &self,
        event: &ProposalCreated,
        decoding: &mut Decoding,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<Record> {
        let proposed = proposed(event);
        self.learn(&proposed, &decoding.base.executor, &mut decoding.base.known, &mut decoding.learned, sink).await?;
        let proposal = ProposalRef { source: ProposalSource::Onchain, external_id: event.proposalId.to_string() };
        Ok(staged_actions::record(&self.dao_id, proposal, ExecutionPath::Governor, &proposed, &decoding.base))
    }

    /// A proposal whose creation log was not found: noted, so that it is looked for again only
    /// after `staging::ACTIONS_RETRY_AFTER`.
    fn missed(&self, id: &str) -> Record {
        Record::ProposalActions(ProposalActionsRecord {
            dao_id: self.dao_id.clone(),
            proposal: ProposalRef { source: ProposalSource::Onchain, external_id: id.to_owned() },
            execution_path: ExecutionPath::Governor,
            actions: None,
        })
    }

    /// Stages the actions of proposals stored before actions were kept: one `eth_getLogs` per
    /// creation block the store recorded (the governor connector records every one). A proposal
    /// with no block stored, or whose log is not there, is reported and noted as a miss. A node
    /// that fails the read ends the backfill for this run only: it is a one-time completion,
    /// and never holds back the run's proposals, votes and delegations.
    pub(super) async fn backfill_actions(
        &self,
        without: &[(String, Option<u64>)],
        governor: Address,
        safe: u64,
        decoding: &mut Decoding,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        let mut by_block: std::collections::BTreeMap<u64, Vec<(&str, U256)>> = Default::default();
        for (id, block) in without {
            let parsed = id.parse::<U256>().ok();
            match (block, parsed) {
                (Some(b), Some(parsed)) if *b <= safe => by_block.entry(*b).or_default().push((id, parsed)),
                (Some(_), Some(_)) => {}
                _ => {
                    sink.skip(format!(
                        "{}: proposal {id}: no creation block stored, its actions are not read",
                        self.dao_id
                    ));
                    sink.push(self.missed(id)).await?;
                }
            }
        }
        for (block, ids) in by_block {
            let logs = match self.logs_of(&[governor], &[ProposalCreated::SIGNATURE_HASH], block, block).await {
                Ok(logs) => logs,
                Err(e) => {
                    sink.skip(format!(
                        "{}: the creation logs of block {block} could not be read ({e:#}); the actions of \
                         proposals stored without them are read on a later run",
                        self.dao_id
                    ));
                    return Ok(());
                }
            };
            let created: Vec<ProposalCreated> = logs
                .iter()
                .filter(|l| !l.removed)
                .filter_map(|l| ProposalCreated::decode_raw_log(l.topics.iter().copied(), &l.data).ok())
                .collect();
            for (id, parsed) in ids {
                match created.iter().find(|e| e.proposalId == parsed) {
                    Some(event) => {
                        let record = self.actions(event, decoding, sink).await?;
                        sink.push(record).await?
                    }
                    None => {
                        sink.skip(format!(
                            "{}: proposal {id}: no ProposalCreated log in block {block}, its actions are not read",
                            self.dao_id
                        ));
                        sink.push(self.missed(id)).await?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The actions of `event`, as proposed. The arrays have one entry per action (the governor
/// checks it); a signature array left empty or shorter (OpenZeppelin passes empty strings)
/// means no signature.
pub(super) fn proposed(event: &ProposalCreated) -> Vec<ProposedAction> {
    (0..event.targets.len())
        .map(|i| ProposedAction {
            target: event.targets[i],
            value: event.values.get(i).copied().unwrap_or(U256::ZERO),
            signature: event.signatures.get(i).filter(|s| !s.is_empty()).cloned(),
            calldata: event.calldatas.get(i).map(|c| c.to_vec()).unwrap_or_default(),
        })
        .collect()
}

/// Whether `e` is the node's answer that the call reverted or returned nothing the ABI reads
/// (a contract without the function), as opposed to a node that could not be asked.
pub(super) fn reverted(e: &anyhow::Error) -> bool {
    match e.downcast_ref::<UpstreamError>() {
        Some(UpstreamError::Protocol { .. }) => true,
        Some(_) => false,
        None => true,
    }
}
