//! How far ingestion of one DAO from one source has got: the basis of dataAsOf.
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::SourceKind;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "source_watermarks")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "watermark_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "watermark_natural")]
    pub source: SourceKind,
    /// Upstream time up to which the data is complete (epoch ms).
    pub data_as_of_ms: Option<i64>,
    /// Connector-specific resume position (Snapshot `created`, block number, ...).
    pub position: Option<String>,
    pub last_run_id: Option<i64>,
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub updated_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
