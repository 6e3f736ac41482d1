//! How each on-chain proposal's governor counts (issue 29): `proposals.counting_mode` and
//! `proposals.clock_mode` keep the governor's `COUNTING_MODE()` and `CLOCK_MODE()` verbatim
//! (`contract::counting` reads them). A fresh store already has the columns (migration 1 follows
//! the entities), so each is added only where missing.
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in ["counting_mode", "clock_mode"] {
            if !manager.has_column("proposals", column).await? {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new("proposals"))
                            .add_column(ColumnDef::new(Alias::new(column)).string().null())
                            .to_owned(),
                    )
                    .await?;
            }
        }
        Ok(())
    }
}
