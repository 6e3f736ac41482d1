//! Each proposal's actions, as its `ProposalCreated` log proposed them, decoded once here
//! (`rules::actions`) and staged with the proposal; and the one-time backfill of proposals stored
//! before actions were kept, read from their creation logs by the block the store recorded.
use alloy_primitives::{Address, U256};
use alloy_sol_types::SolEvent;
use anyhow::Context;
use serde_json::json;

use super::abi::{ProposalCreated, timelockCall};
use super::{GovernorConnector, lower};
use crate::contract::vocabulary::ProposalSource;
use crate::ingest::Sink;
use crate::rules::actions::{self, AbiSource, Known, ProposedAction};
use crate::store::staging::{ActionRecord, ProposalActionsRecord, ProposalRef, Record};

/// The only execution path a governor's proposal has (Snapshot's Safe modules would be others).
pub const EXECUTION_PATH: &str = "governor";

/// What decoding one run's actions needs: the ABIs the registry names (read once per run) and
/// the account that executes them (the governor's timelock where it has one, else the governor).
pub(super) struct Decoding {
    known: Known,
    executor: Address,
}

impl GovernorConnector {
    pub(super) async fn decoding(&self, governor: Address) -> anyhow::Result<Decoding> {
        let mut known = Known::default();
        for file in &self.source.abis {
            let (address, abi) = file.read()?;
            known.abis.entry(address).or_default().push((AbiSource::Registry, abi));
        }
        // A governor without `timelock()` executes its proposals itself (GovernorBravo's
        // timelock is its `admin`, not read here: its actions are decoded from the governor).
        let executor = match self.call(timelockCall {}).await {
            Ok(timelock) if timelock != Address::ZERO => {
                known.labels.insert(timelock, "the timelock".to_owned());
                timelock
            }
            _ => governor,
        };
        known.labels.entry(governor).or_insert_with(|| "the governor".to_owned());
        Ok(Decoding { known, executor })
    }

    /// The actions of `event`, decoded, as staged.
    pub(super) fn actions(&self, event: &ProposalCreated, decoding: &Decoding) -> Record {
        let n = event.targets.len();
        // The arrays have one entry per action (the governor checks it); a signature array left
        // empty or shorter (OpenZeppelin passes empty strings) means no signature.
        let proposed: Vec<ProposedAction> = (0..n)
            .map(|i| ProposedAction {
                target: event.targets[i],
                value: event.values.get(i).copied().unwrap_or(U256::ZERO),
                signature: event.signatures.get(i).filter(|s| !s.is_empty()).cloned(),
                calldata: event.calldatas.get(i).map(|c| c.to_vec()).unwrap_or_default(),
            })
            .collect();
        let decoded = actions::decode_actions(&decoding.known, &decoding.executor, &proposed);
        let actions = proposed
            .iter()
            .zip(decoded)
            .map(|(p, d)| ActionRecord {
                target: lower(p.target),
                value_wei: p.value.to_string(),
                signature: p.signature.clone(),
                calldata: actions::hex(&p.calldata),
                decoded: serde_json::to_string(&d).expect("a decoded action serialises"),
                decoder_version: actions::DECODER_VERSION,
            })
            .collect();
        Record::ProposalActions(ProposalActionsRecord {
            dao_id: self.dao_id.clone(),
            proposal: ProposalRef { source: ProposalSource::Onchain, external_id: event.proposalId.to_string() },
            execution_path: EXECUTION_PATH.to_owned(),
            actions,
        })
    }

    /// Stages the actions of proposals stored before actions were kept: one `eth_getLogs` per
    /// creation block the store recorded (the governor connector records every one). A proposal
    /// whose log is not found there is reported and skipped; nothing else is staged for it.
    pub(super) async fn backfill_actions(
        &self,
        without: &[(String, Option<u64>)],
        governor: Address,
        safe: u64,
        decoding: &Decoding,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<()> {
        let mut by_block: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
        for (id, block) in without {
            match block {
                Some(b) if *b <= safe => by_block.entry(*b).or_default().push(id),
                Some(_) => {}
                None => sink.skip(format!(
                    "{}: proposal {id}: no creation block stored, its actions are not read",
                    self.dao_id
                )),
            }
        }
        for (block, ids) in by_block {
            let filter = json!([{
                "fromBlock": format!("{block:#x}"),
                "toBlock": format!("{block:#x}"),
                "address": [governor],
                "topics": [[ProposalCreated::SIGNATURE_HASH]],
            }]);
            let logs: Vec<super::rpc::Log> =
                self.rpc("eth_getLogs", filter).await.with_context(|| format!("creation logs of block {block}"))?;
            for id in ids {
                let found = logs.iter().filter(|l| !l.removed).find_map(|l| {
                    let e = ProposalCreated::decode_raw_log(l.topics.iter().copied(), &l.data).ok()?;
                    (e.proposalId.to_string() == id).then_some(e)
                });
                match found {
                    Some(event) => sink.push(self.actions(&event, decoding)).await?,
                    None => sink.skip(format!(
                        "{}: proposal {id}: no ProposalCreated log in block {block}, its actions are not read",
                        self.dao_id
                    )),
                }
            }
        }
        Ok(())
    }
}
