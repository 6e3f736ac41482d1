//! Keeping `votes`' B-trees packed on PostgreSQL (issue 31: at most 350 bytes per vote).
//!
//! A B-tree built by sorting (`CREATE INDEX`, `REINDEX`) fills its leaf pages to the fillfactor
//! (90 %). Inserts in key order that is not ascending, as ingestion's votes land in the voter
//! history and in each proposal's voter and power orders, split full pages in two, and such a tree
//! settles at about 70 %: measured at 1M votes, a store grown by inserts takes 421 bytes per vote
//! against 335.6 rebuilt by sorting (migration 24's fillfactors). SQLite is not concerned: its B-trees stay compact as inserts grow
//! them (302 bytes per vote).
//!
//! So an index is rebuilt (`REINDEX INDEX CONCURRENTLY`: reads and publications go on, each index
//! is swapped in one catalog step) when it has grown [`DUE_ABOVE`] past its packed size at its
//! present entry count. The yardstick is the index's own bytes per entry just after its last
//! sorted build, recorded in `index_packing`; an index without a record (a store grown by inserts
//! since before this existed) is due once, which records it. Entry counts are PostgreSQL's
//! (`reltuples`), refreshed by an `ANALYZE` first.
//!
//! One repack runs at a time across every process (a session advisory lock); it runs on a
//! connection of its own, with no statement timeout, and checks every second that its client is
//! still there (`client_connection_check_interval`): a process that stops mid-build ends the
//! build, whose half-built copy (`…_ccnew`, invalid) the next repack drops.
use std::time::Instant;

use anyhow::Context;
use sea_orm::sqlx::{self, Connection, Row, postgres::PgConnection};
use sea_orm::{DatabaseConnection, DbBackend};

/// The table whose indexes are kept packed: the one that holds nearly every byte.
const TABLE: &str = "votes";
/// An index is due when it is more than this fraction larger than packed (0.05: 5 % larger): with
/// every index within it, synthetic votes take at most 117 + 1.05 × 218.5 ≈ 347 bytes per vote.
/// Measured from 1M votes rebuilt (335.6) over 24 steps of 1.5 % growth, a check after each: the
/// voter history was due every 6 to 9 % of growth, and the store was 335.2 to 345.5 after each
/// check (up to 351.5 before one, with two indexes still under [`MIN_BYTES`] at that size).
pub const DUE_ABOVE: f64 = 0.05;
/// Indexes smaller than this are never due: below it a repack saves less than it costs to check.
pub const MIN_BYTES: i64 = 64 << 20;
/// Key of the session advisory lock a repack holds (any constant; this one spells "GOVRPACK").
pub const REPACK_LOCK: i64 = 0x474f_5652_5041_434b;

/// Which indexes a run rebuilds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only report: nothing is rebuilt.
    Survey,
    /// The indexes that are due.
    Due,
    /// Every index of the tables, due or not (small ones too).
    All,
}

/// One index, as the survey saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexState {
    pub name: String,
    pub table: String,
    /// Its size now.
    pub bytes: i64,
    /// Its entries now (PostgreSQL's estimate, fresh from `ANALYZE`).
    pub entries: f64,
    /// Its size and entries just after its last sorted build, when recorded.
    pub packed: Option<(i64, f64)>,
}

impl IndexState {
    /// Its size packed at its present entry count, from its recorded bytes per entry.
    pub fn packed_bytes(&self) -> Option<f64> {
        let (bytes, entries) = self.packed?;
        (entries > 0.0).then(|| bytes as f64 / entries * self.entries.max(0.0))
    }

    /// How much larger than packed it is (0.25: 25 % larger), when that is known.
    pub fn excess(&self) -> Option<f64> {
        let packed = self.packed_bytes()?;
        (packed > 0.0).then(|| self.bytes as f64 / packed - 1.0)
    }

