//! One record fetched by an ingestion run and not yet published. Publication applies a run's
//! records to the served tables in one transaction and then deletes them; nothing reads this
//! table to answer a request.
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::SourceKind;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "staged_records")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub run_id: i64,
    pub dao_id: String,
    pub source: SourceKind,
    /// Application order: referenced records (proposals, topics) before the records that
    /// reference them (votes, posts).
    pub stage: i32,
    /// The record as JSON (`store::staging::Record`).
    pub payload: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
