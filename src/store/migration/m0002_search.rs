//! Full-text indexes on proposal and forum-topic titles, for `GET /v1/proposals/lookup?title=`.
//!
//! Both backends index the same words: a title is cut at every character that is not a letter
//! or a digit, and the pieces are lowercased (no stemming, no stop words, no accent folding), so
//! a query finds the same rows on either store (`store::search`).
//!
//! - SQLite: FTS5 external-content tables over `proposals.title` and `forum_topics.title`
//!   (tokenizer `unicode61`, accents kept), kept in sync by triggers, since every writer goes
//!   through sea-orm inserts and upserts; rows already present are indexed by a `rebuild`.
//! - PostgreSQL: GIN expression indexes on `to_tsvector('simple', <title cut at non-alphanumerics>)`.
//!   The expression must stay textually identical to the one `store::search` queries with.
use sea_orm::DbBackend;
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// (content table, FTS table, PostgreSQL index name).
const TABLES: &[(&str, &str, &str)] = &[
    ("proposals", "proposals_fts", "ix_proposals_title_fts"),
    ("forum_topics", "forum_topics_fts", "ix_topics_title_fts"),
];

fn sqlite_up(table: &str, fts: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE VIRTUAL TABLE {fts} USING fts5(title, content='{table}', content_rowid='id', \
             tokenize='unicode61 remove_diacritics 0')"
        ),
        format!(
            "CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN \
             INSERT INTO {fts}(rowid, title) VALUES (new.id, new.title); END"
        ),
        format!(
            "CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN \
             INSERT INTO {fts}({fts}, rowid, title) VALUES ('delete', old.id, old.title); END"
        ),
        format!(
            "CREATE TRIGGER {fts}_au AFTER UPDATE OF title ON {table} BEGIN \
             INSERT INTO {fts}({fts}, rowid, title) VALUES ('delete', old.id, old.title); \
             INSERT INTO {fts}(rowid, title) VALUES (new.id, new.title); END"
        ),
        format!("INSERT INTO {fts}({fts}) VALUES ('rebuild')"),
    ]
}

fn sqlite_down(fts: &str) -> Vec<String> {
    vec![
        format!("DROP TRIGGER IF EXISTS {fts}_ai"),
        format!("DROP TRIGGER IF EXISTS {fts}_ad"),
        format!("DROP TRIGGER IF EXISTS {fts}_au"),
        format!("DROP TABLE IF EXISTS {fts}"),
    ]
}

fn postgres_up(table: &str, index: &str) -> Vec<String> {
    vec![format!(
        "CREATE INDEX IF NOT EXISTS {index} ON {table} \
         USING GIN (to_tsvector('simple', regexp_replace(title, '[^[:alnum:]]+', ' ', 'g')))"
    )]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let statements: Vec<String> = TABLES
            .iter()
            .flat_map(|(table, fts, index)| match backend {
                DbBackend::Sqlite => sqlite_up(table, fts),
                _ => postgres_up(table, index),
            })
            .collect();
        run(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let statements: Vec<String> = TABLES
            .iter()
            .flat_map(|(_, fts, index)| match backend {
                DbBackend::Sqlite => sqlite_down(fts),
                _ => vec![format!("DROP INDEX IF EXISTS {index}")],
            })
            .collect();
        run(manager, statements).await
    }
}

async fn run(manager: &SchemaManager<'_>, statements: Vec<String>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    for sql in statements {
        db.execute_unprepared(&sql).await?;
    }
    Ok(())
}
