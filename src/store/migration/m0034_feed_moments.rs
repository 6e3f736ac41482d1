//! Timed feed entries (issue 48): the moments the feed reported for each proposal, keyed by
//! (proposal, kind, horizon), so that a `voting_ends_soon`, `voting_ended`, `quorum_reached` or
//! `proposal_executable` entry is written exactly once, whatever the number of processes and
//! publications. The due moments are found through the proposals' existing indexes (state and
//! end; end), and this table's key answers "already fed?" for each.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS feed_moments (
                    proposal_id BIGINT NOT NULL,
                    kind TEXT NOT NULL,
                    horizon_s BIGINT NOT NULL,
                    dao_id TEXT NOT NULL,
                    moment_ms BIGINT NOT NULL,
                    revision_id BIGINT NOT NULL,
                    PRIMARY KEY (proposal_id, kind, horizon_s)
                )",
            )
            .await?;
        Ok(())
    }
}
