//! Ingestion: connectors fetch each registered DAO's sources into staging, then one transaction
//! publishes the run as a new data revision (`store::apply`).
//!
//! A run: sync nothing yet, start an `ingestion_runs` row, run every (DAO, source) job with
//! bounded concurrency, each one appending normalised records to staging as it pages; then apply
//! the records of the jobs that completed, move their watermarks, record the failures, publish.
//! A failing source is recorded on its watermark and in the run's error and never blocks the
//! others; a partial fetch is discarded, never published.
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use futures_util::{StreamExt, stream};
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseConnection};

use crate::contract::vocabulary::{RunStatus, RunTrigger};
use crate::store::apply::{self, PublishReport, SourceOutcome, Watermark};
use crate::store::entities::ingestion_run;
use crate::store::staging::{self, Record};

pub mod discourse;
pub mod governor;
pub mod http;
pub mod osnap;
pub mod registry;
pub mod schedule;
pub mod snapshot;
pub mod sourcify;
pub mod staged_actions;

pub use http::{RetryPolicy, Upstream, UpstreamError};
pub use registry::{CONNECTED, DaoEntry, Registry};

use crate::contract::vocabulary::SourceKind;

/// (DAO, source) jobs run at once.
const JOB_CONCURRENCY: usize = 4;
/// Records buffered before a staging write.
const SINK_BATCH: usize = 500;

/// What one connector needs to know about the store to resume.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    /// The position the last successful run of this (DAO, source) reached.
    pub position: Option<String>,
    /// External ids of this DAO's proposals from this source that can still change.
    pub open_proposals: Vec<String>,
    /// The block each of those proposals was created in, where it has one (on-chain sources).
    pub created_blocks: HashMap<String, u64>,
    /// On-chain proposals stored without their actions (stored before actions were kept) or with
    /// an older decoder's answers, with the block each was created in where the store has it:
    /// their actions are read once (once per decoder version).
    pub without_actions: Vec<(String, Option<u64>)>,
    /// The open on-chain proposals' stored actions and latest kept simulation, by external id
    /// (only those with stored actions): what simulating them needs.
    pub simulation_inputs: HashMap<String, crate::store::staging::SimulationInput>,
    /// The block from which the governor's lifecycle logs are read again, once, for proposals
    /// stored before lifecycles were kept (`staging::lifecycle_history_from`).
    pub lifecycle_history_from: Option<u64>,
}

/// Where a connector puts what it fetched: staging, in batches.
pub struct Sink<'a> {
    db: &'a DatabaseConnection,
    run_id: i64,
    source: SourceKind,
    buffer: Vec<Record>,
    pub staged: u64,
    /// Upstream items that could not be read, with the reason (the first `MAX_SKIPPED`).
    pub skipped: Vec<String>,
}

/// Skipped items listed per source and run; beyond, they are counted in the log only.
const MAX_SKIPPED: usize = 1000;

impl<'a> Sink<'a> {
    pub fn new(db: &'a DatabaseConnection, run_id: i64, source: SourceKind) -> Self {
        Self { db, run_id, source, buffer: Vec::with_capacity(SINK_BATCH), staged: 0, skipped: Vec::new() }
    }

    /// Reports an upstream item that cannot be read; the source goes on without it.
    pub fn skip(&mut self, reason: String) {
        tracing::warn!(source = %self.source, "skipped: {reason}");
        if self.skipped.len() < MAX_SKIPPED {
            self.skipped.push(reason);
        }
    }

