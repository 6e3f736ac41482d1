//! x402 payments. A payment is reserved by `(payer, nonce)` before the facilitator sees it, so a
//! payment in flight cannot be replayed by a concurrent request on any server process sharing
//! the store; it ends `settled` (with its transaction) or `failed` (with the reason). A
//! reservation is never released: an EIP-3009 nonce is single-use, a retry signs a new one.
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    SqlErr, sea_query::Expr,
};

use super::entities::x402_payment::{self, PaymentStatus};

/// A payment about to be verified.
#[derive(Debug, Clone)]
pub struct NewPayment<'a> {
    pub payer: &'a str,
    pub nonce: &'a str,
    pub x402_version: u8,
    pub amount: &'a str,
    pub asset: &'a str,
    pub network: &'a str,
    pub pay_to: &'a str,
    pub endpoint: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// The row id to settle or fail.
    Reserved(i64),
    /// This `(payer, nonce)` was seen before.
    Replayed,
}

/// Reserves `(payer, nonce)`; the unique key makes this atomic across processes.
pub async fn reserve(db: &impl ConnectionTrait, new: &NewPayment<'_>, now_ms: i64) -> Result<Reservation, DbErr> {
    let row = x402_payment::ActiveModel {
        payer: Set(new.payer.to_owned()),
        nonce: Set(new.nonce.to_owned()),
        status: Set(PaymentStatus::Reserved),
        x402_version: Set(i32::from(new.x402_version)),
        amount: Set(new.amount.to_owned()),
        asset: Set(new.asset.to_owned()),
        network: Set(new.network.to_owned()),
        pay_to: Set(new.pay_to.to_owned()),
        endpoint: Set(new.endpoint.to_owned()),
        transaction: Set(None),
        error: Set(None),
        created_ms: Set(now_ms),
        settled_ms: Set(None),
        ..Default::default()
    };
    match x402_payment::Entity::insert(row).exec(db).await {
        Ok(done) => Ok(Reservation::Reserved(done.last_insert_id)),
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(Reservation::Replayed),
        Err(err) => Err(err),
    }
}

/// Marks a reserved payment failed (nothing was charged), with the reason.
pub async fn fail(db: &impl ConnectionTrait, id: i64, reason: &str) -> Result<(), DbErr> {
    x402_payment::Entity::update_many()
        .col_expr(x402_payment::Column::Status, Expr::value(PaymentStatus::Failed))
        .col_expr(x402_payment::Column::Error, Expr::value(reason))
        .filter(x402_payment::Column::Id.eq(id))
        .filter(x402_payment::Column::Status.eq(PaymentStatus::Reserved))
        .exec(db)
        .await?;
    Ok(())
}

/// Notes why a reserved payment's outcome is unknown (the facilitator failed mid-settlement);
/// it stays reserved for an operator to reconcile against the chain.
pub async fn note(db: &impl ConnectionTrait, id: i64, reason: &str) -> Result<(), DbErr> {
    x402_payment::Entity::update_many()
        .col_expr(x402_payment::Column::Error, Expr::value(reason))
        .filter(x402_payment::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Records a settled payment: the amount the facilitator settled and its transaction.
pub async fn settle(
    db: &impl ConnectionTrait,
    id: i64,
    amount: &str,
    transaction: &str,
    now_ms: i64,
) -> Result<(), DbErr> {
    let row = x402_payment::ActiveModel {
        id: Set(id),
        status: Set(PaymentStatus::Settled),
        amount: Set(amount.to_owned()),
        transaction: Set(Some(transaction.to_owned())),
        error: Set(None),
        settled_ms: Set(Some(now_ms)),
        ..Default::default()
    };
    row.update(db).await?;
    Ok(())
}

/// Every payment, newest first (operators and tests).
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<x402_payment::Model>, DbErr> {
    x402_payment::Entity::find()
        .order_by_desc(x402_payment::Column::CreatedMs)
        .order_by_desc(x402_payment::Column::Id)
        .all(db)
        .await
}
