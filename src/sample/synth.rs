//! A synthetic store for benchmarks: one DAO with many proposals, votes and voters, generated
//! deterministically (fixed seed) and written with multi-row INSERTs, then published like an import.
//!
//! The data is made up but shaped like Snapshot's: proposal sizes follow a Zipf-like curve (the
//! busiest proposal gets as many votes as there are voters), voting power is heavy-tailed exact
//! decimal text with its sort key, and every vote lies inside its proposal's voting window.
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{Rng, SeedableRng, rngs::StdRng};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    EntityTrait, PaginatorTrait, QueryFilter, TransactionTrait,
};
use sha3::{Digest, Keccak256};

use crate::contract::vocabulary::{ProposalSource, ProposalState, RunStatus, RunTrigger, SourceKind};
use crate::store::address::AccountBytes;
use crate::store::entities::{dao, data_revision, data_source, ingestion_run, proposal, source_watermark, vote, voter};
use crate::store::publish::{self, now_ms};
use crate::store::stored::{Choices, Scores};
use crate::store::{address, keys, sort_keys};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthSpec {
    pub votes: u64,
    pub voters: u64,
    pub proposals: u64,
    pub dao_id: String,
    /// Build `votes`' secondary indexes after the load ([`DeferredIndexes`]).
    pub defer_indexes: bool,
}

impl Default for SynthSpec {
    fn default() -> Self {
        Self { votes: 1_000_000, voters: 100_000, proposals: 200, dao_id: "synthetic".to_owned(), defer_indexes: false }
    }
}

/// What was written, and how long each phase took.
#[derive(Debug, Clone)]
pub struct SynthReport {
    pub run_id: i64,
    pub revision_id: i64,
    pub dao_id: String,
    pub proposals: u64,
    pub votes: u64,
    pub voters: u64,
    /// Votes of the busiest proposal, and its key.
    pub busiest_votes: u64,
    pub busiest_key: String,
    pub generate: Duration,
    pub write: Duration,
    pub publish: Duration,
    /// Building the deferred indexes (zero when none were deferred).
    pub index: Duration,
    /// PostgreSQL's `VACUUM (ANALYZE)` after the load (zero on SQLite).
    pub vacuum: Duration,
    pub total: Duration,
}

impl fmt::Display for SynthReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "synthetic store, run {}: published revision {}", self.run_id, self.revision_id)?;
        writeln!(
            f,
            "  dao `{}`: {} proposals, {} votes, {} voters",
            self.dao_id, self.proposals, self.votes, self.voters
        )?;
        writeln!(f, "  busiest proposal {} with {} votes", self.busiest_key, self.busiest_votes)?;
        writeln!(
            f,
            "  generate {:.1} s, write {:.1} s, index {:.1} s, publish {:.1} s, vacuum {:.1} s, total {:.1} s",
            self.generate.as_secs_f64(),
            self.write.as_secs_f64(),
            self.index.as_secs_f64(),
            self.publish.as_secs_f64(),
            self.vacuum.as_secs_f64(),
            self.total.as_secs_f64()
        )
    }
}

/// Rows per INSERT, per table: columns × rows stays under SQLite's 32,766 bind parameters
/// (and PostgreSQL's 65,535).
const VOTE_BATCH: usize = 2_500; // 12 columns
const VOTER_BATCH: usize = 5_000; // 5 columns
const PROPOSAL_BATCH: usize = 1_000; // 28 columns

/// 2024-01-01T00:00:00Z: the first proposal starts here, so the data does not depend on today.
const BASE_MS: i64 = 1_704_067_200_000;
const DAY_MS: i64 = 86_400_000;
/// Proposals start a day apart and are open for five days.
const VOTING_MS: i64 = 5 * DAY_MS;
/// Zipf exponent of proposal sizes.
const SIZE_SKEW: f64 = 1.2;
const CHOICES: [&str; 3] = ["For", "Against", "Abstain"];
const ORIGIN: &str = "synthetic";

