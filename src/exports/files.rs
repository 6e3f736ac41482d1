//! The files under `GOVDATA_EXPORT_DIR`: built on first request (or again after a publication
//! changed their DAO, for files already asked for), one builder at a time across every process
//! on the store (the catalogue row is the claim, `store::exports`, kept alive by the build's
//! heartbeat, `super::claim`), kept within a disk budget,
//! and removed when no serving revision needs them.
//!
//! A file is named after its content (`<table>-<sha256 prefix>.<format>`), so a table a
//! publication did not change is rebuilt into the very same name and bytes: its sha256 and ETag
//! stay. A file the catalogue no longer names is removed; a download already reading it keeps
//! its open file (POSIX unlink semantics) and finishes.
use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;

use super::claim::{Claim, TAKEOVER_AFTER};
use super::export;
use crate::contract::exports::{ExportFile, ExportFormat};
use crate::contract::time::now_ms;
use crate::store::exports::{self as catalogue, Built, ExportFileRow, ExportState, FileKey};
use crate::store::nodes::Nodes;

/// How often a request waiting for another process's build looks at the catalogue again.
const POLL: Duration = Duration::from_millis(100);

/// The exports of one process: where files lie, their budget, and this process's builder name.
pub struct Exports {
    /// The primary: the catalogue (claims, finished files) is bookkeeping written here.
    db: DatabaseConnection,
    /// Where builds read: a replica that shows the revision being built, else the primary.
    nodes: Arc<Nodes>,
    dir: PathBuf,
    budget_bytes: u64,
    builder: String,
}

/// What a download serves: the catalogue row of a ready file and where it lies.
#[derive(Debug, Clone)]
pub struct ReadyFile {
    pub row: ExportFileRow,
    pub path: PathBuf,
    /// The gzip-encoded copy of a text file.
    pub gzip_path: Option<PathBuf>,
}

impl Exports {
    pub fn new(nodes: Arc<Nodes>, dir: PathBuf, budget_bytes: u64) -> Arc<Self> {
        let builder = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
        Arc::new(Self { db: nodes.primary().clone(), nodes, dir, budget_bytes, builder })
    }

    fn dao_dir(&self, dao_id: &str) -> PathBuf {
        self.dir.join(dao_id)
    }

    fn located(&self, row: ExportFileRow) -> Option<ReadyFile> {
        let name = row.file_name.as_deref()?;
        let path = self.dao_dir(&row.dao_id).join(name);
        let gzip_path = row.gzip_bytes.map(|_| gzip_name(&path));
        Some(ReadyFile { path, gzip_path, row })
    }

    /// The file of `dao_id`'s `file` holding revision `revision` (the DAO's serving revision) or
    /// a later one: built now if no process has it, waited for while one builds it, for at most
    /// `wait`. `None`: still being built (answer 503 with `Retry-After`).
    pub async fn ready(
        self: &Arc<Self>,
        dao_id: &str,
        file: ExportFile,
        revision: i64,
        wait: Duration,
    ) -> anyhow::Result<Option<ReadyFile>> {
        let deadline = tokio::time::Instant::now() + wait;
        let key = FileKey { dao_id, table: file.table.name, format: file.format.as_str() };
        loop {
            if let Some(row) = catalogue::get(&self.db, key).await?
                && row.state == ExportState::Ready
                && row.revision_id >= revision
                && let Some(ready) = self.located(row)
            {
                if tokio::fs::try_exists(&ready.path).await? {
                    return Ok(Some(ready));
                }
                // Removed under the catalogue (by hand, or a lost disk): built again.
                let name = ready.row.file_name.clone().unwrap_or_default();
                catalogue::forget(&self.db, key, &name).await?;
                continue;
            }
            self.start_build(dao_id, file, revision).await?;
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(POLL.min(deadline - tokio::time::Instant::now())).await;
        }
    }

