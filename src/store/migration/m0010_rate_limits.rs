//! Rate limits that hold across processes: `rate_counts` holds, per limited key (`partner:7`,
//! `payer:0x…`, `client:203.0.113.9`) and fixed window, the requests every process admitted;
//! each process adds its own in batches and reads the total back (`store::rates::exchange`).
//! Partner tokens gain an optional rate of their own (`govdata tokens create --rate`).
//!
//! Indexes and the queries that use them:
//! - the primary key (`key`, `window_start_ms`): the batched upsert of `store::rates::exchange`;
//! - `ix_rate_counts_expires` (`expires_ms`): the sweep of past windows (`store::rates::sweep`).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Alias::new("rate_counts"))
                    .if_not_exists()
                    .col(ColumnDef::new(Alias::new("key")).string().not_null())
                    .col(ColumnDef::new(Alias::new("window_start_ms")).big_integer().not_null())
                    .col(ColumnDef::new(Alias::new("count")).big_integer().not_null())
                    .col(ColumnDef::new(Alias::new("expires_ms")).big_integer().not_null())
                    .primary_key(Index::create().col(Alias::new("key")).col(Alias::new("window_start_ms")))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("ix_rate_counts_expires")
                    .table(Alias::new("rate_counts"))
                    .col(Alias::new("expires_ms"))
                    .to_owned(),
            )
            .await?;
        // Migration 1 follows the live entities: a store created after this migration was
        // written already has the columns.
        for column in ["rate_quota", "rate_window_s"] {
            if !manager.has_column("partner_tokens", column).await? {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new("partner_tokens"))
                            .add_column(ColumnDef::new(Alias::new(column)).big_integer().null())
                            .to_owned(),
                    )
                    .await?;
            }
        }
        Ok(())
    }
}