/// One planned vote, compact: the plan of a million votes fits in a few tens of megabytes.
struct PlannedVote {
    voter: u32,
    micro: u64,
    created_ms: i64,
    choice: u8,
}

/// Generates the store described by `spec` into `db` and publishes it under an ingestion run.
/// Refuses a DAO that already has proposals.
pub async fn synth(db: &DatabaseConnection, spec: &SynthSpec) -> anyhow::Result<SynthReport> {
    let started = Instant::now();
    validate(spec)?;
    let existing = proposal::Entity::find().filter(proposal::Column::DaoId.eq(&spec.dao_id)).count(db).await?;
    if existing > 0 {
        anyhow::bail!(
            "DAO `{}` already has {existing} proposals; synth only fills a DAO without proposals \
             (use a fresh store or another --dao)",
            spec.dao_id
        );
    }
    let run = ingestion_run::ActiveModel {
        trigger: Set(RunTrigger::Manual),
        dao_filter: Set(Some(spec.dao_id.clone())),
        source_filter: Set(Some(SourceKind::Snapshot.as_str().to_owned())),
        started_ms: Set(now_ms()),
        status: Set(RunStatus::Running),
        rows_written: Set(0),
        rows_skipped: Set(0),
        ..Default::default()
    }
    .insert(db)
    .await?;
    match generate_and_publish(db, spec, run.id, started).await {
        Ok(report) => Ok(report),
        Err(error) => {
            let mut failed: ingestion_run::ActiveModel = run.into();
            failed.finished_ms = Set(Some(now_ms()));
            failed.status = Set(RunStatus::Failed);
            failed.error = Set(Some(format!("{error:#}")));
            if let Err(mark) = failed.update(db).await {
                tracing::error!(%mark, "could not mark the failed synth run");
            }
            Err(error)
        }
    }
}

fn validate(spec: &SynthSpec) -> anyhow::Result<()> {
    anyhow::ensure!(spec.proposals > 0 && spec.voters > 0, "--proposals and --voters must be positive");
    anyhow::ensure!(spec.voters <= u64::from(u32::MAX), "--voters must fit in 32 bits");
    anyhow::ensure!(
        spec.votes <= spec.voters.saturating_mul(spec.proposals),
        "{} votes do not fit: each of the {} voters votes at most once on each of the {} proposals",
        spec.votes,
        spec.voters,
        spec.proposals
    );
    anyhow::ensure!(!spec.dao_id.is_empty(), "--dao must not be empty");
    Ok(())
}

async fn generate_and_publish(
    db: &DatabaseConnection,
    spec: &SynthSpec,
    run_id: i64,
    started: Instant,
) -> anyhow::Result<SynthReport> {
    let phase = Instant::now();
    let plan = Plan::generate(spec);
    let generate = phase.elapsed();
    eprintln!("synth: planned {} votes in {:.1} s; writing", spec.votes, generate.as_secs_f64());

    let phase = Instant::now();
    let txn = db.begin().await?;
    let deferred = if spec.defer_indexes { DeferredIndexes::drop(&txn).await? } else { DeferredIndexes::default() };
    let now = now_ms();
    let last_end = proposal_start(plan.counts.len() - 1) + VOTING_MS;
    write_dao(&txn, &spec.dao_id, now, last_end, run_id).await?;
    let (keys, ids) = write_proposals(&txn, spec, &plan.votes, &plan.addresses).await?;
    write_voters(&txn, &plan).await?;
    write_votes(&txn, spec, &plan, &ids, phase).await?;
    let write = phase.elapsed();
    eprintln!("synth: rows written in {:.1} s", write.as_secs_f64());
    let phase = Instant::now();
    deferred.build(&txn).await?;
    let index = phase.elapsed();
    eprintln!("synth: {} deferred indexes built in {:.1} s; publishing", deferred.0.len(), index.as_secs_f64());

    let phase = Instant::now();
    let revision = publish_run(&txn, spec, run_id).await?;
    txn.commit().await?;
    let publish = phase.elapsed();

    let phase = Instant::now();
    vacuum(db).await?;
    let vacuum = phase.elapsed();
    // The deferred indexes were built by sorting: packed, which the repack's yardstick records.
    // The load is committed by now: without the record, an index is only rebuilt once more.
    let built: Vec<String> = deferred.0.iter().map(|(name, _)| name.clone()).collect();
    if let Err(e) = crate::store::repack::record_packed(db, &built).await {
        tracing::warn!("synth: the packed sizes of the rebuilt indexes were not recorded: {e:#}");
    }

    let counts = &plan.counts;
    let busiest = (0..counts.len()).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))).unwrap_or(0);
    Ok(SynthReport {
        run_id,
        revision_id: revision.id,
        dao_id: spec.dao_id.clone(),
        proposals: spec.proposals,
        votes: spec.votes,
        voters: spec.voters,
        busiest_votes: counts[busiest],
        busiest_key: keys[busiest].clone(),
        generate,
        write,
        publish,
        index,
        vacuum,
        total: started.elapsed(),
    })
}

