//! Writes validated sample rows into the store.
//!
//! Each table is handled the same way: read what is stored under the rows' natural keys, build
//! the row as it should be (keeping columns the sample does not carry, such as a vote's reason
//! from a live connector), and write only rows that are new or different, in batched upserts.
//! Comparing before writing is what gives exact insert/update counts and makes a repeated import
//! a true no-op.
use std::collections::{BTreeSet, HashMap};

use sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

use super::parse::{Parsed, SampleDelegate, SampleProposal, SampleVote, SampleVoter, SampleWatermark, TALLY_DECIMALS};
use super::registry::DEFAULT_REGISTRY;
use crate::contract::vocabulary::{ProposalSource, RunStatus, SourceKind};
use crate::store::address::AccountBytes;
use crate::store::entities::{dao, data_source, delegate, proposal, source_watermark, vote, voter};
use crate::store::upsert::TableCounts;
use crate::store::upsert::kept;
use crate::store::upsert::{Changes, by_key, stored, upsert};
use crate::store::{address, keys};

/// The proposals' `source`.
/// Proposal `origin` of rows from the sample.
const PROPOSAL_ORIGIN: &str = crate::store::entities::proposal::SAMPLE_ORIGIN;
/// Delegate `origin` of rows from the sample.
const DELEGATE_ORIGIN: &str = "tally-sample-csv";

/// The transaction and the run that writes through it.
pub struct Writer<'a> {
    pub txn: &'a DatabaseTransaction,
    pub run_id: i64,
    pub now_ms: i64,
}

