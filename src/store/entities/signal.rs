//! A curated signal produced by a named rule, with the evidence that triggered it.
use sea_orm::entity::prelude::*;

use crate::contract::signals::{Severity, SignalKind};
use crate::contract::vocabulary::{ItemKind, SourceKind};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize, serde::Deserialize)]
#[sea_orm(table_name = "signals")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub natural_key: String,
    pub dao_id: String,
    pub kind: SignalKind,
    pub severity: Severity,
    pub subject_kind: ItemKind,
    pub subject_external_id: String,
    pub subject_source: SourceKind,
    pub proposal_id: Option<i64>,
    pub topic_id: Option<i64>,
    pub detected_ms: i64,
    pub summary: String,
    /// JSON object: exact numbers and citations.
    pub evidence: String,
    pub revision_id: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
