//! One entry of the feed of changes (migration 14): what a publication changed, in the order it
//! was published. Appended in the publication's transaction (`store::feed`), never updated, and
//! pruned oldest first once past the retention.
use sea_orm::entity::prelude::*;

use crate::contract::feed::FeedKind;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "feed_entries")]
pub struct Model {
    /// Only grows: publications take the writer's turn one at a time, so entries commit in
    /// sequence order, and the sequence is never reused (AUTOINCREMENT on SQLite, a sequence on
    /// PostgreSQL), even once the newest entries were pruned.
    #[sea_orm(primary_key)]
    pub seq: i64,
    /// The revision that published the change.
    pub revision_id: i64,
    pub published_ms: i64,
    pub dao_id: String,
    pub kind: FeedKind,
    /// The public id of what the entry is about (`ev_…` or `sg_…`; a proposal's moment: the
    /// proposal's key).
    pub item_id: String,
    /// The key of the proposal the entry is about, when it is about one (migration 32): what a
    /// `proposalKeys` filter matches. The voters it is about are rows of `feed_entry_voters`.
    pub proposal_key: Option<String>,
    /// The event or signal as published (`store::feed::FeedBody`, JSON): later corrections and
    /// clearings are entries of their own and never rewrite this one.
    pub body: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
