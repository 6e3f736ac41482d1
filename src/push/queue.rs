//! The delivery queue: the deliveries owed to webhook subscriptions, and their attempts.
//!
//! The feed is the outbox; this is the queue. After each publication [`enqueue`] turns the new
//! entries into one delivery per matching subscription, moving each subscription's
//! `enqueued_through` in the same transaction as its deliveries, and only if no other process
//! moved it first: a feed entry is enqueued once per subscription, whoever gets there. A replay
//! enqueues a range again the same way. The sender [`claim`]s a subscription's due deliveries
//! with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's single writer serialises the
//! claims), and [`record`]s each attempt's outcome only while it still holds the lease; [`prune`]
//! removes what is past the feed's retention.
//!
//! Push writes these bookkeeping tables itself (as `edge` writes payments through `store`): the
//! subscriptions they belong to are stored by `store::webhooks`, and this module reads and moves
//! only their queue cursors (`enqueued_through`, the replay range) and health.
use sea_orm::{
    ActiveEnum, ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr,
    EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect, Statement, TransactionTrait, Value,
};

use crate::contract::feed::FEED_RETENTION;
use crate::contract::time::rfc3339_ms;
use crate::contract::webhooks::{
    self, DISABLE_AFTER_FAILING, MESSAGE_ID_PREFIX, SUBSCRIPTION_ID_PREFIX, TEST_MESSAGE_TYPE,
};
use crate::store::entities::webhook_attempt::{self, AttemptOutcome};
use crate::store::entities::webhook_delivery::{self, DeliveryState};
use crate::store::entities::webhook_subscription;
use crate::store::feed::{self, FeedRecord};
use crate::store::webhooks::{Filters, Subscription, active};

/// Deliveries per insert.
const CHUNK: usize = 500;
/// Feed entries a subscription's enqueue reads at a time.
const ENQUEUE_PAGE: u64 = 1_000;

/// Queues a `webhook.test` message for `subscription`, due at once, saying `note`; returns its
/// `webhook-id`.
pub async fn queue_test(
    db: &impl ConnectionTrait,
    subscription: &Subscription,
    note: &str,
    now_ms: i64,
) -> Result<String, DbErr> {
    let msg_id = format!(
        "{MESSAGE_ID_PREFIX}{}_test_{}",
        subscription.public_id.trim_start_matches(SUBSCRIPTION_ID_PREFIX),
        uuid::Uuid::new_v4().simple()
    );
    let body = serde_json::json!({
        "type": TEST_MESSAGE_TYPE,
        "timestamp": rfc3339_ms(now_ms),
        "data": { "webhookId": subscription.public_id, "message": note },
    });
    delivery(subscription.id, None, Some(body.to_string()), msg_id.clone(), now_ms).insert(db).await?;
    Ok(msg_id)
}

/// Asks for the entries after `after` up to those already enqueued to be enqueued again. A
/// replay already in progress is widened. Returns the range, (from, through].
pub async fn replay(
    db: &impl ConnectionTrait,
    subscription: Subscription,
    after: i64,
    now_ms: i64,
) -> Result<(i64, i64), DbErr> {
    let through = subscription.enqueued_through.max(subscription.replay_through.unwrap_or(0));
    let from = subscription.replay_from.map_or(after, |f| f.min(after));
    let mut row: webhook_subscription::ActiveModel = subscription.into();
    row.replay_from = Set(Some(from));
    row.replay_through = Set(Some(through));
    row.updated_ms = Set(now_ms);
    row.update(db).await?;
    Ok((from, through))
}

/// A subscription's attempts, newest first, before attempt `before` (its id), at most `limit`.
pub async fn attempts(
    db: &impl ConnectionTrait,
    subscription_id: i64,
    before: Option<i64>,
    limit: u64,
) -> Result<Vec<webhook_attempt::Model>, DbErr> {
    let mut query = webhook_attempt::Entity::find()
        .filter(webhook_attempt::Column::SubscriptionId.eq(subscription_id))
        .order_by_desc(webhook_attempt::Column::Id)
        .limit(limit);
    if let Some(before) = before {
        query = query.filter(webhook_attempt::Column::Id.lt(before));
    }
    query.all(db).await
}

