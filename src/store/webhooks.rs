//! Webhook subscriptions: the rows a partner token (`/v2/webhooks`) or an operator (`govdata
//! webhooks`) creates, lists, changes and deletes, with their signing secrets and their filters;
//! and which subscriptions want which feed entries ([`matches`]), the query the fan-out runs.
//!
//! The deliveries owed to them and their attempts are push's queue (`push::queue`); this module
//! touches those tables only where a subscription's own change reaches them (a deletion takes
//! its deliveries and attempts, enabling it again makes its pending deliveries due).
//!
//! A subscription's filters are rows (`webhook_filters`, migration 32), one per value of each
//! dimension (DAOs, kinds, proposals, voters), read and written by [`Filters`] only. An entry is
//! wanted when it matches every dimension the subscription filters (a dimension without values
//! matches every entry) and a dimension when the entry has any of its values. Each subscription
//! is also routed (`webhook_routes`) by the values of its most selective filter, so that the
//! subscriptions an entry may concern are found through an index from the entry's own values,
//! and the fan-out of one entry reads only those.
use std::collections::HashMap;

use base64::Engine;
use rand::RngCore;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr,
    EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Statement, TransactionSession,
    TransactionTrait, Value,
};

use super::entities::webhook_delivery::DeliveryState;
use super::entities::{webhook_attempt, webhook_delivery, webhook_subscription};
use super::failures::retrying_deadlocks;
use super::{address, placeholders};
use crate::contract::feed::FeedKind;
use crate::contract::ids::{IssuedKey, ProposalKey};
use crate::contract::vocabulary::{DaoId, UnknownValue};
use crate::contract::webhooks::{
    MAX_SUBSCRIPTIONS_PER_TOKEN, ROTATION_OVERLAP, SECRET_PREFIX, SUBSCRIPTION_ID_BYTES, WebhookFormat, WebhookId,
};

pub type Subscription = webhook_subscription::Model;

/// What a subscription is for, as created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub filters: Filters,
    pub description: Option<String>,
    /// How its messages are written (`None`: [`WebhookFormat::DEFAULT`]).
    pub format: Option<WebhookFormat>,
}

/// A change to a subscription: each member set is changed (a filter list replaces that
/// dimension's values; the other dimensions stay).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    pub url: Option<String>,
    pub daos: Option<Vec<DaoId>>,
    pub kinds: Option<Vec<FeedKind>>,
    pub proposals: Option<Vec<ProposalKey>>,
    /// Lowercase `0x` addresses.
    pub voters: Option<Vec<String>>,
    /// `Some(None)` removes the description.
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub format: Option<WebhookFormat>,
}

/// A dimension a subscription may filter by, as its filter rows name it. Ordered from the most
/// selective: a subscription is routed by the first one it filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dimension {
    /// The voters and delegates an entry is about (`feed_entry_voters`).
    Voter,
    /// The proposal an entry is about (`feed_entries.proposal_key`).
    Proposal,
    Dao,
    Kind,
}

impl Dimension {
    /// Every dimension, the most selective first.
    pub const ALL: [Self; 4] = [Self::Voter, Self::Proposal, Self::Dao, Self::Kind];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Voter => "voter",
            Self::Proposal => "proposal",
            Self::Dao => "dao",
            Self::Kind => "kind",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == text)
    }
}

/// The route (`webhook_routes.dimension`, with the empty value) of a subscription that filters
/// nothing: every entry's fan-out reaches it.
const ANY_ENTRY: &str = "any";

/// What a subscription wants of the feed: the entries of these DAOs, of these kinds, about these
/// proposals and about these voters (an empty list: every one). Stored as one row per value
/// (`webhook_filters`) and converted here only, where the rows are read ([`filters`]) and
/// written: no caller reads or writes the rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub daos: Vec<DaoId>,
    pub kinds: Vec<FeedKind>,
    pub proposals: Vec<ProposalKey>,
    /// Lowercase `0x` addresses.
    pub voters: Vec<String>,
    /// Stored values this build cannot read (a kind written by a newer build), kept as the text
    /// they are: they still make a dimension filtered and still match an entry that names them
    /// (matching compares the stored text), and the operator's listing shows them.
    unread: Vec<(Dimension, String)>,
}

impl Filters {
    pub fn new(daos: Vec<DaoId>, kinds: Vec<FeedKind>) -> Self {
        Self { daos, kinds, ..Self::default() }
    }

    /// These filters, and only entries about these proposals.
    pub fn with_proposals(self, proposals: Vec<ProposalKey>) -> Self {
        Self { proposals, ..self }
    }

