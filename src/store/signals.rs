//! Curated governance signals: the database side of the rule engine, and the read query.
//!
//! [`compute`] runs inside the publication transaction. It loads the facts the rules read, runs
//! the rules of `rules::signals` (pure functions; thresholds from `contract::signals`) over them,
//! then reconciles the `signals` table with what they produce by `natural_key`
//! (`<rule>:<dao>:<source>:<external_id>`): new signals are inserted, changed ones updated
//! (stamped with the new revision), signals whose rule no longer holds deleted, unchanged ones left
//! alone. Re-running it on the same data changes nothing. Every time it records is data time (a
//! proposal's end, the revision's `dataAsOf`, a post's time), never the wall clock.
//!
//! Work is bounded: one query for the proposals (without bodies), their stored vote facts
//! (`store::facts`: never the votes themselves), one aggregate for candidate forum topics and
//! their posts in batches, one read of the existing signals, then batched writes. All SQL is
//! portable (sea-query builders).
use std::collections::{BTreeMap, BTreeSet, HashMap};

use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{self, Set},
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait,
    sea_query::{Expr, ExprTrait},
};

use super::{
    entities::{forum_post, forum_topic, proposal, signal},
    facts,
};
use crate::contract::feed::FeedKind;
use crate::contract::signals::{self as contract, SignalKind};
use crate::contract::vocabulary::{DaoId, ProposalState};
use crate::rules::signals::{
    DaoContext, Desired, Evidence, ProposalInput, TopicInput, VoteFacts, dao_contexts, forum_discussion_spike,
    proposal_signals,
};

/// Ids per `IN (...)` list, well under both backends' bind limits.
const IN_LIST_MAX: usize = 500;
/// Rows per multi-row INSERT.
const INSERT_CHUNK: usize = 200;

// ---------------------------------------------------------------------------------------------
// Loading the facts the rules read.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
struct PostRow {
    topic_id: i64,
    post_number: i64,
    created_ms: i64,
}

/// The columns of a proposal the rules read, in the order the DAO contexts need.
fn proposal_rows(daos: Option<&BTreeSet<String>>) -> sea_orm::Select<proposal::Entity> {
    use proposal::Column as P;
    let mut q = proposal::Entity::find().select_only().columns([
        P::Id,
        P::DaoId,
        P::Source,
        P::ExternalId,
        P::Title,
        P::Author,
        P::VotingType,
        P::State,
        P::Choices,
        P::ScoresTotal,
        P::Quorum,
        P::StartMs,
        P::EndMs,
        P::CreatedMs,
        P::UpstreamVoteCount,
        P::IngestedVoteCount,
        P::Url,
        P::Ipfs,
        P::TxHash,
        P::BlockNumber,
    ]);
    if let Some(daos) = daos {
        q = q.filter(P::DaoId.is_in(daos.iter().cloned()));
    }
    q.order_by_asc(P::DaoId).order_by_asc(P::CreatedMs).order_by_asc(P::ExternalId)
}

/// The stored vote facts of `proposals` that have votes.
async fn stored_facts<C: ConnectionTrait>(
    db: &C,
    proposals: &[ProposalInput],
) -> Result<HashMap<i64, VoteFacts>, DbErr> {
    let ids: Vec<i64> = proposals.iter().filter(|p| p.ingested_vote_count > 0).map(|p| p.id).collect();
    let mut stored = facts::load(db, &ids).await?;
    Ok(proposals
        .iter()
        .filter_map(|p| {
            let c = stored.remove(&p.id)?;
            Some((p.id, c.facts(p.voting_type.as_deref(), p.upstream_vote_count)))
        })
        .collect())
}

