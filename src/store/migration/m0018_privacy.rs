//! Snapshot's `privacy` on each proposal (issue 29): `shutter` marks shielded voting, whose
//! choices stay encrypted until the proposal's scores are final. Added only where missing (a
//! fresh store has it from migration 1, which follows the entities).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if !manager.has_column("proposals", "privacy").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(Alias::new("proposals"))
                        .add_column(ColumnDef::new(Alias::new("privacy")).string().null())
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
