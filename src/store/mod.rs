//! The data layer: sea-orm entities, migrations, and the read queries grouped by resource.
//! Nothing here knows about HTTP.
pub mod activity;
pub mod address;
pub mod apply;
pub mod brief;
pub mod contracts;
pub mod daos;
pub mod entities;
pub mod events;
pub mod evidence;
pub mod executions;
pub mod exports;
pub mod facts;
pub mod failures;
pub mod feed;
pub mod freshness;
pub mod governor;
pub mod items;
pub mod keys;
pub mod keysets;
pub mod migration;
pub mod moments;
pub mod nodes;
pub mod payments;
pub mod plans;
pub mod primary;
pub mod proposals;
pub mod publish;
pub mod rates;
pub mod repack;
mod rules_inputs;
pub mod search;
pub mod settings;
pub mod signals;
pub mod sort_keys;
pub mod sqlite_reader;
pub mod staging;
pub mod stored;
pub mod timed;
pub mod tokens;
pub mod topics;
pub mod upsert;
pub mod vocabulary;
pub mod vote_arms;
pub mod voters;
pub mod webhooks;

use std::time::Duration;

use sea_orm::{ConnectOptions, Database, DatabaseConnection, DbBackend};
use sea_orm_migration::MigratorTrait;

pub use sea_orm::DbErr;

/// How long a statement waits for one of the pool's connections (and a connection for its
/// server) before it fails as "the store is unreachable".
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the store named by `url`, creating the SQLite file (and its folder) when missing,
/// and applies pending migrations. A PostgreSQL URL naming several hosts opens the one that is
/// the primary, and follows the primary when another host takes over (`primary`).
pub async fn connect(url: &str) -> anyhow::Result<DatabaseConnection> {
    let url = prepare_url(url)?;
    let primaries = primary::Primaries::parse(&url)?;
    let url = match &primaries {
        Some(primaries) => primaries.resolve().await?,
        None => url,
    };
    let mut options = ConnectOptions::new(url.clone());
    options.connect_timeout(ACQUIRE_TIMEOUT).acquire_timeout(ACQUIRE_TIMEOUT).sqlx_logging(false);
    if url.starts_with("sqlite:") {
        // Before SQLite's first connection, or SQLite keeps its own allocator (0 is SQLITE_OK).
        let configured = crate::allocator::sqlite_allocator();
        if configured != 0 {
            tracing::warn!(
                code = configured,
                "SQLite keeps its own allocator: it was initialised before the store opened"
            );
        }
        // WAL lets readers run while the importer writes; a busy timeout instead of SQLITE_BUSY.
        // FULL syncs each commit: a settled payment must survive a power cut, not only a crash
        // (in WAL mode that is one fsync per transaction, and the API's only writes are payments).
        options.max_connections(8).map_sqlx_sqlite_opts(|o| {
            o.journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sea_orm::sqlx::sqlite::SqliteSynchronous::Full)
                .busy_timeout(sqlite_reader::BUSY_TIMEOUT)
                .foreign_keys(true)
        });
    } else {
        options.max_connections(16);
    }
    if let Some(primaries) = &primaries {
        primaries.configure(&mut options);
    }
    let db = Database::connect(options).await?;
    if let Some(primaries) = primaries {
        primaries.watch(&db);
    }
    migration::Migrator::up(&db, None).await?;
    Ok(db)
}

/// `sqlite://path` → make sure the folder exists and ask SQLite to create the file.
fn prepare_url(url: &str) -> anyhow::Result<String> {
    let Some(rest) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) else {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(url.to_owned());
        }
        anyhow::bail!("DATABASE_URL must start with sqlite:// or postgres:// (got {url:?})");
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path != ":memory:"
        && let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)?;
    }
    let mut query: Vec<&str> = query.split('&').filter(|q| !q.is_empty()).collect();
    if !query.iter().any(|q| q.starts_with("mode=")) {
        query.push("mode=rwc");
    }
    Ok(format!("sqlite://{path}?{}", query.join("&")))
}

/// Keyset condition for a page ordered by `(time desc, id desc)` resuming after `(t, id)`:
/// `time <= t AND (time < t OR (time = t AND id < id))`. The leading `time <= t` is implied by
/// the rest but is what lets both planners seek into the `(…, -time, -id)` index instead of
/// scanning it from the top (measured: deep pages otherwise cost 3× to 20× the first).
pub fn after_desc<C: sea_orm::ColumnTrait>(time: C, id: C, (t, last_id): (i64, i64)) -> sea_orm::Condition {
    use sea_orm::Condition;
    Condition::all()
        .add(time.lte(t))
        .add(Condition::any().add(time.lt(t)).add(Condition::all().add(time.eq(t)).add(id.lt(last_id))))
}

/// Keyset condition for `(sort_key desc, tiebreak asc)` resuming after `(key, tiebreak)`, with
/// the same seekable leading bound as [`after_desc`].
pub fn after_desc_asc<C: sea_orm::ColumnTrait, T: Into<sea_orm::Value>>(
    key: C,
    tiebreak: C,
    (k, last): (String, T),
) -> sea_orm::Condition {
    use sea_orm::Condition;
    Condition::all()
        .add(key.lte(k.clone()))
        .add(Condition::any().add(key.lt(k.clone())).add(Condition::all().add(key.eq(k)).add(tiebreak.gt(last))))
}

/// Whether the store answers a trivial query (readiness).
pub async fn ping(db: &DatabaseConnection) -> bool {
    db.ping().await.is_ok()
}

pub fn backend_name(db: &DatabaseConnection) -> &'static str {
    match db.get_database_backend() {
        DbBackend::Sqlite => "sqlite",
        DbBackend::Postgres => "postgres",
        _ => "other",
    }
}

/// The store's connection pool: `(open, idle, max)` connections.
pub fn pool_use(db: &DatabaseConnection) -> (u32, u32, u32) {
    match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            (pool.size(), u32::try_from(pool.num_idle()).unwrap_or(u32::MAX), pool.options().get_max_connections())
        }
        _ => {
            let pool = db.get_sqlite_connection_pool();
            (pool.size(), u32::try_from(pool.num_idle()).unwrap_or(u32::MAX), pool.options().get_max_connections())
        }
    }
}

/// `$first, …, $(first + n - 1)`: the bind parameters of an `IN (...)` list or a row of values,
/// numbered as both backends bind them.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// `CASE {subject} WHEN $i THEN $j … END` over `pairs`, their values bound after those already in
/// `values`: one statement sets a different value per row (a fold publication computed).
pub(crate) fn case_of(
    subject: &str,
    values: &mut Vec<sea_orm::Value>,
    pairs: impl IntoIterator<Item = (sea_orm::Value, sea_orm::Value)>,
) -> String {
    let mut sql = format!("CASE {subject}");
    for (when, then) in pairs {
        values.push(when);
        values.push(then);
        sql += &format!(" WHEN ${} THEN ${}", values.len() - 1, values.len());
    }
    sql + " END"
}
