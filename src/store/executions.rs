//! An on-chain proposal's execution lifecycle (`proposal_executions`, migration 28): one
//! primary-key read per proposal detail.
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};

use super::entities::proposal_execution;

/// The lifecycle stored for proposal `proposal_id`; `None` when its governor's logs recorded no
/// queue, execution or cancellation (and for every Snapshot proposal).
pub async fn of(db: &impl ConnectionTrait, proposal_id: i64) -> Result<Option<proposal_execution::Model>, DbErr> {
    proposal_execution::Entity::find_by_id(proposal_id).one(db).await
}