    /// Whether a `Due` run rebuilds it, and why.
    pub fn due(&self) -> Due {
        if self.bytes < MIN_BYTES {
            return Due::No("smaller than the repack threshold");
        }
        match (self.packed, self.excess()) {
            (None, _) => Due::Yes("no packed size on record"),
            (Some(_), Some(excess)) if excess > DUE_ABOVE => Due::Yes("grown past its packed size"),
            (Some(_), Some(_)) => Due::No("within its packed size"),
            (Some(_), None) => Due::Yes("its packed record counts no entries"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    Yes(&'static str),
    No(&'static str),
}

/// One rebuilt index.
#[derive(Debug, Clone, PartialEq)]
pub struct Repacked {
    pub name: String,
    pub bytes_before: i64,
    pub bytes_after: i64,
    pub entries: f64,
    pub seconds: f64,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Another process holds the repack lock: nothing was done.
    Busy,
    Done {
        /// Every index, as found before any rebuild.
        surveyed: Vec<IndexState>,
        repacked: Vec<Repacked>,
        /// Half-built copies left by an interrupted rebuild, dropped.
        dropped: Vec<String>,
    },
}

impl Outcome {
    /// Whether the run rebuilt or dropped anything.
    pub fn changed(&self) -> bool {
        matches!(self, Outcome::Done { repacked, dropped, .. } if !repacked.is_empty() || !dropped.is_empty())
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (surveyed, repacked, dropped) = match self {
            Outcome::Busy => return write!(f, "another process is repacking: nothing done"),
            Outcome::Done { surveyed, repacked, dropped } => (surveyed, repacked, dropped),
        };
        for name in dropped {
            writeln!(f, "dropped {name} (left by an interrupted rebuild)")?;
        }
        writeln!(f, "{:<36} {:>12} {:>14} {:>8}  due", "index", "MB", "entries", "excess")?;
        for s in surveyed {
            let excess = s.excess().map_or_else(|| "-".to_owned(), |e| format!("{:.1} %", e * 100.0));
            let due = match s.due() {
                Due::Yes(why) => format!("yes: {why}"),
                Due::No(why) => format!("no: {why}"),
            };
            writeln!(f, "{:<36} {:>12.1} {:>14.0} {:>8}  {due}", s.name, mb(s.bytes), s.entries, excess)?;
        }
        if repacked.is_empty() {
            return write!(f, "nothing rebuilt");
        }
        for r in repacked {
            writeln!(
                f,
                "rebuilt {}: {:.1} MB -> {:.1} MB in {:.1} s",
                r.name,
                mb(r.bytes_before),
                mb(r.bytes_after),
                r.seconds
            )?;
        }
        let before: i64 = repacked.iter().map(|r| r.bytes_before).sum();
        let after: i64 = repacked.iter().map(|r| r.bytes_after).sum();
        write!(f, "{} indexes rebuilt: {:.1} MB -> {:.1} MB", repacked.len(), mb(before), mb(after))
    }
}

fn mb(bytes: i64) -> f64 {
    bytes as f64 / 1e6
}

/// Surveys the indexes and rebuilds those `scope` names, on PostgreSQL (an error on SQLite).
pub async fn run(db: &DatabaseConnection, scope: Scope) -> anyhow::Result<Outcome> {
    anyhow::ensure!(
        db.get_database_backend() == DbBackend::Postgres,
        "repack is for PostgreSQL: SQLite's B-trees stay compact as inserts grow them"
    );
    let options = db.get_postgres_connection_pool().connect_options();
    let mut conn = PgConnection::connect_with(&options).await.context("opening the repack connection")?;
    let outcome = run_on(&mut conn, scope).await;
    conn.close().await.ok();
    outcome
}

async fn run_on(conn: &mut PgConnection, scope: Scope) -> anyhow::Result<Outcome> {
    let locked: bool =
        sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(REPACK_LOCK).fetch_one(&mut *conn).await?;
    if !locked {
        return Ok(Outcome::Busy);
    }
    // No timeout for builds of many minutes; sort memory for a rebuild (PostgreSQL's default,
    // 64 MB, spills a 100M-entry sort to many runs).
    sqlx::raw_sql("SET statement_timeout = 0; SET maintenance_work_mem = '512MB'").execute(&mut *conn).await?;
    // PostgreSQL 14 and later; on older servers a build outlives its client (and still ends).
    if let Err(e) = sqlx::raw_sql("SET client_connection_check_interval = '1s'").execute(&mut *conn).await {
        tracing::debug!("repack: no client connection check ({e})");
    }
    let dropped = drop_leftovers(conn).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ANALYZE {}", quote(TABLE)))).execute(&mut *conn).await?;
    let surveyed = survey(conn).await?;
    let mut repacked = Vec::new();
    for state in &surveyed {
        let rebuild = match scope {
            Scope::Survey => false,
            Scope::Due => matches!(state.due(), Due::Yes(_)),
            Scope::All => true,
        };
        if !rebuild {
            continue;
        }
        let started = Instant::now();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("REINDEX INDEX CONCURRENTLY {}", quote(&state.name))))
            .execute(&mut *conn)
            .await
            .with_context(|| format!("rebuilding {}", state.name))?;
        let (bytes, entries) = record(conn, &state.name).await?;
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(index = %state.name, before = state.bytes, after = bytes, seconds, "repacked");
        repacked.push(Repacked {
            name: state.name.clone(),
            bytes_before: state.bytes,
            bytes_after: bytes,
            entries,
            seconds,
        });
    }
    sqlx::query("SELECT pg_advisory_unlock($1)").bind(REPACK_LOCK).execute(&mut *conn).await?;
    Ok(Outcome::Done { surveyed, repacked, dropped })
}

/// Records the present size and entries of `names` as packed: for indexes just built by sorting
/// (a bulk load's deferred builds), so that they are not rebuilt for want of a record.
pub async fn record_packed(db: &DatabaseConnection, names: &[String]) -> anyhow::Result<()> {
    if db.get_database_backend() != DbBackend::Postgres || names.is_empty() {
        return Ok(());
    }
    let mut conn = db.get_postgres_connection_pool().acquire().await?;
    for name in names {
        record(&mut conn, name).await?;
    }
    Ok(())
}

/// Reads `name`'s size and entries and records them as its packed state.
async fn record(conn: &mut PgConnection, name: &str) -> anyhow::Result<(i64, f64)> {
    let row = sqlx::query(
        "SELECT pg_relation_size(c.oid) AS bytes, c.reltuples::float8 AS entries FROM pg_class c
         WHERE c.relname = $1 AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
    )
    .bind(name)
    .fetch_one(&mut *conn)
    .await
    .with_context(|| format!("reading the size of {name}"))?;
    let (bytes, entries): (i64, f64) = (row.try_get("bytes")?, row.try_get("entries")?);
    sqlx::query(
        "INSERT INTO index_packing (index_name, entries, bytes, packed_ms) VALUES ($1, $2, $3, $4)
         ON CONFLICT (index_name) DO UPDATE
         SET entries = EXCLUDED.entries, bytes = EXCLUDED.bytes, packed_ms = EXCLUDED.packed_ms",
    )
    .bind(name)
    .bind(entries)
    .bind(bytes)
    .bind(crate::contract::time::now_ms())
    .execute(&mut *conn)
    .await?;
    Ok((bytes, entries))
}

/// The valid indexes of [`TABLE`], with their packed records.
async fn survey(conn: &mut PgConnection) -> anyhow::Result<Vec<IndexState>> {
    let rows = sqlx::query(
        "SELECT c.relname::text AS name, t.relname::text AS table_name, pg_relation_size(c.oid) AS bytes,
                c.reltuples::float8 AS entries, p.bytes AS packed_bytes, p.entries AS packed_entries
         FROM pg_index x
         JOIN pg_class c ON c.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         LEFT JOIN index_packing p ON p.index_name = c.relname
         WHERE t.relname = $1 AND x.indisvalid
           AND t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
         ORDER BY t.relname, c.relname",
    )
    .bind(TABLE)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|row| {
            let packed = match (row.try_get::<Option<i64>, _>("packed_bytes")?, row.try_get("packed_entries")?) {
                (Some(bytes), Some(entries)) => Some((bytes, entries)),
                _ => None,
            };
            Ok(IndexState {
                name: row.try_get("name")?,
                table: row.try_get("table_name")?,
                bytes: row.try_get("bytes")?,
                entries: row.try_get("entries")?,
                packed,
            })
        })
        .collect()
}

/// Drops the invalid copies an interrupted `REINDEX … CONCURRENTLY` leaves on [`TABLE`]
/// (`<index>_ccnew`, `<index>_ccold`, with a number when the name was taken). No other repack is
/// running (this one holds the lock), so none of them is being built.
async fn drop_leftovers(conn: &mut PgConnection) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_index x
         JOIN pg_class c ON c.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         WHERE t.relname = $1 AND NOT x.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'
           AND t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
         ORDER BY 1",
    )
    .bind(TABLE)
    .fetch_all(&mut *conn)
    .await?;
    for name in &names {
        let drop = format!("DROP INDEX CONCURRENTLY IF EXISTS {}", quote(name));
        sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(&mut *conn).await?;
        sqlx::query("DELETE FROM index_packing WHERE index_name = $1").bind(name).execute(&mut *conn).await?;
    }
    Ok(names)
}

