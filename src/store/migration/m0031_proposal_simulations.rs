//! Proposal simulations (issue 47): what an active, succeeded or queued on-chain proposal's
//! actions would do if executed on a block's state (revm over state read from the node at
//! ingestion), kept per (proposal, block) so that no request runs an EVM. The result is JSON text
//! (`rules::actions::simulation::Simulation`): it is served whole, never filtered by its parts,
//! and reads the same on both backends.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS proposal_simulations (
                    proposal_id BIGINT NOT NULL,
                    block_number BIGINT NOT NULL,
                    dao_id TEXT NOT NULL,
                    proposal_state TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    result TEXT NOT NULL,
                    simulated_ms BIGINT NOT NULL,
                    PRIMARY KEY (proposal_id, block_number)
                )",
            )
            .await?;
        Ok(())
    }
}
