//! One contract's ERC-20 metadata as read from the chain (migration 29): ingestion bookkeeping,
//! never served.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "token_metadata")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub chain_id: i64,
    /// Lowercase 0x address.
    #[sea_orm(primary_key, auto_increment = false)]
    pub address: String,
    /// `symbol()`; with `decimals`, present only for an ERC-20 (both absent: not one).
    pub symbol: Option<String>,
    /// `decimals()`.
    pub decimals: Option<i32>,
    /// When the chain was asked.
    pub checked_ms: i64,
    /// When it is asked again; never when `None` (an ERC-20).
    pub retry_ms: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