    /// These filters, and only entries about these voters (lowercase `0x` addresses).
    pub fn with_voters(self, voters: Vec<String>) -> Self {
        Self { voters, ..self }
    }

    /// The filters stored as `rows` (dimension, value), in their order.
    fn read(rows: impl IntoIterator<Item = (Dimension, String)>) -> Self {
        let mut filters = Self::default();
        for (dimension, value) in rows {
            let read = match dimension {
                Dimension::Dao => DaoId::parse(&value).map(|d| filters.daos.push(d)),
                Dimension::Kind => FeedKind::parse(&value).ok().map(|k| filters.kinds.push(k)),
                Dimension::Proposal => ProposalKey::parse(&value).ok().map(|k| filters.proposals.push(k)),
                Dimension::Voter => {
                    address::normalize(&value).ok().filter(|v| *v == value).map(|v| filters.voters.push(v))
                }
            };
            if read.is_none() {
                filters.unread.push((dimension, value));
            }
        }
        filters
    }

    /// The stored text of `dimension`'s values, in order (those this build cannot read last).
    fn values(&self, dimension: Dimension) -> Vec<String> {
        let read: Vec<String> = match dimension {
            Dimension::Dao => self.daos.iter().map(|d| d.as_str().to_owned()).collect(),
            Dimension::Kind => self.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
            Dimension::Proposal => self.proposals.iter().map(|k| k.as_str().to_owned()).collect(),
            Dimension::Voter => self.voters.clone(),
        };
        let unread = self.unread.iter().filter(|(d, _)| *d == dimension).map(|(_, v)| v.clone());
        read.into_iter().chain(unread).collect()
    }

    /// `daos=… kinds=… proposals=… voters=…` as stored, naming only the dimensions filtered;
    /// `all` when none is (the operator's listing).
    pub fn describe(&self) -> String {
        let names = [(Dimension::Dao, "daos"), (Dimension::Kind, "kinds"), (Dimension::Proposal, "proposals")];
        let parts: Vec<String> = names
            .into_iter()
            .chain([(Dimension::Voter, "voters")])
            .filter_map(|(d, name)| {
                let values = self.values(d);
                (!values.is_empty()).then(|| format!("{name}={}", values.join(",")))
            })
            .collect();
        if parts.is_empty() { "all".to_owned() } else { parts.join(" ") }
    }
}

/// The format `s` is written in. Text this build does not know (a format a newer build stored)
/// is an error its caller decides about: the sender leaves such a subscription to the builds
/// that know it, and the API answers it as every unknown stored value.
pub fn format_of(s: &Subscription) -> Result<WebhookFormat, UnknownValue> {
    WebhookFormat::parse(&s.format)
}

/// The routes of a subscription whose filter rows are `rows`: the values of its most selective
/// dimension, or [`ANY_ENTRY`] when it filters nothing.
fn routes(rows: &[(Dimension, String)]) -> Vec<(&'static str, String)> {
    for dimension in Dimension::ALL {
        let values: Vec<(&'static str, String)> =
            rows.iter().filter(|(d, _)| *d == dimension).map(|(_, v)| (dimension.as_str(), v.clone())).collect();
        if !values.is_empty() {
            return values;
        }
    }
    vec![(ANY_ENTRY, String::new())]
}

/// The filters of the subscriptions `ids`, by id (a subscription without filters maps to none).
pub async fn filters(db: &impl ConnectionTrait, ids: &[i64]) -> Result<HashMap<i64, Filters>, DbErr> {
    let mut rows: HashMap<i64, Vec<(Dimension, String)>> = HashMap::new();
    for chunk in ids.chunks(500) {
        let sql = format!(
            "SELECT subscription_id, dimension, value FROM webhook_filters WHERE subscription_id IN ({}) \
             ORDER BY subscription_id, dimension, ordinal",
            placeholders(1, chunk.len())
        );
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, chunk.iter().map(|&id| id.into()));
        for row in FilterRow::find_by_statement(stmt).all(db).await? {
            // A dimension of a later build is no filter this build can apply or show.
            if let Some(dimension) = Dimension::parse(&row.dimension) {
                rows.entry(row.subscription_id).or_default().push((dimension, row.value));
            }
        }
    }
    Ok(rows.into_iter().map(|(id, rows)| (id, Filters::read(rows))).collect())
}

#[derive(FromQueryResult)]
struct FilterRow {
    subscription_id: i64,
    dimension: String,
    value: String,
}

