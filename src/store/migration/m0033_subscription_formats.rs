//! Webhook subscriptions name their format: `webhook_subscriptions.format`, the text of a
//! `contract::webhooks::WebhookFormat` (`standard_webhooks`, `slack`, `discord`). A subscription
//! made before it is `standard_webhooks`, what it was sent in all along (the column's default).
//!
//! No index: the format is read with its subscription's row, never searched by.
use sea_orm_migration::prelude::*;

use crate::contract::webhooks::WebhookFormat;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Migration 15 makes the table from the live entity: a store created after this
        // migration was written has the column already.
        if !manager.has_column("webhook_subscriptions", "format").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("webhook_subscriptions"))
                        .add_column(
                            ColumnDef::new(Alias::new("format"))
                                .string()
                                .not_null()
                                .default(WebhookFormat::DEFAULT.as_str()),
                        )
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
