//! Stored vote facts (`proposal_facts`): what a proposal's votes say, computed at publication for
//! the proposals whose votes changed, and read by evidence, briefs and the signal rules instead of
//! the votes themselves. No request reads a proposal's votes to tally them.
//!
//! A publication adds the votes it wrote to the stored tally (and takes out the old values of the
//! votes they replaced): exact, since the shares removed are the very quotients once added. Only
//! a proposal without stored facts, or whose voting type changed, is tallied from all its votes,
//! in one streamed pass (memory bounded whatever the count). The two votes the rules weigh (the
//! largest, and the one with the largest effect on the margin) come from a short walk down the
//! votes in power order (`store::vote_arms`) that stops as soon as no later vote can beat the best
//! found, since a vote's effect never exceeds its power.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use bigdecimal::{BigDecimal, Zero};
use futures_util::TryStreamExt;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QuerySelect, StreamTrait,
    sea_query::OnConflict,
};
use serde::{Deserialize, Serialize};

use super::address::AccountBytes;
use super::entities::{proposal, proposal_fact, vote};
use super::keysets::VoteOrder;
use super::sort_keys;
use super::stored::TallyScores;
use super::vote_arms;
use crate::contract::decimal;
use crate::rules::signals::{VoteFacts, VoteInput, leading_pair};
use crate::rules::tally::{self, Tally};

/// Ids per `IN (...)` list, well under both backends' bind limits.
const IN_LIST_MAX: usize = 500;

/// Rows of the first page of the weightiest-vote walk (it mostly ends there), and of the
/// largest page it grows to.
const FIRST_WALK_PAGE: u64 = 32;
const LAST_WALK_PAGE: u64 = 8_192;

/// The part of [`VoteFacts`] that depends only on the votes and the voting type (what is stored).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Computed {
    pub tally: Tally,
    pub votes: u64,
    pub largest: Option<VoteInput>,
    pub most_effective: Option<(VoteInput, BigDecimal)>,
}

impl Computed {
    /// The facts the rules read, given the upstream vote count (which decides completeness).
    pub fn facts(self, voting_type: Option<&str>, upstream_vote_count: Option<i64>) -> VoteFacts {
        let complete =
            self.votes > 0 && self.tally.votes_unreadable == 0 && self.votes as i64 >= upstream_vote_count.unwrap_or(0);
        let pair = leading_pair(voting_type, &self.tally);
        VoteFacts {
            tally: self.tally,
            complete,
            votes: self.votes,
            pair,
            largest: self.largest,
            most_effective: self.most_effective,
        }
    }

    fn into_row(self, proposal_id: i64, voting_type: Option<String>) -> proposal_fact::Model {
        let scores = self
            .tally
            .scores
            .iter()
            .map(|(c, s)| (*c, (s.clone(), self.tally.allocations.get(c).copied().unwrap_or(0))))
            .collect();
        proposal_fact::Model {
            proposal_id,
            voting_type,
            votes: self.votes as i64,
            votes_counted: self.tally.votes_counted as i64,
            votes_unreadable: self.tally.votes_unreadable as i64,
            total_power: tally::score_text(&self.tally.total_power),
            scores: TallyScores(scores),
            largest: self.largest.map(|v| serde_json::to_string(&v).expect("a vote serialises")),
            most_effective: self
                .most_effective
                .map(|(v, e)| serde_json::to_string(&Effective(v, tally::score_text(&e))).expect("a vote serialises")),
        }
    }

