//! Ingestion's staging area: the records a run fetched, waiting for publication.
//!
//! Connectors normalise what an upstream returns into [`Record`]s and append them here in small
//! committed batches while they page (bounded memory, and nothing served changes). Publication
//! (`store::apply`) reads one run's records stage by stage and applies them in one transaction.
//! Numbers stay text end to end: voting power as the upstream wrote it, amounts as decimal
//! integers in the token's smallest unit.
use std::time::Duration;

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set,
    sea_query::Expr,
};
use serde::{Deserialize, Serialize};

use super::entities::proposal_action::ExecutionPath;
use super::entities::staged_record;
use crate::contract::vocabulary::{PowerCause, ProposalSource, ProposalState, RunStatus, SourceKind};

/// Which stored proposal a record refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProposalRef {
    pub source: ProposalSource,
    pub external_id: String,
}

/// A proposal as an upstream describes it. `None` in an optional field keeps what is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalRecord {
    pub dao_id: String,
    pub source: ProposalSource,
    pub external_id: String,
    pub title: String,
    pub body: Option<String>,
    /// Lowercase 0x address.
    pub author: String,
    pub voting_type: Option<String>,
    pub state: ProposalState,
    pub choices: Option<Vec<String>>,
    /// Exact decimal text per choice.
    pub scores: Option<Vec<String>>,
    pub scores_total: Option<String>,
    pub scores_state: Option<String>,
    pub quorum: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub created_ms: i64,
    pub upstream_vote_count: Option<i64>,
    pub url: Option<String>,
    pub discussion_url: Option<String>,
    pub ipfs: Option<String>,
    pub snapshot_block: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
    /// An on-chain governor's `COUNTING_MODE()` and `CLOCK_MODE()` (records staged before they
    /// existed read as unknown).
    #[serde(default)]
    pub counting_mode: Option<String>,
    #[serde(default)]
    pub clock_mode: Option<String>,
    /// Snapshot's `privacy` (`shutter`: shielded voting), when it names one.
    #[serde(default)]
    pub privacy: Option<String>,
    /// `snapshot-hub` | `governor-logs`.
    pub origin: String,
}

/// What changed on a proposal known from an earlier run (an on-chain state change, fresh
/// on-chain tallies). A proposal the store does not hold is skipped: there is nothing to update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalUpdate {
    pub dao_id: String,
    pub proposal: ProposalRef,
    pub state: Option<ProposalState>,
    pub scores: Option<Vec<String>>,
    pub scores_total: Option<String>,
    pub quorum: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    #[serde(default)]
    pub counting_mode: Option<String>,
    #[serde(default)]
    pub clock_mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteRecord {
    pub dao_id: String,
    pub proposal: ProposalRef,
    /// Lowercase 0x address.
    pub voter: String,
    /// The choice as the upstream gave it (JSON text for Snapshot; `support + 1` on chain, so
    /// that it indexes the choices `Against, For, Abstain` from 1 like Snapshot's).
    pub choice: String,
    /// Exact decimal text: Snapshot's float as received, or wei on chain.
    pub voting_power: String,
    pub vp_from_float: bool,
    pub reason: Option<String>,
    pub created_ms: i64,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub dao_id: String,
    pub external_id: String,
    pub title: String,
    pub slug: String,
    pub url: String,
    pub category_id: Option<i64>,
    pub tags: Option<Vec<String>>,
    pub author: Option<String>,
    pub posts_count: i64,
    pub reply_count: i64,
    pub views: i64,
    pub like_count: i64,
    pub excerpt: Option<String>,
    pub created_ms: i64,
    pub last_posted_ms: Option<i64>,
    pub closed: bool,
    pub archived: bool,
    /// Proposals the topic's posts link to, in order of appearance; the first one the store
    /// holds becomes the topic's linked proposal.
    pub proposal_links: Vec<ProposalRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostRecord {
    pub dao_id: String,
    pub topic_external_id: String,
    pub external_id: String,
    pub post_number: i64,
    pub author: Option<String>,
    pub body: String,
    pub created_ms: i64,
}

/// A delegate's current voting power in the token's smallest unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateRecord {
    pub dao_id: String,
    pub address: String,
    pub voting_power_raw: String,
    pub decimals: u32,
    pub delegators_count: Option<i64>,
    pub as_of_ms: i64,
}