/// The whole store, planned before anything is written: who votes on which proposal, when, how
/// and with what power.
struct Plan {
    /// Votes per proposal.
    counts: Vec<u64>,
    /// Each voter's address, by voter number.
    addresses: Vec<String>,
    /// Each proposal's votes.
    votes: Vec<Vec<PlannedVote>>,
    /// Each voter's first vote (`i64::MAX` for a voter who never votes).
    first_seen: Vec<i64>,
}

impl Plan {
    /// The plan of `spec`, the same for the same spec (the seed is the DAO's).
    fn generate(spec: &SynthSpec) -> Self {
        let mut rng = StdRng::seed_from_u64(seed(&spec.dao_id));
        let counts = proposal_sizes(spec.votes, spec.voters, spec.proposals);
        let addresses: Vec<String> = (0..spec.voters).map(|k| hex_address(&spec.dao_id, k)).collect();
        // Heavy-tailed power per voter (Pareto), in millionths; each vote varies it by ±10 %.
        let power: Vec<u64> = (0..spec.voters)
            .map(|_| {
                let u: f64 = rng.random_range(1e-9..1.0);
                power_micro(u)
            })
            .collect();
        let mut permutation: Vec<u32> = (0..spec.voters as u32).collect();
        let mut plans: Vec<Vec<PlannedVote>> = Vec::with_capacity(counts.len());
        let mut first_seen = vec![i64::MAX; addresses.len()];
        for (i, &count) in counts.iter().enumerate() {
            let start = proposal_start(i);
            let for_share: f64 = rng.random_range(0.3..0.9);
            // Partial Fisher–Yates: the first `count` entries become a uniform sample of voters.
            let mut votes = Vec::with_capacity(count as usize);
            for j in 0..count as usize {
                let k = rng.random_range(j..permutation.len());
                permutation.swap(j, k);
                let voter = permutation[j];
                let created_ms = start + rng.random_range(0..VOTING_MS);
                let roll: f64 = rng.random();
                let choice = if roll < for_share {
                    1
                } else if roll < for_share + (1.0 - for_share) * 0.8 {
                    2
                } else {
                    3
                };
                let micro = power[voter as usize] * rng.random_range(900..1100) / 1000;
                first_seen[voter as usize] = first_seen[voter as usize].min(created_ms);
                votes.push(PlannedVote { voter, micro, created_ms, choice });
            }
            plans.push(votes);
        }
        Self { counts, addresses, votes: plans, first_seen }
    }
}

/// Every voter, first seen at its first vote (the first proposal's start for one who never votes).
async fn write_voters(txn: &DatabaseTransaction, plan: &Plan) -> anyhow::Result<()> {
    let voters = plan.addresses.iter().zip(&plan.first_seen).map(|(a, &seen)| voter::ActiveModel {
        address: Set(a.clone()),
        address_display: Set(address::display(a)),
        ens: Set(None),
        name: Set(None),
        first_seen_ms: Set(if seen == i64::MAX { BASE_MS } else { seen }),
    });
    insert_batched(txn, voters, VOTER_BATCH).await
}

