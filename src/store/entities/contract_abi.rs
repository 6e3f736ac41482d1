//! What Sourcify answered for one contract (migration 29): ingestion bookkeeping, never served.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "contract_abis")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub chain_id: i64,
    /// Lowercase 0x address.
    #[sea_orm(primary_key, auto_increment = false)]
    pub address: String,
    /// `verified`, `not_verified` or `failed` (`store::contracts::AbiStatus`).
    pub status: String,
    /// The verified ABI, as Sourcify's JSON array (only when verified).
    pub abi: Option<String>,
    /// Sourcify's `match`: `exact_match` or `match` (partial), when verified.
    pub match_kind: Option<String>,
    /// Why a lookup failed.
    pub message: Option<String>,
    /// When Sourcify was asked.
    pub checked_ms: i64,
    /// When it is asked again; never when `None` (a verified ABI).
    pub retry_ms: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
