//! The delivery queue: the deliveries owed to webhook subscriptions, and their attempts.
//!
//! The feed is the outbox; this is the queue. After each publication [`enqueue`] turns the new
//! entries into one delivery per subscription that wants them, a feed entry once per
//! subscription, whoever gets there:
//!
//! - **The shared fan-out** moves one position for every subscription that follows it
//!   (`webhook_fanout`), a page of entries at a time, in the same transaction as the page's
//!   deliveries and only if no other process moved it first. The subscriptions a page concerns
//!   are found through the filters' routes from each entry's own values
//!   (`store::webhooks::matches`): the cost of an entry follows the subscriptions routed to it,
//!   not the number of subscriptions, and `govdata_webhook_fanout_subscriptions_touched_total`
//!   counts them.
//! - **A subscription that does not follow it** (enabled again after a pause, or upgraded
//!   by migration 32) catches up by itself from its own `enqueued_through`, moved the same way,
//!   then follows the fan-out from the position it reached, checked under the fan-out's lock so
//!   that no page passes between. A following subscription that was paused (disabled) falls
//!   behind at the fan-out's position when the next page is fanned out, so that the entries
//!   published while it was disabled are enqueued when it is enabled again.
//! - **A replay** enqueues a range again for one subscription, its range moved the same way.
//!
//! The sender [`claim`]s a subscription's due deliveries
//! with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's single writer serialises the
//! claims), and [`record`]s each attempt's outcome only while it still holds the lease; [`prune`]
//! removes what is past the feed's retention.
//!
//! Push writes these bookkeeping tables itself (as `edge` writes payments through `store`): the
//! subscriptions they belong to are stored by `store::webhooks` (their filters too, and which
//! subscriptions want which entries), and this module reads and moves only the queue's cursors
//! (the fan-out's position, each subscription's `enqueued_through`, whether it follows the
//! fan-out, the replay range) and the subscriptions' health.
use sea_orm::{
    ActiveEnum, ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr,
    EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect, Statement, TransactionTrait, Value,
};

use crate::contract::feed::FEED_RETENTION;
use crate::contract::time::rfc3339_ms;
use crate::contract::webhooks::{
    self, DISABLE_AFTER_FAILING, MESSAGE_ID_PREFIX, SUBSCRIPTION_ID_PREFIX, TEST_MESSAGE_TYPE,
};
use crate::metrics::METRICS;
use crate::store::entities::webhook_attempt::{self, AttemptOutcome};
use crate::store::entities::webhook_delivery::{self, DeliveryState};
use crate::store::entities::webhook_subscription;
use crate::store::feed::{self, FeedRecord};
use crate::store::webhooks::{self as subs, Match, REMINDER_KINDS, Scope, Subscription};

/// Deliveries per insert.
const CHUNK: usize = 500;
/// Feed entries the fan-out (or one subscription's catch-up or replay) reads at a time.
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
    let shared = subs::fanned_through(db).await?;
    let position = if subscription.follows_fanout {
        subscription.enqueued_through.max(shared)
    } else {
        subscription.enqueued_through
    };
    let through = position.max(subscription.replay_through.unwrap_or(0));
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

/// Enqueues the feed entries published since the last call: a page of them for every
/// subscription following the fan-out, a page for each subscription catching up by itself, and
/// the next page of each replay in progress. Returns what it did; call again while `more`.
pub async fn enqueue(db: &DatabaseConnection, now_ms: i64) -> Result<Enqueued, DbErr> {
    let mut done = Enqueued::default();
    fan_out(db, now_ms, &mut done).await?;
    catch_up(db, now_ms, &mut done).await?;
    replays(db, now_ms, &mut done).await?;
    Ok(done)
}

/// What one [`enqueue`] pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enqueued {
    pub deliveries: u64,
    /// Feed entries the shared fan-out enqueued.
    pub entries: u64,
    /// Subscriptions the shared fan-out read for those entries, summed over entries (each reached
    /// through a route from one of the entry's values, then checked against all its filters).
    pub touched: u64,
    /// A page was full, or a subscription has more to catch up: there may be more to enqueue at
    /// once.
    pub more: bool,
}

/// The kinds the reminder rule matches (`store::webhooks::REMINDER_KINDS`), as stored.
fn reminder_kinds() -> Vec<&'static str> {
    REMINDER_KINDS.iter().map(|k| k.as_str()).collect()
}

