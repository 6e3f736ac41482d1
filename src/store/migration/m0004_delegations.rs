//! Delegations read from governance tokens (`DelegateChanged`), one row per holder and DAO, so a
//! delegate's number of delegators can be counted exactly across ingestion runs.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Delegations {
    Table,
    Id,
    DaoId,
    Delegator,
    Delegate,
    BlockNumber,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Delegations::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Delegations::Id).big_integer().not_null().auto_increment().primary_key())
                    .col(ColumnDef::new(Delegations::DaoId).string().not_null())
                    .col(ColumnDef::new(Delegations::Delegator).string().not_null())
                    .col(ColumnDef::new(Delegations::Delegate).string().not_null())
                    .col(ColumnDef::new(Delegations::BlockNumber).big_integer().not_null())
                    .to_owned(),
            )
            .await?;
        // The natural key (upserts), and the count of a delegate's delegators.
        manager
            .create_index(
                Index::create()
                    .name("ux_delegations_natural")
                    .table(Delegations::Table)
                    .col(Delegations::DaoId)
                    .col(Delegations::Delegator)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_delegations_delegate")
                    .table(Delegations::Table)
                    .col(Delegations::DaoId)
                    .col(Delegations::Delegate)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Delegations::Table).to_owned()).await
    }
}
