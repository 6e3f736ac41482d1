//! A Discourse topic, linked to a proposal when its posts cite one.
use sea_orm::entity::prelude::*;

use crate::store::stored::Tags;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "forum_topics")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "topic_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "topic_natural")]
    pub external_id: String,
    #[sea_orm(unique)]
    pub topic_key: String,
    pub title: String,
    pub slug: String,
    pub url: String,
    pub category_id: Option<i64>,
    /// JSON array of tags.
    pub tags: Option<Tags>,
    pub author: Option<String>,
    pub posts_count: i64,
    pub reply_count: i64,
    pub views: i64,
    pub like_count: i64,
    pub excerpt: Option<String>,
    pub created_ms: i64,
    pub last_posted_ms: Option<i64>,
    pub closed: bool,
    pub archived: bool,
    pub linked_proposal_id: Option<i64>,
    pub updated_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
