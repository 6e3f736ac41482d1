//! A partner token. Only its SHA-256 is stored; the token is shown once at creation.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "partner_tokens")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub name: String,
    #[sea_orm(unique)]
    pub token_hash: String,
    /// First characters of the token, so operators can tell tokens apart.
    pub token_prefix: String,
    /// Comma-separated scopes.
    pub scopes: String,
    pub created_ms: i64,
    pub revoked_ms: Option<i64>,
    pub last_used_ms: Option<i64>,
    /// This token's own rate limit (`quota` requests per `rate_window_s`); the configured
    /// partner rate when unset.
    pub rate_quota: Option<i64>,
    pub rate_window_s: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
