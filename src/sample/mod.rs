//! The bundled real sample: Snapshot proposals and votes and a Tally delegates export for eight
//! DAOs (see `data/sample/ATTRIBUTION.md`), compiled into the binary so a fresh store can serve
//! real data without network access.
//!
//! An import records an ingestion run, validates every row (malformed rows are reported and
//! skipped, never repaired), writes what is new or changed in one transaction, and publishes a
//! revision only when something changed.
use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use anyhow::Context;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseConnection, TransactionTrait};

use crate::contract::vocabulary::{RunStatus, RunTrigger};
use crate::store::entities::ingestion_run;
use crate::store::publish::{self, now_ms};
use crate::store::upsert::TableCounts;

use crate::contract::dataset::{DELEGATES_FILE, PROPOSALS_FILE, VOTES_FILE};

mod parse;
pub mod registry;
pub mod synth;
mod write;

pub use registry::{DEFAULT_REGISTRY, RegistryDao};

/// The three sample CSVs, as text.
pub struct SampleFiles {
    pub proposals: Cow<'static, str>,
    pub votes: Cow<'static, str>,
    pub delegates: Cow<'static, str>,
}

impl SampleFiles {
    /// The copy compiled into the binary.
    pub fn bundled() -> Self {
        Self {
            proposals: Cow::Borrowed(include_str!("../../data/sample/snapshot_proposals.csv")),
            votes: Cow::Borrowed(include_str!("../../data/sample/snapshot_votes.csv")),
            delegates: Cow::Borrowed(include_str!("../../data/sample/tally_delegates.csv")),
        }
    }

    /// Reads `snapshot_proposals.csv`, `snapshot_votes.csv` and `tally_delegates.csv` from `dir`.
    pub fn from_dir(dir: impl AsRef<Path>) -> anyhow::Result<Self> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path)
                .map(Cow::Owned)
                .with_context(|| format!("cannot read sample file {}", path.display()))
        };
        Ok(Self { proposals: read(PROPOSALS_FILE)?, votes: read(VOTES_FILE)?, delegates: read(DELEGATES_FILE)? })
    }
}

/// A malformed input row that was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    pub file: String,
    /// 1-based; the header is line 1.
    pub line: u64,
    pub reason: String,
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.reason)
    }
}

#[derive(Debug, Clone)]
pub struct ImportReport {
    pub run_id: i64,
    /// The revision this import published; `None` when nothing changed.
    pub revision_id: Option<i64>,
    pub daos: TableCounts,
    pub data_sources: TableCounts,
    pub proposals: TableCounts,
    pub votes: TableCounts,
    pub voters: TableCounts,
    pub delegates: TableCounts,
    pub watermarks: TableCounts,
    pub skipped: Vec<RowProblem>,
    /// Whether any stored row was inserted or changed.
    pub changed: bool,
}

