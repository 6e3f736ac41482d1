//! Every `DelegateVotesChanged` a governance token emitted (migration 16): one delegate's voting
//! power before and after, with its cause. Append-only, keyed like `delegation_changes`.
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::PowerCause;
use crate::store::address::AccountBytes;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "power_checkpoints")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "power_checkpoint_log")]
    pub dao_id: String,
    /// The address bytes of the delegate whose power changed.
    pub delegate: AccountBytes,
    /// Exact integers in the token's smallest unit.
    pub previous_raw: String,
    pub power_raw: String,
    pub decimals: i32,
    pub cause: PowerCause,
    /// For a delegation: the holder who delegated or withdrew.
    pub cause_delegator: Option<AccountBytes>,
    #[sea_orm(unique_key = "power_checkpoint_log")]
    pub block_number: i64,
    #[sea_orm(unique_key = "power_checkpoint_log")]
    pub log_index: i64,
    pub tx_hash: String,
    pub at_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
