//! `GET /v2/proposals`, `GET /v2/proposals/{proposalKey}`, `GET /v2/proposals/{proposalKey}/votes`,
//! `GET /v2/proposals/{proposalKey}/actions`.
use poem::web::Data;
use poem_openapi::{
    Enum, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};
use serde::Serialize;

use super::{Listing, V2Tag, bound, resolve_voter};
pub use crate::api::views::proposal::{ProposalSummary, SCORES_FINAL, VoteCounts};
use crate::api::{
    AppState,
    serde_json_body::SerdeJson,
    views::{
        action::{ProposalAction, ProposalActionsInline},
        delegation::{DelegationChange, change_item},
        execution::ProposalExecution,
        simulation::ProposalSimulation,
        voter::VoterNames,
    },
};
use crate::contract::events::{DELEGATION_SHIFT_CITED, DELEGATION_SHIFT_WINDOW_MS};
use crate::contract::ids::{IssuedKey, ProposalKey};
use crate::contract::params::KeyParam;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::{DaoId, ProposalSource, ProposalState};
use crate::contract::voting::voting_type;
use crate::contract::{
    api_error::ApiError,
    counting::{self, CountingModule, Support},
    cursor_shape::{ShapeText, cursor_shape},
    decimal,
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::{ParamLocation, Problem},
    limits::{MostLists, PROPOSAL_ACTIONS, PROPOSAL_DETAIL_ACTIONS, ProposalActions, ProposalVotes},
    operations::{Operation, ProposalActionsListV2, ProposalVotesListV2, ProposalsGetV2, ProposalsListV2},
    params::{DAO_ID_PARAM, DaoFilter, DaoScope, V2Limit, V2Timestamp, resolve_v2_window},
};
use crate::rules::{evidence, tally::share};
use crate::store::failures::problem_marking_read_failed;
use crate::store::{
    self,
    address::AccountBytes,
    entities::proposal,
    keysets::{PositionAfter, TimeAfter, VoteAfter},
    proposals::{ProposalFilter, ProposalOrder, VoteOrder, VoteWithNames},
};

/// A proposal with its text, without its votes.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ProposalDetail {
    #[oai(flatten)]
    pub summary: ProposalSummary,
    pub body: Option<String>,
    /// Choice labels, when the upstream gave them.
    pub choices: Option<Vec<String>>,
    /// Per-choice scores as the upstream reported them (exact decimal strings), when given.
    pub scores: Option<Vec<String>>,
    pub discussion_url: Option<String>,
    /// How the on-chain governor counts the votes, as it declares it; absent for Snapshot
    /// proposals and for governors that declare nothing (Compound's GovernorBravo).
    pub counting: Option<ProposalCounting>,
    /// Snapshot's `privacy`: `shutter` for shielded voting, where each vote's choice stays
    /// encrypted until the proposal has ended and its scores are final. Until then a vote's
    /// `choice` is served as the hub returns it (encrypted), and the store's own tally counts it
    /// as unreadable: a choice is never guessed. Absent for an open vote.
    pub privacy: Option<String>,
    /// Whether the upstream may still change `scores` and `scoresTotal` (`scoresState` is not
    /// `final`); absent when the upstream does not say.
    pub scores_provisional: Option<bool>,
    /// How Snapshot scores this proposal's voting type, in one sentence (`scores` are its
    /// result); absent for on-chain proposals, which `counting` describes. The types:
    /// {{VOTING_TYPES}}
    pub voting_rule: Option<String>,
    /// For an on-chain proposal: the notable delegation changes of the DAO's token (each moving at
    /// least {{NOTABLE_DELEGATION_PERCENT}}% of its supply) in the {{DELEGATION_SHIFT_HOURS}} hours up to
    /// the proposal's snapshot, when there were any. The governor weighs every vote at that
    /// snapshot, so power moved just before it counts on the proposal and power moved after it
    /// cannot.
    pub delegation_shift: Option<DelegationShift>,
    /// What the proposal would do if it passes, for a proposal whose actions are held: its first
    /// actions in position order (at most {{PROPOSAL_DETAIL_ACTIONS}}), each as proposed and
    /// decoded, with how many it has and, when there are more, the request that reads the rest
    /// (`GET /v2/proposals/{proposalKey}/actions`). Absent for a proposal without actions held
    /// (a Snapshot proposal that carries no transactions, an on-chain proposal whose actions are
    /// not read yet).
    pub actions: Option<ProposalActionsInline>,
    /// For an on-chain proposal its governor queued, executed or canceled: that lifecycle, each
    /// step with its block, time and transaction, the ETA and the time from which it can execute.
    /// Absent for Snapshot proposals and for on-chain proposals with none of these steps yet.
    pub execution: Option<ProposalExecution>,
    /// For an active, succeeded or queued on-chain proposal with known actions: what executing
    /// them would do, simulated at ingestion; absent until a simulation is kept, and once the
    /// proposal is in another state.
    pub simulation: Option<ProposalSimulation>,
}

