//! The publication of what time alone made due (issue 48): the scheduler inside `serve` calls
//! [`publish_due`] every look, and waits [`wait_ms`] before the next. What is due is
//! `store::moments`' (and a voting start's event, `store::events::due_by_time`); this module
//! takes the writers' turn and publishes it, with no ingestion run.
use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, TransactionTrait};

use super::moments::{next_moment, timed_due};
use super::publish::{self, Scope, Touched};
use crate::contract::feed::TIMED_ENTRY_TICK;

/// What [`publish_due`] published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub revision_id: i64,
}

/// Publishes what time alone made due at `now_ms` (a voting start's event, the timed moments),
/// when anything is: a publication of its own, in the writers' turn, with no ingestion run. The
/// scheduler inside `serve` calls it every tick; any number of processes may.
pub async fn publish_due(db: &DatabaseConnection, now_ms: i64) -> Result<Option<Published>, DbErr> {
    // A cheap look first, outside any writer's turn: most ticks find nothing.
    if super::events::due_by_time(db, now_ms).await?.is_empty() && timed_due(db, now_ms).await?.is_empty() {
        return Ok(None);
    }
    let txn = db.begin().await?;
    publish::take_writers_turn(&txn).await?;
    // Again inside the turn: another process may have published them meanwhile.
    let mut touched = Touched::default();
    for (id, dao) in super::events::due_by_time(&txn, now_ms).await? {
        touched.proposals.insert(id);
        touched.daos.insert(dao);
    }
    let timed = timed_due(&txn, now_ms).await?;
    if touched.is_empty() && timed.is_empty() {
        txn.rollback().await?;
        return Ok(None);
    }
    touched.daos.extend(timed.iter().map(|d| d.moment.dao_id.clone()));
    let kinds: BTreeSet<&str> = timed.iter().map(|d| d.kind.as_str()).collect();
    let summary = format!(
        "timed entries: {} voting start(s), {} moment(s) ({})",
        touched.proposals.len(),
        timed.len(),
        kinds.into_iter().collect::<Vec<_>>().join(", ")
    );
    let revision = publish::publish_at(&txn, None, &summary, &Scope::Touched(touched), None, now_ms).await?;
    txn.commit().await?;
    Ok(Some(Published { revision_id: revision.id }))
}

/// How long the scheduler waits before its next look, after one at `now_ms`: until the next
/// moment it knows of, at most a tick.
pub async fn wait_ms(db: &impl ConnectionTrait, now_ms: i64) -> Result<i64, DbErr> {
    let tick = TIMED_ENTRY_TICK.as_millis() as i64;
    Ok(next_moment(db, now_ms).await?.map_or(tick, |at| (at - now_ms).clamp(0, tick)))
}