    pub async fn push(&mut self, record: Record) -> anyhow::Result<()> {
        self.buffer.push(record);
        if self.buffer.len() >= SINK_BATCH {
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> anyhow::Result<()> {
        if !self.buffer.is_empty() {
            staging::append(self.db, self.run_id, self.source, &self.buffer).await?;
            self.staged += self.buffer.len() as u64;
            self.buffer.clear();
        }
        Ok(())
    }
}

/// One source of one DAO: fetches what changed since `resume` into `sink` and says how far the
/// data is now complete.
pub trait Connector {
    fn fetch(
        &self,
        resume: &Resume,
        sink: &mut Sink<'_>,
    ) -> impl std::future::Future<Output = anyhow::Result<Watermark>> + Send;
}

/// Which part of the registry a run covers, and how it behaves upstream.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub dao: Option<String>,
    pub source: Option<SourceKind>,
    /// `manual`, `schedule` or `live`.
    pub trigger: RunTrigger,
    pub policy: RetryPolicy,
    /// Where the governor connector looks up the verified ABIs of the contracts proposals call;
    /// `None`: nowhere (no outbound call).
    pub sourcify: Option<crate::config::SourcifySettings>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self { dao: None, source: None, trigger: RunTrigger::Manual, policy: RetryPolicy::default(), sourcify: None }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub run_id: i64,
    pub outcomes: Vec<SourceOutcome>,
    pub published: PublishReport,
}

impl std::fmt::Display for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "ingestion run {}", self.run_id)?;
        for o in &self.outcomes {
            match &o.result {
                Ok(w) => writeln!(
                    f,
                    "  {}/{}: ok, complete to {}",
                    o.dao_id,
                    o.source,
                    crate::contract::time::rfc3339_ms(w.data_as_of_ms)
                )?,
                Err(e) => writeln!(f, "  {}/{}: FAILED: {e}", o.dao_id, o.source)?,
            }
        }
        write!(f, "{}", self.published)
    }
}

/// The registry file from `--registry` / `GOVDATA_REGISTRY`, or the bundled one.
pub fn load_registry(path: Option<&PathBuf>) -> anyhow::Result<Registry> {
    Registry::load(path.map(PathBuf::as_path))
}

/// Runs every selected (DAO, source) job once and publishes the result.
pub async fn run_once(db: &DatabaseConnection, registry: &Registry, options: &RunOptions) -> anyhow::Result<RunReport> {
    let jobs = select(registry, options)?;
    let run = start_run(db, options).await?;
    let _alive = Heartbeat::start(db.clone(), run.id, staging::HEARTBEAT);
    let reclaimed = staging::reclaim(db, run.id, staging::stale_before(run.started_ms)).await?;
    if reclaimed > 0 {
        tracing::info!(reclaimed, "dropped staged records of runs that did not finish");
    }
    // One Sourcify client per run, shared by its jobs (its concurrency bound holds across them).
    let sourcify = options.sourcify.as_ref().map(sourcify::Sourcify::new);
    let jobs: Vec<_> = jobs
        .into_iter()
        .map(|(dao, kind)| run_job(db, run.id, dao, kind, &options.policy, sourcify.as_ref()))
        .collect();
    let outcomes: Vec<SourceOutcome> = stream::iter(jobs).buffer_unordered(JOB_CONCURRENCY).collect().await;
    let sync = apply::RegistrySync { daos: registry.daos.iter().map(registry_row).collect() };
    // One publication at a time in this process (a scheduled run and a live refresh may finish
    // together). The store orders publications across processes (`store::apply`); waiting here
    // as well means a long publication is never cut short by SQLite's busy timeout.
    static PUBLISHING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = PUBLISHING.lock().await;
    let metrics = &crate::metrics::METRICS;
    let publishing = std::time::Instant::now();
    let trigger = options.trigger.as_str();
    match apply::publish_run(db, run.id, &outcomes, Some(&sync)).await {
        Ok(published) => {
            let outcome = if published.revision_id.is_some() { "published" } else { "unchanged" };
            metrics.publication_seconds.with_label_values(&[outcome]).observe(publishing.elapsed().as_secs_f64());
            let complete = outcomes.iter().all(|o| o.result.is_ok());
            metrics.ingest_runs.with_label_values(&[trigger, if complete { "ok" } else { "partial" }]).inc();
            Ok(RunReport { run_id: run.id, outcomes, published })
        }
        Err(error) => {
            metrics.ingest_runs.with_label_values(&[trigger, "failed"]).inc();
            tracing::error!(run = run.id, "publishing the run failed: {error}");
            let error = anyhow::Error::from(error).context("publishing the run failed; nothing was published");
            fail_run(db, run, &error).await;
            Err(error)
        }
    }
}

