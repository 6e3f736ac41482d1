//! A publication of the dataset. The highest id is the serving revision.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "data_revisions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub published_ms: i64,
    pub data_as_of_ms: i64,
    pub run_id: Option<i64>,
    /// What changed, for operators: a short human-readable line.
    pub summary: String,
    /// Row counts of the dataset as this revision published it (migration 8): counted once at
    /// publication so that the freshness answer reads one row.
    pub voters: i64,
    pub forum_topics: i64,
    pub governance_events: i64,
    pub signals: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
