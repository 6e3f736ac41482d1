//! The `delegation_changes` table of a DAO: every `DelegateChanged` of its token in chain order
//! (block, then log index), read in keyset pages of the natural key's unique index
//! (`delegation_change_log`: `dao_id, block_number, log_index`), never a sort.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, after_asc};
use crate::store::address::AccountBytes;
use crate::store::entities::delegation_change;
use crate::store::keys;

/// An address, null for the zero address (a token's "no delegate"), as the API serves it.
fn delegate(a: &AccountBytes) -> Cell {
    if a.0.iter().all(|b| *b == 0) { Cell::Null } else { Cell::Text(a.lower()) }
}

/// Sends every delegation change of `dao_id` as rows of `contract::exports::DELEGATION_CHANGES`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use delegation_change::Column as C;
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut q = delegation_change::Entity::find().filter(C::DaoId.eq(dao_id));
        if let Some(k) = after {
            q = q.filter(after_asc(C::BlockNumber, C::LogIndex, k));
        }
        let page = q.order_by_asc(C::BlockNumber).order_by_asc(C::LogIndex).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|c| (c.block_number, c.log_index));
        let rows = page
            .into_iter()
            .map(|c| {
                let id = keys::delegation_id(&c.dao_id, c.block_number, c.log_index);
                vec![
                    Cell::Text(c.dao_id),
                    Cell::Text(id),
                    Cell::Text(c.delegator.lower()),
                    delegate(&c.from_delegate),
                    delegate(&c.to_delegate),
                    Cell::Wei(c.power_moved_raw),
                    Cell::Integer(c.decimals.into()),
                    c.supply_raw.map_or(Cell::Null, Cell::Wei),
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