/// Replaces subscription `id`'s values of each dimension listed (the others stay), then routes it
/// anew from every row it holds. Run it in the transaction that makes or changes the subscription;
/// `fresh` when it makes it (nothing to replace: `lists` are all its rows).
async fn write_filters(
    db: &impl ConnectionTrait,
    id: i64,
    lists: &[(Dimension, Vec<String>)],
    fresh: bool,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let exec = |sql: String, values: Vec<Value>| async move {
        db.execute_raw(Statement::from_sql_and_values(backend, sql, values)).await.map(|_| ())
    };
    let mut written: Vec<(Dimension, String)> = Vec::new();
    for (dimension, values) in lists {
        if !fresh {
            exec(
                "DELETE FROM webhook_filters WHERE subscription_id = $1 AND dimension = $2".to_owned(),
                vec![id.into(), dimension.as_str().into()],
            )
            .await?;
        }
        // Each value once (the API refuses repeats; an operator's list may have them).
        let mut once: Vec<&String> = Vec::with_capacity(values.len());
        for value in values {
            if !once.contains(&value) {
                once.push(value);
            }
        }
        written.extend(once.iter().map(|v| (*dimension, (*v).clone())));
        for (ordinal, chunk) in once.chunks(200).enumerate() {
            let rows: Vec<String> =
                (0..chunk.len()).map(|i| format!("($1, $2, ${}, ${})", 2 * i + 3, 2 * i + 4)).collect();
            let mut bound: Vec<Value> = vec![id.into(), dimension.as_str().into()];
            for (i, value) in chunk.iter().enumerate() {
                bound.push(value.as_str().into());
                bound.push(((ordinal * 200 + i) as i32).into());
            }
            let sql = format!(
                "INSERT INTO webhook_filters (subscription_id, dimension, value, ordinal) VALUES {}",
                rows.join(", ")
            );
            exec(sql, bound).await?;
        }
    }
    let stored: Vec<(Dimension, String)> = if fresh {
        written
    } else {
        let stmt = Statement::from_sql_and_values(
            backend,
            "SELECT subscription_id, dimension, value FROM webhook_filters WHERE subscription_id = $1 \
             ORDER BY dimension, ordinal",
            [id.into()],
        );
        let rows = FilterRow::find_by_statement(stmt).all(db).await?;
        exec("DELETE FROM webhook_routes WHERE subscription_id = $1".to_owned(), vec![id.into()]).await?;
        rows.into_iter().filter_map(|r| Dimension::parse(&r.dimension).map(|d| (d, r.value))).collect()
    };
    let routed = routes(&stored);
    for chunk in routed.chunks(200) {
        let rows: Vec<String> = (0..chunk.len()).map(|i| format!("(${}, ${}, $1)", 2 * i + 2, 2 * i + 3)).collect();
        let mut bound: Vec<Value> = vec![id.into()];
        for (dimension, value) in chunk {
            bound.push((*dimension).into());
            bound.push(value.as_str().into());
        }
        let sql = format!("INSERT INTO webhook_routes (dimension, value, subscription_id) VALUES {}", rows.join(", "));
        exec(sql, bound).await?;
    }
    Ok(())
}

/// Every dimension of `filters`, as [`write_filters`] takes them.
fn every_dimension(filters: &Filters) -> Vec<(Dimension, Vec<String>)> {
    Dimension::ALL.into_iter().map(|d| (d, filters.values(d))).collect()
}

/// Why a subscription could not be created.
#[derive(Debug)]
pub enum CreateError {
    /// The token holds the most subscriptions it may.
    TooMany,
    Store(DbErr),
}

impl From<DbErr> for CreateError {
    fn from(e: DbErr) -> Self {
        Self::Store(e)
    }
}

fn random(bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut out);
    out
}

