//! Title vocabulary (issue 45): how many of each DAO's proposal titles hold each word
//! (`title_words`), and each proposal's title as counted (`title_word_sources`), kept by
//! publication (`store::vocabulary`). A title lookup reads the words it is about to answer on
//! instead of counting titles per request. The titles already stored are counted here.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS title_words (
        dao_id TEXT NOT NULL,
        word TEXT NOT NULL,
        titles BIGINT NOT NULL,
        PRIMARY KEY (dao_id, word)
    )",
    "CREATE TABLE IF NOT EXISTS title_word_sources (
        proposal_id BIGINT NOT NULL PRIMARY KEY,
        dao_id TEXT NOT NULL,
        title TEXT NOT NULL
    )",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for sql in TABLES {
            manager.get_connection().execute_unprepared(sql).await?;
        }
        crate::store::vocabulary::refresh(manager.get_connection()).await?;
        Ok(())
    }
}
