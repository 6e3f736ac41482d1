//! Per-DAO counts and freshness, materialised at publication so lists never count rows per request.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dao_summaries")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub dao_id: String,
    pub proposals: i64,
    pub active_proposals: i64,
    /// Sum of the upstream vote totals of the DAO's proposals (Snapshot `votes`).
    pub upstream_votes: i64,
    /// Votes actually held in this store.
    pub ingested_votes: i64,
    pub voters: i64,
    pub delegates: i64,
    pub forum_topics: i64,
    pub data_as_of_ms: Option<i64>,
    pub revision_id: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
