//! Governance events: derived at publication from proposals, notable votes and forum topics, and
//! read back as a dated, filtered list.
//!
//! Derivation is set-based (`INSERT … SELECT … ON CONFLICT (natural_key)`), in the SQL subset SQLite
//! (≥ 3.24) and PostgreSQL share, and idempotent: the same upstream fact always gets the same
//! natural key (`contract::events`), so publishing twice changes nothing. Events derived from a
//! value that can be corrected upstream (a proposal's end, its final numbers) are updated in
//! place; events that a connector may write exactly (queued, executed, canceled, with their
//! transaction) are only inserted when missing, so the connector's row wins. Rows are inserted in
//! source-row order, so a store loaded the same way numbers its events the same way on both
//! backends.
use std::collections::{BTreeMap, BTreeSet};

use bigdecimal::BigDecimal;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, FromQueryResult, Statement, Value};

use super::{placeholders, sort_keys};
use crate::contract::decimal;
use crate::contract::events::{EventKind, NOTABLE_VOTE_MIN_SHARE, STATE_EVENTS};
use crate::contract::vocabulary::{DaoId, ItemKind, ProposalState, SourceKind};

const INSERT_COLUMNS: &str = "INSERT INTO governance_events
    (natural_key, dao_id, kind, occurred_ms, subject_kind, subject_external_id, subject_source, proposal_id, topic_id,
     actor, url, snapshot_id, tx_hash, block_number, details)";

/// Updates a derived event when the facts behind it were corrected; untouched rows stay untouched.
const UPSERT_UPDATE: &str = "ON CONFLICT (natural_key) DO UPDATE SET
    occurred_ms = excluded.occurred_ms, actor = excluded.actor, url = excluded.url,
    snapshot_id = excluded.snapshot_id, tx_hash = excluded.tx_hash, block_number = excluded.block_number,
    details = excluded.details, proposal_id = excluded.proposal_id, topic_id = excluded.topic_id
  WHERE governance_events.occurred_ms <> excluded.occurred_ms
     OR COALESCE(governance_events.details, '') <> COALESCE(excluded.details, '')
     OR COALESCE(governance_events.url, '') <> COALESCE(excluded.url, '')
     OR COALESCE(governance_events.actor, '') <> COALESCE(excluded.actor, '')
     OR COALESCE(governance_events.tx_hash, '') <> COALESCE(excluded.tx_hash, '')
     OR COALESCE(governance_events.block_number, -1) <> COALESCE(excluded.block_number, -1)";

const UPSERT_KEEP: &str = "ON CONFLICT (natural_key) DO NOTHING";

/// The columns of an event about proposal `p`, after natural key, kind and time.
const PROPOSAL_SUBJECT: &str = "'proposal', p.external_id, p.source, p.id, CAST(NULL AS BIGINT)";

/// A Snapshot proposal is cited by its id; an on-chain one by its creation transaction.
const PROPOSAL_SNAPSHOT_ID: &str = "CASE WHEN p.source = 'snapshot' THEN p.external_id END";

/// A SQL expression building a flat JSON object of string values from `(key, expression)` pairs;
/// a NULL expression leaves its key out. Values are escaped for `\` and `"`; keys are literals.
fn json_object(fields: &[(&str, &str)]) -> String {
    if fields.is_empty() {
        return "'{}'".to_owned();
    }
    let parts: Vec<String> = fields
        .iter()
        .map(|(key, expr)| {
            format!("COALESCE(',\"{key}\":\"' || REPLACE(REPLACE({expr}, '\\', '\\\\'), '\"', '\\\"') || '\"', '')")
        })
        .collect();
    format!("'{{' || SUBSTR({}, 2) || '}}'", parts.join(" || "))
}

