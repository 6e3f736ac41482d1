//! `GET /v1/items/{kind}/{externalId}`: one normalized item, a proposal or a forum topic.
use poem::web::Data;
use poem_openapi::{
    Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::V1Tag;
use crate::api::{
    AppState,
    views::{
        citation::{Citation, citation},
        proposal::ProposalItem,
        topic::ForumTopicItem,
    },
};
use crate::contract::params::{DaoFilter, canonical_v1_value};
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ItemKind;
use crate::contract::vocabulary::SourceKind;
use crate::contract::{
    api_error::ApiError,
    envelope::{V1Envelope, V1Request},
    errors::{Candidate, ErrorCode, Problem},
    limits::lookup::ITEM_CANDIDATES,
    operations::ItemsGetV1 as Op,
};
use crate::store::{self, evidence::SAMPLE_PROPOSAL_ORIGIN};

/// One normalized item: exactly one of `proposal` and `forumTopic` is present, as `kind` says.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct Item {
    pub kind: ItemKind,
    pub proposal: Option<ProposalItem>,
    pub forum_topic: Option<ForumTopicItem>,
}

impl poem_openapi::types::Example for Item {
    fn example() -> Self {
        let id = "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde";
        let url = format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}");
        let supports: Vec<String> =
            ["title", "author", "state", "scoresTotal", "quorum", "startAt", "endAt", "upstreamVotes"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
        let proposal = ProposalItem {
            dao_id: "uniswap".to_owned(),
            source: SourceKind::Snapshot.as_str().to_owned(),
            external_id: id.to_owned(),
            proposal_key: "p_ySkDsluXC6HK7X-44EjAaQ".to_owned(),
            title: "[RFC] Governance Process Upgrade: Establishing a Statute of Limitations for Temperature Checks"
                .to_owned(),
            body: None,
            author: "0x3fb19771947072629c8eee7995a2ef23b72d4c8a".to_owned(),
            voting_type: Some("single-choice".to_owned()),
            state: "closed".to_owned(),
            choices: None,
            scores: None,
            scores_total: Some("5753874.4708579285".to_owned()),
            scores_state: None,
            quorum: Some("10000000".to_owned()),
            top_choice_pct: Some("100.0".to_owned()),
            created_at: Timestamp::known("2026-03-03T00:00:00.000Z"),
            start_at: Some(Timestamp::known("2026-03-03T00:00:00.000Z")),
            end_at: Some(Timestamp::known("2026-03-08T00:00:00.000Z")),
            upstream_votes: Some("133".to_owned()),
            ingested_votes: "0".to_owned(),
            url: Some(url.clone()),
            discussion_url: None,
            ipfs: None,
            snapshot_block: None,
            tx_hash: None,
            block_number: None,
            origin: SAMPLE_PROPOSAL_ORIGIN.to_owned(),
            citations: vec![
                Citation {
                    url: Some(url),
                    snapshot_id: Some(id.to_owned()),
                    ..citation(SourceKind::Snapshot.as_str(), supports.clone())
                },
                Citation {
                    snapshot_id: Some(id.to_owned()),
                    dataset: Some("data/sample/snapshot_proposals.csv".to_owned()),
                    ..citation(SourceKind::Snapshot.as_str(), supports)
                },
            ],
        };
        Self { kind: ItemKind::Proposal, proposal: Some(proposal), forum_topic: None }
    }
}