    fn from_row(row: proposal_fact::Model) -> Result<Self, DbErr> {
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            DbErr::Custom(format!("proposal_facts {} holds an unreadable {what}: {e}", row.proposal_id))
        };
        let number = |what: &str, text: &str| decimal::parse(text).map_err(|e| bad(what, &e));
        let mut tally = Tally {
            total_power: number("total power", &row.total_power)?,
            votes_counted: row.votes_counted as u64,
            votes_unreadable: row.votes_unreadable as u64,
            ..Tally::default()
        };
        for (choice, (score, votes)) in row.scores.0 {
            tally.scores.insert(choice, score);
            tally.allocations.insert(choice, votes);
        }
        let largest = match &row.largest {
            Some(json) => Some(serde_json::from_str::<VoteInput>(json).map_err(|e| bad("largest vote", &e))?),
            None => None,
        };
        let most_effective = match &row.most_effective {
            Some(json) => {
                let Effective(vote, effect) = serde_json::from_str(json).map_err(|e| bad("deciding vote", &e))?;
                Some((vote, number("effect", &effect)?))
            }
            None => None,
        };
        Ok(Self { tally, votes: row.votes as u64, largest, most_effective })
    }
}

/// A vote and its exact effect on the margin, as stored.
#[derive(Serialize, Deserialize)]
struct Effective(VoteInput, String);

/// The stored facts of `ids` (proposals without votes have none).
pub async fn load<C: ConnectionTrait>(db: &C, ids: &[i64]) -> Result<HashMap<i64, Computed>, DbErr> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(IN_LIST_MAX) {
        let rows = proposal_fact::Entity::find()
            .filter(proposal_fact::Column::ProposalId.is_in(chunk.to_vec()))
            .all(db)
            .await?;
        for row in rows {
            out.insert(row.proposal_id, Computed::from_row(row)?);
        }
    }
    Ok(out)
}

/// The stored facts of one proposal.
pub async fn get<C: ConnectionTrait>(db: &C, proposal_id: i64) -> Result<Option<Computed>, DbErr> {
    Ok(load(db, &[proposal_id]).await?.remove(&proposal_id))
}

/// Proposals with votes whose facts are missing or were computed with another voting type: a
/// store from before `proposal_facts`, or one written by a path that did not say what it
/// touched. Publication refreshes them with the touched ones.
pub async fn stale<C: ConnectionTrait>(db: &C) -> Result<BTreeSet<i64>, DbErr> {
    let sql = "SELECT p.id FROM proposals p LEFT JOIN proposal_facts f ON f.proposal_id = p.id
               WHERE (p.ingested_vote_count > 0 AND f.proposal_id IS NULL)
                  OR (f.proposal_id IS NOT NULL AND COALESCE(f.voting_type, '') <> COALESCE(p.voting_type, ''))
                  OR (f.proposal_id IS NOT NULL AND f.votes <> p.ingested_vote_count)";
    let stmt = sea_orm::Statement::from_string(db.get_database_backend(), sql);
    let rows = db.query_all_raw(stmt).await?;
    rows.iter().map(|r| r.try_get::<i64>("", "id")).collect()
}

/// How a proposal's votes changed in one publication.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TallyDelta {
    /// The voting type the votes were read with.
    pub voting_type: Option<String>,
    /// The new values of the votes written.
    pub added: Tally,
    /// The old values of the votes they replaced.
    pub removed: Tally,
    /// How many of the votes written are new (not replacing one).
    pub inserted: u64,
}

impl TallyDelta {
    /// Records one vote written: its new value, and the value it replaced, if any.
    pub fn record(&mut self, new: (&str, &str), old: Option<(&str, &str)>) {
        let vt = self.voting_type.clone();
        self.added.add(vt.as_deref(), new.0, new.1);
        match old {
            Some((choice, power)) => self.removed.add(vt.as_deref(), choice, power),
            None => self.inserted += 1,
        }
    }
}

