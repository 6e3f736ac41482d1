//! Where one DAO's data of one kind comes from (snapshot space, forum, governor, tally export).
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::SourceKind;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "data_sources")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique_key = "data_source_natural")]
    pub dao_id: String,
    #[sea_orm(unique_key = "data_source_natural")]
    pub kind: SourceKind,
    /// The upstream handle: Snapshot space, forum base URL, governor address, or dataset name.
    pub locator: String,
    /// A link a person or agent can open to see the upstream.
    pub url: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
