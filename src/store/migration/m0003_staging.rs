//! Staging for ingestion runs: connectors append fetched records here as they page through an
//! upstream (committed in small batches, so memory stays bounded and nothing served changes);
//! publication applies one run's records in a single transaction and deletes them.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StagedRecords {
    Table,
    Id,
    RunId,
    DaoId,
    Source,
    Stage,
    Payload,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(StagedRecords::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(StagedRecords::Id).big_integer().not_null().auto_increment().primary_key())
                    .col(ColumnDef::new(StagedRecords::RunId).big_integer().not_null())
                    .col(ColumnDef::new(StagedRecords::DaoId).string().not_null())
                    .col(ColumnDef::new(StagedRecords::Source).string().not_null())
                    .col(ColumnDef::new(StagedRecords::Stage).integer().not_null())
                    .col(ColumnDef::new(StagedRecords::Payload).text().not_null())
                    .to_owned(),
            )
            .await?;
        // Publication reads one run's records stage by stage in id order.
        manager
            .create_index(
                Index::create()
                    .name("ix_staged_run_stage")
                    .table(StagedRecords::Table)
                    .col(StagedRecords::RunId)
                    .col(StagedRecords::Stage)
                    .col(StagedRecords::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(StagedRecords::Table).to_owned()).await
    }
}
