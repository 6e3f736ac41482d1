//! The `delegates` table of a DAO: its delegates by address, read in keyset pages of the natural
//! key's unique index (`delegate_natural`: `dao_id, address`), never a sort; each page's ENS names
//! in one batched look-up (`store::voters::ens_names`).
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, integer, text};
use crate::store::entities::delegate;
use crate::store::voters::ens_names;

/// Sends every delegate of `dao_id` as rows of `contract::exports::DELEGATES`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use delegate::Column as D;
    let mut after: Option<String> = None;
    loop {
        let mut q = delegate::Entity::find().filter(D::DaoId.eq(dao_id));
        if let Some(a) = after.take() {
            q = q.filter(D::Address.gt(a));
        }
        let page = q.order_by_asc(D::Address).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|d| d.address.clone());
        let ens = ens_names(db, page.iter().map(|d| d.address.clone())).await?;
        let rows = page
            .into_iter()
            .map(|d| {
                let name = text(ens.get(&d.address).cloned());
                vec![
                    Cell::Text(d.dao_id),
                    Cell::Text(d.address),
                    name,
                    Cell::Wei(d.voting_power_raw),
                    Cell::Integer(d.decimals.into()),
                    Cell::Text(d.voting_power),
                    integer(d.delegators_count),
                    Cell::Text(d.origin),
                    Cell::Timestamp(d.as_of_ms),
                ]
            })
            .collect();
        out.send(rows).await?;
        if !full {
            return Ok(());
        }
    }
}
