//! What a proposal's votes say, stored at publication (`store::facts`): the exact tally and the
//! votes the signal rules weigh. Numbers are exact decimal text.
use sea_orm::entity::prelude::*;

use crate::store::stored::TallyScores;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposal_facts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    /// The voting type the tally was computed with (a change of type recomputes it).
    pub voting_type: Option<String>,
    /// Votes held for the proposal.
    pub votes: i64,
    pub votes_counted: i64,
    pub votes_unreadable: i64,
    /// Exact sum of the counted votes' power.
    pub total_power: String,
    /// 1-based choice → (exact score, number of counted votes giving it a share), stored as the
    /// JSON object `{"<choice>":["<score>",<votes>]}` ([`TallyScores`]).
    pub scores: TallyScores,
    /// JSON of the largest vote (`rules::signals::VoteInput`), when any vote is readable.
    pub largest: Option<String>,
    /// JSON `[vote, effect]`: the vote with the largest effect on the margin, when one helps the leader.
    pub most_effective: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
