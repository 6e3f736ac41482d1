//! One message owed to a subscription (migration 15): a feed entry, or a test message, with
//! where its attempts stand. Claimed with a lease, so that two processes never make the same
//! attempt and a killed process's attempts are made again.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_deliveries")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub subscription_id: i64,
    /// The feed entry delivered; `None` for a test message.
    pub seq: Option<i64>,
    /// A test message's body (feed entries are rendered when sent).
    pub payload: Option<String>,
    /// `webhook-id`: the same on every attempt and replay.
    pub msg_id: String,
    /// Attempts made.
    pub attempts: i32,
    pub state: DeliveryState,
    pub next_attempt_ms: i64,
    /// Until when a process holds the next attempt (0: no one).
    pub lease_until_ms: i64,
    pub created_ms: i64,
}

/// Where a delivery stands, stored as its text (`pending`, `delivered`, `failed`), the column
/// type `String`'s: the table is made from this entity, so its schema stays what it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum DeliveryState {
    /// Owed: attempted when `next_attempt_ms` comes (the partial index `ix_webhook_due` holds
    /// only these).
    #[sea_orm(string_value = "pending")]
    Pending,
    #[sea_orm(string_value = "delivered")]
    Delivered,
    /// No attempt follows.
    #[sea_orm(string_value = "failed")]
    Failed,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
