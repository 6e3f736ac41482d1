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
//! Each entry also records what it is about beyond its DAO and kind ([`Subjects`]): the proposal
//! (`feed_entries.proposal_key`) and the voters or delegates (`feed_entry_voters`), what the
//! `proposalKeys` and `voters` filters of webhooks and streams match through their indexes.
//!
//! Entries older than [`FEED_RETENTION`] are pruned, oldest first, at most [`FEED_PRUNE_BATCH`] per
//! publication; how far pruning went is kept (`feed_pruned_through`), so a reader resuming from
//! a pruned position is told so rather than given a gap.
use std::collections::BTreeSet;

use sea_orm::{
    ActiveValue::Set, ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder,
    QuerySelect, Statement, Value,
};
use serde::{Deserialize, Serialize};

use super::address;
use super::entities::{data_revision, delegation_change, feed_entry, setting, signal};
use super::events::EventRow;
use super::signals::SignalRecord;
use super::staging::DelegationChangeRecord;
use super::{keys, placeholders};
use crate::contract::events::EventKind;
use crate::contract::feed::{FEED_PRUNE_BATCH, FEED_RETENTION, FeedKind};
use crate::contract::vocabulary::{DaoId, ItemKind};

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

/// What an entry is about beyond its DAO and kind: what the `proposalKeys` and `voters` filters
/// of webhooks and streams match. Written with the entry ([`append`]) and never recomputed, so
/// every reader matches what the fan-out matched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subjects {
    /// The proposal whose event or signal the entry reports.
    pub proposal_key: Option<String>,
    /// The voters and delegates the entry is about, lowercase `0x` addresses, each once: the
    /// voter of a notable vote; the delegator, the previous and the new delegate of a delegation
    /// change (the zero address, "no delegate", is nobody).
    pub voters: Vec<String>,
}

impl FeedBody {
    /// What this entry is about.
    pub fn subjects(&self) -> Subjects {
        match self {
            Self::Event { event, .. } => Subjects {
                proposal_key: (event.subject_kind == ItemKind::Proposal).then(|| event.subject_key.clone()).flatten(),
                voters: match event.kind {
                    EventKind::VoteCast => accounts(event.actor.as_deref()),
                    _ => Vec::new(),
                },
            },
            Self::Signal { record } => Subjects {
                proposal_key: (record.signal.subject_kind == ItemKind::Proposal)
                    .then(|| record.subject.as_ref().map(|s| s.key.clone()))
                    .flatten(),
                voters: Vec::new(),
            },
            Self::Delegation { change } => Subjects {
                proposal_key: None,
                voters: accounts([&change.delegator, &change.from_delegate, &change.to_delegate].map(String::as_str)),
            },
            // About its proposal; which voters a reminder concerns is decided per subscription, at
            // fan-out (`store::webhooks::REMINDER_KINDS`).
            Self::Moment { moment } => Subjects { proposal_key: Some(moment.proposal_key.clone()), voters: Vec::new() },
        }
    }
}

