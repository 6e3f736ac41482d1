//! A webhook subscription (migration 15): where a partner token wants the feed's entries
//! delivered, in which format (migration 33), and how far they were enqueued (`store::webhooks`).
//! Which entries it wants are its filter rows (`webhook_filters`, migration 32), read and written
//! by `store::webhooks::Filters`.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_subscriptions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// `wh_…`: the id the API and the CLI show.
    #[sea_orm(unique)]
    pub public_id: String,
    /// The partner token that owns it: only that token sees it, and it stops when the token is
    /// revoked.
    pub token_id: i64,
    pub url: String,
    pub description: Option<String>,
    /// `whsec_…`, kept to sign with (a signature needs the secret itself, unlike a token check).
    pub secret: String,
    /// The secret before the last rotation, signing beside the new one until `previous_until_ms`.
    pub previous_secret: Option<String>,
    pub previous_until_ms: Option<i64>,
    pub enabled: bool,
    /// Why it was disabled (by its owner, a 410, or days of failures).
    pub disabled_reason: Option<String>,
    /// Since when every attempt failed (cleared by a success or when re-enabled).
    pub failing_since_ms: Option<i64>,
    /// The feed sequence up to which its deliveries were enqueued (by itself: while it follows
    /// the shared fan-out, the fan-out's position may be further, `webhook_fanout`).
    pub enqueued_through: i64,
    /// Whether the shared fan-out enqueues its entries (`push::queue`): false while it catches
    /// up by itself (enabled again after a pause, or upgraded by migration 32; a new one follows at once).
    pub follows_fanout: bool,
    /// A replay in progress: entries in (`replay_from`, `replay_through`] are enqueued again.
    pub replay_from: Option<i64>,
    pub replay_through: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// How its messages are written (migration 33): a `contract::webhooks::WebhookFormat`'s text,
    /// read where it is used (`store::webhooks::format_of`), so a format a newer build wrote
    /// fails no read of every subscription.
    pub format: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