/// Enqueues, for every active subscription, the feed entries after its `enqueued_through` that
/// it wants, and the next page of any replay in progress. Returns the deliveries enqueued;
/// call again while it returns a full page's worth (`more`).
pub async fn enqueue(db: &DatabaseConnection, now_ms: i64) -> Result<Enqueued, DbErr> {
    let mut done = Enqueued::default();
    let (subscriptions, newest) = {
        let conn = db.begin().await?;
        let subs = active(&conn).await?;
        let newest = feed::newest(&conn).await?;
        conn.commit().await?;
        (subs, newest)
    };
    for s in subscriptions {
        if s.enqueued_through < newest {
            let page = wanted(db, &s, s.enqueued_through, None).await?;
            // A full page goes on from the last entry it read (wanted or not); a short one read
            // everything up to the newest entry seen at the start, and maybe past it.
            let cursor = match page.last_read {
                Some(last) if page.full => last,
                Some(last) => last.max(newest),
                None => newest,
            };
            let moved = webhook_subscription::Entity::update_many()
                .col_expr(webhook_subscription::Column::EnqueuedThrough, cursor.into())
                .filter(webhook_subscription::Column::EnqueuedThrough.eq(s.enqueued_through));
            advance(db, &s, moved, &page, now_ms, &mut done).await?;
        }
        if let (Some(from), Some(through)) = (s.replay_from, s.replay_through) {
            let page = wanted(db, &s, from, Some(through)).await?;
            let next = if page.full { page.last_read } else { None };
            let moved = webhook_subscription::Entity::update_many()
                .col_expr(webhook_subscription::Column::ReplayFrom, next.into())
                .col_expr(webhook_subscription::Column::ReplayThrough, next.map(|_| through).into())
                .filter(webhook_subscription::Column::ReplayFrom.eq(from));
            advance(db, &s, moved, &page, now_ms, &mut done).await?;
        }
    }
    Ok(done)
}

/// Moves `s`'s cursor with `moved` (an update of it that matches only while the cursor is where
/// this pass read it) and queues the page's wanted entries, in one transaction: nothing when
/// another process moved the cursor first.
async fn advance(
    db: &DatabaseConnection,
    s: &Subscription,
    moved: sea_orm::UpdateMany<webhook_subscription::Entity>,
    page: &Wanted,
    now_ms: i64,
    done: &mut Enqueued,
) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    let moved = moved.filter(webhook_subscription::Column::Id.eq(s.id)).exec(&txn).await?.rows_affected;
    if moved == 1 {
        done.deliveries += insert_deliveries(&txn, s, &page.seqs, now_ms).await?;
        done.more |= page.full;
    }
    txn.commit().await
}

/// A page of the feed as one subscription's enqueue reads it.
struct Wanted {
    /// The page was full: more may follow.
    full: bool,
    /// The last entry read, wanted or not.
    last_read: Option<i64>,
    /// The entries the subscription wants.
    seqs: Vec<i64>,
}

/// What one [`enqueue`] pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enqueued {
    pub deliveries: u64,
    /// A page was full: there may be more to enqueue at once.
    pub more: bool,
}

/// The entries after `after` (up to `through`) that `s` wants, from a page of the feed: with
/// filters, the page is read in sequence order and filtered here, so a subscription to a rare
/// kind moves past the entries it does not want.
async fn wanted(
    db: &impl ConnectionTrait,
    s: &Subscription,
    after: i64,
    through: Option<i64>,
) -> Result<Wanted, DbErr> {
    #[derive(FromQueryResult)]
    struct Head {
        seq: i64,
        dao_id: String,
        // Text, not `FeedKind`: an entry of a kind this build does not know (a newer writer's)
        // must not fail the page and stall every subscription's queue behind it.
        kind: String,
    }
    let mut values: Vec<Value> = vec![after.into(), (ENQUEUE_PAGE as i64).into()];
    let through = match through {
        Some(t) => {
            values.push(t.into());
            " AND seq <= $3"
        }
        None => "",
    };
    let sql = format!("SELECT seq, dao_id, kind FROM feed_entries WHERE seq > $1{through} ORDER BY seq LIMIT $2");
    let rows =
        Head::find_by_statement(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).all(db).await?;
    let filters = Filters::of(s);
    Ok(Wanted {
        full: rows.len() as u64 == ENQUEUE_PAGE,
        last_read: rows.last().map(|r| r.seq),
        seqs: rows.into_iter().filter(|r| filters.wants(&r.dao_id, &r.kind)).map(|r| r.seq).collect(),
    })
}

/// A new delivery, due at once: of feed entry `seq`, or of a test message's `payload`.
fn delivery(
    subscription_id: i64,
    seq: Option<i64>,
    payload: Option<String>,
    msg_id: String,
    now_ms: i64,
) -> webhook_delivery::ActiveModel {
    webhook_delivery::ActiveModel {
        subscription_id: Set(subscription_id),
        seq: Set(seq),
        payload: Set(payload),
        msg_id: Set(msg_id),
        attempts: Set(0),
        state: Set(DeliveryState::Pending),
        next_attempt_ms: Set(now_ms),
        lease_until_ms: Set(0),
        created_ms: Set(now_ms),
        ..Default::default()
    }
}

