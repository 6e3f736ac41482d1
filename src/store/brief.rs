//! A DAO brief: everything an agent needs about one DAO, in a fixed number of queries.
//!
//! Queries: the DAO with its summary, sources and watermarks (4, `daos::get`); then, only when the
//! DAO has been ingested: active proposals (1), recently closed proposals (1), their stored tallies
//! (1, `store::facts`: never their votes), top voters (1), top
//! delegates (1), the stored voters among both (1, for their ENS names: `voters::ens_names`),
//! recent events (1), latest signals (1). Every list is capped by `contract::events::BRIEF`.
use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect, Statement,
    StreamTrait, Value,
};

use super::daos::{self, DaoRecord};
use super::entities::{delegate, proposal, voter_dao_stat};
use super::events::{self, EventFilter, EventRow, SUBJECT_JOIN, to_i64};
use crate::contract::events::BRIEF;
use crate::contract::signals::{Severity, SignalKind};
use crate::contract::vocabulary::{DaoId, ItemKind, ProposalState, SourceKind};
use crate::rules::tally::Tally;

/// A proposal with the tally of its ingested votes.
#[derive(Debug, Clone)]
pub struct TalliedProposal {
    pub proposal: proposal::Model,
    pub tally: Tally,
}

/// A signal with its subject's title, key and link.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct SignalRow {
    pub id: i64,
    pub natural_key: String,
    pub dao_id: String,
    pub kind: SignalKind,
    pub severity: Severity,
    pub subject_kind: ItemKind,
    pub subject_external_id: String,
    pub subject_source: SourceKind,
    pub detected_ms: i64,
    pub summary: String,
    pub subject_key: Option<String>,
    pub subject_title: Option<String>,
    pub subject_url: Option<String>,
}

/// The ingested part of a brief.
#[derive(Debug, Clone)]
pub struct BriefData {
    pub active: Vec<TalliedProposal>,
    pub recently_closed: Vec<TalliedProposal>,
    pub top_voters: Vec<voter_dao_stat::Model>,
    pub top_delegates: Vec<delegate::Model>,
    /// The ENS names of the top voters and delegates the store knows, by canonical address.
    pub known_voters: HashMap<String, String>,
    pub recent_events: Vec<EventRow>,
    pub signals: Vec<SignalRow>,
}

/// The brief of DAO `dao_id`: `None` when the DAO is unknown; `data` is `None` when nothing has
/// been published for it (registry only).
pub async fn get<C: ConnectionTrait + StreamTrait>(
    db: &C,
    dao_id: &DaoId,
) -> Result<Option<(DaoRecord, Option<BriefData>)>, DbErr> {
    let Some(record) = daos::get(db, dao_id.as_str()).await? else {
        return Ok(None);
    };
    if record.summary.is_none() {
        return Ok(Some((record, None)));
    }
    // Soonest deadline first: what is about to be decided.
    let active = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(dao_id))
        .filter(proposal::Column::State.eq(ProposalState::Active.as_str()))
        .order_by_asc(proposal::Column::EndMs)
        .order_by_asc(proposal::Column::Id)
        .limit(BRIEF.active_proposals)
        .all(db)
        .await?;
    let closed = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(dao_id))
        .filter(proposal::Column::State.is_in(ProposalState::CLOSED.iter().map(|s| s.as_str())))
        .order_by_desc(proposal::Column::EndMs)
        .order_by_desc(proposal::Column::Id)
        .limit(BRIEF.recently_closed)
        .all(db)
        .await?;
    let mut tallies = tallies(db, active.iter().chain(&closed)).await?;
    let mut tallied = |ps: Vec<proposal::Model>| -> Vec<TalliedProposal> {
        ps.into_iter()
            .map(|p| TalliedProposal { tally: tallies.remove(&p.id).unwrap_or_default(), proposal: p })
            .collect()
    };
    let active = tallied(active);
    let recently_closed = tallied(closed);
    let top_voters = voter_dao_stat::Entity::find()
        .filter(voter_dao_stat::Column::DaoId.eq(dao_id))
        .order_by_desc(voter_dao_stat::Column::VpSort)
        .order_by_asc(voter_dao_stat::Column::Voter)
        .limit(BRIEF.top_voters)
        .all(db)
        .await?;
    let top_delegates = delegate::Entity::find()
        .filter(delegate::Column::DaoId.eq(dao_id))
        .order_by_desc(delegate::Column::VpSort)
        .order_by_asc(delegate::Column::Address)
        .limit(BRIEF.top_delegates)
        .all(db)
        .await?;
    let named = top_voters.iter().map(|v| v.voter.clone()).chain(top_delegates.iter().map(|d| d.address.clone()));
    let known_voters = super::voters::ens_names(db, named).await?;
    let filter = EventFilter { dao_id: Some(dao_id.clone()), ..Default::default() };
    let (recent_events, _) = events::list(db, &filter, BRIEF.recent_activity, 0, false).await?;
    let signals = latest_signals(db, dao_id, BRIEF.open_signals).await?;
    let data = BriefData { active, recently_closed, top_voters, top_delegates, known_voters, recent_events, signals };
    Ok(Some((record, Some(data))))
}

/// Exact tallies of the ingested votes of `proposals`, from their stored facts (one query).
async fn tallies<'a, C: ConnectionTrait>(
    db: &C,
    proposals: impl Iterator<Item = &'a proposal::Model>,
) -> Result<HashMap<i64, Tally>, DbErr> {
    let ids: Vec<i64> = proposals.map(|p| p.id).collect();
    Ok(super::facts::load(db, &ids).await?.into_iter().map(|(id, f)| (id, f.tally)).collect())
}

/// The latest `limit` signals of a DAO, newest first.
async fn latest_signals(db: &impl ConnectionTrait, dao_id: &DaoId, limit: u64) -> Result<Vec<SignalRow>, DbErr> {
    let sql = format!(
        "SELECT x.id, x.natural_key, x.dao_id, x.kind, x.severity, x.subject_kind, x.subject_external_id, x.subject_source,
                x.detected_ms, x.summary, {SUBJECT_JOIN}
         FROM signals x
         LEFT JOIN proposals p ON p.id = x.proposal_id
         LEFT JOIN forum_topics t ON t.id = x.topic_id
         WHERE x.dao_id = $1
         ORDER BY x.detected_ms DESC, x.id DESC
         LIMIT $2"
    );
    let values: Vec<Value> = vec![dao_id.into(), to_i64(limit).into()];
    SignalRow::find_by_statement(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).all(db).await
}
