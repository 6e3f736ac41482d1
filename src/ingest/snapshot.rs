//! Snapshot hub GraphQL: a space's proposals and their votes.
//!
//! The hub pages with `first` (≤ 1000) and `skip` (≤ 5000), so deep lists page on `created`
//! instead: each request asks for `created_gte` the last timestamp seen and skips only the items
//! already read at that timestamp. Proposals created since the last run are fetched, plus every
//! stored proposal that can still change (open, or scores not final); votes are fetched for each
//! of those. Floats (`vp`, `scores`, `scores_total`, `quorum`) are kept as the text received:
//! they are read as raw JSON, never as f64. A proposal's oSnap transactions (what its Safe
//! would execute) are staged as its actions (`osnap`).
use std::collections::HashSet;

use anyhow::{Context, bail};
use futures_util::{StreamExt, stream};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{json, value::RawValue};
use tokio::sync::mpsc;

use super::registry::SnapshotSource;
use super::staged_actions::{self, Decoding};
use super::{Connector, Resume, Sink, Upstream, UpstreamError, osnap};
use crate::contract::vocabulary::{ProposalSource, ProposalState};
use crate::rules::actions::Known;
use crate::store::apply::Watermark;
use crate::store::entities::proposal_action::ExecutionPath;
use crate::store::staging::{ProposalRecord, ProposalRef, Record, VoteRecord};
use crate::store::{address, publish::now_ms};

/// Items per request: the hub's maximum `first`.
pub const PAGE: usize = 1000;
/// The hub refuses a larger `skip`.
pub const SKIP_CAP: usize = 5000;
/// Open proposals asked for by id per request.
const BY_ID: usize = 100;
/// Proposals whose votes are fetched at once.
const VOTE_CONCURRENCY: usize = 4;

pub const ORIGIN: &str = "snapshot-hub";

const PROPOSAL_FIELDS: &str = "id ipfs author created type title body discussion choices start end snapshot state \
                               scores scores_state scores_total quorum votes privacy plugins";

pub struct SnapshotConnector {
    pub upstream: Upstream,
    pub dao_id: String,
    pub source: SnapshotSource,
}

#[derive(Debug, Deserialize)]
struct Proposal {
    id: String,
    ipfs: Option<String>,
    author: String,
    created: i64,
    #[serde(rename = "type")]
    voting_type: Option<String>,
    title: String,
    body: Option<String>,
    discussion: Option<String>,
    #[serde(default)]
    choices: Vec<String>,
    start: i64,
    end: i64,
    /// An Int since late 2024, a String before.
    snapshot: Option<Box<RawValue>>,
    state: String,
    scores: Option<Vec<Box<RawValue>>>,
    scores_state: Option<String>,
    scores_total: Option<Box<RawValue>>,
    quorum: Option<Box<RawValue>>,
    votes: Option<i64>,
    /// `shutter` for shielded voting; empty (or absent) otherwise.
    #[serde(default)]
    privacy: Option<String>,
    /// The space's plugins' data for the proposal (JSON); oSnap's holds the transactions a Safe
    /// would execute (`osnap`).
    #[serde(default)]
    plugins: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Vote {
    id: String,
    voter: String,
    created: i64,
    /// An integer, an array, or a weights object.
    choice: Box<RawValue>,
    reason: Option<String>,
    vp: Box<RawValue>,
    ipfs: Option<String>,
}

trait Created {
    fn id(&self) -> &str;
    fn created(&self) -> i64;
}

impl Created for Proposal {
    fn id(&self) -> &str {
        &self.id
    }
    fn created(&self) -> i64 {
        self.created
    }
}

impl Created for Vote {
    fn id(&self) -> &str {
        &self.id
    }
    fn created(&self) -> i64 {
        self.created
    }
}

/// Pages a list on `created` past the hub's `skip` cap: after the first page each request
/// starts at the last `created` seen and skips only the items already read at that second, so
/// `skip` stays small however deep the list goes. Items seen twice at a boundary second are
/// dropped, whatever the hub's order among equal timestamps.
struct Pager {
    created_gte: i64,
    skip: usize,
    /// Ids read at `created_gte`.
    at_boundary: HashSet<String>,
    done: bool,
}

impl Pager {
    fn new(since: i64) -> Self {
        Self { created_gte: since, skip: 0, at_boundary: HashSet::new(), done: false }
    }

    /// `(created_gte, skip)` of the next request, or `None` once the list is read.
    fn next_request(&self) -> Option<(i64, usize)> {
        (!self.done).then_some((self.created_gte, self.skip))
    }

