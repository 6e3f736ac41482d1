//! Proposal actions: stored once per proposal, as its creation log proposed them.
//!
//! What a proposal proposes never changes, so a proposal that has actions decoded by this
//! decoder (`DECODER_VERSION`) keeps them and a record for it changes nothing (a re-run, or a
//! backfill racing a run that saw the proposal created); one whose actions an older decoder
//! answered gets them anew, replaced in the same transaction. Actions are served, so writing them touches their DAO and the publication makes a
//! revision (answers are cached per revision); they change nothing the feed describes, so a
//! backfill of proposals stored before actions were kept publishes a revision and no entry. A
//! proposal whose creation log the backfill did not find is noted as a miss, looked for again
//! after a while.
use std::collections::BTreeSet;

use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QuerySelect, Set};

use super::Applier;
use crate::rules::actions::DECODER_VERSION;
use crate::store::entities::{proposal_action, proposal_action_miss};
use crate::store::publish::Touched;
use crate::store::staging::ProposalActionsRecord;
use crate::store::upsert::TableCounts;

impl Applier<'_> {
    pub(super) async fn proposal_actions(
        &self,
        rows: &[ProposalActionsRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        let mut counts = TableCounts::default();
        if rows.is_empty() {
            return Ok(counts);
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let ids: Vec<i64> = stored.values().map(|p| p.id).collect();
        // Which of them hold actions, and by which decoder: those decoded by this one keep
        // them; those of an older decoder get the new answer (same raw values, decoded anew).
        let held: Vec<(i64, i32)> = proposal_action::Entity::find()
            .select_only()
            .column(proposal_action::Column::ProposalId)
            .column(proposal_action::Column::DecoderVersion)
            .filter(proposal_action::Column::ProposalId.is_in(ids))
            .filter(proposal_action::Column::Position.eq(0))
            .into_tuple()
            .all(self.txn)
            .await?;
        let current: BTreeSet<i64> = held.iter().filter(|(_, v)| *v >= DECODER_VERSION).map(|(id, _)| *id).collect();
        let older: BTreeSet<i64> = held.iter().filter(|(_, v)| *v < DECODER_VERSION).map(|(id, _)| *id).collect();
        let mut done = BTreeSet::new();
        let mut models = Vec::new();
        let mut misses = Vec::new();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = stored.get(&key) else {
                skipped.push(format!(
                    "{}: actions of {} proposal {}: the store does not hold the proposal",
                    r.dao_id, r.proposal.source, r.proposal.external_id
                ));
                continue;
            };
            if current.contains(&proposal.id) || !done.insert(proposal.id) {
                continue;
            }
            let Some(actions) = &r.actions else {
                misses.push(proposal_action_miss::ActiveModel {
                    proposal_id: Set(proposal.id),
                    checked_ms: Set(self.now_ms),
                });
                continue;
            };
            // Served: the DAO's next revision carries them (answers are cached per revision),
            // while nothing a feed entry describes changed.
            if !actions.is_empty() {
                touched.daos.insert(r.dao_id.clone());
            }
            for (position, a) in actions.iter().enumerate() {
                models.push(proposal_action::ActiveModel {
                    proposal_id: Set(proposal.id),
                    position: Set(position as i32),
                    dao_id: Set(r.dao_id.clone()),
                    execution_path: Set(r.execution_path),
                    target: Set(a.target.clone()),
                    value_wei: Set(a.value_wei.clone()),
                    signature: Set(a.signature.clone()),
                    calldata: Set(a.calldata.clone()),
                    decoded: Set(a.decoded.clone()),
                    decoder_version: Set(DECODER_VERSION),
                });
            }
        }
        let (redone, new): (Vec<_>, Vec<_>) = models.iter().partition(|m| older.contains(m.proposal_id.as_ref()));
        (counts.inserted, counts.updated) = (new.len() as u64, redone.len() as u64);
        let replaced: Vec<i64> = older.intersection(&done).copied().collect();
        proposal_action::Entity::delete_many()
            .filter(proposal_action::Column::ProposalId.is_in(replaced))
            .exec(self.txn)
            .await?;
        let found: Vec<i64> = done.iter().copied().collect();
        proposal_action_miss::Entity::delete_many()
            .filter(proposal_action_miss::Column::ProposalId.is_in(found))
            .exec(self.txn)
            .await?;
        for chunk in models.chunks(crate::store::upsert::BATCH) {
            proposal_action::Entity::insert_many(chunk.to_vec()).exec_without_returning(self.txn).await?;
        }
        // A miss is bookkeeping of the backfill (it serves nothing): counted nowhere, replaced
        // when the proposal is missed again.
        if !misses.is_empty() {
            proposal_action_miss::Entity::insert_many(misses)
                .on_conflict(
                    OnConflict::column(proposal_action_miss::Column::ProposalId)
                        .update_column(proposal_action_miss::Column::CheckedMs)
                        .to_owned(),
                )
                .exec_without_returning(self.txn)
                .await?;
        }
        Ok(counts)
    }
}