/// Every planned vote, proposal by proposal (`ids` in plan order), saying how far it got about
/// every 200,000 votes since the write phase began at `phase`.
async fn write_votes(
    txn: &DatabaseTransaction,
    spec: &SynthSpec,
    plan: &Plan,
    ids: &[i64],
    phase: Instant,
) -> anyhow::Result<()> {
    let account_bytes: Vec<AccountBytes> =
        plan.addresses.iter().map(|a| AccountBytes::parse(a)).collect::<Result<_, _>>()?;
    let mut written = 0u64;
    for (plan, &proposal_id) in plan.votes.iter().zip(ids) {
        let rows = plan.iter().map(|v| {
            let text = micro_text(u128::from(v.micro));
            let (_, vp_sort) = sort_keys::parse_amount(&text).expect("generated power is a decimal");
            vote::ActiveModel {
                proposal_id: Set(proposal_id),
                dao_id: Set(spec.dao_id.clone()),
                voter: Set(account_bytes[v.voter as usize].clone()),
                choice: Set(v.choice.to_string()),
                voting_power: Set(text),
                vp_sort: Set(vp_sort),
                vp_from_float: Set(ProposalSource::Snapshot.power_from_float()),
                reason: Set(None),
                created_ms: Set(v.created_ms),
                ipfs: Set(None),
                tx_hash: Set(None),
                block_number: Set(None),
                ..Default::default()
            }
        });
        insert_batched(txn, rows, VOTE_BATCH).await?;
        written += plan.len() as u64;
        if written % 200_000 < plan.len() as u64 {
            eprintln!("synth: {written} votes written ({:.1} s)", phase.elapsed().as_secs_f64());
        }
    }
    Ok(())
}

/// Publishes the load as the run's revision and marks the run succeeded, inside the load's
/// transaction.
async fn publish_run(txn: &DatabaseTransaction, spec: &SynthSpec, run_id: i64) -> anyhow::Result<data_revision::Model> {
    let summary = format!(
        "synthetic benchmark data (run {run_id}): dao {}, {} proposals, {} votes, {} voters",
        spec.dao_id, spec.proposals, spec.votes, spec.voters
    );
    let revision = publish::publish(txn, run_id, &summary, &publish::Scope::All).await?;
    let rows_written = 1 + 2 + spec.proposals + spec.votes + spec.voters;
    ingestion_run::ActiveModel {
        id: sea_orm::ActiveValue::Unchanged(run_id),
        finished_ms: Set(Some(now_ms())),
        status: Set(RunStatus::Succeeded),
        rows_written: Set(i64::try_from(rows_written)?),
        rows_skipped: Set(0),
        ..Default::default()
    }
    .update(txn)
    .await?;
    Ok(revision)
}

/// A bulk load leaves PostgreSQL without statistics for the new rows until autovacuum's next
/// pass, and without the visibility map that lets counts read indexes alone: until then the
/// next publications plan from guesses (measured: deleting 500 touched voters' stats scanned
/// all 500,000 of the DAO's, 0.29 s instead of 3 ms). PostgreSQL's own advice for bulk loads
/// ("Populating a Database") is to ANALYZE after; VACUUM does that and sets the map.
///
/// On SQLite the load's write-ahead log, as large as the store itself after a big load, is
/// written back into the store's file and emptied (a checkpoint): left in place, every later read
/// looks each page up in the log's index first (`walFindFrame`), until some write's checkpoint
/// empties it (docs/benchmarks.md, "The votes in chunks", has what that cost an export).
async fn vacuum(db: &DatabaseConnection) -> anyhow::Result<()> {
    match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => db.execute_unprepared("VACUUM (ANALYZE)").await?,
        _ => db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)").await?,
    };
    Ok(())
}

