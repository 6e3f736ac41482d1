//! A proposal's simulated execution at one block (migration 31): what its actions would do if
//! executed on that block's state, as `rules::actions::simulation::Simulation` JSON. The latest
//! block's row is served; older rows of the proposal are removed when a newer one is kept.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proposal_simulations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub proposal_id: i64,
    /// The block whose state the actions were executed on.
    #[sea_orm(primary_key, auto_increment = false)]
    pub block_number: i64,
    pub dao_id: String,
    /// The proposal's state when it was simulated (`ProposalState` text): a new state redoes it.
    pub proposal_state: String,
    /// `success`, `reverted` or `failed` (`simulation::Outcome`).
    pub outcome: String,
    /// `simulation::Simulation` as JSON.
    pub result: String,
    pub simulated_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
