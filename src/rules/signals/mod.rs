//! The signal rules of `contract::signals`, as pure functions of the facts they read.
//!
//! This file holds what the rules read (a proposal's columns, its votes, a forum topic; the
//! [`Proposal`] view every proposal rule evaluates), what they produce ([`Desired`], with the
//! [`Evidence`] stored beside each signal), the helpers they share (labels, titles, citations,
//! thresholds), and [`proposal_signals`], which runs the proposal rules in their fixed order.
//! `facts` derives what the votes and a DAO's history say; each rule has a file of its own with
//! its boundary tests beside it. Thresholds come from `contract::signals`.
//!
//! `store::signals` loads the facts, runs the rules at publication and reconciles the table with
//! what they produce.
use bigdecimal::{BigDecimal, Zero};
use serde::{Deserialize, Serialize};

use crate::contract::decimal;
use crate::contract::signals::SignalKind;
use crate::contract::vocabulary::{ItemKind, ProposalSource, ProposalState, SourceKind};
use crate::rules::tally;

pub mod close_race;
pub mod facts;
pub mod forum_discussion_spike;
pub mod new_author;
pub mod outcome;
pub mod quorum_at_risk;
pub mod quorum_reached;
pub mod single_voter_decisive;
pub mod unusual_turnout;

#[cfg(test)]
mod fixtures;

pub use facts::{analyse_votes, dao_contexts, leading_pair};

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

/// The columns of a proposal the rules read (never its body). `store::signals` loads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalInput {
    pub id: i64,
    pub dao_id: String,
    pub source: ProposalSource,
    pub external_id: String,
    pub title: String,
    pub author: String,
    pub voting_type: Option<String>,
    pub state: ProposalState,
    pub choices: Option<Vec<String>>,
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

/// The columns of a vote the rules read (stored with the proposal's facts, `store::facts`, as
/// JSON: its serialised form is stored data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteInput {
    pub proposal_id: i64,
    pub voter: String,
    pub choice: String,
    pub voting_power: String,
    pub created_ms: i64,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
}

/// The columns of a forum topic the spike rule reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInput {
    pub id: i64,
    pub dao_id: String,
    pub external_id: String,
    pub title: String,
    pub url: String,
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
    pub tally: tally::Tally,
    /// Every upstream vote is held and every choice was readable: the tally is the result.
    pub complete: bool,
    pub votes: u64,
    /// The two leading choices; absent for ranked-choice or when nothing was counted.
    pub pair: Option<Pair>,
    /// The vote with the largest power (ties: the smaller voter address).
    pub largest: Option<VoteInput>,
    /// The vote with the largest effect on the margin (leader minus runner-up), with it.
    pub most_effective: Option<(VoteInput, BigDecimal)>,
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
    pub subject_kind: ItemKind,
    pub subject_source: SourceKind,
    pub subject_external_id: String,
    pub proposal_id: Option<i64>,
    pub topic_id: Option<i64>,
    pub detected_ms: i64,
    pub summary: String,
    pub evidence: Evidence,
}

// ---------------------------------------------------------------------------------------------
// The proposal rules.
// ---------------------------------------------------------------------------------------------

/// One proposal as every proposal rule reads it: its row, its vote facts, its standing in its
/// DAO and the data time, with the values several rules need worked out once.
#[derive(Debug, Clone)]
pub struct Proposal<'a> {
    row: &'a ProposalInput,
    facts: Option<&'a VoteFacts>,
    ctx: &'a DaoContext,
    /// The revision's `dataAsOf`: "now" for the rules.
    as_of: i64,
    closed: bool,
    active: bool,
    /// The title as summaries quote it.
    title: String,
    /// Voting time left at `as_of` (negative once over).
    time_left: Option<i64>,
    /// When the data says it: the end for closed proposals, `dataAsOf` for the others.
    detected: i64,
    scores_total: Option<BigDecimal>,
    /// A positive quorum only: zero means the proposal has none.
    quorum: Option<BigDecimal>,
    /// The proposal's own choice labels, in choice order.
    labels: Vec<String>,
}