/// A new `whsec_` secret: 32 random bytes, base64 (what the reference libraries decode).
pub fn new_secret() -> String {
    format!("{SECRET_PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(random(32)))
}

fn new_public_id() -> String {
    let mut bytes = [0u8; SUBSCRIPTION_ID_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    WebhookId::of_bytes(&bytes).as_str().to_owned()
}

/// Creates a subscription for token `token_id`, receiving the entries published from now on.
/// Returns it with its secret, shown once. (Two creations racing may both pass the count: the
/// bound is a guard against accidents, not a quota.)
///
/// It starts after the newest entry and follows the shared fan-out at once: both are read while
/// the fan-out is held (`webhook_fanout`), so no page of entries passes between. `db` may be a
/// transaction (a test or a benchmark makes thousands in one).
pub async fn create<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    token_id: i64,
    target: &Target,
    now_ms: i64,
) -> Result<Subscription, CreateError> {
    let txn = db.begin().await?;
    // A write first: on SQLite the transaction takes the writer's lock here, and what it reads
    // next is current (a read first could not be followed by a write once another commit came).
    let mut row = webhook_subscription::ActiveModel {
        public_id: Set(new_public_id()),
        token_id: Set(token_id),
        url: Set(target.url.clone()),
        description: Set(target.description.clone()),
        secret: Set(new_secret()),
        previous_secret: Set(None),
        previous_until_ms: Set(None),
        enabled: Set(true),
        disabled_reason: Set(None),
        failing_since_ms: Set(None),
        enqueued_through: Set(0),
        follows_fanout: Set(false),
        replay_from: Set(None),
        replay_through: Set(None),
        created_ms: Set(now_ms),
        updated_ms: Set(now_ms),
        format: Set(target.format.unwrap_or(WebhookFormat::DEFAULT).as_str().to_owned()),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    let held = webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::TokenId.eq(token_id))
        .count(&txn)
        .await?;
    if held > MAX_SUBSCRIPTIONS_PER_TOKEN {
        txn.rollback().await?;
        return Err(CreateError::TooMany);
    }
    write_filters(&txn, row.id, &every_dimension(&target.filters), true).await?;
    hold_fanout(&txn).await?;
    let newest = super::feed::newest(&txn).await?;
    webhook_subscription::Entity::update_many()
        .col_expr(webhook_subscription::Column::EnqueuedThrough, newest.into())
        .col_expr(webhook_subscription::Column::FollowsFanout, true.into())
        .filter(webhook_subscription::Column::Id.eq(row.id))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    row.enqueued_through = newest;
    row.follows_fanout = true;
    Ok(row)
}

/// The shared fan-out's position, held until the transaction ends: no page is fanned out
/// meanwhile (`push::queue`). PostgreSQL shares the row's lock; on SQLite the transaction holds
/// the writer's lock already (call it after the transaction wrote).
pub async fn hold_fanout(txn: &impl ConnectionTrait) -> Result<i64, DbErr> {
    let backend = txn.get_database_backend();
    let lock = if backend == DbBackend::Postgres { " FOR SHARE" } else { "" };
    let sql = format!("SELECT through FROM webhook_fanout WHERE id = 1{lock}");
    match txn.query_one_raw(Statement::from_string(backend, sql)).await? {
        Some(row) => row.try_get::<i64>("", "through"),
        None => Ok(0),
    }
}

/// The subscriptions of token `token_id` (every token's, for `None`: the operator), oldest first.
pub async fn list(db: &impl ConnectionTrait, token_id: Option<i64>) -> Result<Vec<Subscription>, DbErr> {
    let mut query = webhook_subscription::Entity::find().order_by_asc(webhook_subscription::Column::Id);
    if let Some(token) = token_id {
        query = query.filter(webhook_subscription::Column::TokenId.eq(token));
    }
    query.all(db).await
}

/// Subscription `public_id`, if token `token_id` owns it (any token's, for `None`).
pub async fn get(
    db: &impl ConnectionTrait,
    token_id: Option<i64>,
    public_id: &WebhookId,
) -> Result<Option<Subscription>, DbErr> {
    let row = webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::PublicId.eq(public_id.as_str()))
        .one(db)
        .await?;
    Ok(row.filter(|r| token_id.is_none_or(|t| t == r.token_id)))
}

/// Applies `change` to `subscription`. Enabling clears why it was disabled and since when it
/// failed; its deliveries still pending are attempted again at once, and the entries published
/// while it was disabled are enqueued (it catches up from where the fan-out left it,
/// `push::queue`). New filters apply to the entries enqueued from now on.
///
/// Started again when PostgreSQL cancels it to break a deadlock with the sender, which locks the
/// same deliveries in its own order (`failures::retrying_deadlocks`).
pub async fn update(
    db: &DatabaseConnection,
    subscription: Subscription,
    change: &Change,
    now_ms: i64,
) -> Result<Subscription, DbErr> {
    retrying_deadlocks(|| update_once(db, subscription.clone(), change, now_ms)).await
}

