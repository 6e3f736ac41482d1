//! A vote's bytes on SQLite (issue 49: the whole 1M-vote `synth` file at most 350 bytes per vote).
//!
//! Two changes to the indexes of `votes` that order by time, both SQLite only:
//! - No `id` in their keys. SQLite ends every index entry with the row id, which is `votes.id`
//!   (its `INTEGER PRIMARY KEY`), so `id DESC` stored the id twice. Keyed `(…, created_ms)`
//!   ascending, an index walked backwards gives `created_ms DESC, id DESC`: the same order,
//!   about 4.6 bytes less per entry (`ix_votes_proposal_choice_time`, `ix_votes_voter_dao_time`).
//! - `ix_votes_proposal_time` keeps only the votes outside `store::vote_arms::MERGED_CHOICES`
//!   (a partial index, as migration 23 made it on PostgreSQL): the unfiltered time order merges
//!   the choice + time index's walks with its walk (`store::vote_arms`), in one compound
//!   statement SQLite runs as a lazy merge, nothing sorted. It held every vote.
//!
//! Measured on the 1M-vote `synth` store (`docs/benchmarks.md`): the whole file went from 367.9
//! to 335.8 bytes per vote (`ix_votes_proposal_time` 23.2 to nothing, the choice + time index
//! 25.5 to 21.0, the voter history 56.3 to 51.9).
//!
//! PostgreSQL is left as it is: it has read the time order by arms since migration 23, and its
//! entries carry no row id, so the id in the key is what orders equal times.
use sea_orm_migration::prelude::*;

use crate::store::vote_arms::sqlite_others_sql;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DbBackend::Sqlite {
            return Ok(());
        }
        let others = sqlite_others_sql();
        // One script on one connection, in one transaction: the indexes change together or not.
        let script = [
            "BEGIN IMMEDIATE".to_owned(),
            r#"DROP INDEX IF EXISTS "ix_votes_proposal_time""#.to_owned(),
            format!(r#"CREATE INDEX "ix_votes_proposal_time" ON "votes" ("proposal_id", "created_ms") WHERE {others}"#),
            r#"DROP INDEX IF EXISTS "ix_votes_proposal_choice_time""#.to_owned(),
            r#"CREATE INDEX "ix_votes_proposal_choice_time" ON "votes" ("proposal_id", "choice", "created_ms")"#
                .to_owned(),
            r#"DROP INDEX IF EXISTS "ix_votes_voter_dao_time""#.to_owned(),
            r#"CREATE INDEX "ix_votes_voter_dao_time" ON "votes" ("voter", "dao_id", "created_ms")"#.to_owned(),
            "COMMIT".to_owned(),
        ];
        manager.get_connection().execute_unprepared(&script.join(";\n")).await?;
        Ok(())
    }
}
