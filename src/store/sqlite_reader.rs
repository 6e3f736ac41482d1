//! Reads of a SQLite store on rusqlite connections of their own, each statement run whole on a
//! blocking thread and its rows handed back at once.
//!
//! sqlx-sqlite runs every statement on its connection's own thread and hands each row to the
//! request's task through a channel, one wake per row: under load, the context switches of a
//! 100-row page took more of the server's time than SQLite did (docs/benchmarks.md, "The votes
//! page on connections of its own"). A statement read here costs one hand-off to a blocking
//! thread and one back. Served data only: the statement is one read, which in WAL mode sees one
//! committed snapshot, as a statement of the pool's does; writes stay on the pool.
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbBackend, DbErr, RuntimeErr, Statement, Values};
use tokio::sync::Semaphore;

/// Connections, so statements at once. Each statement here is one bounded page, run without a
/// wait on a 2-core machine; each connection and its thread keep their own caches (a page cache,
/// an allocator heap), so more would add resident memory, not pages served.
pub const CONNECTIONS: usize = 4;

/// Prepared statements kept per connection: a list's statement differs by its shape (filters,
/// order, a first page or a cursor's), and every shape of the lists read here fits.
const STATEMENTS_KEPT: usize = 64;

/// How long a statement waits for a lock before it fails: the pool's busy timeout.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A value type read from a row of a statement run here.
pub trait FromSqliteRow: Sized + Send + 'static {
    /// The columns read, by name: [`FromSqliteRow::from_row`] gets their positions in this order.
    fn columns() -> Vec<&'static str>;

    /// The value of `row`, whose column `columns()[i]` is at `at[i]`.
    fn from_row(row: &rusqlite::Row<'_>, at: &[usize]) -> rusqlite::Result<Self>;
}

/// The store's file, read on up to [`CONNECTIONS`] connections opened as needed and kept.
pub struct SqliteReader {
    path: PathBuf,
    idle: Arc<Mutex<Vec<rusqlite::Connection>>>,
    permits: Arc<Semaphore>,
}

impl SqliteReader {
    /// A reader of `db`'s file; none for PostgreSQL, or for a SQLite store of no file of its own
    /// (in memory), which other connections cannot open.
    pub fn of(db: &DatabaseConnection) -> Option<Arc<Self>> {
        if db.get_database_backend() != DbBackend::Sqlite {
            return None;
        }
        let path = db.get_sqlite_connection_pool().connect_options().get_filename().to_owned();
        path.is_file().then(|| {
            Arc::new(Self {
                path,
                idle: Arc::new(Mutex::new(Vec::with_capacity(CONNECTIONS))),
                permits: Arc::new(Semaphore::new(CONNECTIONS)),
            })
        })
    }

    /// Every row of `statement` (a SQLite statement, bounded by its `LIMIT`) as a `T`.
    pub async fn all<T: FromSqliteRow>(&self, statement: Statement) -> Result<Vec<T>, DbErr> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|e| failed(&e))?;
        let (path, idle) = (self.path.clone(), self.idle.clone());
        let read = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match taken {
                Some(conn) => conn,
                None => open_reader(&path).map_err(|e| failed(&e))?,
            };
            let rows = run::<T>(&conn, &statement);
            // A statement's failure leaves its connection usable; only a panic drops it.
            idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            rows
        });
        read.await.map_err(|e| failed(&e))?
    }
}

impl Drop for SqliteReader {
    /// Closes the connections off the async runtime: the store's last connection to close
    /// checkpoints its log, which writes and syncs the file.
    fn drop(&mut self) {
        let conns = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !conns.is_empty() => drop(runtime.spawn_blocking(move || drop(conns))),
            _ => drop(conns),
        }
    }
}

/// `statement`'s rows on `conn`, its prepared form kept for the next time.
fn run<T: FromSqliteRow>(conn: &rusqlite::Connection, statement: &Statement) -> Result<Vec<T>, DbErr> {
    let values = sqlite_values(&statement.values).map_err(|e| failed(&e))?;
    let mut prepared = conn.prepare_cached(&statement.sql).map_err(|e| failed(&e))?;
    let at = T::columns().into_iter().map(|c| prepared.column_index(c)).collect::<rusqlite::Result<Vec<_>>>();
    let at = at.map_err(|e| failed(&e))?;
    let rows = prepared.query_map(rusqlite::params_from_iter(values), |row| T::from_row(row, &at));
    rows.and_then(|rows| rows.collect()).map_err(|e| failed(&e))
}

/// A failed read, as the pool's reads fail: a query error.
fn failed(e: &dyn std::fmt::Display) -> DbErr {
    DbErr::Query(RuntimeErr::Internal(format!("SQLite reader: {e}")))
}

/// A connection of its own to the SQLite store at `path`, as the pool's reads (WAL, the busy
/// timeout), that refuses to write.
pub fn open_reader(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    Ok(conn)
}

/// A statement's values as rusqlite parameters: the statements read here bind integers, text
/// and bytes (a voter's address) only; any other value fails the read rather than binding
/// something else.
pub fn sqlite_values(values: &Option<Values>) -> Result<Vec<rusqlite::types::Value>, String> {
    use rusqlite::types::Value as Sql;
    use sea_orm::Value;
    values
        .iter()
        .flat_map(|v| v.iter())
        .map(|v| match v {
            Value::BigInt(Some(n)) => Ok(Sql::Integer(*n)),
            Value::Int(Some(n)) => Ok(Sql::Integer(i64::from(*n))),
            Value::BigUnsigned(Some(n)) => i64::try_from(*n).map(Sql::Integer).map_err(|e| e.to_string()),
            Value::Unsigned(Some(n)) => Ok(Sql::Integer(i64::from(*n))),
            Value::String(Some(s)) => Ok(Sql::Text(s.to_string())),
            Value::Bytes(Some(b)) => Ok(Sql::Blob(b.to_vec())),
            other => Err(format!("no SQLite parameter is bound for {other:?}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value as Sql;
    use sea_orm::Value;

    #[test]
    fn values_bind_as_sqlite_parameters_or_fail() {
        let values = Values(vec![
            Value::BigInt(Some(-7)),
            Value::Int(Some(3)),
            Value::BigUnsigned(Some(101)),
            Value::String(Some("1".into())),
            Value::Bytes(Some(vec![0xab, 0x01])),
        ]);
        assert_eq!(
            sqlite_values(&Some(values)).unwrap(),
            vec![Sql::Integer(-7), Sql::Integer(3), Sql::Integer(101), Sql::Text("1".into()), Sql::Blob(vec![0xab, 1])]
        );
        assert_eq!(sqlite_values(&None).unwrap(), Vec::<Sql>::new());
        let too_large = sqlite_values(&Some(Values(vec![Value::BigUnsigned(Some(u64::MAX))])));
        assert!(too_large.is_err(), "{too_large:?}");
        let null = sqlite_values(&Some(Values(vec![Value::String(None)]))).unwrap_err();
        assert!(null.contains("no SQLite parameter"), "{null}");
    }
}
