//! Read queries: forum topics, keyset-paginated, with what a topic shows batched per page.
use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder};

use super::entities::{forum_post, forum_topic, proposal};
use crate::contract::vocabulary::DaoId;

/// A topic with its opening post and linked proposal.
pub type TopicRecord = (forum_topic::Model, Option<forum_post::Model>, Option<proposal::Model>);

impl forum_topic::Model {
    pub fn keyset(&self) -> super::keysets::TimeAfter {
        super::keysets::TimeAfter { ms: self.created_ms, id: self.id }
    }
}

/// Up to `limit` topics newest first (`created_ms` desc, id desc) after a keyset position;
/// three queries per page whatever its size.
pub async fn list(
    db: &impl ConnectionTrait,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> Result<Vec<TopicRecord>, DbErr> {
    let statement = list_statement(db.get_database_backend(), dao_id, window, after, limit);
    let topics = forum_topic::Model::find_by_statement(statement).all(db).await?;
    attach(db, topics).await
}

/// The statement [`list`] runs.
pub fn list_statement(
    backend: sea_orm::DbBackend,
    dao_id: Option<&DaoId>,
    window: Option<(i64, i64)>,
    after: Option<super::keysets::TimeAfter>,
    limit: u64,
) -> sea_orm::Statement {
    use forum_topic::Column as C;
    let mut q = forum_topic::Entity::find();
    if let Some(d) = dao_id {
        q = q.filter(C::DaoId.eq(d));
    }
    if let Some((from, to)) = window {
        q = q.filter(C::CreatedMs.gte(from)).filter(C::CreatedMs.lte(to));
    }
    if let Some(after) = after {
        q = q.filter(super::after_desc(C::CreatedMs, C::Id, (after.ms, after.id)));
    }
    super::plans::page(backend, q.order_by_desc(C::CreatedMs).order_by_desc(C::Id), limit)
}

pub async fn by_key(db: &impl ConnectionTrait, key: &str) -> Result<Option<TopicRecord>, DbErr> {
    let topic = forum_topic::Entity::find().filter(forum_topic::Column::TopicKey.eq(key)).one(db).await?;
    Ok(attach(db, topic.into_iter().collect()).await?.pop())
}

async fn attach(db: &impl ConnectionTrait, topics: Vec<forum_topic::Model>) -> Result<Vec<TopicRecord>, DbErr> {
    if topics.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = topics.iter().map(|t| t.id).collect();
    let mut first_posts: HashMap<i64, forum_post::Model> = forum_post::Entity::find()
        .filter(forum_post::Column::TopicId.is_in(ids))
        .filter(forum_post::Column::PostNumber.eq(1))
        .all(db)
        .await?
        .into_iter()
        .map(|p| (p.topic_id, p))
        .collect();
    let linked: Vec<i64> = topics.iter().filter_map(|t| t.linked_proposal_id).collect();
    let proposals: HashMap<i64, proposal::Model> =
        super::items::proposals_by_ids(db, &linked).await?.into_iter().map(|p| (p.id, p)).collect();
    Ok(topics
        .into_iter()
        .map(|t| {
            let post = first_posts.remove(&t.id);
            let linked = t.linked_proposal_id.and_then(|id| proposals.get(&id).cloned());
            (t, post, linked)
        })
        .collect())
}
