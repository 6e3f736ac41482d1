//! Curated governance signals: the rule engine run at publication, and the read query.
//!
//! [`compute`] runs inside the publication transaction. It derives the full set of signals from
//! the published data with the rules of `contract::signals` (thresholds read from there), then
//! reconciles the `signals` table with it by `natural_key` (`<rule>:<dao>:<source>:<external_id>`):
//! new signals are inserted, changed ones updated (stamped with the new revision), signals whose
//! rule no longer holds deleted, unchanged ones left alone. Re-running it on the same data changes
//! nothing. Every time it records is data time (a proposal's end, the revision's `dataAsOf`, a
//! post's time), never the wall clock.
//!
//! Work is bounded: one query for the proposals (without bodies), the votes of the proposals that
//! have any in a few ordered batches of whole proposals (each batch held in memory, not the
//! whole table), one aggregate for candidate forum topics and their posts in batches, one read of
//! the existing signals, then batched writes. All SQL is portable (sea-query builders).
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use bigdecimal::{BigDecimal, Zero};
use sea_orm::{
    ActiveModelTrait,
    ActiveValue::{self, Set},
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait,
    sea_query::{Expr, ExprTrait},
};
use serde::{Deserialize, Serialize};

use super::{
    decimal,
    entities::{forum_post, forum_topic, proposal, signal},
    facts,
};
use crate::contract::{
    signals::{self as rules, SignalKind},
    time::rfc3339_ms,
};
use crate::rules::tally::{self, Tally};

/// Ids per `IN (...)` list, well under both backends' bind limits.
const IN_LIST_MAX: usize = 500;
/// Rows per multi-row INSERT.
const INSERT_CHUNK: usize = 200;
/// Proposal states after voting, with an outcome to report.
const CLOSED_STATES: &[&str] = &["closed", "succeeded", "defeated", "queued", "executed", "expired"];
const ACTIVE_STATE: &str = "active";
/// Characters of a title quoted in a summary.
const SUMMARY_TITLE_CHARS: usize = 80;

// ---------------------------------------------------------------------------------------------
// Evidence: the JSON stored in `signals.evidence` (the endpoint serves it as a typed object).
// ---------------------------------------------------------------------------------------------

/// Exact numbers behind a signal, and where they come from. Every number is an exact decimal
/// string; times are epoch milliseconds. Members that do not apply to a rule are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub voting_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Upstream `scores_total`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores_total: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<String>,
    /// `scoresTotal / quorum`, rounded half-even to 10 digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum_share: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_votes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingested_votes: Option<String>,
    /// Per-choice scores computed from the ingested votes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tally: Option<Vec<ChoiceScore>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_power: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leading_choice: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up_choice: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin_share: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_left_ms: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_basis: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deciding_vote: Option<VoteEvidence>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores_total_without_vote: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_upstream_votes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_proposals: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turnout_ratio: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_proposals: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub posts_in_window: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_start_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_end_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_posts: Option<String>,
    pub citations: Vec<CitationRecord>,
}

/// One choice's score from the ingested votes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChoiceScore {
    /// 1-based choice number, as Snapshot numbers them.
    pub choice: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub label: Option<String>,
    pub score: String,
}

/// The vote that decided an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoteEvidence {
    pub voter: String,
    /// Exact voting power as received.
    pub voting_power: String,
    /// The choice exactly as the upstream gave it.
    pub choice: String,
    /// What the vote gave the leading choice minus what it gave the runner-up (margin rule).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub effect: Option<String>,
    pub created_ms: i64,
}

/// Where a number comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CitationRecord {
    pub supports: Vec<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub snapshot_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ipfs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub block_number: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Inputs of the rules.
// ---------------------------------------------------------------------------------------------

/// The columns of a proposal the rules read (never its body).
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct ProposalRow {
    pub id: i64,
    pub dao_id: String,
    pub source: String,
    pub external_id: String,
    pub title: String,
    pub author: String,
    pub voting_type: Option<String>,
    pub state: String,
    pub choices: Option<String>,
    pub scores_total: Option<String>,
    pub quorum: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub created_ms: i64,
    pub upstream_vote_count: Option<i64>,
    pub ingested_vote_count: i64,
    pub url: Option<String>,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
}

/// The columns of a vote the rules read (stored with the proposal's facts, `store::facts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteRow {
    pub proposal_id: i64,
    pub voter: String,
    pub choice: String,
    pub voting_power: String,
    pub created_ms: i64,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
}

impl From<super::entities::vote::Model> for VoteRow {
    fn from(v: super::entities::vote::Model) -> Self {
        Self {
            proposal_id: v.proposal_id,
            voter: v.voter.lower(),
            choice: v.choice,
            voting_power: v.voting_power,
            created_ms: v.created_ms,
            ipfs: v.ipfs,
            tx_hash: v.tx_hash,
            block_number: v.block_number,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
struct TopicRow {
    id: i64,
    dao_id: String,
    external_id: String,
    title: String,
    url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
struct PostRow {
    topic_id: i64,
    post_number: i64,
    created_ms: i64,
}

/// The two leading choices of a tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// `None` on a tie.
    pub leader: Option<u32>,
    pub first: u32,
    pub second: u32,
    pub first_score: BigDecimal,
    pub second_score: BigDecimal,
    pub margin: BigDecimal,
    /// For + Against (`basic`) or the sum of all choice scores.
    pub counted: BigDecimal,
}

/// What the ingested votes of one proposal say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteFacts {
    pub tally: Tally,
    /// Every upstream vote is held and every choice was readable: the tally is the result.
    pub complete: bool,
    pub votes: u64,
    /// The two leading choices; absent for ranked-choice or when nothing was counted.
    pub pair: Option<Pair>,
    /// The vote with the largest power (ties: the smaller voter address).
    pub largest: Option<VoteRow>,
    /// The vote with the largest effect on the margin (leader minus runner-up), with it.
    pub most_effective: Option<(VoteRow, BigDecimal)>,
}

/// A proposal's standing among the DAO's proposals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaoContext {
    /// Earlier proposals of the DAO (by creation time, then external id).
    pub prior_proposals: u64,
    /// No earlier proposal of the DAO has this author.
    pub first_by_author: bool,
    /// Median upstream vote count of the DAO's earlier closed proposals, with their number.
    pub turnout_history: Option<(BigDecimal, u64)>,
}

/// One signal as the rules produce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub natural_key: String,
    pub kind: SignalKind,
    pub dao_id: String,
    pub subject_kind: &'static str,
    pub subject_source: String,
    pub subject_external_id: String,
    pub proposal_id: Option<i64>,
    pub topic_id: Option<i64>,
    pub detected_ms: i64,
    pub summary: String,
    pub evidence: Evidence,
}