impl Writer<'_> {
    /// The bundled registry. Columns it leaves open (forum, governor, ...) keep what an operator set.
    pub async fn daos(&self) -> Result<TableCounts, DbErr> {
        let stored = by_key(dao::Entity::find().all(self.txn).await?, |m| m.id.clone());
        let mut changes = Changes::default();
        for r in DEFAULT_REGISTRY {
            let old = stored.get(r.id);
            let desired = dao::Model {
                id: r.id.to_owned(),
                name: r.name.to_owned(),
                symbol: Some(r.symbol.to_owned()),
                snapshot_space: r.snapshot_space.map(str::to_owned).or_else(|| kept!(old, snapshot_space)),
                discourse_url: kept!(old, discourse_url),
                chain_id: old.and_then(|s| s.chain_id),
                governor: kept!(old, governor),
                token: kept!(old, token),
                registered_ms: old.map_or(self.now_ms, |s| s.registered_ms),
            };
            changes.offer(old, desired, |_| {});
        }
        upsert::<dao::Entity>(self.txn, changes.rows, &[dao::Column::Id], None).await?;
        Ok(changes.counts)
    }

    /// A Snapshot source for every registry DAO with a space; a Tally source where the export
    /// has rows for the DAO.
    pub async fn data_sources(&self, parsed: &Parsed) -> Result<TableCounts, DbErr> {
        let snapshot = DEFAULT_REGISTRY.iter().filter_map(|d| {
            let space = d.snapshot_space?;
            Some((d.id, SourceKind::Snapshot, space.to_owned(), Some(crate::contract::urls::snapshot_space_url(space))))
        });
        let tally_daos: BTreeSet<&str> = parsed.delegates.iter().map(|d| d.dao_id).collect();
        let tally = tally_daos
            .into_iter()
            .map(|dao_id| (dao_id, SourceKind::Tally, crate::contract::dataset::DELEGATES_FILE.to_owned(), None));

        let stored = by_key(data_source::Entity::find().all(self.txn).await?, |m| (m.dao_id.clone(), m.kind));
        let mut changes = Changes::default();
        for (dao_id, kind, locator, url) in snapshot.chain(tally) {
            let old = stored.get(&(dao_id.to_owned(), kind));
            let desired =
                data_source::Model { id: old.map_or(0, |s| s.id), dao_id: dao_id.to_owned(), kind, locator, url };
            changes.offer(old, desired, |_| {});
        }
        let natural = [data_source::Column::DaoId, data_source::Column::Kind];
        upsert::<data_source::Entity>(self.txn, changes.rows, &natural, Some(data_source::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Writes the proposals and returns their store ids by (dao, external id) for the votes.
    pub async fn proposals(
        &self,
        rows: &[SampleProposal],
    ) -> Result<(TableCounts, HashMap<(String, String), i64>), DbErr> {
        let external_ids = rows.iter().map(|r| r.external_id.clone());
        let stored = by_key(self.stored_proposals(external_ids).await?, |m| (m.dao_id.clone(), m.external_id.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao.id.to_owned(), r.external_id.clone()));
            let now = self.now_ms;
            changes.offer(old, desired_proposal(old, r), |m| m.updated_ms = now);
        }
        let natural = [proposal::Column::DaoId, proposal::Column::Source, proposal::Column::ExternalId];
        upsert::<proposal::Entity>(self.txn, changes.rows, &natural, Some(proposal::Column::Id)).await?;

        let written = self.stored_proposals(rows.iter().map(|r| r.external_id.clone())).await?;
        let ids = written.into_iter().map(|m| ((m.dao_id, m.external_id), m.id)).collect();
        Ok((changes.counts, ids))
    }

    async fn stored_proposals(
        &self,
        external_ids: impl Iterator<Item = String>,
    ) -> Result<Vec<proposal::Model>, DbErr> {
        let found = stored::<proposal::Entity, _>(self.txn, proposal::Column::ExternalId, external_ids).await?;
        Ok(found.into_iter().filter(|m| m.source == ProposalSource::Snapshot).collect())
    }

    pub async fn votes(
        &self,
        rows: &[SampleVote],
        proposal_ids: &HashMap<(String, String), i64>,
    ) -> Result<TableCounts, DbErr> {
        let stored =
            stored::<vote::Entity, _>(self.txn, vote::Column::ProposalId, proposal_ids.values().copied()).await?;
        let stored = by_key(stored, |m| (m.proposal_id, m.voter.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let key = (r.dao_id.to_owned(), r.proposal_external_id.clone());
            let Some(&proposal_id) = proposal_ids.get(&key) else {
                return Err(DbErr::Custom(format!("proposal {} was not stored", r.proposal_external_id)));
            };
            let voter = AccountBytes::parse(&r.voter).map_err(|e| DbErr::Custom(e.to_string()))?;
            let old = stored.get(&(proposal_id, voter.clone()));
            changes.offer(old, desired_vote(old, r, proposal_id, voter), |_| {});
        }
        let natural = [vote::Column::ProposalId, vote::Column::Voter];
        upsert::<vote::Entity>(self.txn, changes.rows, &natural, Some(vote::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Voters merge with what is stored: the earliest sighting wins, and names the sample does
    /// not give are kept.
    pub async fn voters(&self, rows: &[SampleVoter]) -> Result<TableCounts, DbErr> {
        let addresses = rows.iter().map(|r| r.address.clone());
        let stored = by_key(stored::<voter::Entity, _>(self.txn, voter::Column::Address, addresses).await?, |m| {
            m.address.clone()
        });
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&r.address);
            let desired = voter::Model {
                address: r.address.clone(),
                address_display: address::display(&r.address),
                ens: r.ens.clone().or_else(|| kept!(old, ens)),
                name: r.name.clone().or_else(|| kept!(old, name)),
                first_seen_ms: old.map_or(r.first_seen_ms, |s| s.first_seen_ms.min(r.first_seen_ms)),
            };
            changes.offer(old, desired, |_| {});
        }
        upsert::<voter::Entity>(self.txn, changes.rows, &[voter::Column::Address], None).await?;
        Ok(changes.counts)
    }

    pub async fn delegates(&self, rows: &[SampleDelegate], as_of_ms: i64) -> Result<TableCounts, DbErr> {
        let dao_ids: BTreeSet<String> = rows.iter().map(|r| r.dao_id.to_owned()).collect();
        let stored = stored::<delegate::Entity, _>(self.txn, delegate::Column::DaoId, dao_ids).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.address.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.to_owned(), r.address.clone()));
            let desired = delegate::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.to_owned(),
                address: r.address.clone(),
                voting_power_raw: r.voting_power_raw.clone(),
                decimals: TALLY_DECIMALS as i32,
                voting_power: r.voting_power.clone(),
                vp_sort: r.vp_sort.clone(),
                delegators_count: r.delegators_count,
                origin: DELEGATE_ORIGIN.to_owned(),
                as_of_ms,
            };
            changes.offer(old, desired, |_| {});
        }
        let natural = [delegate::Column::DaoId, delegate::Column::Address];
        upsert::<delegate::Entity>(self.txn, changes.rows, &natural, Some(delegate::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Watermarks only move forward: a live connector may already have gone past the sample.
    /// A row is stamped with this run only when it actually changes.
    pub async fn watermarks(&self, rows: &[SampleWatermark]) -> Result<TableCounts, DbErr> {
        let dao_ids = rows.iter().map(|r| r.dao_id.to_owned());
        let stored = stored::<source_watermark::Entity, _>(self.txn, source_watermark::Column::DaoId, dao_ids).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.source));
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.to_owned(), r.source));
            let as_of = old.and_then(|s| s.data_as_of_ms).map_or(r.data_as_of_ms, |s| s.max(r.data_as_of_ms));
            let desired = source_watermark::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.to_owned(),
                source: r.source,
                data_as_of_ms: Some(as_of),
                position: kept!(old, position),
                last_run_id: old.and_then(|s| s.last_run_id),
                last_status: Some(RunStatus::Succeeded.as_str().to_owned()),
                last_error: None,
                updated_ms: old.map_or(self.now_ms, |s| s.updated_ms),
            };
            let (run_id, now) = (self.run_id, self.now_ms);
            changes.offer(old, desired, |m| {
                m.last_run_id = Some(run_id);
                m.updated_ms = now;
            });
        }
        let natural = [source_watermark::Column::DaoId, source_watermark::Column::Source];
        upsert::<source_watermark::Entity>(self.txn, changes.rows, &natural, Some(source_watermark::Column::Id))
            .await?;
        Ok(changes.counts)
    }
}