/// Large delegated power moved shortly before an on-chain proposal's voting power was fixed.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct DelegationShift {
    /// {{DELEGATION_SHIFT_HOURS}} hours before the snapshot.
    pub window_start: Timestamp,
    /// The snapshot's time: the timepoint every vote's weight is read at.
    pub window_end: Timestamp,
    /// The changes, newest first, at most {{DELEGATION_SHIFT_CITED}}.
    pub changes: Vec<DelegationChange>,
    /// True when the window holds more changes than are cited (`GET
    /// /v2/daos/{daoId}/notable-delegations` with the window lists them all).
    pub more: bool,
}

/// An on-chain governor's counting and quorum for one proposal, exact, read as the contract
/// defines them.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalCounting {
    /// The governor's `COUNTING_MODE()`, verbatim (e.g. `support=bravo&quorum=for,abstain`).
    pub mode: String,
    /// The counting module the mode names.
    pub module: CountingModule,
    /// The governor's `CLOCK_MODE()` (ERC-6372), verbatim: whether `snapshot` is a block number
    /// (`mode=blocknumber`) or a time in seconds (`mode=timestamp`).
    pub clock: Option<String>,
    /// The timepoint voting power is taken at (`proposalSnapshot`): every vote's weight is the
    /// voter's `getPastVotes(voter, snapshot)`.
    pub snapshot: Option<String>,
    /// The supports whose votes count toward the quorum, as the mode says.
    pub quorum_counts: Option<Vec<Support>>,
    /// `quorum(snapshot)`, in the token's smallest unit, exact.
    pub quorum: Option<String>,
    /// The votes that count toward the quorum (the sum of `quorumCounts`' scores), exact.
    pub quorum_votes: Option<String>,
    /// `quorumVotes ÷ quorum`, exact to {{SHARE_DECIMALS}} decimals.
    pub quorum_progress: Option<String>,
    /// `quorum ≤ quorumVotes`, as the governor's `_quorumReached` decides.
    pub quorum_reached: Option<bool>,
}

impl ProposalCounting {
    /// The counting of `p`, when its governor declared one.
    pub fn of(p: &proposal::Model) -> Option<Self> {
        let mode = p.counting_mode.clone()?;
        let counts = counting::quorum_counts(&mode);
        let votes = evidence::quorum_votes(Some(&mode), p.scores.as_ref().map(|s| s.0.as_slice()), None);
        let parse = |t: &Option<String>| t.as_deref().and_then(|t| decimal::parse(t).ok());
        let (required, counted) = (parse(&p.quorum), parse(&votes));
        Some(Self {
            module: counting::module(&mode),
            clock: p.clock_mode.clone(),
            snapshot: p.snapshot_block.clone(),
            quorum_counts: counts,
            quorum: p.quorum.clone(),
            quorum_progress: match (&counted, &required) {
                (Some(c), Some(q)) if !bigdecimal::Zero::is_zero(q) => Some(share(c, q)),
                _ => None,
            },
            quorum_reached: match (&counted, &required) {
                (Some(c), Some(q)) => Some(q <= c),
                _ => None,
            },
            quorum_votes: votes,
            mode,
        })
    }
}

