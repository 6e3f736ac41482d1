//! The `proposals` table of a DAO: oldest first (`created_ms`, then the row id as the tie-break),
//! read in keyset pages of `ix_proposals_dao_created` (`dao_id, created_ms DESC, id DESC`) walked
//! backwards: the DAO's index range, never a sort. The votes export walks proposals in the same
//! order.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, after_asc, integer, text, timestamp};
use crate::store::entities::proposal;

/// Sends every proposal of `dao_id` as rows of `contract::exports::PROPOSALS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use proposal::Column as P;
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut q = proposal::Entity::find().filter(P::DaoId.eq(dao_id));
        if let Some(k) = after {
            q = q.filter(after_asc(P::CreatedMs, P::Id, k));
        }
        let page = q.order_by_asc(P::CreatedMs).order_by_asc(P::Id).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|p| (p.created_ms, p.id));
        out.send(page.into_iter().map(row).collect()).await?;
        if !full {
            return Ok(());
        }
    }
}

fn row(p: proposal::Model) -> Vec<Cell> {
    vec![
        Cell::Text(p.dao_id),
        // The stored key is the one `/v2/proposals` serves (`store::keys::proposal_key` of the
        // natural key, written with the row).
        Cell::Text(p.proposal_key),
        Cell::Text(p.source.as_str().to_owned()),
        Cell::Text(p.external_id),
        Cell::Text(p.title),
        text(p.body),
        Cell::Text(p.author),
        text(p.voting_type),
        Cell::Text(p.state.as_str().to_owned()),
        text(p.choices.map(|c| c.to_json())),
        text(p.scores.map(|s| s.to_json())),
        text(p.scores_total),
        text(p.scores_state),
        text(p.quorum),
        text(p.top_choice_pct),
        Cell::Timestamp(p.created_ms),
        timestamp(p.start_ms),
        timestamp(p.end_ms),
        integer(p.upstream_vote_count),
        Cell::Integer(p.ingested_vote_count),
        text(p.url),
        text(p.discussion_url),
        text(p.ipfs),
        text(p.snapshot_block),
        text(p.tx_hash),
        integer(p.block_number),
        text(p.counting_mode),
        text(p.clock_mode),
        text(p.privacy),
        Cell::Text(p.origin),
    ]
}