/// `votes`' secondary indexes (name, `CREATE INDEX` statement), dropped for a bulk load and built
/// again after it. The statements are read from PostgreSQL's catalog (`pg_indexes`), so the
/// indexes come back exactly as the migrations made them. The primary key's index stays (ids only
/// grow: its inserts are cheap). The natural key's unique index is rebuilt like the others and
/// refuses a duplicate as it is built: the load then fails and rolls back whole. All of it
/// happens inside the load's transaction, which holds `votes` exclusively until it ends.
#[derive(Debug, Default)]
struct DeferredIndexes(Vec<(String, String)>);

const VOTE_SECONDARY_INDEXES: &str = "SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
     WHERE i.schemaname = current_schema() AND i.tablename = 'votes'
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)
     ORDER BY i.indexname";

impl DeferredIndexes {
    async fn drop(txn: &DatabaseTransaction) -> anyhow::Result<Self> {
        anyhow::ensure!(
            txn.get_database_backend() == sea_orm::DbBackend::Postgres,
            "--defer-indexes is for PostgreSQL (SQLite's inserts already fill its B-trees)"
        );
        let any_vote = vote::Entity::find().one(txn).await?;
        anyhow::ensure!(
            any_vote.is_none(),
            "--defer-indexes needs an empty votes table (a bulk load into a new store)"
        );
        let rows = txn
            .query_all_raw(sea_orm::Statement::from_string(txn.get_database_backend(), VOTE_SECONDARY_INDEXES))
            .await?;
        let mut indexes = Vec::with_capacity(rows.len());
        for row in rows {
            let name: String = row.try_get("", "name")?;
            let def: String = row.try_get("", "def")?;
            txn.execute_unprepared(&format!("DROP INDEX {}", crate::store::repack::quote(&name))).await?;
            indexes.push((name, def));
        }
        Ok(Self(indexes))
    }

    async fn build(&self, txn: &DatabaseTransaction) -> anyhow::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        // Each build sorts the whole table: a larger sort memory for this transaction only.
        txn.execute_unprepared("SET LOCAL maintenance_work_mem = '1GB'").await?;
        for (name, def) in &self.0 {
            let started = Instant::now();
            txn.execute_unprepared(def).await.with_context(|| format!("building {name}"))?;
            eprintln!("synth: built {name} in {:.1} s", started.elapsed().as_secs_f64());
        }
        Ok(())
    }
}

