//! Every `DelegateChanged` a governance token emitted (migration 16): a holder moving its votes
//! from one delegate to another. Append-only, keyed by the log's place on chain (`block_number`,
//! `log_index`), so re-reading a range changes nothing.
use sea_orm::entity::prelude::*;

use crate::store::address::AccountBytes;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "delegation_changes")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "delegation_change_log")]
    pub dao_id: String,
    /// Address bytes, as `votes` keeps voters (half the hex text, in the table and in each of the
    /// three address indexes); the zero address is "no delegate".
    pub delegator: AccountBytes,
    pub from_delegate: AccountBytes,
    pub to_delegate: AccountBytes,
    /// The voting units that moved with the change (the delegator's balance), exact integer in the
    /// token's smallest unit, from the `DelegateVotesChanged` that follow it; "0" when none did.
    pub power_moved_raw: String,
    pub decimals: i32,
    #[sea_orm(unique_key = "delegation_change_log")]
    pub block_number: i64,
    #[sea_orm(unique_key = "delegation_change_log")]
    pub log_index: i64,
    pub tx_hash: String,
    /// The block's time.
    pub at_ms: i64,
    /// The token's total supply at the block, exact integer in its smallest unit, kept only for a
    /// notable change: one that moved at least `contract::events::NOTABLE_DELEGATION_MIN_SHARE`
    /// of it (migration 19). NULL for every other change.
    pub supply_raw: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
