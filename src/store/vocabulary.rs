//! How many of each DAO's proposal titles hold each word (`title_words`, migration m0025): what
//! `rules::lookup::Vocabulary` judges a title lookup's words by.
//!
//! The counts are kept by publication, not counted per request: a lookup reads the few words of
//! the title it is about to answer (one indexed read of at most that title's words, plus the
//! DAO's row), whatever the size of the store. Publication recounts only the titles that changed
//! since they were counted (`title_word_sources` holds each proposal's title as counted), so its
//! cost follows the change too; the query finding them is [`STALE`], like `store::facts::stale`.
use std::collections::{BTreeMap, BTreeSet};

use sea_orm::{ConnectionTrait, DbErr, Statement, Value};

use super::placeholders;
use crate::rules::lookup::{Vocabulary, words};

/// Rows per statement: three values each, well under both backends' bind limits.
const ROWS_PER_STATEMENT: usize = 300;

/// Proposals whose title is not counted as it now is (new, retitled, moved to another DAO), and
/// counted titles whose proposal is gone.
const STALE: &str = "SELECT p.id AS proposal_id FROM proposals p
         LEFT JOIN title_word_sources s ON s.proposal_id = p.id
         WHERE s.proposal_id IS NULL OR s.title <> p.title OR s.dao_id <> p.dao_id
     UNION
     SELECT s.proposal_id FROM title_word_sources s
         LEFT JOIN proposals p ON p.id = s.proposal_id
         WHERE p.id IS NULL";

fn statement(db: &impl ConnectionTrait, sql: &str, values: Vec<Value>) -> Statement {
    Statement::from_sql_and_values(db.get_database_backend(), sql, values)
}

/// `(dao_id, title)` of the rows `sql` selects (its `{ids}` filled with `ids`).
async fn titles(db: &impl ConnectionTrait, sql: &str, ids: &[i64]) -> Result<Vec<(String, String)>, DbErr> {
    let sql = sql.replace("{ids}", &placeholders(1, ids.len()));
    let rows = db.query_all_raw(statement(db, &sql, ids.iter().map(|id| Value::from(*id)).collect())).await?;
    rows.iter().map(|r| Ok((r.try_get::<String>("", "dao_id")?, r.try_get::<String>("", "title")?))).collect()
}

/// Counts the titles that changed since they were counted; returns how many. Publication calls
/// it inside its transaction, so the counts change with the titles they count.
pub async fn refresh<C: ConnectionTrait>(db: &C) -> Result<usize, DbErr> {
    let rows = db.query_all_raw(statement(db, STALE, Vec::new())).await?;
    let ids: BTreeSet<i64> = rows.iter().map(|r| r.try_get::<i64>("", "proposal_id")).collect::<Result<_, _>>()?;
    let ids: Vec<i64> = ids.into_iter().collect();
    // (DAO, word) → change in the titles holding it.
    let mut change: BTreeMap<(String, String), i64> = BTreeMap::new();
    for chunk in ids.chunks(ROWS_PER_STATEMENT) {
        let then = "SELECT dao_id, title FROM title_word_sources WHERE proposal_id IN ({ids})";
        for (dao, title) in titles(db, then, chunk).await? {
            for word in words(&title) {
                *change.entry((dao.clone(), word)).or_default() -= 1;
            }
        }
        let now = "SELECT id, dao_id, title FROM proposals WHERE id IN ({ids})";
        let now_rows = db
            .query_all_raw(statement(
                db,
                &now.replace("{ids}", &placeholders(1, chunk.len())),
                chunk.iter().map(|id| Value::from(*id)).collect(),
            ))
            .await?;
        let mut sources: Vec<Value> = Vec::new();
        for r in &now_rows {
            let (id, dao, title): (i64, String, String) =
                (r.try_get("", "id")?, r.try_get("", "dao_id")?, r.try_get("", "title")?);
            for word in words(&title) {
                *change.entry((dao.clone(), word)).or_default() += 1;
            }
            sources.extend([Value::from(id), Value::from(dao), Value::from(title)]);
        }
        let forget = format!("DELETE FROM title_word_sources WHERE proposal_id IN ({})", placeholders(1, chunk.len()));
        db.execute_raw(statement(db, &forget, chunk.iter().map(|id| Value::from(*id)).collect())).await?;
        if !sources.is_empty() {
            let sql =
                format!("INSERT INTO title_word_sources (proposal_id, dao_id, title) VALUES {}", rows_of(&sources));
            db.execute_raw(statement(db, &sql, sources)).await?;
        }
    }
    change.retain(|_, n| *n != 0);
    let changes: Vec<((String, String), i64)> = change.into_iter().collect();
    for chunk in changes.chunks(ROWS_PER_STATEMENT) {
        let values: Vec<Value> = chunk
            .iter()
            .flat_map(|((dao, word), n)| [Value::from(dao.as_str()), Value::from(word.as_str()), Value::from(*n)])
            .collect();
        let sql = format!(
            "INSERT INTO title_words (dao_id, word, titles) VALUES {} \
             ON CONFLICT (dao_id, word) DO UPDATE SET titles = title_words.titles + excluded.titles",
            rows_of(&values)
        );
        db.execute_raw(statement(db, &sql, values)).await?;
        // Only words that lost a title can have none left.
        for (dao, lost) in group_lost(chunk) {
            let mut values = vec![Value::from(dao)];
            values.extend(lost.iter().map(|w| Value::from(*w)));
            let sql = format!(
                "DELETE FROM title_words WHERE dao_id = $1 AND titles <= 0 AND word IN ({})",
                placeholders(2, lost.len())
            );
            db.execute_raw(statement(db, &sql, values)).await?;
        }
    }
    Ok(ids.len())
}