/// What [`compute`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComputeReport {
    pub signals: usize,
    pub inserted: usize,
    pub updated: usize,
    pub deleted: usize,
}

// ---------------------------------------------------------------------------------------------
// The engine.
// ---------------------------------------------------------------------------------------------

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
async fn stored_facts<C: ConnectionTrait>(db: &C, proposals: &[ProposalRow]) -> Result<HashMap<i64, VoteFacts>, DbErr> {
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
    let proposals: Vec<ProposalRow> = proposal_rows(daos).into_model::<ProposalRow>().all(db).await?;
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
    let active: Vec<ProposalRow> = proposal_rows(None)
        .filter(proposal::Column::State.eq(ACTIVE_STATE))
        .into_model::<ProposalRow>()
        .all(db)
        .await?;
    let facts = stored_facts(db, &active).await?;
    let keys = |p: &ProposalRow, at: i64| -> BTreeSet<String> {
        proposal_signals(p, facts.get(&p.id), &DaoContext::default(), at).into_iter().map(|d| d.natural_key).collect()
    };
    Ok(active
        .iter()
        .filter(|p| as_of.get(&p.dao_id).is_some_and(|&at| at < later && keys(p, at) != keys(p, later)))
        .map(|p| p.dao_id.clone())
        .collect())
}

/// The tally, the two leading choices and the weightiest votes of one proposal.
pub fn analyse_votes(p: &ProposalRow, votes: &[VoteRow]) -> VoteFacts {
    let vt = p.voting_type.as_deref();
    let mut tally = Tally::default();
    for v in votes {
        tally.add(vt, &v.choice, &v.voting_power);
    }
    let upstream = p.upstream_vote_count.unwrap_or(0);
    let complete = !votes.is_empty() && tally.votes_unreadable == 0 && votes.len() as i64 >= upstream;
    let pair = leading_pair(vt, &tally);
    let power = |v: &VoteRow| decimal::parse(&v.voting_power).unwrap_or_default();
    let largest = votes
        .iter()
        .filter(|v| decimal::parse(&v.voting_power).is_ok())
        .max_by(|a, b| power(a).cmp(&power(b)).then_with(|| b.voter.cmp(&a.voter)))
        .cloned();
    let most_effective = pair.as_ref().and_then(|pair| {
        let leader = pair.leader?;
        let runner_up = if leader == pair.first { pair.second } else { pair.first };
        votes
            .iter()
            .filter_map(|v| {
                let mut one = Tally::default();
                one.add(vt, &v.choice, &v.voting_power);
                let zero = BigDecimal::zero();
                let effect = one.scores.get(&leader).unwrap_or(&zero) - one.scores.get(&runner_up).unwrap_or(&zero);
                (effect > zero).then_some((v, effect))
            })
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.voter.cmp(&a.0.voter)))
            .map(|(v, e)| (v.clone(), e))
    });
    VoteFacts { tally, complete, votes: votes.len() as u64, pair, largest, most_effective }
}

/// For and Against for `basic` (Abstain decides nothing), the top two choices otherwise; none for
/// ranked-choice (first preferences do not decide it) or when nothing was counted.
pub fn leading_pair(voting_type: Option<&str>, tally: &Tally) -> Option<Pair> {
    let zero = BigDecimal::zero();
    let score = |c: u32| tally.scores.get(&c).cloned().unwrap_or_else(BigDecimal::zero);
    let (first, second, first_score, second_score, counted) = match voting_type {
        Some("ranked-choice") => return None,
        Some("basic") => {
            let (f, a) = (score(1), score(2));
            let counted = &f + &a;
            (1, 2, f, a, counted)
        }
        _ => {
            let ranked = tally.ranked();
            let (c1, s1) = ranked.first().cloned()?;
            let (c2, s2) = ranked.get(1).cloned().unwrap_or((0, BigDecimal::zero()));
            (c1, c2, s1, s2, tally.scores_sum())
        }
    };
    if counted <= zero {
        return None;
    }
    let leader = match first_score.cmp(&second_score) {
        std::cmp::Ordering::Greater => Some(first),
        std::cmp::Ordering::Less => Some(second),
        std::cmp::Ordering::Equal => None,
    };
    let margin = (&first_score - &second_score).abs();
    Some(Pair { leader, first, second, first_score, second_score, margin, counted })
}

/// Each proposal's standing in its DAO, in the order of `proposals` (sorted by DAO, creation
/// time, external id).
pub fn dao_contexts(proposals: &[ProposalRow]) -> Vec<DaoContext> {
    let mut out = vec![DaoContext::default(); proposals.len()];
    let mut start = 0;
    while start < proposals.len() {
        let dao_id = &proposals[start].dao_id;
        let end = start + proposals[start..].iter().take_while(|p| &p.dao_id == dao_id).count();
        let group = &proposals[start..end];
        // new_author: earlier proposals, in the given order.
        let mut authors: BTreeSet<&str> = BTreeSet::new();
        for (i, p) in group.iter().enumerate() {
            out[start + i].prior_proposals = i as u64;
            out[start + i].first_by_author = authors.insert(p.author.as_str());
        }
        // unusual_turnout: closed proposals that started strictly earlier, by start time.
        let mut closed: Vec<usize> = (0..group.len()).filter(|&i| is_closed(&group[i])).collect();
        closed.sort_by_key(|&i| (start_of(&group[i]), i));
        let mut history: Vec<i64> = Vec::new();
        let mut j = 0;
        while j < closed.len() {
            let t = start_of(&group[closed[j]]);
            let same: Vec<usize> = closed[j..].iter().copied().take_while(|&i| start_of(&group[i]) == t).collect();
            for &i in &same {
                out[start + i].turnout_history = median(&history).map(|m| (m, history.len() as u64));
            }
            for &i in &same {
                let n = vote_count(&group[i]);
                let at = history.partition_point(|&x| x <= n);
                history.insert(at, n);
            }
            j += same.len();
        }
        start = end;
    }
    out
}

