//! Forum topics and their posts.
use std::collections::{BTreeSet, HashMap};

use sea_orm::DbErr;

use super::Applier;
use crate::store::entities::{forum_post, forum_topic};
use crate::store::keys;
use crate::store::publish::Touched;
use crate::store::staging::{PostRecord, TopicRecord};
use crate::store::stored::Tags;
use crate::store::upsert::{Changes, TableCounts, by_key, kept, stored, upsert};

impl Applier<'_> {
    pub(super) async fn topics(&self, rows: &[TopicRecord], touched: &mut Touched) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let ids: Vec<String> = rows.iter().map(|r| r.external_id.clone()).collect();
        let stored = stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids).await?;
        let stored = by_key(stored, |m| (m.dao_id.clone(), m.external_id.clone()));
        let linked = self
            .stored_proposals(
                rows.iter().flat_map(|r| r.proposal_links.iter().map(|l| l.external_id.clone())).collect(),
            )
            .await?;
        let mut changes = Changes::default();
        for r in rows {
            let old = stored.get(&(r.dao_id.clone(), r.external_id.clone()));
            // The first link the store can resolve, preferring the topic's own DAO.
            let resolve = |same_dao: bool| {
                r.proposal_links.iter().find_map(|l| {
                    linked
                        .values()
                        .find(|p| {
                            p.source == l.source && p.external_id == l.external_id && (p.dao_id == r.dao_id) == same_dao
                        })
                        .map(|p| p.id)
                })
            };
            let desired = forum_topic::Model {
                id: old.map_or(0, |s| s.id),
                dao_id: r.dao_id.clone(),
                external_id: r.external_id.clone(),
                topic_key: keys::topic_key(&r.dao_id, &r.external_id),
                title: r.title.clone(),
                slug: r.slug.clone(),
                url: r.url.clone(),
                category_id: r.category_id,
                tags: r.tags.clone().map(Tags),
                author: r.author.clone().or_else(|| kept!(old, author)),
                posts_count: r.posts_count,
                reply_count: r.reply_count,
                views: r.views,
                like_count: r.like_count,
                excerpt: r.excerpt.clone().or_else(|| kept!(old, excerpt)),
                created_ms: r.created_ms,
                last_posted_ms: r.last_posted_ms,
                closed: r.closed,
                archived: r.archived,
                linked_proposal_id: resolve(true)
                    .or_else(|| resolve(false))
                    .or_else(|| old.and_then(|s| s.linked_proposal_id)),
                updated_ms: old.map_or(0, |s| s.updated_ms),
            };
            let now = self.now_ms;
            changes.offer(old, desired, |m| m.updated_ms = now);
        }
        let written: BTreeSet<(String, String)> =
            changes.rows.iter().map(|t| (t.dao_id.clone(), t.external_id.clone())).collect();
        let natural = [forum_topic::Column::DaoId, forum_topic::Column::ExternalId];
        upsert::<forum_topic::Entity>(self.txn, changes.rows, &natural, Some(forum_topic::Column::Id)).await?;
        let ids: Vec<String> = written.iter().map(|k| k.1.clone()).collect();
        for t in crate::store::upsert::stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids)
            .await?
        {
            if written.contains(&(t.dao_id.clone(), t.external_id.clone())) {
                touched.topics.insert(t.id);
                touched.daos.insert(t.dao_id);
            }
        }
        Ok(changes.counts)
    }

    pub(super) async fn posts(
        &self,
        rows: &[PostRecord],
        skipped: &mut Vec<String>,
        touched: &mut Touched,
    ) -> Result<TableCounts, DbErr> {
        if rows.is_empty() {
            return Ok(TableCounts::default());
        }
        let ids: BTreeSet<String> = rows.iter().map(|r| r.topic_external_id.clone()).collect();
        let topics = stored::<forum_topic::Entity, _>(self.txn, forum_topic::Column::ExternalId, ids).await?;
        let topics: HashMap<(String, String), i64> =
            topics.into_iter().map(|t| ((t.dao_id, t.external_id), t.id)).collect();
        let topic_ids: BTreeSet<i64> = topics.values().copied().collect();
        let stored = stored::<forum_post::Entity, _>(self.txn, forum_post::Column::TopicId, topic_ids).await?;
        let stored = by_key(stored, |m| (m.topic_id, m.external_id.clone()));
        let mut changes = Changes::default();
        for r in rows {
            let Some(&topic_id) = topics.get(&(r.dao_id.clone(), r.topic_external_id.clone())) else {
                skipped
                    .push(format!("post {} of topic {}: the topic is not stored", r.external_id, r.topic_external_id));
                continue;
            };
            let old = stored.get(&(topic_id, r.external_id.clone()));
            let desired = forum_post::Model {
                id: old.map_or(0, |s| s.id),
                topic_id,
                external_id: r.external_id.clone(),
                post_number: r.post_number,
                author: r.author.clone(),
                body: r.body.clone(),
                created_ms: r.created_ms,
            };
            changes.offer(old, desired, |_| {});
        }
        for p in &changes.rows {
            touched.topics.insert(p.topic_id);
        }
        let changed_topics: BTreeSet<i64> = changes.rows.iter().map(|p| p.topic_id).collect();
        for ((dao, _), id) in &topics {
            if changed_topics.contains(id) {
                touched.daos.insert(dao.clone());
            }
        }
        let natural = [forum_post::Column::TopicId, forum_post::Column::ExternalId];
        upsert::<forum_post::Entity>(self.txn, changes.rows, &natural, Some(forum_post::Column::Id)).await?;
        Ok(changes.counts)
    }
}