/// `($1, $2, $3), ($4, $5, $6), …` for `values`, three to a row.
fn rows_of(values: &[Value]) -> String {
    (0..values.len() / 3).map(|r| format!("({})", placeholders(3 * r + 1, 3))).collect::<Vec<_>>().join(", ")
}

/// The words of `changes` that lost titles, by DAO.
fn group_lost(changes: &[((String, String), i64)]) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for ((dao, word), n) in changes {
        if *n < 0 {
            out.entry(dao.as_str()).or_default().push(word.as_str());
        }
    }
    out
}

/// How common `words` are among the titles of DAO `dao_id`: its title count (its published
/// summary's proposals), its id, name and ticker with `kind` (the kind of item titled), and the
/// titles holding each of `words`. Two reads by key, bounded by `words`.
pub async fn of_words(
    db: &impl ConnectionTrait,
    dao_id: &str,
    words: &[String],
    kind: &str,
) -> Result<Vocabulary, DbErr> {
    let dao = db
        .query_one_raw(statement(
            db,
            "SELECT d.id, d.name, d.symbol, COALESCE(s.proposals, 0) AS titles FROM daos d
             LEFT JOIN dao_summaries s ON s.dao_id = d.id WHERE d.id = $1",
            vec![dao_id.into()],
        ))
        .await?;
    let (names, titles) = match dao {
        Some(r) => {
            let names: Vec<String> = [r.try_get::<String>("", "id")?, r.try_get::<String>("", "name")?]
                .into_iter()
                .chain(r.try_get::<Option<String>>("", "symbol")?)
                .chain([kind.to_owned()])
                .collect();
            (names, u64::try_from(r.try_get::<i64>("", "titles")?).unwrap_or(0))
        }
        None => (vec![dao_id.to_owned(), kind.to_owned()], 0),
    };
    let mut holding = Vec::new();
    if !words.is_empty() {
        let mut values = vec![Value::from(dao_id)];
        values.extend(words.iter().map(|w| Value::from(w.as_str())));
        let sql = format!(
            "SELECT word, titles FROM title_words WHERE dao_id = $1 AND word IN ({})",
            placeholders(2, words.len())
        );
        for r in db.query_all_raw(statement(db, &sql, values)).await? {
            let held = u64::try_from(r.try_get::<i64>("", "titles")?).unwrap_or(0);
            holding.push((r.try_get::<String>("", "word")?, held));
        }
    }
    Ok(Vocabulary::new(titles, holding, names.iter().map(String::as_str)))
}
