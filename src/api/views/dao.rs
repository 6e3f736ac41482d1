//! DAOs as both surfaces serve them: sources, counts and freshness.
use poem_openapi::{Enum, Object};

use crate::contract::time::Timestamp;
use crate::contract::vocabulary::RunStatus;
use crate::contract::vocabulary::{SourceKind, UnknownValue};
use crate::store::daos::DaoRecord;

/// Whether anything has been ingested for a DAO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum IngestionStatus {
    /// Data has been ingested and published.
    Ingested,
    /// Registered, nothing ingested yet: only registry fields are known.
    RegistryOnly,
}

/// One data source of a DAO with its ingestion watermark.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct DaoSource {
    pub source: SourceKind,
    /// The upstream handle: Snapshot space, forum URL, governor address, or dataset name.
    pub locator: String,
    /// A link to the upstream.
    pub url: Option<String>,
    /// The time up to which this source's data is complete.
    pub data_as_of: Option<Timestamp>,
    /// Status of the last ingestion run for this source (`succeeded`, `failed`).
    pub last_status: Option<String>,
}

/// Exact counts, as decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct DaoCounts {
    /// Proposals held for the DAO.
    pub proposals: String,
    /// Proposals whose voting is open.
    pub active_proposals: String,
    /// Votes cast according to the upstream (Snapshot's per-proposal `votes` total, summed). May exceed
    /// `ingestedVotes`: the store can hold only part of a proposal's votes.
    pub upstream_votes: String,
    /// Votes actually held in this store and served by the vote endpoints.
    pub ingested_votes: String,
    /// Distinct addresses with at least one ingested vote in the DAO.
    pub voters: String,
    /// Delegates with on-chain voting power on record.
    pub delegates: String,
    pub forum_topics: String,
}

/// A covered DAO.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct Dao {
    /// Lowercase slug; the DAO's identifier everywhere in the API.
    pub dao_id: String,
    pub name: String,
    /// Governance token symbol.
    pub symbol: Option<String>,
    /// `ingested`, or `registry_only` when nothing has been ingested yet.
    pub status: IngestionStatus,
    /// Ingestion watermark of the DAO's data: the newest of its sources' watermarks. Absent when
    /// nothing has been ingested.
    pub data_as_of: Option<Timestamp>,
    /// Data sources with their watermarks.
    pub sources: Vec<DaoSource>,
    /// Absent when `status` is `registry_only`.
    pub counts: Option<DaoCounts>,
}

impl Dao {
    /// The DAO as served; a stored source kind this build does not know is an error.
    pub fn from_record(r: DaoRecord) -> Result<Self, UnknownValue> {
        let sources = r
            .sources
            .iter()
            .map(|s| {
                let watermark = r.watermarks.iter().find(|w| w.source == s.kind);
                Ok(DaoSource {
                    source: s.kind,
                    locator: s.locator.clone(),
                    url: s.url.clone(),
                    data_as_of: watermark.and_then(|w| w.data_as_of_ms).map(Timestamp::from_ms),
                    last_status: watermark.and_then(|w| w.last_status.clone()),
                })
            })
            .collect::<Result<_, UnknownValue>>()?;
        let counts = r.summary.as_ref().map(|s| DaoCounts {
            proposals: s.proposals.to_string(),
            active_proposals: s.active_proposals.to_string(),
            upstream_votes: s.upstream_votes.to_string(),
            ingested_votes: s.ingested_votes.to_string(),
            voters: s.voters.to_string(),
            delegates: s.delegates.to_string(),
            forum_topics: s.forum_topics.to_string(),
        });
        Ok(Self {
            dao_id: r.dao.id,
            name: r.dao.name,
            symbol: r.dao.symbol,
            status: if r.summary.is_some() { IngestionStatus::Ingested } else { IngestionStatus::RegistryOnly },
            data_as_of: r.summary.as_ref().and_then(|s| s.data_as_of_ms).map(Timestamp::from_ms),
            sources,
            counts,
        })
    }

    fn example_value() -> Self {
        Self {
            dao_id: "arbitrum".to_owned(),
            name: "Arbitrum DAO".to_owned(),
            symbol: Some("ARB".to_owned()),
            status: IngestionStatus::Ingested,
            data_as_of: Some(Timestamp::known("2026-04-02T00:00:00.000Z")),
            sources: vec![DaoSource {
                source: SourceKind::Snapshot,
                locator: "arbitrumfoundation.eth".to_owned(),
                url: Some("https://snapshot.box/#/s:arbitrumfoundation.eth".to_owned()),
                data_as_of: Some(Timestamp::known("2026-04-02T00:00:00.000Z")),
                last_status: Some(RunStatus::Succeeded.as_str().to_owned()),
            }],
            counts: Some(DaoCounts {
                proposals: "43".to_owned(),
                active_proposals: "0".to_owned(),
                upstream_votes: "412345".to_owned(),
                ingested_votes: "16969".to_owned(),
                voters: "9112".to_owned(),
                delegates: "100".to_owned(),
                forum_topics: "0".to_owned(),
            }),
        }
    }
}

impl poem_openapi::types::Example for Dao {
    fn example() -> Self {
        Self::example_value()
    }
}