/// The exact median of sorted values.
fn median(sorted: &[i64]) -> Option<BigDecimal> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        BigDecimal::from(sorted[n / 2])
    } else {
        (BigDecimal::from(sorted[n / 2 - 1]) + BigDecimal::from(sorted[n / 2])) / BigDecimal::from(2)
    })
}

fn is_closed(p: &ProposalRow) -> bool {
    CLOSED_STATES.contains(&p.state.as_str())
}

fn start_of(p: &ProposalRow) -> i64 {
    p.start_ms.unwrap_or(p.created_ms)
}

fn vote_count(p: &ProposalRow) -> i64 {
    p.upstream_vote_count.unwrap_or(p.ingested_vote_count)
}

fn threshold(text: &str) -> BigDecimal {
    decimal::parse(text).expect("rule thresholds are decimal literals")
}

fn dec(v: &BigDecimal) -> String {
    decimal::plain(v)
}

/// Choice number → label: the proposal's own labels, else For/Against/Abstain for `basic`.
fn labeller(p: &ProposalRow) -> impl Fn(u32) -> Option<String> + '_ {
    let labels: Vec<String> = p.choices.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
    move |c: u32| {
        if c == 0 {
            return None;
        }
        labels.get(c as usize - 1).cloned().or_else(|| match (p.voting_type.as_deref(), c) {
            (Some("basic"), 1) => Some("For".to_owned()),
            (Some("basic"), 2) => Some("Against".to_owned()),
            (Some("basic"), 3) => Some("Abstain".to_owned()),
            _ => None,
        })
    }
}

fn short_title(title: &str) -> String {
    let t = title.trim();
    if t.chars().count() <= SUMMARY_TITLE_CHARS {
        t.to_owned()
    } else {
        format!("{}…", t.chars().take(SUMMARY_TITLE_CHARS - 1).collect::<String>().trim_end())
    }
}

fn proposal_citation(p: &ProposalRow, supports: &[&str]) -> CitationRecord {
    CitationRecord {
        supports: supports.iter().map(|s| (*s).to_owned()).collect(),
        source: p.source.clone(),
        url: p.url.clone(),
        snapshot_id: (p.source == "snapshot").then(|| p.external_id.clone()),
        ipfs: p.ipfs.clone(),
        tx_hash: p.tx_hash.clone(),
        block_number: p.block_number.map(|b| b.to_string()),
    }
}

fn vote_citation(p: &ProposalRow, v: &VoteRow) -> CitationRecord {
    CitationRecord {
        supports: vec!["decidingVote".to_owned()],
        source: p.source.clone(),
        url: p.url.clone(),
        snapshot_id: None,
        ipfs: v.ipfs.clone(),
        tx_hash: v.tx_hash.clone(),
        block_number: v.block_number.map(|b| b.to_string()),
    }
}

