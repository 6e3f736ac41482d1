//! A covered DAO: the registry row. `id` is the public daoId slug.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "daos")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    /// Governance token symbol as the upstream records it (UNI, ARB, ...).
    pub symbol: Option<String>,
    pub snapshot_space: Option<String>,
    pub discourse_url: Option<String>,
    pub chain_id: Option<i64>,
    pub governor: Option<String>,
    pub token: Option<String>,
    pub registered_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
