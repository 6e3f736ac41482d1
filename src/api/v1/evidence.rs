//! `GET /v1/daos/{daoId}/proposals/{source}/{externalId}/evidence`: a proposal with the exact
//! numbers behind it and a citation for every fact.
use bigdecimal::{BigDecimal, Zero};
use poem::web::Data;
use poem_openapi::{Enum, Object, OpenApi, param::Path, payload::Json};

use super::V1Tag;
use crate::api::{
    AppState,
    views::{
        citation::{Citation, EvidenceFacts, citation, evidence_citations, fields},
        item::{ItemRef, topic_ref},
        proposal::{PowerTimepoint, SCORES_FINAL, V1ProposalSummary},
        voter::{KnownVoters, VoterNames},
    },
};
use crate::contract::params::{DaoIdParam, canonical_v1_value};
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ProposalSource;
use crate::contract::vocabulary::SourceKind;
use crate::contract::voting::TallyMethod;
use crate::contract::{
    api_error::ApiError,
    decimal,
    envelope::{V1Envelope, V1Request},
    errors::Problem,
    limits::lookup::{EVIDENCE_EVENTS, EVIDENCE_LARGEST_VOTES, EVIDENCE_TOPICS},
    operations::EvidenceGetV1 as Op,
};
use crate::rules::{
    evidence::{self, ChoiceShares, Quorum, choice_shares},
    tally::{self, Tally},
};
use crate::store::{
    self,
    entities::{governance_event, proposal, vote},
};

/// Where per-choice scores come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ScoresFrom {
    /// The upstream's own per-choice scores.
    Upstream,
    /// Computed here, exactly, from the votes held in this store (see `turnout.coverage`).
    IngestedVotes,
}

/// One choice with its exact score and share.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct EvidenceChoice {
    /// 1-based, as Snapshot numbers choices (on-chain: support + 1, i.e. 1 = Against, 2 = For, 3 = Abstain).
    pub choice: u32,
    /// The label, when the choices are known.
    pub label: Option<String>,
    /// Exact voting power for the choice.
    pub score: String,
    /// `score` ÷ the sum of all choices' scores, rounded half-even to {{SHARE_DECIMALS}} decimals.
    pub share: String,
}

/// The quorum and whether the votes that count toward it reach it.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct QuorumEvidence {
    /// The upstream quorum, as the exact text received (on chain: the governor's
    /// `quorum(proposalSnapshot)`, in the token's smallest unit).
    pub required: String,
    /// The upstream `scoresTotal`: what `reached` compares with, unless `counted` is present.
    pub scores_total: String,
    /// `counted ≥ required` when `counted` is present, else `scoresTotal ≥ required`.
    pub reached: bool,
    /// An on-chain governor's `COUNTING_MODE()`, verbatim, when it declares one (e.g.
    /// `support=bravo&quorum=for,abstain`).
    pub counting_mode: Option<String>,
    /// The votes that count toward the quorum as `countingMode` says (For and Abstain for
    /// OpenZeppelin's modules: Against never helps reach it), exact; what `reached` compares with.
    pub counted: Option<String>,
}

/// Participation: upstream counts and what this store holds, kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct EvidenceTurnout {
    /// Votes cast according to the upstream.
    pub upstream_votes: Option<String>,
    /// Votes held in this store.
    pub ingested_votes: String,
    /// `ingestedVotes ÷ upstreamVotes`, rounded half-even to {{SHARE_DECIMALS}} decimals; absent when the
    /// upstream count is unknown or zero.
    pub coverage: Option<String>,
    /// Ingested votes whose choice was read and counted in `choices`.
    pub votes_counted: String,
    /// Ingested votes whose choice could not be read: reported, never guessed.
    pub votes_unreadable: String,
    /// Exact sum of the voting power of the counted votes.
    pub ingested_voting_power: String,
}

/// One governance event of the proposal.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct TimelineEvent {
    pub kind: String,
    pub at: Timestamp,
    /// Lowercase 0x address of whoever caused it, when known.
    pub actor: Option<String>,
    pub url: Option<String>,
    pub snapshot_id: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<String>,
}

