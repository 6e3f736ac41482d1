//! One run of an importer or connector; the audit trail behind freshness.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingestion_runs")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// import | schedule | manual
    pub trigger: String,
    pub dao_filter: Option<String>,
    pub source_filter: Option<String>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// running | succeeded | failed
    pub status: String,
    pub rows_written: i64,
    pub rows_skipped: i64,
    pub error: Option<String>,
    pub revision_id: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