impl<'a> Proposal<'a> {
    pub fn new(row: &'a ProposalInput, facts: Option<&'a VoteFacts>, ctx: &'a DaoContext, as_of: i64) -> Self {
        let closed = is_closed(row);
        Self {
            row,
            facts,
            ctx,
            as_of,
            closed,
            active: row.state == ProposalState::Active,
            title: short_title(&row.title),
            time_left: row.end_ms.map(|e| e - as_of),
            detected: if closed { row.end_ms.unwrap_or(row.created_ms) } else { as_of },
            scores_total: row.scores_total.as_deref().and_then(|s| decimal::parse(s).ok()),
            quorum: row.quorum.as_deref().and_then(|s| decimal::parse(s).ok()).filter(|q| *q > BigDecimal::zero()),
            labels: row.choices.clone().unwrap_or_default(),
        }
    }

    /// The vote facts when they are the whole result (every upstream vote held and readable).
    fn complete(&self) -> Option<&'a VoteFacts> {
        self.facts.filter(|f| f.complete)
    }

    /// Choice number → label: the proposal's own labels, else For/Against/Abstain for `basic`.
    fn label(&self, c: u32) -> Option<String> {
        if c == 0 {
            return None;
        }
        self.labels.get(c as usize - 1).cloned().or_else(|| match (self.row.voting_type.as_deref(), c) {
            (Some("basic"), 1) => Some("For".to_owned()),
            (Some("basic"), 2) => Some("Against".to_owned()),
            (Some("basic"), 3) => Some("Abstain".to_owned()),
            _ => None,
        })
    }

    /// A choice as summaries name it; choice 0 is the absent runner-up of a one-choice tally.
    fn name(&self, c: u32) -> String {
        match self.label(c) {
            Some(l) => format!("{l} (choice {c})"),
            None if c == 0 => "no other choice".to_owned(),
            None => format!("choice {c}"),
        }
    }

    /// The evidence every proposal signal carries, citing the proposal for what `kind` reads.
    fn evidence(&self, kind: SignalKind) -> Evidence {
        let p = self.row;
        Evidence {
            voting_type: p.voting_type.clone(),
            state: Some(p.state.as_str().to_owned()),
            upstream_votes: p.upstream_vote_count.map(|n| n.to_string()),
            ingested_votes: Some(self.facts.map_or(p.ingested_vote_count as u64, |f| f.votes).to_string()),
            citations: vec![proposal_citation(
                p,
                match kind {
                    SignalKind::NewAuthor => &["author"],
                    SignalKind::UnusualTurnout => &["upstreamVotes"],
                    _ => &["scoresTotal", "quorum", "upstreamVotes"],
                },
            )],
            ..Default::default()
        }
    }

    /// `e` with the score total, and the quorum and its share when there is one.
    fn with_quorum(&self, mut e: Evidence) -> Evidence {
        if let (Some(st), Some(q)) = (&self.scores_total, &self.quorum) {
            e.scores_total = Some(dec(st));
            e.quorum = Some(dec(q));
            e.quorum_share = Some(tally::share(st, q));
        } else {
            e.scores_total = self.scores_total.as_ref().map(dec);
        }
        e
    }

    /// `e` with the tally of the ingested votes and, when two choices lead, the race between them.
    fn with_tally(&self, mut e: Evidence, f: &VoteFacts) -> Evidence {
        e.tally = Some(
            f.tally
                .scores
                .iter()
                .map(|(c, s)| ChoiceScore { choice: c.to_string(), label: self.label(*c), score: tally::score_text(s) })
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
    }

    /// A signal of `kind` on this proposal.
    fn signal(&self, kind: SignalKind, detected_ms: i64, summary: String, evidence: Evidence) -> Desired {
        let p = self.row;
        Desired {
            natural_key: format!("{}:{}:{}:{}", kind.as_str(), p.dao_id, p.source, p.external_id),
            kind,
            dao_id: p.dao_id.clone(),
            subject_kind: ItemKind::Proposal,
            subject_source: p.source.source(),
            subject_external_id: p.external_id.clone(),
            proposal_id: Some(p.id),
            topic_id: None,
            detected_ms,
            summary,
            evidence,
        }
    }
}

/// A proposal rule: the signal it finds on a proposal, if any.
pub type Rule = fn(&Proposal) -> Option<Desired>;

/// The proposal rules, in the order [`proposal_signals`] runs them.
pub const PROPOSAL_RULES: [Rule; 7] = [
    close_race::evaluate,
    quorum_reached::evaluate,
    quorum_at_risk::evaluate,
    single_voter_decisive::evaluate,
    unusual_turnout::evaluate,
    outcome::evaluate,
    new_author::evaluate,
];

