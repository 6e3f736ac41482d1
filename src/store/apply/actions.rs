//! Proposal actions: stored once per proposal, as its creation log proposed them.
//!
//! What a proposal proposes never changes, so a proposal that has actions keeps them and a
//! record for it changes nothing (a re-run, or a backfill racing a run that saw the proposal
//! created). Writing actions touches nothing served that a revision or the feed describes: a
//! backfill of proposals stored before actions were kept publishes nothing.
use std::collections::BTreeSet;

use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};

use super::Applier;
use crate::store::entities::proposal_action;
use crate::store::staging::ProposalActionsRecord;
use crate::store::upsert::TableCounts;

impl Applier<'_> {
    pub(super) async fn proposal_actions(
        &self,
        rows: &[ProposalActionsRecord],
        skipped: &mut Vec<String>,
    ) -> Result<TableCounts, DbErr> {
        let mut counts = TableCounts::default();
        if rows.is_empty() {
            return Ok(counts);
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let ids: Vec<i64> = stored.values().map(|p| p.id).collect();
        let with_actions: BTreeSet<i64> = proposal_action::Entity::find()
            .select_only()
            .column(proposal_action::Column::ProposalId)
            .filter(proposal_action::Column::ProposalId.is_in(ids))
            .distinct()
            .into_tuple::<i64>()
            .all(self.txn)
            .await?
            .into_iter()
            .collect();
        let mut done = BTreeSet::new();
        let mut models = Vec::new();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = stored.get(&key) else {
                skipped.push(format!(
                    "{}: actions of {} proposal {}: the store does not hold the proposal",
                    r.dao_id, r.proposal.source, r.proposal.external_id
                ));
                continue;
            };
            if with_actions.contains(&proposal.id) || !done.insert(proposal.id) {
                continue;
            }
            for (position, a) in r.actions.iter().enumerate() {
                models.push(proposal_action::ActiveModel {
                    proposal_id: sea_orm::Set(proposal.id),
                    position: sea_orm::Set(position as i32),
                    dao_id: sea_orm::Set(r.dao_id.clone()),
                    execution_path: sea_orm::Set(r.execution_path.clone()),
                    target: sea_orm::Set(a.target.clone()),
                    value_wei: sea_orm::Set(a.value_wei.clone()),
                    signature: sea_orm::Set(a.signature.clone()),
                    calldata: sea_orm::Set(a.calldata.clone()),
                    decoded: sea_orm::Set(a.decoded.clone()),
                    decoder_version: sea_orm::Set(a.decoder_version),
                });
            }
        }
        counts.inserted = models.len() as u64;
        for chunk in models.chunks(crate::store::upsert::BATCH) {
            proposal_action::Entity::insert_many(chunk.to_vec()).exec_without_returning(self.txn).await?;
        }
        Ok(counts)
    }
}