impl poem_openapi::types::Example for ProposalDetail {
    fn example() -> Self {
        Self {
            summary: ProposalSummary::example(),
            body: Some("Renew the Gnosis, Linea and Mantle deployments for another year.".to_owned()),
            choices: None,
            scores: None,
            discussion_url: None,
            counting: None,
            privacy: None,
            scores_provisional: Some(false),
            voting_rule: voting_type(Some("basic")).map(|t| t.rule.to_owned()),
            delegation_shift: None,
            actions: None,
            execution: None,
            simulation: None,
        }
    }
}

/// The notable delegation changes in the window up to an on-chain proposal's snapshot: one range
/// of the partial index of notable changes, at most [`DELEGATION_SHIFT_CITED`] + 1 rows.
async fn delegation_shift(state: &AppState, p: &proposal::Model) -> Result<Option<DelegationShift>, Problem> {
    let (ProposalSource::Onchain, Some(snapshot)) = (p.source, p.start_ms) else { return Ok(None) };
    let Some(dao) = DaoId::parse(&p.dao_id) else { return Ok(None) };
    let window = (snapshot - DELEGATION_SHIFT_WINDOW_MS, snapshot);
    let mut rows =
        store::governor::notable_delegations(&state.reads(), &dao, Some(window), None, DELEGATION_SHIFT_CITED + 1)
            .await
            .map_err(|e| problem_marking_read_failed(&e))?;
    if rows.is_empty() {
        return Ok(None);
    }
    let more = rows.len() as u64 > DELEGATION_SHIFT_CITED;
    rows.truncate(DELEGATION_SHIFT_CITED as usize);
    Ok(Some(DelegationShift {
        window_start: Timestamp::from_ms(window.0),
        window_end: Timestamp::from_ms(window.1),
        changes: rows.into_iter().map(change_item).collect(),
        more,
    }))
}

/// The proposal's kept simulation, for an on-chain proposal in a simulated state (one
/// primary-key read): once it is executed, defeated or canceled, it is no longer served.
async fn simulation(state: &AppState, p: &proposal::Model) -> Result<Option<ProposalSimulation>, Problem> {
    if p.source != ProposalSource::Onchain || !ProposalState::SIMULATED.contains(&p.state) {
        return Ok(None);
    }
    let kept = store::proposals::simulation(&state.reads(), p.id).await.map_err(|e| problem_marking_read_failed(&e))?;
    Ok(kept.as_ref().and_then(ProposalSimulation::from_model))
}

/// One vote.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ProposalVote {
    #[oai(flatten)]
    pub voter: VoterNames,
    /// The choice exactly as the upstream recorded it: `1`, `[1,3]`, `{'2': 1}`. On chain the
    /// choice is `support + 1` (`1` Against, `2` For, `3` Abstain); a vote that a fractional
    /// governor split across supports is `{"1":…,"2":…,"3":…}`, each support's exact weight in
    /// the token's smallest unit (the sum of the voter's casts).
    pub choice: String,
    /// Exact voting power as received.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    pub created_at: Timestamp,
    pub reason: Option<String>,
    /// Where the voting power was read: the proposal's snapshot (a block number, or a time in
    /// seconds on a governor whose clock is `mode=timestamp`: see the proposal's `counting`),
    /// when the upstream gave one.
    pub voting_power_at: Option<String>,
}

/// The serde form of a vote, for the votes page written through `SerdeJson`: its members and its
/// voter's names in sorted order, as the documented form writes them (`api::serde_json_body` says
/// why by hand), `None`s left out.
impl Serialize for ProposalVote {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ProposalVote", 9)?;
        s.serialize_field("address", &self.voter.address)?;
        s.serialize_field("choice", &self.choice)?;
        s.serialize_field("createdAt", &self.created_at)?;
        if let Some(ens) = &self.voter.ens {
            s.serialize_field("ens", ens)?;
        }
        if let Some(reason) = &self.reason {
            s.serialize_field("reason", reason)?;
        }
        s.serialize_field("voterIdentity", &self.voter.voter_identity)?;
        s.serialize_field("votingPower", &self.voting_power)?;
        if let Some(at) = &self.voting_power_at {
            s.serialize_field("votingPowerAt", at)?;
        }
        s.serialize_field("votingPowerFromFloat", &self.voting_power_from_float)?;
        s.end()
    }
}

