//! A moment the feed reported for a proposal (migration 34): one row per proposal, kind and
//! horizon, written in the publication that fed it. Its key is what makes a timed entry exactly
//! once, whichever process and publication gets there first.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "feed_moments")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    /// The feed kind (`voting_ends_soon`, `voting_ended`, `quorum_reached`, `proposal_executable`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    /// The horizon of a `voting_ends_soon` in seconds; 0 for the other kinds.
    #[sea_orm(primary_key, auto_increment = false)]
    pub horizon_s: i64,
    pub dao_id: String,
    /// The moment the entry marks (epoch ms).
    pub moment_ms: i64,
    /// The data revision whose publication fed it.
    pub revision_id: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