/// The DAO (inserted, or its name refreshed when it exists without proposals), a Snapshot source
/// and a watermark at the end of the last voting window.
async fn write_dao(txn: &DatabaseTransaction, dao_id: &str, now: i64, as_of: i64, run_id: i64) -> anyhow::Result<()> {
    let space = format!("{dao_id}.eth");
    let row = dao::ActiveModel {
        id: Set(dao_id.to_owned()),
        name: Set("[synthetic] benchmark DAO".to_owned()),
        symbol: Set(Some("SYN".to_owned())),
        snapshot_space: Set(Some(space.clone())),
        discourse_url: Set(None),
        chain_id: Set(None),
        governor: Set(None),
        token: Set(None),
        registered_ms: Set(now),
    };
    if dao::Entity::find_by_id(dao_id.to_owned()).one(txn).await?.is_some() {
        row.update(txn).await?;
    } else {
        row.insert(txn).await?;
    }
    let source = data_source::Entity::find()
        .filter(data_source::Column::DaoId.eq(dao_id))
        .filter(data_source::Column::Kind.eq(SourceKind::Snapshot.as_str()))
        .one(txn)
        .await?;
    if source.is_none() {
        data_source::ActiveModel {
            dao_id: Set(dao_id.to_owned()),
            kind: Set(SourceKind::Snapshot),
            locator: Set(space.clone()),
            url: Set(Some(format!("https://snapshot.org/#/{space}"))),
            ..Default::default()
        }
        .insert(txn)
        .await?;
    }
    source_watermark::Entity::delete_many()
        .filter(source_watermark::Column::DaoId.eq(dao_id))
        .filter(source_watermark::Column::Source.eq(SourceKind::Snapshot.as_str()))
        .exec(txn)
        .await?;
    source_watermark::ActiveModel {
        dao_id: Set(dao_id.to_owned()),
        source: Set(SourceKind::Snapshot),
        data_as_of_ms: Set(Some(as_of)),
        position: Set(None),
        last_run_id: Set(Some(run_id)),
        last_status: Set(Some(RunStatus::Succeeded.as_str().to_owned())),
        last_error: Set(None),
        updated_ms: Set(now),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(())
}

/// Writes the proposals with exact scores from their planned votes; returns their keys and ids
/// in plan order.
async fn write_proposals(
    txn: &DatabaseTransaction,
    spec: &SynthSpec,
    plans: &[Vec<PlannedVote>],
    addresses: &[String],
) -> anyhow::Result<(Vec<String>, Vec<i64>)> {
    let space = format!("{}.eth", spec.dao_id);
    let mut external_ids = Vec::with_capacity(plans.len());
    let mut keys = Vec::with_capacity(plans.len());
    let mut rows = Vec::with_capacity(plans.len());
    for (i, plan) in plans.iter().enumerate() {
        let external_id =
            format!("0x{}", hex::encode(Keccak256::digest(format!("{}\u{1f}proposal\u{1f}{i}", spec.dao_id))));
        let key = keys::proposal_key(&spec.dao_id, SourceKind::Snapshot.as_str(), &external_id);
        let mut scores = [0u128; 3];
        for v in plan {
            scores[usize::from(v.choice - 1)] += u128::from(v.micro);
        }
        let total: u128 = scores.iter().sum();
        let top = scores.iter().copied().max().unwrap_or(0);
        let top_pct = (total > 0).then(|| {
            let basis = top * 10_000 / total;
            format!("{}.{:02}", basis / 100, basis % 100)
        });
        let score_texts: Vec<String> = scores.iter().map(|&s| micro_text(s)).collect();
        let start = proposal_start(i);
        rows.push(proposal::ActiveModel {
            dao_id: Set(spec.dao_id.clone()),
            source: Set(ProposalSource::Snapshot),
            external_id: Set(external_id.clone()),
            proposal_key: Set(key.clone()),
            title: Set(format!("[synthetic] Proposal {} of {}", i + 1, plans.len())),
            body: Set(Some(format!("Synthetic benchmark proposal {} ({} votes).", i + 1, plan.len()))),
            author: Set(addresses[i % addresses.len()].clone()),
            voting_type: Set(Some("single-choice".to_owned())),
            state: Set(ProposalState::Closed),
            choices: Set(Some(Choices(CHOICES.map(str::to_owned).to_vec()))),
            scores: Set(Some(Scores(score_texts))),
            scores_total: Set(Some(micro_text(total))),
            scores_state: Set(Some("final".to_owned())),
            quorum: Set(Some("0".to_owned())),
            top_choice_pct: Set(top_pct),
            start_ms: Set(Some(start)),
            end_ms: Set(Some(start + VOTING_MS)),
            created_ms: Set(start),
            upstream_vote_count: Set(Some(plan.len() as i64)),
            ingested_vote_count: Set(0),
            url: Set(Some(format!("https://snapshot.org/#/{space}/proposal/{external_id}"))),
            discussion_url: Set(None),
            ipfs: Set(None),
            snapshot_block: Set(None),
            tx_hash: Set(None),
            block_number: Set(None),
            origin: Set(ORIGIN.to_owned()),
            updated_ms: Set(now_ms()),
            ..Default::default()
        });
        external_ids.push(external_id);
        keys.push(key);
    }
    insert_batched(txn, rows, PROPOSAL_BATCH).await?;
    let stored = proposal::Entity::find().filter(proposal::Column::DaoId.eq(&spec.dao_id)).all(txn).await?;
    let by_external: std::collections::HashMap<String, i64> =
        stored.into_iter().map(|p| (p.external_id, p.id)).collect();
    let ids = external_ids
        .iter()
        .map(|e| by_external.get(e).copied().with_context(|| format!("proposal {e} was not stored")))
        .collect::<anyhow::Result<Vec<i64>>>()?;
    Ok((keys, ids))
}

/// Multi-row INSERTs of `batch` rows, without RETURNING.
async fn insert_batched<A>(
    txn: &DatabaseTransaction,
    rows: impl IntoIterator<Item = A>,
    batch: usize,
) -> anyhow::Result<()>
where
    A: ActiveModelTrait + Send,
{
    let mut chunk = Vec::with_capacity(batch);
    for row in rows {
        chunk.push(row);
        if chunk.len() == batch {
            A::Entity::insert_many(std::mem::take(&mut chunk)).exec_without_returning(txn).await?;
        }
    }
    if !chunk.is_empty() {
        A::Entity::insert_many(chunk).exec_without_returning(txn).await?;
    }
    Ok(())
}

/// Votes per proposal: Zipf-like shares of `votes`, none above `voters` (one vote per voter and
/// proposal); what a capped proposal cannot take goes to the others in proportion.
fn proposal_sizes(votes: u64, voters: u64, proposals: u64) -> Vec<u64> {
    let weight = |i: usize| 1.0 / ((i + 1) as f64).powf(SIZE_SKEW);
    let mut counts = vec![0u64; proposals as usize];
    let mut left = votes;
    while left > 0 {
        let open: Vec<usize> = (0..counts.len()).filter(|&i| counts[i] < voters).collect();
        let total: f64 = open.iter().map(|&i| weight(i)).sum();
        let mut given = 0;
        for &i in &open {
            let share = ((left as f64) * weight(i) / total).floor() as u64;
            let add = share.min(voters - counts[i]).min(left - given);
            counts[i] += add;
            given += add;
        }
        if given == 0 {
            // Less than one vote per open proposal is left: hand them out one by one.
            for &i in open.iter().take(left as usize) {
                counts[i] += 1;
                given += 1;
            }
        }
        left -= given;
    }
    counts
}

fn proposal_start(i: usize) -> i64 {
    BASE_MS + i as i64 * DAY_MS
}

/// A deterministic lowercase 0x address for voter `k` of `dao_id` (public: a soak subscribes to
/// voters of a DAO before it is generated).
pub fn hex_address(dao_id: &str, k: u64) -> String {
    let digest = Keccak256::digest(format!("{dao_id}\u{1f}voter\u{1f}{k}"));
    format!("0x{}", hex::encode(&digest[12..]))
}

fn seed(dao_id: &str) -> u64 {
    let digest = Keccak256::digest(format!("govdata synth\u{1f}{dao_id}"));
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// A voter's power, in millionths, at quantile `1 - u` of the heavy tail synth draws powers from
/// (Pareto: 0.5 × u^(-1/1.05)). The bench draws its added votes from it too.
pub fn power_micro(u: f64) -> u64 {
    (0.5 * u.powf(-1.0 / 1.05) * 1e6) as u64
}

/// Millionths as plain decimal text: 1234500000 → `1234.5`.
pub fn micro_text(micro: u128) -> String {
    let (int, frac) = (micro / 1_000_000, micro % 1_000_000);
    if frac == 0 { int.to_string() } else { format!("{int}.{frac:06}").trim_end_matches('0').to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_sum_and_cap() {
        let c = proposal_sizes(1_000_000, 100_000, 200);
        assert_eq!(c.iter().sum::<u64>(), 1_000_000);
        assert!(c.iter().all(|&n| n <= 100_000));
        assert_eq!(c[0], 100_000);
        let c = proposal_sizes(7, 3, 3);
        assert_eq!(c.iter().sum::<u64>(), 7);
        assert!(c.iter().all(|&n| n <= 3));
    }

    #[test]
    fn texts_and_addresses() {
        assert_eq!(micro_text(1_234_500_000), "1234.5");
        assert_eq!(micro_text(7_000_000), "7");
        assert_eq!(micro_text(12), "0.000012");
        let a = hex_address("synthetic", 1);
        assert_eq!(a.len(), 42);
        assert_eq!(address::normalize(&a).unwrap(), a);
    }
}