/// The (DAO, source) pairs a run covers; an unknown DAO or a DAO without the asked source is an error.
fn select<'r>(registry: &'r Registry, options: &RunOptions) -> anyhow::Result<Vec<(&'r DaoEntry, SourceKind)>> {
    let daos: Vec<&DaoEntry> = match &options.dao {
        Some(id) => vec![registry.dao(id).with_context(|| {
            let known: Vec<&str> = registry.daos.iter().map(|d| d.id.as_str()).collect();
            format!("no DAO `{id}` in the registry; it has {}", known.join(", "))
        })?],
        None => registry.daos.iter().collect(),
    };
    let kinds: Vec<SourceKind> = options.source.map_or_else(|| CONNECTED.to_vec(), |k| vec![k]);
    let jobs: Vec<_> = daos.iter().flat_map(|d| kinds.iter().filter(|k| d.has(**k)).map(move |k| (*d, *k))).collect();
    if jobs.is_empty()
        && let (Some(dao), Some(kind)) = (&options.dao, options.source)
    {
        bail!("DAO `{dao}` has no {kind} source in the registry");
    }
    Ok(jobs)
}

async fn run_job(
    db: &DatabaseConnection,
    run_id: i64,
    dao: &DaoEntry,
    kind: SourceKind,
    policy: &RetryPolicy,
    sourcify: Option<&sourcify::Sourcify>,
) -> SourceOutcome {
    let started = std::time::Instant::now();
    let (result, skipped) = match fetch(db, run_id, dao, kind, policy, sourcify).await {
        Ok((watermark, skipped)) => (Ok(watermark), skipped),
        Err(e) => (Err(e), Vec::new()),
    };
    let metrics = &crate::metrics::METRICS;
    metrics.ingest_source_seconds.with_label_values(&[kind.as_str()]).observe(started.elapsed().as_secs_f64());
    match &result {
        Ok(w) => {
            tracing::info!(run = run_id, dao = dao.id, source = %kind, ms = started.elapsed().as_millis() as u64, position = ?w.position, "source fetched")
        }
        Err(e) => {
            metrics.ingest_source_failures.with_label_values(&[kind.as_str()]).inc();
            tracing::warn!(run = run_id, dao = dao.id, source = %kind, "source failed: {e:#}")
        }
    }
    SourceOutcome { dao_id: dao.id.clone(), source: kind, result: result.map_err(|e| format!("{e:#}")), skipped }
}

async fn fetch(
    db: &DatabaseConnection,
    run_id: i64,
    dao: &DaoEntry,
    kind: SourceKind,
    policy: &RetryPolicy,
    sourcify: Option<&sourcify::Sourcify>,
) -> anyhow::Result<(Watermark, Vec<String>)> {
    let (position, open) = crate::store::staging::resume(db, &dao.id, kind).await?;
    let created_blocks =
        open.iter().filter_map(|(id, block)| Some((id.clone(), u64::try_from((*block)?).ok()?))).collect();
    let without_actions = match kind {
        SourceKind::Onchain => crate::store::staging::without_actions(db, &dao.id, crate::contract::time::now_ms())
            .await?
            .into_iter()
            .map(|(id, block)| (id, block.and_then(|b| u64::try_from(b).ok())))
            .collect(),
        _ => Vec::new(),
    };
    let open_proposals: Vec<String> = open.into_iter().map(|(id, _)| id).collect();
    let simulation_inputs = match kind {
        SourceKind::Onchain => crate::store::staging::simulation_inputs(db, &dao.id, &open_proposals).await?,
        _ => HashMap::new(),
    };
    let lifecycle_history_from = match kind {
        SourceKind::Onchain => {
            crate::store::staging::lifecycle_history_from(db, &dao.id).await?.and_then(|b| u64::try_from(b).ok())
        }
        _ => None,
    };
    let resume =
        Resume { position, open_proposals, created_blocks, without_actions, simulation_inputs, lifecycle_history_from };
    let upstream = Upstream::new(policy.clone());
    let mut sink = Sink::new(db, run_id, kind);
    let watermark = match kind {
        SourceKind::Snapshot => {
            let source = dao.snapshot.as_ref().expect("selected jobs have their source");
            snapshot::SnapshotConnector { upstream, dao_id: dao.id.clone(), source: source.clone() }
                .fetch(&resume, &mut sink)
                .await?
        }
        SourceKind::Discourse => {
            let source = dao.discourse.as_ref().expect("selected jobs have their source");
            discourse::DiscourseConnector { upstream, dao_id: dao.id.clone(), source: source.clone() }
                .fetch(&resume, &mut sink)
                .await?
        }
        SourceKind::Onchain => {
            let source = dao.onchain.as_ref().expect("selected jobs have their source");
            governor::GovernorConnector {
                upstream,
                dao_id: dao.id.clone(),
                source: source.clone(),
                db: db.clone(),
                sourcify: sourcify.cloned(),
            }
            .fetch(&resume, &mut sink)
            .await?
        }
        SourceKind::Tally => anyhow::bail!("no connector ingests {kind}: its delegates come from the bundled export"),
    };
    sink.flush().await?;
    crate::metrics::METRICS.ingest_source_rows.with_label_values(&[kind.as_str()]).inc_by(sink.staged);
    Ok((watermark, sink.skipped))
}

