//! Proposals as v1 serves them: the full item and the summary lookup and evidence return.
use poem_openapi::Object;

use crate::api::views::citation::{Citation, proposal_citations};
use crate::contract::counting::Clock;
use crate::contract::time::Timestamp;
pub use crate::contract::urls::ProposalUrl;
pub use crate::contract::urls::parse_url;
pub use crate::contract::urls::split_host;
use crate::contract::vocabulary::SourceKind;
use crate::store::{entities::proposal, evidence::SAMPLE_PROPOSAL_ORIGIN};

/// Snapshot's `scores_state` once the scores can no longer change.
pub const SCORES_FINAL: &str = "final";

/// Where every vote's voting power of a proposal was read: its snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct PowerTimepoint {
    /// The proposal's snapshot: a block number, or a time in seconds when `clock` is `timestamp`.
    /// On a governor, each vote's weight is the voter's `getPastVotes(voter, timepoint)`.
    pub timepoint: String,
    pub clock: Clock,
}

impl PowerTimepoint {
    /// The timepoint of `p`, when its upstream gave a snapshot.
    pub fn of(p: &proposal::Model) -> Option<Self> {
        let timepoint = p.snapshot_block.clone()?;
        Some(Self { timepoint, clock: crate::contract::counting::clock(p.clock_mode.as_deref()) })
    }
}

/// A proposal with everything stored about it.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalItem {
    pub dao_id: String,
    /// `snapshot` or `onchain`.
    pub source: String,
    pub external_id: String,
    /// The opaque v2 key.
    pub proposal_key: String,
    pub title: String,
    /// The full text, when known (the bundled sample carries none).
    pub body: Option<String>,
    /// Lowercase 0x address of the author.
    pub author: String,
    /// Snapshot voting type or `governor`.
    pub voting_type: Option<String>,
    /// pending | active | closed | queued | executed | canceled | defeated | succeeded | expired
    pub state: String,
    /// Choice labels in upstream order (choice 1 first), when known.
    pub choices: Option<Vec<String>>,
    /// Upstream per-choice scores as exact decimal strings, when known.
    pub scores: Option<Vec<String>>,
    /// Upstream `scores_total`, as the exact text received (Snapshot serves a float).
    pub scores_total: Option<String>,
    /// Snapshot `scores_state` (`final`, `pending`): whether the scores are final.
    pub scores_state: Option<String>,
    /// Upstream quorum, as the exact text received.
    pub quorum: Option<String>,
    /// Share of the leading choice in percent, as the upstream reported it.
    pub top_choice_pct: Option<String>,
    pub created_at: Timestamp,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    /// Votes cast according to the upstream. May exceed `ingestedVotes`.
    pub upstream_votes: Option<String>,
    /// Votes held in this store for the proposal.
    pub ingested_votes: String,
    pub url: Option<String>,
    /// The discussion link the proposal gives.
    pub discussion_url: Option<String>,
    pub ipfs: Option<String>,
    /// The block the voting power was taken at.
    pub snapshot_block: Option<String>,
    /// On-chain proposals: the creating transaction and its block.
    pub tx_hash: Option<String>,
    pub block_number: Option<String>,
    /// Where the record came from (`snapshot-sample-csv`: the bundled dataset; `snapshot-hub`; `governor-logs`).
    pub origin: String,
    /// Where each field comes from; `supports` names fields of this object.
    pub citations: Vec<Citation>,
}

