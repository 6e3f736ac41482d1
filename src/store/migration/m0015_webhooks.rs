//! Webhooks: subscriptions, the deliveries owed to them, and every attempt (`store::webhooks`).
//!
//! Indexes and the queries that use them:
//! - `ix_webhook_subscriptions_token` (`token_id`, `id`): a partner's subscriptions;
//! - `ix_webhook_due` (`subscription_id`, `next_attempt_ms`, `id`) over pending deliveries only
//!   (partial): a subscription's next attempts to claim, and when the next one is due; delivered
//!   and failed deliveries cost the claim nothing however many there are;
//! - `ix_webhook_deliveries_created` (`created_ms`): pruning past the feed's retention;
//! - `ix_webhook_attempts_subscription` (`subscription_id`, `id`): a subscription's attempts,
//!   newest first, keyset-paginated; `ix_webhook_attempts_time` (`attempted_ms`): pruning.
use sea_orm::Schema;
use sea_orm_migration::prelude::*;

use crate::store::entities::{webhook_attempt, webhook_delivery, webhook_subscription};

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEXES: &[&str] = &[
    "CREATE INDEX IF NOT EXISTS ix_webhook_subscriptions_token ON webhook_subscriptions (token_id, id)",
    "CREATE INDEX IF NOT EXISTS ix_webhook_due ON webhook_deliveries (subscription_id, next_attempt_ms, id) \
     WHERE state = 'pending'",
    "CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_created ON webhook_deliveries (created_ms)",
    "CREATE INDEX IF NOT EXISTS ix_webhook_attempts_subscription ON webhook_attempts (subscription_id, id)",
    "CREATE INDEX IF NOT EXISTS ix_webhook_attempts_time ON webhook_attempts (attempted_ms)",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        manager
            .create_table(schema.create_table_from_entity(webhook_subscription::Entity).if_not_exists().to_owned())
            .await?;
        manager
            .create_table(schema.create_table_from_entity(webhook_delivery::Entity).if_not_exists().to_owned())
            .await?;
        manager
            .create_table(schema.create_table_from_entity(webhook_attempt::Entity).if_not_exists().to_owned())
            .await?;
        for sql in INDEXES {
            manager.get_connection().execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
