//! Cross-DAO activity: governance events and curated signals in one list, newest first.
//!
//! Each side is read from its own time index and cut to `offset + limit` rows before the two
//! are merged, so a page costs two bounded index scans, one small sort, and one count per side.
use sea_orm::{ConnectionTrait, DbBackend, DbErr, FromQueryResult, QueryResult, Statement, Value};

use super::events::{EventRow, SUBJECT_JOIN, count, to_i64};
use crate::contract::events::{ActivityKind, EventKind};
use crate::contract::signals::{Severity, SignalKind};
use crate::contract::vocabulary::{DaoId, ItemKind, SourceKind};

/// Filters of the activity list.
#[derive(Debug, Clone, Default)]
pub struct ActivityFilter {
    pub dao_id: Option<DaoId>,
    pub kind: Option<ActivityKind>,
    /// Inclusive lower bound on the entry's time.
    pub since_ms: Option<i64>,
    /// Keyset position `(time, entry, id)` of the last row served (v2 pages).
    pub after: Option<super::keysets::ActivityAfter>,
}

/// Which table an entry comes from.
pub const ENTRY_EVENT: &str = "event";
pub const ENTRY_SIGNAL: &str = "signal";

/// What an activity entry is, read with its row: an event of a kind, or a signal of a kind
/// with its severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Event(EventKind),
    Signal(SignalKind, Severity),
}

/// One entry: an event (`entry = "event"`) or a signal (`entry = "signal"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityRow {
    pub entry: String,
    pub id: i64,
    /// The event's or signal's natural key: its public id derives from it.
    pub natural_key: String,
    pub dao_id: String,
    /// The event kind, or the signal's rule and severity.
    pub kind: EntryKind,
    pub occurred_ms: i64,
    pub subject_kind: ItemKind,
    pub subject_external_id: String,
    pub subject_source: SourceKind,
    pub actor: Option<String>,
    pub url: Option<String>,
    pub snapshot_id: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
    /// Event details (JSON object); absent for signals.
    pub details: Option<String>,
    /// Signal one-line summary; absent for events.
    pub summary: Option<String>,
    pub subject_key: Option<String>,
    pub subject_title: Option<String>,
    pub subject_url: Option<String>,
}

impl ActivityRow {
    pub fn keyset(&self) -> super::keysets::ActivityAfter {
        super::keysets::ActivityAfter { ms: self.occurred_ms, entry: self.entry.clone(), id: self.id }
    }
}

impl FromQueryResult for ActivityRow {
    fn from_query_result(row: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        let entry: String = row.try_get(pre, "entry")?;
        // The `kind` column holds an event kind or a rule name, as `entry` says; each is parsed
        // as its enum (`store::stored`), so an unknown one fails the read.
        let kind = match entry.as_str() {
            ENTRY_EVENT => EntryKind::Event(row.try_get(pre, "kind")?),
            ENTRY_SIGNAL => EntryKind::Signal(row.try_get(pre, "kind")?, row.try_get(pre, "severity")?),
            other => return Err(DbErr::Type(format!("`{other}` is not an activity entry"))),
        };
        Ok(Self {
            entry,
            id: row.try_get(pre, "id")?,
            natural_key: row.try_get(pre, "natural_key")?,
            dao_id: row.try_get(pre, "dao_id")?,
            kind,
            occurred_ms: row.try_get(pre, "occurred_ms")?,
            subject_kind: row.try_get(pre, "subject_kind")?,
            subject_external_id: row.try_get(pre, "subject_external_id")?,
            subject_source: row.try_get(pre, "subject_source")?,
            actor: row.try_get(pre, "actor")?,
            url: row.try_get(pre, "url")?,
            snapshot_id: row.try_get(pre, "snapshot_id")?,
            tx_hash: row.try_get(pre, "tx_hash")?,
            block_number: row.try_get(pre, "block_number")?,
            details: row.try_get(pre, "details")?,
            summary: row.try_get(pre, "summary")?,
            subject_key: row.try_get(pre, "subject_key")?,
            subject_title: row.try_get(pre, "subject_title")?,
            subject_url: row.try_get(pre, "subject_url")?,
        })
    }
}