async fn insert_deliveries(
    db: &impl ConnectionTrait,
    s: &Subscription,
    seqs: &[i64],
    now_ms: i64,
) -> Result<u64, DbErr> {
    for chunk in seqs.chunks(CHUNK) {
        let rows =
            chunk.iter().map(|&seq| delivery(s.id, Some(seq), None, webhooks::message_id(&s.public_id, seq), now_ms));
        webhook_delivery::Entity::insert_many(rows).exec_without_returning(db).await?;
    }
    Ok(seqs.len() as u64)
}

/// A delivery claimed for its next attempt.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct Claimed {
    pub id: i64,
    pub seq: Option<i64>,
    pub payload: Option<String>,
    pub msg_id: String,
    pub attempts: i32,
    /// The lease this claim holds (recording needs it).
    pub lease_until_ms: i64,
}

/// Claims up to `limit` of `subscription_id`'s deliveries due at `now_ms`, oldest first, until
/// `lease_until_ms`.
pub async fn claim(
    db: &impl ConnectionTrait,
    subscription_id: i64,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u64,
) -> Result<Vec<Claimed>, DbErr> {
    let backend = db.get_database_backend();
    let lock = if backend == DbBackend::Postgres { " FOR UPDATE SKIP LOCKED" } else { "" };
    // `state` is written as a literal: only then can SQLite and PostgreSQL's generic plans use the
    // partial index of pending deliveries (`ix_webhook_due`), whatever else the table holds.
    let pending = DeliveryState::Pending.to_value();
    let sql = format!(
        "UPDATE webhook_deliveries SET lease_until_ms = $1 WHERE id IN (\
           SELECT id FROM webhook_deliveries WHERE subscription_id = $2 AND state = '{pending}' \
           AND next_attempt_ms <= $3 AND lease_until_ms <= $3 ORDER BY next_attempt_ms, id LIMIT $4{lock}) \
         RETURNING id, seq, payload, msg_id, attempts, lease_until_ms"
    );
    let values: Vec<Value> = vec![lease_until_ms.into(), subscription_id.into(), now_ms.into(), (limit as i64).into()];
    let mut claimed = Claimed::find_by_statement(Statement::from_sql_and_values(backend, sql, values)).all(db).await?;
    claimed.sort_by_key(|c| c.id);
    Ok(claimed)
}

/// When `subscription_id`'s next pending delivery is due, if it has one.
pub async fn next_due(db: &impl ConnectionTrait, subscription_id: i64) -> Result<Option<i64>, DbErr> {
    let pending = DeliveryState::Pending.to_value();
    let sql = format!(
        "SELECT MIN(CASE WHEN lease_until_ms > next_attempt_ms THEN lease_until_ms ELSE next_attempt_ms END) \
         AS due FROM webhook_deliveries WHERE subscription_id = $1 AND state = '{pending}'"
    );
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, [subscription_id.into()]);
    match db.query_one_raw(stmt).await? {
        Some(row) => row.try_get::<Option<i64>>("", "due"),
        None => Ok(None),
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub claimed: Claimed,
    pub attempted_ms: i64,
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub verdict: Verdict,
}

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The receiver took it (2xx).
    Delivered,
    /// Try again at this time.
    RetryAt(i64),
    /// No more attempts: the schedule is over, or what was delivered is gone (pruned).
    Failed,
    /// The receiver said the destination is gone for good (410 Gone, or a Slack or Discord
    /// answer for a deleted hook): the subscription is disabled.
    Gone,
}