/// Refreshes and stores the facts of `ids`; a proposal without votes loses its row. A proposal
/// with a delta (`deltas`: how its votes changed in this publication) whose stored facts were
/// computed with the same voting type gets its stored tally plus the delta: the run's votes, not
/// all of them, are read. Any other is computed from all its votes. Returns how many were
/// computed in full.
pub async fn refresh<C: ConnectionTrait + StreamTrait>(
    db: &C,
    ids: &BTreeSet<i64>,
    deltas: &BTreeMap<i64, TallyDelta>,
) -> Result<usize, DbErr> {
    let ids: Vec<i64> = ids.iter().copied().collect();
    let mut full = 0;
    for chunk in ids.chunks(IN_LIST_MAX) {
        let proposals: Vec<(i64, Option<String>, i64)> = proposal::Entity::find()
            .select_only()
            .columns([proposal::Column::Id, proposal::Column::VotingType, proposal::Column::IngestedVoteCount])
            .filter(proposal::Column::Id.is_in(chunk.to_vec()))
            .into_tuple()
            .all(db)
            .await?;
        let mut stored = load(db, chunk).await?;
        let stored_types: HashMap<i64, Option<String>> = proposal_fact::Entity::find()
            .select_only()
            .columns([proposal_fact::Column::ProposalId, proposal_fact::Column::VotingType])
            .filter(proposal_fact::Column::ProposalId.is_in(chunk.to_vec()))
            .into_tuple::<(i64, Option<String>)>()
            .all(db)
            .await?
            .into_iter()
            .collect();
        let mut rows = Vec::new();
        for (id, voting_type, ingested) in proposals {
            let vt = voting_type.as_deref();
            let updated = match (deltas.get(&id), stored.remove(&id)) {
                (Some(d), Some(before))
                    if d.voting_type == voting_type && stored_types.get(&id) == Some(&voting_type) =>
                {
                    with_delta(before, d).filter(|c| c.votes as i64 == ingested)
                }
                _ => None,
            };
            let c = match updated {
                Some(mut c) => {
                    (c.largest, c.most_effective) = weightiest(db, id, vt, &c.tally).await?;
                    c
                }
                None => {
                    full += 1;
                    compute(db, id, vt).await?
                }
            };
            if c.votes > 0 {
                rows.push(c.into_row(id, voting_type));
            }
        }
        // Ids without votes (or no longer proposals) keep no facts.
        let kept: BTreeSet<i64> = rows.iter().map(|r| r.proposal_id).collect();
        let empty: Vec<i64> = chunk.iter().copied().filter(|id| !kept.contains(id)).collect();
        proposal_fact::Entity::delete_many().filter(proposal_fact::Column::ProposalId.is_in(empty)).exec(db).await?;
        write(db, rows).await?;
    }
    Ok(full)
}

/// Stored facts plus a publication's delta; `None` when the delta does not fit them (it takes
/// out a vote they do not hold).
fn with_delta(mut c: Computed, d: &TallyDelta) -> Option<Computed> {
    c.tally.merge(&d.added);
    c.tally.remove(&d.removed)?;
    c.votes += d.inserted;
    Some(c)
}

async fn write<C: ConnectionTrait>(db: &C, rows: Vec<proposal_fact::Model>) -> Result<(), DbErr> {
    use proposal_fact::Column as F;
    let conflict = OnConflict::column(F::ProposalId)
        .update_columns([
            F::VotingType,
            F::Votes,
            F::VotesCounted,
            F::VotesUnreadable,
            F::TotalPower,
            F::Scores,
            F::Largest,
            F::MostEffective,
        ])
        .to_owned();
    // Rows carry long JSON members: a few per statement keeps every backend's limits far away.
    for chunk in rows.chunks(100) {
        let models = chunk.iter().cloned().map(sea_orm::IntoActiveModel::into_active_model);
        proposal_fact::Entity::insert_many(models).on_conflict(conflict.clone()).exec_without_returning(db).await?;
    }
    Ok(())
}