/// A holder's current delegate, from the token's `DelegateChanged` (the latest of the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationRecord {
    pub dao_id: String,
    pub delegator: String,
    /// The zero address when the holder withdrew the delegation.
    pub delegate: String,
    pub block_number: i64,
}

/// One `DelegateChanged`, kept in the delegation history (`delegation_changes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationChangeRecord {
    pub dao_id: String,
    pub delegator: String,
    /// The zero address for "none".
    pub from_delegate: String,
    pub to_delegate: String,
    /// The voting units that moved, exact integer in the token's smallest unit.
    pub power_moved_raw: String,
    pub decimals: u32,
    pub block_number: i64,
    pub log_index: i64,
    pub tx_hash: String,
    pub at_ms: i64,
    /// The token's total supply at the block, for a notable change only (see the entity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supply_raw: Option<String>,
}

impl From<super::entities::delegation_change::Model> for DelegationChangeRecord {
    fn from(c: super::entities::delegation_change::Model) -> Self {
        Self {
            dao_id: c.dao_id,
            delegator: c.delegator.lower(),
            from_delegate: c.from_delegate.lower(),
            to_delegate: c.to_delegate.lower(),
            power_moved_raw: c.power_moved_raw,
            decimals: c.decimals.max(0) as u32,
            block_number: c.block_number,
            log_index: c.log_index,
            tx_hash: c.tx_hash,
            at_ms: c.at_ms,
            supply_raw: c.supply_raw,
        }
    }
}

/// One `DelegateVotesChanged`, kept in the voting power history (`power_checkpoints`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerCheckpointRecord {
    pub dao_id: String,
    pub delegate: String,
    pub previous_raw: String,
    pub power_raw: String,
    pub decimals: u32,
    pub cause: PowerCause,
    pub cause_delegator: Option<String>,
    pub block_number: i64,
    pub log_index: i64,
    pub tx_hash: String,
    pub at_ms: i64,
}

/// An on-chain proposal's actions as its creation log proposed them, each with the answer
/// `rules::actions` decoded for it at ingestion. Stored once: a proposal that has actions keeps
/// them (what a proposal proposes never changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalActionsRecord {
    pub dao_id: String,
    pub proposal: ProposalRef,
    pub execution_path: ExecutionPath,
    /// The actions; `None` when the backfill found no creation log for the proposal (it is
    /// looked for again after [`ACTIONS_RETRY_AFTER`]).
    pub actions: Option<Vec<ActionRecord>>,
}

/// One action, in the text forms `proposal_actions` keeps (its entity says what each holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub target: String,
    pub value_wei: String,
    pub signature: Option<String>,
    pub calldata: String,
    pub decoded: String,
}

/// Where one step of a proposal's lifecycle happened on chain: the log's block, the block's time
/// (epoch ms) and the transaction (lowercase 0x hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainPlace {
    pub block: i64,
    pub at_ms: i64,
    pub tx: String,
}

/// A proposal's `ProposalQueued`: where, the ETA it carries (exact decimal text) and the
/// timelock's grace period in seconds where it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedRecord {
    pub place: ChainPlace,
    pub eta: String,
    pub grace_period_s: Option<i64>,
}

/// What one run read of an on-chain proposal's execution lifecycle (its governor's
/// `ProposalQueued`, `ProposalExecuted` and `ProposalCanceled` logs). `None` keeps what is
/// stored: a later run that reads the execution keeps the queue an earlier one read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalExecutionRecord {
    pub dao_id: String,
    pub proposal: ProposalRef,
    pub queued: Option<QueuedRecord>,
    pub executed: Option<ChainPlace>,
    pub canceled: Option<ChainPlace>,
}

/// A proposal's simulated execution at one block (`rules::actions::simulation`), kept per
/// (proposal, block): it replaces the proposal's older one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalSimulationRecord {
    pub dao_id: String,
    pub proposal: ProposalRef,
    pub block: i64,
    /// The proposal's state it was simulated in.
    pub state: ProposalState,
    pub outcome: String,
    /// `Simulation` as JSON.
    pub result: String,
}

/// The governor's lifecycle logs of a DAO read from `from` through `through` (blocks read
/// before lifecycles were kept, once): applied as the DAO's marker, so the history is not read
/// again even for proposals it found no log of (an OpenZeppelin proposal canceled on the
/// timelock itself has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleHistoryRecord {
    pub dao_id: String,
    pub from: i64,
    pub through: i64,
}

