//! `index_packing` (PostgreSQL only, issue 31): each repacked index's size and entry count just
//! after it was last built by sorting (`store::repack`), the yardstick its growth is measured by.
//!
//! And the natural key and the choice + power order built full (fillfactor 100), as migration 23
//! built the choice + time order: each holds a proposal's votes in one run of its own, which takes
//! inserts only while the proposal is open. Closed proposals' runs, nearly all of a store, never
//! change again and need no room; an open one's pages split as its votes arrive, and the next
//! repack packs them. Measured at 1M votes: 335.6 bytes per vote packed, against 346.7 with
//! PostgreSQL's default of 90 (335.5 at 10M). The voter history keeps 90: every vote lands anywhere in it.
use sea_orm_migration::prelude::*;

/// The name sea-orm gave the natural key's unique index (`vote.rs`, `unique_key = "vote_natural"`).
const NATURAL_KEY: &str = "idx-votes-vote_natural";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DbBackend::Postgres {
            return Ok(());
        }
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE TABLE IF NOT EXISTS index_packing (
                    index_name TEXT PRIMARY KEY,
                    entries DOUBLE PRECISION NOT NULL,
                    bytes BIGINT NOT NULL,
                    packed_ms BIGINT NOT NULL
                )",
            )
            .await?;
        for index in [NATURAL_KEY, "ix_votes_proposal_choice_power"] {
            let statement = format!(r#"ALTER INDEX IF EXISTS "{index}" SET (fillfactor = 100)"#);
            manager.get_connection().execute_unprepared(&statement).await?;
        }
        Ok(())
    }
}
