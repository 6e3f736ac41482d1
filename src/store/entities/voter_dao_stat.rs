//! A voter's activity in one DAO, materialised at publication (the ranking reads it).
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "voter_dao_stats")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "voter_dao_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "voter_dao_natural")]
    pub voter: String,
    pub votes_cast: i64,
    /// Voting power of the voter's most recent vote in the DAO, exact text.
    pub voting_power: String,
    /// The same vote's `votes.vp_from_float` (migration 12).
    pub vp_from_float: bool,
    pub vp_sort: String,
    pub first_vote_ms: i64,
    pub last_vote_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
