//! Whole-table exports (issue 30): each table of a DAO written to a file in each format, streamed
//! from the store a batch at a time. The store is read on the async runtime; the file is written
//! on a blocking thread of its own, fed through a channel of [`IN_FLIGHT`] batches, so memory stays
//! bounded by a few batches and a Parquet row group whatever the table holds.
//!
//! A batch travels as Arrow arrays ([`writer::Columns`]): the votes reader, the one table that
//! grows to millions of rows, builds them straight from the store's rows (issue 49); the other
//! readers send rows of [`Cell`]s, made columns on the way.
pub mod binary_copy;
pub mod claim;
pub mod daos;
pub mod delegates;
pub mod delegation_changes;
pub mod delegations;
pub mod files;
pub mod forum_topics;
pub mod governance_events;
pub mod power_checkpoints;
pub mod proposal_actions;
pub mod proposals;
pub mod signals;
pub mod view;
pub mod voters;
pub mod votes;
pub mod writer;

use std::path::Path;
use std::sync::Arc;

use arrow_array::Array;
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, StreamTrait, Value};
use tokio::sync::mpsc;

use crate::contract::exports::{ExportFormat, ExportTable};
use claim::Claim;
use writer::{Cell, Columns, TableWriter, Written};

/// Rows handed to the writer at a time: every batch but a table's last holds exactly this many,
/// since the Parquet writer's pages (so the file's bytes) follow where batches begin and end.
pub const BATCH_ROWS: u64 = 8192;
/// Batches between the reader and the writer.
const IN_FLIGHT: usize = 2;

/// The half of an export the store's reader holds: it sends batches of rows to the file's writer.
pub struct Batches {
    to: Writer,
    table: &'static ExportTable,
    /// The build's claim on its file, whose heartbeat the batches move.
    claim: Option<Arc<Claim>>,
}

impl Batches {
    /// These batches, moving the heartbeat of `claim` as they pass.
    pub fn kept_by(self, claim: Arc<Claim>) -> Self {
        Self { claim: Some(claim), ..self }
    }

    /// Hands `rows` to the writer; waits while it is [`IN_FLIGHT`] batches behind. An error
    /// when a row does not fit the table's columns, when the writer stopped, or when the
    /// build's claim was taken over.
    pub async fn send(&self, rows: Vec<Vec<Cell>>) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.send_columns(writer::columns(self.table, &rows)?).await
    }

    /// Hands a batch already made columns (one array per declared column, in order) to the
    /// writer, as [`Batches::send`] does.
    pub async fn send_columns(&self, columns: Columns) -> anyhow::Result<()> {
        if columns.first().is_none_or(|c| c.is_empty()) {
            return Ok(());
        }
        if let Some(claim) = &self.claim {
            claim.beat_if_due().await?;
        }
        match &self.to {
            Writer::Thread(tx) => tx.send(columns).await.map_err(|_| anyhow::anyhow!("the export's writer stopped")),
            Writer::Here(w) => {
                let mut w = w.lock().map_err(|_| anyhow::anyhow!("the export's writer failed"))?;
                Ok(w.as_mut().ok_or_else(|| anyhow::anyhow!("the export's writer stopped"))?.write(&columns)?)
            }
        }
    }
}

/// Where batches are written.
enum Writer {
    /// On a blocking thread of its own, through a channel of [`IN_FLIGHT`] batches: the store is
    /// read while the file is written.
    Thread(mpsc::Sender<Columns>),
    /// Right away, on the reader's thread: each batch written before the next is read. For
    /// instruction counts ([`export_here`]), which then do not depend on how two threads meet.
    Here(Arc<std::sync::Mutex<Option<TableWriter>>>),
}

/// The reader of each table: [`reader`] is the one place a table's name picks it, and
/// [`read_table`]'s match on it is exhaustive, so a reader cannot be added without its arm, and a
/// declared table without a reader fails `contract::exports`' unit test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Daos,
    Proposals,
    Votes,
    Voters,
    Delegates,
    Delegations,
    DelegationChanges,
    PowerCheckpoints,
    GovernanceEvents,
    Signals,
    ForumTopics,
    ProposalActions,
}

fn reader(table: &str) -> Option<Reader> {
    Some(match table {
        "daos" => Reader::Daos,
        "proposals" => Reader::Proposals,
        "votes" => Reader::Votes,
        "voters" => Reader::Voters,
        "delegates" => Reader::Delegates,
        "delegations" => Reader::Delegations,
        "delegation_changes" => Reader::DelegationChanges,
        "power_checkpoints" => Reader::PowerCheckpoints,
        "governance_events" => Reader::GovernanceEvents,
        "signals" => Reader::Signals,
        "forum_topics" => Reader::ForumTopics,
        "proposal_actions" => Reader::ProposalActions,
        _ => return None,
    })
}

/// Whether `table`'s reader reads on a connection of its own, on the view's snapshot
/// ([`view::View::begin`]'s `apart`): the votes.
pub fn reads_apart(table: &ExportTable) -> bool {
    reader(table.name) == Some(Reader::Votes)
}

