//! Trigram indexes on proposal and forum-topic titles, so `GET /v1/proposals/lookup?title=`
//! finds titles a query names with typos (`store::search::proposals_by_trigrams`).
//!
//! Both backends answer the same question: which titles contain a given three-character piece,
//! letter case aside.
//!
//! - SQLite: FTS5 external-content tables over `proposals.title` and `forum_topics.title` with
//!   the `trigram` tokenizer (SQLite 3.34 and later; the bundled one is newer), kept in sync by
//!   triggers like m0002's word indexes, so every insert, upsert and delete updates them in the
//!   writer's transaction; rows already present are indexed by a `rebuild`.
//! - PostgreSQL: the `pg_trgm` extension (trusted since PostgreSQL 13: a role that may create in
//!   the database may install it) and GIN indexes on `lower(title) gin_trgm_ops`, which serve
//!   `lower(title) LIKE '%abc%'`. The expression must stay textually identical to the one
//!   `store::search` queries with.
use sea_orm::DbBackend;
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// (content table, FTS table, PostgreSQL index name).
const TABLES: &[(&str, &str, &str)] = &[
    ("proposals", "proposals_trgm", "ix_proposals_title_trgm"),
    ("forum_topics", "forum_topics_trgm", "ix_topics_title_trgm"),
];

fn sqlite_up(table: &str, fts: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE VIRTUAL TABLE {fts} USING fts5(title, content='{table}', content_rowid='id', \
             tokenize='trigram case_sensitive 0')"
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
    vec![format!("CREATE INDEX IF NOT EXISTS {index} ON {table} USING GIN (lower(title) gin_trgm_ops)")]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let mut statements: Vec<String> = Vec::new();
        if backend == DbBackend::Postgres {
            statements.push("CREATE EXTENSION IF NOT EXISTS pg_trgm".to_owned());
        }
        statements.extend(TABLES.iter().flat_map(|(table, fts, index)| match backend {
            DbBackend::Sqlite => sqlite_up(table, fts),
            _ => postgres_up(table, index),
        }));
        run(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        // The extension stays: other objects of the database may use it.
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
