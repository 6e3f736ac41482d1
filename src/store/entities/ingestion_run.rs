//! One run of an importer or connector; the audit trail behind freshness.
use std::time::Duration;

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

/// How often a process running an ingestion run says it is alive (`store::staging::beat`).
pub const HEARTBEAT: Duration = Duration::from_secs(30);
/// A run still marked `running` whose last beat is older than this belongs to a process that
/// died: four beats missed. A beat can wait up to the busy timeout behind another process's
/// publication on SQLite, and a missed beat or two is no death.
pub const STALE_AFTER: Duration = Duration::from_secs(4 * HEARTBEAT.as_secs());

/// Runs that last beat before this time, seen at `now_ms`, are abandoned.
pub fn stale_before(now_ms: i64) -> i64 {
    now_ms - STALE_AFTER.as_millis() as i64
}

impl Model {
    /// The status as it stands at `now_ms`: a run still marked `running` whose process stopped
    /// beating is `abandoned`, whether or not a later run has recorded it so yet.
    pub fn status_at(&self, now_ms: i64) -> RunStatus {
        let stale = self.heartbeat_ms.unwrap_or(self.started_ms) < stale_before(now_ms);
        if self.status == RunStatus::Running && stale { RunStatus::Abandoned } else { self.status }
    }
}
