//! Whole-table exports (issue 30): each table of a DAO written to a file in each format, streamed
//! from the store a batch at a time. The store is read on the async runtime; the file is written
//! on a blocking thread of its own, fed through a channel of [`IN_FLIGHT`] batches, so memory stays
//! bounded by a few batches and a Parquet row group whatever the table holds.
pub mod votes;
pub mod writer;

use std::path::Path;

use tokio::sync::mpsc;

use crate::contract::exports::{ExportFormat, ExportTable};
use writer::{Cell, TableWriter, Written};

/// Rows read from the store and handed to the writer at a time.
pub const BATCH_ROWS: u64 = 8192;
/// Batches between the reader and the writer.
const IN_FLIGHT: usize = 2;

/// The half of an export the store's reader holds: it sends batches of rows to the file's writer.
pub struct Batches {
    tx: mpsc::Sender<Vec<Vec<Cell>>>,
}

impl Batches {
    /// Hands `rows` to the writer; waits while it is [`IN_FLIGHT`] batches behind.
    pub async fn send(&self, rows: Vec<Vec<Cell>>) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.tx.send(rows).await.map_err(|_| anyhow::anyhow!("the export's writer stopped"))
    }
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
    let (tx, mut rx) = mpsc::channel::<Vec<Vec<Cell>>>(IN_FLIGHT);
    let path = path.to_owned();
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<Written> {
        let mut w = TableWriter::create(&path, table, format)?;
        while let Some(rows) = rx.blocking_recv() {
            w.write(&rows)?;
        }
        w.finish()
    });
    let read = read(Batches { tx }).await;
    let written = writer.await??;
    read?;
    Ok(written)
}
