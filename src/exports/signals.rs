//! The `signals` table of a DAO: oldest first (`detected_ms`, then the row id as the tie-break),
//! read in keyset pages of `ix_signals_dao_time` (`dao_id, detected_ms DESC, id DESC`) walked
//! backwards, never a sort; each page's subject keys in one batched look-up per subject kind
//! (`store::signals::with_subjects`, as the API reads signals).
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, after_asc, text};
use crate::store::entities::signal;
use crate::store::keys;
use crate::store::signals::{SignalRecord, with_subjects};

/// Sends every signal of `dao_id` as rows of `contract::exports::SIGNALS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    use signal::Column as S;
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut q = signal::Entity::find().filter(S::DaoId.eq(dao_id));
        if let Some(k) = after {
            q = q.filter(after_asc(S::DetectedMs, S::Id, k));
        }
        let page = q.order_by_asc(S::DetectedMs).order_by_asc(S::Id).limit(BATCH_ROWS).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|s| (s.detected_ms, s.id));
        out.send(with_subjects(db, page).await?.into_iter().map(row).collect()).await?;
        if !full {
            return Ok(());
        }
    }
}

fn row(r: SignalRecord) -> Vec<Cell> {
    let s = r.signal;
    vec![
        Cell::Text(s.dao_id),
        Cell::Text(keys::signal_id(&s.natural_key)),
        Cell::Text(s.kind.as_str().to_owned()),
        Cell::Text(s.severity.as_str().to_owned()),
        Cell::Text(s.subject_kind.as_str().to_owned()),
        Cell::Text(s.subject_source.as_str().to_owned()),
        Cell::Text(s.subject_external_id),
        text(r.subject.map(|subject| subject.key)),
        Cell::Timestamp(s.detected_ms),
        Cell::Text(s.summary),
        // The stored text itself: exact numbers are JSON strings in it.
        Cell::Text(s.evidence),
    ]
}
