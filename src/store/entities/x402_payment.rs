//! An x402 payment: reserved before verification, settled or failed after.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "x402_payments")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "payment_nonce")]
    pub payer: String,
    #[sea_orm(unique_key = "payment_nonce")]
    pub nonce: String,
    pub status: PaymentStatus,
    pub x402_version: i32,
    pub amount: String,
    pub asset: String,
    pub network: String,
    pub pay_to: String,
    pub endpoint: String,
    pub transaction: Option<String>,
    pub error: Option<String>,
    pub created_ms: i64,
    pub settled_ms: Option<i64>,
}

/// Where a payment stands, stored as its text (`reserved`, `settled`, `failed`), the column type
/// `String`'s: the table is made from this entity, so its schema stays what it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum PaymentStatus {
    /// Taken before the facilitator saw it; stays so when a settlement's outcome is unknown.
    #[sea_orm(string_value = "reserved")]
    Reserved,
    #[sea_orm(string_value = "settled")]
    Settled,
    /// Nothing was charged.
    #[sea_orm(string_value = "failed")]
    Failed,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
