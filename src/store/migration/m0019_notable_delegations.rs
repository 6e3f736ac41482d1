//! Notable delegation changes (issue 29): `delegation_changes.supply_raw` keeps the token's total
//! supply at the change's block for a change that moved at least
//! `contract::events::NOTABLE_DELEGATION_MIN_SHARE` of it (NULL otherwise: most changes), and
//! the indexes the DAO-scoped reads need.
//!
//! - `ix_delegation_changes_dao_delegator`, `_dao_from`, `_dao_to` (`dao_id`, address, `at_ms`,
//!   block, log): a voter's changes in one DAO, so a `daoId` filter never walks the voter's other
//!   DAOs (migration 16's address indexes serve the lists across DAOs);
//! - `ix_delegation_changes_notable` (`dao_id`, `at_ms`, block, log) over the notable changes
//!   only (a partial index: it holds a few rows where the table holds millions): a DAO's notable
//!   changes newest first, the feed and a proposal's `delegationShift`.
//!
//! The column is added only where missing (a fresh store has it from migration 16, which
//! follows the entity).
use sea_orm::ConnectionTrait;
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEXES: &[(&str, &[&str])] = &[
    ("ix_delegation_changes_dao_delegator", &["dao_id", "delegator", "at_ms", "block_number", "log_index"]),
    ("ix_delegation_changes_dao_from", &["dao_id", "from_delegate", "at_ms", "block_number", "log_index"]),
    ("ix_delegation_changes_dao_to", &["dao_id", "to_delegate", "at_ms", "block_number", "log_index"]),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if !manager.has_column("delegation_changes", "supply_raw").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("delegation_changes"))
                        .add_column(ColumnDef::new(Alias::new("supply_raw")).string().null())
                        .to_owned(),
                )
                .await?;
        }
        for (name, columns) in INDEXES {
            let mut index = Index::create();
            index.if_not_exists().name(*name).table(Alias::new("delegation_changes"));
            for column in *columns {
                index.col(Alias::new(*column));
            }
            manager.create_index(index).await?;
        }
        // Partial indexes: the same statement on SQLite (≥ 3.8) and PostgreSQL.
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX IF NOT EXISTS ix_delegation_changes_notable \
                 ON delegation_changes (dao_id, at_ms, block_number, log_index) WHERE supply_raw IS NOT NULL",
            )
            .await?;
        Ok(())
    }
}