/// Records the outcomes of `subscription`'s attempts in one transaction: each delivery's state
/// (only while its claim's lease is still held), each attempt, and the subscription's health:
/// a success clears `failing_since_ms`; failures for [`DISABLE_AFTER_FAILING`], or an answer
/// saying the destination is gone, disable it with the reason. Returns the subscription's disabled reason, if it was disabled.
///
/// Call it in a transaction (the sender records the attempts of many webhooks in one, with
/// their next claims: one commit for all).
pub async fn record(
    txn: &impl ConnectionTrait,
    subscription: &Subscription,
    outcomes: &[Outcome],
    now_ms: i64,
) -> Result<Option<String>, DbErr> {
    if outcomes.is_empty() {
        return Ok(None);
    }
    let mut attempts = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        let (state, next, outcome) = match o.verdict {
            Verdict::Delivered => (DeliveryState::Delivered, None, AttemptOutcome::Delivered),
            Verdict::RetryAt(at) => (DeliveryState::Pending, Some(at), AttemptOutcome::Retrying),
            Verdict::Failed | Verdict::Gone => (DeliveryState::Failed, None, AttemptOutcome::Failed),
        };
        let attempt = o.claimed.attempts + 1;
        webhook_delivery::Entity::update_many()
            .col_expr(webhook_delivery::Column::State, Value::from(state).into())
            .col_expr(webhook_delivery::Column::Attempts, attempt.into())
            .col_expr(webhook_delivery::Column::NextAttemptMs, next.unwrap_or(o.attempted_ms).into())
            .col_expr(webhook_delivery::Column::LeaseUntilMs, 0i64.into())
            .filter(webhook_delivery::Column::Id.eq(o.claimed.id))
            .filter(webhook_delivery::Column::LeaseUntilMs.eq(o.claimed.lease_until_ms))
            .exec(txn)
            .await?;
        attempts.push(webhook_attempt::ActiveModel {
            delivery_id: Set(o.claimed.id),
            subscription_id: Set(subscription.id),
            msg_id: Set(o.claimed.msg_id.clone()),
            seq: Set(o.claimed.seq),
            attempt: Set(attempt),
            attempted_ms: Set(o.attempted_ms),
            status_code: Set(o.status_code.map(i32::from)),
            duration_ms: Set(o.duration_ms),
            error: Set(o.error.clone()),
            outcome: Set(outcome),
            next_attempt_ms: Set(next),
            ..Default::default()
        });
    }
    webhook_attempt::Entity::insert_many(attempts).exec_without_returning(txn).await?;
    let delivered = outcomes.iter().any(|o| o.verdict == Verdict::Delivered);
    let gone = outcomes.iter().find(|o| o.verdict == Verdict::Gone);
    let current = webhook_subscription::Entity::find_by_id(subscription.id).one(txn).await?;
    let mut disabled = None;
    if let Some(current) = current {
        let failing_since = match (delivered, current.failing_since_ms) {
            (true, _) => None,
            (false, Some(since)) => Some(since),
            (false, None) => Some(outcomes.iter().map(|o| o.attempted_ms).min().unwrap_or(now_ms)),
        };
        if let Some(o) = gone {
            // The answer that said so, as the attempt's error has it (a 410; Slack's and
            // Discord's answers for a deleted hook: `push::formats::answer`).
            let answer = o.error.as_deref().unwrap_or("the endpoint answered 410 Gone");
            disabled = Some(format!("{answer} at {}", crate::contract::time::Timestamp::from_ms(o.attempted_ms)));
        } else if let Some(since) = failing_since
            && now_ms - since >= DISABLE_AFTER_FAILING.as_millis() as i64
        {
            disabled = Some(format!(
                "every attempt failed for {} days, since {}",
                DISABLE_AFTER_FAILING.as_secs() / 86_400,
                crate::contract::time::Timestamp::from_ms(since)
            ));
        }
        if current.failing_since_ms != failing_since || (disabled.is_some() && current.enabled) {
            let mut row: webhook_subscription::ActiveModel = current.into();
            row.failing_since_ms = Set(failing_since);
            if let Some(reason) = &disabled {
                row.enabled = Set(false);
                row.disabled_reason = Set(Some(reason.clone()));
            }
            row.update(txn).await?;
        }
    }
    Ok(disabled)
}

/// Removes delivered and failed deliveries and attempts older than the feed's retention, at most
/// `batch` of each. Pending deliveries are never removed.
pub async fn prune(db: &impl ConnectionTrait, now_ms: i64, batch: u64) -> Result<u64, DbErr> {
    let cutoff = now_ms - FEED_RETENTION.max_ms();
    let backend = db.get_database_backend();
    let mut removed = 0;
    let deliveries = "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries \
                      WHERE created_ms < $1 AND state <> $2 ORDER BY created_ms LIMIT $3)";
    let attempts = "DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE attempted_ms < $1 \
                    ORDER BY attempted_ms LIMIT $2)";
    removed += db
        .execute_raw(Statement::from_sql_and_values(
            backend,
            deliveries,
            [cutoff.into(), DeliveryState::Pending.into(), (batch as i64).into()],
        ))
        .await?
        .rows_affected();
    removed += db
        .execute_raw(Statement::from_sql_and_values(backend, attempts, [cutoff.into(), (batch as i64).into()]))
        .await?
        .rows_affected();
    Ok(removed)
}

/// The feed entries of `seqs` (those still kept).
pub async fn entries(db: &impl ConnectionTrait, seqs: &[i64]) -> Result<Vec<FeedRecord>, DbErr> {
    feed::by_seq(db, seqs).await
}
