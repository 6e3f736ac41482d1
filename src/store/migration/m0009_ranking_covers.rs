//! The voter ranking (`/v2/daos/{daoId}/voters`, and a brief's top voters) read from one index.
//!
//! `ix_voter_stats_rank` (`dao_id, vp_sort DESC, voter`) found a page's rows, then fetched each of
//! them from the table: 100 rows spread over 100 table pages deep in the ranking, where the top
//! voters (written first) share a few. Measured on a 1,000,000-vote SQLite store, a deep page
//! cost 1.3× the first for that reason alone. `ix_voter_stats_rank_covering` holds every column
//! the ranking reads after the same key, so any page reads a run of adjacent index pages (on
//! SQLite the row id rides in every index; PostgreSQL answers from the index after a vacuum, and
//! from the same ordered walk before one). It replaces `ix_voter_stats_rank`, whose key it
//! starts with.
//!
//! Used by: `store::voters::ranking`, `store::brief` (top voters), and publication's per-DAO
//! voter count (`store::publish::RECOMPUTE_SUMMARIES`, through its `dao_id` prefix).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared(
            r#"CREATE INDEX IF NOT EXISTS "ix_voter_stats_rank_covering" ON "voter_dao_stats"
               ("dao_id", "vp_sort" DESC, "voter", "voting_power", "votes_cast", "first_vote_ms", "last_vote_ms", "id")"#,
        )
        .await?;
        db.execute_unprepared(r#"DROP INDEX IF EXISTS "ix_voter_stats_rank""#).await?;
        Ok(())
    }
}
