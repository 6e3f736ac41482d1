//! The `governance_events` table of a DAO: oldest first (`occurred_ms`, then the row id as the
//! tie-break), read in keyset pages of `ix_events_dao_time` (`dao_id, occurred_ms DESC, id DESC`)
//! walked backwards, never a sort; each row's subject key comes with it, joined by primary key
//! from `proposals` or `forum_topics` (`store::events::rows_sql`, as the API reads events).
use sea_orm::{ConnectionTrait, FromQueryResult, Statement, Value};

use super::writer::Cell;
use super::{BATCH_ROWS, Batches, integer, text};
use crate::store::events::{EventRow, rows_sql};
use crate::store::keys;

/// Sends every governance event of `dao_id` as rows of `contract::exports::GOVERNANCE_EVENTS`.
pub async fn read(db: &impl ConnectionTrait, dao_id: &str, out: Batches) -> anyhow::Result<()> {
    let backend = db.get_database_backend();
    let mut after: Option<(i64, i64)> = None;
    loop {
        let mut values: Vec<Value> = vec![dao_id.into()];
        // The leading `occurred_ms >= t` is implied by the rest; it lets the planners seek (see
        // `exports::after_asc`).
        let seek = match after {
            Some((t, id)) => {
                values.extend([Value::from(t), Value::from(t), Value::from(t), Value::from(id)]);
                " AND e.occurred_ms >= $2 AND (e.occurred_ms > $3 OR (e.occurred_ms = $4 AND e.id > $5))"
            }
            None => "",
        };
        values.push(Value::from(BATCH_ROWS as i64));
        let sql = rows_sql(&format!(
            "WHERE e.dao_id = $1{seek} ORDER BY e.occurred_ms ASC, e.id ASC LIMIT ${}",
            values.len()
        ));
        let page = EventRow::find_by_statement(Statement::from_sql_and_values(backend, sql, values)).all(db).await?;
        let full = page.len() as u64 == BATCH_ROWS;
        after = page.last().map(|e| (e.occurred_ms, e.id));
        out.send(page.into_iter().map(row).collect()).await?;
        if !full {
            return Ok(());
        }
    }
}

fn row(e: EventRow) -> Vec<Cell> {
    vec![
        Cell::Text(e.dao_id),
        Cell::Text(keys::event_id(&e.natural_key)),
        Cell::Text(e.kind.as_str().to_owned()),
        Cell::Timestamp(e.occurred_ms),
        Cell::Text(e.subject_kind.as_str().to_owned()),
        Cell::Text(e.subject_source.as_str().to_owned()),
        Cell::Text(e.subject_external_id),
        text(e.subject_key),
        text(e.actor),
        text(e.url),
        text(e.snapshot_id),
        text(e.tx_hash),
        integer(e.block_number),
        // The stored text itself: the writers store exact values as JSON strings.
        text(e.details),
    ]
}
