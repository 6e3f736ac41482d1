//! Partner tokens. The token is shown once at creation; only its SHA-256 is stored, so a stolen
//! database does not yield usable tokens.
use base64::Engine;
use rand::RngCore;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait, QueryOrder};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::entities::partner_token;
use crate::contract::access::Rate;

/// Prefix that makes a leaked token recognisable (secret scanners, logs).
pub const TOKEN_PREFIX: &str = "gdp_";

pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Creates a token with `scopes` (already validated by the caller) and its own rate limit, if
/// any. Returns the row and the token, which is never stored or shown again.
pub async fn create(
    db: &impl ConnectionTrait,
    name: &str,
    scopes: &[&str],
    rate: Option<Rate>,
    now_ms: i64,
) -> Result<(partner_token::Model, String), DbErr> {
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = format!("{TOKEN_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret));
    let row = partner_token::ActiveModel {
        name: Set(name.to_owned()),
        token_hash: Set(hash(&token)),
        token_prefix: Set(token[..TOKEN_PREFIX.len() + 6].to_owned()),
        scopes: Set(scopes.join(",")),
        created_ms: Set(now_ms),
        revoked_ms: Set(None),
        last_used_ms: Set(None),
        rate_quota: Set(rate.map(|r| i64::from(r.quota))),
        rate_window_s: Set(rate.map(|r| i64::from(r.window_s))),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok((row, token))
}

pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<partner_token::Model>, DbErr> {
    partner_token::Entity::find().order_by_asc(partner_token::Column::Id).all(db).await
}

/// Revokes token `id`; `Ok(false)` when there is no such token. Revoking twice keeps the first time.
pub async fn revoke(db: &impl ConnectionTrait, id: i64, now_ms: i64) -> Result<bool, DbErr> {
    let Some(row) = partner_token::Entity::find_by_id(id).one(db).await? else {
        return Ok(false);
    };
    if row.revoked_ms.is_none() {
        let mut active: partner_token::ActiveModel = row.into();
        active.revoked_ms = Set(Some(now_ms));
        active.update(db).await?;
    }
    Ok(true)
}

/// The live (not revoked) token matching `token`, if any.
pub async fn find_live(db: &impl ConnectionTrait, token: &str) -> Result<Option<partner_token::Model>, DbErr> {
    use sea_orm::{ColumnTrait, QueryFilter};
    let digest = hash(token);
    let row = partner_token::Entity::find().filter(partner_token::Column::TokenHash.eq(digest.clone())).one(db).await?;
    // The lookup is by hash, so timing reveals nothing about the token; compare in constant time anyway.
    Ok(row.filter(|r| bool::from(r.token_hash.as_bytes().ct_eq(digest.as_bytes())) && r.revoked_ms.is_none()))
}

/// How stale `last_used_ms` may get: recording every use would turn each paid read into a write.
pub const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// Records that token `id` was used at `now_ms`, at most once per [`LAST_USED_RESOLUTION_MS`].
pub async fn touch(db: &impl ConnectionTrait, id: i64, now_ms: i64) -> Result<(), DbErr> {
    use sea_orm::{ColumnTrait, Condition, QueryFilter, sea_query::Expr};
    partner_token::Entity::update_many()
        .col_expr(partner_token::Column::LastUsedMs, Expr::value(now_ms))
        .filter(partner_token::Column::Id.eq(id))
        .filter(
            Condition::any()
                .add(partner_token::Column::LastUsedMs.is_null())
                .add(partner_token::Column::LastUsedMs.lt(now_ms - LAST_USED_RESOLUTION_MS)),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// A live partner token as the access gate keeps it in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveToken {
    pub id: i64,
    /// Comma-separated scopes, as stored.
    pub scopes: String,
    /// The token's own rate limit, if it has one.
    pub rate: Option<Rate>,
}

impl From<partner_token::Model> for LiveToken {
    fn from(t: partner_token::Model) -> Self {
        let rate = match (t.rate_quota, t.rate_window_s) {
            (Some(quota), Some(window_s)) => Some(Rate {
                quota: u32::try_from(quota).unwrap_or(u32::MAX),
                window_s: u32::try_from(window_s).unwrap_or(u32::MAX).max(1),
            }),
            _ => None,
        };
        Self { id: t.id, scopes: t.scopes, rate }
    }
}

/// What changes when a token is created or revoked (the only writes besides last use): the
/// gate reloads its tokens when this moves.
pub async fn fingerprint(db: &impl ConnectionTrait) -> Result<(i64, i64, i64), DbErr> {
    let sql = "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS max_id, COUNT(revoked_ms) AS revoked FROM partner_tokens";
    let row = db.query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), sql)).await?;
    match row {
        Some(r) => Ok((r.try_get("", "n")?, r.try_get("", "max_id")?, r.try_get("", "revoked")?)),
        None => Ok((0, 0, 0)),
    }
}

/// Every live token by its hash.
pub async fn live_by_hash(db: &impl ConnectionTrait) -> Result<std::collections::HashMap<String, LiveToken>, DbErr> {
    use sea_orm::{ColumnTrait, QueryFilter};
    Ok(partner_token::Entity::find()
        .filter(partner_token::Column::RevokedMs.is_null())
        .all(db)
        .await?
        .into_iter()
        .map(|t| (t.token_hash.clone(), LiveToken::from(t)))
        .collect())
}