/// Derives every event the stored rows imply, as of `now_ms`. Called by `publish` inside its
/// transaction, after the per-proposal vote counts are recomputed. Returns the ids of the rows
/// written (inserted, or updated because their facts changed): what the feed reports.
pub async fn derive<C: ConnectionTrait>(db: &C, now_ms: i64, scope: Option<&Scope>) -> Result<BTreeSet<i64>, DbErr> {
    let mut written = BTreeSet::new();
    let proposals = scope.map(|s| s.proposals.as_slice());
    let topics = scope.map(|s| s.topics.as_slice());
    let key = |kind: &str| format!("p.dao_id || ':' || p.source || ':' || p.external_id || ':{kind}'");

    // proposal_created: at creation, by the author.
    let kind = EventKind::ProposalCreated.as_str();
    let sql = format!(
        "{INSERT_COLUMNS}
         SELECT {key}, p.dao_id, '{kind}', p.created_ms, {PROPOSAL_SUBJECT},
                p.author, p.url, {PROPOSAL_SNAPSHOT_ID}, p.tx_hash, p.block_number, {details}
         FROM proposals p WHERE p.created_ms <= $1 {{only}}
         ORDER BY p.id
         {UPSERT_UPDATE}",
        key = key(kind),
        details = json_object(&[("votingType", "p.voting_type")]),
    );
    written.extend(scoped(db, &sql, vec![now_ms.into()], "p.id", proposals).await?);

    // voting_started: once the start has passed.
    let kind = EventKind::VotingStarted.as_str();
    let sql = format!(
        "{INSERT_COLUMNS}
         SELECT {key}, p.dao_id, '{kind}', p.start_ms, {PROPOSAL_SUBJECT},
                CAST(NULL AS TEXT), p.url, {PROPOSAL_SNAPSHOT_ID}, CAST(NULL AS TEXT), CAST(NULL AS BIGINT), '{{}}'
         FROM proposals p WHERE p.start_ms IS NOT NULL AND p.start_ms <= $1 {{only}}
         ORDER BY p.id
         {UPSERT_UPDATE}",
        key = key(kind),
    );
    written.extend(scoped(db, &sql, vec![now_ms.into()], "p.id", proposals).await?);

    // proposal_closed: at the end of voting, with the final upstream numbers.
    let kind = EventKind::ProposalClosed.as_str();
    let states = placeholders(1, ProposalState::CLOSED.len());
    let sql = format!(
        "{INSERT_COLUMNS}
         SELECT {key}, p.dao_id, '{kind}', p.end_ms, {PROPOSAL_SUBJECT},
                CAST(NULL AS TEXT), p.url, {PROPOSAL_SNAPSHOT_ID}, CAST(NULL AS TEXT), CAST(NULL AS BIGINT), {details}
         FROM proposals p WHERE p.end_ms IS NOT NULL AND p.state IN ({states}) {{only}}
         ORDER BY p.id
         {UPSERT_UPDATE}",
        key = key(kind),
        details = json_object(&[
            ("state", "p.state"),
            ("scoresTotal", "p.scores_total"),
            ("quorum", "p.quorum"),
            ("upstreamVotes", "CAST(p.upstream_vote_count AS TEXT)"),
            ("topChoicePct", "p.top_choice_pct"),
        ]),
    );
    written.extend(
        scoped(db, &sql, ProposalState::CLOSED.iter().map(|s| Value::from(s.as_str())).collect(), "p.id", proposals)
            .await?,
    );

    // queued / executed / canceled from the state, when no connector wrote the exact event. The
    // proposals table keeps no time for these transitions: the time is when the state was last
    // observed (`updated_ms`), and `details.timeBasis` says so.
    for (state, event) in STATE_EVENTS {
        let kind = event.as_str();
        let sql = format!(
            "{INSERT_COLUMNS}
             SELECT {key}, p.dao_id, '{kind}', COALESCE(NULLIF(p.updated_ms, 0), p.end_ms, p.created_ms), {PROPOSAL_SUBJECT},
                    CAST(NULL AS TEXT), p.url, {PROPOSAL_SNAPSHOT_ID}, CAST(NULL AS TEXT), CAST(NULL AS BIGINT),
                    '{{\"state\":\"' || p.state || '\",\"timeBasis\":\"state_observed\"}}'
             FROM proposals p WHERE p.state = $1 {{only}}
             ORDER BY p.id
             {UPSERT_KEEP}",
            key = key(kind),
        );
        written.extend(scoped(db, &sql, vec![state.as_str().into()], "p.id", proposals).await?);
    }

    written.extend(derive_vote_events(db, proposals).await?);

    // forum_topic_created: at the topic's creation, by its author.
    let kind = EventKind::ForumTopicCreated.as_str();
    let sql = format!(
        "{INSERT_COLUMNS}
         SELECT t.dao_id || ':discourse:' || t.external_id || ':{kind}', t.dao_id, '{kind}', t.created_ms,
                'forum_topic', t.external_id, 'discourse', CAST(NULL AS BIGINT), t.id,
                t.author, t.url, CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS BIGINT), {details}
         FROM forum_topics t LEFT JOIN proposals lp ON lp.id = t.linked_proposal_id
         WHERE t.created_ms <= $1 {{only}}
         ORDER BY t.id
         {UPSERT_UPDATE}",
        details = json_object(&[("linkedProposalSource", "lp.source"), ("linkedProposalExternalId", "lp.external_id")]),
    );
    written.extend(scoped(db, &sql, vec![now_ms.into()], "t.id", topics).await?);
    Ok(written)
}

