//! A voter's per-DAO power says whether it arrived as a float: `voter_dao_stats.vp_from_float`,
//! the `votes.vp_from_float` of the same vote (the voter's latest in the DAO), so the ranking, a
//! brief's top voters and a profile flag float-origin powers as the votes do.
//!
//! On a store from before this migration the column is added and every voter's stats are
//! recomputed once, by publication's own full recomputation (`store::publish::recompute_voter_stats`),
//! so the column holds what a publication would have written. Migration 1 follows the live
//! entities: a store created after this migration was written already has the column, and its
//! stats are whatever its publications wrote.
//!
//! `ix_voter_stats_rank_covering` (migration 9) holds every column the ranking and the brief
//! read after its key; it is built again with the new column, on every store (on a new one
//! migration 9 built it without).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// In one transaction on both backends (sea-orm runs SQLite migrations outside one, statement
    /// by statement on the pool): the column, the stats that fill it, the index and the migration's
    /// record are written together or not at all. Otherwise a store interrupted after the column was
    /// added would skip the recomputation on the next start (the column is there) and serve `false`
    /// for every power. (Run on the pool, the index's CREATE also failed on a new SQLite store
    /// right after the DROP, with "index already exists": on the pool the two statements may run
    /// on different connections.)
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if !manager.has_column("voter_dao_stats", "vp_from_float").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("voter_dao_stats"))
                        .add_column(ColumnDef::new(Alias::new("vp_from_float")).boolean().not_null().default(false))
                        .to_owned(),
                )
                .await?;
            crate::store::publish::recompute_voter_stats(db).await?;
        }
        db.execute_unprepared(r#"DROP INDEX IF EXISTS "ix_voter_stats_rank_covering""#).await?;
        db.execute_unprepared(
            r#"CREATE INDEX "ix_voter_stats_rank_covering" ON "voter_dao_stats"
               ("dao_id", "vp_sort" DESC, "voter", "voting_power", "vp_from_float", "votes_cast", "first_vote_ms", "last_vote_ms", "id")"#,
        )
        .await?;
        Ok(())
    }
}