impl poem_openapi::types::Example for ProposalVote {
    fn example() -> Self {
        Self {
            voter: VoterNames {
                voter_identity: "0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned(),
                address: "0x683a4F9915D6216f73d6Df50151725036bD26C02".to_owned(),
                ens: Some("gauntletgov.eth".to_owned()),
            },
            choice: "3".to_owned(),
            voting_power: "2755022.0714428956".to_owned(),
            voting_power_from_float: true,
            created_at: Timestamp::known("2025-12-03T00:00:00.000Z"),
            reason: None,
            voting_power_at: Some("21000000".to_owned()),
        }
    }
}

fn vote_row(VoteWithNames { vote: v, names }: VoteWithNames, voting_power_at: Option<String>) -> ProposalVote {
    ProposalVote {
        voter: VoterNames::stored(v.voter.lower(), names),
        choice: v.choice,
        voting_power: v.voting_power,
        voting_power_from_float: v.vp_from_float,
        created_at: Timestamp::from_ms(v.created_ms),
        reason: v.reason,
        voting_power_at,
    }
}

/// Proposal list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ProposalSort {
    /// Newest first (creation time).
    Newest,
    /// Latest end of voting first; proposals without an end time are not listed in this order.
    EndTime,
}

/// Vote list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum VoteSort {
    /// Largest voting power first.
    Power,
    /// Newest first.
    Time,
}

/// An order as a cursor's shape carries it: the value a client sends (`end_time`).
fn sort_text<T: poem_openapi::types::ToJSON>(sort: &T) -> String {
    sort.to_json().and_then(|j| j.as_str().map(str::to_owned)).unwrap_or_default()
}

impl ShapeText for ProposalSort {
    fn shape_text(&self) -> String {
        sort_text(self)
    }
}

impl ShapeText for VoteSort {
    fn shape_text(&self) -> String {
        sort_text(self)
    }
}

cursor_shape! {
    /// What a cursor of `GET /v2/proposals` is bound to.
    ProposalsShape<'a> for ProposalsListV2 {
        dao: &'a DaoScope => DAO_ID_PARAM,
        source: Option<ProposalSource> => "source",
        state: Option<ProposalState> => "state",
        window: Option<(i64, i64)> => "window",
        sort: ProposalSort => "sort",
    }
}

cursor_shape! {
    /// What a cursor of `GET /v2/proposals/{proposalKey}/actions` is bound to: the proposal's key.
    ProposalActionsShape<'a> for ProposalActionsListV2 {
        proposal_key: &'a str => "proposalKey",
    }
}

/// The list of `p`'s actions, `limit` rows a page.
fn actions_listing<'s>(
    state: &'s AppState,
    p: &'s proposal::Model,
    limit: u32,
) -> Listing<'s, ProposalActionsListV2, PositionAfter> {
    Listing::new(state, Some(&p.dao_id), limit).filtered(ProposalActionsShape { proposal_key: &p.proposal_key })
}

/// `p`'s first actions for its detail (absent when none are held): one range of the actions'
/// primary key, and a count over it only when there are more than the detail carries.
async fn inline_actions(state: &AppState, p: &proposal::Model) -> Result<Option<ProposalActionsInline>, Problem> {
    let read_failed = |e: sea_orm::DbErr| problem_marking_read_failed(&e);
    let db = state.reads();
    let mut rows =
        store::proposals::actions(&db, p.id, None, PROPOSAL_DETAIL_ACTIONS + 1).await.map_err(read_failed)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let has_more = rows.len() as u64 > PROPOSAL_DETAIL_ACTIONS;
    rows.truncate(PROPOSAL_DETAIL_ACTIONS as usize);
    let total = match has_more {
        true => store::proposals::action_count(&db, p.id).await.map_err(read_failed)?,
        false => rows.len() as u64,
    };
    let next_cursor = match (has_more, rows.last()) {
        (true, Some(last)) => Some(actions_listing(state, p, PROPOSAL_ACTIONS.default).cursor_at(&last.keyset())),
        _ => None,
    };
    Ok(Some(ProposalActionsInline {
        total: total.to_string(),
        items: rows.into_iter().map(ProposalAction::from_model).collect(),
        has_more,
        next: next_cursor.as_ref().map(|c| format!("/v2/proposals/{}/actions?cursor={c}", p.proposal_key)),
        next_cursor,
    }))
}