impl ProposalItem {
    pub fn from_model(p: &proposal::Model) -> Self {
        let choices = p.choices.clone().map(|c| c.0);
        let scores = p.scores.clone().map(|s| s.0);
        let mut item = Self {
            dao_id: p.dao_id.clone(),
            source: p.source.as_str().to_owned(),
            external_id: p.external_id.clone(),
            proposal_key: p.proposal_key.clone(),
            title: p.title.clone(),
            body: p.body.clone(),
            author: p.author.clone(),
            voting_type: p.voting_type.clone(),
            state: p.state.as_str().to_owned(),
            choices,
            scores,
            scores_total: p.scores_total.clone(),
            scores_state: p.scores_state.clone(),
            quorum: p.quorum.clone(),
            top_choice_pct: p.top_choice_pct.clone(),
            created_at: Timestamp::from_ms(p.created_ms),
            start_at: p.start_ms.map(Timestamp::from_ms),
            end_at: p.end_ms.map(Timestamp::from_ms),
            upstream_votes: p.upstream_vote_count.map(|c| c.to_string()),
            ingested_votes: p.ingested_vote_count.to_string(),
            url: p.url.clone(),
            discussion_url: p.discussion_url.clone(),
            ipfs: p.ipfs.clone(),
            snapshot_block: p.snapshot_block.clone(),
            tx_hash: p.tx_hash.clone(),
            block_number: p.block_number.map(|b| b.to_string()),
            origin: p.origin.clone(),
            citations: Vec::new(),
        };
        let mut fields: Vec<String> = item.present_fields().into_iter().map(str::to_owned).collect();
        if p.origin != SAMPLE_PROPOSAL_ORIGIN {
            // The sample has no creation time: its `createdAt` is the start, derived here.
            fields.push("createdAt".to_owned());
        }
        item.citations = proposal_citations(p, fields);
        item
    }

    /// The upstream facts present in this item, by field name.
    fn present_fields(&self) -> Vec<&'static str> {
        let optional = [
            ("body", self.body.is_some()),
            ("votingType", self.voting_type.is_some()),
            ("choices", self.choices.is_some()),
            ("scores", self.scores.is_some()),
            ("scoresTotal", self.scores_total.is_some()),
            ("scoresState", self.scores_state.is_some()),
            ("quorum", self.quorum.is_some()),
            ("topChoicePct", self.top_choice_pct.is_some()),
            ("startAt", self.start_at.is_some()),
            ("endAt", self.end_at.is_some()),
            ("upstreamVotes", self.upstream_votes.is_some()),
            ("snapshotBlock", self.snapshot_block.is_some()),
        ];
        let mut fields = vec!["title", "author", "state"];
        fields.extend(optional.iter().filter(|(_, present)| *present).map(|(name, _)| *name));
        fields
    }
}

// v1's summary; v2's is [`ProposalSummary`] below. Each document calls its own
// `ProposalSummary`, so the schema keeps that name.
/// A proposal, without its text: enough to recognise it and fetch more.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename = "ProposalSummary", rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct V1ProposalSummary {
    pub dao_id: String,
    /// `snapshot` or `onchain`.
    pub source: String,
    /// The upstream id (Snapshot proposal id, on-chain proposal id as a decimal string).
    pub external_id: String,
    /// The opaque v2 key.
    pub proposal_key: String,
    pub title: String,
    /// pending | active | closed | queued | executed | canceled | defeated | succeeded | expired
    pub state: String,
    /// Snapshot voting type (`single-choice`, `basic`, `approval`, `weighted`, `quadratic`,
    /// `ranked-choice`, `copeland`) or `governor`.
    pub voting_type: Option<String>,
    /// Lowercase 0x address of the author.
    pub author: String,
    pub created_at: Timestamp,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    /// Where a person or agent can open the proposal upstream.
    pub url: Option<String>,
    /// Votes cast according to the upstream (Snapshot `votes`). May exceed `ingestedVotes`.
    pub upstream_votes: Option<String>,
    /// Votes held in this store for the proposal.
    pub ingested_votes: String,
}

impl V1ProposalSummary {
    pub fn from_model(p: &proposal::Model) -> Self {
        Self {
            dao_id: p.dao_id.clone(),
            source: p.source.as_str().to_owned(),
            external_id: p.external_id.clone(),
            proposal_key: p.proposal_key.clone(),
            title: p.title.clone(),
            state: p.state.as_str().to_owned(),
            voting_type: p.voting_type.clone(),
            author: p.author.clone(),
            created_at: Timestamp::from_ms(p.created_ms),
            start_at: p.start_ms.map(Timestamp::from_ms),
            end_at: p.end_ms.map(Timestamp::from_ms),
            url: p.url.clone(),
            upstream_votes: p.upstream_vote_count.map(|c| c.to_string()),
            ingested_votes: p.ingested_vote_count.to_string(),
        }
    }
}

