//! Proposal actions (issue 47): each on-chain proposal's calls as its creation log proposed them
//! (target, value, signature, calldata), with the answer `rules::actions` decoded for them at
//! ingestion, so that no request decodes anything.
//!
//! The calldata is kept as 0x-hex text, not bytes: it is what the API serves and what the
//! decoded answer quotes, it reads the same on both backends, and the table is small (a handful
//! of actions per proposal), so the doubled size costs little. Proposals stored before this
//! migration get their actions on the next run (the governor connector's backfill).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: &[&str] = &["CREATE TABLE IF NOT EXISTS proposal_actions (
        proposal_id BIGINT NOT NULL,
        position INTEGER NOT NULL,
        dao_id TEXT NOT NULL,
        execution_path TEXT NOT NULL,
        target TEXT NOT NULL,
        value_wei TEXT NOT NULL,
        signature TEXT,
        calldata TEXT NOT NULL,
        decoded TEXT NOT NULL,
        decoder_version INTEGER NOT NULL,
        PRIMARY KEY (proposal_id, position)
    )"];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for sql in TABLES {
            manager.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
