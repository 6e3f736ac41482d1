//! A build's claim on its file, kept alive while the build makes progress. The claim's
//! heartbeat (`claimed_ms` in the catalogue) moves as batches pass to the writer, at most once
//! per [`HEARTBEAT`]; a claim whose heartbeat is older than [`TAKEOVER_AFTER`] belongs to a
//! builder that died or stopped (SIGKILL, a lost machine, a hung read), and the next request for
//! the file takes it over. A builder whose claim was taken over stops at its next heartbeat.
use std::future::Future;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sea_orm::DatabaseConnection;

use crate::contract::exports::ExportFile;
use crate::store::exports::{self as catalogue, FileKey};

/// How often a build moves its claim's heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A claim whose heartbeat is older than this is abandoned and taken over: a few heartbeats
/// missed, so one slow batch or a busy store does not hand a live build to another process.
pub const TAKEOVER_AFTER: Duration = HEARTBEAT.saturating_mul(3);

/// `builder`'s claim on the file of a DAO's table in a format.
pub struct Claim {
    db: DatabaseConnection,
    dao_id: String,
    file: ExportFile,
    builder: String,
    /// When the heartbeat last moved (the claim itself is the first).
    last: Mutex<Instant>,
}

impl Claim {
    /// The claim `builder` has just won.
    pub fn won(db: DatabaseConnection, dao_id: &str, file: ExportFile, builder: &str) -> Self {
        Self { db, dao_id: dao_id.to_owned(), file, builder: builder.to_owned(), last: Mutex::new(Instant::now()) }
    }

    fn key(&self) -> FileKey<'_> {
        FileKey { dao_id: &self.dao_id, table: self.file.table.name, format: self.file.format.as_str() }
    }

    /// Moves the heartbeat to now; an error when the claim is no longer this builder's.
    pub async fn beat(&self) -> anyhow::Result<()> {
        *self.last.lock() = Instant::now();
        let held = catalogue::heartbeat(&self.db, self.key(), &self.builder).await?;
        anyhow::ensure!(held, "the claim on {} of `{}` was taken over", self.file.name(), self.dao_id);
        Ok(())
    }

    /// Moves the heartbeat when [`HEARTBEAT`] has passed since it last moved.
    pub async fn beat_if_due(&self) -> anyhow::Result<()> {
        let due = self.last.lock().elapsed() >= HEARTBEAT;
        if due { self.beat().await } else { Ok(()) }
    }

    /// Runs `work`, a step of the build that sends no batches (compressing the file), moving
    /// the heartbeat every [`HEARTBEAT`] while it runs.
    pub async fn kept_during<T>(&self, work: impl Future<Output = T>) -> anyhow::Result<T> {
        tokio::pin!(work);
        let mut ticks = tokio::time::interval(HEARTBEAT);
        // The first tick is at once: the step starts with a heartbeat.
        loop {
            tokio::select! {
                done = &mut work => return Ok(done),
                _ = ticks.tick() => self.beat().await?,
            }
        }
    }
}
