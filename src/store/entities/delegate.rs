//! Delegated on-chain voting power; raw integers in the token's smallest unit.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "delegates")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "delegate_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "delegate_natural")]
    pub address: String,
    pub voting_power_raw: String,
    pub decimals: i32,
    /// `voting_power_raw` scaled by `decimals`, exact.
    pub voting_power: String,
    pub vp_sort: String,
    pub delegators_count: Option<i64>,
    /// tally-sample-csv | governor-logs
    pub origin: String,
    pub as_of_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
