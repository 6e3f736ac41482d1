//! The feed of changes (an outbox): what each publication changed, appended in the publication's
//! own transaction, so an entry exists exactly when its change was published.
//!
//! A publication collects what it wrote ([`Changes`]): the governance events its derivation
//! inserted or corrected (`store::events::derive` returns their ids) and the signals it raised,
//! changed or cleared (`store::signals::compute`). [`append`] writes one entry for each, in one
//! order (events by time then id, then signals by key), with the event or signal as published
//! (a later correction or clearing is an entry of its own and never rewrites an earlier one).
//! A run that changes nothing publishes nothing and feeds nothing. Its cost follows the change:
//! the events are read back by id, a chunk at a time.
//!
//! Entries older than [`FEED_RETENTION`] are pruned, oldest first, at most [`FEED_PRUNE_BATCH`] per
//! publication; how far pruning went is kept (`feed_pruned_through`), so a reader resuming from
//! a pruned position is told so rather than given a gap.
use std::collections::BTreeSet;

use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect,
    Statement, Value,
};
use serde::{Deserialize, Serialize};

use super::entities::{data_revision, delegation_change, feed_entry, setting, signal};
use super::events::EventRow;
use super::signals::SignalRecord;
use super::staging::DelegationChangeRecord;
use super::{keys, placeholders};
use crate::contract::feed::{FEED_PRUNE_BATCH, FEED_RETENTION, FeedKind};
use crate::contract::vocabulary::DaoId;

/// Ids per `IN (...)` list and rows per insert.
const CHUNK: usize = 500;

/// The `settings` key holding the highest sequence pruned.
const PRUNED_THROUGH: &str = "feed_pruned_through";

/// What a publication changed, as it collects it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The highest event id before the publication derived events: ids above it are new, the
    /// others were corrected.
    pub events_before: i64,
    /// Events the publication inserted or corrected.
    pub events: BTreeSet<i64>,
    /// Signals raised, changed or cleared, each as it stands after the change (cleared: as it
    /// last stood), in the order they are fed.
    pub signals: Vec<(FeedKind, signal::Model)>,
    /// Notable delegation changes the publication appended, in chain order.
    pub delegations: Vec<delegation_change::Model>,
    /// The proposals' moments the publication fed (`store::moments`), in order.
    pub moments: Vec<super::moments::Due>,
}

/// What an entry reports, as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FeedBody {
    /// A governance event; `correction` when it had been fed before and its facts changed.
    Event { event: EventRow, correction: bool },
    /// A signal raised, changed or cleared.
    Signal { record: SignalRecord },
    /// A notable delegation change (`contract::events::NOTABLE_DELEGATION_MIN_SHARE`).
    Delegation { change: DelegationChangeRecord },
    /// A proposal's moment (`store::moments`): a deadline near or passed, its quorum reached, its
    /// ETA passed.
    Moment { moment: super::moments::MomentRecord },
}

/// An entry as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedRecord {
    pub seq: i64,
    pub revision_id: i64,
    pub published_ms: i64,
    pub dao_id: String,
    pub kind: FeedKind,
    pub body: FeedBody,
}

impl FeedRecord {
    pub fn keyset(&self) -> super::keysets::FeedAfter {
        super::keysets::FeedAfter(self.seq)
    }
}

impl FeedRecord {
    fn read(row: feed_entry::Model) -> Result<Self, DbErr> {
        // The same policy as every stored value (`store::stored`): a body this build cannot read
        // fails the read, loudly, rather than skipping an entry of a feed that promises none is
        // missing.
        let body = serde_json::from_str(&row.body)
            .map_err(|e| DbErr::Type(format!("feed entry {} holds an unreadable body: {e}", row.seq)))?;
        Ok(Self {
            seq: row.seq,
            revision_id: row.revision_id,
            published_ms: row.published_ms,
            dao_id: row.dao_id,
            kind: row.kind,
            body,
        })
    }
}

