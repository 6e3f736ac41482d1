//! Citations: where a served fact comes from, so it can be quoted and checked.
use poem_openapi::Object;

use crate::contract::dataset;
use crate::store::{entities::proposal, evidence::SAMPLE_PROPOSAL_ORIGIN};

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
    if p.source == "onchain" {
        out.push(Citation {
            url: p.url.clone(),
            tx_hash: p.tx_hash.clone(),
            block_number: p.block_number.map(|b| b.to_string()),
            ..citation("onchain", supports.clone())
        });
    } else {
        out.push(Citation {
            url: p.url.clone(),
            snapshot_id: Some(p.external_id.clone()),
            ipfs: p.ipfs.clone(),
            ..citation("snapshot", supports.clone())
        });
    }
    if p.origin == SAMPLE_PROPOSAL_ORIGIN {
        out.push(Citation {
            snapshot_id: Some(p.external_id.clone()),
            dataset: Some(dataset::cited_path(dataset::PROPOSALS_FILE)),
            ..citation("snapshot", supports)
        });
    }
    out
}

/// The citation of an event: the upstream record it was derived from.
pub(crate) fn event_citation(
    source: &str,
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
        source: source.to_owned(),
        url,
        snapshot_id,
        ipfs: None,
        tx_hash,
        block_number: block_number.map(|b| b.to_string()),
        dataset: None,
    }
}