/// Every proposal signal of `p`, in the order of [`PROPOSAL_RULES`]. `as_of` is the revision's
/// `dataAsOf`.
pub fn proposal_signals(p: &ProposalInput, facts: Option<&VoteFacts>, ctx: &DaoContext, as_of: i64) -> Vec<Desired> {
    let p = Proposal::new(p, facts, ctx, as_of);
    PROPOSAL_RULES.iter().filter_map(|rule| rule(&p)).collect()
}

// ---------------------------------------------------------------------------------------------
// Shared helpers.
// ---------------------------------------------------------------------------------------------

fn is_closed(p: &ProposalInput) -> bool {
    p.state.is_closed()
}

/// When voting started; proposals without a start count from their creation.
fn start_of(p: &ProposalInput) -> i64 {
    p.start_ms.unwrap_or(p.created_ms)
}

/// The turnout the rules compare: the upstream's count, else the votes held.
fn vote_count(p: &ProposalInput) -> i64 {
    p.upstream_vote_count.unwrap_or(p.ingested_vote_count)
}

/// A threshold of `contract::signals` as a number.
fn threshold(text: &str) -> BigDecimal {
    decimal::parse(text).expect("rule thresholds are decimal literals")
}

fn dec(v: &BigDecimal) -> String {
    decimal::plain(v)
}

/// A title short enough to quote in a summary.
fn short_title(title: &str) -> String {
    let t = title.trim();
    if t.chars().count() <= SUMMARY_TITLE_CHARS {
        t.to_owned()
    } else {
        format!("{}…", t.chars().take(SUMMARY_TITLE_CHARS - 1).collect::<String>().trim_end())
    }
}

fn proposal_citation(p: &ProposalInput, supports: &[&str]) -> CitationRecord {
    CitationRecord {
        supports: supports.iter().map(|s| (*s).to_owned()).collect(),
        source: p.source.as_str().to_owned(),
        url: p.url.clone(),
        snapshot_id: (p.source == ProposalSource::Snapshot).then(|| p.external_id.clone()),
        ipfs: p.ipfs.clone(),
        tx_hash: p.tx_hash.clone(),
        block_number: p.block_number.map(|b| b.to_string()),
    }
}

fn vote_citation(p: &ProposalInput, v: &VoteInput) -> CitationRecord {
    CitationRecord {
        supports: vec!["decidingVote".to_owned()],
        source: p.source.as_str().to_owned(),
        url: p.url.clone(),
        snapshot_id: None,
        ipfs: v.ipfs.clone(),
        tx_hash: v.tx_hash.clone(),
        block_number: v.block_number.map(|b| b.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn rules_run_in_their_order() {
        // A closed basic proposal that trips every proposal rule a closed proposal can.
        let p = proposal("basic", "closed", "100", "50");
        let (p, facts) = with_votes(&p, &borrow(&race("50.1", "49.9")));
        let ctx = DaoContext {
            prior_proposals: 5,
            first_by_author: true,
            turnout_history: Some((decimal::parse("5").unwrap(), 5)),
        };
        let kinds: Vec<SignalKind> =
            proposal_signals(&p, facts.as_ref(), &ctx, END + H).into_iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                SignalKind::CloseRace,
                SignalKind::QuorumReached,
                SignalKind::SingleVoterDecisive,
                SignalKind::UnusualTurnout,
                SignalKind::ProposalPassed,
                SignalKind::NewAuthor,
            ]
        );
    }

    #[test]
    fn a_partial_tally_decides_nothing() {
        let votes: Vec<VoteInput> = borrow(&race("51", "49")).iter().map(|(a, b, c)| vote(a, b, c)).collect();
        let mut p = proposal("basic", "closed", "100", "0");
        p.upstream_vote_count = Some(votes.len() as i64 + 1);
        p.ingested_vote_count = votes.len() as i64;
        let facts = analyse_votes(&p, &votes);
        assert!(!facts.complete);
        let out = proposal_signals(&p, Some(&facts), &DaoContext::default(), END);
        assert!(out.iter().all(|d| d.kind != SignalKind::CloseRace && d.kind != SignalKind::ProposalPassed));
    }

    #[test]
    fn short_title_boundary() {
        let at = "t".repeat(SUMMARY_TITLE_CHARS);
        assert_eq!(short_title(&format!("  {at} ")), at);
        let over = format!("{at}u");
        assert_eq!(short_title(&over), format!("{}…", "t".repeat(SUMMARY_TITLE_CHARS - 1)));
    }
}
