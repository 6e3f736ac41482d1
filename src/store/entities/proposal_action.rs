//! One action of an on-chain proposal as proposed (migration 26), with its decoded answer.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposal_actions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    /// The action's index in the proposal's arrays, from 0.
    #[sea_orm(primary_key, auto_increment = false)]
    pub position: i32,
    pub dao_id: String,
    /// How the proposal executes its actions.
    pub execution_path: ExecutionPath,
    /// Lowercase 0x address.
    pub target: String,
    /// Exact decimal wei.
    pub value_wei: String,
    /// The signature string the proposer gave (Compound Bravo), when not empty.
    pub signature: Option<String>,
    /// 0x-hex, lower case (see the migration for why text).
    pub calldata: String,
    /// `rules::actions::Action` as JSON, decoded at ingestion.
    pub decoded: String,
    /// `rules::actions::DECODER_VERSION` when decoded: rows of an older decoder can be redone.
    pub decoder_version: i32,
}

/// How a proposal's actions are executed, over the text its column holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, serde::Serialize, serde::Deserialize)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum ExecutionPath {
    /// By the governor: through its timelock where it has one, else itself.
    #[sea_orm(string_value = "governor")]
    Governor,
    /// By a Safe, through a module: a Snapshot proposal's oSnap transactions, executed from the
    /// Safe by UMA's Optimistic Governor after the oracle's challenge period.
    #[sea_orm(string_value = "safe_module")]
    SafeModule,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
