//! The `votes` table of a DAO: its proposals oldest first, each proposal's votes by voter address,
//! read in keyset pages of the natural key's index (`proposal_id`, `voter`): one index range per
//! proposal, never a sort, and the same order (so the same bytes) for the same votes.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches};
use crate::contract::vocabulary::ProposalSource;
use crate::store::entities::{proposal, vote};
use crate::store::keys;

fn optional(v: Option<String>) -> Cell {
    v.map_or(Cell::Null, Cell::Text)
}

/// Sends every vote of `dao_id` as rows of `contract::exports::VOTES`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    let proposals: Vec<(i64, ProposalSource, String)> = proposal::Entity::find()
        .select_only()
        .columns([proposal::Column::Id, proposal::Column::Source, proposal::Column::ExternalId])
        .filter(proposal::Column::DaoId.eq(dao_id))
        .order_by_asc(proposal::Column::CreatedMs)
        .order_by_asc(proposal::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    let mut rows: Vec<Vec<Cell>> = Vec::with_capacity(BATCH_ROWS as usize);
    for (id, source, external_id) in proposals {
        let key = keys::proposal_key(dao_id, source.as_str(), &external_id);
        let mut after = None;
        loop {
            let mut q = vote::Entity::find().filter(vote::Column::ProposalId.eq(id));
            if let Some(voter) = after.take() {
                q = q.filter(vote::Column::Voter.gt(voter));
            }
            let page = q.order_by_asc(vote::Column::Voter).limit(BATCH_ROWS).all(db).await?;
            let full = page.len() as u64 == BATCH_ROWS;
            after = page.last().map(|v| v.voter.clone());
            for v in page {
                let wei = (source == ProposalSource::Onchain).then(|| v.voting_power.clone());
                rows.push(vec![
                    Cell::Text(dao_id.to_owned()),
                    Cell::Text(key.clone()),
                    Cell::Text(source.as_str().to_owned()),
                    Cell::Text(external_id.clone()),
                    Cell::Text(v.voter.lower()),
                    Cell::Text(v.choice),
                    Cell::Text(v.voting_power),
                    Cell::Boolean(v.vp_from_float),
                    wei.map_or(Cell::Null, Cell::Wei),
                    optional(v.reason),
                    Cell::Timestamp(v.created_ms),
                    optional(v.tx_hash),
                    v.block_number.map_or(Cell::Null, Cell::Integer),
                    optional(v.ipfs),
                ]);
                if rows.len() as u64 == BATCH_ROWS {
                    out.send(std::mem::take(&mut rows)).await?;
                }
            }
            if !full {
                break;
            }
        }
    }
    out.send(rows).await
}
