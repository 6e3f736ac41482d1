//! The `delegations` table of a DAO: each holder's current delegate by holder address, read in
//! keyset pages of the natural key's unique index (`ux_delegations_natural`: `dao_id,
//! delegator`), never a sort.
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches};
use crate::store::entities::delegation;

/// The address a token writes for "no delegate" (a withdrawn delegation).
const NO_DELEGATE: &str = "0x0000000000000000000000000000000000000000";

/// Sends every current delegation of `dao_id` as rows of `contract::exports::DELEGATIONS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use delegation::Column as D;
    let mut after: Option<String> = None;
    loop {
        let mut q = delegation::Entity::find().filter(D::DaoId.eq(dao_id));
        if let Some(a) = after.take() {
            q = q.filter(D::Delegator.gt(a));
        }
        let page = q.order_by_asc(D::Delegator).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|d| d.delegator.clone());
        let rows = page
            .into_iter()
            .map(|d| {
                vec![
                    Cell::Text(d.dao_id),
                    Cell::Text(d.delegator),
                    // As the API serves "no delegate": absent, not the zero address.
                    if d.delegate == NO_DELEGATE { Cell::Null } else { Cell::Text(d.delegate) },
                    Cell::Integer(d.block_number),
                ]
            })
            .collect();
        out.send(rows).await?;
        if !full {
            return Ok(());
        }
    }
}
