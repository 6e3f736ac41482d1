//! The export catalogue (`export_files`, issue 30): one row per (DAO, table, format) file, keyed
//! by its primary key (every read names all three, or the DAO: a prefix of it). The disk budget
//! sums and orders the whole table, which holds at most DAOs × tables × formats rows.
use sea_orm::Schema;
use sea_orm_migration::prelude::*;

use crate::store::entities::export_file;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let schema = Schema::new(manager.get_database_backend());
        manager.create_table(schema.create_table_from_entity(export_file::Entity).if_not_exists().to_owned()).await
    }
}