/// One proposal's facts from all its votes: the tally in one streamed pass, then the weightiest
/// votes from the power index.
pub async fn compute<C: ConnectionTrait + StreamTrait>(
    db: &C,
    proposal_id: i64,
    voting_type: Option<&str>,
) -> Result<Computed, DbErr> {
    let mut out = Computed::default();
    {
        let mut stream = vote::Entity::find()
            .select_only()
            .columns([vote::Column::Choice, vote::Column::VotingPower])
            .filter(vote::Column::ProposalId.eq(proposal_id))
            .into_tuple::<(String, String)>()
            .stream(db)
            .await?;
        while let Some((choice, power)) = stream.try_next().await? {
            out.tally.add(voting_type, &choice, &power);
            out.votes += 1;
        }
    }
    if out.votes > 0 {
        (out.largest, out.most_effective) = weightiest(db, proposal_id, voting_type, &out.tally).await?;
    }
    Ok(out)
}

/// The largest vote, and the vote with the largest effect on the margin between the leader and
/// the runner-up of `tally`, read down the votes in power order (`store::vote_arms`) until no later vote can beat
/// them (a vote's effect never exceeds its power).
async fn weightiest<C: ConnectionTrait>(
    db: &C,
    proposal_id: i64,
    voting_type: Option<&str>,
    tally: &Tally,
) -> Result<(Option<VoteInput>, Option<(VoteInput, BigDecimal)>), DbErr> {
    let pair = leading_pair(voting_type, tally);
    let race = pair.as_ref().and_then(|p| Some((p.leader?, if p.leader? == p.first { p.second } else { p.first })));
    // Sort keys keep 30 fraction digits: a later row's exact power is below its key + 1e-30.
    let key_slack = BigDecimal::new(1.into(), 30);
    let mut largest: Option<(BigDecimal, VoteInput)> = None;
    let mut best: Option<(BigDecimal, VoteInput)> = None;
    // Read in pages with a LIMIT, each resuming after the last: an unbounded ordered read lets
    // PostgreSQL plan for all of the proposal's votes (sort them whole) although the walk
    // usually stops within the first few rows. Pages grow so that a long walk stays few reads.
    let mut after: Option<(String, AccountBytes)> = None;
    let mut page_size = FIRST_WALK_PAGE;
    'walk: loop {
        let position = after.take().map(|(sort, voter)| vote_arms::Position::Power(sort, voter));
        let statement = vote_arms::statement(
            db.get_database_backend(),
            proposal_id,
            Default::default(),
            VoteOrder::Power,
            position,
            page_size,
            vote_arms::Read::Votes,
        );
        let page = vote::Model::find_by_statement(statement).all(db).await?;
        let full = page.len() as u64 == page_size;
        after = page.last().map(|v| (v.vp_sort.clone(), v.voter.clone()));
        for v in page.into_iter().map(VoteInput::from) {
            let Ok(power) = decimal::parse(&v.voting_power) else { continue };
            let ceiling = sort_keys::key_floor(&power) + &key_slack;
            let largest_settled = largest.as_ref().is_some_and(|(p, _)| ceiling <= *p);
            let effect_settled = match (&race, &best) {
                (None, _) => true,
                (Some(_), Some((e, _))) => ceiling <= *e,
                (Some(_), None) => false,
            };
            if largest_settled && effect_settled {
                break 'walk;
            }
            if largest.as_ref().is_none_or(|(p, l)| power > *p || (power == *p && v.voter < l.voter)) {
                largest = Some((power.clone(), v.clone()));
            }
            if let Some((leader, runner_up)) = race {
                let mut one = Tally::default();
                one.add(voting_type, &v.choice, &v.voting_power);
                let zero = BigDecimal::zero();
                let effect = one.scores.get(&leader).unwrap_or(&zero) - one.scores.get(&runner_up).unwrap_or(&zero);
                if effect > zero
                    && best.as_ref().is_none_or(|(e, b)| effect > *e || (effect == *e && v.voter < b.voter))
                {
                    best = Some((effect, v));
                }
            }
        }
        if !full {
            break;
        }
        page_size = (page_size * 4).min(LAST_WALK_PAGE);
    }
    Ok((largest.map(|(_, v)| v), best.map(|(e, v)| (v, e))))
}