/// `forum_discussion_spike` for every topic with enough posts (of the DAOs in `daos`).
async fn forum_signals<C: ConnectionTrait>(db: &C, daos: Option<&BTreeSet<String>>) -> Result<Vec<Desired>, DbErr> {
    use forum_post::Column as F;
    let min_posts = contract::FORUM_SPIKE_MIN_POSTS as i64;
    let mut candidates = forum_post::Entity::find().select_only().column(F::TopicId);
    if let Some(daos) = daos {
        let of_daos = forum_topic::Entity::find()
            .select_only()
            .column(forum_topic::Column::Id)
            .filter(forum_topic::Column::DaoId.is_in(daos.iter().cloned()))
            .into_query();
        candidates = candidates.filter(F::TopicId.in_subquery(of_daos));
    }
    let candidates: Vec<i64> = candidates
        .group_by(F::TopicId)
        .having(Expr::col(F::Id).count().gte(min_posts))
        .order_by_asc(F::TopicId)
        .into_tuple::<i64>()
        .all(db)
        .await?;
    let mut out = Vec::new();
    for ids in candidates.chunks(IN_LIST_MAX) {
        use forum_topic::Column as T;
        let topics: HashMap<i64, TopicInput> = forum_topic::Entity::find()
            .select_only()
            .columns([T::Id, T::DaoId, T::ExternalId, T::Title, T::Url])
            .filter(T::Id.is_in(ids.to_vec()))
            .into_model::<TopicInput>()
            .all(db)
            .await?
            .into_iter()
            .map(|t| (t.id, t))
            .collect();
        let posts: Vec<PostRow> = forum_post::Entity::find()
            .select_only()
            .columns([F::TopicId, F::PostNumber, F::CreatedMs])
            .filter(F::TopicId.is_in(ids.to_vec()))
            .order_by_asc(F::TopicId)
            .order_by_asc(F::CreatedMs)
            .order_by_asc(F::PostNumber)
            .into_model::<PostRow>()
            .all(db)
            .await?;
        for group in posts.chunk_by(|a, b| a.topic_id == b.topic_id) {
            if let Some(topic) = topics.get(&group[0].topic_id) {
                let times: Vec<(i64, i64)> = group.iter().map(|p| (p.created_ms, p.post_number)).collect();
                out.extend(forum_discussion_spike::evaluate(topic, &times));
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The engine: load the facts, run the rules, reconcile the table.
// ---------------------------------------------------------------------------------------------

/// What [`compute`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComputeReport {
    pub signals: usize,
    /// What the feed reports: each signal raised, changed or cleared, as it stands after the
    /// change (a cleared one as it last stood), by key.
    pub changes: Vec<(FeedKind, signal::Model)>,
    pub inserted: usize,
    pub updated: usize,
    pub deleted: usize,
}

/// Recomputes the signals of the DAOs in `daos` (every DAO: `None`) from the published data and
/// reconciles the table with them; signals of other DAOs are left alone. Each DAO's proposals are
/// evaluated as of its data time (`as_of`, see `store::publish::dao_times`). Reads proposals
/// (never bodies), the stored vote facts and the forum posts of candidate topics: never votes.
pub async fn compute<C: ConnectionTrait>(
    db: &C,
    daos: Option<&BTreeSet<String>>,
    as_of: &HashMap<String, i64>,
    revision_id: i64,
) -> Result<ComputeReport, DbErr> {
    if daos.is_some_and(BTreeSet::is_empty) {
        return Ok(ComputeReport::default());
    }
    let proposals: Vec<ProposalInput> = proposal_rows(daos).into_model::<ProposalInput>().all(db).await?;
    let facts = stored_facts(db, &proposals).await?;
    let contexts = dao_contexts(&proposals);
    let fallback = as_of.values().copied().max().unwrap_or_else(crate::contract::time::now_ms);
    let mut desired: Vec<Desired> = Vec::new();
    for (p, ctx) in proposals.iter().zip(&contexts) {
        let at = as_of.get(&p.dao_id).copied().unwrap_or(fallback);
        desired.extend(proposal_signals(p, facts.get(&p.id), ctx, at));
    }
    desired.extend(forum_signals(db, daos).await?);
    reconcile(db, desired, revision_id, daos).await
}

/// The DAOs where time alone changes which signals hold: an active proposal evaluated now
/// (`later`) rather than at its DAO's data time enters or leaves a deadline window. A run that
/// changed no data still publishes these DAOs, so a deadline is never missed for want of a vote.
pub async fn moved_by_time<C: ConnectionTrait>(
    db: &C,
    as_of: &HashMap<String, i64>,
    later: i64,
) -> Result<BTreeSet<String>, DbErr> {
    let active: Vec<ProposalInput> = proposal_rows(None)
        .filter(proposal::Column::State.eq(ProposalState::Active.as_str()))
        .into_model::<ProposalInput>()
        .all(db)
        .await?;
    let facts = stored_facts(db, &active).await?;
    let keys = |p: &ProposalInput, at: i64| -> BTreeSet<String> {
        proposal_signals(p, facts.get(&p.id), &DaoContext::default(), at).into_iter().map(|d| d.natural_key).collect()
    };
    Ok(active
        .iter()
        .filter(|p| as_of.get(&p.dao_id).is_some_and(|&at| at < later && keys(p, at) != keys(p, later)))
        .map(|p| p.dao_id.clone())
        .collect())
}

/// Makes the table hold exactly `desired` for the DAOs in `daos` (all: `None`), touching only
/// what differs.
async fn reconcile<C: ConnectionTrait>(
    db: &C,
    mut desired: Vec<Desired>,
    revision_id: i64,
    daos: Option<&BTreeSet<String>>,
) -> Result<ComputeReport, DbErr> {
    desired.sort_by(|a, b| a.natural_key.cmp(&b.natural_key));
    desired.dedup_by(|a, b| a.natural_key == b.natural_key);
    let mut existing = signal::Entity::find();
    if let Some(daos) = daos {
        existing = existing.filter(signal::Column::DaoId.is_in(daos.iter().cloned()));
    }
    let mut existing: HashMap<String, signal::Model> =
        existing.all(db).await?.into_iter().map(|s| (s.natural_key.clone(), s)).collect();
    let mut report = ComputeReport { signals: desired.len(), ..Default::default() };
    let mut inserts = Vec::new();
    for d in desired {
        let evidence = serde_json::to_string(&d.evidence).map_err(|e| DbErr::Custom(e.to_string()))?;
        let row = signal::Model {
            id: 0,
            natural_key: d.natural_key,
            dao_id: d.dao_id,
            kind: d.kind,
            severity: d.kind.severity(),
            subject_kind: d.subject_kind,
            subject_external_id: d.subject_external_id,
            subject_source: d.subject_source,
            proposal_id: d.proposal_id,
            topic_id: d.topic_id,
            detected_ms: d.detected_ms,
            summary: d.summary,
            evidence,
            revision_id,
        };
        match existing.remove(&row.natural_key) {
            Some(old) if signal::Model { id: old.id, revision_id: old.revision_id, ..row.clone() } == old => {}
            Some(old) => {
                let changed = signal::Model { id: old.id, ..row };
                active_row(changed.clone(), ActiveValue::Unchanged(old.id)).update(db).await?;
                report.updated += 1;
                report.changes.push((FeedKind::SignalChanged, changed));
            }
            None => {
                report.changes.push((FeedKind::SignalRaised, row.clone()));
                inserts.push(active_row(row, ActiveValue::NotSet));
            }
        }
    }
    report.inserted = inserts.len();
    let mut inserts = inserts.into_iter().peekable();
    while inserts.peek().is_some() {
        let chunk: Vec<signal::ActiveModel> = inserts.by_ref().take(INSERT_CHUNK).collect();
        signal::Entity::insert_many(chunk).exec_without_returning(db).await?;
    }
    let mut cleared: Vec<signal::Model> = existing.into_values().collect();
    cleared.sort_by(|a, b| a.natural_key.cmp(&b.natural_key));
    let stale: Vec<i64> = cleared.iter().map(|s| s.id).collect();
    report.deleted = stale.len();
    report.changes.extend(cleared.into_iter().map(|s| (FeedKind::SignalCleared, s)));
    for ids in stale.chunks(IN_LIST_MAX) {
        signal::Entity::delete_many().filter(signal::Column::Id.is_in(ids.to_vec())).exec(db).await?;
    }
    Ok(report)
}

/// Every column set, `id` as given.
fn active_row(r: signal::Model, id: ActiveValue<i64>) -> signal::ActiveModel {
    signal::ActiveModel {
        id,
        natural_key: Set(r.natural_key),
        dao_id: Set(r.dao_id),
        kind: Set(r.kind),
        severity: Set(r.severity),
        subject_kind: Set(r.subject_kind),
        subject_external_id: Set(r.subject_external_id),
        subject_source: Set(r.subject_source),
        proposal_id: Set(r.proposal_id),
        topic_id: Set(r.topic_id),
        detected_ms: Set(r.detected_ms),
        summary: Set(r.summary),
        evidence: Set(r.evidence),
        revision_id: Set(r.revision_id),
    }
}

// ---------------------------------------------------------------------------------------------
// Read queries.
// ---------------------------------------------------------------------------------------------

/// Filters of the signal list. The window is inclusive on both ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalFilter {
    pub dao_id: Option<DaoId>,
    pub kind: Option<SignalKind>,
    pub severity: Option<contract::Severity>,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// The subject of a signal, as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult, serde::Serialize, serde::Deserialize)]
pub struct SubjectRow {
    pub id: i64,
    pub key: String,
    pub title: String,
    pub url: Option<String>,
}

/// A signal with its subject.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignalRecord {
    pub signal: signal::Model,
    pub subject: Option<SubjectRow>,
}

impl SignalRecord {
    pub fn keyset(&self) -> super::keysets::TimeAfter {
        super::keysets::TimeAfter { ms: self.signal.detected_ms, id: self.signal.id }
    }
}

impl SignalRecord {
    pub fn evidence(&self) -> Result<Evidence, serde_json::Error> {
        serde_json::from_str(&self.signal.evidence)
    }
}

fn filtered(filter: &SignalFilter) -> sea_orm::Select<signal::Entity> {
    use signal::Column as S;
    let mut query =
        signal::Entity::find().filter(S::DetectedMs.gte(filter.start_ms)).filter(S::DetectedMs.lte(filter.end_ms));
    if let Some(dao_id) = &filter.dao_id {
        query = query.filter(S::DaoId.eq(dao_id));
    }
    if let Some(kind) = filter.kind {
        query = query.filter(S::Kind.eq(kind.as_str()));
    }
    if let Some(severity) = filter.severity {
        query = query.filter(S::Severity.eq(severity.as_str()));
    }
    query.order_by_desc(S::DetectedMs).order_by_desc(S::Id)
}

/// One page of signals, newest first (`detected_ms` desc, then id desc), with the total (v1).
/// Queries: the count, the page, and one batched lookup per subject kind on the page.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &SignalFilter,
    limit: u64,
    offset: u64,
) -> Result<(Vec<SignalRecord>, u64), DbErr> {
    let query = filtered(filter);
    let total = query.clone().count(db).await?;
    let rows = query.offset(offset).limit(limit).all(db).await?;
    Ok((with_subjects(db, rows).await?, total))
}

/// Up to `limit` signals after the keyset position `(detected_ms, id)` (v2: no OFFSET, no total).
pub async fn list_after(
    db: &impl ConnectionTrait,
    filter: &SignalFilter,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> Result<Vec<SignalRecord>, DbErr> {
    let statement = list_after_statement(db.get_database_backend(), filter, after, limit);
    with_subjects(db, signal::Model::find_by_statement(statement).all(db).await?).await
}

/// The statement [`list_after`] runs.
pub fn list_after_statement(
    backend: sea_orm::DbBackend,
    filter: &SignalFilter,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> sea_orm::Statement {
    use signal::Column as S;
    let mut query = filtered(filter);
    if let Some(after) = after {
        query = query.filter(super::after_desc(S::DetectedMs, S::Id, (after.ms, after.id)));
    }
    super::plans::page(backend, query, limit)
}

/// Attaches each signal's subject: one batched lookup per subject kind.
pub(crate) async fn with_subjects(
    db: &impl ConnectionTrait,
    rows: Vec<signal::Model>,
) -> Result<Vec<SignalRecord>, DbErr> {
    let proposal_ids: Vec<i64> = rows.iter().filter_map(|s| s.proposal_id).collect();
    let topic_ids: Vec<i64> = rows.iter().filter_map(|s| s.topic_id).collect();
    let mut proposals: BTreeMap<i64, SubjectRow> = BTreeMap::new();
    if !proposal_ids.is_empty() {
        use proposal::Column as P;
        proposals = proposal::Entity::find()
            .select_only()
            .column(P::Id)
            .column_as(P::ProposalKey, "key")
            .column(P::Title)
            .column(P::Url)
            .filter(P::Id.is_in(proposal_ids))
            .into_model::<SubjectRow>()
            .all(db)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
    }
    let mut topics: BTreeMap<i64, SubjectRow> = BTreeMap::new();
    if !topic_ids.is_empty() {
        use forum_topic::Column as T;
        topics = forum_topic::Entity::find()
            .select_only()
            .column(T::Id)
            .column_as(T::TopicKey, "key")
            .column(T::Title)
            .column(T::Url)
            .filter(T::Id.is_in(topic_ids))
            .into_model::<SubjectRow>()
            .all(db)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
    }
    let records = rows
        .into_iter()
        .map(|s| {
            let subject = match (s.proposal_id, s.topic_id) {
                (Some(id), _) => proposals.get(&id).cloned(),
                (None, Some(id)) => topics.get(&id).cloned(),
                (None, None) => None,
            };
            SignalRecord { signal: s, subject }
        })
        .collect();
    Ok(records)
}
