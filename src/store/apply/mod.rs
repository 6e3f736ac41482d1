//! Publication of an ingestion run: the run's staged records are applied to the served tables,
//! the watermarks move, and a new data revision is published, all in one transaction.
//!
//! Readers on other connections see the revision before it or the revision it makes, never a
//! mix; a crash or kill at any point before the commit leaves everything served as it was (the
//! database rolls the transaction back). Every write is a compare-then-upsert on the natural key,
//! so applying the same records again changes nothing and publishes nothing.
//!
//! The appliers are one `impl` of `Applier` per kind of record, each in its own file: the
//! registry (`registry`), proposals, votes and voters (`proposals`), the forum (`forum`), and
//! delegates with the governor's delegation history (`delegation`). This file holds the run's
//! lifecycle around them: the writers' turn, the stages in order, the watermarks, publication
//! and the run's end.
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QuerySelect, Statement, TransactionTrait,
};

use super::entities::{ingestion_run, source_watermark};
use super::publish::{self, Scope, Touched};
use super::staging::{self, Record};
use super::upsert::{TableCounts, by_key, stored, upsert};
use crate::contract::vocabulary::{RunStatus, SourceKind};
use crate::store::upsert::kept;

mod actions;
mod delegation;
mod execution;
mod forum;
mod proposals;
mod registry;
mod simulations;

pub use delegation::GOVERNOR_ORIGIN;
pub use registry::{RegistryDao, RegistrySync};

/// Staged records read per round trip while applying.
const PAGE: u64 = 1000;

/// How one (DAO, source) pair of a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOutcome {
    pub dao_id: String,
    pub source: SourceKind,
    pub result: Result<Watermark, String>,
    /// Upstream items the connector could not read, with the reason: reported and skipped,
    /// never guessed, and never a reason to stop the source.
    pub skipped: Vec<String>,
}

/// How far a source's data is complete after a successful fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watermark {
    /// Upstream time up to which the data is complete (epoch ms).
    pub data_as_of_ms: i64,
    /// Where the next run resumes (Snapshot `created`, a block number, ...).
    pub position: Option<String>,
}

/// What publishing a run wrote.
#[derive(Debug, Clone, Default)]
pub struct PublishReport {
    pub revision_id: Option<i64>,
    pub proposals: TableCounts,
    pub votes: TableCounts,
    pub voters: TableCounts,
    pub topics: TableCounts,
    pub posts: TableCounts,
    pub delegates: TableCounts,
    pub delegations: TableCounts,
    /// The append-only governor history: every `DelegateChanged` and `DelegateVotesChanged`.
    pub delegation_changes: TableCounts,
    pub power_checkpoints: TableCounts,
    /// Proposal actions, stored once per proposal (serving them publishes nothing).
    pub proposal_actions: TableCounts,
    /// Proposal executions: each on-chain proposal's queue, execution and cancellation.
    pub proposal_executions: TableCounts,
    /// Proposal simulations kept (inserted) or redone (updated).
    pub proposal_simulations: TableCounts,
    /// Records that could not be applied (a vote for a proposal the store does not hold, an
    /// unreadable number), with the reason.
    pub skipped: Vec<String>,
    pub failed_sources: usize,
    /// Rows of `daos` and `data_sources` the registry added or changed.
    pub registry: TableCounts,
    /// What the applied rows changed: what publication recomputes.
    pub touched: Touched,
}

impl PublishReport {
    fn tables(&self) -> [(&'static str, TableCounts); 13] {
        [
            ("registry", self.registry),
            ("proposals", self.proposals),
            ("votes", self.votes),
            ("voters", self.voters),
            ("forum topics", self.topics),
            ("forum posts", self.posts),
            ("delegates", self.delegates),
            ("delegations", self.delegations),
            ("delegation changes", self.delegation_changes),
            ("power checkpoints", self.power_checkpoints),
            ("proposal actions", self.proposal_actions),
            ("proposal executions", self.proposal_executions),
            ("proposal simulations", self.proposal_simulations),
        ]
    }

    pub fn rows_written(&self) -> u64 {
        self.tables().iter().map(|(_, c)| c.written()).sum()
    }

    fn summary(&self, run_id: i64) -> String {
        let parts = super::upsert::describe(&self.tables());
        format!(
            "ingestion (run {run_id}): {}",
            if parts.is_empty() { "watermarks".to_owned() } else { parts.join(", ") }
        )
    }
}

impl fmt::Display for PublishReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.revision_id {
            Some(revision) => writeln!(f, "published revision {revision}")?,
            None => writeln!(f, "nothing changed, nothing published")?,
        }
        for (name, c) in self.tables() {
            writeln!(f, "  {name}: {} inserted, {} updated", c.inserted, c.updated)?;
        }
        writeln!(f, "  {} records skipped", self.skipped.len())?;
        for reason in self.skipped.iter().take(20) {
            writeln!(f, "    {reason}")?;
        }
        Ok(())
    }
}

