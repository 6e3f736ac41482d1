//! One run of an importer or connector; the audit trail behind freshness.
use sea_orm::entity::prelude::*;

use crate::contract::vocabulary::{RunStatus, RunTrigger};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ingestion_runs")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub trigger: RunTrigger,
    pub dao_filter: Option<String>,
    pub source_filter: Option<String>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// When the process running it last said it was alive (`store::staging::beat`); `None` on
    /// runs recorded before heartbeats.
    pub heartbeat_ms: Option<i64>,
    /// As recorded; `status_at` tells a stopped `running` run from a live one.
    pub status: RunStatus,
    pub rows_written: i64,
    pub rows_skipped: i64,
    pub error: Option<String>,
    pub revision_id: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// The status as it stands at `now_ms`: a run still marked `running` whose process stopped
    /// beating is `abandoned`, whether or not a later run has recorded it so yet.
    pub fn status_at(&self, now_ms: i64) -> RunStatus {
        let stale = self.heartbeat_ms.unwrap_or(self.started_ms) < crate::store::staging::stale_before(now_ms);
        if self.status == RunStatus::Running && stale { RunStatus::Abandoned } else { self.status }
    }
}
