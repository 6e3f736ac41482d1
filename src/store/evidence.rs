//! Read queries behind proposal evidence: the exact tally and the largest votes from one streamed
//! query, the proposal's governance events, and the DAO check.
use futures_util::TryStreamExt;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::entities::{dao, governance_event, proposal, vote};
use super::tally::Tally;

pub use super::entities::proposal::SAMPLE_ORIGIN as SAMPLE_PROPOSAL_ORIGIN;

/// The tally of every ingested vote of a proposal and its largest votes.
#[derive(Debug, Clone, Default)]
pub struct VoteSummary {
    pub tally: Tally,
    /// The largest votes by voting power (ties: voter address), at most the number asked for.
    pub largest: Vec<vote::Model>,
}

/// Streams the proposal's votes once, largest first (index `ix_votes_proposal_power`), adding
/// each to the exact tally and keeping the first `top`: memory stays bounded whatever the
/// number of votes.
pub async fn vote_summary(
    db: &DatabaseConnection,
    proposal: &proposal::Model,
    top: usize,
) -> Result<VoteSummary, DbErr> {
    let mut stream = vote::Entity::find()
        .filter(vote::Column::ProposalId.eq(proposal.id))
        .order_by_desc(vote::Column::VpSort)
        .order_by_asc(vote::Column::Voter)
        .stream(db)
        .await?;
    let mut summary = VoteSummary::default();
    while let Some(v) = stream.try_next().await? {
        summary.tally.add(proposal.voting_type.as_deref(), &v.choice, &v.voting_power);
        if summary.largest.len() < top {
            summary.largest.push(v);
        }
    }
    Ok(summary)
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
