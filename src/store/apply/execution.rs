//! Proposal executions: each on-chain proposal's lifecycle (queued, executed, canceled) as its
//! governor's logs recorded it, one row per proposal.
//!
//! A record carries the steps one run read; a step it does not carry keeps what is stored (the
//! queue read by an earlier run stays when a later one reads the execution). These are served
//! facts: a row written or changed touches its proposal and DAO, so the publication that writes
//! it is a new revision, like the state change the same logs bring.
use std::collections::{BTreeMap, BTreeSet};

use sea_orm::DbErr;

use super::Applier;
use crate::store::entities::proposal_execution;
use crate::store::publish::Touched;
use crate::store::staging::{ChainPlace, LifecycleHistoryRecord, ProposalExecutionRecord};
use crate::store::upsert::{Changes, TableCounts, stored, upsert};

impl Applier<'_> {
    pub(super) async fn proposal_executions(
        &self,
        rows: &[ProposalExecutionRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let proposals = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let ids: BTreeSet<i64> = proposals.values().map(|p| p.id).collect();
        let stored: BTreeMap<i64, proposal_execution::Model> =
            stored::<proposal_execution::Entity, _>(self.txn, proposal_execution::Column::ProposalId, ids)
                .await?
                .into_iter()
                .map(|m| (m.proposal_id, m))
                .collect();
        // Several records of one proposal in a page (never from one run today) fold in order.
        let mut desired: BTreeMap<i64, proposal_execution::Model> = BTreeMap::new();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = proposals.get(&key) else {
                skipped.push(format!(
                    "{}: execution of {} proposal {}: the store does not hold the proposal",
                    r.dao_id, r.proposal.source, r.proposal.external_id
                ));
                continue;
            };
            let row = desired
                .entry(proposal.id)
                .or_insert_with(|| stored.get(&proposal.id).cloned().unwrap_or_else(|| empty(proposal.id, &r.dao_id)));
            merge(row, r);
        }
        let mut changes = Changes::default();
        for (id, row) in desired {
            changes.offer(stored.get(&id), row, |_| {});
        }
        for row in &changes.rows {
            touched.proposals.insert(row.proposal_id);
            touched.daos.insert(row.dao_id.clone());
        }
        upsert::<proposal_execution::Entity>(self.txn, changes.rows, &[proposal_execution::Column::ProposalId], None)
            .await?;
        Ok(changes.counts)
    }

    /// Marks each DAO whose lifecycle history was read, in the publication that applied what
    /// it found: bookkeeping of ingestion, served nowhere.
    pub(super) async fn lifecycle_histories(&self, rows: &[LifecycleHistoryRecord]) -> Result<(), DbErr> {
        use sea_orm::EntityTrait;
        use sea_orm::sea_query::OnConflict;

        use crate::store::entities::setting;
        for r in rows {
            let row = setting::ActiveModel {
                key: sea_orm::Set(crate::store::staging::lifecycle_history_key(&r.dao_id)),
                value: sea_orm::Set(format!("{}..={}", r.from, r.through)),
            };
            setting::Entity::insert(row)
                .on_conflict(OnConflict::column(setting::Column::Key).update_column(setting::Column::Value).to_owned())
                .exec_without_returning(self.txn)
                .await?;
        }
        Ok(())
    }
}

fn empty(proposal_id: i64, dao_id: &str) -> proposal_execution::Model {
    proposal_execution::Model {
        proposal_id,
        dao_id: dao_id.to_owned(),
        queued_block: None,
        queued_ms: None,
        queued_tx: None,
        eta: None,
        grace_period_s: None,
        executed_block: None,
        executed_ms: None,
        executed_tx: None,
        canceled_block: None,
        canceled_ms: None,
        canceled_tx: None,
    }
}

/// The steps `r` carries replace the stored ones; the others stay.
fn merge(row: &mut proposal_execution::Model, r: &ProposalExecutionRecord) {
    let place = |p: &ChainPlace| (Some(p.block), Some(p.at_ms), Some(p.tx.clone()));
    if let Some(q) = &r.queued {
        (row.queued_block, row.queued_ms, row.queued_tx) = place(&q.place);
        row.eta = Some(q.eta.clone());
        row.grace_period_s = q.grace_period_s;
    }
    if let Some(e) = &r.executed {
        (row.executed_block, row.executed_ms, row.executed_tx) = place(e);
    }
    if let Some(c) = &r.canceled {
        (row.canceled_block, row.canceled_ms, row.canceled_tx) = place(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::vocabulary::ProposalSource;
    use crate::store::staging::{ProposalRef, QueuedRecord};

    fn at(block: i64) -> ChainPlace {
        ChainPlace { block, at_ms: block * 12_000, tx: format!("0x{block:064x}") }
    }

    fn record(queued: Option<QueuedRecord>, executed: Option<ChainPlace>) -> ProposalExecutionRecord {
        ProposalExecutionRecord {
            dao_id: "d".to_owned(),
            proposal: ProposalRef { source: ProposalSource::Onchain, external_id: "1".to_owned() },
            queued,
            executed,
            canceled: None,
        }
    }

    #[test]
    fn a_later_step_keeps_the_earlier_ones() {
        let mut row = empty(7, "d");
        let queued = QueuedRecord { place: at(10), eta: "1800000060".to_owned(), grace_period_s: Some(1_209_600) };
        merge(&mut row, &record(Some(queued), None));
        merge(&mut row, &record(None, Some(at(20))));
        assert_eq!(
            (row.queued_block, row.queued_ms, row.queued_tx.as_deref()),
            (Some(10), Some(120_000), Some(&*at(10).tx))
        );
        assert_eq!(row.eta.as_deref(), Some("1800000060"));
        assert_eq!(row.grace_period_s, Some(1_209_600));
        assert_eq!((row.executed_block, row.executed_ms), (Some(20), Some(240_000)));
        assert_eq!(row.canceled_block, None);
        // The same records again change nothing.
        let before = row.clone();
        merge(&mut row, &record(None, Some(at(20))));
        assert_eq!(row, before);
    }
}
