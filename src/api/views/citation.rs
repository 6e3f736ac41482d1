//! Citations: where a served fact comes from, so it can be quoted and checked.
use poem_openapi::Object;

use crate::contract::dataset;
use crate::contract::vocabulary::{ProposalSource, SourceKind};
use crate::rules::tally::Tally;
use crate::store::{
    entities::{forum_topic, governance_event, proposal, vote},
    evidence::SAMPLE_PROPOSAL_ORIGIN,
};

/// Where a fact comes from, so it can be quoted and checked.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Citation {
    /// The fields of the response this citation supports (`scores`, `votes[0].votingPower`, ...).
    pub supports: Vec<String>,
    /// `snapshot`, `ipfs`, `onchain`, `discourse` or `tally`.
    pub source: String,
    pub url: Option<String>,
    /// Snapshot proposal or vote id.
    pub snapshot_id: Option<String>,
    pub ipfs: Option<String>,
    pub tx_hash: Option<String>,
    /// Block number, as a decimal string.
    pub block_number: Option<String>,
    /// A dataset file and line, for records from a bundled export.
    pub dataset: Option<String>,
}

/// A citation of `source` for the `supports` fields, its locators (URL, ids) still to be set.
pub fn citation(source: &str, supports: Vec<String>) -> Citation {
    Citation {
        supports,
        source: source.to_owned(),
        url: None,
        snapshot_id: None,
        ipfs: None,
        tx_hash: None,
        block_number: None,
        dataset: None,
    }
}

/// Citations of a proposal's upstream fields (`supports`): the Snapshot proposal (URL, id, IPFS)
/// or the on-chain transaction and block; for rows imported from the bundled sample, also the
/// dataset file they were read from.
pub fn proposal_citations(p: &proposal::Model, supports: Vec<String>) -> Vec<Citation> {
    let mut out = Vec::new();
    if p.source == ProposalSource::Onchain {
        out.push(Citation {
            url: p.url.clone(),
            tx_hash: p.tx_hash.clone(),
            block_number: p.block_number.map(|b| b.to_string()),
            ..citation(SourceKind::Onchain.as_str(), supports.clone())
        });
    } else {
        out.push(Citation {
            url: p.url.clone(),
            snapshot_id: Some(p.external_id.clone()),
            ipfs: p.ipfs.clone(),
            ..citation(SourceKind::Snapshot.as_str(), supports.clone())
        });
    }
    if p.origin == SAMPLE_PROPOSAL_ORIGIN {
        out.push(Citation {
            snapshot_id: Some(p.external_id.clone()),
            dataset: Some(dataset::cited_path(dataset::PROPOSALS_FILE)),
            ..citation(SourceKind::Snapshot.as_str(), supports)
        });
    }
    out
}

/// The citation of an event: the upstream record it was derived from.
pub(crate) fn event_citation(
    source: SourceKind,
    url: Option<String>,
    snapshot_id: Option<String>,
    tx_hash: Option<String>,
    block_number: Option<i64>,
    has_actor: bool,
    has_details: bool,
) -> Citation {
    let mut supports = vec!["occurredAt".to_owned()];
    if has_actor {
        supports.push("actor".to_owned());
    }
    if has_details {
        supports.push("details".to_owned());
    }
    Citation {
        supports,
        source: source.as_str().to_owned(),
        url,
        snapshot_id,
        ipfs: None,
        tx_hash,
        block_number: block_number.map(|b| b.to_string()),
        dataset: None,
    }
}

/// What the evidence of one proposal cites: the proposal, the votes it was counted from, and
/// its largest votes, timeline events and linked topics.
pub struct EvidenceFacts<'a> {
    pub proposal: &'a proposal::Model,
    /// Whether the per-choice scores are the upstream's (else computed from the ingested votes).
    pub scores_from_upstream: bool,
    pub quorum_known: bool,
    pub tally: &'a Tally,
    pub largest_votes: &'a [vote::Model],
    pub events: &'a [governance_event::Model],
    pub topics: &'a [forum_topic::Model],
}