    /// Claims and starts the build of `file` for `revision` when no process is building it;
    /// the build runs on its own task, whoever waits for it.
    async fn start_build(self: &Arc<Self>, dao_id: &str, file: ExportFile, revision: i64) -> anyhow::Result<()> {
        let key = FileKey { dao_id, table: file.table.name, format: file.format.as_str() };
        let abandoned_before = now_ms() - TAKEOVER_AFTER.as_millis() as i64;
        if !catalogue::claim(&self.db, key, &self.builder, revision, abandoned_before).await? {
            return Ok(());
        }
        let claim = Arc::new(Claim::won(self.db.clone(), dao_id, file, &self.builder));
        let this = self.clone();
        let dao = dao_id.to_owned();
        tokio::spawn(async move {
            let key = FileKey { dao_id: &dao, table: file.table.name, format: file.format.as_str() };
            if let Err(e) = this.build(&dao, file, revision, &claim).await {
                tracing::error!(dao = %dao, file = %file.name(), error = %e, "export build failed");
                if let Err(e) = catalogue::release(&this.db, key, &this.builder).await {
                    tracing::warn!(error = %e, "export claim not released; it is taken over once abandoned");
                }
            }
        });
        Ok(())
    }

    /// Builds `file` of `dao_id` from one consistent view of the store (a read-only repeatable-read
    /// transaction: a publication committing meanwhile is not seen half), names it after its
    /// content, publishes it in the catalogue and removes the file it replaces.
    ///
    /// The view is a replica's when one shows `revision` (builds are the heaviest reads); a build
    /// a replica fails (it went away, or cancelled the long read in a recovery conflict) is made
    /// again from the primary.
    ///
    /// The batches move `claim`'s heartbeat as they pass; a build whose claim was taken over
    /// stops there.
    async fn build(&self, dao_id: &str, file: ExportFile, revision: i64, claim: &Arc<Claim>) -> anyhow::Result<()> {
        let dir = self.dao_dir(dao_id);
        tokio::fs::create_dir_all(&dir).await?;
        let partial = dir.join(format!(".{}.{}.partial", file.name(), self.builder));
        let read = match self.nodes.replica_for(revision) {
            Some(replica) => match self.write_view(&replica, dao_id, file, &partial, claim).await {
                Err(e) => {
                    tracing::warn!(dao = dao_id, file = %file.name(), error = %e, "export build failed on a replica; building from the primary");
                    self.write_view(&self.db, dao_id, file, &partial, claim).await
                }
                built => built,
            },
            None => self.write_view(&self.db, dao_id, file, &partial, claim).await,
        };
        let (written, revision_id, data_as_of_ms, started) = match read {
            Ok(r) => r,
            Err(e) => {
                let _ = tokio::fs::remove_file(&partial).await;
                return Err(e);
            }
        };
        let name = format!("{}-{}.{}", file.table.name, &written.sha256[..16], file.format.as_str());
        let path = dir.join(&name);
        let gzip_bytes = match file.format {
            ExportFormat::Parquet => None,
            ExportFormat::Csv | ExportFormat::Ndjson => {
                let (from, to) = (partial.clone(), gzip_name(&partial));
                Some(claim.kept_during(tokio::task::spawn_blocking(move || gzip(&from, &to))).await??? as i64)
            }
        };
        if gzip_bytes.is_some() {
            tokio::fs::rename(gzip_name(&partial), gzip_name(&path)).await?;
        }
        tokio::fs::rename(&partial, &path).await?;
        tracing::info!(
            dao = dao_id, file = %file.name(), revision = revision_id, rows = written.rows, bytes = written.bytes,
            seconds = started.elapsed().as_secs_f64(), "export built"
        );
        let key = FileKey { dao_id, table: file.table.name, format: file.format.as_str() };
        let built = Built {
            revision_id,
            data_as_of_ms,
            file_name: name.clone(),
            rows: written.rows as i64,
            bytes: written.bytes as i64,
            sha256: written.sha256,
            gzip_bytes,
        };
        match catalogue::finish(&self.db, key, &self.builder, &built).await? {
            Some(before) => {
                if let Some(old) = before.file_name.filter(|old| *old != name) {
                    remove(&dir.join(old)).await;
                }
            }
            // The claim was taken over (this build outlived its lease): the other build's file
            // is the catalogue's; this one goes unless it is the very same file.
            None => {
                let current = catalogue::get(&self.db, key).await?.and_then(|r| r.file_name);
                if current.as_deref() != Some(name.as_str()) {
                    remove(&path).await;
                }
            }
        }
        self.keep_within_budget(key).await
    }

