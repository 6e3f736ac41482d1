//! `govdata serve --ingest-every DURATION`: ingestion on a schedule inside the server process.
//! Runs never overlap: the next one starts a full period after the previous one ended. When the
//! server drains, no new run starts and the task ends after the run in progress.
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio::task::JoinHandle;

use super::{Registry, RunOptions, run_once};
use crate::connections::Shutdown;
use crate::contract::vocabulary::RunTrigger;

/// Starts the schedule: a first run at once, then one `every` after each run ends. `after_run`
/// is called when a run has ended (the server serves what it published at once).
pub fn spawn(
    db: DatabaseConnection,
    registry: Registry,
    every: Duration,
    options: RunOptions,
    shutdown: Shutdown,
    after_run: impl Fn() + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let options = RunOptions { trigger: RunTrigger::Schedule, ..options };
        while !shutdown.draining() {
            match run_once(&db, &registry, &options).await {
                Ok(report) => tracing::info!("scheduled {report}"),
                Err(e) => tracing::error!("scheduled ingestion failed: {e:#}"),
            }
            after_run();
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = shutdown.begun() => {}
            }
        }
    })
}