/// The addresses of `texts` that name an account, lowercase, each once, in order.
fn accounts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for lower in texts.into_iter().filter_map(|t| address::normalize(t).ok()) {
        let nobody = lower[2..].bytes().all(|b| b == b'0');
        if !nobody && !out.contains(&lower) {
            out.push(lower);
        }
    }
    out
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
    /// What the entry is about, as it was written.
    pub subjects: Subjects,
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
            subjects: Subjects { proposal_key: row.proposal_key, voters: Vec::new() },
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
    let mut subjects = Vec::with_capacity(entries.len());
    let rows = entries
        .into_iter()
        .map(|(dao_id, kind, item_id, body)| {
            let about = body.subjects();
            let body = serde_json::to_string(&body).map_err(|e| DbErr::Custom(format!("a feed body: {e}")))?;
            let row = feed_entry::ActiveModel {
                revision_id: Set(revision.id),
                published_ms: Set(revision.published_ms),
                dao_id: Set(dao_id),
                kind: Set(kind),
                item_id: Set(item_id),
                proposal_key: Set(about.proposal_key.clone()),
                body: Set(body),
                ..Default::default()
            };
            subjects.push(about);
            Ok(row)
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    let before = newest(db).await?;
    feed_entry::Entity::insert_many(rows).exec_without_returning(db).await?;
    if subjects.iter().any(|s| !s.voters.is_empty()) {
        // The rows took the sequences after `before`, in the order they were listed: the
        // publication holds the writers' turn (`store::publish`), so no other entry came between.
        let seqs: Vec<i64> = feed_entry::Entity::find()
            .select_only()
            .column(feed_entry::Column::Seq)
            .filter(sea_orm::ColumnTrait::gt(&feed_entry::Column::Seq, before))
            .order_by_asc(feed_entry::Column::Seq)
            .into_tuple()
            .all(db)
            .await?;
        if seqs.len() != subjects.len() {
            return Err(DbErr::Custom(format!(
                "the feed took {} entries but {} sequences followed {before}: another writer appended meanwhile",
                subjects.len(),
                seqs.len()
            )));
        }
        let voters: Vec<(i64, &str)> =
            seqs.iter().zip(&subjects).flat_map(|(&seq, s)| s.voters.iter().map(move |v| (seq, v.as_str()))).collect();
        write_voters(db, &voters).await?;
    }
    Ok(n)
}

/// Records that entry `seq` is about each voter paired with it (rows already there are kept).
pub async fn write_voters(db: &impl ConnectionTrait, voters: &[(i64, &str)]) -> Result<(), DbErr> {
    for chunk in voters.chunks(CHUNK) {
        let rows: Vec<String> = (0..chunk.len()).map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2)).collect();
        let sql = format!(
            "INSERT INTO feed_entry_voters (seq, voter) VALUES {} ON CONFLICT (seq, voter) DO NOTHING",
            rows.join(", ")
        );
        let values: Vec<Value> = chunk.iter().flat_map(|&(seq, voter)| [seq.into(), voter.into()]).collect();
        db.execute_raw(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).await?;
    }
    Ok(())
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
    let voters = "DELETE FROM feed_entry_voters WHERE seq <= $1";
    db.execute_raw(Statement::from_sql_and_values(db.get_database_backend(), voters, [through.into()])).await?;
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

/// Which entries a reader wants: an entry matches when it matches every filter given (none: every
/// entry), and a filter when it names any of the entry's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedFilter {
    /// Only this DAO's entries.
    pub dao_id: Option<DaoId>,
    /// Only entries of these kinds (none: every kind).
    pub kinds: Vec<FeedKind>,
    /// Only entries about these proposals, by key (none: every entry).
    pub proposal_keys: Vec<String>,
    /// Only entries about these voters or delegates, lowercase addresses (none: every entry).
    pub voters: Vec<String>,
}

impl FeedFilter {
    /// Whether an entry of DAO `dao_id` and kind `kind`, about `subjects`, is wanted: what
    /// [`after`] reads from the store, for entries already read.
    pub fn matches(&self, dao_id: &str, kind: FeedKind, subjects: &Subjects) -> bool {
        self.dao_id.as_ref().is_none_or(|d| d.as_str() == dao_id)
            && (self.kinds.is_empty() || self.kinds.contains(&kind))
            && (self.proposal_keys.is_empty()
                || subjects.proposal_key.as_ref().is_some_and(|k| self.proposal_keys.contains(k)))
            && (self.voters.is_empty() || subjects.voters.iter().any(|v| self.voters.contains(v)))
    }
}

/// The columns of an entry, read as `feed_entry::Model`.
const COLUMNS: &str = "e.seq, e.revision_id, e.published_ms, e.dao_id, e.kind, e.item_id, e.proposal_key, e.body";

/// Up to `limit` entries after sequence `after`, in sequence order.
///
/// The most selective filter drives the read: each of its values is read from its own index
/// from the position (voters from `ix_feed_voters_voter_seq`, then proposals from
/// `ix_feed_proposal_seq`, then kinds from `ix_feed_kind_seq`, or `ix_feed_dao_kind_seq` with a
/// DAO, then a DAO from `ix_feed_dao_seq`), the other filters applied on the way, and the reads
/// merged: a page costs at most `limit` matching rows per value, however rare the values asked
/// for.
pub async fn after(
    db: &impl ConnectionTrait,
    filter: &FeedFilter,
    after: i64,
    limit: u64,
) -> Result<Vec<FeedRecord>, DbErr> {
    let stmt = after_statement(db.get_database_backend(), filter, after, limit);
    let rows = feed_entry::Entity::find().from_raw_sql(stmt).all(db).await?;
    let records = rows.into_iter().map(FeedRecord::read).collect::<Result<Vec<_>, _>>()?;
    with_voters(db, records).await
}