impl poem_openapi::types::Example for V1ProposalSummary {
    fn example() -> Self {
        Self {
            dao_id: "uniswap".to_owned(),
            source: SourceKind::Snapshot.as_str().to_owned(),
            external_id: "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde".to_owned(),
            proposal_key: "p_8Gx1cQmV3sYtR2kZ0aW9nB".to_owned(),
            title: "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks"
                .to_owned(),
            state: "closed".to_owned(),
            voting_type: Some("single-choice".to_owned()),
            author: "0x3fb19771947072629c8eee7995a2ef23b72d4c8a".to_owned(),
            created_at: Timestamp::known("2026-03-03T00:00:00.000Z"),
            start_at: Some(Timestamp::known("2026-03-03T00:00:00.000Z")),
            end_at: Some(Timestamp::known("2026-03-08T00:00:00.000Z")),
            url: Some("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde".to_owned()),
            upstream_votes: Some("133".to_owned()),
            ingested_votes: "0".to_owned(),
        }
    }
}

/// Vote counts of a proposal, kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct VoteCounts {
    /// Votes cast according to the upstream (Snapshot `votes`), when known.
    pub upstream: Option<String>,
    /// Votes held in this store and served by `/votes`.
    pub ingested: String,
}

/// A proposal, without its body and votes.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ProposalSummary {
    /// Opaque, stable key: use it to address the proposal in v2.
    pub proposal_key: String,
    pub dao_id: String,
    /// `snapshot` or `onchain`.
    pub source: String,
    /// The upstream id.
    pub external_id: String,
    pub title: String,
    /// Lowercase 0x address of the author.
    pub author: String,
    pub state: String,
    /// Snapshot voting type (`single-choice`, `basic`, `approval`, `weighted`, `quadratic`,
    /// `ranked-choice`, `copeland`).
    pub voting_type: Option<String>,
    pub created_at: Timestamp,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    pub votes: VoteCounts,
    /// Total voting power cast, exact, as the upstream reported it.
    pub scores_total: Option<String>,
    /// Whether the upstream's scores are final (`final`, `pending`), when known.
    pub scores_state: Option<String>,
    pub quorum: Option<String>,
    pub url: Option<String>,
}

impl poem_openapi::types::Example for ProposalSummary {
    fn example() -> Self {
        Self {
            proposal_key: "p_3q2-7wAAAAAAAAAAAAAAAA".to_owned(),
            dao_id: "uniswap".to_owned(),
            source: SourceKind::Snapshot.as_str().to_owned(),
            external_id: "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf".to_owned(),
            title: "Strategic Renewal of Gnosis, Linea, and Mantle Deployments".to_owned(),
            author: "0xa6e8772af29b29b9202a073f8e36f447689beef6".to_owned(),
            state: "closed".to_owned(),
            voting_type: Some("basic".to_owned()),
            created_at: Timestamp::known("2025-12-02T00:00:00.000Z"),
            start_at: Some(Timestamp::known("2025-12-02T00:00:00.000Z")),
            end_at: Some(Timestamp::known("2025-12-07T00:00:00.000Z")),
            votes: VoteCounts { upstream: Some("449".to_owned()), ingested: "100".to_owned() },
            scores_total: Some("13713881.867694754".to_owned()),
            scores_state: None,
            quorum: Some("10000000".to_owned()),
            url: Some("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/0x1086…".to_owned()),
        }
    }
}

impl ProposalSummary {
    pub fn from_model(p: &proposal::Model) -> Self {
        Self {
            proposal_key: p.proposal_key.clone(),
            dao_id: p.dao_id.clone(),
            source: p.source.as_str().to_owned(),
            external_id: p.external_id.clone(),
            title: p.title.clone(),
            author: p.author.clone(),
            state: p.state.as_str().to_owned(),
            voting_type: p.voting_type.clone(),
            created_at: Timestamp::from_ms(p.created_ms),
            start_at: p.start_ms.map(Timestamp::from_ms),
            end_at: p.end_ms.map(Timestamp::from_ms),
            votes: VoteCounts {
                upstream: p.upstream_vote_count.map(|n| n.to_string()),
                ingested: p.ingested_vote_count.to_string(),
            },
            scores_total: p.scores_total.clone(),
            scores_state: p.scores_state.clone(),
            quorum: p.quorum.clone(),
            url: p.url.clone(),
        }
    }
}