async fn update_once(
    db: &DatabaseConnection,
    subscription: Subscription,
    change: &Change,
    now_ms: i64,
) -> Result<Subscription, DbErr> {
    let txn = db.begin().await?;
    let id = subscription.id;
    let was_enabled = subscription.enabled;
    let mut row: webhook_subscription::ActiveModel = subscription.into();
    if let Some(url) = &change.url {
        row.url = Set(url.clone());
    }
    let lists: Vec<(Dimension, Vec<String>)> = [
        (Dimension::Dao, change.daos.as_ref().map(|l| l.iter().map(|d| d.as_str().to_owned()).collect())),
        (Dimension::Kind, change.kinds.as_ref().map(|l| l.iter().map(|k| k.as_str().to_owned()).collect())),
        (Dimension::Proposal, change.proposals.as_ref().map(|l| l.iter().map(|k| k.as_str().to_owned()).collect())),
        (Dimension::Voter, change.voters.clone()),
    ]
    .into_iter()
    .filter_map(|(d, values)| values.map(|v| (d, v)))
    .collect();
    if !lists.is_empty() {
        write_filters(&txn, id, &lists, false).await?;
    }
    if let Some(description) = &change.description {
        row.description = Set(description.clone());
    }
    if let Some(format) = change.format {
        row.format = Set(format.as_str().to_owned());
    }
    match change.enabled {
        Some(true) if !was_enabled => {
            row.enabled = Set(true);
            row.disabled_reason = Set(None);
            row.failing_since_ms = Set(None);
            webhook_delivery::Entity::update_many()
                .col_expr(webhook_delivery::Column::NextAttemptMs, now_ms.into())
                .filter(webhook_delivery::Column::SubscriptionId.eq(id))
                .filter(webhook_delivery::Column::State.eq(DeliveryState::Pending))
                .filter(webhook_delivery::Column::NextAttemptMs.gt(now_ms))
                .exec(&txn)
                .await?;
        }
        Some(false) if was_enabled => {
            row.enabled = Set(false);
            row.disabled_reason = Set(Some("disabled by its owner".to_owned()));
        }
        _ => {}
    }
    row.updated_ms = Set(now_ms);
    let row = row.update(&txn).await?;
    txn.commit().await?;
    Ok(row)
}

/// Deletes `subscription` with its filters, its deliveries and its attempts; started again when
/// PostgreSQL cancels it to break a deadlock with the sender, which locks the same deliveries in
/// its own order (`failures::retrying_deadlocks`).
pub async fn delete(db: &DatabaseConnection, subscription: &Subscription) -> Result<(), DbErr> {
    retrying_deadlocks(|| delete_once(db, subscription)).await
}

async fn delete_once(db: &DatabaseConnection, subscription: &Subscription) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    for table in ["webhook_filters", "webhook_routes"] {
        let sql = format!("DELETE FROM {table} WHERE subscription_id = $1");
        txn.execute_raw(Statement::from_sql_and_values(txn.get_database_backend(), sql, [subscription.id.into()]))
            .await?;
    }
    webhook_attempt::Entity::delete_many()
        .filter(webhook_attempt::Column::SubscriptionId.eq(subscription.id))
        .exec(&txn)
        .await?;
    webhook_delivery::Entity::delete_many()
        .filter(webhook_delivery::Column::SubscriptionId.eq(subscription.id))
        .exec(&txn)
        .await?;
    webhook_subscription::Entity::delete_by_id(subscription.id).exec(&txn).await?;
    txn.commit().await
}

/// Gives `subscription` a new secret; the current one keeps signing beside it for
/// [`ROTATION_OVERLAP`]. Returns the subscription with its new secret, shown once.
pub async fn rotate(db: &impl ConnectionTrait, subscription: Subscription, now_ms: i64) -> Result<Subscription, DbErr> {
    let previous = subscription.secret.clone();
    let mut row: webhook_subscription::ActiveModel = subscription.into();
    row.secret = Set(new_secret());
    row.previous_secret = Set(Some(previous));
    row.previous_until_ms = Set(Some(now_ms + ROTATION_OVERLAP.as_millis() as i64));
    row.updated_ms = Set(now_ms);
    row.update(db).await
}

/// The secrets that sign at `now_ms`: the current one, and the previous one during a rotation's
/// overlap.
pub fn signing_secrets(s: &Subscription, now_ms: i64) -> Vec<&str> {
    let mut secrets = vec![s.secret.as_str()];
    if let (Some(previous), Some(until)) = (&s.previous_secret, s.previous_until_ms)
        && now_ms < until
    {
        secrets.push(previous);
    }
    secrets
}

/// What makes a subscription active (receiving deliveries): enabled, and its token not revoked.
const ACTIVE: &str = "SELECT s.* FROM webhook_subscriptions s JOIN partner_tokens t ON t.id = s.token_id \
                      WHERE s.enabled = $1 AND t.revoked_ms IS NULL";

/// The active subscriptions.
pub async fn active(db: &impl ConnectionTrait) -> Result<Vec<Subscription>, DbErr> {
    let stmt =
        Statement::from_sql_and_values(db.get_database_backend(), format!("{ACTIVE} ORDER BY s.id"), [true.into()]);
    webhook_subscription::Entity::find().from_raw_sql(stmt).all(db).await
}