/// One staged record. The variant order is the application order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Proposal(Box<ProposalRecord>),
    ProposalUpdate(ProposalUpdate),
    Vote(VoteRecord),
    Topic(TopicRecord),
    Post(PostRecord),
    Delegate(DelegateRecord),
    Delegation(DelegationRecord),
    DelegationChange(DelegationChangeRecord),
    PowerCheckpoint(PowerCheckpointRecord),
    ProposalActions(ProposalActionsRecord),
    ProposalExecution(ProposalExecutionRecord),
    ProposalSimulation(ProposalSimulationRecord),
    LifecycleHistory(LifecycleHistoryRecord),
}

impl Record {
    /// Application stage: a record is applied after every record it can refer to.
    pub fn stage(&self) -> i32 {
        match self {
            Record::Proposal(_) => 0,
            Record::ProposalUpdate(_) => 1,
            Record::Vote(_) => 2,
            Record::Topic(_) => 3,
            Record::Post(_) => 4,
            Record::Delegate(_) => 5,
            Record::Delegation(_) => 6,
            Record::DelegationChange(_) => 7,
            Record::PowerCheckpoint(_) => 8,
            // After the proposals they belong to; last, so that the stages of records staged
            // before it existed keep their numbers.
            Record::ProposalActions(_) => 9,
            // After the proposals they belong to, numbered after every earlier stage likewise.
            Record::ProposalExecution(_) => 10,
            // After the proposals (and their new states) they belong to.
            Record::ProposalSimulation(_) => 11,
            // After the lifecycles it read.
            Record::LifecycleHistory(_) => 12,
        }
    }

    /// Every stage the publication applies, in order: a record staged with a stage outside it
    /// would never be applied, so staging refuses one (see `stage`).
    pub const STAGES: std::ops::RangeInclusive<i32> = 0..=12;

    pub fn dao_id(&self) -> &str {
        match self {
            Record::Proposal(r) => &r.dao_id,
            Record::ProposalUpdate(r) => &r.dao_id,
            Record::Vote(r) => &r.dao_id,
            Record::Topic(r) => &r.dao_id,
            Record::Post(r) => &r.dao_id,
            Record::Delegate(r) => &r.dao_id,
            Record::Delegation(r) => &r.dao_id,
            Record::DelegationChange(r) => &r.dao_id,
            Record::PowerCheckpoint(r) => &r.dao_id,
            Record::ProposalActions(r) => &r.dao_id,
            Record::ProposalExecution(r) => &r.dao_id,
            Record::ProposalSimulation(r) => &r.dao_id,
            Record::LifecycleHistory(r) => &r.dao_id,
        }
    }
}

/// Appends `records` fetched by run `run_id` from `source` (one committed statement per batch).
pub async fn append(
    db: &impl ConnectionTrait,
    run_id: i64,
    source: SourceKind,
    records: &[Record],
) -> Result<(), DbErr> {
    for chunk in records.chunks(super::upsert::BATCH) {
        let rows = chunk
            .iter()
            .map(|r| {
                if !Record::STAGES.contains(&r.stage()) {
                    return Err(DbErr::Custom(format!("stage {} is not one the publication applies", r.stage())));
                }
                let payload = serde_json::to_string(r).map_err(|e| DbErr::Custom(format!("staging a record: {e}")))?;
                Ok(staged_record::ActiveModel {
                    run_id: Set(run_id),
                    dao_id: Set(r.dao_id().to_owned()),
                    source: Set(source),
                    stage: Set(r.stage()),
                    payload: Set(payload),
                    ..Default::default()
                })
            })
            .collect::<Result<Vec<_>, DbErr>>()?;
        staged_record::Entity::insert_many(rows).exec_without_returning(db).await?;
    }
    Ok(())
}

/// Up to `limit` records of run `run_id` in stage `stage` after staged id `after`, with their
/// staged ids, dao and source.
pub async fn page(
    db: &impl ConnectionTrait,
    run_id: i64,
    stage: i32,
    after: i64,
    limit: u64,
) -> Result<Vec<(i64, String, SourceKind, Record)>, DbErr> {
    use staged_record::Column as C;
    let rows = staged_record::Entity::find()
        .filter(C::RunId.eq(run_id))
        .filter(C::Stage.eq(stage))
        .filter(C::Id.gt(after))
        .order_by_asc(C::Id)
        .limit(limit)
        .all(db)
        .await?;
    rows.into_iter()
        .map(|row| {
            let record = serde_json::from_str(&row.payload)
                .map_err(|e| DbErr::Custom(format!("staged record {} is unreadable: {e}", row.id)))?;
            Ok((row.id, row.dao_id, row.source, record))
        })
        .collect()
}

