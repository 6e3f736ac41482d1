//! What ingestion learns about the contracts proposals call, kept per (chain, address) so that
//! it is asked once (migration 29): Sourcify's answer for a contract and an ERC-20's metadata,
//! negative answers included, each with the time it is due again (`contract::limits`).
//!
//! Bookkeeping of ingestion, never served and outside any publication: a row is written as the
//! answer comes, whole, in one statement (an upsert), so a run that fails later keeps what it
//! learned and no reader ever sees half an answer.
use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, Set};

use super::entities::{contract_abi, token_metadata};
use crate::contract::limits::{SOURCIFY_FAILED_RETRY, SOURCIFY_UNVERIFIED_RETRY, TOKEN_NOT_ERC20_RETRY};

/// What Sourcify said of a contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbiAnswer {
    /// Verified (fully or partially): its ABI as JSON text, and Sourcify's `match`.
    Verified { abi: String, match_kind: String },
    /// Sourcify answered 404: not verified there.
    NotVerified,
    /// No usable answer (down, slow, 5xx, 429, or a body that is not its API): asked again soon.
    Failed(String),
}

impl AbiAnswer {
    fn status(&self) -> &'static str {
        match self {
            Self::Verified { .. } => "verified",
            Self::NotVerified => "not_verified",
            Self::Failed(_) => "failed",
        }
    }

    /// When a lookup answered so at `now_ms` is due again; `None`: never.
    fn retry_ms(&self, now_ms: i64) -> Option<i64> {
        match self {
            Self::Verified { .. } => None,
            Self::NotVerified => Some(now_ms + SOURCIFY_UNVERIFIED_RETRY.as_millis() as i64),
            Self::Failed(_) => Some(now_ms + SOURCIFY_FAILED_RETRY.as_millis() as i64),
        }
    }
}

/// Whether a kept answer is due to be asked again at `now_ms`.
pub fn due(retry_ms: Option<i64>, now_ms: i64) -> bool {
    retry_ms.is_some_and(|at| at <= now_ms)
}

/// The kept Sourcify answer for a contract, as stored.
pub async fn abi(
    db: &impl ConnectionTrait,
    chain_id: i64,
    address: &str,
) -> Result<Option<contract_abi::Model>, DbErr> {
    contract_abi::Entity::find_by_id((chain_id, address.to_owned())).one(db).await
}

/// Keeps Sourcify's answer for a contract, replacing the one kept before.
pub async fn keep_abi(
    db: &impl ConnectionTrait,
    chain_id: i64,
    address: &str,
    answer: &AbiAnswer,
    now_ms: i64,
) -> Result<(), DbErr> {
    let (abi, match_kind, message) = match answer {
        AbiAnswer::Verified { abi, match_kind } => (Some(abi.clone()), Some(match_kind.clone()), None),
        AbiAnswer::NotVerified => (None, None, None),
        AbiAnswer::Failed(message) => (None, None, Some(message.clone())),
    };
    let row = contract_abi::ActiveModel {
        chain_id: Set(chain_id),
        address: Set(address.to_owned()),
        status: Set(answer.status().to_owned()),
        abi: Set(abi),
        match_kind: Set(match_kind),
        message: Set(message),
        checked_ms: Set(now_ms),
        retry_ms: Set(answer.retry_ms(now_ms)),
    };
    use contract_abi::Column as C;
    contract_abi::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([C::ChainId, C::Address])
                .update_columns([C::Status, C::Abi, C::MatchKind, C::Message, C::CheckedMs, C::RetryMs])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// The kept ERC-20 metadata of a contract, as stored.
pub async fn token(
    db: &impl ConnectionTrait,
    chain_id: i64,
    address: &str,
) -> Result<Option<token_metadata::Model>, DbErr> {
    token_metadata::Entity::find_by_id((chain_id, address.to_owned())).one(db).await
}

/// Keeps what a contract answered to `symbol()` and `decimals()`: both, or `None` when it is not
/// an ERC-20 (asked again after `TOKEN_NOT_ERC20_RETRY`).
pub async fn keep_token(
    db: &impl ConnectionTrait,
    chain_id: i64,
    address: &str,
    erc20: Option<(&str, u8)>,
    now_ms: i64,
) -> Result<(), DbErr> {
    let row = token_metadata::ActiveModel {
        chain_id: Set(chain_id),
        address: Set(address.to_owned()),
        symbol: Set(erc20.map(|(s, _)| s.to_owned())),
        decimals: Set(erc20.map(|(_, d)| i32::from(d))),
        checked_ms: Set(now_ms),
        retry_ms: Set(erc20.is_none().then(|| now_ms + TOKEN_NOT_ERC20_RETRY.as_millis() as i64)),
    };
    use token_metadata::Column as C;
    token_metadata::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([C::ChainId, C::Address])
                .update_columns([C::Symbol, C::Decimals, C::CheckedMs, C::RetryMs])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}