/// The proposal's dates and governance events.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalTimeline {
    pub created_at: Timestamp,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    /// Governance events of the proposal, oldest first (at most {{EVIDENCE_EVENTS}}).
    pub events: Vec<TimelineEvent>,
}

/// One of the largest votes.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct EvidenceVote {
    /// The canonical lowercase 0x address (the same as `voterIdentity`).
    pub voter: String,
    #[oai(flatten)]
    pub names: VoterNames,
    /// The choice exactly as the upstream gave it: `1`, `[1,3]`, `{'2': 1}`.
    pub choice: String,
    /// The exact voting power text received.
    pub voting_power: String,
    /// {{VOTING_POWER_FROM_FLOAT}}
    pub voting_power_from_float: bool,
    /// `votingPower ÷ turnout.ingestedVotingPower`, rounded half-even to {{SHARE_DECIMALS}} decimals.
    pub share_of_ingested_power: String,
    pub reason: Option<String>,
    pub created_at: Timestamp,
}

/// Evidence-rich detail of one proposal.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ProposalEvidence {
    pub proposal: V1ProposalSummary,
    /// The full text, when known (the bundled sample carries none).
    pub body: Option<String>,
    pub discussion_url: Option<String>,
    /// `upstream` when the upstream's per-choice scores are stored, else `ingested_votes`.
    pub scores_from: ScoresFrom,
    /// One sentence saying what `choices` covers.
    pub scores_note: String,
    /// Every choice with its exact score and share, in choice order.
    pub choices: Vec<EvidenceChoice>,
    /// Upstream `scores_total`, as the exact text received.
    pub scores_total: Option<String>,
    /// Absent when the proposal has no quorum (unknown or zero) or no upstream total.
    pub quorum: Option<QuorumEvidence>,
    pub turnout: EvidenceTurnout,
    pub timeline: ProposalTimeline,
    /// The largest ingested votes by voting power (at most 10; ties by address).
    pub largest_votes: Vec<EvidenceVote>,
    /// Where every vote's voting power was read: the proposal's snapshot, when the upstream
    /// gave one.
    pub voting_power_at: Option<PowerTimepoint>,
    /// Forum topics that discuss the proposal.
    pub linked_topics: Vec<ItemRef>,
    /// Where each fact comes from; `supports` names fields of this object (`proposal.title`,
    /// `choices[].score`, `largestVotes[0]`).
    pub citations: Vec<Citation>,
}