    /// Writes `file` to `partial` from one consistent view of `db` ([`super::view::View`]): what
    /// was written, and the revision and `dataAsOf` of the DAO in that view.
    async fn write_view(
        &self,
        db: &DatabaseConnection,
        dao_id: &str,
        file: ExportFile,
        partial: &std::path::Path,
        claim: &Arc<Claim>,
    ) -> anyhow::Result<(super::writer::Written, i64, Option<i64>, std::time::Instant)> {
        let view = super::view::View::begin(db, super::reads_apart(file.table)).await?;
        let (revision_id, data_as_of_ms) = catalogue::dao_revision(&view.txn, dao_id).await?.unwrap_or((0, None));
        let started = std::time::Instant::now();
        let read = |out: super::Batches| {
            super::read_table(&view.txn, view.snapshot(), file.table, dao_id, out.kept_by(claim.clone()))
        };
        let written = export(partial, file.table, file.format, read).await;
        view.end().await?;
        Ok((written?, revision_id, data_as_of_ms, started))
    }

    /// Removes the least recently served files (never `just_built`) until the files kept fit
    /// the budget. A file larger than the whole budget is kept until the next build needs room.
    async fn keep_within_budget(&self, just_built: FileKey<'_>) -> anyhow::Result<()> {
        let rows = catalogue::ready_by_use(&self.db).await?;
        let size = |r: &ExportFileRow| (r.bytes + r.gzip_bytes.unwrap_or(0)) as u64;
        let mut total: u64 = rows.iter().map(size).sum();
        for row in &rows {
            if total <= self.budget_bytes {
                break;
            }
            let this = (row.dao_id.as_str(), row.table_name.as_str(), row.format.as_str());
            if this == (just_built.dao_id, just_built.table, just_built.format) {
                continue;
            }
            let key = FileKey { dao_id: &row.dao_id, table: &row.table_name, format: &row.format };
            let Some(name) = row.file_name.as_deref() else { continue };
            if catalogue::forget(&self.db, key, name).await? {
                remove(&self.dao_dir(&row.dao_id).join(name)).await;
                tracing::info!(dao = %row.dao_id, file = name, "export removed: over the disk budget");
            }
            total = total.saturating_sub(size(row));
        }
        Ok(())
    }

    /// After a publication: builds again the files already asked for whose DAO it changed, so
    /// the next download finds them ready. `revisions` is each DAO's serving revision.
    pub async fn refresh(self: &Arc<Self>, revisions: &HashMap<String, i64>) -> anyhow::Result<()> {
        for row in catalogue::list(&self.db, None).await? {
            let Some(&revision) = revisions.get(&row.dao_id) else { continue };
            if row.state != ExportState::Ready || row.revision_id >= revision {
                continue;
            }
            let Some(file) = ExportFile::of(&row.table_name, &row.format) else { continue };
            self.start_build(&row.dao_id, file, revision).await?;
        }
        Ok(())
    }

    /// Notes that a file was served, off the request's path (bookkeeping never makes a read wait).
    pub fn served(self: &Arc<Self>, row: &ExportFileRow) {
        let (this, dao, table, format) = (self.clone(), row.dao_id.clone(), row.table_name.clone(), row.format.clone());
        tokio::spawn(async move {
            let key = FileKey { dao_id: &dao, table: &table, format: &format };
            if let Err(e) = catalogue::touch(&this.db, key).await {
                tracing::debug!(error = %e, "export use not recorded");
            }
        });
    }
}

fn gzip_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    PathBuf::from(name)
}

/// Writes the gzip encoding of `from` to `to`: its size.
fn gzip(from: &Path, to: &Path) -> std::io::Result<u64> {
    let mut input = BufReader::new(std::fs::File::open(from)?);
    let out = BufWriter::new(std::fs::File::create(to)?);
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    std::io::copy(&mut input, &mut encoder)?;
    let mut out = encoder.finish()?;
    out.flush()?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(file.metadata()?.len())
}

async fn remove(path: &Path) {
    for p in [path.to_owned(), gzip_name(path)] {
        match tokio::fs::remove_file(&p).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %p.display(), error = %e, "export file not removed"),
        }
    }
}