    /// Takes the answer to the last request and returns the items not read before.
    fn take<T: Created>(&mut self, batch: Vec<T>) -> anyhow::Result<Vec<T>> {
        let count = batch.len();
        let last = batch.last().map(|i| i.created());
        let mut fresh = Vec::with_capacity(count);
        for item in batch {
            if item.created() < self.created_gte {
                bail!("the hub answered an item created before `created_gte` {}: paging is unsafe", self.created_gte);
            }
            if item.created() == self.created_gte && !self.at_boundary.insert(item.id().to_owned()) {
                continue;
            }
            fresh.push(item);
        }
        match last {
            _ if count < PAGE => self.done = true,
            Some(last) if last == self.created_gte => {
                // A whole page at one second: go deeper at the same second.
                self.skip += count;
                if self.skip > SKIP_CAP {
                    bail!(
                        "more than {} items were created in the same second ({last}); the hub cannot page past them",
                        SKIP_CAP + PAGE
                    );
                }
            }
            Some(last) => {
                self.at_boundary =
                    fresh.iter().rev().take_while(|i| i.created() == last).map(|i| i.id().to_owned()).collect();
                self.created_gte = last;
                self.skip = self.at_boundary.len();
            }
            None => self.done = true,
        }
        Ok(fresh)
    }
}

#[derive(Deserialize)]
struct GraphqlResponse<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
struct GraphqlError {
    message: String,
}

#[derive(Deserialize)]
struct Proposals {
    proposals: Option<Vec<Proposal>>,
}

#[derive(Deserialize)]
struct Votes {
    votes: Option<Vec<Vote>>,
}

impl Connector for SnapshotConnector {
    async fn fetch(&self, resume: &Resume, sink: &mut Sink<'_>) -> anyhow::Result<Watermark> {
        // Everything created before this instant is read by the end of the run.
        let complete_to = now_ms();
        let since: i64 = resume.position.as_deref().and_then(|p| p.parse().ok()).unwrap_or(0);
        let mut newest = since;
        let mut to_vote: Vec<String> = Vec::new();
        let mut seen = HashSet::new();

        let mut pager = Pager::new(since);
        while let Some((created_gte, skip)) = pager.next_request() {
            let query = format!(
                "query($space: String!, $first: Int!, $skip: Int!, $created_gte: Int!) {{ \
                 proposals(first: $first, skip: $skip, where: {{space: $space, created_gte: $created_gte}}, \
                 orderBy: \"created\", orderDirection: asc) {{ {PROPOSAL_FIELDS} }} }}"
            );
            let variables =
                json!({"space": self.source.space, "first": PAGE, "skip": skip, "created_gte": created_gte});
            let batch = self.query::<Proposals>(&query, variables).await?.proposals.unwrap_or_default();
            for p in pager.take(batch)? {
                newest = newest.max(p.created);
                seen.insert(p.id.clone());
                if let Some(id) = self.stage_proposal(p, sink).await? {
                    to_vote.push(id);
                }
            }
        }
        // Stored proposals that can still change, refreshed by id.
        let open: Vec<&String> = resume.open_proposals.iter().filter(|id| !seen.contains(*id)).collect();
        for chunk in open.chunks(BY_ID) {
            let query = format!(
                "query($ids: [String]!, $first: Int!) {{ proposals(first: $first, where: {{id_in: $ids}}) {{ {PROPOSAL_FIELDS} }} }}"
            );
            let variables = json!({"ids": chunk, "first": chunk.len()});
            for p in self.query::<Proposals>(&query, variables).await?.proposals.unwrap_or_default() {
                if let Some(id) = self.stage_proposal(p, sink).await? {
                    to_vote.push(id);
                }
            }
        }
        // Votes of a few proposals at a time, staged page by page as they arrive: at most a few
        // pages are in memory, however many votes a proposal has.
        let (pages_tx, mut pages) = mpsc::channel::<(String, Vec<Vote>)>(VOTE_CONCURRENCY);
        let fetches: Vec<_> = to_vote.iter().map(|id| self.send_votes(id, pages_tx.clone())).collect();
        drop(pages_tx);
        let fetch = async {
            let mut fetches = stream::iter(fetches).buffer_unordered(VOTE_CONCURRENCY);
            while let Some(done) = fetches.next().await {
                done?;
            }
            anyhow::Ok(())
        };
        let stage = async {
            while let Some((proposal, votes)) = pages.recv().await {
                for v in votes {
                    let id = v.id.clone();
                    match self.vote(&proposal, v) {
                        Ok(record) => sink.push(Record::Vote(record)).await?,
                        Err(e) => sink.skip(format!("snapshot vote {id} on {proposal}: {e:#}")),
                    }
                }
            }
            anyhow::Ok(())
        };
        let (fetched, staged) = futures_util::join!(fetch, stage);
        staged?;
        fetched?;
        Ok(Watermark { data_as_of_ms: complete_to, position: Some(newest.to_string()) })
    }
}

impl SnapshotConnector {
    async fn query<T: DeserializeOwned>(&self, query: &str, variables: serde_json::Value) -> anyhow::Result<T> {
        let body = json!({"query": query, "variables": variables});
        let response: GraphqlResponse<T> = self.upstream.post_json(&self.source.hub, &body).await?;
        if let Some(e) = response.errors.first() {
            return Err(UpstreamError::Protocol {
                url: self.source.hub.clone(),
                reason: format!("GraphQL error: {}", e.message),
            }
            .into());
        }
        response.data.ok_or_else(|| {
            UpstreamError::Malformed { url: self.source.hub.clone(), reason: "no `data` in the answer".to_owned() }
                .into()
        })
    }