/// Every proposal signal of `p`. `as_of` is the revision's `dataAsOf`.
pub fn proposal_signals(p: &ProposalRow, facts: Option<&VoteFacts>, ctx: &DaoContext, as_of: i64) -> Vec<Desired> {
    let closed = is_closed(p);
    let active = p.state == ACTIVE_STATE;
    let label = labeller(p);
    let name = |c: u32| match label(c) {
        Some(l) => format!("{l} (choice {c})"),
        None if c == 0 => "no other choice".to_owned(),
        None => format!("choice {c}"),
    };
    let title = short_title(&p.title);
    let time_left = p.end_ms.map(|e| e - as_of);
    // When the data says it: the end for closed proposals, `dataAsOf` for active ones.
    let detected = if closed { p.end_ms.unwrap_or(p.created_ms) } else { as_of };
    let scores_total = p.scores_total.as_deref().and_then(|s| decimal::parse(s).ok());
    let quorum = p.quorum.as_deref().and_then(|s| decimal::parse(s).ok()).filter(|q| *q > BigDecimal::zero());
    let complete = facts.filter(|f| f.complete);

    let base = |kind: SignalKind| Evidence {
        voting_type: p.voting_type.clone(),
        state: Some(p.state.clone()),
        upstream_votes: p.upstream_vote_count.map(|n| n.to_string()),
        ingested_votes: Some(facts.map_or(p.ingested_vote_count as u64, |f| f.votes).to_string()),
        citations: vec![proposal_citation(
            p,
            match kind {
                SignalKind::NewAuthor => &["author"],
                SignalKind::UnusualTurnout => &["upstreamVotes"],
                _ => &["scoresTotal", "quorum", "upstreamVotes"],
            },
        )],
        ..Default::default()
    };
    let with_quorum = |mut e: Evidence| {
        if let (Some(st), Some(q)) = (&scores_total, &quorum) {
            e.scores_total = Some(dec(st));
            e.quorum = Some(dec(q));
            e.quorum_share = Some(tally::share(st, q));
        } else {
            e.scores_total = scores_total.as_ref().map(dec);
        }
        e
    };
    let with_tally = |mut e: Evidence, f: &VoteFacts| {
        e.tally = Some(
            f.tally
                .scores
                .iter()
                .map(|(c, s)| ChoiceScore { choice: c.to_string(), label: label(*c), score: tally::score_text(s) })
                .collect(),
        );
        if let Some(pair) = &f.pair {
            e.counted_power = Some(dec(&pair.counted));
            e.leading_choice = pair.leader.map(|c| c.to_string());
            e.runner_up_choice =
                pair.leader.map(|l| if l == pair.first { pair.second } else { pair.first }.to_string());
            e.margin = Some(dec(&pair.margin));
            e.margin_share = Some(tally::share(&pair.margin, &pair.counted));
        }
        e
    };
    let signal = |kind: SignalKind, detected_ms: i64, summary: String, evidence: Evidence| Desired {
        natural_key: format!("{}:{}:{}:{}", kind.as_str(), p.dao_id, p.source, p.external_id),
        kind,
        dao_id: p.dao_id.clone(),
        subject_kind: "proposal",
        subject_source: p.source.clone(),
        subject_external_id: p.external_id.clone(),
        proposal_id: Some(p.id),
        topic_id: None,
        detected_ms,
        summary,
        evidence,
    };
    let mut out = Vec::new();

    // close_race
    if let Some(f) = complete {
        let near = closed || (active && time_left.is_some_and(|t| t <= rules::CLOSE_RACE_WINDOW_MS));
        if let Some(pair) = f.pair.as_ref().filter(|_| near)
            && pair.margin < threshold(rules::CLOSE_RACE_MAX_MARGIN_SHARE) * &pair.counted
        {
            let mut e = with_quorum(with_tally(base(SignalKind::CloseRace), f));
            e.citations[0].supports = vec!["tally".to_owned(), "upstreamVotes".to_owned()];
            if !closed {
                e.as_of_ms = Some(as_of);
                e.time_left_ms = time_left.map(|t| t.to_string());
            }
            let when = if closed { "at the close" } else { "near the deadline" };
            let summary = format!(
                "Close race on \"{title}\" {when}: {} {} vs {} {}, margin {} ({} of the counted power {}).",
                name(pair.first),
                dec(&pair.first_score),
                name(pair.second),
                dec(&pair.second_score),
                dec(&pair.margin),
                tally::share(&pair.margin, &pair.counted),
                dec(&pair.counted),
            );
            out.push(signal(SignalKind::CloseRace, detected, summary, e));
        }
    }

    // quorum_reached / quorum_at_risk
    if let (Some(st), Some(q)) = (&scores_total, &quorum) {
        if (closed || active) && st >= q {
            let summary = format!(
                "Quorum reached on \"{title}\": scores_total {} ≥ quorum {} ({} of the quorum).",
                dec(st),
                dec(q),
                tally::share(st, q)
            );
            let mut e = with_quorum(base(SignalKind::QuorumReached));
            if !closed {
                e.as_of_ms = Some(as_of);
            }
            out.push(signal(SignalKind::QuorumReached, detected, summary, e));
        }
        let at_risk_window = time_left.is_some_and(|t| t > 0 && t <= rules::QUORUM_AT_RISK_WINDOW_MS);
        if active && at_risk_window && *st < threshold(rules::QUORUM_AT_RISK_MAX_SHARE) * q {
            let left = time_left.unwrap_or_default();
            let summary = format!(
                "Quorum at risk on \"{title}\": scores_total {} is {} of quorum {} with {} hours of voting left.",
                dec(st),
                tally::share(st, q),
                dec(q),
                dec(&(BigDecimal::from(left) / BigDecimal::from(3_600_000))),
            );
            let mut e = with_quorum(base(SignalKind::QuorumAtRisk));
            e.as_of_ms = Some(as_of);
            e.time_left_ms = Some(left.to_string());
            out.push(signal(SignalKind::QuorumAtRisk, as_of, summary, e));
        }
    }

    // single_voter_decisive
    if let Some(f) = facts.filter(|_| closed || active) {
        let quorum_without = |power: &BigDecimal| match (&scores_total, &quorum) {
            (Some(st), Some(q)) if st >= q => Some(st - power).filter(|rest| rest < q),
            _ => None,
        };
        let by_margin = complete
            .and_then(|f| Some((f.pair.as_ref()?, f.most_effective.as_ref()?)))
            .filter(|(pair, (_, effect))| pair.leader.is_some() && *effect > pair.margin);
        let decision = match by_margin {
            Some((_, (v, effect))) => {
                let power = decimal::parse(&v.voting_power).unwrap_or_default();
                let mut by = vec!["margin".to_owned()];
                let without = quorum_without(&power);
                if without.is_some() {
                    by.push("quorum".to_owned());
                }
                Some((v, Some(effect.clone()), by, without))
            }
            None => f.largest.as_ref().and_then(|v| {
                let power = decimal::parse(&v.voting_power).ok()?;
                let without = quorum_without(&power)?;
                Some((v, None, vec!["quorum".to_owned()], Some(without)))
            }),
        };
        if let Some((v, effect, by, without)) = decision {
            let mut e = with_quorum(base(SignalKind::SingleVoterDecisive));
            if by.contains(&"margin".to_owned()) {
                e = with_tally(e, f);
            }
            e.decided_by = Some(by.clone());
            e.deciding_vote = Some(VoteEvidence {
                voter: v.voter.clone(),
                voting_power: v.voting_power.clone(),
                choice: v.choice.clone(),
                effect: effect.as_ref().map(dec),
                created_ms: v.created_ms,
            });
            e.scores_total_without_vote = without.as_ref().map(dec);
            e.citations.push(vote_citation(p, v));
            let power = decimal::parse(&v.voting_power).map(|d| dec(&d)).unwrap_or_else(|_| v.voting_power.clone());
            let mut reasons = Vec::new();
            if let (Some(effect), Some(pair)) = (&effect, f.pair.as_ref()) {
                reasons.push(format!(
                    "its effect {} on the race exceeds the margin {} between {} and {}",
                    dec(effect),
                    dec(&pair.margin),
                    name(pair.first),
                    name(pair.second)
                ));
            }
            if let (Some(rest), Some(q)) = (&without, &quorum) {
                reasons.push(format!("without it scores_total would be {} < quorum {}", dec(rest), dec(q)));
            }
            let summary = format!(
                "One vote decided \"{title}\": {} cast {power} for {}; {}.",
                v.voter,
                v.choice,
                reasons.join("; and ")
            );
            out.push(signal(SignalKind::SingleVoterDecisive, detected, summary, e));
        }
    }

    // unusual_turnout
    if let Some((median, history)) = ctx.turnout_history.as_ref().filter(|_| closed) {
        let factor = threshold(rules::UNUSUAL_TURNOUT_FACTOR);
        let count = BigDecimal::from(vote_count(p));
        let min_history = rules::UNUSUAL_TURNOUT_MIN_HISTORY;
        if *history >= min_history && *median > BigDecimal::zero() {
            let high = count >= &factor * median;
            let low = &count * &factor <= *median;
            if high || low {
                let mut e = base(SignalKind::UnusualTurnout);
                e.median_upstream_votes = Some(dec(median));
                e.history_proposals = Some(history.to_string());
                e.turnout_ratio = Some(tally::share(&count, median));
                let summary = format!(
                    "Unusually {} turnout on \"{title}\": upstream vote count {} vs a median of {} over {} earlier closed \
                     proposals ({} of the median).",
                    if high { "high" } else { "low" },
                    dec(&count),
                    dec(median),
                    history,
                    tally::share(&count, median),
                );
                out.push(signal(SignalKind::UnusualTurnout, detected, summary, e));
            }
        }
    }

    // proposal_passed / proposal_failed
    if closed {
        let quorum_failed = match (&scores_total, &quorum) {
            (Some(st), Some(q)) => Some(st < q),
            (None, Some(_)) => None, // a quorum with no score total: nothing can be said
            (_, None) => Some(false),
        };
        let basic = p.voting_type.as_deref() == Some("basic");
        if quorum_failed == Some(true) {
            let (st, q) = (scores_total.clone().unwrap_or_default(), quorum.clone().unwrap_or_default());
            let mut e = with_quorum(base(SignalKind::ProposalFailed));
            e.outcome_basis = Some("quorum_not_reached".to_owned());
            let summary = format!(
                "\"{title}\" failed: scores_total {} below quorum {} ({} of the quorum).",
                dec(&st),
                dec(&q),
                tally::share(&st, &q)
            );
            out.push(signal(SignalKind::ProposalFailed, detected, summary, e));
        } else if let (Some(false), true, Some(f)) = (quorum_failed, basic, complete) {
            let zero = BigDecimal::zero();
            let score = |c: u32| f.tally.scores.get(&c).unwrap_or(&zero).clone();
            let (for_, against, abstain) = (score(1), score(2), score(3));
            let passed = for_ > against;
            let kind = if passed { SignalKind::ProposalPassed } else { SignalKind::ProposalFailed };
            let mut e = with_tally(with_quorum(base(kind)), f);
            e.outcome_basis = Some("tally".to_owned());
            e.citations[0].supports = vec!["tally".to_owned(), "scoresTotal".to_owned(), "quorum".to_owned()];
            let quorum_text = match &quorum {
                Some(q) => format!("quorum {} met", dec(q)),
                None => "no quorum".to_owned(),
            };
            let summary = if passed {
                format!(
                    "\"{title}\" passed: For {} > Against {} (Abstain {}); {quorum_text}.",
                    dec(&for_),
                    dec(&against),
                    dec(&abstain)
                )
            } else {
                format!(
                    "\"{title}\" failed: Against {} ≥ For {} (Abstain {}); {quorum_text}.",
                    dec(&against),
                    dec(&for_),
                    dec(&abstain)
                )
            };
            out.push(signal(kind, detected, summary, e));
        }
    }

    // new_author
    if ctx.first_by_author && ctx.prior_proposals >= rules::NEW_AUTHOR_MIN_PRIOR_PROPOSALS {
        let mut e = base(SignalKind::NewAuthor);
        e.author = Some(p.author.clone());
        e.prior_proposals = Some(ctx.prior_proposals.to_string());
        let summary = format!(
            "First proposal by {} in {}: \"{title}\" (after {} earlier proposals by others).",
            p.author, p.dao_id, ctx.prior_proposals
        );
        out.push(signal(SignalKind::NewAuthor, p.created_ms, summary, e));
    }
    out
}