/// `name` as a quoted SQL identifier. Statements that name an index or table (`REINDEX`, `DROP
/// INDEX`, `ANALYZE` take no bind parameters) name it so, and the names are the catalog's or
/// [`TABLE`]: that is the audit `AssertSqlSafe` asks for.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(bytes: i64, entries: f64, packed: Option<(i64, f64)>) -> IndexState {
        IndexState { name: "ix".into(), table: "votes".into(), bytes, entries, packed }
    }

    #[test]
    fn an_index_is_due_when_it_grew_past_its_packed_bytes_per_entry() {
        let packed = Some((100 << 20, 1_000_000.0));
        // Twice the entries at the same bytes per entry: packed still.
        assert_eq!(state(200 << 20, 2_000_000.0, packed).due(), Due::No("within its packed size"));
        // 5 % over is the limit; past it, due.
        assert!(matches!(state(104 << 20, 1_000_000.0, packed).due(), Due::No(_)));
        assert!(matches!(state(106 << 20, 1_000_000.0, packed).due(), Due::Yes(_)));
        // Rows deleted: fewer entries in the same pages is excess too.
        assert!(matches!(state(100 << 20, 800_000.0, packed).due(), Due::Yes(_)));
        let excess = state(150 << 20, 1_000_000.0, packed).excess().unwrap();
        assert!((excess - 0.5).abs() < 1e-9, "{excess}");
    }

    #[test]
    fn an_index_without_a_record_is_due_once_and_small_ones_never() {
        assert_eq!(state(MIN_BYTES, 1e6, None).due(), Due::Yes("no packed size on record"));
        assert!(matches!(state(MIN_BYTES - 1, 1e6, None).due(), Due::No(_)));
        assert!(matches!(state(MIN_BYTES - 1, 1e6, Some((1, 1.0))).due(), Due::No(_)));
        // A record of an empty index says nothing of bytes per entry.
        assert!(matches!(state(MIN_BYTES, 1e6, Some((8192, 0.0))).due(), Due::Yes(_)));
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote("ix_votes"), "\"ix_votes\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