fn ambiguous(kind: &str, external_id: &str, candidates: Vec<Candidate>) -> Problem {
    Problem {
        candidates: Some(candidates),
        ..Problem::new(
            ErrorCode::AmbiguousIdentifier,
            format!("The {kind} id `{external_id}` matches items in several DAOs; pass `daoId` to choose one."),
        )
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Items")]
impl Api {
    /// Get one item (proposal or forum topic)
    ///
    /// One normalized item by kind and upstream id, with every stored field and citations
    /// naming where each field comes from. `kind` is `proposal` (full proposal: text when known,
    /// choices, upstream scores, quorum, state, times, upstream vote count and ingested vote
    /// count kept apart, v2 key, URL) or `forum_topic` (title, URL, author, counts, times, tags,
    /// the linked proposal, an excerpt of the opening post). Upstream ids are unique within a
    /// DAO, not across DAOs: when `externalId` matches items in several DAOs and no `daoId` is
    /// given, the answer is 409 `AMBIGUOUS_IDENTIFIER` with the `candidates`; repeat with one
    /// of their `daoId`. For vote tallies and largest votes of a proposal, call its evidence.
    #[oai(path = "/items/:kind/:externalId", method = "get", operation_id = "items_get")]
    async fn items_get(
        &self,
        state: Data<&AppState>,
        req: V1Request,
        /// `proposal` or `forum_topic`.
        kind: Path<ItemKind>,
        /// The upstream id: a Snapshot proposal id, an on-chain proposal id (decimal), or a Discourse topic id;
        /// a 0x id in upper case is served under its lowercase form and recorded (`normalized`).
        #[oai(name = "externalId")]
        external_id: Path<String>,
        /// The DAO of the item, to choose between items of several DAOs with the same id.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
    ) -> Result<Json<V1Envelope<Item>>, ApiError<Op>> {
        let mut req = req;
        let kind = kind.0;
        let dao = DaoFilter::resolve_v1(dao_id.0, &mut req);
        let db = &state.reads();
        let id = canonical_v1_value("externalId", &external_id.0, &mut req);
        let scope = dao.received().map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
        let data = match kind {
            ItemKind::Proposal => {
                let mut rows = match dao.store_filter() {
                    Some(dao_id) => {
                        store::items::proposals_by_external_id(db, &id, None, dao_id, ITEM_CANDIDATES).await?
                    }
                    None => Vec::new(),
                };
                if rows.len() > 1 {
                    let candidates = rows
                        .iter()
                        .map(|p| Candidate {
                            dao_id: p.dao_id.clone(),
                            kind: "proposal".to_owned(),
                            source: p.source.as_str().to_owned(),
                            external_id: p.external_id.clone(),
                            title: p.title.clone(),
                            confidence: None,
                        })
                        .collect();
                    return Err(ambiguous("proposal", &id, candidates).into());
                }
                let p =
                    rows.pop().ok_or_else(|| Problem::not_found(format!("No proposal{scope} has the id `{id}`.")))?;
                Item { kind, proposal: Some(ProposalItem::from_model(&p)), forum_topic: None }
            }
            ItemKind::ForumTopic => {
                let mut rows = match dao.store_filter() {
                    Some(dao_id) => store::items::topics_by_external_id(db, &id, dao_id, ITEM_CANDIDATES).await?,
                    None => Vec::new(),
                };
                if rows.len() > 1 {
                    let candidates = rows
                        .iter()
                        .map(|t| Candidate {
                            dao_id: t.dao_id.clone(),
                            kind: "forum_topic".to_owned(),
                            source: SourceKind::Discourse.as_str().to_owned(),
                            external_id: t.external_id.clone(),
                            title: t.title.clone(),
                            confidence: None,
                        })
                        .collect();
                    return Err(ambiguous("forum topic", &id, candidates).into());
                }
                let t = rows
                    .pop()
                    .ok_or_else(|| Problem::not_found(format!("No forum topic{scope} has the id `{id}`.")))?;
                let first = store::items::first_post(db, t.id).await?;
                let linked = match t.linked_proposal_id {
                    Some(pid) => store::items::proposals_by_ids(db, &[pid]).await?.pop(),
                    None => None,
                };
                Item {
                    kind,
                    proposal: None,
                    forum_topic: Some(ForumTopicItem::build(&t, first.as_ref(), linked.as_ref())),
                }
            }
        };
        super::answer(&state, req, data)
    }
}