/// `forum_discussion_spike` for every topic with enough posts (of the DAOs in `daos`).
async fn forum_signals<C: ConnectionTrait>(db: &C, daos: Option<&BTreeSet<String>>) -> Result<Vec<Desired>, DbErr> {
    use forum_post::Column as F;
    let min_posts = rules::FORUM_SPIKE_MIN_POSTS as i64;
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
        let topics: HashMap<i64, TopicRow> = forum_topic::Entity::find()
            .select_only()
            .columns([T::Id, T::DaoId, T::ExternalId, T::Title, T::Url])
            .filter(T::Id.is_in(ids.to_vec()))
            .into_model::<TopicRow>()
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
                out.extend(spike_signal(topic, &times));
            }
        }
    }
    Ok(out)
}

/// The first moment a topic's posts (time, post number; in time order) reach the threshold
/// within the window.
pub fn first_spike(posts: &[(i64, i64)]) -> Option<(usize, usize)> {
    let mut window: VecDeque<usize> = VecDeque::new();
    for (i, (t, _)) in posts.iter().enumerate() {
        window.push_back(i);
        while window.front().is_some_and(|&f| posts[f].0 < t - rules::FORUM_SPIKE_WINDOW_MS) {
            window.pop_front();
        }
        if window.len() as u64 >= rules::FORUM_SPIKE_MIN_POSTS {
            return Some((*window.front()?, i));
        }
    }
    None
}

fn spike_signal(topic: &TopicRow, posts: &[(i64, i64)]) -> Option<Desired> {
    let (first, last) = first_spike(posts)?;
    let (start_ms, end_ms) = (posts[first].0, posts[last].0);
    let in_window = last - first + 1;
    let hours = rules::FORUM_SPIKE_WINDOW_MS / 3_600_000;
    let evidence = Evidence {
        posts_in_window: Some(in_window.to_string()),
        window_start_ms: Some(start_ms),
        window_end_ms: Some(end_ms),
        topic_posts: Some(posts.len().to_string()),
        citations: vec![
            CitationRecord {
                supports: vec!["topicPosts".to_owned()],
                source: "discourse".to_owned(),
                url: Some(topic.url.clone()),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            },
            CitationRecord {
                supports: vec!["windowStart".to_owned(), "windowEnd".to_owned(), "postsInWindow".to_owned()],
                source: "discourse".to_owned(),
                url: Some(format!("{}/{}", topic.url.trim_end_matches('/'), posts[last].1)),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            },
        ],
        ..Default::default()
    };
    Some(Desired {
        natural_key: format!(
            "{}:{}:discourse:{}",
            SignalKind::ForumDiscussionSpike.as_str(),
            topic.dao_id,
            topic.external_id
        ),
        kind: SignalKind::ForumDiscussionSpike,
        dao_id: topic.dao_id.clone(),
        subject_kind: "forum_topic",
        subject_source: "discourse".to_owned(),
        subject_external_id: topic.external_id.clone(),
        proposal_id: None,
        topic_id: Some(topic.id),
        detected_ms: end_ms,
        summary: format!(
            "Discussion spike on \"{}\": {in_window} posts within {hours} hours, from {} to {} (posts #{} to #{}).",
            short_title(&topic.title),
            rfc3339_ms(start_ms),
            rfc3339_ms(end_ms),
            posts[first].1,
            posts[last].1
        ),
        evidence,
    })
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
            kind: d.kind.as_str().to_owned(),
            severity: d.kind.severity().as_str().to_owned(),
            subject_kind: d.subject_kind.to_owned(),
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
                active_row(row, ActiveValue::Unchanged(old.id)).update(db).await?;
                report.updated += 1;
            }
            None => inserts.push(active_row(row, ActiveValue::NotSet)),
        }
    }
    report.inserted = inserts.len();
    let mut inserts = inserts.into_iter().peekable();
    while inserts.peek().is_some() {
        let chunk: Vec<signal::ActiveModel> = inserts.by_ref().take(INSERT_CHUNK).collect();
        signal::Entity::insert_many(chunk).exec_without_returning(db).await?;
    }
    let stale: Vec<i64> = existing.into_values().map(|s| s.id).collect();
    report.deleted = stale.len();
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
    pub dao_id: Option<String>,
    pub kind: Option<SignalKind>,
    pub severity: Option<rules::Severity>,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// The subject of a signal, as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct SubjectRow {
    pub id: i64,
    pub key: String,
    pub title: String,
    pub url: Option<String>,
}