impl ActivityRow {
    /// An event entry of `kind` as the event row it was read from.
    pub fn into_event(self, kind: EventKind) -> EventRow {
        EventRow {
            id: self.id,
            natural_key: self.natural_key,
            kind,
            dao_id: self.dao_id,
            occurred_ms: self.occurred_ms,
            subject_kind: self.subject_kind,
            subject_external_id: self.subject_external_id,
            subject_source: self.subject_source,
            actor: self.actor,
            url: self.url,
            snapshot_id: self.snapshot_id,
            tx_hash: self.tx_hash,
            block_number: self.block_number,
            details: self.details,
            subject_key: self.subject_key,
            subject_title: self.subject_title,
            subject_url: self.subject_url,
        }
    }
}

struct Side {
    sql: String,
    count_sql: String,
    values: Vec<Value>,
}

/// `WHERE` for one side; parameters are numbered after `values` already bound.
fn side_conditions(
    filter: &ActivityFilter,
    time_col: &str,
    event_kind: Option<EventKind>,
    keyset: Option<&str>,
    values: &mut Vec<Value>,
) -> String {
    let mut conds = Vec::new();
    let mut push = |cond: &str, value: Value, values: &mut Vec<Value>| {
        values.push(value);
        conds.push(cond.replace('?', &format!("${}", values.len())));
    };
    if let Some(since) = filter.since_ms {
        push(&format!("x.{time_col} >= ?"), since.into(), values);
    }
    if let Some(dao) = &filter.dao_id {
        push("x.dao_id = ?", dao.into(), values);
    }
    if let Some(kind) = event_kind {
        push("x.kind = ?", kind.as_str().into(), values);
    }
    // The merged order is (time desc, entry asc, id desc); the entry is a constant per side, so
    // the keyset condition of one side reduces to a comparison of its own time and id.
    if let (Some(entry), Some(super::keysets::ActivityAfter { ms: t, entry: last_entry, id: last_id })) =
        (keyset, &filter.after)
    {
        match entry.cmp(last_entry.as_str()) {
            std::cmp::Ordering::Less => push(&format!("x.{time_col} < ?"), (*t).into(), values),
            std::cmp::Ordering::Greater => push(&format!("x.{time_col} <= ?"), (*t).into(), values),
            std::cmp::Ordering::Equal => {
                // The leading `time <= t` is implied but lets the planner seek.
                values.extend([Value::from(*t), Value::from(*t), Value::from(*t), Value::from(*last_id)]);
                let n = values.len();
                conds.push(format!(
                    "x.{time_col} <= ${} AND (x.{time_col} < ${} OR (x.{time_col} = ${} AND x.id < ${n}))",
                    n - 3,
                    n - 2,
                    n - 1
                ));
            }
        }
    }
    if conds.is_empty() { String::new() } else { format!("WHERE {}", conds.join(" AND ")) }
}

fn events_side(filter: &ActivityFilter, cap: i64, start: &mut Vec<Value>) -> Side {
    let kind = filter.kind.and_then(ActivityKind::event_kind);
    let mut own = Vec::new();
    let count_where = side_conditions(filter, "occurred_ms", kind, None, &mut own);
    let where_ = side_conditions(filter, "occurred_ms", kind, Some(ENTRY_EVENT), start);
    start.push(cap.into());
    let sql = format!(
        "SELECT * FROM (
            SELECT '{ENTRY_EVENT}' AS entry, x.id, x.natural_key, x.dao_id, x.kind, x.occurred_ms, x.subject_kind, x.subject_external_id,
                   x.subject_source, x.proposal_id, x.topic_id, x.actor, x.url, x.snapshot_id, x.tx_hash, x.block_number,
                   x.details, CAST(NULL AS TEXT) AS severity, CAST(NULL AS TEXT) AS summary
            FROM governance_events x {where_}
            ORDER BY x.occurred_ms DESC, x.id DESC LIMIT ${}
         ) ev",
        start.len()
    );
    Side { sql, count_sql: format!("SELECT COUNT(*) AS n FROM governance_events x {count_where}"), values: own }
}

