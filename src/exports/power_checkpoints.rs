//! The `power_checkpoints` table of a DAO: every `DelegateVotesChanged` of its token in chain
//! order (block, then log index), read in keyset pages of the natural key's unique index
//! (`power_checkpoint_log`: `dao_id, block_number, log_index`), never a sort.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, after_asc, text};
use crate::store::entities::power_checkpoint;

/// Sends every power checkpoint of `dao_id` as rows of `contract::exports::POWER_CHECKPOINTS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use power_checkpoint::Column as C;
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut q = power_checkpoint::Entity::find().filter(C::DaoId.eq(dao_id));
        if let Some(k) = after {
            q = q.filter(after_asc(C::BlockNumber, C::LogIndex, k));
        }
        let page = q.order_by_asc(C::BlockNumber).order_by_asc(C::LogIndex).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|c| (c.block_number, c.log_index));
        let rows = page
            .into_iter()
            .map(|c| {
                vec![
                    Cell::Text(c.dao_id),
                    Cell::Text(c.delegate.lower()),
                    Cell::Wei(c.previous_raw),
                    Cell::Wei(c.power_raw),
                    Cell::Integer(c.decimals.into()),
                    Cell::Text(c.cause.as_str().to_owned()),
                    text(c.cause_delegator.map(|d| d.lower())),
                    Cell::Integer(c.block_number),
                    Cell::Integer(c.log_index),
                    Cell::Text(c.tx_hash),
                    Cell::Timestamp(c.at_ms),
                ]
            })
            .collect();
        out.send(rows).await?;
        if !full {
            return Ok(());
        }
    }
}