/// Proposals per statement when deriving vote events (two parameters each).
const THRESHOLD_BATCH: usize = 500;

/// `vote_cast` for every vote whose power is at least `NOTABLE_VOTE_MIN_SHARE` of its proposal's
/// upstream `scores_total`. The thresholds are computed exactly in decimal (one small query over
/// the proposals that have votes) and compared in SQL through the fixed-width sort keys
/// (`vp_sort`), so every vote is examined in the database, never loaded.
async fn derive_vote_events<C: ConnectionTrait>(db: &C, proposals: Option<&[i64]>) -> Result<Vec<i64>, DbErr> {
    #[derive(FromQueryResult)]
    struct Total {
        id: i64,
        scores_total: String,
    }
    const TOTALS: &str =
        "SELECT id, scores_total FROM proposals WHERE scores_total IS NOT NULL AND ingested_vote_count > 0";
    let backend = db.get_database_backend();
    let totals = match proposals {
        None => {
            Total::find_by_statement(Statement::from_string(backend, format!("{TOTALS} ORDER BY id"))).all(db).await?
        }
        Some(ids) => {
            let mut totals = Vec::new();
            for chunk in ids.chunks(SCOPE_BATCH) {
                let sql = format!("{TOTALS} AND id IN ({}) ORDER BY id", placeholders(1, chunk.len()));
                let values = chunk.iter().map(|id| Value::from(*id)).collect::<Vec<_>>();
                totals.extend(
                    Total::find_by_statement(Statement::from_sql_and_values(backend, sql, values)).all(db).await?,
                );
            }
            totals
        }
    };
    let share = decimal::parse(NOTABLE_VOTE_MIN_SHARE).expect("NOTABLE_VOTE_MIN_SHARE is a decimal");
    let zero = BigDecimal::from(0);
    let thresholds: Vec<(i64, String)> = totals
        .into_iter()
        .filter_map(|t| {
            // A total that is not a decimal (or is zero) makes no vote notable.
            let total = decimal::parse(&t.scores_total).ok().filter(|v| *v > zero)?;
            Some((t.id, sort_keys::sort_key(&(total * &share)).ok()?))
        })
        .collect();
    let kind = EventKind::VoteCast.as_str();
    let details =
        json_object(&[("votingPower", "v.voting_power"), ("choice", "v.choice"), ("scoresTotal", "p.scores_total")]);
    let voter = super::address::lower_sql(backend, "v.voter");
    let above = super::vote_arms::above_thresholds_sql(backend);
    let mut written = Vec::new();
    for batch in thresholds.chunks(THRESHOLD_BATCH) {
        let rows: Vec<String> = (0..batch.len()).map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2)).collect();
        let sql = format!(
            "WITH thresholds (proposal_id, min_vp_sort) AS (VALUES {rows})
             {INSERT_COLUMNS}
             SELECT p.dao_id || ':' || p.source || ':' || p.external_id || ':{kind}:' || {voter}, p.dao_id, '{kind}',
                    v.created_ms, {PROPOSAL_SUBJECT}, {voter}, p.url, {PROPOSAL_SNAPSHOT_ID}, v.tx_hash, v.block_number,
                    {details}
             FROM {above}
             JOIN proposals p ON p.id = v.proposal_id
             ORDER BY v.id
             {UPSERT_UPDATE}",
            rows = rows.join(", "),
        );
        let values = batch.iter().flat_map(|(id, key)| [Value::from(*id), Value::from(key.clone())]).collect();
        written.extend(write(db, &sql, values).await?);
    }
    Ok(written)
}

/// Open proposals whose voting started by `now_ms` without their `voting_started` event yet, with
/// their DAOs: time alone makes these events due, so a run that changed no data publishes them.
pub async fn due_by_time<C: ConnectionTrait>(db: &C, now_ms: i64) -> Result<Vec<(i64, String)>, DbErr> {
    let kind = EventKind::VotingStarted.as_str();
    let sql = format!(
        "SELECT p.id, p.dao_id FROM proposals p
         WHERE p.state IN ('pending', 'active') AND p.start_ms IS NOT NULL AND p.start_ms <= $1
           AND NOT EXISTS (SELECT 1 FROM governance_events e
                           WHERE e.natural_key = p.dao_id || ':' || p.source || ':' || p.external_id || ':{kind}')
         ORDER BY p.id"
    );
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, [now_ms.into()]);
    let rows = db.query_all_raw(stmt).await?;
    rows.iter().map(|r| Ok((r.try_get::<i64>("", "id")?, r.try_get::<String>("", "dao_id")?))).collect()
}

