//! Publication of an ingestion run: the run's staged records are applied to the served tables,
//! the watermarks move, and a new data revision is published, all in one transaction.
//!
//! Readers on other connections see the revision before it or the revision it makes, never a
//! mix; a crash or kill at any point before the commit leaves everything served as it was (the
//! database rolls the transaction back). Every write is a compare-then-upsert on the natural key,
//! so applying the same records again changes nothing and publishes nothing.
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{NotSet, Set},
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait, QuerySelect, Statement,
    TransactionTrait,
};

use super::address::AccountBytes;
use super::entities::{
    dao, data_source, delegate, delegation, delegation_change, forum_post, forum_topic, ingestion_run,
    power_checkpoint, proposal, source_watermark, vote, voter,
};
use super::facts::TallyDelta;
use super::publish::{Scope, Touched};
use super::staging::{
    self, DelegateRecord, DelegationChangeRecord, DelegationRecord, PostRecord, PowerCheckpointRecord, ProposalRecord,
    ProposalUpdate, Record, TopicRecord, VoteRecord,
};
use super::stored::{Choices, Scores, Tags};
use super::upsert::{Changes, TableCounts, by_key, stored, upsert};
use super::{address, keys, publish, sort_keys};
use crate::contract::decimal;
use crate::contract::vocabulary::{ProposalSource, RunStatus, SourceKind};
use crate::store::upsert::kept;

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
    fn tables(&self) -> [(&'static str, TableCounts); 10] {
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

/// The registry as the `daos` and `data_sources` tables hold it.
#[derive(Debug, Clone)]
pub struct RegistrySync {
    pub daos: Vec<RegistryDao>,
}

#[derive(Debug, Clone)]
pub struct RegistryDao {
    pub id: String,
    pub name: String,
    pub symbol: Option<String>,
    pub snapshot_space: Option<String>,
    pub discourse_url: Option<String>,
    pub chain_id: Option<i64>,
    pub governor: Option<String>,
    pub token: Option<String>,
    /// (kind, locator, url) per configured source.
    pub sources: Vec<(SourceKind, String, Option<String>)>,
}

struct Applier<'a> {
    txn: &'a DatabaseTransaction,
    now_ms: i64,
}

impl Applier<'_> {
    /// Registers every DAO of the registry and its sources. A DAO or source that left the
    /// registry is kept: what was ingested for it stays served.
    async fn registry(&self, registry: &RegistrySync) -> Result<(TableCounts, BTreeSet<String>), DbErr> {
        let stored = by_key(dao::Entity::find().all(self.txn).await?, |m| m.id.clone());
        let mut daos = Changes::default();
        for r in &registry.daos {
            let old = stored.get(&r.id);
            let desired = dao::Model {
                id: r.id.clone(),
                name: r.name.clone(),
                symbol: r.symbol.clone().or_else(|| kept!(old, symbol)),
                snapshot_space: r.snapshot_space.clone().or_else(|| kept!(old, snapshot_space)),
                discourse_url: r.discourse_url.clone().or_else(|| kept!(old, discourse_url)),
                chain_id: r.chain_id.or_else(|| old.and_then(|s| s.chain_id)),
                governor: r.governor.clone().or_else(|| kept!(old, governor)),
                token: r.token.clone().or_else(|| kept!(old, token)),
                registered_ms: old.map_or(self.now_ms, |s| s.registered_ms),
            };
            daos.offer(old, desired, |_| {});
        }
        let mut touched: BTreeSet<String> = daos.rows.iter().map(|d| d.id.clone()).collect();
        upsert::<dao::Entity>(self.txn, daos.rows, &[dao::Column::Id], None).await?;

        let stored = by_key(data_source::Entity::find().all(self.txn).await?, |m| (m.dao_id.clone(), m.kind));
        let mut sources = Changes::default();
        for r in &registry.daos {
            for (kind, locator, url) in &r.sources {
                let old = stored.get(&(r.id.clone(), *kind));
                let desired = data_source::Model {
                    id: old.map_or(0, |s| s.id),
                    dao_id: r.id.clone(),
                    kind: *kind,
                    locator: locator.clone(),
                    url: url.clone(),
                };
                sources.offer(old, desired, |_| {});
            }
        }
        touched.extend(sources.rows.iter().map(|s| s.dao_id.clone()));
        let natural = [data_source::Column::DaoId, data_source::Column::Kind];
        upsert::<data_source::Entity>(self.txn, sources.rows, &natural, Some(data_source::Column::Id)).await?;
        let counts = TableCounts {
            inserted: daos.counts.inserted + sources.counts.inserted,
            updated: daos.counts.updated + sources.counts.updated,
        };
        Ok((counts, touched))
    }

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
        Ok(())
    }

    /// Appends delegation changes; one already stored (the same log, read again) is kept as it is.
    async fn delegation_changes(
        &self,
        rows: Vec<DelegationChangeRecord>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        use delegation_change::Column as C;
        if !rows.is_empty() && touched.delegation_changes_above.is_none() {
            touched.delegation_changes_above = Some(super::governor::last_change_id(self.txn).await?);
        }
        let models = rows
            .into_iter()
            .map(|r| {
                Ok(delegation_change::ActiveModel {
                    id: NotSet,
                    delegator: Set(account(&r.delegator)?),
                    from_delegate: Set(account(&r.from_delegate)?),
                    to_delegate: Set(account(&r.to_delegate)?),
                    dao_id: Set(r.dao_id),
                    power_moved_raw: Set(r.power_moved_raw),
                    decimals: Set(r.decimals as i32),
                    block_number: Set(r.block_number),
                    log_index: Set(r.log_index),
                    tx_hash: Set(r.tx_hash),
                    at_ms: Set(r.at_ms),
                    supply_raw: Set(r.supply_raw),
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        append::<delegation_change::Entity>(self.txn, models, &[C::DaoId, C::BlockNumber, C::LogIndex], touched, |m| {
            m.dao_id.clone().unwrap()
        })
        .await
    }

    /// Appends voting power checkpoints, as [`Self::delegation_changes`] does.
    async fn power_checkpoints(
        &self,
        rows: Vec<PowerCheckpointRecord>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        use power_checkpoint::Column as C;
        let models = rows
            .into_iter()
            .map(|r| {
                Ok(power_checkpoint::ActiveModel {
                    id: NotSet,
                    delegate: Set(account(&r.delegate)?),
                    cause_delegator: Set(r.cause_delegator.as_deref().map(account).transpose()?),
                    dao_id: Set(r.dao_id),
                    previous_raw: Set(r.previous_raw),
                    power_raw: Set(r.power_raw),
                    decimals: Set(r.decimals as i32),
                    cause: Set(r.cause),
                    block_number: Set(r.block_number),
                    log_index: Set(r.log_index),
                    tx_hash: Set(r.tx_hash),
                    at_ms: Set(r.at_ms),
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        append::<power_checkpoint::Entity>(self.txn, models, &[C::DaoId, C::BlockNumber, C::LogIndex], touched, |m| {
            m.dao_id.clone().unwrap()
        })
        .await
    }

    /// Each holder's delegate; an event older than the stored one is ignored.
    async fn delegations(&self, rows: &[DelegationRecord], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let holders: BTreeSet<String> = rows.iter().map(|r| r.delegator.clone()).collect();
        let stored = stored::<delegation::Entity, _>(self.txn, delegation::Column::Delegator, holders).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.delegator.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.delegator.clone()));
            if old.is_some_and(|o| o.block_number > r.block_number) {
                continue;
            }
            let desired = delegation::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                delegator: r.delegator.clone(),
                delegate: r.delegate.clone(),
                block_number: r.block_number,
            };
            changes.offer(old, desired, |_| {});
        }
        touched.daos.extend(changes.rows.iter().map(|d| d.dao_id.clone()));
        let natural = [delegation::Column::DaoId, delegation::Column::Delegator];
        upsert::<delegation::Entity>(self.txn, changes.rows, &natural, Some(delegation::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Sets each governor delegate's `delegators_count` of the DAOs in `daos` from the stored
    /// delegations, rewriting only the counts that moved. Returns how many moved, and where.
    async fn count_delegators(&self, daos: &BTreeSet<String>) -> Result<(u64, BTreeSet<String>), DbErr> {
        let (mut moved, mut touched) = (0, BTreeSet::new());
        for dao in daos {
            let stmt = Statement::from_sql_and_values(
                self.txn.get_database_backend(),
                COUNT_DELEGATORS,
                [dao.clone().into(), GOVERNOR_ORIGIN.into()],
            );
            let n = self.txn.execute_raw(stmt).await?.rows_affected();
            if n > 0 {
                touched.insert(dao.clone());
            }
            moved += n;
        }
        Ok((moved, touched))
    }

    /// Stored proposals whose external id is one of `ids`, by (dao, source, external id).
    async fn stored_proposals(
        &self,
        ids: BTreeSet<String>,
    ) -> Result<HashMap<(String, ProposalSource, String), proposal::Model>, DbErr> {
        let found = stored::<proposal::Entity, _>(self.txn, proposal::Column::ExternalId, ids).await?;
        Ok(by_key(found, |m| (m.dao_id.clone(), m.source, m.external_id.clone())))
    }

    async fn proposals(&self, rows: &[ProposalRecord], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.external_id.clone()).collect()).await?;
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.source, r.external_id.clone()));
            let desired = proposal::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                source: r.source,
                external_id: r.external_id.clone(),
                proposal_key: keys::proposal_key(&r.dao_id, r.source.as_str(), &r.external_id),
                title: r.title.clone(),
                body: r.body.clone().or_else(|| kept!(old, body)),
                author: r.author.clone(),
                voting_type: r.voting_type.clone().or_else(|| kept!(old, voting_type)),
                state: r.state,
                choices: r.choices.clone().map(Choices).or_else(|| kept!(old, choices)),
                scores: r.scores.clone().map(Scores).or_else(|| kept!(old, scores)),
                scores_total: r.scores_total.clone().or_else(|| kept!(old, scores_total)),
                scores_state: r.scores_state.clone().or_else(|| kept!(old, scores_state)),
                quorum: r.quorum.clone().or_else(|| kept!(old, quorum)),
                top_choice_pct: top_choice_pct(r.scores.as_deref(), r.scores_total.as_deref())
                    .or_else(|| kept!(old, top_choice_pct)),
                start_ms: r.start_ms.or_else(|| old.and_then(|s| s.start_ms)),
                end_ms: r.end_ms.or_else(|| old.and_then(|s| s.end_ms)),
                created_ms: r.created_ms,
                upstream_vote_count: r.upstream_vote_count.or_else(|| old.and_then(|s| s.upstream_vote_count)),
                ingested_vote_count: old.map_or(0, |s| s.ingested_vote_count),
                url: r.url.clone().or_else(|| kept!(old, url)),
                discussion_url: r.discussion_url.clone().or_else(|| kept!(old, discussion_url)),
                ipfs: r.ipfs.clone().or_else(|| kept!(old, ipfs)),
                snapshot_block: r.snapshot_block.clone().or_else(|| kept!(old, snapshot_block)),
                tx_hash: r.tx_hash.clone().or_else(|| kept!(old, tx_hash)),
                block_number: r.block_number.or_else(|| old.and_then(|s| s.block_number)),
                counting_mode: r.counting_mode.clone().or_else(|| kept!(old, counting_mode)),
                clock_mode: r.clock_mode.clone().or_else(|| kept!(old, clock_mode)),
                privacy: r.privacy.clone().or_else(|| kept!(old, privacy)),
                origin: r.origin.clone(),
                updated_ms: old.map_or(0, |s| s.updated_ms),
            };
            let now = self.now_ms;
            changes.offer(old, desired, |m| m.updated_ms = now);
        }
        let written: BTreeSet<(String, ProposalSource, String)> =
            changes.rows.iter().map(|p| (p.dao_id.clone(), p.source, p.external_id.clone())).collect();
        let natural = [proposal::Column::DaoId, proposal::Column::Source, proposal::Column::ExternalId];
        upsert::<proposal::Entity>(self.txn, changes.rows, &natural, Some(proposal::Column::Id)).await?;
        // New rows got their ids from the database.
        let ids = self.stored_proposals(written.iter().map(|k| k.2.clone()).collect()).await?;
        for key in &written {
            if let Some(p) = ids.get(key) {
                touched.proposals.insert(p.id);
                touched.daos.insert(p.dao_id.clone());
            }
        }
        Ok(changes.counts)
    }

    async fn proposal_updates(&self, rows: &[ProposalUpdate], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let mut changes = Changes::default();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(old) = stored.get(&key) else { continue };
            let mut desired = old.clone();
            if let Some(state) = r.state {
                desired.state = state;
            }
            desired.scores = r.scores.clone().map(Scores).or(desired.scores);
            desired.scores_total = r.scores_total.clone().or(desired.scores_total);
            desired.quorum = r.quorum.clone().or(desired.quorum);
            desired.start_ms = r.start_ms.or(desired.start_ms);
            desired.end_ms = r.end_ms.or(desired.end_ms);
            desired.counting_mode = r.counting_mode.clone().or(desired.counting_mode);
            desired.clock_mode = r.clock_mode.clone().or(desired.clock_mode);
            if r.scores.is_some() {
                desired.top_choice_pct =
                    top_choice_pct(r.scores.as_deref(), r.scores_total.as_deref()).or(desired.top_choice_pct);
            }
            let now = self.now_ms;
            changes.offer(Some(old), desired, |m| m.updated_ms = now);
        }
        touched.proposals.extend(changes.rows.iter().map(|p| p.id));
        touched.daos.extend(changes.rows.iter().map(|p| p.dao_id.clone()));
        let natural = [proposal::Column::DaoId, proposal::Column::Source, proposal::Column::ExternalId];
        upsert::<proposal::Entity>(self.txn, changes.rows, &natural, Some(proposal::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Votes and the voters they introduce.
    async fn votes(
        &self,
        rows: &[VoteRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<(TableCounts, TableCounts), DbErr> {
        let proposals = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let stored = self.stored_votes(rows, &proposals).await?;
        let mut first_seen: HashMap<String, i64> = HashMap::new();
        let mut changes = Changes::default();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = proposals.get(&key) else {
                skipped.push(format!("vote of {} on {}: the proposal is not stored", r.voter, r.proposal.external_id));
                continue;
            };
            let vp_sort = match sort_keys::parse_amount(&r.voting_power) {
                Ok((_, sort)) => sort,
                Err(e) => {
                    skipped.push(format!("vote of {} on {}: {e}", r.voter, r.proposal.external_id));
                    continue;
                }
            };
            let Ok(voter) = AccountBytes::parse(&r.voter) else {
                skipped.push(format!("vote of {} on {}: the voter is not an address", r.voter, r.proposal.external_id));
                continue;
            };
            let seen = first_seen.entry(r.voter.clone()).or_insert(r.created_ms);
            *seen = (*seen).min(r.created_ms);
            let old = stored.get(&(proposal.id, voter.clone()));
            let voting_type = proposal.voting_type.clone();
            let desired = vote::Model {
                id: old.map_or(0, |s| s.id),
                proposal_id: proposal.id,
                dao_id: r.dao_id.clone(),
                voter,
                choice: r.choice.clone(),
                voting_power: r.voting_power.clone(),
                vp_sort,
                vp_from_float: r.vp_from_float,
                reason: r.reason.clone().filter(|s| !s.is_empty()).or_else(|| kept!(old, reason)),
                created_ms: r.created_ms,
                ipfs: r.ipfs.clone().or_else(|| kept!(old, ipfs)),
                tx_hash: r.tx_hash.clone().or_else(|| kept!(old, tx_hash)),
                block_number: r.block_number.or_else(|| old.and_then(|s| s.block_number)),
            };
            if old != Some(&desired) {
                touched
                    .tallies
                    .entry(proposal.id)
                    .or_insert_with(|| TallyDelta { voting_type, ..TallyDelta::default() })
                    .record(
                        (&desired.choice, &desired.voting_power),
                        old.map(|o| (o.choice.as_str(), o.voting_power.as_str())),
                    );
            }
            changes.offer(old, desired, |_| {});
        }
        let voters = self.voters(first_seen).await?;
        touched.new_voters += voters.inserted;
        for v in &changes.rows {
            touched.voted.insert(v.proposal_id);
            touched.voters.insert((v.dao_id.clone(), v.voter.lower()));
            touched.daos.insert(v.dao_id.clone());
        }
        let natural = [vote::Column::ProposalId, vote::Column::Voter];
        upsert::<vote::Entity>(self.txn, changes.rows, &natural, Some(vote::Column::Id)).await?;
        Ok((voters, changes.counts))
    }

    /// The stored votes these records may replace, found by their natural key (proposal, voter)
    /// through its unique index: the cost follows the page, not the proposals' vote counts.
    async fn stored_votes(
        &self,
        rows: &[VoteRecord],
        proposals: &HashMap<(String, ProposalSource, String), proposal::Model>,
    ) -> Result<HashMap<(i64, AccountBytes), vote::Model>, DbErr> {
        use sea_orm::{ColumnTrait, QueryFilter};
        let mut by_proposal: HashMap<i64, BTreeSet<AccountBytes>> = HashMap::new();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            if let (Some(p), Ok(voter)) = (proposals.get(&key), AccountBytes::parse(&r.voter)) {
                by_proposal.entry(p.id).or_default().insert(voter);
            }
        }
        let mut found = HashMap::new();
        for (proposal_id, voters) in by_proposal {
            let voters: Vec<AccountBytes> = voters.into_iter().collect();
            for chunk in voters.chunks(super::upsert::BATCH) {
                let rows = vote::Entity::find()
                    .filter(vote::Column::ProposalId.eq(proposal_id))
                    .filter(vote::Column::Voter.is_in(chunk.iter().cloned()))
                    .all(self.txn)
                    .await?;
                found.extend(rows.into_iter().map(|m| ((m.proposal_id, m.voter.clone()), m)));
            }
        }
        Ok(found)
    }

    /// New voters; a known voter keeps its earliest sighting and its names.
    async fn voters(&self, first_seen: HashMap<String, i64>) -> Result<TableCounts, DbErr> {
        let addresses: Vec<String> = first_seen.keys().cloned().collect();
        let stored = stored::<voter::Entity, _>(self.txn, voter::Column::Address, addresses).await?;
        let stored = by_key(stored, |m| m.address.clone());
        let mut changes = Changes::default();
        for (addr, seen) in first_seen {
            let old = stored.get(&addr);
            let desired = voter::Model {
                address_display: address::display(&addr),
                ens: kept!(old, ens),
                name: kept!(old, name),
                first_seen_ms: old.map_or(seen, |s| s.first_seen_ms.min(seen)),
                address: addr,
            };
            changes.offer(old, desired, |_| {});
        }
        upsert::<voter::Entity>(self.txn, changes.rows, &[voter::Column::Address], None).await?;
        Ok(changes.counts)
    }

    async fn topics(&self, rows: &[TopicRecord], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let ids: Vec<String> = rows.iter().map(|r| r.external_id.clone()).collect();
        let stored = stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.external_id.clone()));
        let linked = self
            .stored_proposals(
                rows.iter().flat_map(|r| r.proposal_links.iter().map(|l| l.external_id.clone())).collect(),
            )
            .await?;
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.external_id.clone()));
            // The first link the store can resolve, preferring the topic's own DAO.
            let resolve = |same_dao: bool| {
                r.proposal_links.iter().find_map(|l| {
                    linked
                        .values()
                        .find(|p| {
                            p.source == l.source && p.external_id == l.external_id && (p.dao_id == r.dao_id) == same_dao
                        })
                        .map(|p| p.id)
                })
            };
            let desired = forum_topic::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                external_id: r.external_id.clone(),
                topic_key: keys::topic_key(&r.dao_id, &r.external_id),
                title: r.title.clone(),
                slug: r.slug.clone(),
                url: r.url.clone(),
                category_id: r.category_id,
                tags: r.tags.clone().map(Tags),
                author: r.author.clone().or_else(|| kept!(old, author)),
                posts_count: r.posts_count,
                reply_count: r.reply_count,
                views: r.views,
                like_count: r.like_count,
                excerpt: r.excerpt.clone().or_else(|| kept!(old, excerpt)),
                created_ms: r.created_ms,
                last_posted_ms: r.last_posted_ms,
                closed: r.closed,
                archived: r.archived,
                linked_proposal_id: resolve(true)
                    .or_else(|| resolve(false))
                    .or_else(|| old.and_then(|s| s.linked_proposal_id)),
                updated_ms: old.map_or(0, |s| s.updated_ms),
            };
            let now = self.now_ms;
            changes.offer(old, desired, |m| m.updated_ms = now);
        }
        let written: BTreeSet<(String, String)> =
            changes.rows.iter().map(|t| (t.dao_id.clone(), t.external_id.clone())).collect();
        let natural = [forum_topic::Column::DaoId, forum_topic::Column::ExternalId];
        upsert::<forum_topic::Entity>(self.txn, changes.rows, &natural, Some(forum_topic::Column::Id)).await?;
        let ids: Vec<String> = written.iter().map(|k| k.1.clone()).collect();
        for t in super::upsert::stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids).await?
        {
            if written.contains(&(t.dao_id.clone(), t.external_id.clone())) {
                touched.topics.insert(t.id);
                touched.daos.insert(t.dao_id);
            }
        }
        Ok(changes.counts)
    }

    async fn posts(
        &self,
        rows: &[PostRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let ids: BTreeSet<String> = rows.iter().map(|r| r.topic_external_id.clone()).collect();
        let topics = stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids).await?;
        let topics: HashMap<(String, String), i64> =
            topics.into_iter().map(|t| ((t.dao_id, t.external_id), t.id)).collect();
        let topic_ids: BTreeSet<i64> = topics.values().copied().collect();
        let stored = stored::<forum_post::Entity, _>(self.txn, forum_post::Column::TopicId, topic_ids).await?;
        let stored = by_key(stored, |m| (m.topic_id, m.external_id.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let Some(&topic_id) = topics.get(&(r.dao_id.clone(), r.topic_external_id.clone())) else {
                skipped
                    .push(format!("post {} of topic {}: the topic is not stored", r.external_id, r.topic_external_id));
                continue;
            };
            let old = stored.get(&(topic_id, r.external_id.clone()));
            let desired = forum_post::Model {
                id: old.map_or(0, |s| s.id),
                topic_id,
                external_id: r.external_id.clone(),
                post_number: r.post_number,
                author: r.author.clone(),
                body: r.body.clone(),
                created_ms: r.created_ms,
            };
            changes.offer(old, desired, |_| {});
        }
        for p in &changes.rows {
            touched.topics.insert(p.topic_id);
        }
        let changed_topics: BTreeSet<i64> = changes.rows.iter().map(|p| p.topic_id).collect();
        for ((dao, _), id) in &topics {
            if changed_topics.contains(id) {
                touched.daos.insert(dao.clone());
            }
        }
        let natural = [forum_post::Column::TopicId, forum_post::Column::ExternalId];
        upsert::<forum_post::Entity>(self.txn, changes.rows, &natural, Some(forum_post::Column::Id)).await?;
        Ok(changes.counts)
    }

    async fn delegates(
        &self,
        rows: &[DelegateRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let addresses: BTreeSet<String> = rows.iter().map(|r| r.address.clone()).collect();
        let stored = stored::<delegate::Entity, _>(self.txn, delegate::Column::Address, addresses).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.address.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let scaled = match decimal::scale_down(&r.voting_power_raw, r.decimals)
                .and_then(|v| Ok((sort_keys::sort_key(&v)?, v)))
            {
                Ok((sort, value)) => (sort, decimal::plain(&value)),
                Err(e) => {
                    skipped.push(format!("delegate {}: {e}", r.address));
                    continue;
                }
            };
            let old = stored.get(&(r.dao_id.clone(), r.address.clone()));
            let desired = delegate::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                address: r.address.clone(),
                voting_power_raw: r.voting_power_raw.clone(),
                decimals: r.decimals as i32,
                voting_power: scaled.1,
                vp_sort: scaled.0,
                delegators_count: r.delegators_count.or_else(|| old.and_then(|s| s.delegators_count)),
                origin: GOVERNOR_ORIGIN.to_owned(),
                as_of_ms: old.map_or(r.as_of_ms, |s| s.as_of_ms),
            };
            let as_of = r.as_of_ms;
            changes.offer(old, desired, |m| m.as_of_ms = as_of);
        }
        touched.daos.extend(changes.rows.iter().map(|d| d.dao_id.clone()));
        let natural = [delegate::Column::DaoId, delegate::Column::Address];
        upsert::<delegate::Entity>(self.txn, changes.rows, &natural, Some(delegate::Column::Id)).await?;
        Ok(changes.counts)
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

/// Counts, per governor delegate of DAO `$1`, the holders whose current delegate it is.
const COUNT_DELEGATORS: &str = "UPDATE delegates
     SET delegators_count = (SELECT COUNT(*) FROM delegations g WHERE g.dao_id = delegates.dao_id AND g.delegate = delegates.address)
     WHERE dao_id = $1 AND origin = $2
       AND COALESCE(delegators_count, -1) <> (SELECT COUNT(*) FROM delegations g WHERE g.dao_id = delegates.dao_id AND g.delegate = delegates.address)";

/// `origin` of delegates read from a governor token's events.
pub const GOVERNOR_ORIGIN: &str = "governor-logs";

fn add(total: &mut TableCounts, more: TableCounts) {
    total.inserted += more.inserted;
    total.updated += more.updated;
}

/// The leading choice's share of the total in percent (exact, as text), when both are known.
fn top_choice_pct(scores: Option<&[String]>, total: Option<&str>) -> Option<String> {
    let total = decimal::parse(total?).ok()?;
    let top = scores?.iter().filter_map(|s| decimal::parse(s).ok()).max()?;
    if bigdecimal::Zero::is_zero(&total) {
        return None;
    }
    Some(crate::rules::tally::share(&(top * bigdecimal::BigDecimal::from(100)), &total))
}

/// The bytes of an address a connector wrote (lowercase hex from the chain: always valid).
fn account(text: &str) -> Result<AccountBytes, DbErr> {
    AccountBytes::parse(text).map_err(|e| DbErr::Custom(format!("a token log's address: {e}")))
}

/// Inserts append-only rows, skipping those whose natural key is stored (a log read twice), and
/// counts what was new; a DAO that gained a row is touched.
async fn append<E>(
    txn: &DatabaseTransaction,
    rows: Vec<E::ActiveModel>,
    natural_key: &[E::Column],
    touched: &mut Touched,
    dao_of: impl Fn(&E::ActiveModel) -> String,
) -> Result<TableCounts, DbErr>
where
    E: EntityTrait,
    E::ActiveModel: ActiveModelTrait<Entity = E> + Send,
{
    let mut counts = TableCounts::default();
    let conflict = OnConflict::columns(natural_key.iter().copied()).do_nothing().to_owned();
    let mut rows = rows;
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(super::upsert::BATCH));
        let batch = std::mem::replace(&mut rows, rest);
        let daos: BTreeSet<String> = batch.iter().map(&dao_of).collect();
        let inserted = E::insert_many(batch).on_conflict(conflict.clone()).exec_without_returning(txn).await?;
        if inserted > 0 {
            touched.daos.extend(daos);
        }
        counts.inserted += inserted;
    }
    Ok(counts)
}
