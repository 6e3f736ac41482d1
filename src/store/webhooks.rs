//! Webhook subscriptions: the rows a partner token (`/v2/webhooks`) or an operator (`govdata
//! webhooks`) creates, lists, changes and deletes, with their signing secrets.
//!
//! The deliveries owed to them and their attempts are push's queue (`push::queue`); this module
//! touches those tables only where a subscription's own change reaches them (a deletion takes
//! its deliveries and attempts, enabling it again makes its pending deliveries due).
use base64::Engine;
use rand::RngCore;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Statement, TransactionTrait,
};

use super::entities::webhook_delivery::DeliveryState;
use super::entities::{webhook_attempt, webhook_delivery, webhook_subscription};
use crate::contract::feed::FeedKind;
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

/// A change to a subscription: each member set is changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    pub url: Option<String>,
    pub daos: Option<Vec<DaoId>>,
    pub kinds: Option<Vec<FeedKind>>,
    /// `Some(None)` removes the description.
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub format: Option<WebhookFormat>,
}

/// What a subscription wants of the feed: the entries of these DAOs and of these kinds (an
/// empty list: every one). Each list is stored comma-joined in its text column (`dao_ids`,
/// `kinds`) and converted here only, where it is read ([`Filters::of`]) and written: no caller
/// splits or joins the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub daos: Vec<DaoId>,
    pub kinds: Vec<FeedKind>,
    /// Stored values this build cannot read (a kind written by a newer build), kept as the text
    /// they are: they still make a list non-empty and still match an entry that names them, as
    /// they did when the lists were matched as text, and the operator's listing shows them.
    unread_daos: Vec<String>,
    unread_kinds: Vec<String>,
}

impl Filters {
    pub fn new(daos: Vec<DaoId>, kinds: Vec<FeedKind>) -> Self {
        Self { daos, kinds, ..Self::default() }
    }

    /// The filters `s` stores.
    pub fn of(s: &Subscription) -> Self {
        Self::read(&s.dao_ids, &s.kinds)
    }

    fn read(dao_ids: &str, kinds: &str) -> Self {
        let mut filters = Self::default();
        for d in split(dao_ids) {
            match DaoId::parse(d) {
                Some(dao) => filters.daos.push(dao),
                None => filters.unread_daos.push(d.to_owned()),
            }
        }
        for k in split(kinds) {
            match FeedKind::parse(k) {
                Ok(kind) => filters.kinds.push(kind),
                Err(_) => filters.unread_kinds.push(k.to_owned()),
            }
        }
        filters
    }

    /// Whether an entry of DAO `dao_id` and kind `kind` (the feed row's text, which may name a
    /// kind this build does not know) is wanted.
    pub fn wants(&self, dao_id: &str, kind: &str) -> bool {
        let dao = (self.daos.is_empty() && self.unread_daos.is_empty())
            || self.daos.iter().any(|d| d.as_str() == dao_id)
            || self.unread_daos.iter().any(|d| d == dao_id);
        let kind_wanted = (self.kinds.is_empty() && self.unread_kinds.is_empty())
            || self.kinds.iter().any(|k| k.as_str() == kind)
            || self.unread_kinds.iter().any(|k| k == kind);
        dao && kind_wanted
    }

    /// `daos=… kinds=…` as stored, `all` for an empty list (the operator's listing).
    pub fn describe(&self) -> String {
        let daos = self.daos.iter().map(DaoId::as_str).chain(self.unread_daos.iter().map(String::as_str));
        let kinds = self.kinds.iter().map(|k| k.as_str()).chain(self.unread_kinds.iter().map(String::as_str));
        let or_all = |list: Vec<&str>| if list.is_empty() { "all".to_owned() } else { list.join(",") };
        format!("daos={} kinds={}", or_all(daos.collect()), or_all(kinds.collect()))
    }
}

/// The format `s` is written in. Text this build does not know (a format a newer build stored)
/// is an error its caller decides about: the sender leaves such a subscription to the builds
/// that know it, and the API answers it as every unknown stored value.
pub fn format_of(s: &Subscription) -> Result<WebhookFormat, UnknownValue> {
    WebhookFormat::parse(&s.format)
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').filter(|s| !s.is_empty())
}