/// What a publication touched: events are derived for these proposals and topics only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub proposals: Vec<i64>,
    pub topics: Vec<i64>,
}

/// Ids per scoped statement.
const SCOPE_BATCH: usize = 500;

/// Runs `sql` (whose `{only}` narrows it) over every row (`ids` = `None`) or over the rows whose
/// `column` is one of `ids`, a batch at a time. Returns the ids of the rows written.
async fn scoped<C: ConnectionTrait>(
    db: &C,
    sql: &str,
    values: Vec<Value>,
    column: &str,
    ids: Option<&[i64]>,
) -> Result<Vec<i64>, DbErr> {
    let Some(ids) = ids else {
        return write(db, &sql.replace("{only}", ""), values).await;
    };
    let mut written = Vec::new();
    for chunk in ids.chunks(SCOPE_BATCH) {
        let only = format!("AND {column} IN ({})", placeholders(values.len() + 1, chunk.len()));
        let all = values.iter().cloned().chain(chunk.iter().map(|id| Value::from(*id))).collect();
        written.extend(write(db, &sql.replace("{only}", &only), all).await?);
    }
    Ok(written)
}

/// Runs one upsert and returns the ids of the rows it inserted or updated (`RETURNING`, which
/// both backends report for an upsert's inserted and updated rows, and not for rows left alone).
async fn write<C: ConnectionTrait>(db: &C, sql: &str, values: Vec<Value>) -> Result<Vec<i64>, DbErr> {
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), format!("{sql}\n RETURNING id"), values);
    db.query_all_raw(stmt).await?.iter().map(|r| r.try_get::<i64>("", "id")).collect()
}

/// Filters of an event list. Bounds are inclusive.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub dao_id: Option<DaoId>,
    pub kind: Option<EventKind>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    /// Keyset position `(occurred_ms, id)` of the last row served (v2 pages).
    pub after: Option<super::keysets::TimeAfter>,
}

/// An event with its subject's title, key and link.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult, serde::Serialize, serde::Deserialize)]
pub struct EventRow {
    pub id: i64,
    /// What the event is (`governance_events.natural_key`): its public id derives from it.
    pub natural_key: String,
    pub kind: EventKind,
    pub dao_id: String,
    pub occurred_ms: i64,
    pub subject_kind: ItemKind,
    pub subject_external_id: String,
    pub subject_source: SourceKind,
    pub actor: Option<String>,
    pub url: Option<String>,
    pub snapshot_id: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
    pub details: Option<String>,
    pub subject_key: Option<String>,
    pub subject_title: Option<String>,
    pub subject_url: Option<String>,
}

impl EventRow {
    pub fn keyset(&self) -> super::keysets::TimeAfter {
        super::keysets::TimeAfter { ms: self.occurred_ms, id: self.id }
    }
}

impl EventRow {
    /// `details` as a flat map of exact strings (a non-string JSON value keeps its JSON text).
    pub fn details_map(&self) -> BTreeMap<String, String> {
        parse_details(self.details.as_deref())
    }
}

/// A flat JSON object as a map of strings; anything else is an empty map.
pub fn parse_details(text: Option<&str>) -> BTreeMap<String, String> {
    let Some(serde_json::Value::Object(map)) = text.and_then(|t| serde_json::from_str(t).ok()) else {
        return BTreeMap::new();
    };
    map.into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect()
}

/// `WHERE` conditions and their values for `filter`, parameters numbered from `$1`.
fn conditions(filter: &EventFilter, alias: &str, time_col: &str, values: &mut Vec<Value>) -> Vec<String> {
    let mut conds = Vec::new();
    let mut push = |cond: String, value: Value, values: &mut Vec<Value>| {
        values.push(value);
        conds.push(cond.replace('?', &format!("${}", values.len())));
    };
    if let Some(from) = filter.from_ms {
        push(format!("{alias}.{time_col} >= ?"), from.into(), values);
    }
    if let Some(to) = filter.to_ms {
        push(format!("{alias}.{time_col} <= ?"), to.into(), values);
    }
    if let Some(dao) = &filter.dao_id {
        push(format!("{alias}.dao_id = ?"), dao.into(), values);
    }
    if let Some(kind) = filter.kind {
        push(format!("{alias}.kind = ?"), kind.as_str().into(), values);
    }
    if let Some(super::keysets::TimeAfter { ms: t, id }) = filter.after {
        // The leading `time <= t` is implied but lets the planner seek (see `store::after_desc`).
        values.extend([Value::from(t), Value::from(t), Value::from(t), Value::from(id)]);
        let n = values.len();
        conds.push(format!(
            "{alias}.{time_col} <= ${} AND ({alias}.{time_col} < ${} OR ({alias}.{time_col} = ${} AND {alias}.id < ${n}))",
            n - 3,
            n - 2,
            n - 1
        ));
    }
    conds
}

