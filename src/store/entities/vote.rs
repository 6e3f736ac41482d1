//! One vote. `voting_power` is the exact text received; `vp_sort` is a short key that sorts like
//! the number (`store::sort_keys::sort_key`); the voter is kept as its bytes (migration 7).
use sea_orm::entity::prelude::*;

use crate::store::address::AccountBytes;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "votes")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "vote_natural")]
    pub proposal_id: i64,
    pub dao_id: String,
    /// The voter's address bytes (`AccountBytes::lower` gives the canonical text).
    #[sea_orm(unique_key = "vote_natural")]
    pub voter: AccountBytes,
    /// The choice exactly as the upstream gave it: `1`, `[1,3]`, `{'2': 1}`.
    pub choice: String,
    pub voting_power: String,
    pub vp_sort: String,
    /// True when the upstream served the value as a float (Snapshot `vp`).
    pub vp_from_float: bool,
    pub reason: Option<String>,
    pub created_ms: i64,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
