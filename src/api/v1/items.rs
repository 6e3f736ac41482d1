//! `GET /v1/items/{kind}/{externalId}`: one normalized item, a proposal or a forum topic.
use poem::web::Data;
use poem_openapi::{
    Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{V1Tag, evidence::proposal_citations};
use crate::api::{
    AppState,
    model::{Citation, ItemKind, ItemRef},
};
use crate::contract::{
    envelope::{V1Envelope, V1Request},
    errors::{ApiError, Candidate, ErrorCode, FieldError, ParamLocation, Problem},
    limits::lookup::{EXCERPT_CHARS, ITEM_CANDIDATES},
    operations::ItemsGetV1 as Op,
    time::rfc3339_ms,
};
use crate::store::{
    self,
    entities::{forum_post, forum_topic, proposal},
    evidence::SAMPLE_PROPOSAL_ORIGIN,
};

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
    pub created_at: String,
    pub start_at: Option<String>,
    pub end_at: Option<String>,
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

/// A Discourse forum topic.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ForumTopicItem {
    pub dao_id: String,
    /// Always `discourse`.
    pub source: String,
    /// The Discourse topic id.
    pub external_id: String,
    /// The opaque v2 key.
    pub topic_key: String,
    pub title: String,
    pub slug: String,
    pub url: String,
    /// Username of the author, when known.
    pub author: Option<String>,
    pub category_id: Option<String>,
    pub tags: Vec<String>,
    pub posts_count: String,
    pub reply_count: String,
    pub views: String,
    pub like_count: String,
    pub created_at: String,
    pub last_posted_at: Option<String>,
    pub closed: bool,
    pub archived: bool,
    /// The proposal the topic discusses, when linked.
    pub linked_proposal: Option<ItemRef>,
    /// The beginning of the opening post (at most {{EXCERPT_CHARS}} characters; `…` marks a cut).
    pub excerpt: Option<String>,
    /// Where each field comes from; `supports` names fields of this object.
    pub citations: Vec<Citation>,
}

impl poem_openapi::types::Example for ForumTopicItem {
    fn example() -> Self {
        let url = "https://gov.uniswap.org/t/temperature-check-protocol-fee-expansion/25000".to_owned();
        Self {
            dao_id: "uniswap".to_owned(),
            source: "discourse".to_owned(),
            external_id: "25000".to_owned(),
            topic_key: "t_Qm9yZ2VkRXhhbXBsZUtleQ".to_owned(),
            title: "Temperature Check: Protocol Fee Expansion".to_owned(),
            slug: "temperature-check-protocol-fee-expansion".to_owned(),
            url: url.clone(),
            author: Some("gfxlabs".to_owned()),
            category_id: Some("5".to_owned()),
            tags: vec!["fee-switch".to_owned()],
            posts_count: "42".to_owned(),
            reply_count: "40".to_owned(),
            views: "3100".to_owned(),
            like_count: "120".to_owned(),
            created_at: "2026-02-10T15:04:05.000Z".to_owned(),
            last_posted_at: Some("2026-02-18T09:00:00.000Z".to_owned()),
            closed: false,
            archived: false,
            linked_proposal: None,
            excerpt: Some("This proposal extends the protocol fee to eight more chains…".to_owned()),
            citations: vec![Citation {
                supports: vec!["title".to_owned(), "postsCount".to_owned()],
                source: "discourse".to_owned(),
                url: Some(url),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
                dataset: None,
            }],
        }
    }
}

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
            source: "snapshot".to_owned(),
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
            created_at: "2026-03-03T00:00:00.000Z".to_owned(),
            start_at: Some("2026-03-03T00:00:00.000Z".to_owned()),
            end_at: Some("2026-03-08T00:00:00.000Z".to_owned()),
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
                    supports: supports.clone(),
                    source: "snapshot".to_owned(),
                    url: Some(url),
                    snapshot_id: Some(id.to_owned()),
                    ipfs: None,
                    tx_hash: None,
                    block_number: None,
                    dataset: None,
                },
                Citation {
                    supports,
                    source: "snapshot".to_owned(),
                    url: None,
                    snapshot_id: Some(id.to_owned()),
                    ipfs: None,
                    tx_hash: None,
                    block_number: None,
                    dataset: Some("data/sample/snapshot_proposals.csv".to_owned()),
                },
            ],
        };
        Self { kind: ItemKind::Proposal, proposal: Some(proposal), forum_topic: None }
    }
}

