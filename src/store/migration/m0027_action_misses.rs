//! Proposal action misses (issue 47): an on-chain proposal whose creation log the actions
//! backfill looked for and did not find (no creation block stored, or no log in it). It is
//! looked for again only after `store::staging::ACTIONS_RETRY_AFTER`, so that such proposals
//! cost no request per run and never hold back the others. Its own migration because
//! migration 26 has already run where stop 52 was deployed.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS proposal_action_misses (
                    proposal_id BIGINT PRIMARY KEY,
                    checked_ms BIGINT NOT NULL
                )",
            )
            .await?;
        Ok(())
    }
}
