//! One consistent view of the store, which an export reads: a read-only transaction (repeatable
//! read on PostgreSQL; on SQLite a read transaction, which in WAL mode sees one snapshot from its
//! first read on), so a publication committing meanwhile is not seen half.
//!
//! On PostgreSQL the transaction's snapshot can also be exported (`pg_export_snapshot`, which
//! standbys allow since PostgreSQL 10), so the votes, the table that grows to millions of rows, can be
//! read by `COPY … TO STDOUT (FORMAT binary)` on a connection of their own that sees exactly what
//! the transaction sees (`SET TRANSACTION SNAPSHOT`). sea-orm's transaction exposes no sqlx
//! connection to copy out of, and the connection is not the pool's: an export never waits on
//! the pool for a second connection while it holds one. (Builds are as many as the pool lends
//! transactions to, so their `COPY` connections are at most as many again.)
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, IsolationLevel, Statement,
    TransactionTrait,
};

/// An open view: read through `txn`; on PostgreSQL, [`View::snapshot`] exports its snapshot to
/// a connection of its own.
pub struct View {
    pub txn: DatabaseTransaction,
    /// The server's connect options, on PostgreSQL (the only backend that can export a snapshot).
    postgres: Option<PgConnectOptions>,
}

/// A PostgreSQL view's snapshot, exported on demand: only a reader that opens a connection of its
/// own (the votes' `COPY`) pays for the round trip and the snapshot file on the server.
#[derive(Clone, Copy)]
pub struct Snapshot<'v> {
    txn: &'v DatabaseTransaction,
    options: &'v PgConnectOptions,
}

impl View {
    /// Opens a view of `db`.
    pub async fn begin(db: &DatabaseConnection) -> anyhow::Result<Self> {
        if db.get_database_backend() != DbBackend::Postgres {
            return Ok(Self { txn: db.begin().await?, postgres: None });
        }
        let txn = db.begin_with_config(Some(IsolationLevel::RepeatableRead), Some(AccessMode::ReadOnly)).await?;
        let options = (*db.get_postgres_connection_pool().connect_options()).clone();
        Ok(Self { txn, postgres: Some(options) })
    }

    /// The view's snapshot, on PostgreSQL.
    pub fn snapshot(&self) -> Option<Snapshot<'_>> {
        self.postgres.as_ref().map(|options| Snapshot { txn: &self.txn, options })
    }

    /// Ends the view (it wrote nothing).
    pub async fn end(self) -> anyhow::Result<()> {
        Ok(self.txn.commit().await?)
    }
}

impl Snapshot<'_> {
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
