//! Search over proposal and forum-topic titles, the candidates `rules::lookup` ranks.
//!
//! - Words, on the full-text indexes of migration m0002 (SQLite FTS5, PostgreSQL GIN over
//!   `to_tsvector('simple', …)`). Both backends see the same words: text is cut at every character
//!   that is not a letter or a digit and lowercased (`rules::lookup::words`). Each query word
//!   matches as a prefix (`statut` finds `statute`), and a title must hold every word. The index
//!   ranks (bm25 on SQLite, `ts_rank` on PostgreSQL).
//! - Trigrams, on the indexes of migration m0013 (SQLite FTS5 `trigram`, PostgreSQL `pg_trgm`):
//!   titles holding any of the query's three-character pieces (`rules::lookup::trigrams`), those
//!   holding the most of them first (the same count on both backends), then by identity.
//!
//! A bounded number of rows comes back; the caller orders them by `rules::lookup::confidence`,
//! which both backends compute identically.
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityTrait, Statement, Value};

use super::entities::{forum_topic, proposal};
use crate::contract::vocabulary::DaoId;

/// The PostgreSQL expression indexed by m0002; it must stay textually identical to the index.
const PG_TSVECTOR: &str = "to_tsvector('simple', regexp_replace(t.title, '[^[:alnum:]]+', ' ', 'g'))";

/// The backend's query text for `words`, every one required (letters and digits only, so
/// nothing needs escaping beyond the quoting shown).
fn match_expression(backend: DbBackend, words: &[String]) -> String {
    match backend {
        DbBackend::Sqlite => words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" AND "),
        _ => words.iter().map(|w| format!("'{w}':*")).collect::<Vec<_>>().join(" & "),
    }
}

/// `SELECT t.*` of `table` whose title matches, best-ranked first, at most `limit` rows.
fn statement(
    backend: DbBackend,
    table: &str,
    words: &[String],
    dao_id: Option<&DaoId>,
    extra: &str,
    limit: u64,
) -> Statement {
    let mut values: Vec<Value> = vec![match_expression(backend, words).into()];
    let mut filter = String::new();
    if let Some(dao) = dao_id {
        values.push(dao.into());
        filter = format!(" AND t.dao_id = ${}", values.len());
    }
    let sql = match backend {
        DbBackend::Sqlite => format!(
            "SELECT t.* FROM {table}_fts JOIN {table} t ON t.id = {table}_fts.rowid \
             WHERE {table}_fts MATCH $1{filter}{extra} \
             ORDER BY bm25({table}_fts), t.id LIMIT {limit}"
        ),
        _ => format!(
            "SELECT t.* FROM {table} t \
             WHERE {PG_TSVECTOR} @@ to_tsquery('simple', $1){filter}{extra} \
             ORDER BY ts_rank({PG_TSVECTOR}, to_tsquery('simple', $1)) DESC, t.id LIMIT {limit}"
        ),
    };
    Statement::from_sql_and_values(backend, sql, values)
}

/// `SELECT t.*` of `table` whose lowercased title holds any of `pieces`, those holding the most
/// first, then by `identity` (columns of `t`), at most `limit` rows. The index finds the rows
/// holding each piece; the count orders them identically on both backends (letter case is
/// folded by `lower`: ASCII on SQLite, the database's locale on PostgreSQL).
fn trigram_statement(
    backend: DbBackend,
    table: &str,
    identity: &str,
    pieces: &[String],
    dao_id: Option<&DaoId>,
    extra: &str,
    limit: u64,
) -> Statement {
    // Pieces are letters and digits (`rules::lookup::trigrams`): no LIKE wildcard among them.
    let mut values: Vec<Value> = pieces.iter().map(|p| format!("%{p}%").into()).collect();
    let holds: Vec<String> = (1..=pieces.len()).map(|i| format!("lower(t.title) LIKE ${i}")).collect();
    let mut filter = String::new();
    if let Some(dao) = dao_id {
        values.push(dao.into());
        filter = format!(" AND t.dao_id = ${}", values.len());
    }
    let sql = match backend {
        DbBackend::Sqlite => {
            let query = pieces.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" OR ");
            values.push(query.into());
            let held = holds.iter().map(|h| format!("({h})")).collect::<Vec<_>>().join(" + ");
            format!(
                "SELECT t.* FROM {table}_trgm JOIN {table} t ON t.id = {table}_trgm.rowid \
                 WHERE {table}_trgm MATCH ${}{filter}{extra} \
                 ORDER BY {held} DESC, {identity} LIMIT {limit}",
                values.len()
            )
        }
        _ => {
            let held = holds.iter().map(|h| format!("({h})::int")).collect::<Vec<_>>().join(" + ");
            format!(
                "SELECT t.* FROM {table} t WHERE ({}){filter}{extra} \
                 ORDER BY {held} DESC, {identity} LIMIT {limit}",
                holds.join(" OR ")
            )
        }
    };
    Statement::from_sql_and_values(backend, sql, values)
}

/// Proposals whose title has every one of `words` (one query), best-ranked first.
pub async fn proposals(
    db: &impl ConnectionTrait,
    words: &[String],
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = statement(db.get_database_backend(), "proposals", words, dao_id, "", limit);
    proposal::Entity::find().from_raw_sql(stmt).all(db).await
}

/// Forum topics linked to a proposal whose title has every one of `words` (one query),
/// best-ranked first.
pub async fn linked_topics(
    db: &impl ConnectionTrait,
    words: &[String],
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<forum_topic::Model>, DbErr> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let extra = " AND t.linked_proposal_id IS NOT NULL";
    let stmt = statement(db.get_database_backend(), "forum_topics", words, dao_id, extra, limit);
    forum_topic::Entity::find().from_raw_sql(stmt).all(db).await
}

const PROPOSAL_IDENTITY: &str = "t.dao_id, t.source, t.external_id";
const TOPIC_IDENTITY: &str = "t.dao_id, t.external_id";

/// Proposals whose title holds the most of the trigram `pieces` (one query), most first.
pub async fn proposals_by_trigrams(
    db: &impl ConnectionTrait,
    pieces: &[String],
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    if pieces.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = trigram_statement(db.get_database_backend(), "proposals", PROPOSAL_IDENTITY, pieces, dao_id, "", limit);
    proposal::Entity::find().from_raw_sql(stmt).all(db).await
}

/// Forum topics linked to a proposal whose title holds the most of the trigram `pieces` (one
/// query), most first.
pub async fn linked_topics_by_trigrams(
    db: &impl ConnectionTrait,
    pieces: &[String],
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<forum_topic::Model>, DbErr> {
    if pieces.is_empty() {
        return Ok(Vec::new());
    }
    let extra = " AND t.linked_proposal_id IS NOT NULL";
    let stmt =
        trigram_statement(db.get_database_backend(), "forum_topics", TOPIC_IDENTITY, pieces, dao_id, extra, limit);
    forum_topic::Entity::find().from_raw_sql(stmt).all(db).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        crate::rules::lookup::query_words(s)
    }

    #[test]
    fn match_expressions_quote_every_word() {
        let q = w("Statute Limitations");
        assert_eq!(match_expression(DbBackend::Sqlite, &q), "\"statute\"* AND \"limitations\"*");
        assert_eq!(match_expression(DbBackend::Postgres, &q), "'statute':* & 'limitations':*");
    }
}