impl poem_openapi::types::Example for ProposalEvidence {
    fn example() -> Self {
        let id = "0x5915e661808f896203ff5759e737e04861bf8fa09525972d481cbccf7776f485";
        let url = format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}");
        let choice = |n: u32, score: &str, share: &str| EvidenceChoice {
            choice: n,
            label: None,
            score: score.to_owned(),
            share: share.to_owned(),
        };
        Self {
            proposal: V1ProposalSummary {
                dao_id: "uniswap".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                external_id: id.to_owned(),
                proposal_key: "p_TG-Bp7qX4sxD-yzk0iaGvA".to_owned(),
                title: "Trial run a Technical Advisory Board (TAB)".to_owned(),
                state: "closed".to_owned(),
                voting_type: Some("basic".to_owned()),
                author: "0xc5547b4907418c2ec0c2a95bec6fee8354657759".to_owned(),
                created_at: Timestamp::known("2025-06-12T00:00:00.000Z"),
                start_at: Some(Timestamp::known("2025-06-12T00:00:00.000Z")),
                end_at: Some(Timestamp::known("2025-06-17T00:00:00.000Z")),
                url: Some(url.clone()),
                upstream_votes: Some("333".to_owned()),
                ingested_votes: "333".to_owned(),
            },
            body: None,
            discussion_url: None,
            scores_from: ScoresFrom::IngestedVotes,
            scores_note: "Per-choice scores are computed here from the 333 ingested votes of 333 cast upstream; \
                          the upstream's per-choice scores are not stored."
                .to_owned(),
            choices: vec![
                choice(1, "4344.199619445427062608", "0.0001636497"),
                choice(2, "25132056.095661202750587948", "0.9467457485"),
                choice(3, "1409328.73017342662211206", "0.0530906018"),
            ],
            scores_total: Some("26545729.025454085".to_owned()),
            quorum: Some(QuorumEvidence {
                required: "10000000".to_owned(),
                scores_total: "26545729.025454085".to_owned(),
                reached: true,
                counting_mode: None,
                counted: None,
            }),
            turnout: EvidenceTurnout {
                upstream_votes: Some("333".to_owned()),
                ingested_votes: "333".to_owned(),
                coverage: Some("1".to_owned()),
                votes_counted: "333".to_owned(),
                votes_unreadable: "0".to_owned(),
                ingested_voting_power: "26545729.025454074799762616".to_owned(),
            },
            timeline: ProposalTimeline {
                created_at: Timestamp::known("2025-06-12T00:00:00.000Z"),
                start_at: Some(Timestamp::known("2025-06-12T00:00:00.000Z")),
                end_at: Some(Timestamp::known("2025-06-17T00:00:00.000Z")),
                events: Vec::new(),
            },
            voting_power_at: None,
            largest_votes: vec![EvidenceVote {
                voter: "0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned(),
                names: VoterNames {
                    voter_identity: "0x683a4f9915d6216f73d6df50151725036bd26c02".to_owned(),
                    address: "0x683a4F9915D6216f73d6Df50151725036bD26C02".to_owned(),
                    ens: Some("gauntletgov.eth".to_owned()),
                },
                choice: "2".to_owned(),
                voting_power: "5252468.695025884".to_owned(),
                voting_power_from_float: true,
                share_of_ingested_power: "0.1978649255".to_owned(),
                reason: None,
                created_at: Timestamp::known("2025-06-16T00:00:00.000Z"),
            }],
            linked_topics: Vec::new(),
            citations: vec![
                Citation {
                    url: Some(url),
                    snapshot_id: Some(id.to_owned()),
                    ..citation(
                        SourceKind::Snapshot.as_str(),
                        fields(&["proposal.title", "proposal.state", "scoresTotal", "quorum"]),
                    )
                },
                Citation {
                    snapshot_id: Some(id.to_owned()),
                    dataset: Some("data/sample/snapshot_votes.csv".to_owned()),
                    ..citation(
                        SourceKind::Snapshot.as_str(),
                        fields(&["choices[].score", "choices[].share", "largestVotes[]"]),
                    )
                },
            ],
        }
    }
}

fn vote_evidence(v: &vote::Model, total_power: &BigDecimal, known: &KnownVoters) -> EvidenceVote {
    let power = decimal::parse(&v.voting_power).unwrap_or_else(|_| BigDecimal::zero());
    let voter = v.voter.lower();
    EvidenceVote {
        names: known.names(&voter),
        voter,
        choice: v.choice.clone(),
        voting_power: v.voting_power.clone(),
        voting_power_from_float: v.vp_from_float,
        share_of_ingested_power: tally::share(&power, total_power),
        reason: v.reason.clone(),
        created_at: Timestamp::from_ms(v.created_ms),
    }
}

fn timeline_event(e: &governance_event::Model) -> TimelineEvent {
    TimelineEvent {
        kind: e.kind.as_str().to_owned(),
        at: Timestamp::from_ms(e.occurred_ms),
        actor: e.actor.clone(),
        url: e.url.clone(),
        snapshot_id: e.snapshot_id.clone(),
        tx_hash: e.tx_hash.clone(),
        block_number: e.block_number.map(|b| b.to_string()),
    }
}

/// Every choice with its exact score and share: the upstream's own scores when they are stored,
/// else those computed from the ingested votes.
fn choices(p: &proposal::Model, tally: &Tally) -> (ScoresFrom, Vec<EvidenceChoice>) {
    let labels = p.choices.clone().unwrap_or_default().0;
    let upstream_scores = p.scores.clone().map(|s| s.0);
    let (scores_from, choices) = match choice_shares(&labels, upstream_scores.as_deref(), tally) {
        ChoiceShares::Upstream(rows) => (ScoresFrom::Upstream, rows),
        ChoiceShares::IngestedVotes(rows) => (ScoresFrom::IngestedVotes, rows),
    };
    let choices = choices
        .into_iter()
        .map(|c| EvidenceChoice { choice: c.choice, label: c.label, score: c.score, share: c.share })
        .collect();
    (scores_from, choices)
}

