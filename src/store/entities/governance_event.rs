//! A dated governance event with its subject and its source citation.
use sea_orm::entity::prelude::*;

use crate::contract::events::EventKind;
use crate::contract::vocabulary::{ItemKind, SourceKind};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "governance_events")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Idempotency key: the same upstream fact always gets the same key.
    #[sea_orm(unique)]
    pub natural_key: String,
    pub dao_id: String,
    pub kind: EventKind,
    pub occurred_ms: i64,
    pub subject_kind: ItemKind,
    pub subject_external_id: String,
    pub subject_source: SourceKind,
    pub proposal_id: Option<i64>,
    pub topic_id: Option<i64>,
    pub actor: Option<String>,
    pub url: Option<String>,
    pub snapshot_id: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
    /// JSON object of event-specific exact values.
    pub details: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
