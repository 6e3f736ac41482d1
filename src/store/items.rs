//! Read queries: proposals and forum topics by their upstream identifiers, for items, lookup and
//! evidence. Every function is one query on an index (`ix_proposals_external`,
//! `ix_topics_external`, the natural keys, `ix_posts_topic_time`) and returns a bounded number of rows.
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::{Expr, ExprTrait, Func, Query},
};

use super::entities::{dao, forum_post, forum_topic, proposal};
use crate::contract::vocabulary::{DaoId, ProposalSource};

/// Proposals with `external_id`, of any source (or of `source` when given), in `dao_id` when
/// given; at most `limit`, ordered by DAO then source.
pub async fn proposals_by_external_id(
    db: &impl ConnectionTrait,
    external_id: &str,
    source: Option<&str>,
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    let mut q = proposal::Entity::find().filter(proposal::Column::ExternalId.eq(external_id));
    if let Some(source) = source {
        q = q.filter(proposal::Column::Source.eq(source));
    }
    if let Some(dao_id) = dao_id {
        q = q.filter(proposal::Column::DaoId.eq(dao_id));
    }
    q.order_by_asc(proposal::Column::DaoId).order_by_asc(proposal::Column::Source).limit(limit).all(db).await
}

/// The Snapshot proposal `external_id` of the DAO(s) whose Snapshot space is `space` (compared
/// case-insensitively), in `dao_id` when given.
pub async fn snapshot_proposals_in_space(
    db: &impl ConnectionTrait,
    space: &str,
    external_id: &str,
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<proposal::Model>, DbErr> {
    let daos_of_space = Query::select()
        .column(dao::Column::Id)
        .from(dao::Entity)
        .and_where(Expr::expr(Func::lower(Expr::col(dao::Column::SnapshotSpace))).eq(space.to_lowercase()))
        .to_owned();
    let mut q = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(external_id))
        .filter(proposal::Column::Source.eq(ProposalSource::Snapshot))
        .filter(proposal::Column::DaoId.in_subquery(daos_of_space));
    if let Some(dao_id) = dao_id {
        q = q.filter(proposal::Column::DaoId.eq(dao_id));
    }
    q.order_by_asc(proposal::Column::DaoId).limit(limit).all(db).await
}

/// One proposal by its natural key.
pub async fn proposal(
    db: &impl ConnectionTrait,
    dao_id: &str,
    source: &str,
    external_id: &str,
) -> Result<Option<proposal::Model>, DbErr> {
    proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(dao_id))
        .filter(proposal::Column::Source.eq(source))
        .filter(proposal::Column::ExternalId.eq(external_id))
        .one(db)
        .await
}

/// Proposals by row id (one `IN (...)` query); order not guaranteed.
pub async fn proposals_by_ids(db: &impl ConnectionTrait, ids: &[i64]) -> Result<Vec<proposal::Model>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    proposal::Entity::find().filter(proposal::Column::Id.is_in(ids.iter().copied())).all(db).await
}

/// Forum topics with `external_id`, in `dao_id` when given; at most `limit`, ordered by DAO.
pub async fn topics_by_external_id(
    db: &impl ConnectionTrait,
    external_id: &str,
    dao_id: Option<&DaoId>,
    limit: u64,
) -> Result<Vec<forum_topic::Model>, DbErr> {
    let mut q = forum_topic::Entity::find().filter(forum_topic::Column::ExternalId.eq(external_id));
    if let Some(dao_id) = dao_id {
        q = q.filter(forum_topic::Column::DaoId.eq(dao_id));
    }
    q.order_by_asc(forum_topic::Column::DaoId).limit(limit).all(db).await
}

/// The opening post of a topic (lowest post number).
pub async fn first_post(db: &impl ConnectionTrait, topic_id: i64) -> Result<Option<forum_post::Model>, DbErr> {
    forum_post::Entity::find()
        .filter(forum_post::Column::TopicId.eq(topic_id))
        .order_by_asc(forum_post::Column::PostNumber)
        .order_by_asc(forum_post::Column::Id)
        .one(db)
        .await
}

/// Forum topics linked to proposal row `proposal_id`, newest first, at most `limit`.
pub async fn topics_linked_to(
    db: &impl ConnectionTrait,
    proposal_id: i64,
    limit: u64,
) -> Result<Vec<forum_topic::Model>, DbErr> {
    forum_topic::Entity::find()
        .filter(forum_topic::Column::LinkedProposalId.eq(proposal_id))
        .order_by_desc(forum_topic::Column::CreatedMs)
        .order_by_desc(forum_topic::Column::Id)
        .limit(limit)
        .all(db)
        .await
}