/// Those of `ids` that are active, as stored now (one read, by primary key): what a delivery
/// claimed in the same transaction is sent with, so that a change committed before the claim (a
/// format, a URL, a secret, a disabling) applies to it.
pub async fn active_among(db: &impl ConnectionTrait, ids: &[i64]) -> Result<Vec<Subscription>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!("{ACTIVE} AND s.id IN ({})", placeholders(2, ids.len()));
    let values = std::iter::once(Value::from(true)).chain(ids.iter().map(|&id| id.into()));
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    webhook_subscription::Entity::find().from_raw_sql(stmt).all(db).await
}

/// A subscription as its owner sees it: with its filters, and how far its entries were
/// enqueued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub subscription: Subscription,
    pub filters: Filters,
    /// The feed sequence up to which its entries were enqueued: its own cursor, or the shared
    /// fan-out's position while it follows the fan-out and that is further.
    pub enqueued_through: i64,
}

/// `subscriptions` as their owners see them (two reads, however many).
pub async fn shown(db: &impl ConnectionTrait, subscriptions: Vec<Subscription>) -> Result<Vec<Shown>, DbErr> {
    let ids: Vec<i64> = subscriptions.iter().map(|s| s.id).collect();
    let mut filters = filters(db, &ids).await?;
    let shared = fanned_through(db).await?;
    Ok(subscriptions
        .into_iter()
        .map(|s| {
            let enqueued_through = if s.follows_fanout { s.enqueued_through.max(shared) } else { s.enqueued_through };
            Shown { filters: filters.remove(&s.id).unwrap_or_default(), enqueued_through, subscription: s }
        })
        .collect())
}

/// How far the shared fan-out has enqueued the feed (`webhook_fanout`, moved by `push::queue`).
pub async fn fanned_through(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    let stmt = Statement::from_string(db.get_database_backend(), "SELECT through FROM webhook_fanout WHERE id = 1");
    match db.query_one_raw(stmt).await? {
        Some(row) => row.try_get::<i64>("", "through"),
        None => Ok(0),
    }
}

/// Which of `ids` no covered DAO has.
pub async fn unknown_daos(db: &impl ConnectionTrait, ids: &[DaoId]) -> Result<Vec<DaoId>, DbErr> {
    use super::entities::dao;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let known: Vec<String> = dao::Entity::find()
        .select_only()
        .column(dao::Column::Id)
        .filter(dao::Column::Id.is_in(ids.iter().map(DaoId::as_str)))
        .into_tuple()
        .all(db)
        .await?;
    Ok(ids.iter().filter(|id| !known.iter().any(|k| k == id.as_str())).cloned().collect())
}

/// Which of `keys` no stored proposal has.
pub async fn unknown_proposals(db: &impl ConnectionTrait, keys: &[ProposalKey]) -> Result<Vec<ProposalKey>, DbErr> {
    use super::entities::proposal;
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let known: Vec<String> = proposal::Entity::find()
        .select_only()
        .column(proposal::Column::ProposalKey)
        .filter(proposal::Column::ProposalKey.is_in(keys.iter().map(IssuedKey::as_str)))
        .into_tuple()
        .all(db)
        .await?;
    Ok(keys.iter().filter(|k| !known.iter().any(|known| known == k.as_str())).cloned().collect())
}

/// A token's subscriptions after subscription `after` (its row id), oldest first, at most `limit`.
pub async fn page(
    db: &impl ConnectionTrait,
    token_id: i64,
    after: i64,
    limit: u64,
) -> Result<Vec<Subscription>, DbErr> {
    webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::TokenId.eq(token_id))
        .filter(webhook_subscription::Column::Id.gt(after))
        .order_by_asc(webhook_subscription::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Feed kinds whose voters dimension follows the reminder rule instead of the entry's own
/// voters: such an entry (about a proposal, naming no voter) reaches a subscription that filters
/// voters only while one of its watched voters has not voted on that proposal
/// ([`watching_voters_who_have_not_voted`]); subscriptions that filter no voter get it as usual.
/// "Tell me 24 h before it closes about the proposals this delegate has not voted on."
pub const REMINDER_KINDS: &[FeedKind] = &[FeedKind::VotingEndsSoon];

/// Which subscriptions [`matches`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The subscriptions following the shared fan-out, for the entries after where each
    /// started: what the fan-out of a page enqueues.
    Following,
    /// This subscription alone, whatever its state: its own catch-up and replays.
    One(i64),
}

/// One subscription an entry's fan-out reached, and whether it wants the entry.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct Match {
    pub seq: i64,
    pub subscription_id: i64,
    pub public_id: String,
    /// 1 when it wants the entry: every dimension it filters matches, and it is in `scope`.
    wanted: i32,
}

impl Match {
    pub fn wanted(&self) -> bool {
        self.wanted == 1
    }
}

