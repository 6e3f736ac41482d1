//! Ingestion runs beat: `ingestion_runs.heartbeat_ms` is moved by the process running the run
//! (`store::staging::beat`), so a run whose process died is noticed within minutes
//! (`store::staging::STALE_AFTER`) instead of hours after it started.
//!
//! Rows are found by primary key (the beat) and by status (`reclaim`, a handful of running
//! rows); no index is added.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Migration 1 follows the live entities: a store created after this migration was
        // written already has the column.
        if !manager.has_column("ingestion_runs", "heartbeat_ms").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("ingestion_runs"))
                        .add_column(ColumnDef::new(Alias::new("heartbeat_ms")).big_integer().null())
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