fn where_clause(conds: &[String]) -> String {
    if conds.is_empty() { String::new() } else { format!("WHERE {}", conds.join(" AND ")) }
}

/// The subject columns joined from proposals (`p`) and forum topics (`t`) for rows of `alias`.
pub(crate) const SUBJECT_JOIN: &str = "COALESCE(p.proposal_key, t.topic_key) AS subject_key,
    COALESCE(p.title, t.title) AS subject_title, COALESCE(p.url, t.url) AS subject_url";

/// The query reading [`EventRow`]s (events `e` with their subjects), narrowed and ordered by
/// `rest` (`WHERE …`, `ORDER BY …`).
pub(crate) fn rows_sql(rest: &str) -> String {
    format!(
        "SELECT e.id, e.natural_key, e.kind, e.dao_id, e.occurred_ms, e.subject_kind, e.subject_external_id, e.subject_source,
                e.actor, e.url, e.snapshot_id, e.tx_hash, e.block_number, e.details, {SUBJECT_JOIN}
         FROM governance_events e
         LEFT JOIN proposals p ON p.id = e.proposal_id
         LEFT JOIN forum_topics t ON t.id = e.topic_id
         {rest}"
    )
}

/// One page of events, newest first (`occurred_ms` desc, then id desc). Two queries: the page and,
/// when `with_total`, its total.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &EventFilter,
    limit: u64,
    offset: u64,
    with_total: bool,
) -> Result<(Vec<EventRow>, u64), DbErr> {
    let backend = db.get_database_backend();
    let rows = EventRow::find_by_statement(list_statement(backend, filter, limit, offset)).all(db).await?;
    let total = if with_total {
        let mut values = Vec::new();
        let conds = where_clause(&conditions(filter, "e", "occurred_ms", &mut values));
        count(db, &format!("SELECT COUNT(*) AS n FROM governance_events e {conds}"), values).await?
    } else {
        rows.len() as u64
    };
    Ok((rows, total))
}

/// The page statement [`list`] runs.
pub fn list_statement(backend: DbBackend, filter: &EventFilter, limit: u64, offset: u64) -> Statement {
    let mut values = Vec::new();
    let conds = where_clause(&conditions(filter, "e", "occurred_ms", &mut values));
    let n = values.len();
    let sql = rows_sql(&format!("{conds} ORDER BY e.occurred_ms DESC, e.id DESC LIMIT ${} OFFSET ${}", n + 1, n + 2));
    values.extend([Value::from(to_i64(limit)), Value::from(to_i64(offset))]);
    super::plans::list(Statement::from_sql_and_values(backend, sql, values))
}

pub(crate) async fn count(db: &impl ConnectionTrait, sql: &str, values: Vec<Value>) -> Result<u64, DbErr> {
    #[derive(FromQueryResult)]
    struct Count {
        n: i64,
    }
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    Ok(Count::find_by_statement(stmt).one(db).await?.map_or(0, |c| c.n.max(0) as u64))
}

pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_flat_strings() {
        let m = parse_details(Some(r#"{"votingPower":"2.11e-16","n":3,"x":null}"#));
        assert_eq!(m["votingPower"], "2.11e-16");
        assert_eq!(m["n"], "3");
        assert!(!m.contains_key("x"));
        assert!(parse_details(Some("[1]")).is_empty());
        assert!(parse_details(None).is_empty());
    }

    #[test]
    fn json_object_sql_is_well_formed() {
        assert_eq!(json_object(&[]), "'{}'");
        let sql = json_object(&[("a", "x.a")]);
        assert!(
            sql.starts_with("'{' || SUBSTR(COALESCE(',\"a\":\"' || REPLACE(REPLACE(x.a, '\\', '\\\\'), '\"', '\\\"')")
        );
    }
}
