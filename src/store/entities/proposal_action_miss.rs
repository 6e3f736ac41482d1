//! An on-chain proposal stored without actions whose creation log was looked for and not found
//! (migration 27): the backfill looks again only after `staging::ACTIONS_RETRY_AFTER`.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposal_action_misses")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    /// When the log was last looked for.
    pub checked_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