/// The registry's view of a DAO as the `daos` and `data_sources` tables hold it.
fn registry_row(d: &DaoEntry) -> apply::RegistryDao {
    let mut sources = Vec::new();
    if let Some(s) = &d.snapshot {
        sources.push((
            SourceKind::Snapshot,
            s.space.clone(),
            Some(crate::contract::urls::snapshot_space_url(&s.space)),
        ));
    }
    if let Some(s) = &d.discourse {
        sources.push((SourceKind::Discourse, s.url.clone(), Some(s.url.clone())));
    }
    if let Some(s) = &d.onchain {
        sources.push((SourceKind::Onchain, s.governor.to_ascii_lowercase(), None));
    }
    apply::RegistryDao {
        id: d.id.clone(),
        name: d.name.clone(),
        symbol: d.symbol.clone(),
        snapshot_space: d.snapshot.as_ref().map(|s| s.space.clone()),
        discourse_url: d.discourse.as_ref().map(|s| s.url.clone()),
        chain_id: d.onchain.as_ref().map(|s| s.chain_id as i64),
        governor: d.onchain.as_ref().map(|s| s.governor.to_ascii_lowercase()),
        token: d.onchain.as_ref().map(|s| s.token.to_ascii_lowercase()),
        sources,
    }
}

/// Says, every `every`, that a run is alive, until dropped or until the run is no longer
/// running; other processes reclaim a run whose beats stopped (`staging::reclaim`).
pub struct Heartbeat(tokio::task::JoinHandle<()>);

impl Heartbeat {
    pub fn start(db: DatabaseConnection, run_id: i64, every: Duration) -> Self {
        Self(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await; // the first tick is now: `start_run` stamped the run already
            loop {
                ticks.tick().await;
                match staging::beat(&db, run_id, crate::store::publish::now_ms()).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    // Behind another process's publication on SQLite, or the store is away
                    // for a moment: the next beat tries again.
                    Err(e) => tracing::warn!(run = run_id, "ingestion heartbeat failed: {e}"),
                }
            }
        }))
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Records a run as started (running, beating from now) for `options`: what a run stages its
/// records under.
pub async fn start_run(db: &DatabaseConnection, options: &RunOptions) -> anyhow::Result<ingestion_run::Model> {
    let now = crate::store::publish::now_ms();
    Ok(ingestion_run::ActiveModel {
        trigger: Set(options.trigger),
        dao_filter: Set(options.dao.clone()),
        source_filter: Set(options.source.map(|k| k.as_str().to_owned())),
        started_ms: Set(now),
        heartbeat_ms: Set(Some(now)),
        status: Set(RunStatus::Running),
        rows_written: Set(0),
        rows_skipped: Set(0),
        ..Default::default()
    }
    .insert(db)
    .await?)
}

async fn fail_run(db: &DatabaseConnection, run: ingestion_run::Model, error: &anyhow::Error) {
    let mut run: ingestion_run::ActiveModel = run.into();
    run.finished_ms = Set(Some(crate::store::publish::now_ms()));
    run.status = Set(RunStatus::Failed);
    run.error = Set(Some(format!("{error:#}")));
    if let Err(e) = run.update(db).await {
        tracing::error!("could not mark the failed ingestion run: {e}");
    }
}
