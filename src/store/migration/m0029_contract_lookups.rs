//! What ingestion learns about the contracts proposals call (issue 47), kept per (chain,
//! address) so that it is asked once: Sourcify's answer for a contract (its verified ABI, or
//! that it is not verified, or that the lookup failed) and an ERC-20's `decimals()` and
//! `symbol()` (or that the contract does not answer them), each with the time it is due again
//! (`contract::limits`). Ingestion bookkeeping, never served: written as answers come, one row
//! per statement (never half-written), outside any publication. (Number 28 is another branch's.)
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS contract_abis (
        chain_id BIGINT NOT NULL,
        address TEXT NOT NULL,
        status TEXT NOT NULL,
        abi TEXT,
        match_kind TEXT,
        message TEXT,
        checked_ms BIGINT NOT NULL,
        retry_ms BIGINT,
        PRIMARY KEY (chain_id, address)
    )",
    "CREATE TABLE IF NOT EXISTS token_metadata (
        chain_id BIGINT NOT NULL,
        address TEXT NOT NULL,
        symbol TEXT,
        decimals INTEGER,
        checked_ms BIGINT NOT NULL,
        retry_ms BIGINT,
        PRIMARY KEY (chain_id, address)
    )",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for sql in TABLES {
            manager.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
