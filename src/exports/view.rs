//! One consistent view of the store, which an export reads: a read-only transaction (repeatable
//! read on PostgreSQL; on SQLite a read transaction, which in WAL mode sees one snapshot from its
//! first read on), so a publication committing meanwhile is not seen half.
//!
//! The votes, the table that grows to millions of rows, can be read apart from the transaction,
//! on a connection of their own that sees exactly what it sees ([`Snapshot`]):
//! - On PostgreSQL the transaction's snapshot is exported (`pg_export_snapshot`, which standbys
//!   allow since PostgreSQL 10) and imported by a new connection (`SET TRANSACTION SNAPSHOT`), so
//!   the votes come by `COPY … TO STDOUT (FORMAT binary)`. sea-orm's transaction exposes no sqlx
//!   connection to copy out of, and the connection is not the pool's: an export never waits on
//!   the pool for a second connection while it holds one. (Builds are as many as the pool lends
//!   transactions to, so their `COPY` connections are at most as many again.)
//! - On SQLite, whose snapshots cannot be exported (the bundled build has no
//!   `SQLITE_ENABLE_SNAPSHOT`), a view asked for it opens a rusqlite connection beside the
//!   transaction and proves both began on the same snapshot ([`same_snapshot`]), so the votes
//!   are read on one blocking thread: sqlx-sqlite hands every row from its connection's thread to
//!   the reader's, which bounded that export to a seventh of the Parquet writer's speed.
use std::sync::{Arc, Mutex};

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, IsolationLevel, Statement,
    TransactionTrait,
};

/// Tries at opening a SQLite view's own connection on the view's snapshot before the view does
/// without it: each try fails only when a write commits in the few statements between its two
/// reads of the version, so eight in a row mean a store written without pause.
const SQLITE_TRIES: usize = 8;

/// An open view: read through `txn`; [`View::snapshot`] lends what a reader of a connection of its
/// own needs.
pub struct View {
    pub txn: DatabaseTransaction,
    apart: Apart,
}

/// What a view holds for a reader apart from its transaction.
enum Apart {
    None,
    /// The server's connect options (a snapshot is exported on demand).
    Postgres(Box<PgConnectOptions>),
    /// A connection in a read transaction on the view's snapshot.
    Sqlite(SqliteReader),
}

/// A SQLite view's own connection; the `Option` is `None` once [`View::end`] took it.
struct SqliteReader(Option<Arc<Mutex<rusqlite::Connection>>>);

/// A view's snapshot, for a reader on a connection of its own.
#[derive(Clone, Copy)]
pub enum Snapshot<'v> {
    Postgres(PgSnapshot<'v>),
    /// A rusqlite connection already reading the view's snapshot, to be used on a blocking thread.
    Sqlite(&'v Arc<Mutex<rusqlite::Connection>>),
}

/// A PostgreSQL view's snapshot, exported on demand ([`PgSnapshot::connect`]): only a reader that
/// opens a connection of its own (the votes' `COPY`) pays for the round trip and the snapshot
/// file on the server.
#[derive(Clone, Copy)]
pub struct PgSnapshot<'v> {
    txn: &'v DatabaseTransaction,
    options: &'v PgConnectOptions,
}

impl View {
    /// Opens a view of `db`. `apart`: whether a reader will read on a connection of its own (the
    /// votes); on SQLite that connection is opened now, since its snapshot can be matched with
    /// the transaction's only as both begin. PostgreSQL exports its snapshot on demand either way.
    pub async fn begin(db: &DatabaseConnection, apart: bool) -> anyhow::Result<Self> {
        match db.get_database_backend() {
            DbBackend::Postgres => {
                let txn =
                    db.begin_with_config(Some(IsolationLevel::RepeatableRead), Some(AccessMode::ReadOnly)).await?;
                let options = (*db.get_postgres_connection_pool().connect_options()).clone();
                Ok(Self { txn, apart: Apart::Postgres(Box::new(options)) })
            }
            DbBackend::Sqlite if apart => Self::begin_sqlite_apart(db).await,
            _ => Ok(Self { txn: db.begin().await?, apart: Apart::None }),
        }
    }

