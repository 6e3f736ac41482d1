//! Subscriptions that target (issue 48): a webhook's filters stored typed, row by row, and the
//! indexes that let the fan-out of one feed entry cost what its matching subscriptions cost.
//!
//! Tables and the queries that use them:
//! - `webhook_filters` (`subscription_id`, `dimension`, `value`, `ordinal`), primary key
//!   (`subscription_id`, `dimension`, `value`): a subscription's filters, one row per value of
//!   each dimension (`dao`, `kind`, `proposal`, `voter`; `ordinal` keeps the order they were
//!   given in). Read whole for a subscription (`store::webhooks::Filters`), and probed by the
//!   fan-out for each subscription it reached: does it filter this dimension, and by this value?
//! - `webhook_routes` (`dimension`, `value`, `subscription_id`), primary key in that order:
//!   where the fan-out finds the subscriptions an entry may concern. Each subscription is routed
//!   by the values of its most selective filter (its voters, else its proposals, else its DAOs,
//!   else its kinds; `any` for one without filters), so an entry's lookups by its own voters,
//!   proposal, DAO, kind and `any` reach only subscriptions that filter by one of them;
//!   `ix_webhook_routes_subscription` (`subscription_id`) serves rewriting one subscription's.
//! - `webhook_fanout` (one row): how far the shared fan-out has enqueued the feed
//!   (`push::queue`). Subscriptions following it (`webhook_subscriptions.follows_fanout`) get
//!   their entries from it; the others (enabled again after a pause, or upgraded here) catch up by
//!   themselves first, found through `ix_webhook_subscriptions_behind` (active and not
//!   following: a few rows); a paused one that still follows is found through
//!   `ix_webhook_subscriptions_paused`, and a replay in progress through
//!   `ix_webhook_subscriptions_replaying`. Each partial index holds a few rows however many
//!   subscriptions there are, so no fan-out pass reads every subscription.
//! - `feed_entries.proposal_key` and `ix_feed_proposal_seq` (`proposal_key`, `seq`), and
//!   `feed_entry_voters` (`seq`, `voter`) with `ix_feed_voters_voter_seq` (`voter`, `seq`): what
//!   each entry is about (`store::feed::Subjects`); the fan-out joins an entry's voters by its
//!   sequence, and a stream filtered by proposals or voters reads those indexes from its position.
//!
//! An upgraded store has its comma-separated `dao_ids` and `kinds` moved to filter rows (with
//! their routes) and the two text columns dropped; its subscriptions catch up by themselves from
//! where each was, then follow the fan-out, which starts at the newest entry. Its entries get
//! their subjects from their bodies (an entry whose body this build cannot read keeps none).
//! Columns are added only where missing: a fresh store has them from migrations 14 and 15, which
//! follow the entities.
use sea_orm::{ConnectionTrait, FromQueryResult, Statement, Value};
use sea_orm_migration::prelude::*;

use crate::store::feed::{self, FeedBody};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS webhook_filters (
        subscription_id BIGINT NOT NULL,
        dimension TEXT NOT NULL,
        value TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (subscription_id, dimension, value)
    )",
    "CREATE TABLE IF NOT EXISTS webhook_routes (
        dimension TEXT NOT NULL,
        value TEXT NOT NULL,
        subscription_id BIGINT NOT NULL,
        PRIMARY KEY (dimension, value, subscription_id)
    )",
    "CREATE INDEX IF NOT EXISTS ix_webhook_routes_subscription ON webhook_routes (subscription_id)",
    "CREATE TABLE IF NOT EXISTS webhook_fanout (id INTEGER NOT NULL PRIMARY KEY, through BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS feed_entry_voters (
        seq BIGINT NOT NULL,
        voter TEXT NOT NULL,
        PRIMARY KEY (seq, voter)
    )",
    "CREATE INDEX IF NOT EXISTS ix_feed_voters_voter_seq ON feed_entry_voters (voter, seq)",
    "CREATE INDEX IF NOT EXISTS ix_feed_proposal_seq ON feed_entries (proposal_key, seq)",
    // Partial indexes, the same statement on SQLite and PostgreSQL; the queries name the same
    // literal terms, so that SQLite can use them.
    "CREATE INDEX IF NOT EXISTS ix_webhook_subscriptions_behind ON webhook_subscriptions (id) \
     WHERE follows_fanout = FALSE AND enabled = TRUE",
    "CREATE INDEX IF NOT EXISTS ix_webhook_subscriptions_paused ON webhook_subscriptions (id) \
     WHERE follows_fanout = TRUE AND enabled = FALSE",
    "CREATE INDEX IF NOT EXISTS ix_webhook_subscriptions_replaying ON webhook_subscriptions (id) \
     WHERE replay_from IS NOT NULL",
];