/// [`after`]'s statement, written as `store::plans` keeps a list's plan.
///
/// Each read is ordered by its driving column, then the sequence, and on PostgreSQL the driving
/// value is matched as a one-element array (`= ANY(ARRAY[$n])`). An equality would fix the
/// column, and PostgreSQL drops a fixed column from the order: the feed's primary key then gives
/// the order too, filtered by the value, and with the values hidden (`plans::list`) the generic
/// plan of a DAO's feed took that walk on the sample, a walk of the whole feed for a rare DAO.
/// Matched as an array, the column stays in the order, which only the value's index gives
/// without reading all its entries. SQLite reads `= $n` in sequence order from the same index:
/// ordered by the column too, it would sort each read again before merging them.
pub fn after_statement(backend: DbBackend, filter: &FeedFilter, after: i64, limit: u64) -> Statement {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut values: Vec<Value> = vec![after.into(), limit.into()];
    let bind = |values: &mut Vec<Value>, v: &str| {
        values.push(v.into());
        format!("${}", values.len())
    };
    let kinds: BTreeSet<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
    let keys: BTreeSet<&str> = filter.proposal_keys.iter().map(String::as_str).collect();
    let voters: BTreeSet<&str> = filter.voters.iter().map(String::as_str).collect();
    let dao: BTreeSet<&str> = filter.dao_id.iter().map(|d| d.as_str()).collect();
    // The filters that do not drive the read, as conditions of every read.
    let mut conditions = String::new();
    let mut condition = |values: &mut Vec<Value>, column: &str, list: &BTreeSet<&str>| {
        if !list.is_empty() {
            let list: Vec<String> = list.iter().map(|v| bind(values, v)).collect();
            conditions += &format!(" AND {column} IN ({})", list.join(", "));
        }
    };
    // The driving column, and each read's value of it (with the kind it fixes, for a DAO's kinds).
    let (column, reads, merge): (&str, Vec<(&str, Option<&str>)>, &str) = if !voters.is_empty() {
        condition(&mut values, "e.dao_id", &dao);
        condition(&mut values, "e.kind", &kinds);
        condition(&mut values, "e.proposal_key", &keys);
        // One entry may be about two watched voters: merged without repeats.
        ("v.voter", voters.iter().map(|v| (*v, None)).collect(), " UNION ")
    } else if !keys.is_empty() {
        condition(&mut values, "e.dao_id", &dao);
        condition(&mut values, "e.kind", &kinds);
        ("e.proposal_key", keys.iter().map(|k| (*k, None)).collect(), " UNION ALL ")
    } else if let Some(d) = dao.first().filter(|_| !kinds.is_empty()) {
        // A DAO's kinds from `ix_feed_dao_kind_seq`: the DAO drives, each read fixes its kind.
        ("e.dao_id", kinds.iter().map(|k| (*d, Some(*k))).collect(), " UNION ALL ")
    } else if !kinds.is_empty() {
        ("e.kind", kinds.iter().map(|k| (*k, None)).collect(), " UNION ALL ")
    } else {
        ("e.dao_id", dao.iter().map(|d| (*d, None)).collect(), " UNION ALL ")
    };
    // A voter's reads seek its index by the index's own sequence: PostgreSQL carries an equality
    // across a join, not a bound.
    let (from, seq) = if column == "v.voter" {
        ("feed_entry_voters v JOIN feed_entries e ON e.seq = v.seq", "v.seq")
    } else {
        ("feed_entries e", "e.seq")
    };
    let sql = if reads.is_empty() {
        format!("SELECT {COLUMNS} FROM feed_entries e WHERE e.seq > $1 ORDER BY e.seq LIMIT $2")
    } else {
        let reads: Vec<String> = reads
            .iter()
            .map(|(value, kind)| {
                let at = bind(&mut values, value);
                let (matches, order) = match backend {
                    DbBackend::Postgres => (format!("{column} = ANY(ARRAY[{at}])"), format!("{column}, {seq}")),
                    _ => (format!("{column} = {at}"), seq.to_owned()),
                };
                let kind = kind.map(|k| format!(" AND e.kind = {}", bind(&mut values, k))).unwrap_or_default();
                format!(
                    "SELECT {COLUMNS} FROM {from} WHERE {matches}{kind} AND {seq} > $1{conditions} \
                     ORDER BY {order} LIMIT $2"
                )
            })
            .collect();
        match &reads[..] {
            // One value: its read is the page, already in sequence order.
            [read] => read.clone(),
            _ => {
                let reads: Vec<String> =
                    reads.iter().enumerate().map(|(i, read)| format!("SELECT * FROM ({read}) k{i}")).collect();
                format!("SELECT * FROM ({}) merged ORDER BY seq LIMIT $2", reads.join(merge))
            }
        }
    };
    super::plans::list(Statement::from_sql_and_values(backend, sql, values))
}

