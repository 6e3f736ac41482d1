//! Proposal simulations: kept per (proposal, block), the latest one served.
//!
//! A simulation changes a served answer (`simulation` on a proposal's detail), so it is applied
//! in the run's publication and marks its DAO as changed: a new revision is published, and the
//! response cache and ETags, which are per revision, never serve the answer without it. The
//! connector stages one only when it is due (no simulation kept, a new state, or the kept one
//! older than `SIMULATION_REDO_BLOCKS`), so an unchanged chain publishes nothing.
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, Set};

use super::Applier;
use crate::store::entities::proposal_simulation;
use crate::store::publish::Touched;
use crate::store::staging::ProposalSimulationRecord;
use crate::store::upsert::TableCounts;

impl Applier<'_> {
    pub(super) async fn proposal_simulations(
        &self,
        rows: &[ProposalSimulationRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        let mut counts = TableCounts::default();
        if rows.is_empty() {
            return Ok(counts);
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = stored.get(&key) else {
                skipped.push(format!(
                    "{}: simulation of {} proposal {}: the store does not hold the proposal",
                    r.dao_id, r.proposal.source, r.proposal.external_id
                ));
                continue;
            };
            let kept = proposal_simulation::Entity::find()
                .filter(proposal_simulation::Column::ProposalId.eq(proposal.id))
                .all(self.txn)
                .await?;
            // A newer one kept already (a run that read a later block): this one is not served.
            if kept.iter().any(|k| k.block_number > r.block) {
                continue;
            }
            let same = kept.iter().find(|k| k.block_number == r.block);
            if same.is_some_and(|k| k.result == r.result && k.proposal_state == r.state.as_str()) {
                continue;
            }
            proposal_simulation::Entity::delete_many()
                .filter(proposal_simulation::Column::ProposalId.eq(proposal.id))
                .exec(self.txn)
                .await?;
            proposal_simulation::Entity::insert(proposal_simulation::ActiveModel {
                proposal_id: Set(proposal.id),
                block_number: Set(r.block),
                dao_id: Set(r.dao_id.clone()),
                proposal_state: Set(r.state.as_str().to_owned()),
                outcome: Set(r.outcome.clone()),
                result: Set(r.result.clone()),
                simulated_ms: Set(self.now_ms),
            })
            .exec_without_returning(self.txn)
            .await?;
            if kept.is_empty() {
                counts.inserted += 1;
            } else {
                counts.updated += 1;
            }
            touched.daos.insert(r.dao_id.clone());
        }
        Ok(counts)
    }
}
