//! Copeland ballots were tallied as approvals (each ranked choice given the vote's full power)
//! until the store's tally followed `contract::voting` (first preferences). Their stored facts
//! are dropped here; the next publication finds them missing (`store::facts::stale`) and tallies
//! those proposals again from their votes.
use sea_orm::ConnectionTrait;
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "DELETE FROM proposal_facts WHERE proposal_id IN (SELECT id FROM proposals WHERE voting_type = 'copeland')",
            )
            .await?;
        Ok(())
    }
}
