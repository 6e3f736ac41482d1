//! Full-text search over proposal and forum-topic titles, on the indexes of migration m0002
//! (SQLite FTS5, PostgreSQL GIN over `to_tsvector('simple', …)`), and the confidence rule.
//!
//! Both backends see the same words: text is cut at every character that is not a letter or a
//! digit and lowercased (`rules::lookup::words`). Each query word matches as a prefix (`statut` finds
//! `statute`); [`Mode::All`] requires every word, [`Mode::Any`] one of them. The index ranks
//! (bm25 on SQLite, `ts_rank` on PostgreSQL) and a bounded number of rows comes back; the caller
//! orders them by `rules::lookup::confidence`, which both backends compute identically.
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityTrait, Statement, Value};

use super::entities::{forum_topic, proposal};

/// How query words combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every word must match.
    All,
    /// At least one word must match.
    Any,
}

/// The PostgreSQL expression indexed by m0002; it must stay textually identical to the index.
const PG_TSVECTOR: &str = "to_tsvector('simple', regexp_replace(t.title, '[^[:alnum:]]+', ' ', 'g'))";

/// The backend's query text for `words` (letters and digits only, so nothing needs escaping
/// beyond the quoting shown).
fn match_expression(backend: DbBackend, words: &[String], mode: Mode) -> String {
    match backend {
        DbBackend::Sqlite => {
            let op = if mode == Mode::All { " AND " } else { " OR " };
            words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(op)
        }
        _ => {
            let op = if mode == Mode::All { " & " } else { " | " };
            words.iter().map(|w| format!("'{w}':*")).collect::<Vec<_>>().join(op)
        }
    }
}

/// `SELECT t.*` of `table` whose title matches, best-ranked first, at most `limit` rows.
fn statement(
    backend: DbBackend,
    table: &str,
    words: &[String],
    mode: Mode,
    dao_id: Option<&str>,
    extra: &str,
    limit: u64,
) -> Statement {
    let mut values: Vec<Value> = vec![match_expression(backend, words, mode).into()];
    let mut filter = String::new();
    if let Some(dao) = dao_id {
        values.push(dao.to_owned().into());
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

/// Proposals whose title matches `words` (one query), best-ranked first.
pub async fn proposals(
    db: &impl ConnectionTrait,
    words: &[String],
    mode: Mode,
    dao_id: Option<&str>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = statement(db.get_database_backend(), "proposals", words, mode, dao_id, "", limit);
    proposal::Entity::find().from_raw_sql(stmt).all(db).await
}

/// Forum topics linked to a proposal whose title matches `words` (one query), best-ranked first.
pub async fn linked_topics(
    db: &impl ConnectionTrait,
    words: &[String],
    mode: Mode,
    dao_id: Option<&str>,
    limit: u64,
) -> Result<Vec<forum_topic::Model>, DbErr> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let extra = " AND t.linked_proposal_id IS NOT NULL";
    let stmt = statement(db.get_database_backend(), "forum_topics", words, mode, dao_id, extra, limit);
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
        assert_eq!(match_expression(DbBackend::Sqlite, &q, Mode::All), "\"statute\"* AND \"limitations\"*");
        assert_eq!(match_expression(DbBackend::Postgres, &q, Mode::Any), "'statute':* | 'limitations':*");
    }
}
