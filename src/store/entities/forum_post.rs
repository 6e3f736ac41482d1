//! One post of a forum topic.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "forum_posts")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "post_natural")]
    pub topic_id: i64,
    #[sea_orm(unique_key = "post_natural")]
    pub external_id: String,
    pub post_number: i64,
    pub author: Option<String>,
    pub body: String,
    pub created_ms: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
