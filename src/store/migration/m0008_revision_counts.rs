//! A revision carries the dataset's row counts as of its publication: voters, forum topics,
//! governance events and signals. `/v1/system/freshness` read them with four `COUNT(*)`s per
//! request, a cost that grew with the store; publication counts them once, inside its
//! transaction, and serving reads one row.
//!
//! The counts belong to the revision because nothing they count changes without one (a run that
//! changes nothing served publishes nothing, and then the counts stand). An existing store's
//! serving revision is counted here, so the freshness answer is right before the next
//! publication; older revisions keep 0 (nothing reads them).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The counted columns of `data_revisions`, each with the table it counts.
pub const COUNTS: &[(&str, &str)] = &[
    ("voters", "voters"),
    ("forum_topics", "forum_topics"),
    ("governance_events", "governance_events"),
    ("signals", "signals"),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        // Migration 1 follows the live entities: a store created after this migration was written
        // already has the columns.
        for (column, _) in COUNTS {
            if !manager.has_column("data_revisions", column).await? {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new("data_revisions"))
                            .add_column(ColumnDef::new(Alias::new(*column)).big_integer().not_null().default(0))
                            .to_owned(),
                    )
                    .await?;
            }
        }
        let sets: Vec<String> = COUNTS.iter().map(|(c, t)| format!("{c} = (SELECT COUNT(*) FROM {t})")).collect();
        db.execute_unprepared(&format!(
            "UPDATE data_revisions SET {} WHERE id = (SELECT MAX(id) FROM data_revisions)",
            sets.join(", ")
        ))
        .await?;
        Ok(())
    }
}