    /// Stages a proposal and returns its id, or reports it to `sink` when it cannot be read.
    async fn stage_proposal(&self, mut p: Proposal, sink: &mut Sink<'_>) -> anyhow::Result<Option<String>> {
        let id = p.id.clone();
        let plugins = p.plugins.take();
        match self.proposal(p) {
            Ok(record) => {
                sink.push(Record::Proposal(Box::new(record))).await?;
                // Its Safe transactions, applied after the proposal they belong to (a proposal
                // that has actions keeps them: a re-read changes nothing).
                match plugins.as_ref().and_then(osnap::read) {
                    Some(Ok(safe)) => sink.push(self.safe_actions(&id, &safe)).await?,
                    Some(Err(e)) => {
                        sink.skip(format!("snapshot proposal {id}: its oSnap transactions are not read: {e}"))
                    }
                    None => {}
                }
                Ok(Some(id))
            }
            Err(e) => {
                sink.skip(format!("snapshot proposal {id}: {e:#}"));
                Ok(None)
            }
        }
    }

    /// A proposal's oSnap transactions, decoded with the bundled interfaces (a Snapshot space
    /// names no contract ABIs) as the Safe would make them.
    fn safe_actions(&self, id: &str, safe: &osnap::SafeTransactions) -> Record {
        let mut known = Known::default();
        known.labels.insert(safe.safe, "the Safe".to_owned());
        let decoding = Decoding { known, executor: safe.safe };
        let proposal = ProposalRef { source: ProposalSource::Snapshot, external_id: id.to_owned() };
        staged_actions::record(&self.dao_id, proposal, ExecutionPath::SafeModule, &safe.actions, &decoding)
    }

    /// Sends every vote of `proposal` to `pages`, a page at a time.
    async fn send_votes(&self, proposal: &str, pages: mpsc::Sender<(String, Vec<Vote>)>) -> anyhow::Result<()> {
        let query = "query($proposal: String!, $first: Int!, $skip: Int!, $created_gte: Int!) { \
                     votes(first: $first, skip: $skip, where: {proposal: $proposal, created_gte: $created_gte}, \
                     orderBy: \"created\", orderDirection: asc) { id voter created choice reason vp ipfs } }";
        let mut pager = Pager::new(0);
        while let Some((created_gte, skip)) = pager.next_request() {
            let variables = json!({"proposal": proposal, "first": PAGE, "skip": skip, "created_gte": created_gte});
            let batch = self
                .query::<Votes>(query, variables)
                .await
                .with_context(|| format!("votes of proposal {proposal}"))?
                .votes
                .unwrap_or_default();
            let fresh = pager.take(batch).with_context(|| format!("votes of proposal {proposal}"))?;
            if pages.send((proposal.to_owned(), fresh)).await.is_err() {
                bail!("staging stopped while the votes of {proposal} were read");
            }
        }
        Ok(())
    }