    /// A SQLite view with a rusqlite connection on its snapshot; without one (reading through
    /// the transaction alone) for a store of no file of its own (in memory), or when writes
    /// never paused for [`SQLITE_TRIES`] tries.
    async fn begin_sqlite_apart(db: &DatabaseConnection) -> anyhow::Result<Self> {
        let path = db.get_sqlite_connection_pool().connect_options().get_filename().to_owned();
        if !path.is_file() {
            return Ok(Self { txn: db.begin().await?, apart: Apart::None });
        }
        for _ in 0..SQLITE_TRIES {
            let path = path.clone();
            let (conn, before) = tokio::task::spawn_blocking(move || -> rusqlite::Result<_> {
                let conn = crate::store::sqlite_reader::open_reader(&path)?;
                let before = data_version(&conn)?;
                Ok((conn, before))
            })
            .await??;
            let txn = db.begin().await?;
            // The transaction's first read fixes its snapshot, between the two versions.
            txn.query_one_raw(Statement::from_string(DbBackend::Sqlite, FIRST_READ)).await?;
            let (conn, same) = tokio::task::spawn_blocking(move || -> rusqlite::Result<_> {
                let same = same_snapshot(&conn, before)?;
                Ok((conn, same))
            })
            .await??;
            if same {
                let reader = SqliteReader(Some(Arc::new(Mutex::new(conn))));
                return Ok(Self { txn, apart: Apart::Sqlite(reader) });
            }
            txn.rollback().await?;
            close_apart(conn).await;
        }
        tracing::warn!("export view: the store was written throughout; the votes are read through its transaction");
        Ok(Self { txn: db.begin().await?, apart: Apart::None })
    }

    /// The view's snapshot, for a reader on a connection of its own: on PostgreSQL, and on a
    /// SQLite view begun `apart`.
    pub fn snapshot(&self) -> Option<Snapshot<'_>> {
        match &self.apart {
            Apart::None => None,
            Apart::Postgres(options) => {
                Some(Snapshot::Postgres(PgSnapshot { txn: &self.txn, options: options.as_ref() }))
            }
            Apart::Sqlite(reader) => reader.0.as_ref().map(Snapshot::Sqlite),
        }
    }

    /// Ends the view (it wrote nothing).
    pub async fn end(mut self) -> anyhow::Result<()> {
        // A reader still holding the connection (cancelled, its thread not yet done) closes it
        // as it lets go.
        if let Apart::Sqlite(reader) = &mut self.apart
            && let Some(conn) = reader.0.take()
            && let Some(conn) = Arc::into_inner(conn).and_then(|m| m.into_inner().ok())
        {
            close_apart(conn).await;
        }
        Ok(self.txn.commit().await?)
    }
}

impl Drop for SqliteReader {
    /// A view dropped without [`View::end`] (an error on the way) closes its own SQLite
    /// connection on a blocking thread too: closing may checkpoint the store's log.
    fn drop(&mut self) {
        if let Some(conn) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn_blocking(move || drop(conn));
        }
    }
}

/// A statement that reads the store's file, so begins a SQLite read transaction's snapshot.
const FIRST_READ: &str = "SELECT count(*) FROM sqlite_schema";

/// The store's version as `conn` last saw it: it changes when any other connection commits
/// (SQLite's `PRAGMA data_version`), and is read afresh as a read transaction begins.
fn data_version(conn: &rusqlite::Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

/// Begins `conn`'s read transaction and tells whether no other connection committed since
/// `conn` read `before`: then a transaction whose first read came in between sees the very
/// snapshot `conn` now reads. Otherwise the transaction is left open, for the caller to close.
pub fn same_snapshot(conn: &rusqlite::Connection, before: i64) -> rusqlite::Result<bool> {
    conn.execute_batch("BEGIN")?;
    conn.query_row(FIRST_READ, [], |_| Ok(()))?;
    Ok(data_version(conn)? == before)
}

/// Closes a view's own SQLite connection (ending its read transaction) off the async runtime:
/// the store's last connection to close checkpoints its log.
async fn close_apart(conn: rusqlite::Connection) {
    let closed = tokio::task::spawn_blocking(move || conn.close().map_err(|(_, e)| anyhow::Error::from(e))).await;
    if let Err(e) = closed.map_err(anyhow::Error::from).and_then(|closed| closed) {
        tracing::warn!(error = %e, "export view: closing its own SQLite connection");
    }
}

impl PgSnapshot<'_> {
    /// A new connection, to the server the view reads, whose open transaction sees what the
    /// view's transaction sees. The caller reads, then closes it (nothing was written).
    ///
    /// A repeatable-read transaction's snapshot is fixed by its first statement, and
    /// `pg_export_snapshot` exports that one, so exporting it here, after the view has read,
    /// changes nothing the view sees. The export lasts as long as the view's transaction.
    pub async fn connect(&self) -> anyhow::Result<PgConnection> {
        let row = self
            .txn
            .query_one_raw(Statement::from_string(DbBackend::Postgres, "SELECT pg_export_snapshot() AS id"))
            .await?
            .ok_or_else(|| anyhow::anyhow!("pg_export_snapshot returned no row"))?;
        let id: String = row.try_get("", "id")?;
        // It is written into a statement (`SET TRANSACTION` takes no parameter): hex and dashes.
        anyhow::ensure!(
            !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'),
            "a snapshot id of unexpected form: {id:?}"
        );
        let mut conn = PgConnection::connect_with(self.options).await?;
        sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").execute(&mut conn).await?;
        let import = sqlx::AssertSqlSafe(format!("SET TRANSACTION SNAPSHOT '{id}'"));
        sqlx::raw_sql(import).execute(&mut conn).await?;
        Ok(conn)
    }
}