/// Fault injection for the crash tests: hold the publication transaction open for this long
/// before committing, after logging `publication: holding`. Never set in production.
pub const HOLD_ENV: &str = "GOVDATA_TEST_HOLD_PUBLICATION_MS";

/// Applies run `run_id`'s staged records of the sources that succeeded, moves the watermarks,
/// publishes a revision when anything changed, and finishes the run, in one transaction.
pub async fn publish_run(
    db: &DatabaseConnection,
    run_id: i64,
    outcomes: &[SourceOutcome],
    registry: Option<&RegistrySync>,
) -> Result<PublishReport, DbErr> {
    let failed: Vec<&SourceOutcome> = outcomes.iter().filter(|o| o.result.is_err()).collect();
    for f in &failed {
        staging::discard(db, run_id, &f.dao_id, f.source).await?;
    }
    let now = publish::now_ms();
    let txn = db.begin().await?;
    take_the_writers_turn(&txn, run_id).await?;
    let mut report = PublishReport {
        failed_sources: failed.len(),
        // What the connectors could not read comes first; what could not be applied follows.
        skipped: outcomes.iter().filter(|o| o.result.is_ok()).flat_map(|o| o.skipped.iter().cloned()).collect(),
        ..Default::default()
    };
    let applier = Applier { txn: &txn, now_ms: now };
    if let Some(registry) = registry {
        let (counts, daos) = applier.registry(registry).await?;
        report.registry = counts;
        report.touched.daos.extend(daos);
    }
    let mut delegation_daos = BTreeSet::new();
    for stage in Record::STAGES {
        let mut after = 0;
        loop {
            let page = staging::page(&txn, run_id, stage, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.0;
            let records: Vec<Record> = page.into_iter().map(|(_, _, _, r)| r).collect();
            delegation_daos.extend(records.iter().filter_map(|r| match r {
                Record::Delegate(d) => Some(d.dao_id.clone()),
                Record::Delegation(d) => Some(d.dao_id.clone()),
                _ => None,
            }));
            applier.apply(records, &mut report).await?;
        }
    }
    let (moved, recounted) = applier.count_delegators(&delegation_daos).await?;
    report.delegates.updated += moved;
    report.touched.daos.extend(recounted);
    // A DAO's first completed source turns it from registry-only into data: a served change.
    report.touched.daos.extend(applier.watermarks(run_id, outcomes).await?);
    let scope = if publish::current_revision(&txn).await?.is_none() {
        Some(Scope::All)
    } else {
        due_by_time(&txn, &mut report.touched).await?;
        (!report.touched.is_empty()).then(|| Scope::Touched(report.touched.clone()))
    };
    match scope {
        Some(scope) => {
            let above = report.touched.delegation_changes_above;
            let summary = report.summary(run_id);
            report.revision_id = Some(publish::publish_appended(&txn, run_id, &summary, &scope, above).await?.id);
        }
        // Nothing served changed: freshness moves, the revision (cursors, caches) stays.
        None => {
            publish::move_freshness(&txn).await?;
        }
    }
    finish_run(&txn, run_id, outcomes, &report).await?;
    staging::clear(&txn, run_id).await?;
    if let Some(hold) = std::env::var(HOLD_ENV).ok().and_then(|v| v.parse::<u64>().ok()) {
        tracing::warn!(run_id, "publication: holding the transaction open for {hold} ms ({HOLD_ENV})");
        tokio::time::sleep(Duration::from_millis(hold)).await;
    }
    txn.commit().await?;
    Ok(report)
}

/// Changes that time alone makes due since each DAO's data time: an open proposal whose voting
/// started, an active one entering or leaving a deadline window.
async fn due_by_time(txn: &DatabaseTransaction, touched: &mut Touched) -> Result<(), DbErr> {
    let now = publish::now_ms();
    for (id, dao) in super::events::due_by_time(txn, now).await? {
        touched.proposals.insert(id);
        touched.daos.insert(dao);
    }
    let as_of = publish::dao_times(txn).await?;
    let later = publish::data_time(txn).await?;
    touched.daos.extend(super::signals::moved_by_time(txn, &as_of, later).await?);
    Ok(())
}

/// Publications from several processes (schedules, live refreshes, `govdata ingest`) take
/// turns, before reading anything: PostgreSQL on a transaction-scoped advisory lock; SQLite by
/// writing first, which takes its write lock (waiting up to the busy timeout) instead of
/// failing later on a read snapshot another writer made stale.
async fn take_the_writers_turn(txn: &DatabaseTransaction, run_id: i64) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    match backend {
        sea_orm::DbBackend::Postgres => publish::take_turn(txn).await?,
        _ => {
            let sql = "UPDATE ingestion_runs SET status = status WHERE id = $1";
            txn.execute_raw(Statement::from_sql_and_values(backend, sql, [run_id.into()])).await?;
        }
    }
    // A run whose beats stopped for long (a suspended process) may have been reclaimed by
    // another one meanwhile, its staged records dropped: it publishes nothing.
    let status = ingestion_run::Entity::find_by_id(run_id)
        .select_only()
        .column(ingestion_run::Column::Status)
        .into_tuple::<String>()
        .one(txn)
        .await?;
    match status.as_deref().map(RunStatus::parse) {
        Some(Ok(RunStatus::Running)) => Ok(()),
        _ => Err(DbErr::Custom(format!(
            "ingestion run {run_id} is {} and can no longer publish",
            status.as_deref().unwrap_or("gone")
        ))),
    }
}