/// `created_ms` is the start: the sample has no creation time, and a Snapshot proposal is
/// created at or shortly before its start. `ingested_vote_count` is publication's to set.
fn desired_proposal(old: Option<&proposal::Model>, r: &SampleProposal) -> proposal::Model {
    proposal::Model {
        id: old.map_or(0, |s| s.id),
        dao_id: r.dao.id.to_owned(),
        source: ProposalSource::Snapshot,
        external_id: r.external_id.clone(),
        proposal_key: keys::proposal_key(r.dao.id, ProposalSource::Snapshot.as_str(), &r.external_id),
        title: r.title.clone(),
        body: kept!(old, body),
        author: r.author.clone(),
        voting_type: Some(r.voting_type.clone()),
        state: r.state,
        choices: kept!(old, choices),
        scores: kept!(old, scores),
        scores_total: r.scores_total.clone(),
        scores_state: kept!(old, scores_state),
        quorum: r.quorum.clone(),
        top_choice_pct: r.top_choice_pct.clone(),
        start_ms: Some(r.start_ms),
        end_ms: Some(r.end_ms),
        created_ms: r.start_ms,
        upstream_vote_count: Some(r.upstream_vote_count),
        ingested_vote_count: old.map_or(0, |s| s.ingested_vote_count),
        url: Some(crate::contract::urls::snapshot_proposal_url(&r.space, &r.external_id)),
        discussion_url: kept!(old, discussion_url),
        ipfs: kept!(old, ipfs),
        snapshot_block: kept!(old, snapshot_block),
        tx_hash: kept!(old, tx_hash),
        block_number: old.and_then(|s| s.block_number),
        counting_mode: kept!(old, counting_mode),
        clock_mode: kept!(old, clock_mode),
        privacy: kept!(old, privacy),
        origin: PROPOSAL_ORIGIN.to_owned(),
        updated_ms: old.map_or(0, |s| s.updated_ms),
    }
}

/// The sample's votes are Snapshot's: `vp_from_float` as that source declares it; the text is kept
/// as received.
fn desired_vote(old: Option<&vote::Model>, r: &SampleVote, proposal_id: i64, voter: AccountBytes) -> vote::Model {
    vote::Model {
        id: old.map_or(0, |s| s.id),
        proposal_id,
        dao_id: r.dao_id.to_owned(),
        voter,
        choice: r.choice.clone(),
        voting_power: r.voting_power.clone(),
        vp_sort: r.vp_sort.clone(),
        vp_from_float: ProposalSource::Snapshot.power_from_float(),
        reason: kept!(old, reason),
        created_ms: r.created_ms,
        ipfs: kept!(old, ipfs),
        tx_hash: kept!(old, tx_hash),
        block_number: old.and_then(|s| s.block_number),
    }
}