/// The subscriptions the entries in (`after`, `through`] may concern, found through the routes
/// from each entry's own values (its DAO, kind, proposal, voters, and `any`), each with whether
/// it wants the entry; in sequence order, then subscription. The rows read follow the
/// subscriptions routed to those values, not all subscriptions: a subscription is read for an
/// entry only when the entry has a value of its most selective filter (or it filters nothing).
///
/// An entry of one of `reminder_kinds` (see [`REMINDER_KINDS`]) reaches the subscriptions that
/// watch voters by the reminder rule instead. An entry of a kind this build does not know is
/// matched by its stored text like any other.
pub async fn matches(
    db: &impl ConnectionTrait,
    after: i64,
    through: i64,
    scope: Scope,
    reminder_kinds: &[&str],
) -> Result<Vec<Match>, DbErr> {
    let backend = db.get_database_backend();
    let mut values: Vec<Value> = vec![after.into(), through.into()];
    let (only, in_scope) = match scope {
        Scope::Following => (
            String::new(),
            "s.follows_fanout = TRUE AND t.revoked_ms IS NULL AND s.enqueued_through < c.seq".to_owned(),
        ),
        Scope::One(id) => {
            values.push(id.into());
            (format!(" AND r.subscription_id = ${}", values.len()), "1 = 1".to_owned())
        }
    };
    let reminder = if reminder_kinds.is_empty() {
        "1 = 0".to_owned()
    } else {
        let first = values.len() + 1;
        values.extend(reminder_kinds.iter().map(|k| Value::from(*k)));
        format!("e.kind IN ({})", placeholders(first, reminder_kinds.len()))
    };
    let (any, voter, proposal, dao, kind) = (
        ANY_ENTRY,
        Dimension::Voter.as_str(),
        Dimension::Proposal.as_str(),
        Dimension::Dao.as_str(),
        Dimension::Kind.as_str(),
    );
    let filtered = |d: &str| {
        format!("EXISTS (SELECT 1 FROM webhook_filters f WHERE f.subscription_id = s.id AND f.dimension = '{d}')")
    };
    let matched = |d: &str, value: &str| {
        format!(
            "(NOT {} OR EXISTS (SELECT 1 FROM webhook_filters f WHERE f.subscription_id = s.id \
             AND f.dimension = '{d}' AND f.value = {value}))",
            filtered(d)
        )
    };
    let not_voted_route = not_voted_sql(backend, "r.value", "e.proposal_key");
    let not_voted_filter = not_voted_sql(backend, "f.value", "e.proposal_key");
    let sql = format!(
        "WITH page AS (SELECT seq, dao_id, kind, proposal_key FROM feed_entries WHERE seq > $1 AND seq <= $2),
         reached AS (
           SELECT e.seq, r.subscription_id FROM page e
             JOIN webhook_routes r ON r.dimension = '{any}' AND r.value = ''{only}
           UNION SELECT e.seq, r.subscription_id FROM page e
             JOIN webhook_routes r ON r.dimension = '{dao}' AND r.value = e.dao_id{only}
           UNION SELECT e.seq, r.subscription_id FROM page e
             JOIN webhook_routes r ON r.dimension = '{kind}' AND r.value = e.kind{only}
           UNION SELECT e.seq, r.subscription_id FROM page e
             JOIN webhook_routes r ON r.dimension = '{proposal}' AND r.value = e.proposal_key{only}
           UNION SELECT e.seq, r.subscription_id FROM page e JOIN feed_entry_voters ev ON ev.seq = e.seq
             JOIN webhook_routes r ON r.dimension = '{voter}' AND r.value = ev.voter{only}
           UNION SELECT e.seq, r.subscription_id FROM page e
             JOIN webhook_routes r ON r.dimension = '{voter}'{only}
             WHERE {reminder} AND {not_voted_route}
         )
         SELECT c.seq, s.id AS subscription_id, s.public_id,
                CASE WHEN {in_scope} AND {dao_ok} AND {kind_ok} AND {proposal_ok}
                      AND (NOT {voter_filtered}
                           OR (NOT ({reminder}) AND EXISTS (SELECT 1 FROM webhook_filters f
                                 JOIN feed_entry_voters ev ON ev.voter = f.value
                                 WHERE f.subscription_id = s.id AND f.dimension = '{voter}' AND ev.seq = e.seq))
                           OR ({reminder} AND EXISTS (SELECT 1 FROM webhook_filters f
                                 WHERE f.subscription_id = s.id AND f.dimension = '{voter}' AND {not_voted_filter})))
                     THEN 1 ELSE 0 END AS wanted
         FROM reached c
         JOIN page e ON e.seq = c.seq
         JOIN webhook_subscriptions s ON s.id = c.subscription_id
         JOIN partner_tokens t ON t.id = s.token_id
         ORDER BY c.seq, s.id",
        dao_ok = matched(dao, "e.dao_id"),
        kind_ok = matched(kind, "e.kind"),
        proposal_ok = matched(proposal, "e.proposal_key"),
        voter_filtered = filtered(voter),
    );
    Match::find_by_statement(Statement::from_sql_and_values(backend, sql, values)).all(db).await
}

