//! Proposals, their later updates, their votes, and the voters the votes introduce.
use std::collections::{BTreeSet, HashMap};

use sea_orm::{DbErr, EntityTrait};

use super::Applier;
use crate::contract::decimal;
use crate::contract::vocabulary::ProposalSource;
use crate::store::address::{self, AccountBytes};
use crate::store::entities::{proposal, vote, voter};
use crate::store::facts::TallyDelta;
use crate::store::publish::Touched;
use crate::store::staging::{ProposalRecord, ProposalUpdate, VoteRecord};
use crate::store::stored::{Choices, Scores};
use crate::store::upsert::{Changes, TableCounts, by_key, kept, stored, upsert};
use crate::store::{keys, sort_keys};

impl Applier<'_> {
    /// Stored proposals whose external id is one of `ids`, by (dao, source, external id).
    pub(super) async fn stored_proposals(
        &self,
        ids: BTreeSet<String>,
    ) -> Result<HashMap<(String, ProposalSource, String), proposal::Model>, DbErr> {
        let found = stored::<proposal::Entity, _>(self.txn, proposal::Column::ExternalId, ids).await?;
        Ok(by_key(found, |m| (m.dao_id.clone(), m.source, m.external_id.clone())))
    }

    pub(super) async fn proposals(&self, rows: &[ProposalRecord], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.external_id.clone()).collect()).await?;
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.source, r.external_id.clone()));
            let desired = proposal::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                source: r.source,
                external_id: r.external_id.clone(),
                proposal_key: keys::proposal_key(&r.dao_id, r.source.as_str(), &r.external_id),
                title: r.title.clone(),
                body: r.body.clone().or_else(|| kept!(old, body)),
                author: r.author.clone(),
                voting_type: r.voting_type.clone().or_else(|| kept!(old, voting_type)),
                state: r.state,
                choices: r.choices.clone().map(Choices).or_else(|| kept!(old, choices)),
                scores: r.scores.clone().map(Scores).or_else(|| kept!(old, scores)),
                scores_total: r.scores_total.clone().or_else(|| kept!(old, scores_total)),
                scores_state: r.scores_state.clone().or_else(|| kept!(old, scores_state)),
                quorum: r.quorum.clone().or_else(|| kept!(old, quorum)),
                top_choice_pct: top_choice_pct(r.scores.as_deref(), r.scores_total.as_deref())
                    .or_else(|| kept!(old, top_choice_pct)),
                start_ms: r.start_ms.or_else(|| old.and_then(|s| s.start_ms)),
                end_ms: r.end_ms.or_else(|| old.and_then(|s| s.end_ms)),
                created_ms: r.created_ms,
                upstream_vote_count: r.upstream_vote_count.or_else(|| old.and_then(|s| s.upstream_vote_count)),
                ingested_vote_count: old.map_or(0, |s| s.ingested_vote_count),
                url: r.url.clone().or_else(|| kept!(old, url)),
                discussion_url: r.discussion_url.clone().or_else(|| kept!(old, discussion_url)),
                ipfs: r.ipfs.clone().or_else(|| kept!(old, ipfs)),
                snapshot_block: r.snapshot_block.clone().or_else(|| kept!(old, snapshot_block)),
                tx_hash: r.tx_hash.clone().or_else(|| kept!(old, tx_hash)),
                block_number: r.block_number.or_else(|| old.and_then(|s| s.block_number)),
                counting_mode: r.counting_mode.clone().or_else(|| kept!(old, counting_mode)),
                clock_mode: r.clock_mode.clone().or_else(|| kept!(old, clock_mode)),
                privacy: r.privacy.clone().or_else(|| kept!(old, privacy)),
                origin: r.origin.clone(),
                updated_ms: old.map_or(0, |s| s.updated_ms),
            };
            let now = self.now_ms;
            changes.offer(old, desired, |m| m.updated_ms = now);
        }
        let written: BTreeSet<(String, ProposalSource, String)> =
            changes.rows.iter().map(|p| (p.dao_id.clone(), p.source, p.external_id.clone())).collect();
        let natural = [proposal::Column::DaoId, proposal::Column::Source, proposal::Column::ExternalId];
        upsert::<proposal::Entity>(self.txn, changes.rows, &natural, Some(proposal::Column::Id)).await?;
        // New rows got their ids from the database.
        let ids = self.stored_proposals(written.iter().map(|k| k.2.clone()).collect()).await?;
        for key in &written {
            if let Some(p) = ids.get(key) {
                touched.proposals.insert(p.id);
                touched.daos.insert(p.dao_id.clone());
            }
        }
        Ok(changes.counts)
    }

    pub(super) async fn proposal_updates(
        &self,
        rows: &[ProposalUpdate],
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let stored = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let mut changes = Changes::default();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(old) = stored.get(&key) else { continue };
            let mut desired = old.clone();
            if let Some(state) = r.state {
                desired.state = state;
            }
            desired.scores = r.scores.clone().map(Scores).or(desired.scores);
            desired.scores_total = r.scores_total.clone().or(desired.scores_total);
            desired.quorum = r.quorum.clone().or(desired.quorum);
            desired.start_ms = r.start_ms.or(desired.start_ms);
            desired.end_ms = r.end_ms.or(desired.end_ms);
            desired.counting_mode = r.counting_mode.clone().or(desired.counting_mode);
            desired.clock_mode = r.clock_mode.clone().or(desired.clock_mode);
            if r.scores.is_some() {
                desired.top_choice_pct =
                    top_choice_pct(r.scores.as_deref(), r.scores_total.as_deref()).or(desired.top_choice_pct);
            }
            let now = self.now_ms;
            changes.offer(Some(old), desired, |m| m.updated_ms = now);
        }
        touched.proposals.extend(changes.rows.iter().map(|p| p.id));
        touched.daos.extend(changes.rows.iter().map(|p| p.dao_id.clone()));
        let natural = [proposal::Column::DaoId, proposal::Column::Source, proposal::Column::ExternalId];
        upsert::<proposal::Entity>(self.txn, changes.rows, &natural, Some(proposal::Column::Id)).await?;
        Ok(changes.counts)
    }

    /// Votes and the voters they introduce.
    pub(super) async fn votes(
        &self,
        rows: &[VoteRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<(TableCounts, TableCounts), DbErr> {
        let proposals = self.stored_proposals(rows.iter().map(|r| r.proposal.external_id.clone()).collect()).await?;
        let stored = self.stored_votes(rows, &proposals).await?;
        let mut first_seen: HashMap<String, i64> = HashMap::new();
        let mut changes = Changes::default();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            let Some(proposal) = proposals.get(&key) else {
                skipped.push(format!("vote of {} on {}: the proposal is not stored", r.voter, r.proposal.external_id));
                continue;
            };
            let vp_sort = match sort_keys::parse_amount(&r.voting_power) {
                Ok((_, sort)) => sort,
                Err(e) => {
                    skipped.push(format!("vote of {} on {}: {e}", r.voter, r.proposal.external_id));
                    continue;
                }
            };
            let Ok(voter) = AccountBytes::parse(&r.voter) else {
                skipped.push(format!("vote of {} on {}: the voter is not an address", r.voter, r.proposal.external_id));
                continue;
            };
            let seen = first_seen.entry(r.voter.clone()).or_insert(r.created_ms);
            *seen = (*seen).min(r.created_ms);
            let old = stored.get(&(proposal.id, voter.clone()));
            let voting_type = proposal.voting_type.clone();
            let desired = vote::Model {
                id: old.map_or(0, |s| s.id),
                proposal_id: proposal.id,
                dao_id: r.dao_id.clone(),
                voter,
                choice: r.choice.clone(),
                voting_power: r.voting_power.clone(),
                vp_sort,
                vp_from_float: r.vp_from_float,
                reason: r.reason.clone().filter(|s| !s.is_empty()).or_else(|| kept!(old, reason)),
                created_ms: r.created_ms,
                ipfs: r.ipfs.clone().or_else(|| kept!(old, ipfs)),
                tx_hash: r.tx_hash.clone().or_else(|| kept!(old, tx_hash)),
                block_number: r.block_number.or_else(|| old.and_then(|s| s.block_number)),
            };
            if old != Some(&desired) {
                touched
                    .tallies
                    .entry(proposal.id)
                    .or_insert_with(|| TallyDelta { voting_type, ..TallyDelta::default() })
                    .record(
                        (&desired.choice, &desired.voting_power),
                        old.map(|o| (o.choice.as_str(), o.voting_power.as_str())),
                    );
            }
            changes.offer(old, desired, |_| {});
        }
        let voters = self.voters(first_seen).await?;
        touched.new_voters += voters.inserted;
        for v in &changes.rows {
            touched.voted.insert(v.proposal_id);
            touched.voters.insert((v.dao_id.clone(), v.voter.lower()));
            touched.daos.insert(v.dao_id.clone());
        }
        let natural = [vote::Column::ProposalId, vote::Column::Voter];
        upsert::<vote::Entity>(self.txn, changes.rows, &natural, Some(vote::Column::Id)).await?;
        Ok((voters, changes.counts))
    }

    /// The stored votes these records may replace, found by their natural key (proposal, voter)
    /// through its unique index: the cost follows the page, not the proposals' vote counts.
    async fn stored_votes(
        &self,
        rows: &[VoteRecord],
        proposals: &HashMap<(String, ProposalSource, String), proposal::Model>,
    ) -> Result<HashMap<(i64, AccountBytes), vote::Model>, DbErr> {
        use sea_orm::{ColumnTrait, QueryFilter};
        let mut by_proposal: HashMap<i64, BTreeSet<AccountBytes>> = HashMap::new();
        for r in rows {
            let key = (r.dao_id.clone(), r.proposal.source, r.proposal.external_id.clone());
            if let (Some(p), Ok(voter)) = (proposals.get(&key), AccountBytes::parse(&r.voter)) {
                by_proposal.entry(p.id).or_default().insert(voter);
            }
        }
        let mut found = HashMap::new();
        for (proposal_id, voters) in by_proposal {
            let voters: Vec<AccountBytes> = voters.into_iter().collect();
            for chunk in voters.chunks(crate::store::upsert::BATCH) {
                let rows = vote::Entity::find()
                    .filter(vote::Column::ProposalId.eq(proposal_id))
                    .filter(vote::Column::Voter.is_in(chunk.iter().cloned()))
                    .all(self.txn)
                    .await?;
                found.extend(rows.into_iter().map(|m| ((m.proposal_id, m.voter.clone()), m)));
            }
        }
        Ok(found)
    }

    /// New voters; a known voter keeps its earliest sighting and its names.
    async fn voters(&self, first_seen: HashMap<String, i64>) -> Result<TableCounts, DbErr> {
        let addresses: Vec<String> = first_seen.keys().cloned().collect();
        let stored = stored::<voter::Entity, _>(self.txn, voter::Column::Address, addresses).await?;
        let stored = by_key(stored, |m| m.address.clone());
        let mut changes = Changes::default();
        for (addr, seen) in first_seen {
            let old = stored.get(&addr);
            let desired = voter::Model {
                address_display: address::display(&addr),
                ens: kept!(old, ens),
                name: kept!(old, name),
                first_seen_ms: old.map_or(seen, |s| s.first_seen_ms.min(seen)),
                address: addr,
            };
            changes.offer(old, desired, |_| {});
        }
        upsert::<voter::Entity>(self.txn, changes.rows, &[voter::Column::Address], None).await?;
        Ok(changes.counts)
    }
}

/// The leading choice's share of the total in percent (exact, as text), when both are known.
fn top_choice_pct(scores: Option<&[String]>, total: Option<&str>) -> Option<String> {
    let total = decimal::parse(total?).ok()?;
    let top = scores?.iter().filter_map(|s| decimal::parse(s).ok()).max()?;
    if bigdecimal::Zero::is_zero(&total) {
        return None;
    }
    Some(crate::rules::tally::share(&(top * bigdecimal::BigDecimal::from(100)), &total))
}