/// The entries of `seqs` still kept, in sequence order (what webhook deliveries name).
pub async fn by_seq(db: &impl ConnectionTrait, seqs: &[i64]) -> Result<Vec<FeedRecord>, DbErr> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(CHUNK) {
        let sql = format!(
            "SELECT {COLUMNS} FROM feed_entries e WHERE e.seq IN ({}) ORDER BY e.seq",
            placeholders(1, chunk.len())
        );
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, chunk.iter().map(|&s| s.into()));
        for row in feed_entry::Entity::find().from_raw_sql(stmt).all(db).await? {
            out.push(FeedRecord::read(row)?);
        }
    }
    with_voters(db, out).await
}

/// `records` with the voters each is about (one read per chunk of entries).
async fn with_voters(db: &impl ConnectionTrait, mut records: Vec<FeedRecord>) -> Result<Vec<FeedRecord>, DbErr> {
    #[derive(FromQueryResult)]
    struct About {
        seq: i64,
        voter: String,
    }
    let seqs: Vec<i64> = records.iter().map(|r| r.seq).collect();
    let mut about: std::collections::HashMap<i64, Vec<String>> = std::collections::HashMap::new();
    for chunk in seqs.chunks(CHUNK) {
        let sql = format!(
            "SELECT seq, voter FROM feed_entry_voters WHERE seq IN ({}) ORDER BY seq, voter",
            placeholders(1, chunk.len())
        );
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, chunk.iter().map(|&s| s.into()));
        for row in About::find_by_statement(stmt).all(db).await? {
            about.entry(row.seq).or_default().push(row.voter);
        }
    }
    for r in &mut records {
        r.subjects.voters = about.remove(&r.seq).unwrap_or_default();
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::vocabulary::SourceKind;

    fn event(kind: EventKind, subject_kind: ItemKind, actor: Option<&str>) -> FeedBody {
        FeedBody::Event {
            correction: false,
            event: EventRow {
                id: 1,
                natural_key: "k".to_owned(),
                kind,
                dao_id: "uniswap".to_owned(),
                occurred_ms: 0,
                subject_kind,
                subject_external_id: "7".to_owned(),
                subject_source: SourceKind::Snapshot,
                actor: actor.map(str::to_owned),
                url: None,
                snapshot_id: None,
                tx_hash: None,
                block_number: None,
                details: None,
                subject_key: Some("p_key".to_owned()),
                subject_title: None,
                subject_url: None,
            },
        }
    }

    #[test]
    fn an_entry_is_about_its_proposal_and_the_voters_it_names() {
        let voter = "0x683A4F9915D6216F73D6DF50151725036BD26C02";
        let lower = voter.to_ascii_lowercase();
        let vote = event(EventKind::VoteCast, ItemKind::Proposal, Some(voter)).subjects();
        assert_eq!(vote, Subjects { proposal_key: Some("p_key".to_owned()), voters: vec![lower.clone()] });
        // The author of a proposal is no voter the entry is about; a topic is no proposal.
        let created = event(EventKind::ProposalCreated, ItemKind::Proposal, Some(voter)).subjects();
        assert_eq!(created, Subjects { proposal_key: Some("p_key".to_owned()), voters: vec![] });
        assert_eq!(event(EventKind::ForumTopicCreated, ItemKind::ForumTopic, None).subjects(), Subjects::default());
        let zero = "0x0000000000000000000000000000000000000000";
        let change = |from: &str, to: &str| FeedBody::Delegation {
            change: DelegationChangeRecord {
                dao_id: "uniswap".to_owned(),
                delegator: lower.clone(),
                from_delegate: from.to_owned(),
                to_delegate: to.to_owned(),
                power_moved_raw: "1".to_owned(),
                decimals: 18,
                block_number: 1,
                log_index: 0,
                tx_hash: "0x".to_owned(),
                at_ms: 0,
                supply_raw: None,
            },
        };
        let to = "0x1111111111111111111111111111111111111111";
        // The delegator, the previous and the new delegate, each once; "no delegate" is nobody.
        assert_eq!(change(zero, to).subjects().voters, [lower.clone(), to.to_owned()]);
        assert_eq!(change(to, &lower).subjects().voters, [lower.clone(), to.to_owned()]);
        let filter = FeedFilter { voters: vec![to.to_owned()], ..FeedFilter::default() };
        assert!(filter.matches("uniswap", FeedKind::DelegationChanged, &change(zero, to).subjects()));
        assert!(!filter.matches("uniswap", FeedKind::VoteCast, &vote));
        let both =
            FeedFilter { voters: vec![lower], proposal_keys: vec!["p_other".to_owned()], ..FeedFilter::default() };
        assert!(!both.matches("uniswap", FeedKind::VoteCast, &vote), "every filter given must match");
    }
}