fn daos_text(daos: &[DaoId]) -> String {
    daos.iter().map(DaoId::as_str).collect::<Vec<_>>().join(",")
}

fn kinds_text(kinds: &[FeedKind]) -> String {
    kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(",")
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
pub async fn create(
    db: &DatabaseConnection,
    token_id: i64,
    target: &Target,
    now_ms: i64,
) -> Result<Subscription, CreateError> {
    let held = webhook_subscription::Entity::find()
        .filter(webhook_subscription::Column::TokenId.eq(token_id))
        .count(db)
        .await?;
    if held >= MAX_SUBSCRIPTIONS_PER_TOKEN {
        return Err(CreateError::TooMany);
    }
    let newest = super::feed::newest(db).await?;
    let row = webhook_subscription::ActiveModel {
        public_id: Set(new_public_id()),
        token_id: Set(token_id),
        url: Set(target.url.clone()),
        dao_ids: Set(daos_text(&target.filters.daos)),
        kinds: Set(kinds_text(&target.filters.kinds)),
        description: Set(target.description.clone()),
        secret: Set(new_secret()),
        previous_secret: Set(None),
        previous_until_ms: Set(None),
        enabled: Set(true),
        disabled_reason: Set(None),
        failing_since_ms: Set(None),
        enqueued_through: Set(newest),
        replay_from: Set(None),
        replay_through: Set(None),
        created_ms: Set(now_ms),
        updated_ms: Set(now_ms),
        format: Set(target.format.unwrap_or(WebhookFormat::DEFAULT).as_str().to_owned()),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(row)
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
/// failed; its deliveries still pending are attempted again at once.
pub async fn update(
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
    if let Some(daos) = &change.daos {
        row.dao_ids = Set(daos_text(daos));
    }
    if let Some(kinds) = &change.kinds {
        row.kinds = Set(kinds_text(kinds));
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

/// Deletes `subscription` with its deliveries and attempts.
pub async fn delete(db: &DatabaseConnection, subscription: &Subscription) -> Result<(), DbErr> {
    let txn = db.begin().await?;
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

/// A subscription that receives deliveries: enabled, and its token not revoked.
pub async fn active(db: &impl ConnectionTrait) -> Result<Vec<Subscription>, DbErr> {
    let sql = "SELECT s.* FROM webhook_subscriptions s JOIN partner_tokens t ON t.id = s.token_id \
               WHERE s.enabled = $1 AND t.revoked_ms IS NULL ORDER BY s.id";
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, [true.into()]);
    webhook_subscription::Entity::find().from_raw_sql(stmt).all(db).await
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

#[cfg(test)]
mod tests {
    use super::{FeedKind, Filters};

    #[test]
    fn a_stored_filter_this_build_cannot_read_matches_as_its_text_did() {
        let all = Filters::read("", "");
        assert!(all.wants("uniswap", "proposal_created"));
        assert!(all.wants("uniswap", "kind_of_a_later_build"));
        let mixed = Filters::read("uniswap", "proposal_created,kind_of_a_later_build");
        assert_eq!(mixed.kinds, [FeedKind::ProposalCreated]);
        assert!(mixed.wants("uniswap", "proposal_created"));
        assert!(mixed.wants("uniswap", "kind_of_a_later_build"));
        assert!(!mixed.wants("uniswap", "vote_cast"));
        assert!(!mixed.wants("arbitrum", "proposal_created"));
        assert_eq!(mixed.describe(), "daos=uniswap kinds=proposal_created,kind_of_a_later_build");
        let unread = Filters::read("", "kind_of_a_later_build");
        assert!(unread.kinds.is_empty());
        assert!(!unread.wants("uniswap", "proposal_created"));
        assert_eq!(unread.describe(), "daos=all kinds=kind_of_a_later_build");
        assert_eq!(Filters::read("", "proposal_created"), Filters::new(Vec::new(), vec![FeedKind::ProposalCreated]));
    }
}
