//! Whom a token holder delegates their voting power to, as the token's `DelegateChanged` events
//! last said: the basis of a governor delegate's `delegators_count`.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "delegations")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "delegation_natural")]
    pub dao_id: String,
    /// Lowercase 0x address of the token holder.
    #[sea_orm(unique_key = "delegation_natural")]
    pub delegator: String,
    /// Lowercase 0x address; the zero address when the holder withdrew the delegation.
    pub delegate: String,
    /// Block of the event that set it; an older event never overwrites a newer one.
    pub block_number: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