/// Up to a page of entries after `after` (up to `through`, when given), as their sequences read.
struct Page {
    entries: u64,
    last: Option<i64>,
    full: bool,
}

async fn page(db: &impl ConnectionTrait, after: i64, through: Option<i64>) -> Result<Page, DbErr> {
    let mut values: Vec<Value> = vec![after.into(), (ENQUEUE_PAGE as i64).into()];
    let bound = match through {
        Some(t) => {
            values.push(t.into());
            " AND seq <= $3"
        }
        None => "",
    };
    let sql = format!("SELECT seq FROM feed_entries WHERE seq > $1{bound} ORDER BY seq LIMIT $2");
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    let seqs: Vec<i64> =
        db.query_all_raw(stmt).await?.iter().map(|r| r.try_get::<i64>("", "seq")).collect::<Result<_, _>>()?;
    Ok(Page { entries: seqs.len() as u64, last: seqs.last().copied(), full: seqs.len() as u64 == ENQUEUE_PAGE })
}

async fn exec(db: &impl ConnectionTrait, sql: &str, values: Vec<Value>) -> Result<u64, DbErr> {
    Ok(db.execute_raw(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).await?.rows_affected())
}

/// The shared fan-out: the next page of entries after its position, to every following
/// subscription that wants them.
async fn fan_out(db: &DatabaseConnection, now_ms: i64, done: &mut Enqueued) -> Result<(), DbErr> {
    let from = subs::fanned_through(db).await?;
    let page = page(db, from, None).await?;
    let Some(through) = page.last else { return Ok(()) };
    let txn = db.begin().await?;
    // The fan-out's turn: moving its position first holds the row (PostgreSQL) or the writer's
    // lock (SQLite) until the page's deliveries commit with it. A process that finds it moved
    // leaves the page to the one that moved it.
    let moved = exec(
        &txn,
        "UPDATE webhook_fanout SET through = $1 WHERE id = 1 AND through = $2",
        vec![through.into(), from.into()],
    )
    .await?;
    if moved != 1 {
        return txn.rollback().await;
    }
    // Following subscriptions paused since the last page fall behind here: they had every entry
    // up to `from`, and get the later ones by catching up once they are enabled again. One
    // paused between this statement and the next still gets this page, kept pending until then.
    exec(
        &txn,
        "UPDATE webhook_subscriptions SET follows_fanout = FALSE, \
         enqueued_through = CASE WHEN enqueued_through > $1 THEN enqueued_through ELSE $1 END \
         WHERE follows_fanout = TRUE AND enabled = FALSE",
        vec![from.into()],
    )
    .await?;
    let reached = subs::matches(&txn, from, through, Scope::Following, &reminder_kinds()).await?;
    let deliveries = insert_deliveries(&txn, reached.iter().filter(|m| m.wanted()), now_ms).await?;
    txn.commit().await?;
    let touched = reached.len() as u64;
    METRICS.webhook_fanout_entries.inc_by(page.entries);
    METRICS.webhook_fanout_touched.inc_by(touched);
    done.deliveries += deliveries;
    done.entries += page.entries;
    done.touched += touched;
    done.more |= page.full;
    Ok(())
}

/// Active subscriptions that do not follow the fan-out (a few: enabled again after a pause, upgraded by migration 32).
async fn behind(db: &impl ConnectionTrait) -> Result<Vec<Subscription>, DbErr> {
    // The literal terms of the partial index `ix_webhook_subscriptions_behind`.
    let sql = "SELECT s.* FROM webhook_subscriptions s JOIN partner_tokens t ON t.id = s.token_id \
               WHERE s.follows_fanout = FALSE AND s.enabled = TRUE AND t.revoked_ms IS NULL ORDER BY s.id";
    let stmt = Statement::from_string(db.get_database_backend(), sql);
    webhook_subscription::Entity::find().from_raw_sql(stmt).all(db).await
}