    fn proposal(&self, p: Proposal) -> anyhow::Result<ProposalRecord> {
        let author = address::normalize(&p.author).with_context(|| format!("proposal {}: author", p.id))?;
        let number = |raw: &Option<Box<RawValue>>| raw.as_ref().map(|r| number_text(r.get())).transpose();
        Ok(ProposalRecord {
            dao_id: self.dao_id.clone(),
            source: ProposalSource::Snapshot,
            url: Some(crate::contract::urls::snapshot_proposal_url(&self.source.space, &p.id)),
            title: p.title,
            body: p.body.filter(|b| !b.is_empty()),
            author,
            voting_type: p.voting_type,
            state: ProposalState::parse(&p.state).with_context(|| format!("proposal {}: state", p.id))?,
            choices: Some(p.choices),
            scores: p.scores.map(|s| s.iter().map(|r| number_text(r.get())).collect()).transpose()?,
            scores_total: number(&p.scores_total)?,
            scores_state: p.scores_state,
            quorum: number(&p.quorum)?,
            start_ms: Some(p.start * 1000),
            end_ms: Some(p.end * 1000),
            created_ms: p.created * 1000,
            upstream_vote_count: p.votes,
            discussion_url: p.discussion.filter(|d| !d.is_empty()),
            ipfs: p.ipfs.filter(|i| !i.is_empty()),
            snapshot_block: p.snapshot.map(|s| s.get().trim_matches('"').to_owned()).filter(|s| s != "null"),
            tx_hash: None,
            block_number: None,
            counting_mode: None,
            clock_mode: None,
            privacy: p.privacy.filter(|v| !v.is_empty()),
            origin: ORIGIN.to_owned(),
            external_id: p.id,
        })
    }

    fn vote(&self, proposal: &str, v: Vote) -> anyhow::Result<VoteRecord> {
        let voter = address::normalize(&v.voter).with_context(|| format!("vote {}: voter", v.id))?;
        Ok(VoteRecord {
            dao_id: self.dao_id.clone(),
            proposal: ProposalRef { source: ProposalSource::Snapshot, external_id: proposal.to_owned() },
            voter,
            choice: v.choice.get().to_owned(),
            voting_power: number_text(v.vp.get()).with_context(|| format!("vote {}: vp", v.id))?,
            vp_from_float: ProposalSource::Snapshot.power_from_float(),
            reason: v.reason.filter(|r| !r.is_empty()),
            created_ms: v.created * 1000,
            ipfs: v.ipfs.filter(|i| !i.is_empty()),
            tx_hash: None,
            block_number: None,
        })
    }
}

/// A JSON number as the exact text received (`1234.5678`, `2.11e-16`); a quoted number is
/// accepted the same way. Anything else is refused rather than guessed.
fn number_text(raw: &str) -> anyhow::Result<String> {
    let text = raw.trim().trim_matches('"');
    crate::contract::decimal::parse(text).with_context(|| format!("`{raw}` is not a number"))?;
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Item(String, i64);

    impl Created for Item {
        fn id(&self) -> &str {
            &self.0
        }
        fn created(&self) -> i64 {
            self.1
        }
    }

    fn page(from: usize, n: usize, created: impl Fn(usize) -> i64) -> Vec<Item> {
        (from..from + n).map(|i| Item(format!("i{i}"), created(i))).collect()
    }

    #[test]
    fn the_pager_resumes_at_the_last_second_and_skips_what_it_read_there() {
        let mut pager = Pager::new(0);
        assert_eq!(pager.next_request(), Some((0, 0)));
        // A full page whose last two items share a second.
        let fresh = pager.take(page(0, PAGE, |i| if i >= PAGE - 2 { 500 } else { i as i64 })).unwrap();
        assert_eq!(fresh.len(), PAGE);
        assert_eq!(pager.next_request(), Some((500, 2)));
        // The hub repeats one of them (another tie order) and adds a new one: the repeat is dropped.
        let fresh = pager.take(vec![Item(format!("i{}", PAGE - 1), 500), Item("new".into(), 501)]).unwrap();
        assert_eq!(fresh.iter().map(|i| i.0.as_str()).collect::<Vec<_>>(), ["new"]);
        assert_eq!(pager.next_request(), None, "a short page ends the list");
    }

    #[test]
    fn full_pages_at_one_second_go_deeper_up_to_the_hubs_skip_cap() {
        let mut pager = Pager::new(7);
        for n in 0..=SKIP_CAP / PAGE {
            assert_eq!(pager.next_request(), Some((7, n * PAGE)));
            let taken = pager.take(page(n * PAGE, PAGE, |_| 7));
            if (n + 1) * PAGE > SKIP_CAP {
                let error = taken.err().expect("past the cap").to_string();
                assert!(error.contains("same second"), "{error}");
                return;
            }
            assert_eq!(taken.unwrap().len(), PAGE);
        }
        panic!("the cap was never reached");
    }

    #[test]
    fn an_item_older_than_asked_for_stops_the_paging() {
        let mut pager = Pager::new(100);
        assert!(pager.take(vec![Item("a".into(), 99)]).is_err());
    }

    #[test]
    fn numbers_keep_the_text_received() {
        assert_eq!(number_text("2.11e-16").unwrap(), "2.11e-16");
        assert_eq!(number_text("\"12345678901234567890.5\"").unwrap(), "12345678901234567890.5");
        assert!(number_text("null").is_err());
        assert!(number_text("\"ten\"").is_err());
    }
}