impl ImportReport {
    fn tables(&self) -> [(&'static str, TableCounts); 7] {
        [
            ("daos", self.daos),
            ("data sources", self.data_sources),
            ("proposals", self.proposals),
            ("votes", self.votes),
            ("voters", self.voters),
            ("delegates", self.delegates),
            ("watermarks", self.watermarks),
        ]
    }

    pub fn rows_written(&self) -> u64 {
        self.tables().iter().map(|(_, c)| c.written()).sum()
    }

    /// One line for the revision's summary.
    fn summary(&self) -> String {
        let parts = crate::store::upsert::describe(&self.tables());
        format!("sample import (run {}): {}", self.run_id, parts.join(", "))
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.revision_id {
            Some(revision) => writeln!(f, "sample import, run {}: published revision {revision}", self.run_id)?,
            None => writeln!(f, "sample import, run {}: no changes, nothing published", self.run_id)?,
        }
        for (name, c) in self.tables() {
            writeln!(f, "  {name}: {} inserted, {} updated", c.inserted, c.updated)?;
        }
        writeln!(f, "  {} malformed rows skipped", self.skipped.len())?;
        for problem in &self.skipped {
            writeln!(f, "  {problem}")?;
        }
        Ok(())
    }
}

/// Imports `files`, recording an ingestion run with trigger `trigger`. On failure nothing from
/// the files is kept and the run is marked failed.
pub async fn import(db: &DatabaseConnection, files: &SampleFiles, trigger: RunTrigger) -> anyhow::Result<ImportReport> {
    let run = start_run(db, trigger).await?;
    match write_and_publish(db, files, run.id).await {
        Ok(report) => Ok(report),
        Err(error) => {
            if let Err(mark) = fail_run(db, run, &error).await {
                tracing::error!(%mark, "could not mark the failed sample import run");
            }
            Err(error)
        }
    }
}

/// Imports the bundled sample into a store that has never published anything.
pub async fn import_if_empty(db: &DatabaseConnection) -> anyhow::Result<Option<ImportReport>> {
    if publish::current_revision(db).await?.is_some() {
        return Ok(None);
    }
    let report = import(db, &SampleFiles::bundled(), RunTrigger::Import).await?;
    tracing::info!("{report}");
    Ok(Some(report))
}

async fn write_and_publish(db: &DatabaseConnection, files: &SampleFiles, run_id: i64) -> anyhow::Result<ImportReport> {
    let parsed = parse::parse(&files.proposals, &files.votes, &files.delegates)?;
    let txn = db.begin().await?;
    let w = write::Writer { txn: &txn, run_id, now_ms: now_ms() };
    let daos = w.daos().await?;
    let data_sources = w.data_sources(&parsed).await?;
    let (proposals, proposal_ids) = w.proposals(&parsed.proposals).await?;
    let votes = w.votes(&parsed.votes, &proposal_ids).await?;
    let voters = w.voters(&parsed.voters).await?;
    let delegates = w.delegates(&parsed.delegates, parsed.as_of_ms.unwrap_or_default()).await?;
    let watermarks = w.watermarks(&parsed.watermarks).await?;
    let mut report = ImportReport {
        run_id,
        revision_id: None,
        daos,
        data_sources,
        proposals,
        votes,
        voters,
        delegates,
        watermarks,
        skipped: parsed.skipped,
        changed: false,
    };
    report.changed = report.rows_written() > 0;
    // A store that has never published gets its first revision even if the rows were already
    // there, so it becomes servable.
    if report.changed || publish::current_revision(&txn).await?.is_none() {
        report.revision_id = Some(publish::publish(&txn, run_id, &report.summary(), &publish::Scope::All).await?.id);
    }
    finish_run(&txn, run_id, &report).await?;
    txn.commit().await?;
    Ok(report)
}

async fn start_run(db: &DatabaseConnection, trigger: RunTrigger) -> anyhow::Result<ingestion_run::Model> {
    let run = ingestion_run::ActiveModel {
        trigger: Set(trigger),
        dao_filter: Set(None),
        source_filter: Set(None),
        started_ms: Set(now_ms()),
        status: Set(RunStatus::Running),
        rows_written: Set(0),
        rows_skipped: Set(0),
        ..Default::default()
    };
    Ok(run.insert(db).await?)
}

/// Recorded in the import's transaction, so "succeeded" commits together with the rows.
/// `revision_id` was set by publication in the same transaction and is left alone here.
async fn finish_run(txn: &sea_orm::DatabaseTransaction, run_id: i64, report: &ImportReport) -> anyhow::Result<()> {
    let run = ingestion_run::ActiveModel {
        id: sea_orm::ActiveValue::Unchanged(run_id),
        finished_ms: Set(Some(now_ms())),
        status: Set(RunStatus::Succeeded),
        rows_written: Set(i64::try_from(report.rows_written())?),
        rows_skipped: Set(i64::try_from(report.skipped.len())?),
        ..Default::default()
    };
    run.update(txn).await?;
    Ok(())
}

async fn fail_run(db: &DatabaseConnection, run: ingestion_run::Model, error: &anyhow::Error) -> anyhow::Result<()> {
    let mut run: ingestion_run::ActiveModel = run.into();
    run.finished_ms = Set(Some(now_ms()));
    run.status = Set(RunStatus::Failed);
    run.error = Set(Some(format!("{error:#}")));
    run.update(db).await?;
    Ok(())
}

#[cfg(test)]
mod tests;