/// The sentence that says what the choices' scores cover: whose they are, what a computed score
/// means for the voting type, and whether the scores may still change or hide choices.
fn scores_note(p: &proposal::Model, scores_from: ScoresFrom) -> String {
    let mut scores_note = match scores_from {
        ScoresFrom::Upstream => "Per-choice scores are the upstream's own.".to_owned(),
        ScoresFrom::IngestedVotes => format!(
            "Per-choice scores are computed here from the {} ingested votes{}; the upstream's per-choice scores are not stored.",
            p.ingested_vote_count,
            p.upstream_vote_count.map(|u| format!(" of {u} cast upstream")).unwrap_or_default()
        ),
    };
    if scores_from == ScoresFrom::IngestedVotes {
        match crate::contract::voting::tally_method(p.voting_type.as_deref()) {
            TallyMethod::Sum => {}
            TallyMethod::FirstPreferences => scores_note.push_str(
                " For this ranked voting type they are first preferences (the power that ranked each choice \
                 first), not the outcome, which Snapshot decides over every preference.",
            ),
            TallyMethod::AllocatedPower => scores_note.push_str(
                " For quadratic voting they are the power each choice was allocated, not Snapshot's quadratic \
                 scores, which square sums of square roots.",
            ),
        }
    }
    if p.scores_state.as_deref().is_some_and(|s| s != SCORES_FINAL) {
        scores_note.push_str(
            " Provisional: the upstream has not finalised the scores (`scoresState`); they may still change.",
        );
    }
    if p.privacy.as_deref() == Some("shutter") {
        scores_note.push_str(
            " Shielded voting (Snapshot privacy `shutter`): each choice stays encrypted until the scores are final; a \
             vote whose choice is still encrypted is counted as unreadable, never guessed.",
        );
    }
    scores_note
}

/// The quorum and whether it is reached, compared with the votes that count toward it when the
/// governor declares how it counts, else with the upstream total; `None` when either is unknown.
fn quorum_evidence(p: &proposal::Model) -> Option<QuorumEvidence> {
    let counted = p
        .counting_mode
        .as_deref()
        .and_then(|mode| evidence::quorum_votes(Some(mode), p.scores.as_ref().map(|s| s.0.as_slice()), None));
    let compared = counted.as_deref().or(p.scores_total.as_deref());
    let reached = match evidence::quorum(p.quorum.as_deref(), compared) {
        Quorum::Reached => Some(true),
        Quorum::NotReached => Some(false),
        Quorum::NoQuorum | Quorum::Unknown => None,
    };
    reached.map(|reached| QuorumEvidence {
        required: p.quorum.clone().unwrap_or_default(),
        scores_total: p.scores_total.clone().unwrap_or_default(),
        reached,
        counting_mode: counted.as_ref().and(p.counting_mode.clone()),
        counted,
    })
}

