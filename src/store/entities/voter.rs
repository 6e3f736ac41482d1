//! A voter across DAOs; the canonical handle is the lowercase 0x address.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "voters")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub address: String,
    /// EIP-55 checksummed form (as recorded for 32-byte addresses).
    pub address_display: String,
    pub ens: Option<String>,
    pub name: Option<String>,
    pub first_seen_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
