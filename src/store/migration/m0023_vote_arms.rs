//! A vote's bytes on PostgreSQL (issue 31: at most 350 per vote at 100 million).
//!
//! Measured on 1M synthetic votes built by `synth --defer-indexes` (bytes per vote): heap 117,
//! `votes_pkey` 22, natural key 50, `ix_votes_voter_dao_time` 68, the choice indexes 67 (power)
//! and 50 (time), the proposal-wide indexes 59 (power) and 41 (time): 474. The proposal-wide
//! indexes order the same votes the choice indexes already order choice by choice, so on
//! PostgreSQL:
//! - `ix_votes_proposal_power` and `ix_votes_proposal_time` keep only the votes outside
//!   `store::vote_arms::MERGED_CHOICES` (partial indexes); an unfiltered list merges the choice
//!   indexes' walks with theirs (`store::vote_arms`), about `limit` rows a page.
//! - `votes_pkey` goes: only a voter's history read votes by id, and it now reads them by their
//!   `ix_votes_voter_dao_time` entries. Rows stay unique by the natural key's unique index.
//! - `ix_votes_proposal_choice_time` is built full (fillfactor 100): its entries arrive newest
//!   first at the front of each (proposal, choice) run, so old pages never take inserts.
//!
//! The same store then measures 347 bytes per vote. SQLite keeps its indexes: its rowid costs no
//! index, and its B-trees are already compact (302 bytes per vote).
use sea_orm_migration::prelude::*;

use crate::store::vote_arms::others_sql;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != sea_orm::DbBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        let others = others_sql();
        for statement in [
            r#"DROP INDEX IF EXISTS "ix_votes_proposal_power""#.to_owned(),
            format!(
                r#"CREATE INDEX "ix_votes_proposal_power" ON "votes" ("proposal_id", "vp_sort" DESC, "voter") WHERE {others}"#
            ),
            r#"DROP INDEX IF EXISTS "ix_votes_proposal_time""#.to_owned(),
            format!(
                r#"CREATE INDEX "ix_votes_proposal_time" ON "votes" ("proposal_id", "created_ms" DESC, "id" DESC) WHERE {others}"#
            ),
            r#"ALTER TABLE "votes" DROP CONSTRAINT IF EXISTS "votes_pkey""#.to_owned(),
            r#"ALTER INDEX "ix_votes_proposal_choice_time" SET (fillfactor = 100)"#.to_owned(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }
}
