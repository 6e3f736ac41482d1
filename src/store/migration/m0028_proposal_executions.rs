//! Proposal executions (issue 47): an on-chain proposal's execution lifecycle as its governor's
//! logs record it: queued (block, time, transaction, the ETA the log carries, and the grace
//! period of the timelock where it has one), executed and canceled (block, time, transaction).
//!
//! Its own table keyed by the proposal's id, rather than nullable columns on `proposals`: only
//! on-chain proposals that were queued, executed or canceled have a row (Snapshot proposals, the
//! bulk of the store, never do), `proposals` is read by every list and search while these facts
//! are served by one proposal's detail only (one primary-key read), and the proposal row stays
//! as it is. No other index: no list reads this table.
//!
//! Numbers that may exceed 64 bits stay text (`eta`, a uint256 in the log); block numbers and
//! times are integers as everywhere else in the store.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS proposal_executions (
                    proposal_id BIGINT PRIMARY KEY,
                    dao_id TEXT NOT NULL,
                    queued_block BIGINT,
                    queued_ms BIGINT,
                    queued_tx TEXT,
                    eta TEXT,
                    grace_period_s BIGINT,
                    executed_block BIGINT,
                    executed_ms BIGINT,
                    executed_tx TEXT,
                    canceled_block BIGINT,
                    canceled_ms BIGINT,
                    canceled_tx TEXT
                )",
            )
            .await?;
        Ok(())
    }
}