/// Entries whose subjects are backfilled at a time.
const BACKFILL_PAGE: i64 = 1_000;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if !manager.has_column("webhook_subscriptions", "follows_fanout").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("webhook_subscriptions"))
                        .add_column(ColumnDef::new(Alias::new("follows_fanout")).boolean().not_null().default(false))
                        .to_owned(),
                )
                .await?;
        }
        if !manager.has_column("feed_entries", "proposal_key").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("feed_entries"))
                        .add_column(ColumnDef::new(Alias::new("proposal_key")).text().null())
                        .to_owned(),
                )
                .await?;
        }
        for sql in TABLES {
            db.execute_unprepared(sql).await?;
        }
        // The shared fan-out starts at the newest entry: what came before is each subscription's
        // to catch up from where it was.
        db.execute_unprepared(
            "INSERT INTO webhook_fanout (id, through) SELECT 1, COALESCE(MAX(seq), 0) FROM feed_entries \
             WHERE NOT EXISTS (SELECT 1 FROM webhook_fanout)",
        )
        .await?;
        if manager.has_column("webhook_subscriptions", "dao_ids").await? {
            move_text_filters(db).await?;
            for column in ["dao_ids", "kinds"] {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new("webhook_subscriptions"))
                            .drop_column(Alias::new(column))
                            .to_owned(),
                    )
                    .await?;
            }
        }
        backfill_subjects(db).await
    }
}

/// Moves each subscription's comma-separated `dao_ids` and `kinds` to filter rows, and routes it
/// by its DAOs, else its kinds, else as a subscription to every entry (the rule
/// `store::webhooks` applies, for the two dimensions these stores knew).
async fn move_text_filters(db: &SchemaManagerConnection<'_>) -> Result<(), DbErr> {
    #[derive(FromQueryResult)]
    struct Text {
        id: i64,
        dao_ids: String,
        kinds: String,
    }
    let backend = db.get_database_backend();
    let stmt = Statement::from_string(backend, "SELECT id, dao_ids, kinds FROM webhook_subscriptions ORDER BY id");
    for s in Text::find_by_statement(stmt).all(db).await? {
        let split = |text: &str| {
            let mut values: Vec<String> = Vec::new();
            for value in text.split(',').filter(|v| !v.is_empty()) {
                if !values.iter().any(|v| v == value) {
                    values.push(value.to_owned());
                }
            }
            values
        };
        let (daos, kinds) = (split(&s.dao_ids), split(&s.kinds));
        for (dimension, values) in [("dao", &daos), ("kind", &kinds)] {
            for (ordinal, value) in values.iter().enumerate() {
                let sql = "INSERT INTO webhook_filters (subscription_id, dimension, value, ordinal) \
                           VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
                let values: Vec<Value> =
                    vec![s.id.into(), dimension.into(), value.as_str().into(), (ordinal as i32).into()];
                db.execute_raw(Statement::from_sql_and_values(backend, sql, values)).await?;
            }
        }
        let routes: Vec<(&str, &str)> = if !daos.is_empty() {
            daos.iter().map(|d| ("dao", d.as_str())).collect()
        } else if !kinds.is_empty() {
            kinds.iter().map(|k| ("kind", k.as_str())).collect()
        } else {
            vec![("any", "")]
        };
        for (dimension, value) in routes {
            let sql = "INSERT INTO webhook_routes (dimension, value, subscription_id) VALUES ($1, $2, $3) \
                       ON CONFLICT DO NOTHING";
            let values: Vec<Value> = vec![dimension.into(), value.into(), s.id.into()];
            db.execute_raw(Statement::from_sql_and_values(backend, sql, values)).await?;
        }
    }
    Ok(())
}

/// Gives every entry kept its subjects, read from its body, a page at a time.
async fn backfill_subjects(db: &SchemaManagerConnection<'_>) -> Result<(), DbErr> {
    #[derive(FromQueryResult)]
    struct Entry {
        seq: i64,
        body: String,
    }
    let backend = db.get_database_backend();
    let mut after = 0i64;
    loop {
        let stmt = Statement::from_sql_and_values(
            backend,
            "SELECT seq, body FROM feed_entries WHERE seq > $1 ORDER BY seq LIMIT $2",
            [after.into(), BACKFILL_PAGE.into()],
        );
        let page = Entry::find_by_statement(stmt).all(db).await?;
        let Some(last) = page.last().map(|e| e.seq) else { return Ok(()) };
        let mut voters: Vec<(i64, String)> = Vec::new();
        for entry in &page {
            // A body this build cannot read (a later build's kind) keeps no subjects: its
            // entry matches only subscriptions that filter neither proposals nor voters.
            let Ok(body) = serde_json::from_str::<FeedBody>(&entry.body) else { continue };
            let subjects = body.subjects();
            if let Some(key) = subjects.proposal_key {
                let sql = "UPDATE feed_entries SET proposal_key = $1 WHERE seq = $2";
                db.execute_raw(Statement::from_sql_and_values(backend, sql, [key.into(), entry.seq.into()])).await?;
            }
            voters.extend(subjects.voters.into_iter().map(|v| (entry.seq, v)));
        }
        let pairs: Vec<(i64, &str)> = voters.iter().map(|(seq, v)| (*seq, v.as_str())).collect();
        feed::write_voters(db, &pairs).await?;
        if (page.len() as i64) < BACKFILL_PAGE {
            return Ok(());
        }
        after = last;
    }
}