cursor_shape! {
    /// What a cursor of `GET /v2/proposals/{proposalKey}/votes` is bound to: the proposal's key,
    /// the voter's canonical address and the filters.
    ProposalVotesShape<'a> for ProposalVotesListV2 {
        proposal_key: &'a str => "proposalKey",
        voter: Option<&'a str> => "voter",
        choice: Option<&'a str> => "choice",
        sort: VoteSort => "sort",
    }
}

async fn proposal_by_key(state: &AppState, key: &KeyParam<ProposalKey>) -> Result<proposal::Model, Problem> {
    let key = key.parse()?;
    found(&key, store::proposals::by_key(&state.reads(), key.as_str()).await)
}

/// The head of the proposal `key` names (what a list of its rows needs of it).
async fn proposal_head_by_key(
    state: &AppState,
    key: &KeyParam<ProposalKey>,
) -> Result<store::proposals::ProposalHead, Problem> {
    let key = key.parse()?;
    found(&key, store::proposals::head_by_key(&state.reads(), state.sqlite_reader.as_deref(), key.as_str()).await)
}

/// The proposal read for `key`, or the problem of its absence or of the read.
fn found<T>(key: &ProposalKey, read: Result<Option<T>, store::DbErr>) -> Result<T, Problem> {
    read.map_err(|e| problem_marking_read_failed(&e))?
        .ok_or_else(|| Problem::not_found(format!("No proposal has the key `{key}`.")))
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Proposals")]
impl Api {
    /// List proposals
    ///
    /// Proposals across the covered DAOs, newest first by default (or by end of voting), without
    /// their votes. Filter by DAO, source, state and a time window of at most {{PROPOSALS_AND_HISTORY_WINDOW_DAYS}} days
    /// (`from`/`to`, RFC 3339; the window applies to creation time, or to end time when
    /// `sort=end_time`). Keyset-paginated: pass `meta.page.nextCursor` back as `cursor` with the
    /// same parameters.
    #[oai(path = "/proposals", method = "get", operation_id = "v2_proposals_list")]
    #[allow(clippy::too_many_arguments)]
    async fn proposals_list(
        &self,
        state: Data<&AppState>,
        /// Only this DAO's proposals.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Only proposals from this source.
        source: Query<Option<ProposalSource>>,
        /// Only proposals in this state.
        #[oai(name = "state")]
        proposal_state: Query<Option<ProposalState>>,
        /// Window start (inclusive).
        from: Query<Option<V2Timestamp>>,
        /// Window end (inclusive).
        to: Query<Option<V2Timestamp>>,
        /// Order of the list.
        sort: Query<Option<ProposalSort>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<ProposalSummary>>, ApiError<ProposalsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        // As released, an empty `daoId` is a filter (matching nothing), not its absence.
        let dao = DaoFilter::resolve_keeping_empty(dao_id.0);
        let window = resolve_v2_window(from.0, to.0, <ProposalsListV2 as Operation>::WINDOW)?;
        let sort = sort.0.unwrap_or(ProposalSort::Newest);
        let (source, proposal_state) = (source.0, proposal_state.0);
        let list = Listing::<ProposalsListV2, TimeAfter>::new(&state, dao.received(), limit).filtered(ProposalsShape {
            dao: &dao,
            source,
            state: proposal_state,
            window,
            sort,
        });
        let after = list.after(cursor.0.as_deref())?;
        let order = match sort {
            ProposalSort::Newest => ProposalOrder::Newest,
            ProposalSort::EndTime => ProposalOrder::EndTime,
        };
        let rows = match dao.store_filter() {
            Some(dao_id) => {
                let filter = ProposalFilter {
                    dao_id,
                    source: source.map(ProposalSource::as_str),
                    state: proposal_state.map(ProposalState::as_str),
                    window,
                };
                store::proposals::list(&state.reads(), &filter, order, after, list.rows_to_read()).await?
            }
            None => Vec::new(),
        };
        Ok(list.page(rows, |p| p.keyset(order), |p| ProposalSummary::from_model(&p)))
    }

    /// Get one proposal
    ///
    /// One proposal by its `proposalKey`, with its text, choices and upstream scores when known,
    /// and its vote counts (upstream total and ingested votes kept apart) — without the votes
    /// themselves: page through `/v2/proposals/{proposalKey}/votes` for those. An on-chain
    /// proposal carries its first {{PROPOSAL_DETAIL_ACTIONS}} actions, decoded (`actions`), and where
    /// to read the rest.
    #[oai(path = "/proposals/:proposalKey", method = "get", operation_id = "v2_proposals_get")]
    async fn proposals_get(
        &self,
        state: Data<&AppState>,
        /// The proposal's opaque key, as listed by `/v2/proposals`.
        #[oai(name = "proposalKey")]
        proposal_key: Path<KeyParam<ProposalKey>>,
    ) -> Result<Json<V2Single<ProposalDetail>>, ApiError<ProposalsGetV2>> {
        let p = proposal_by_key(&state, &proposal_key.0).await?;
        let revision = bound(&state, Some(&p.dao_id));
        let detail = ProposalDetail {
            summary: ProposalSummary::from_model(&p),
            body: p.body.clone(),
            choices: p.choices.clone().map(|c| c.0),
            scores: p.scores.clone().map(|s| s.0),
            discussion_url: p.discussion_url.clone(),
            counting: ProposalCounting::of(&p),
            privacy: p.privacy.clone(),
            scores_provisional: p.scores_state.as_deref().map(|s| s != SCORES_FINAL),
            voting_rule: voting_type(p.voting_type.as_deref()).map(|t| t.rule.to_owned()),
            delegation_shift: delegation_shift(&state, &p).await?,
            actions: inline_actions(&state, &p).await?,
            execution: ProposalExecution::load(&state.reads(), &p).await?,
            simulation: simulation(&state, &p).await?,
        };
        Ok(Json(V2Single::new(detail, Freshness::new(revision.data_as_of_ms, CacheStatus::Fresh))))
    }

    /// List a proposal's votes
    ///
    /// The votes held for one proposal, largest voting power first (or newest first), with the
    /// choice exactly as recorded and the exact voting power. Filter by `voter` (an address in any
    /// letter case, a CAIP-10 account or a known ENS name) or by `choice` (the recorded choice
    /// text, e.g. `1`). Up to {{PROPOSAL_VOTES_MAX}} rows a page; keyset-paginated with `cursor`. The store may hold
    /// only part of a proposal's votes: compare with `votes.upstream` of the proposal.
    #[oai(path = "/proposals/:proposalKey/votes", method = "get", operation_id = "v2_proposal_votes_list")]
    #[allow(clippy::too_many_arguments)]
    async fn proposal_votes_list(
        &self,
        state: Data<&AppState>,
        /// The proposal's opaque key.
        #[oai(name = "proposalKey")]
        proposal_key: Path<KeyParam<ProposalKey>>,
        /// Only this voter's vote.
        voter: Query<Option<String>>,
        /// Only votes with exactly this recorded choice.
        choice: Query<Option<String>>,
        /// Order of the list.
        sort: Query<Option<VoteSort>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<ProposalVotes>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<SerdeJson<V2List<ProposalVote>>, ApiError<ProposalVotesListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let sort = sort.0.unwrap_or(VoteSort::Power);
        let voter = match voter.0.as_deref() {
            Some(v) => Some(resolve_voter(&state, v, "voter", ParamLocation::Query).await?),
            None => None,
        };
        let p = proposal_head_by_key(&state, &proposal_key.0).await?;
        let list = Listing::<ProposalVotesListV2, VoteAfter>::new(&state, Some(&p.dao_id), limit).filtered(
            ProposalVotesShape {
                proposal_key: &p.proposal_key,
                voter: voter.as_deref(),
                choice: choice.0.as_deref(),
                sort,
            },
        );
        let order = match sort {
            VoteSort::Power => VoteOrder::Power,
            VoteSort::Time => VoteOrder::Time,
        };
        let after = list.after_in(cursor.0.as_deref(), order)?;
        let voter_bytes = match &voter {
            Some(v) => Some(AccountBytes::parse(v).map_err(|_| Problem::not_found(format!("No voter `{v}`.")))?),
            None => None,
        };
        let rows = store::proposals::votes(
            &state.reads(),
            state.sqlite_reader.as_deref(),
            p.id,
            voter_bytes.as_ref(),
            choice.0.as_deref(),
            order,
            after,
            list.rows_to_read(),
        )
        .await?;
        // The hottest page there is: written from its serde form (`api::serde_json_body`).
        Ok(SerdeJson::from_json(list.page(rows, |r| r.keyset(order), |r| vote_row(r, p.snapshot_block.clone()))))
    }

    /// List a proposal's actions
    ///
    /// What a proposal would do if it passes, action by action in position order (the
    /// order it executes them): each as proposed (target, value in wei, signature where given,
    /// calldata) and as decoded when it was ingested (function, named and typed arguments, the
    /// ABI's source, the calls a timelock batch, Safe transaction or MultiSend carries, token
    /// amounts in whole tokens, a one-line summary). Calldata no known ABI decodes exactly is
    /// served undecoded with its selector and the reason, never guessed. A proposal without held
    /// actions has an empty list; `GET /v2/proposals/{proposalKey}` carries
    /// the first {{PROPOSAL_DETAIL_ACTIONS}} inline. Up to {{PROPOSAL_ACTIONS_MAX}} rows a page;
    /// keyset-paginated with `cursor`.
    #[oai(path = "/proposals/:proposalKey/actions", method = "get", operation_id = "v2_proposal_actions_list")]
    async fn proposal_actions_list(
        &self,
        state: Data<&AppState>,
        /// The proposal's opaque key.
        #[oai(name = "proposalKey")]
        proposal_key: Path<KeyParam<ProposalKey>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<ProposalActions>>>,
        /// `meta.page.nextCursor` of the previous page (or `actions.nextCursor` of the proposal),
        /// unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<ProposalAction>>, ApiError<ProposalActionsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let p = proposal_by_key(&state, &proposal_key.0).await?;
        let list = actions_listing(&state, &p, limit);
        let after = list.after(cursor.0.as_deref())?;
        let rows = store::proposals::actions(&state.reads(), p.id, after, list.rows_to_read()).await?;
        Ok(list.page(rows, |a| a.keyset(), ProposalAction::from_model))
    }
}

#[cfg(test)]
mod tests {
    use poem_openapi::types::Example;

    use super::ProposalVote;
    use crate::api::serde_json_body::same_as_documented;
    use crate::contract::envelope::{CacheStatus, Freshness, PageMeta, V2Items, V2List, V2ListMeta};
    use crate::contract::time::Timestamp;

    /// The votes page is written from its serde form (`SerdeJson`): it must be the documented
    /// bytes with every optional member present and with each absent.
    #[test]
    fn votes_page_is_written_as_documented() {
        let full = ProposalVote { reason: Some("Supporting.".to_owned()), ..ProposalVote::example() };
        assert!(full.voter.ens.is_some() && full.voting_power_at.is_some());
        let bare = ProposalVote {
            voter: crate::api::views::voter::VoterNames { ens: None, ..full.voter.clone() },
            reason: None,
            voting_power_at: None,
            voting_power_from_float: false,
            ..full.clone()
        };
        let quoted = ProposalVote { reason: Some("a \"quoted\" reason\nwith é and \u{1}".to_owned()), ..full.clone() };
        use CacheStatus::*;
        for (cursor, as_of, status) in [
            (Some("v1.abc-_".to_owned()), Some(Timestamp::from_ms(1_795_860_000_123)), Fresh),
            (None, None, MemoryCache),
            (None, Some(Timestamp::from_ms(1)), CachedLive),
            (None, None, RefreshedLive),
            (None, None, RegistryOnly),
        ] {
            let page = V2List {
                data: V2Items { items: vec![full.clone(), bare.clone(), quoted.clone()] },
                meta: V2ListMeta {
                    page: PageMeta { limit: 100, has_more: cursor.is_some(), next_cursor: cursor },
                    freshness: Freshness {
                        generated_at: Timestamp::from_ms(0),
                        data_as_of: as_of,
                        cache_status: status,
                    },
                },
            };
            same_as_documented(&page).unwrap();
            same_as_documented(&V2List { data: V2Items { items: Vec::<ProposalVote>::new() }, ..page }).unwrap();
        }
    }
}
