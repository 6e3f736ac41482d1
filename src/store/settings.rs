//! Values every govdata process on one store must share.
use base64::Engine;
use rand::RngCore;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};

use super::entities::setting;

const CURSOR_SECRET: &str = "cursor_secret";

/// The secret that signs v2 cursors. Generated on first use and kept in the store, so that
/// every process behind a load balancer accepts the others' cursors. Concurrent first starts
/// agree: the first insert wins and everyone reads it back.
pub async fn cursor_secret(db: &impl ConnectionTrait) -> Result<Vec<u8>, DbErr> {
    let mut fresh = [0u8; 32];
    rand::rng().fill_bytes(&mut fresh);
    let row = setting::ActiveModel {
        key: sea_orm::ActiveValue::Set(CURSOR_SECRET.to_owned()),
        value: sea_orm::ActiveValue::Set(base64::engine::general_purpose::STANDARD.encode(fresh)),
    };
    setting::Entity::insert(row).on_conflict_do_nothing_on([setting::Column::Key]).exec(db).await?;
    let stored = setting::Entity::find_by_id(CURSOR_SECRET.to_owned())
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(CURSOR_SECRET.to_owned()))?;
    base64::engine::general_purpose::STANDARD
        .decode(stored.value)
        .map_err(|e| DbErr::Custom(format!("the stored cursor secret is not base64: {e}")))
}
