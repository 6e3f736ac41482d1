//! Full-text search over proposal and forum-topic titles, on the indexes of migration m0002
//! (SQLite FTS5, PostgreSQL GIN over `to_tsvector('simple', …)`), and the confidence rule.
//!
//! Both backends see the same words: text is cut at every character that is not a letter or a
//! digit and lowercased ([`words`]). Each query word matches as a prefix (`statut` finds
//! `statute`); [`Mode::All`] requires every word, [`Mode::Any`] one of them. The index ranks
//! (bm25 on SQLite, `ts_rank` on PostgreSQL) and a bounded number of rows comes back; the caller
//! orders them by [`confidence`], which both backends compute identically.
use bigdecimal::{BigDecimal, RoundingMode, Zero};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityTrait, Statement, Value};

use super::entities::{forum_topic, proposal};
use crate::contract::decimal;
use crate::contract::limits::lookup::{
    CONFIDENCE_DECIMALS, CONFIDENCE_QUERY_WEIGHT, CONFIDENCE_TITLE_WEIGHT, TITLE_MAX_WORDS,
};

/// How query words combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every word must match.
    All,
    /// At least one word must match.
    Any,
}

/// The distinct lowercase words of `text`, in order of first appearance: maximal runs of letters
/// and digits. Matches how both indexes cut titles.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The query words used for a title search: at most [`TITLE_MAX_WORDS`].
pub fn query_words(text: &str) -> Vec<String> {
    let mut w = words(text);
    w.truncate(TITLE_MAX_WORDS);
    w
}

/// Confidence that `title` is what `query` (its words) names, in [0, 1], as a plain decimal:
/// `0.8 × (query words found in the title ÷ query words) + 0.2 × (title words matched by a
/// query word ÷ title words)` (weights in `contract::limits::lookup`), a query word matching the
/// title words it is a prefix of; rounded half-even to 4 decimals. Same words → `1`.
pub fn confidence(query: &[String], title: &str) -> String {
    let title_words = words(title);
    if query.is_empty() || title_words.is_empty() {
        return "0".to_owned();
    }
    let found = query.iter().filter(|q| title_words.iter().any(|t| t.starts_with(q.as_str()))).count();
    let covered = title_words.iter().filter(|t| query.iter().any(|q| t.starts_with(q.as_str()))).count();
    let weight = |w: &str| decimal::parse(w).unwrap_or_else(|_| BigDecimal::zero());
    let value = weight(CONFIDENCE_QUERY_WEIGHT) * BigDecimal::from(found as u64) / BigDecimal::from(query.len() as u64)
        + weight(CONFIDENCE_TITLE_WEIGHT) * BigDecimal::from(covered as u64)
            / BigDecimal::from(title_words.len() as u64);
    decimal::plain(&value.with_scale_round(CONFIDENCE_DECIMALS, RoundingMode::HalfEven))
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
        query_words(s)
    }

    #[test]
    fn words_are_cut_at_non_alphanumerics() {
        assert_eq!(words("[RFC] Uniswap’s v3 — DIP-11: 智猛"), ["rfc", "uniswap", "s", "v3", "dip", "11", "智猛"]);
        assert_eq!(words("a A a"), ["a"]);
        assert!(words("🚀 -- !").is_empty());
    }

    #[test]
    fn confidence_follows_the_documented_rule() {
        let title = "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks";
        // 2 of 2 query words found; 2 of 12 title words covered: 0.8 + 0.2 × 2/12.
        assert_eq!(confidence(&w("Statute Limitations"), title), "0.8333");
        assert_eq!(confidence(&w("limitations statute"), title), "0.8333");
        assert_eq!(confidence(&w(title), title), "1");
        // Prefixes count: `stat` covers `statute`.
        assert_eq!(confidence(&w("stat limit"), title), "0.8333");
        // Half the query words found (an OR match): 0.4 + 0.2 × 1/12.
        assert_eq!(confidence(&w("statute banana"), title), "0.4167");
        assert_eq!(confidence(&w("banana"), title), "0");
        assert_eq!(confidence(&[], title), "0");
    }

    #[test]
    fn match_expressions_quote_every_word() {
        let q = w("Statute Limitations");
        assert_eq!(match_expression(DbBackend::Sqlite, &q, Mode::All), "\"statute\"* AND \"limitations\"*");
        assert_eq!(match_expression(DbBackend::Postgres, &q, Mode::Any), "'statute':* | 'limitations':*");
    }
}