/// Whether the table named `table` has a reader here.
pub fn has_reader(table: &str) -> bool {
    reader(table).is_some()
}

/// Sends every row of `table` for the DAO `dao_id`, in the table's declared order, from `db` (a
/// [`view::View`]'s transaction, or a connection), the votes on a connection of their own when
/// `snapshot` is the view's (by `COPY` on PostgreSQL, on one thread on SQLite). Each declared
/// table (`contract::exports::TABLES`) has its reader here.
pub async fn read_table(
    db: &(impl ConnectionTrait + StreamTrait),
    snapshot: Option<view::Snapshot<'_>>,
    table: &'static ExportTable,
    dao_id: &str,
    out: Batches,
) -> anyhow::Result<()> {
    let Some(r) = reader(table.name) else {
        anyhow::bail!("the export table `{}` has no reader", table.name);
    };
    match r {
        Reader::Daos => daos::read(db, dao_id, out).await,
        Reader::Proposals => proposals::read(db, dao_id, out).await,
        Reader::Votes => votes::read(db, snapshot, dao_id, out).await,
        Reader::Voters => voters::read(db, dao_id, out).await,
        Reader::Delegates => delegates::read(db, dao_id, out).await,
        Reader::Delegations => delegations::read(db, dao_id, out).await,
        Reader::DelegationChanges => delegation_changes::read(db, dao_id, out).await,
        Reader::PowerCheckpoints => power_checkpoints::read(db, dao_id, out).await,
        Reader::GovernanceEvents => governance_events::read(db, dao_id, out).await,
        Reader::Signals => signals::read(db, dao_id, out).await,
        Reader::ForumTopics => forum_topics::read(db, dao_id, out).await,
        Reader::ProposalActions => proposal_actions::read(db, dao_id, out).await,
    }
}

/// Keyset condition for `(key asc, tiebreak asc)` resuming after `(k, last)`: the mirror of
/// `store::after_desc`, with the same implied leading bound `key >= k`, which is what lets both
/// planners seek into the index (walked backwards when it is `(…, -key, -id)`) instead of
/// scanning the DAO's range from its start for every page.
pub(crate) fn after_asc<C: ColumnTrait>(
    key: C,
    tiebreak: C,
    (k, last): (impl Into<Value>, impl Into<Value>),
) -> Condition {
    let k: Value = k.into();
    Condition::all()
        .add(key.gte(k.clone()))
        .add(Condition::any().add(key.gt(k.clone())).add(Condition::all().add(key.eq(k)).add(tiebreak.gt(last))))
}

/// A text cell, null when absent.
pub(crate) fn text(v: Option<String>) -> Cell {
    v.map_or(Cell::Null, Cell::Text)
}

/// An integer cell, null when absent.
pub(crate) fn integer(v: Option<i64>) -> Cell {
    v.map_or(Cell::Null, Cell::Integer)
}

/// An instant cell (ms UTC), null when absent.
pub(crate) fn timestamp(v: Option<i64>) -> Cell {
    v.map_or(Cell::Null, Cell::Timestamp)
}

/// Writes `table` in `format` to `path`, with the rows `read` sends.
pub async fn export<F, Fut>(
    path: &Path,
    table: &'static ExportTable,
    format: ExportFormat,
    read: F,
) -> anyhow::Result<Written>
where
    F: FnOnce(Batches) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let (tx, mut rx) = mpsc::channel::<Columns>(IN_FLIGHT);
    let path = path.to_owned();
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<Written> {
        let mut w = TableWriter::create(&path, table, format)?;
        while let Some(columns) = rx.blocking_recv() {
            w.write(&columns)?;
        }
        w.finish()
    });
    let read = read(Batches { to: Writer::Thread(tx), table, claim: None }).await;
    let written = writer.await??;
    read?;
    Ok(written)
}

/// [`export`] with each batch written on the reader's thread as it comes, the store not read
/// meanwhile: the same files, the same work, in an order that does not depend on scheduling, for
/// `bench --costs`' instruction counts. It blocks the async runtime while it writes, so it
/// serves no request.
pub async fn export_here<F, Fut>(
    path: &Path,
    table: &'static ExportTable,
    format: ExportFormat,
    read: F,
) -> anyhow::Result<Written>
where
    F: FnOnce(Batches) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let writer = Arc::new(std::sync::Mutex::new(Some(TableWriter::create(path, table, format)?)));
    read(Batches { to: Writer::Here(writer.clone()), table, claim: None }).await?;
    let w = writer.lock().map_err(|_| anyhow::anyhow!("the export's writer failed"))?.take();
    Ok(w.ok_or_else(|| anyhow::anyhow!("the export's writer stopped"))?.finish()?)
}

#[cfg(test)]
mod tests {
    use crate::contract::exports::TABLES;

    #[test]
    fn every_declared_table_has_its_reader() {
        for t in TABLES {
            assert!(super::has_reader(t.name), "the export table `{}` has no reader", t.name);
        }
        assert!(!super::has_reader("no_such_table"));
    }
}