/// Appends the entries of `changes`, published by `revision`. Returns how many were written.
pub async fn append<C: ConnectionTrait>(
    db: &C,
    revision: &data_revision::Model,
    changes: &Changes,
) -> Result<u64, DbErr> {
    let mut written = 0;
    for chunk in event_order(db, &changes.events).await?.chunks(CHUNK) {
        let mut rows = event_rows(db, chunk).await?;
        // The rows come back in any order: put them in the feed's.
        rows.sort_by_key(|r| (r.occurred_ms, r.id));
        let entries = rows.into_iter().map(|event| {
            let correction = event.id <= changes.events_before;
            let kind = FeedKind::of_event(event.kind);
            let item = keys::event_id(&event.natural_key);
            (event.dao_id.clone(), kind, item, FeedBody::Event { event, correction })
        });
        written += insert(db, revision, entries.collect()).await?;
    }
    let entries: Vec<_> = changes
        .moments
        .iter()
        .map(|d| {
            let body = FeedBody::Moment { moment: d.moment.clone() };
            (d.moment.dao_id.clone(), d.kind, d.moment.proposal_key.clone(), body)
        })
        .collect();
    for chunk in entries.chunks(CHUNK) {
        written += insert(db, revision, chunk.to_vec()).await?;
    }
    let records = super::signals::with_subjects(db, changes.signals.iter().map(|(_, s)| s.clone()).collect()).await?;
    let entries: Vec<_> = changes
        .signals
        .iter()
        .zip(records)
        .map(|((kind, s), record)| {
            (s.dao_id.clone(), *kind, keys::signal_id(&s.natural_key), FeedBody::Signal { record })
        })
        .collect();
    for chunk in entries.chunks(CHUNK) {
        written += insert(db, revision, chunk.to_vec()).await?;
    }
    let entries: Vec<_> = changes
        .delegations
        .iter()
        .map(|c| {
            let item = keys::delegation_id(&c.dao_id, c.block_number, c.log_index);
            let body = FeedBody::Delegation { change: DelegationChangeRecord::from(c.clone()) };
            (c.dao_id.clone(), FeedKind::DelegationChanged, item, body)
        })
        .collect();
    for chunk in entries.chunks(CHUNK) {
        written += insert(db, revision, chunk.to_vec()).await?;
    }
    Ok(written)
}

/// The changed events' ids in the feed's order (time, then id), read a chunk at a time: ids
/// and times only, whatever the change's size.
async fn event_order<C: ConnectionTrait>(db: &C, ids: &BTreeSet<i64>) -> Result<Vec<i64>, DbErr> {
    #[derive(FromQueryResult)]
    struct At {
        id: i64,
        occurred_ms: i64,
    }
    let ids: Vec<i64> = ids.iter().copied().collect();
    let mut order = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CHUNK) {
        let sql =
            format!("SELECT id, occurred_ms FROM governance_events WHERE id IN ({})", placeholders(1, chunk.len()));
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, chunk.iter().map(|&id| id.into()));
        order.extend(At::find_by_statement(stmt).all(db).await?.into_iter().map(|a| (a.occurred_ms, a.id)));
    }
    order.sort_unstable();
    Ok(order.into_iter().map(|(_, id)| id).collect())
}

/// The events of `ids` with their subjects, as the event lists read them.
async fn event_rows<C: ConnectionTrait>(db: &C, ids: &[i64]) -> Result<Vec<EventRow>, DbErr> {
    let sql = super::events::rows_sql(&format!("WHERE e.id IN ({})", placeholders(1, ids.len())));
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, ids.iter().map(|&id| id.into()));
    EventRow::find_by_statement(stmt).all(db).await
}