/// Participation: the upstream's count and what this store holds, with the coverage of one by
/// the other.
fn turnout(p: &proposal::Model, tally: &Tally) -> EvidenceTurnout {
    let ingested = p.ingested_vote_count;
    let coverage = p
        .upstream_vote_count
        .filter(|u| *u > 0)
        .map(|u| tally::share(&BigDecimal::from(ingested), &BigDecimal::from(u)));
    EvidenceTurnout {
        upstream_votes: p.upstream_vote_count.map(|u| u.to_string()),
        ingested_votes: ingested.to_string(),
        coverage,
        votes_counted: tally.votes_counted.to_string(),
        votes_unreadable: tally.votes_unreadable.to_string(),
        ingested_voting_power: tally::score_text(&tally.total_power),
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Proposals")]
impl Api {
    /// Evidence for one proposal, with citations
    ///
    /// Everything needed to state facts about one proposal and quote their sources: the full
    /// text when known; every choice with its exact score and share (`scoresFrom` says whether
    /// they are the upstream's or computed here from the ingested votes, and
    /// `turnout.coverage` how many of the upstream votes those are); upstream `scoresTotal`,
    /// quorum and whether it is reached; turnout with upstream and ingested counts kept apart;
    /// the timeline (created, start, end, governance events); the {{EVIDENCE_LARGEST_VOTES_WORD}} largest votes with voter,
    /// choice as given, exact power and reason; linked forum topics; and `citations`, each
    /// naming the fields it supports and where they come from (Snapshot URL and id, IPFS,
    /// transaction hash and block, forum URL, or the bundled dataset file). Find the
    /// `source`/`externalId` with `GET /v1/proposals/lookup`.
    #[oai(path = "/daos/:daoId/proposals/:source/:externalId/evidence", method = "get", operation_id = "evidence_get")]
    async fn evidence_get(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// The DAO's slug, as `GET /v1/daos` lists it; another letter case is served under the
        /// lowercase slug and recorded (`normalized`).
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
        /// `snapshot` or `onchain`.
        source: Path<ProposalSource>,
        /// The upstream proposal id (Snapshot id, or on-chain proposal id as a decimal string); a 0x id
        /// in upper case is served under its lowercase form and recorded (`normalized`).
        #[oai(name = "externalId")]
        external_id: Path<String>,
    ) -> Result<Json<V1Envelope<ProposalEvidence>>, ApiError<Op>> {
        let mut req = req;
        let dao = dao_id.0.resolve_v1(&mut req);
        let external_id = canonical_v1_value("externalId", &external_id.0, &mut req);
        let source = source.0;
        let db = &state.reads();
        // A text that is no DAO id names no DAO: the same answer as an unknown one.
        let dao = dao.map_err(|received| Problem::unknown_dao(&received))?;
        let Some(p) = store::items::proposal(db, dao.as_str(), source.as_str(), &external_id).await? else {
            return Err(if store::evidence::dao_exists(db, dao.as_str()).await? {
                Problem::not_found(format!("DAO `{dao}` has no {source} proposal `{external_id}`."))
            } else {
                Problem::unknown_dao(dao.as_str())
            }
            .into());
        };
        let votes = store::evidence::vote_summary(db, &p, EVIDENCE_LARGEST_VOTES).await?;
        let known = KnownVoters::load(db, votes.largest.iter().map(|v| v.voter.lower())).await?;
        let events = store::evidence::events(db, p.id, EVIDENCE_EVENTS).await?;
        let topics = store::items::topics_linked_to(db, p.id, EVIDENCE_TOPICS).await?;

        let tally = &votes.tally;
        let (scores_from, choices) = choices(&p, tally);
        let quorum = quorum_evidence(&p);
        let citations = evidence_citations(&EvidenceFacts {
            proposal: &p,
            scores_from_upstream: scores_from == ScoresFrom::Upstream,
            quorum_known: quorum.is_some(),
            tally,
            largest_votes: &votes.largest,
            events: &events,
            topics: &topics,
        });
        let data = ProposalEvidence {
            proposal: V1ProposalSummary::from_model(&p),
            body: p.body.clone(),
            discussion_url: p.discussion_url.clone(),
            scores_from,
            scores_note: scores_note(&p, scores_from),
            choices,
            scores_total: p.scores_total.clone(),
            quorum,
            turnout: turnout(&p, tally),
            timeline: ProposalTimeline {
                created_at: Timestamp::from_ms(p.created_ms),
                start_at: p.start_ms.map(Timestamp::from_ms),
                end_at: p.end_ms.map(Timestamp::from_ms),
                events: events.iter().map(timeline_event).collect(),
            },
            largest_votes: votes.largest.iter().map(|v| vote_evidence(v, &tally.total_power, &known)).collect(),
            voting_power_at: PowerTimepoint::of(&p),
            linked_topics: topics.iter().map(topic_ref).collect(),
            citations,
        };
        super::answer(&state, req, data)
    }
}
