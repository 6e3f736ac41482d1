//! A proposal, Snapshot (off-chain) or on-chain. Numbers are exact decimal text.
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::{ProposalSource, ProposalState};
use crate::store::stored::{Choices, Scores};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposals")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "proposal_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "proposal_natural")]
    pub source: ProposalSource,
    #[sea_orm(unique_key = "proposal_natural")]
    pub external_id: String,
    /// Opaque v2 key, derived from (dao_id, source, external_id).
    #[sea_orm(unique)]
    pub proposal_key: String,
    pub title: String,
    pub body: Option<String>,
    /// Lowercase 0x address.
    pub author: String,
    /// Snapshot voting type (basic, single-choice, weighted, approval, ranked-choice) or `governor`.
    pub voting_type: Option<String>,
    pub state: ProposalState,
    /// JSON array of choice labels, when known.
    pub choices: Option<Choices>,
    /// JSON array of exact decimal strings, one per choice, when known.
    pub scores: Option<Scores>,
    pub scores_total: Option<String>,
    /// Snapshot `scores_state` (`final`, `pending`, ...), when known.
    pub scores_state: Option<String>,
    pub quorum: Option<String>,
    /// Share of the leading choice in percent, as the upstream reported it.
    pub top_choice_pct: Option<String>,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub created_ms: i64,
    /// Upstream total number of votes (Snapshot `votes`).
    pub upstream_vote_count: Option<i64>,
    /// Votes held in this store for the proposal.
    pub ingested_vote_count: i64,
    pub url: Option<String>,
    pub discussion_url: Option<String>,
    pub ipfs: Option<String>,
    pub snapshot_block: Option<String>,
    pub tx_hash: Option<String>,
    pub block_number: Option<i64>,
    /// An on-chain governor's `COUNTING_MODE()` and `CLOCK_MODE()`, verbatim (migration 17;
    /// `contract::counting` reads them).
    pub counting_mode: Option<String>,
    pub clock_mode: Option<String>,
    /// Snapshot's `privacy` (migration 18): `shutter` for shielded voting.
    pub privacy: Option<String>,
    /// Where the record came from (`snapshot-sample-csv`, `snapshot-hub`, `governor-logs`).
    pub origin: String,
    pub updated_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// `origin` of proposals and votes imported from the bundled sample CSV files.
pub const SAMPLE_ORIGIN: &str = "snapshot-sample-csv";

/// Lookup ranks proposals by title confidence, then newest, then identity.
impl crate::rules::lookup::Rankable for Model {
    fn id(&self) -> i64 {
        self.id
    }

    fn created_ms(&self) -> i64 {
        self.created_ms
    }

    fn identity(&self) -> (&str, &str, &str) {
        (&self.dao_id, self.source.as_str(), &self.external_id)
    }
}