/// A signal with its subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalRecord {
    pub signal: signal::Model,
    pub subject: Option<SubjectRow>,
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
        query = query.filter(S::DaoId.eq(dao_id.as_str()));
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
    after: Option<(i64, i64)>,
    limit: u64,
) -> Result<Vec<SignalRecord>, DbErr> {
    use signal::Column as S;
    let mut query = filtered(filter);
    if let Some((t, id)) = after {
        query = query.filter(super::after_desc(S::DetectedMs, S::Id, (t, id)));
    }
    with_subjects(db, query.limit(limit).all(db).await?).await
}

/// Attaches each signal's subject: one batched lookup per subject kind.
async fn with_subjects(db: &impl ConnectionTrait, rows: Vec<signal::Model>) -> Result<Vec<SignalRecord>, DbErr> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;
    const END: i64 = 1_000 * H;

    fn proposal(voting_type: &str, state: &str, scores_total: &str, quorum: &str) -> ProposalRow {
        ProposalRow {
            id: 1,
            dao_id: "testdao".to_owned(),
            source: "snapshot".to_owned(),
            external_id: "0xp".to_owned(),
            title: "T".to_owned(),
            author: "0xauthor".to_owned(),
            voting_type: Some(voting_type.to_owned()),
            state: state.to_owned(),
            choices: None,
            scores_total: Some(scores_total.to_owned()),
            quorum: Some(quorum.to_owned()),
            start_ms: Some(END - 100 * H),
            end_ms: Some(END),
            created_ms: END - 100 * H,
            upstream_vote_count: None,
            ingested_vote_count: 0,
            url: Some("https://snapshot.box/#/s:test.eth/proposal/0xp".to_owned()),
            ipfs: None,
            tx_hash: None,
            block_number: None,
        }
    }

    fn vote(voter: &str, choice: &str, power: &str) -> VoteRow {
        VoteRow {
            proposal_id: 1,
            voter: voter.to_owned(),
            choice: choice.to_owned(),
            voting_power: power.to_owned(),
            created_ms: END - H,
            ipfs: None,
            tx_hash: None,
            block_number: None,
        }
    }

    /// The kinds `p` produces with these votes, evaluated at `as_of`.
    fn kinds_at(p: &ProposalRow, votes: &[(&str, &str, &str)], as_of: i64) -> Vec<SignalKind> {
        let votes: Vec<VoteRow> = votes.iter().map(|(v, c, w)| vote(v, c, w)).collect();
        let mut p = p.clone();
        p.upstream_vote_count = Some(votes.len() as i64);
        p.ingested_vote_count = votes.len() as i64;
        let facts = (!votes.is_empty()).then(|| analyse_votes(&p, &votes));
        proposal_signals(&p, facts.as_ref(), &DaoContext::default(), as_of).into_iter().map(|d| d.kind).collect()
    }

    fn kinds(p: &ProposalRow, votes: &[(&str, &str, &str)]) -> Vec<SignalKind> {
        kinds_at(p, votes, END + H)
    }

    fn has(kinds: &[SignalKind], k: SignalKind) -> bool {
        kinds.contains(&k)
    }

    /// For `f`, Against `a` spread over many small voters (none decisive).
    fn race(f: &str, a: &str) -> Vec<(&'static str, &'static str, String)> {
        let (f, a) = (decimal::parse(f).unwrap(), decimal::parse(a).unwrap());
        let mut out = Vec::new();
        for i in 0..10 {
            let voter: &'static str = Box::leak(format!("0xf{i}").into_boxed_str());
            out.push((voter, "1", decimal::plain(&(&f / BigDecimal::from(10)))));
            let voter: &'static str = Box::leak(format!("0xa{i}").into_boxed_str());
            out.push((voter, "2", decimal::plain(&(&a / BigDecimal::from(10)))));
        }
        out
    }

    fn borrow<'a>(v: &'a [(&'static str, &'static str, String)]) -> Vec<(&'static str, &'static str, &'a str)> {
        v.iter().map(|(a, b, c)| (*a, *b, c.as_str())).collect()
    }

    #[test]
    fn close_race_margin_boundary() {
        let p = proposal("basic", "closed", "100", "0");
        // Counted 100: margin 4.99 (below 0.05) fires; exactly 5 does not; 6 does not.
        assert!(has(&kinds(&p, &borrow(&race("52.495", "47.505"))), SignalKind::CloseRace));
        assert!(!has(&kinds(&p, &borrow(&race("52.5", "47.5"))), SignalKind::CloseRace));
        assert!(!has(&kinds(&p, &borrow(&race("53", "47"))), SignalKind::CloseRace));
        // Abstain does not count: For 50.1 vs Against 49.9 with a large abstain is still close.
        let mut v = race("50.1", "49.9");
        v.push(("0xab", "3", "1000".to_owned()));
        assert!(has(&kinds(&p, &borrow(&v)), SignalKind::CloseRace));
    }

    #[test]
    fn close_race_needs_the_deadline_and_every_vote() {
        let p = proposal("basic", "active", "100", "0");
        let v = race("51", "49");
        let window = rules::CLOSE_RACE_WINDOW_MS;
        assert!(has(&kinds_at(&p, &borrow(&v), END - window), SignalKind::CloseRace));
        assert!(has(&kinds_at(&p, &borrow(&v), END - window + 1), SignalKind::CloseRace));
        assert!(!has(&kinds_at(&p, &borrow(&v), END - window - 1), SignalKind::CloseRace));
        // A partial tally says nothing.
        let votes: Vec<VoteRow> = borrow(&v).iter().map(|(a, b, c)| vote(a, b, c)).collect();
        let mut partial = proposal("basic", "closed", "100", "0");
        partial.upstream_vote_count = Some(votes.len() as i64 + 1);
        let facts = analyse_votes(&partial, &votes);
        assert!(!facts.complete);
        let out = proposal_signals(&partial, Some(&facts), &DaoContext::default(), END);
        assert!(out.iter().all(|d| d.kind != SignalKind::CloseRace && d.kind != SignalKind::ProposalPassed));
        // Ranked-choice first preferences do not decide a race.
        assert!(!has(&kinds(&proposal("ranked-choice", "closed", "100", "0"), &borrow(&v)), SignalKind::CloseRace));
    }

    #[test]
    fn quorum_reached_boundary() {
        let v = [("0x1", "1", "1")];
        assert!(!has(
            &kinds(&proposal("basic", "closed", "9999999.999999999", "10000000"), &v),
            SignalKind::QuorumReached
        ));
        assert!(has(&kinds(&proposal("basic", "closed", "10000000", "10000000"), &v), SignalKind::QuorumReached));
        assert!(has(&kinds(&proposal("basic", "closed", "10000000.000000001", "1e7"), &v), SignalKind::QuorumReached));
        assert!(!has(&kinds(&proposal("basic", "closed", "5", "0"), &v), SignalKind::QuorumReached));
        // Pending proposals: nothing yet.
        assert!(!has(&kinds(&proposal("basic", "pending", "10", "5"), &[]), SignalKind::QuorumReached));
    }

    #[test]
    fn quorum_at_risk_boundary() {
        let window = rules::QUORUM_AT_RISK_WINDOW_MS;
        let at = |st: &str, as_of: i64| kinds_at(&proposal("single-choice", "active", st, "100"), &[], as_of);
        // Below 0.8 of the quorum with the window's time left.
        assert!(has(&at("79.999", END - window), SignalKind::QuorumAtRisk));
        assert!(!has(&at("80", END - window), SignalKind::QuorumAtRisk));
        assert!(!has(&at("81", END - window), SignalKind::QuorumAtRisk));
        // Time left: more than the window → not yet; none left → over, not at risk.
        assert!(!has(&at("10", END - window - 1), SignalKind::QuorumAtRisk));
        assert!(has(&at("10", END - 1), SignalKind::QuorumAtRisk));
        assert!(!has(&at("10", END), SignalKind::QuorumAtRisk));
        // Closed proposals are never at risk.
        assert!(!has(&kinds_at(&proposal("basic", "closed", "10", "100"), &[], END - H), SignalKind::QuorumAtRisk));
        let d = proposal_signals(&proposal("basic", "active", "10", "100"), None, &DaoContext::default(), END - H);
        let risk = d.iter().find(|d| d.kind == SignalKind::QuorumAtRisk).unwrap();
        assert_eq!(risk.detected_ms, END - H);
        assert_eq!(risk.evidence.time_left_ms.as_deref(), Some("3600000"));
        assert_eq!(risk.evidence.quorum_share.as_deref(), Some("0.1"));
        assert!(
            risk.summary.contains("scores_total 10 is 0.1 of quorum 100 with 1 hours of voting left"),
            "{}",
            risk.summary
        );
    }

    #[test]
    fn single_voter_decisive_by_margin_boundary() {
        let p = proposal("basic", "closed", "100", "0");
        // For 60 (a whale with w), Against 40: margin 20. Decisive iff w > 20.
        // The rest of For is spread over four voters, each far below the margin.
        let case = |w: &str| {
            let rest = (decimal::parse("60").unwrap() - decimal::parse(w).unwrap()) / BigDecimal::from(4);
            let rest: &str = Box::leak(decimal::plain(&rest).into_boxed_str());
            let v = [("0xwhale", "1", w), ("0xs1", "1", rest), ("0xs2", "1", rest), ("0xs3", "1", rest)];
            kinds(&p, &[v[0], v[1], v[2], v[3], ("0xs4", "1", rest), ("0xagainst", "2", "40")])
        };
        assert!(!has(&case("19"), SignalKind::SingleVoterDecisive));
        assert!(!has(&case("20"), SignalKind::SingleVoterDecisive));
        assert!(has(&case("20.000001"), SignalKind::SingleVoterDecisive));
        let votes = [vote("0xwhale", "1", "30"), vote("0xsmall", "1", "30"), vote("0xagainst", "2", "40")];
        let mut p = p.clone();
        p.upstream_vote_count = Some(3);
        let facts = analyse_votes(&p, &votes);
        let d = proposal_signals(&p, Some(&facts), &DaoContext::default(), END);
        let s = d.iter().find(|d| d.kind == SignalKind::SingleVoterDecisive).unwrap();
        let v = s.evidence.deciding_vote.as_ref().unwrap();
        // Ties on power: the smaller address is cited.
        assert_eq!((v.voter.as_str(), v.effect.as_deref()), ("0xsmall", Some("30")));
        assert_eq!(s.evidence.decided_by, Some(vec!["margin".to_owned()]));
        assert_eq!(s.evidence.margin.as_deref(), Some("20"));
    }

    #[test]
    fn single_voter_decisive_by_quorum_boundary() {
        // scores_total 100, quorum 80: the largest vote decides iff 100 - power < 80.
        let case =
            |w: &str| kinds(&proposal("single-choice", "closed", "100", "80"), &[("0xw", "1", w), ("0xa", "1", "1")]);
        assert!(!has(&case("19.9"), SignalKind::SingleVoterDecisive));
        assert!(!has(&case("20"), SignalKind::SingleVoterDecisive));
        assert!(has(&case("20.1"), SignalKind::SingleVoterDecisive));
    }

    #[test]
    fn outcomes() {
        let basic = proposal("basic", "closed", "100", "50");
        assert!(has(&kinds(&basic, &[("0x1", "1", "51"), ("0x2", "2", "49")]), SignalKind::ProposalPassed));
        // A tie fails; Abstain does not count against.
        assert!(has(&kinds(&basic, &[("0x1", "1", "50"), ("0x2", "2", "50")]), SignalKind::ProposalFailed));
        let abstain_heavy = kinds(&basic, &[("0x1", "1", "10"), ("0x2", "2", "9"), ("0x3", "3", "81")]);
        assert!(has(&abstain_heavy, SignalKind::ProposalPassed));
        // Quorum not reached: failed whatever the tally, for any voting type.
        let short = proposal("basic", "closed", "49.99", "50");
        let k = kinds(&short, &[("0x1", "1", "49.99")]);
        assert!(has(&k, SignalKind::ProposalFailed) && !has(&k, SignalKind::ProposalPassed));
        assert!(has(&kinds(&proposal("single-choice", "closed", "49.99", "50"), &[]), SignalKind::ProposalFailed));
        // Other types with the quorum met (or none): no pass/fail rule.
        let k = kinds(&proposal("single-choice", "closed", "100", "50"), &[("0x1", "1", "100")]);
        assert!(!has(&k, SignalKind::ProposalPassed) && !has(&k, SignalKind::ProposalFailed));
        // Basic with no votes held: the outcome is unknown.
        let k = kinds(&proposal("basic", "closed", "100", "0"), &[]);
        assert!(!has(&k, SignalKind::ProposalPassed) && !has(&k, SignalKind::ProposalFailed));
        // Active proposals have no outcome yet.
        let k = kinds_at(&proposal("basic", "active", "100", "0"), &[("0x1", "1", "1")], END - 100 * H);
        assert!(!has(&k, SignalKind::ProposalPassed));
    }

    fn history(counts: &[i64], authors: &[&str]) -> Vec<ProposalRow> {
        counts
            .iter()
            .zip(authors)
            .enumerate()
            .map(|(i, (n, a))| {
                let mut p = proposal("basic", "closed", "1", "0");
                p.id = i as i64 + 1;
                p.external_id = format!("0x{i:02}");
                p.author = (*a).to_owned();
                p.start_ms = Some(i as i64 * H);
                p.created_ms = i as i64 * H;
                p.upstream_vote_count = Some(*n);
                p
            })
            .collect()
    }

    #[test]
    fn unusual_turnout_boundary() {
        let a = ["0xa"; 7];
        let turnout = |counts: &[i64]| {
            let ps = history(counts, &a);
            let ctx = dao_contexts(&ps);
            let last = ps.len() - 1;
            proposal_signals(&ps[last], None, &ctx[last], END)
                .into_iter()
                .find(|d| d.kind == SignalKind::UnusualTurnout)
                .map(|d| d.summary)
        };
        // Median 10 over 5 earlier proposals: ≥ 30 is high, ≤ 10/3 is low.
        assert!(turnout(&[10, 10, 10, 10, 10, 30]).unwrap().starts_with("Unusually high turnout"));
        assert!(turnout(&[10, 10, 10, 10, 10, 29]).is_none());
        assert!(turnout(&[10, 10, 10, 10, 10, 3]).unwrap().starts_with("Unusually low turnout"));
        assert!(turnout(&[10, 10, 10, 10, 10, 4]).is_none());
        // Too little history.
        assert!(turnout(&[10, 10, 10, 10, 30]).is_none());
        // Even history: the exact mean of the middle two (10 and 11 → 10.5); 31.5 is 3×.
        let ps = history(&[9, 10, 11, 12, 13, 14], &a);
        let ctx = dao_contexts(&ps);
        assert_eq!(ctx[5].turnout_history, Some((decimal::parse("11").unwrap(), 5)));
        let ps = history(&[9, 10, 11, 12, 13, 14, 0], &a);
        assert_eq!(dao_contexts(&ps)[6].turnout_history, Some((decimal::parse("11.5").unwrap(), 6)));
    }

    #[test]
    fn new_author_boundary() {
        let fires = |authors: &[&str]| {
            let ps = history(&vec![1; authors.len()], authors);
            let ctx = dao_contexts(&ps);
            let last = ps.len() - 1;
            proposal_signals(&ps[last], None, &ctx[last], END).iter().any(|d| d.kind == SignalKind::NewAuthor)
        };
        assert!(!fires(&["0xa", "0xa", "0xa", "0xa", "0xb"]), "4 earlier proposals: too early to tell");
        assert!(fires(&["0xa", "0xa", "0xa", "0xa", "0xa", "0xb"]));
        assert!(!fires(&["0xb", "0xa", "0xa", "0xa", "0xa", "0xb"]), "not the author's first");
    }

    #[test]
    fn forum_spike_boundary() {
        let window = rules::FORUM_SPIKE_WINDOW_MS;
        let n = rules::FORUM_SPIKE_MIN_POSTS as i64;
        // n posts spread evenly over exactly the window: fires at the last one.
        let posts: Vec<(i64, i64)> = (0..n).map(|i| (i * window / (n - 1), i + 1)).collect();
        assert_eq!(first_spike(&posts), Some((0, n as usize - 1)));
        // One fewer post: nothing.
        assert_eq!(first_spike(&posts[1..]), None);
        // Spread over the window plus 1 ms: nothing.
        let wide: Vec<(i64, i64)> =
            (0..n).map(|i| (if i == n - 1 { window + 1 } else { i * window / (n - 1) }, i + 1)).collect();
        assert_eq!(first_spike(&wide), None);
        let topic = TopicRow {
            id: 7,
            dao_id: "testdao".to_owned(),
            external_id: "123".to_owned(),
            title: "[synthetic] T".to_owned(),
            url: "https://forum.example/t/t/123".to_owned(),
        };
        let d = spike_signal(&topic, &posts).unwrap();
        assert_eq!(d.natural_key, "forum_discussion_spike:testdao:discourse:123");
        assert_eq!(d.detected_ms, window);
        assert_eq!(d.evidence.posts_in_window.as_deref(), Some("20"));
        assert_eq!(d.evidence.citations[1].url.as_deref(), Some("https://forum.example/t/t/123/20"));
    }
}