/// Reads a JSON array column of labels or decimals as strings.
pub fn json_strings(text: Option<&str>) -> Option<Vec<String>> {
    let values: Vec<serde_json::Value> = serde_json::from_str(text?).ok()?;
    Some(
        values
            .into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .collect(),
    )
}

impl ProposalItem {
    pub fn from_model(p: &proposal::Model) -> Self {
        let choices = json_strings(p.choices.as_deref());
        let scores = json_strings(p.scores.as_deref());
        let mut item = Self {
            dao_id: p.dao_id.clone(),
            source: p.source.clone(),
            external_id: p.external_id.clone(),
            proposal_key: p.proposal_key.clone(),
            title: p.title.clone(),
            body: p.body.clone(),
            author: p.author.clone(),
            voting_type: p.voting_type.clone(),
            state: p.state.clone(),
            choices,
            scores,
            scores_total: p.scores_total.clone(),
            scores_state: p.scores_state.clone(),
            quorum: p.quorum.clone(),
            top_choice_pct: p.top_choice_pct.clone(),
            created_at: rfc3339_ms(p.created_ms),
            start_at: p.start_ms.map(rfc3339_ms),
            end_at: p.end_ms.map(rfc3339_ms),
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

/// The first `EXCERPT_CHARS` characters of `text`, `…` appended when cut.
fn excerpt(text: &str) -> String {
    let mut chars = text.trim().char_indices();
    match chars.nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", text.trim()[..cut].trim_end()),
        None => text.trim().to_owned(),
    }
}

impl ForumTopicItem {
    pub fn build(
        t: &forum_topic::Model,
        first_post: Option<&forum_post::Model>,
        linked: Option<&proposal::Model>,
    ) -> Self {
        let excerpt = first_post.map(|p| excerpt(&p.body)).or_else(|| t.excerpt.as_deref().map(excerpt));
        let fields = [
            ("title", true),
            ("slug", true),
            ("url", true),
            ("author", t.author.is_some()),
            ("categoryId", t.category_id.is_some()),
            ("tags", true),
            ("postsCount", true),
            ("replyCount", true),
            ("views", true),
            ("likeCount", true),
            ("createdAt", true),
            ("lastPostedAt", t.last_posted_ms.is_some()),
            ("closed", true),
            ("archived", true),
            ("excerpt", excerpt.is_some()),
            ("linkedProposal", linked.is_some()),
        ];
        let supports = fields.iter().filter(|(_, on)| *on).map(|(f, _)| (*f).to_owned()).collect();
        Self {
            dao_id: t.dao_id.clone(),
            source: "discourse".to_owned(),
            external_id: t.external_id.clone(),
            topic_key: t.topic_key.clone(),
            title: t.title.clone(),
            slug: t.slug.clone(),
            url: t.url.clone(),
            author: t.author.clone(),
            category_id: t.category_id.map(|c| c.to_string()),
            tags: json_strings(t.tags.as_deref()).unwrap_or_default(),
            posts_count: t.posts_count.to_string(),
            reply_count: t.reply_count.to_string(),
            views: t.views.to_string(),
            like_count: t.like_count.to_string(),
            created_at: rfc3339_ms(t.created_ms),
            last_posted_at: t.last_posted_ms.map(rfc3339_ms),
            closed: t.closed,
            archived: t.archived,
            linked_proposal: linked.map(proposal_ref),
            excerpt,
            citations: vec![Citation {
                supports,
                source: "discourse".to_owned(),
                url: Some(t.url.clone()),
                snapshot_id: None,
                ipfs: None,
                tx_hash: None,
                block_number: None,
                dataset: None,
            }],
        }
    }
}

/// A reference to a proposal.
pub fn proposal_ref(p: &proposal::Model) -> ItemRef {
    ItemRef {
        kind: ItemKind::Proposal,
        dao_id: p.dao_id.clone(),
        source: p.source.clone(),
        external_id: p.external_id.clone(),
        key: Some(p.proposal_key.clone()),
        title: Some(p.title.clone()),
        url: p.url.clone(),
    }
}

/// A reference to a forum topic.
pub fn topic_ref(t: &forum_topic::Model) -> ItemRef {
    ItemRef {
        kind: ItemKind::ForumTopic,
        dao_id: t.dao_id.clone(),
        source: "discourse".to_owned(),
        external_id: t.external_id.clone(),
        key: Some(t.topic_key.clone()),
        title: Some(t.title.clone()),
        url: Some(t.url.clone()),
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
        kind: Path<String>,
        /// The upstream id: a Snapshot proposal id, an on-chain proposal id (decimal), or a Discourse topic id.
        #[oai(name = "externalId")]
        external_id: Path<String>,
        /// The DAO of the item, to choose between items of several DAOs with the same id.
        #[oai(name = "daoId")]
        dao_id: Query<Option<String>>,
    ) -> Result<Json<V1Envelope<Item>>, ApiError<Op>> {
        let mut req = req;
        let kind = match kind.0.as_str() {
            "proposal" => ItemKind::Proposal,
            "forum_topic" => ItemKind::ForumTopic,
            other => {
                return Err(Problem::validation(FieldError {
                    location: ParamLocation::Path,
                    name: "kind".to_owned(),
                    reason: "unknown item kind".to_owned(),
                    expected: Some("proposal | forum_topic".to_owned()),
                    received: Some(other.to_owned()),
                })
                .into());
            }
        };
        let dao = dao_id.0.filter(|d| !d.is_empty());
        if let Some(d) = &dao {
            req.applied("daoId", d);
        }
        let db = &state.db;
        let id = external_id.0;
        let scope = dao.as_deref().map(|d| format!(" in DAO `{d}`")).unwrap_or_default();
        let data = match kind {
            ItemKind::Proposal => {
                let mut rows =
                    store::items::proposals_by_external_id(db, &id, None, dao.as_deref(), ITEM_CANDIDATES).await?;
                if rows.len() > 1 {
                    let candidates = rows
                        .iter()
                        .map(|p| Candidate {
                            dao_id: p.dao_id.clone(),
                            kind: "proposal".to_owned(),
                            source: p.source.clone(),
                            external_id: p.external_id.clone(),
                            title: p.title.clone(),
                        })
                        .collect();
                    return Err(ambiguous("proposal", &id, candidates).into());
                }
                let p =
                    rows.pop().ok_or_else(|| Problem::not_found(format!("No proposal{scope} has the id `{id}`.")))?;
                Item { kind, proposal: Some(ProposalItem::from_model(&p)), forum_topic: None }
            }
            ItemKind::ForumTopic => {
                let mut rows = store::items::topics_by_external_id(db, &id, dao.as_deref(), ITEM_CANDIDATES).await?;
                if rows.len() > 1 {
                    let candidates = rows
                        .iter()
                        .map(|t| Candidate {
                            dao_id: t.dao_id.clone(),
                            kind: "forum_topic".to_owned(),
                            source: "discourse".to_owned(),
                            external_id: t.external_id.clone(),
                            title: t.title.clone(),
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
        Ok(Json(req.respond(super::fresh(&state), data)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn excerpts_cut_on_characters() {
        let long = "é".repeat(600);
        let e = super::excerpt(&long);
        assert_eq!(e.chars().count(), 501);
        assert!(e.ends_with('…'));
        assert_eq!(super::excerpt("  short  "), "short");
    }
}
