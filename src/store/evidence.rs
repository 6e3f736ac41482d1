//! Read queries behind proposal evidence: the stored exact tally and the largest votes (one
//! indexed page), the proposal's governance events, and the DAO check. Nothing here reads a
//! proposal's votes beyond the few it shows: evidence of a 100,000-vote proposal costs what a
//! 100-vote one costs.
use sea_orm::{
    ColumnTrait, DatabaseConnection, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect,
};

use super::entities::{dao, governance_event, proposal, vote};
use super::keysets::VoteOrder;
use crate::rules::tally::Tally;

pub use super::entities::proposal::SAMPLE_ORIGIN as SAMPLE_PROPOSAL_ORIGIN;

/// The tally of every ingested vote of a proposal and its largest votes.
#[derive(Debug, Clone, Default)]
pub struct VoteSummary {
    pub tally: Tally,
    /// The largest votes by voting power (ties: voter address), at most the number asked for.
    pub largest: Vec<vote::Model>,
}

/// The proposal's stored tally (`store::facts`, computed at publication) and its `top` largest
/// votes in power order (`store::vote_arms`).
pub async fn vote_summary(
    db: &DatabaseConnection,
    proposal: &proposal::Model,
    top: usize,
) -> Result<VoteSummary, DbErr> {
    let tally = super::facts::get(db, proposal.id).await?.map(|f| f.tally).unwrap_or_default();
    let statement = super::vote_arms::statement(
        db.get_database_backend(),
        proposal.id,
        Default::default(),
        VoteOrder::Power,
        None,
        top as u64,
        super::vote_arms::Read::Votes,
    );
    let largest = vote::Model::find_by_statement(statement).all(db).await?;
    Ok(VoteSummary { tally, largest })
}

/// The governance events of a proposal, oldest first, at most `limit` (index `ix_events_proposal`).
pub async fn events(
    db: &DatabaseConnection,
    proposal_id: i64,
    limit: u64,
) -> Result<Vec<governance_event::Model>, DbErr> {
    governance_event::Entity::find()
        .filter(governance_event::Column::ProposalId.eq(proposal_id))
        .order_by_asc(governance_event::Column::OccurredMs)
        .order_by_asc(governance_event::Column::Id)
        .limit(limit)
        .all(db)
        .await
}

/// Whether `dao_id` is registered.
pub async fn dao_exists(db: &DatabaseConnection, dao_id: &str) -> Result<bool, DbErr> {
    Ok(dao::Entity::find_by_id(dao_id.to_owned()).one(db).await?.is_some())
}
