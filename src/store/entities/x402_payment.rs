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
    /// reserved | settled | failed
    pub status: String,
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

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