async fn insert<C: ConnectionTrait>(
    db: &C,
    revision: &data_revision::Model,
    entries: Vec<(String, FeedKind, String, FeedBody)>,
) -> Result<u64, DbErr> {
    if entries.is_empty() {
        return Ok(0);
    }
    let n = entries.len() as u64;
    let rows = entries
        .into_iter()
        .map(|(dao_id, kind, item_id, body)| {
            let body = serde_json::to_string(&body).map_err(|e| DbErr::Custom(format!("a feed body: {e}")))?;
            Ok(feed_entry::ActiveModel {
                revision_id: Set(revision.id),
                published_ms: Set(revision.published_ms),
                dao_id: Set(dao_id),
                kind: Set(kind),
                item_id: Set(item_id),
                body: Set(body),
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    feed_entry::Entity::insert_many(rows).exec_without_returning(db).await?;
    Ok(n)
}

/// Prunes up to [`FEED_PRUNE_BATCH`] of the oldest entries published before the retention
/// reaching back from `now_ms`, and records how far pruning went. Returns the entries removed.
pub async fn prune<C: ConnectionTrait>(db: &C, now_ms: i64) -> Result<u64, DbErr> {
    let cutoff = now_ms - FEED_RETENTION.max_ms();
    // Entries commit in sequence order with their publication's time, so the oldest by time are
    // the oldest by sequence: the batch is a prefix of the feed.
    let last = feed_entry::Entity::find()
        .select_only()
        .column(feed_entry::Column::Seq)
        .filter(sea_orm::ColumnTrait::lt(&feed_entry::Column::PublishedMs, cutoff))
        .order_by_asc(feed_entry::Column::Seq)
        .offset(FEED_PRUNE_BATCH - 1)
        .limit(1)
        .into_tuple::<i64>()
        .one(db)
        .await?;
    let through = match last {
        Some(seq) => seq,
        None => {
            // Fewer than a batch: the newest old entry bounds it.
            match max_seq(db, "SELECT MAX(seq) AS seq FROM feed_entries WHERE published_ms < $1", vec![cutoff.into()])
                .await?
            {
                Some(seq) => seq,
                None => return Ok(0),
            }
        }
    };
    let removed = feed_entry::Entity::delete_many()
        .filter(sea_orm::ColumnTrait::lte(&feed_entry::Column::Seq, through))
        .exec(db)
        .await?
        .rows_affected;
    let row = setting::ActiveModel { key: Set(PRUNED_THROUGH.to_owned()), value: Set(through.to_string()) };
    setting::Entity::insert(row)
        .on_conflict(
            sea_orm::sea_query::OnConflict::column(setting::Column::Key)
                .update_column(setting::Column::Value)
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(removed)
}

/// Whether resuming after `position` would skip pruned entries: the highest sequence pruned when
/// `position` is below it, `None` otherwise. `0` is the start (the oldest entry kept), which
/// pruning never passes: the pruning mark is read only for a later position.
pub async fn pruned_past(db: &impl ConnectionTrait, position: i64) -> Result<Option<i64>, DbErr> {
    if position <= 0 {
        return Ok(None);
    }
    let Some(row) = setting::Entity::find_by_id(PRUNED_THROUGH.to_owned()).one(db).await? else {
        return Ok(None);
    };
    let pruned: i64 =
        row.value.parse().map_err(|e| DbErr::Type(format!("`{PRUNED_THROUGH}` is not a sequence: {e}")))?;
    Ok((position < pruned).then_some(pruned))
}

/// The newest entry's sequence (0 on an empty feed): a reader starting from now reads after it.
pub async fn newest(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    Ok(max_seq(db, "SELECT MAX(seq) AS seq FROM feed_entries", vec![]).await?.unwrap_or(0))
}

/// The highest event id (0 without events): the events a publication derives above it are new.
pub async fn newest_event(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    Ok(max_seq(db, "SELECT MAX(id) AS seq FROM governance_events", vec![]).await?.unwrap_or(0))
}

async fn max_seq(db: &impl ConnectionTrait, sql: &str, values: Vec<Value>) -> Result<Option<i64>, DbErr> {
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    match db.query_one_raw(stmt).await? {
        Some(row) => row.try_get::<Option<i64>>("", "seq"),
        None => Ok(None),
    }
}

/// Which entries a reader wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedFilter {
    /// Only this DAO's entries.
    pub dao_id: Option<DaoId>,
    /// Only entries of these kinds (none: every kind).
    pub kinds: Vec<FeedKind>,
}

/// Up to `limit` entries after sequence `after`, in sequence order.
///
/// With kinds, each kind is read from its own index from the position (`ix_feed_kind_seq`, or
/// `ix_feed_dao_kind_seq` with a DAO) and the reads merged: a page costs at most `limit` rows
/// per kind, however rare the kinds asked for.
pub async fn after(
    db: &impl ConnectionTrait,
    filter: &FeedFilter,
    after: i64,
    limit: u64,
) -> Result<Vec<FeedRecord>, DbErr> {
    let backend = db.get_database_backend();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let dao = |values: &mut Vec<Value>| match &filter.dao_id {
        Some(d) => {
            values.push(d.into());
            format!(" AND dao_id = ${}", values.len())
        }
        None => String::new(),
    };
    let mut values: Vec<Value> = vec![after.into(), limit.into()];
    let columns = "seq, revision_id, published_ms, dao_id, kind, item_id, body";
    let sql = if filter.kinds.is_empty() {
        let dao = dao(&mut values);
        format!("SELECT {columns} FROM feed_entries WHERE seq > $1{dao} ORDER BY seq LIMIT $2")
    } else {
        let dao = dao(&mut values);
        let kinds: BTreeSet<FeedKind> = filter.kinds.iter().copied().collect();
        let parts: Vec<String> = kinds
            .iter()
            .map(|k| {
                values.push(k.as_str().into());
                format!(
                    "SELECT * FROM (SELECT {columns} FROM feed_entries WHERE seq > $1{dao} AND kind = ${} ORDER BY seq LIMIT $2) k{}",
                    values.len(),
                    values.len()
                )
            })
            .collect();
        format!("SELECT {columns} FROM ({}) merged ORDER BY seq LIMIT $2", parts.join(" UNION ALL "))
    };
    let stmt = Statement::from_sql_and_values(backend, sql, values);
    let rows = feed_entry::Entity::find().from_raw_sql(stmt).all(db).await?;
    rows.into_iter().map(FeedRecord::read).collect()
}

/// The entries of `seqs` still kept, in sequence order (what webhook deliveries name).
pub async fn by_seq(db: &impl ConnectionTrait, seqs: &[i64]) -> Result<Vec<FeedRecord>, DbErr> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(CHUNK) {
        let sql = format!(
            "SELECT seq, revision_id, published_ms, dao_id, kind, item_id, body FROM feed_entries WHERE seq IN ({}) \
             ORDER BY seq",
            placeholders(1, chunk.len())
        );
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, chunk.iter().map(|&s| s.into()));
        for row in feed_entry::Entity::find().from_raw_sql(stmt).all(db).await? {
            out.push(FeedRecord::read(row)?);
        }
    }
    Ok(out)
}