/// Drops the records of run `run_id` from one (dao, source): the source failed, and a partial
/// fetch is not published.
pub async fn discard(db: &impl ConnectionTrait, run_id: i64, dao_id: &str, source: SourceKind) -> Result<u64, DbErr> {
    use staged_record::Column as C;
    let done = staged_record::Entity::delete_many()
        .filter(C::RunId.eq(run_id))
        .filter(C::DaoId.eq(dao_id))
        .filter(C::Source.eq(source))
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

// When a run counts as abandoned is the run's own rule (`ingestion_run::Model::status_at` reads
// it), so it lives with the entity; the heartbeat and reclaim below are its writers.
pub use super::entities::ingestion_run::{HEARTBEAT, STALE_AFTER, stale_before};

/// Records that run `run_id` is alive at `now_ms`; `false` once it is no longer running (it
/// finished, or another process reclaimed it as abandoned).
pub async fn beat(db: &impl ConnectionTrait, run_id: i64, now_ms: i64) -> Result<bool, DbErr> {
    use super::entities::ingestion_run::{Column as R, Entity as Runs};
    let done = Runs::update_many()
        .col_expr(R::HeartbeatMs, Expr::value(now_ms))
        .filter(R::Id.eq(run_id))
        .filter(R::Status.eq(RunStatus::Running.as_str()))
        .exec(db)
        .await?;
    Ok(done.rows_affected > 0)
}

/// Marks `abandoned` every run other than `keep_run` still `running` whose process stopped
/// beating before `stale_before_ms`, then drops the staged records of every run other than
/// `keep_run` that is no longer running: what a killed or failed run left behind.
pub async fn reclaim(db: &impl ConnectionTrait, keep_run: i64, stale_before_ms: i64) -> Result<u64, DbErr> {
    use super::entities::ingestion_run::{Column as R, Entity as Runs};
    use sea_orm::Condition;
    // Runs recorded before heartbeats count from their start.
    let silent = Condition::any()
        .add(R::HeartbeatMs.lt(stale_before_ms))
        .add(Condition::all().add(R::HeartbeatMs.is_null()).add(R::StartedMs.lt(stale_before_ms)));
    Runs::update_many()
        .col_expr(R::Status, Expr::value(RunStatus::Abandoned.as_str()))
        .col_expr(R::Error, Expr::value("the process running it stopped before it finished"))
        .filter(R::Status.eq(RunStatus::Running.as_str()))
        .filter(silent)
        .filter(R::Id.ne(keep_run))
        .exec(db)
        .await?;
    let live = Runs::find().select_only().column(R::Id).filter(R::Status.eq(RunStatus::Running.as_str())).into_query();
    let done = staged_record::Entity::delete_many()
        .filter(staged_record::Column::RunId.ne(keep_run))
        .filter(staged_record::Column::RunId.not_in_subquery(live))
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

/// Drops every staged record of run `run_id` (after publication, in its transaction).
pub async fn clear(db: &impl ConnectionTrait, run_id: i64) -> Result<(), DbErr> {
    staged_record::Entity::delete_many().filter(staged_record::Column::RunId.eq(run_id)).exec(db).await?;
    Ok(())
}

/// Open proposals re-fetched per run at most: the newest ones, the rest wait for a later run.
const OPEN_PROPOSALS_MAX: u64 = 1000;

/// Where a connector resumes for (`dao_id`, `source`): the position its last successful run
/// reached, and the proposals that can still change (not in a final state, or Snapshot scores
/// not final yet), newest first: each external id with the block it was created in, where it
/// has one.
pub async fn resume(
    db: &impl ConnectionTrait,
    dao_id: &str,
    source: SourceKind,
) -> Result<(Option<String>, Vec<(String, Option<i64>)>), DbErr> {
    use super::entities::{proposal::Column as P, proposal::Entity as Proposals, source_watermark::Column as W};
    use sea_orm::Condition;
    let position = super::entities::source_watermark::Entity::find()
        .filter(W::DaoId.eq(dao_id))
        .filter(W::Source.eq(source))
        .one(db)
        .await?
        .and_then(|w| w.position);
    let open = Condition::any()
        .add(P::State.is_in([
            ProposalState::Pending,
            ProposalState::Active,
            ProposalState::Succeeded,
            ProposalState::Queued,
        ]))
        .add(
            Condition::all()
                .add(P::Source.eq(ProposalSource::Snapshot))
                .add(Condition::any().add(P::ScoresState.is_null()).add(P::ScoresState.ne("final"))),
        );
    let ids = Proposals::find()
        .select_only()
        .column(P::ExternalId)
        .column(P::BlockNumber)
        .filter(P::DaoId.eq(dao_id))
        .filter(P::Source.eq(source))
        .filter(open)
        .order_by_desc(P::CreatedMs)
        .limit(OPEN_PROPOSALS_MAX)
        .into_tuple::<(String, Option<i64>)>()
        .all(db)
        .await?;
    Ok((position, ids))
}

/// What simulating a stored proposal needs: its stored actions, in order, and the block and
/// state of its latest kept simulation, if any.
#[derive(Debug, Clone, Default)]
pub struct SimulationInput {
    pub actions: Vec<super::entities::proposal_action::Model>,
    pub simulated: Option<(i64, String)>,
}

/// The simulation inputs of `dao_id`'s on-chain proposals `external_ids` (the open ones a
/// resume lists), by external id; only proposals with stored actions are listed.
pub async fn simulation_inputs(
    db: &impl ConnectionTrait,
    dao_id: &str,
    external_ids: &[String],
) -> Result<std::collections::HashMap<String, SimulationInput>, DbErr> {
    use super::entities::proposal::{Column as P, Entity as Proposals};
    use super::entities::{proposal_action as action, proposal_simulation as simulation};
    let mut inputs = std::collections::HashMap::new();
    if external_ids.is_empty() {
        return Ok(inputs);
    }
    let ids: Vec<(i64, String)> = Proposals::find()
        .select_only()
        .column(P::Id)
        .column(P::ExternalId)
        .filter(P::DaoId.eq(dao_id))
        .filter(P::Source.eq(ProposalSource::Onchain))
        .filter(P::ExternalId.is_in(external_ids.iter().cloned()))
        .into_tuple()
        .all(db)
        .await?;
    let by_id: std::collections::HashMap<i64, String> = ids.into_iter().collect();
    let keys: Vec<i64> = by_id.keys().copied().collect();
    for a in action::Entity::find()
        .filter(action::Column::ProposalId.is_in(keys.clone()))
        .order_by_asc(action::Column::ProposalId)
        .order_by_asc(action::Column::Position)
        .all(db)
        .await?
    {
        let external = by_id[&a.proposal_id].clone();
        inputs.entry(external).or_insert_with(SimulationInput::default).actions.push(a);
    }
    for s in simulation::Entity::find()
        .select_only()
        .column(simulation::Column::ProposalId)
        .column(simulation::Column::BlockNumber)
        .column(simulation::Column::ProposalState)
        .filter(simulation::Column::ProposalId.is_in(keys))
        .into_tuple::<(i64, i64, String)>()
        .all(db)
        .await?
    {
        if let Some(input) = inputs.get_mut(&by_id[&s.0]) {
            // The latest block's is the one kept (older ones are removed), but take the latest anyway.
            if input.simulated.as_ref().is_none_or(|(block, _)| *block < s.1) {
                input.simulated = Some((s.1, s.2));
            }
        }
    }
    Ok(inputs)
}

/// The settings key marking that `dao_id`'s lifecycle history (the governor's queue, execution
/// and cancellation logs before they were kept) has been read.
pub fn lifecycle_history_key(dao_id: &str) -> String {
    format!("lifecycle_history_read:{dao_id}")
}

/// The block from which `dao_id`'s governor logs must be read again for lifecycles, once: the
/// creation block of the oldest on-chain proposal that is queued, executed, canceled or expired
/// and has no lifecycle stored (stored before lifecycles were kept). `None` when there is none,
/// or the history was read already.
pub async fn lifecycle_history_from(db: &impl ConnectionTrait, dao_id: &str) -> Result<Option<i64>, DbErr> {
    use sea_orm::sea_query::{ExprTrait, Query};

    use super::entities::proposal::{Column as P, Entity as Proposals};
    use super::entities::{proposal_execution as execution, setting};
    if setting::Entity::find_by_id(lifecycle_history_key(dao_id)).one(db).await?.is_some() {
        return Ok(None);
    }
    let kept = Query::select()
        .expr(Expr::val(1))
        .from(execution::Entity)
        .and_where(Expr::col((execution::Entity, execution::Column::ProposalId)).equals((Proposals, P::Id)))
        .to_owned();
    let states = [ProposalState::Queued, ProposalState::Executed, ProposalState::Canceled, ProposalState::Expired];
    Proposals::find()
        .select_only()
        .column_as(P::BlockNumber.min(), "from")
        .filter(P::DaoId.eq(dao_id))
        .filter(P::Source.eq(ProposalSource::Onchain))
        .filter(P::State.is_in(states))
        .filter(Expr::exists(kept).not())
        .into_tuple::<Option<i64>>()
        .one(db)
        .await
        .map(Option::flatten)
}

/// Actions read per run for proposals stored without them, at most: the rest wait for a later run.
const ACTIONS_BACKFILL_MAX: u64 = 1000;

/// How long a proposal whose creation log was not found waits before it is looked for again.
pub const ACTIONS_RETRY_AFTER: Duration = Duration::from_secs(7 * 24 * 3_600);

/// `dao_id`'s on-chain proposals that have no stored actions (stored before actions were
/// kept) or actions an older decoder answered, oldest first, each with the block it was
/// created in where the store has it.
pub async fn without_actions(
    db: &impl ConnectionTrait,
    dao_id: &str,
    now_ms: i64,
) -> Result<Vec<(String, Option<i64>)>, DbErr> {
    without_actions_query(dao_id, now_ms).into_tuple::<(String, Option<i64>)>().all(db).await
}

fn without_actions_query(dao_id: &str, now_ms: i64) -> sea_orm::Select<super::entities::proposal::Entity> {
    use sea_orm::sea_query::{ExprTrait, Query};

    use super::entities::proposal::{Column as P, Entity as Proposals};
    use super::entities::{proposal_action as action, proposal_action_miss as miss};
    // NOT EXISTS on the actions' primary key (proposal_id, position): one index probe per
    // on-chain proposal of the DAO, never a read of every stored action.
    // Actions of an older decoder count as none: the backfill reads those proposals' creation
    // logs again, once per decoder version, and the applier replaces their answers.
    let actions = Query::select()
        .expr(Expr::val(1))
        .from(action::Entity)
        .and_where(Expr::col((action::Entity, action::Column::ProposalId)).equals((Proposals, P::Id)))
        .and_where(Expr::col((action::Entity, action::Column::Position)).eq(0))
        .and_where(
            Expr::col((action::Entity, action::Column::DecoderVersion)).gte(crate::rules::actions::DECODER_VERSION),
        )
        .to_owned();
    // A miss is one primary-key probe too; it holds the proposal back until it is due again.
    let retry_before = now_ms - ACTIONS_RETRY_AFTER.as_millis() as i64;
    let missed_lately = Query::select()
        .expr(Expr::val(1))
        .from(miss::Entity)
        .and_where(Expr::col((miss::Entity, miss::Column::ProposalId)).equals((Proposals, P::Id)))
        .and_where(Expr::col((miss::Entity, miss::Column::CheckedMs)).gt(retry_before))
        .to_owned();
    Proposals::find()
        .select_only()
        .column(P::ExternalId)
        .column(P::BlockNumber)
        .filter(P::DaoId.eq(dao_id))
        .filter(P::Source.eq(ProposalSource::Onchain))
        .filter(Expr::exists(actions).not())
        .filter(Expr::exists(missed_lately).not())
        .order_by_asc(P::CreatedMs)
        .limit(ACTIONS_BACKFILL_MAX)
}

#[cfg(test)]
mod tests {
    use sea_orm::{DbBackend, QueryTrait};

    use super::*;

    /// The retry bound is bound as a value on both backends (a placeholder sea-query leaves as
    /// text would compare with NULL, and every miss would be looked for again on every run).
    #[test]
    fn the_misses_retry_bound_is_a_value_on_both_backends() {
        let now_ms = 1_800_000_000_000;
        let bound = (now_ms - ACTIONS_RETRY_AFTER.as_millis() as i64).to_string();
        for backend in [DbBackend::Sqlite, DbBackend::Postgres] {
            let sql = without_actions_query("uniswap", now_ms).build(backend).to_string();
            assert!(sql.contains(&format!(r#""checked_ms" > {bound}"#)), "{backend:?}: {sql}");
            assert!(!sql.contains('$') && !sql.contains('?'), "{backend:?}: {sql}");
        }
    }
}
