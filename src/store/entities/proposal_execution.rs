//! An on-chain proposal's execution lifecycle, as its governor's logs recorded it (migration 28).
//! Each step is all there or all absent: its block, the block's time and the transaction.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposal_executions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    pub dao_id: String,
    /// `ProposalQueued`: its block, the block's time (epoch ms) and transaction (0x hex).
    pub queued_block: Option<i64>,
    pub queued_ms: Option<i64>,
    pub queued_tx: Option<String>,
    /// The ETA `ProposalQueued` carries, exact decimal text (seconds on the timelock's clock).
    pub eta: Option<String>,
    /// The timelock's `GRACE_PERIOD()` in seconds (Compound's Timelock), read when the queue was
    /// read; `None` for a timelock without one (OpenZeppelin's TimelockController).
    pub grace_period_s: Option<i64>,
    /// `ProposalExecuted`.
    pub executed_block: Option<i64>,
    pub executed_ms: Option<i64>,
    pub executed_tx: Option<String>,
    /// `ProposalCanceled`.
    pub canceled_block: Option<i64>,
    pub canceled_ms: Option<i64>,
    pub canceled_tx: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
