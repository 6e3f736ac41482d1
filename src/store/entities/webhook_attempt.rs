//! One attempt to deliver a message (migration 15), as `GET /v2/webhooks/{id}/deliveries`
//! shows it.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_attempts")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub delivery_id: i64,
    pub subscription_id: i64,
    pub msg_id: String,
    pub seq: Option<i64>,
    /// 1 for the first attempt.
    pub attempt: i32,
    pub attempted_ms: i64,
    /// The receiver's status code; `None` when no answer came (refused, timed out…).
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub outcome: AttemptOutcome,
    /// When the next attempt is due (`retrying` only).
    pub next_attempt_ms: Option<i64>,
}

/// What an attempt came to, stored as its text (`delivered`, `retrying`, `failed`), the column
/// type `String`'s: the table is made from this entity, so its schema stays what it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum AttemptOutcome {
    #[sea_orm(string_value = "delivered")]
    Delivered,
    /// Failed; another attempt is due at `next_attempt_ms`.
    #[sea_orm(string_value = "retrying")]
    Retrying,
    /// Failed, and no attempt follows.
    #[sea_orm(string_value = "failed")]
    Failed,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