fn signals_side(filter: &ActivityFilter, cap: i64, start: &mut Vec<Value>) -> Side {
    let mut own = Vec::new();
    let count_where = side_conditions(filter, "detected_ms", None, None, &mut own);
    let where_ = side_conditions(filter, "detected_ms", None, Some(ENTRY_SIGNAL), start);
    start.push(cap.into());
    let sql = format!(
        "SELECT * FROM (
            SELECT '{ENTRY_SIGNAL}' AS entry, x.id, x.natural_key, x.dao_id, x.kind, x.detected_ms AS occurred_ms, x.subject_kind,
                   x.subject_external_id, x.subject_source, x.proposal_id, x.topic_id, CAST(NULL AS TEXT) AS actor,
                   CAST(NULL AS TEXT) AS url, CAST(NULL AS TEXT) AS snapshot_id, CAST(NULL AS TEXT) AS tx_hash,
                   CAST(NULL AS BIGINT) AS block_number, CAST(NULL AS TEXT) AS details, x.severity, x.summary
            FROM signals x {where_}
            ORDER BY x.detected_ms DESC, x.id DESC LIMIT ${}
         ) sg",
        start.len()
    );
    Side { sql, count_sql: format!("SELECT COUNT(*) AS n FROM signals x {count_where}"), values: own }
}

/// One page of activity, newest first (time desc; on the same millisecond events before signals,
/// then higher id first), and, when `with_total`, the total for the filters. Three queries at
/// most: the page and one count per side that the `kind` filter keeps.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &ActivityFilter,
    limit: u64,
    offset: u64,
    with_total: bool,
) -> Result<(Vec<ActivityRow>, u64), DbErr> {
    let (statement, sides) = page(db.get_database_backend(), filter, limit, offset);
    let rows = ActivityRow::find_by_statement(statement).all(db).await?;
    let mut total = 0;
    for side in sides.into_iter().filter(|_| with_total) {
        total += count(db, &side.count_sql, side.values).await?;
    }
    Ok((rows, total))
}

/// The page statement [`list`] runs.
pub fn list_statement(backend: DbBackend, filter: &ActivityFilter, limit: u64, offset: u64) -> Statement {
    page(backend, filter, limit, offset).0
}

/// The page statement, and the sides it reads (each with its count).
fn page(backend: DbBackend, filter: &ActivityFilter, limit: u64, offset: u64) -> (Statement, Vec<Side>) {
    let want_events = filter.kind != Some(ActivityKind::Signal);
    let want_signals = filter.kind.is_none() || filter.kind == Some(ActivityKind::Signal);
    let cap = to_i64(offset.saturating_add(limit));
    let mut values = Vec::new();
    let mut sides = Vec::new();
    if want_events {
        sides.push(events_side(filter, cap, &mut values));
    }
    if want_signals {
        sides.push(signals_side(filter, cap, &mut values));
    }
    let union = sides.iter().map(|s| s.sql.as_str()).collect::<Vec<_>>().join(" UNION ALL ");
    let n = values.len();
    values.extend([Value::from(to_i64(limit)), Value::from(to_i64(offset))]);
    let sql = format!(
        "SELECT a.entry, a.id, a.natural_key, a.dao_id, a.kind, a.occurred_ms, a.subject_kind, a.subject_external_id, a.subject_source,
                a.actor, a.url, a.snapshot_id, a.tx_hash, a.block_number, a.details, a.severity, a.summary, {SUBJECT_JOIN}
         FROM ({union}) a
         LEFT JOIN proposals p ON p.id = a.proposal_id
         LEFT JOIN forum_topics t ON t.id = a.topic_id
         ORDER BY a.occurred_ms DESC, a.entry ASC, a.id DESC
         LIMIT ${} OFFSET ${}",
        n + 1,
        n + 2
    );
    (super::plans::list(Statement::from_sql_and_values(backend, sql, values)), sides)
}