/// The citations of a proposal's evidence: one per place a fact can be checked, each listing
/// the response fields it supports.
pub fn evidence_citations(facts: &EvidenceFacts<'_>) -> Vec<Citation> {
    let p = facts.proposal;
    // Upstream facts about the proposal.
    let mut upstream = fields(&["proposal.title", "proposal.author", "proposal.state"]);
    let present = [
        ("proposal.votingType", p.voting_type.is_some()),
        ("proposal.startAt", p.start_ms.is_some()),
        ("proposal.endAt", p.end_ms.is_some()),
        ("proposal.upstreamVotes", p.upstream_vote_count.is_some()),
        ("timeline.startAt", p.start_ms.is_some()),
        ("timeline.endAt", p.end_ms.is_some()),
        ("turnout.upstreamVotes", p.upstream_vote_count.is_some()),
        ("body", p.body.is_some()),
        ("discussionUrl", p.discussion_url.is_some()),
        ("scoresTotal", p.scores_total.is_some()),
        ("quorum", facts.quorum_known),
        ("choices[].label", p.choices.is_some()),
        ("choices[].score", facts.scores_from_upstream),
        ("choices[].share", facts.scores_from_upstream),
    ];
    upstream.extend(present.iter().filter(|(_, on)| *on).map(|(f, _)| (*f).to_owned()));
    if p.origin != SAMPLE_PROPOSAL_ORIGIN {
        // The sample has no creation time: `createdAt` is its start, derived here.
        upstream.extend(fields(&["proposal.createdAt", "timeline.createdAt"]));
    }
    let mut citations = proposal_citations(p, upstream);

    // Facts computed from the ingested votes.
    if p.ingested_vote_count > 0 || facts.tally.votes_counted > 0 {
        let mut from_votes = fields(&[
            "turnout.ingestedVotes",
            "turnout.votesCounted",
            "turnout.votesUnreadable",
            "turnout.ingestedVotingPower",
            "largestVotes[]",
        ]);
        if !facts.scores_from_upstream {
            from_votes.extend(fields(&["choices[].score", "choices[].share"]));
        }
        if p.origin == SAMPLE_PROPOSAL_ORIGIN {
            citations.push(Citation {
                snapshot_id: Some(p.external_id.clone()),
                dataset: Some(dataset::cited_path(dataset::VOTES_FILE)),
                ..citation(SourceKind::Snapshot.as_str(), from_votes)
            });
        } else if p.source == ProposalSource::Onchain {
            citations.push(Citation { url: p.url.clone(), ..citation(SourceKind::Onchain.as_str(), from_votes) });
        } else {
            citations.push(Citation {
                url: p.url.clone(),
                snapshot_id: Some(p.external_id.clone()),
                ..citation(SourceKind::Snapshot.as_str(), from_votes)
            });
        }
    }
    for (i, v) in facts.largest_votes.iter().enumerate() {
        let supports = vec![format!("largestVotes[{i}]")];
        if v.tx_hash.is_some() {
            citations.push(Citation {
                tx_hash: v.tx_hash.clone(),
                block_number: v.block_number.map(|b| b.to_string()),
                ..citation(SourceKind::Onchain.as_str(), supports)
            });
        } else if v.ipfs.is_some() {
            citations.push(Citation { ipfs: v.ipfs.clone(), ..citation("ipfs", supports) });
        }
    }
    for (i, e) in facts.events.iter().enumerate() {
        if e.url.is_some() || e.tx_hash.is_some() || e.snapshot_id.is_some() {
            let source = if e.tx_hash.is_some() { SourceKind::Onchain.as_str() } else { e.subject_source.as_str() };
            citations.push(Citation {
                url: e.url.clone(),
                snapshot_id: e.snapshot_id.clone(),
                tx_hash: e.tx_hash.clone(),
                block_number: e.block_number.map(|b| b.to_string()),
                ..citation(source, vec![format!("timeline.events[{i}]")])
            });
        }
    }
    for (i, t) in facts.topics.iter().enumerate() {
        citations.push(Citation {
            url: Some(t.url.clone()),
            ..citation(SourceKind::Discourse.as_str(), vec![format!("linkedTopics[{i}]")])
        });
    }

    merge_citations(citations)
}

/// Citations naming the same place (source, URL, ids, transaction, dataset) become one, whose
/// `supports` lists every field of the merged ones, in first-seen order.
fn merge_citations(citations: Vec<Citation>) -> Vec<Citation> {
    let mut out: Vec<Citation> = Vec::new();
    for c in citations {
        let same = |o: &&mut Citation| {
            (&o.source, &o.url, &o.snapshot_id, &o.ipfs, &o.tx_hash, &o.block_number, &o.dataset)
                == (&c.source, &c.url, &c.snapshot_id, &c.ipfs, &c.tx_hash, &c.block_number, &c.dataset)
        };
        match out.iter_mut().find(same) {
            Some(existing) => existing.supports.extend(c.supports),
            None => out.push(c),
        }
    }
    out
}

/// Field names, as a citation's `supports` lists them.
pub fn fields(names: &[&str]) -> Vec<String> {
    names.iter().map(|f| (*f).to_owned()).collect()
}