/// Each subscription behind the fan-out: the next page of the entries it wants up to the
/// fan-out's position, then, once it reached that position, following the fan-out.
async fn catch_up(db: &DatabaseConnection, now_ms: i64, done: &mut Enqueued) -> Result<(), DbErr> {
    let behind = behind(db).await?;
    if behind.is_empty() {
        return Ok(());
    }
    let shared = subs::fanned_through(db).await?;
    for s in behind {
        let from = s.enqueued_through;
        let page = if from < shared {
            page(db, from, Some(shared)).await?
        } else {
            Page { entries: 0, last: None, full: false }
        };
        // A short page read every entry up to the fan-out's position as read.
        let through = match page.last {
            Some(last) if page.full => last,
            _ => from.max(shared),
        };
        let txn = db.begin().await?;
        // Its own cursor first (its row, or SQLite's writer lock), only if no other process
        // moved it.
        let moved = exec(
            &txn,
            "UPDATE webhook_subscriptions SET enqueued_through = $1 \
             WHERE id = $2 AND enqueued_through = $3 AND follows_fanout = FALSE",
            vec![through.into(), s.id.into(), from.into()],
        )
        .await?;
        if moved != 1 {
            txn.rollback().await?;
            continue;
        }
        if page.entries > 0 {
            let reached = subs::matches(&txn, from, through, Scope::One(s.id), &reminder_kinds()).await?;
            done.deliveries += insert_deliveries(&txn, reached.iter().filter(|m| m.wanted()), now_ms).await?;
        }
        if page.full || subs::hold_fanout(&txn).await? > through {
            // More to read, or the fan-out moved on since it was read: the next pass reads on.
            done.more = true;
        } else {
            // Caught up, and the fan-out is held where it was read: no page passes between.
            exec(&txn, "UPDATE webhook_subscriptions SET follows_fanout = TRUE WHERE id = $1", vec![s.id.into()])
                .await?;
        }
        txn.commit().await?;
    }
    Ok(())
}

/// The next page of each replay in progress (of active subscriptions).
async fn replays(db: &DatabaseConnection, now_ms: i64, done: &mut Enqueued) -> Result<(), DbErr> {
    // `ix_webhook_subscriptions_replaying` holds these only.
    let sql = "SELECT s.* FROM webhook_subscriptions s JOIN partner_tokens t ON t.id = s.token_id \
               WHERE s.replay_from IS NOT NULL AND s.enabled = TRUE AND t.revoked_ms IS NULL ORDER BY s.id";
    let stmt = Statement::from_string(db.get_database_backend(), sql);
    for s in webhook_subscription::Entity::find().from_raw_sql(stmt).all(db).await? {
        let (Some(from), Some(through)) = (s.replay_from, s.replay_through) else { continue };
        let page = page(db, from, Some(through)).await?;
        let (last, next) = match page.last {
            Some(last) if page.full => (last, Some(last)),
            _ => (through, None),
        };
        let txn = db.begin().await?;
        let moved = webhook_subscription::Entity::update_many()
            .col_expr(webhook_subscription::Column::ReplayFrom, next.into())
            .col_expr(webhook_subscription::Column::ReplayThrough, next.map(|_| through).into())
            .filter(webhook_subscription::Column::Id.eq(s.id))
            .filter(webhook_subscription::Column::ReplayFrom.eq(from))
            .exec(&txn)
            .await?
            .rows_affected;
        if moved == 1 && page.entries > 0 {
            let reached = subs::matches(&txn, from, last, Scope::One(s.id), &reminder_kinds()).await?;
            done.deliveries += insert_deliveries(&txn, reached.iter().filter(|m| m.wanted()), now_ms).await?;
            done.more |= page.full;
        }
        txn.commit().await?;
    }
    Ok(())
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

/// Inserts a delivery of each matched entry to its subscription; returns how many.
async fn insert_deliveries<'a>(
    db: &impl ConnectionTrait,
    matched: impl Iterator<Item = &'a Match>,
    now_ms: i64,
) -> Result<u64, DbErr> {
    let rows: Vec<webhook_delivery::ActiveModel> = matched
        .map(|m| delivery(m.subscription_id, Some(m.seq), None, webhooks::message_id(&m.public_id, m.seq), now_ms))
        .collect();
    let n = rows.len() as u64;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(CHUNK).collect();
        webhook_delivery::Entity::insert_many(chunk).exec_without_returning(db).await?;
    }
    Ok(n)
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

/// Lets go of the claims on deliveries `ids` (claimed for a subscription no longer active): due
/// again as they were, for whichever task claims them next.
pub async fn release(db: &impl ConnectionTrait, ids: &[i64]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    webhook_delivery::Entity::update_many()
        .col_expr(webhook_delivery::Column::LeaseUntilMs, 0i64.into())
        .filter(webhook_delivery::Column::Id.is_in(ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(())
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
