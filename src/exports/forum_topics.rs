//! The `forum_topics` table of a DAO: oldest first (`created_ms`, then the row id as the
//! tie-break), read in keyset pages of `ix_topics_dao_created` (`dao_id, created_ms DESC, id
//! DESC`) walked backwards, never a sort; each page's linked proposal keys in one batched look-up
//! by primary key.
use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, after_asc, integer, text, timestamp};
use crate::store::entities::{forum_topic, proposal};

/// Sends every forum topic of `dao_id` as rows of `contract::exports::FORUM_TOPICS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use forum_topic::Column as T;
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut q = forum_topic::Entity::find().filter(T::DaoId.eq(dao_id));
        if let Some(k) = after {
            q = q.filter(after_asc(T::CreatedMs, T::Id, k));
        }
        let page = q.order_by_asc(T::CreatedMs).order_by_asc(T::Id).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|t| (t.created_ms, t.id));
        let linked: Vec<i64> = page.iter().filter_map(|t| t.linked_proposal_id).collect();
        let keys: HashMap<i64, String> = if linked.is_empty() {
            HashMap::new()
        } else {
            proposal::Entity::find()
                .select_only()
                .columns([proposal::Column::Id, proposal::Column::ProposalKey])
                .filter(proposal::Column::Id.is_in(linked))
                .into_tuple::<(i64, String)>()
                .all(db)
                .await?
                .into_iter()
                .collect()
        };
        let rows = page
            .into_iter()
            .map(|t| {
                let linked = text(t.linked_proposal_id.and_then(|id| keys.get(&id).cloned()));
                vec![
                    Cell::Text(t.dao_id),
                    Cell::Text(t.topic_key),
                    Cell::Text(t.external_id),
                    Cell::Text(t.title),
                    Cell::Text(t.slug),
                    Cell::Text(t.url),
                    integer(t.category_id),
                    text(t.tags.map(|tags| tags.to_json())),
                    text(t.author),
                    Cell::Integer(t.posts_count),
                    Cell::Integer(t.reply_count),
                    Cell::Integer(t.views),
                    Cell::Integer(t.like_count),
                    text(t.excerpt),
                    Cell::Timestamp(t.created_ms),
                    timestamp(t.last_posted_ms),
                    Cell::Boolean(t.closed),
                    Cell::Boolean(t.archived),
                    linked,
                ]
            })
            .collect();
        out.send(rows).await?;
        if !full {
            return Ok(());
        }
    }
}