/// `succeeded` when every source completed, `partial` when some failed, `failed` when all did.
fn run_status(outcomes: &[SourceOutcome]) -> RunStatus {
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    match failed {
        0 => RunStatus::Succeeded,
        n if n == outcomes.len() => RunStatus::Failed,
        _ => RunStatus::Partial,
    }
}

async fn finish_run(
    txn: &DatabaseTransaction,
    run_id: i64,
    outcomes: &[SourceOutcome],
    report: &PublishReport,
) -> Result<(), DbErr> {
    let errors: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().err().map(|e| format!("{}/{}: {e}", o.dao_id, o.source)))
        .collect();
    ingestion_run::ActiveModel {
        id: sea_orm::ActiveValue::Unchanged(run_id),
        finished_ms: Set(Some(publish::now_ms())),
        status: Set(run_status(outcomes)),
        rows_written: Set(report.rows_written() as i64),
        rows_skipped: Set(report.skipped.len() as i64),
        error: Set((!errors.is_empty()).then(|| errors.join("; "))),
        ..Default::default()
    }
    .update(txn)
    .await?;
    Ok(())
}

struct Applier<'a> {
    txn: &'a DatabaseTransaction,
    now_ms: i64,
}

impl Applier<'_> {
    /// Applies one page of records of one stage.
    async fn apply(&self, records: Vec<Record>, report: &mut PublishReport) -> Result<(), DbErr> {
        let mut proposals = Vec::new();
        let mut updates = Vec::new();
        let mut votes = Vec::new();
        let mut topics = Vec::new();
        let mut posts = Vec::new();
        let mut delegates = Vec::new();
        let mut delegations = Vec::new();
        let mut changes = Vec::new();
        let mut checkpoints = Vec::new();
        let mut actions = Vec::new();
        let mut executions = Vec::new();
        let mut simulations = Vec::new();
        let mut histories = Vec::new();
        for record in records {
            match record {
                Record::Proposal(r) => proposals.push(*r),
                Record::ProposalUpdate(r) => updates.push(r),
                Record::Vote(r) => votes.push(r),
                Record::Topic(r) => topics.push(r),
                Record::Post(r) => posts.push(r),
                Record::Delegate(r) => delegates.push(r),
                Record::Delegation(r) => delegations.push(r),
                Record::DelegationChange(r) => changes.push(r),
                Record::PowerCheckpoint(r) => checkpoints.push(r),
                Record::ProposalActions(r) => actions.push(r),
                Record::ProposalExecution(r) => executions.push(r),
                Record::ProposalSimulation(r) => simulations.push(r),
                Record::LifecycleHistory(r) => histories.push(r),
            }
        }
        let touched = &mut report.touched;
        add(&mut report.proposals, self.proposals(&proposals, touched).await?);
        add(&mut report.proposals, self.proposal_updates(&updates, touched).await?);
        if !votes.is_empty() {
            let (voters, votes) = self.votes(&votes, &mut report.skipped, touched).await?;
            add(&mut report.voters, voters);
            add(&mut report.votes, votes);
        }
        add(&mut report.topics, self.topics(&topics, touched).await?);
        add(&mut report.posts, self.posts(&posts, &mut report.skipped, touched).await?);
        add(&mut report.delegates, self.delegates(&delegates, &mut report.skipped, touched).await?);
        add(&mut report.delegations, self.delegations(&delegations, touched).await?);
        add(&mut report.delegation_changes, self.delegation_changes(changes, touched).await?);
        add(&mut report.power_checkpoints, self.power_checkpoints(checkpoints, touched).await?);
        add(
            &mut report.proposal_actions,
            self.proposal_actions(&actions, &mut report.skipped, &mut report.touched).await?,
        );
        let executions = self.proposal_executions(&executions, &mut report.skipped, &mut report.touched).await?;
        add(&mut report.proposal_executions, executions);
        let simulated = self.proposal_simulations(&simulations, &mut report.skipped, &mut report.touched).await?;
        add(&mut report.proposal_simulations, simulated);
        self.lifecycle_histories(&histories).await?;
        Ok(())
    }

    /// Records each source's outcome. A success moves `data_as_of` forward (never back) and
    /// sets the resume position; a failure keeps both and records the error. Returns the DAOs
    /// that had no data time before (registry-only until now: a served change).
    async fn watermarks(&self, run_id: i64, outcomes: &[SourceOutcome]) -> Result<BTreeSet<String>, DbErr> {
        let daos: BTreeSet<String> = outcomes.iter().map(|o| o.dao_id.clone()).collect();
        let stored = stored::<source_watermark::Entity, _>(self.txn, source_watermark::Column::DaoId, daos).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.source));
        let had_time: BTreeSet<&str> =
            stored.values().filter(|w| w.data_as_of_ms.is_some()).map(|w| w.dao_id.as_str()).collect();
        let mut first = BTreeSet::new();
        let mut rows = Vec::new();
        for o in outcomes {
            let old = stored.get(&(o.dao_id.clone(), o.source));
            let (data_as_of_ms, position, status, error) = match &o.result {
                Ok(w) => {
                    let as_of = old.and_then(|s| s.data_as_of_ms).map_or(w.data_as_of_ms, |s| s.max(w.data_as_of_ms));
                    if !had_time.contains(o.dao_id.as_str()) {
                        first.insert(o.dao_id.clone());
                    }
                    (Some(as_of), w.position.clone().or_else(|| kept!(old, position)), RunStatus::Succeeded, None)
                }
                Err(e) => (old.and_then(|s| s.data_as_of_ms), kept!(old, position), RunStatus::Failed, Some(e.clone())),
            };
            rows.push(source_watermark::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: o.dao_id.clone(),
                source: o.source,
                data_as_of_ms,
                position,
                last_run_id: Some(run_id),
                last_status: Some(status.as_str().to_owned()),
                last_error: error,
                updated_ms: self.now_ms,
            });
        }
        let natural = [source_watermark::Column::DaoId, source_watermark::Column::Source];
        upsert::<source_watermark::Entity>(self.txn, rows, &natural, Some(source_watermark::Column::Id)).await?;
        Ok(first)
    }
}

fn add(total: &mut TableCounts, more: TableCounts) {
    total.inserted += more.inserted;
    total.updated += more.updated;
}
