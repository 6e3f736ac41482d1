//! The feed of changes: `feed_entries` holds what each publication changed, appended in its
//! transaction (`store::feed`).
//!
//! Indexes and the queries that use them:
//! - the primary key (`seq`): the feed in sequence order, and resuming after a sequence;
//! - `ix_feed_dao_seq` (`dao_id`, `seq`): the feed of one DAO;
//! - `ix_feed_kind_seq` (`kind`, `seq`) and `ix_feed_dao_kind_seq` (`dao_id`, `kind`, `seq`): a
//!   `kinds` filter reads each kind's index from the position and merges them
//!   (`store::feed::after`), so a rare kind never makes a page scan the other kinds;
//! - `ix_feed_published` (`published_ms`): pruning past the retention.
//!
//! The key that records how far pruning went (`feed_pruned_through`) lives in `settings`.
use sea_orm::Schema;
use sea_orm_migration::prelude::*;

use crate::store::entities::feed_entry;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEXES: &[(&str, &[&str])] = &[
    ("ix_feed_dao_seq", &["dao_id", "seq"]),
    ("ix_feed_kind_seq", &["kind", "seq"]),
    ("ix_feed_dao_kind_seq", &["dao_id", "kind", "seq"]),
    ("ix_feed_published", &["published_ms"]),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        let mut table = schema.create_table_from_entity(feed_entry::Entity);
        manager.create_table(table.if_not_exists().to_owned()).await?;
        for (name, columns) in INDEXES {
            let mut index = Index::create();
            index.if_not_exists().name(*name).table(Alias::new("feed_entries"));
            for column in *columns {
                index.col(Alias::new(*column));
            }
            manager.create_index(index).await?;
        }
        Ok(())
    }
}