/// SQL: whether the voter whose lowercase address is `voter` has not voted on the proposal whose
/// key is `proposal_key` (false without a proposal). Through the votes' unique index
/// (`proposal_id`, `voter`): one probe per watched voter.
fn not_voted_sql(backend: DbBackend, voter: &str, proposal_key: &str) -> String {
    format!(
        "{proposal_key} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM votes v \
         WHERE v.proposal_id = (SELECT p.id FROM proposals p WHERE p.proposal_key = {proposal_key}) \
         AND v.voter = {})",
        address::bytes_sql(backend, voter)
    )
}

/// The reminder rule: the subscriptions watching voters (by a `voters` filter) of whom at least
/// one has not voted on proposal `proposal_key`, by id. [`matches`] applies the same rule to the
/// entries of [`REMINDER_KINDS`], with the subscriptions' other filters; this is the rule alone.
pub async fn watching_voters_who_have_not_voted(
    db: &impl ConnectionTrait,
    proposal_key: &str,
) -> Result<Vec<i64>, DbErr> {
    let backend = db.get_database_backend();
    let sql = format!(
        "SELECT DISTINCT r.subscription_id FROM webhook_routes r WHERE r.dimension = '{}' AND {} \
         ORDER BY r.subscription_id",
        Dimension::Voter.as_str(),
        not_voted_sql(backend, "r.value", "$1")
    );
    let stmt = Statement::from_sql_and_values(backend, sql, [proposal_key.into()]);
    db.query_all_raw(stmt).await?.iter().map(|r| r.try_get::<i64>("", "subscription_id")).collect()
}

#[cfg(test)]
mod tests {
    use super::{Dimension, FeedKind, Filters, routes};

    fn rows(list: &[(Dimension, &str)]) -> Vec<(Dimension, String)> {
        list.iter().map(|(d, v)| (*d, (*v).to_owned())).collect()
    }

    #[test]
    fn a_stored_filter_this_build_cannot_read_is_kept_and_shown() {
        assert_eq!(Filters::read(Vec::new()).describe(), "all");
        let mixed = Filters::read(rows(&[
            (Dimension::Dao, "uniswap"),
            (Dimension::Kind, "proposal_created"),
            (Dimension::Kind, "kind_of_a_later_build"),
        ]));
        assert_eq!(mixed.kinds, [FeedKind::ProposalCreated]);
        assert_eq!(mixed.describe(), "daos=uniswap kinds=proposal_created,kind_of_a_later_build");
        // Written back, it keeps the text it could not read.
        assert_eq!(mixed.values(Dimension::Kind), ["proposal_created", "kind_of_a_later_build"]);
        let voter = "0x683a4f9915d6216f73d6df50151725036bd26c02";
        let read = Filters::read(rows(&[(Dimension::Voter, voter), (Dimension::Voter, "0xNOPE")]));
        assert_eq!(read.voters, [voter]);
        assert_eq!(read.describe(), format!("voters={voter},0xNOPE"));
        assert_eq!(
            Filters::read(rows(&[(Dimension::Kind, "proposal_created")])),
            Filters::new(Vec::new(), vec![FeedKind::ProposalCreated])
        );
    }

    #[test]
    fn a_subscription_is_routed_by_its_most_selective_filter() {
        let all = rows(&[
            (Dimension::Kind, "vote_cast"),
            (Dimension::Dao, "uniswap"),
            (Dimension::Voter, "0xa"),
            (Dimension::Voter, "0xb"),
            (Dimension::Proposal, "p_x"),
        ]);
        let to = |r: Vec<(&'static str, String)>| r.into_iter().map(|(d, v)| format!("{d}:{v}")).collect::<Vec<_>>();
        assert_eq!(to(routes(&all)), ["voter:0xa", "voter:0xb"]);
        assert_eq!(to(routes(&all[..2])), ["dao:uniswap"]);
        assert_eq!(to(routes(&all[..1])), ["kind:vote_cast"]);
        assert_eq!(to(routes(&rows(&[(Dimension::Proposal, "p_x"), (Dimension::Dao, "a")]))), ["proposal:p_x"]);
        assert_eq!(to(routes(&[])), ["any:"]);
    }
}
