//! The shared side of rate limiting (`edge::rate` counts in memory): each process adds the
//! requests it admitted per key and window, and reads every process's total back, in one
//! statement per batch.
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr};

/// Requests one process admitted for a key in a window since it last reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub key: String,
    pub window_start_ms: i64,
    /// 0 is a read: the total comes back all the same.
    pub admitted: i64,
    /// When the window stops mattering (it still weighs on the next one).
    pub expires_ms: i64,
}

/// Rows per statement (4 values each stays well under SQLite's 32,766 variables).
const BATCH: usize = 1_000;

/// Adds each report to its window's count and returns `(key, window_start_ms, total)`.
pub async fn exchange(db: &impl ConnectionTrait, reports: &[Report]) -> Result<Vec<(String, i64, i64)>, DbErr> {
    let table = Alias::new("rate_counts");
    let [key, start, count, expires] = ["key", "window_start_ms", "count", "expires_ms"].map(Alias::new);
    let mut totals = Vec::with_capacity(reports.len());
    for chunk in reports.chunks(BATCH) {
        let mut insert = Query::insert();
        insert.into_table(table.clone()).columns([key.clone(), start.clone(), count.clone(), expires.clone()]);
        for r in chunk {
            insert.values_panic([
                r.key.clone().into(),
                r.window_start_ms.into(),
                r.admitted.into(),
                r.expires_ms.into(),
            ]);
        }
        insert
            .on_conflict(
                OnConflict::columns([key.clone(), start.clone()])
                    .value(
                        count.clone(),
                        Expr::col((table.clone(), count.clone()))
                            .add(Expr::col((Alias::new("excluded"), count.clone()))),
                    )
                    .to_owned(),
            )
            .returning(Query::returning().columns([key.clone(), start.clone(), count.clone()]));
        let statement = db.get_database_backend().build(&insert);
        for row in db.query_all_raw(statement).await? {
            totals.push((row.try_get("", "key")?, row.try_get("", "window_start_ms")?, row.try_get("", "count")?));
        }
    }
    Ok(totals)
}

/// Deletes windows that no longer weigh on any limit.
pub async fn sweep(db: &impl ConnectionTrait, now_ms: i64) -> Result<u64, DbErr> {
    let delete = Query::delete()
        .from_table(Alias::new("rate_counts"))
        .and_where(Expr::col(Alias::new("expires_ms")).lt(now_ms))
        .to_owned();
    Ok(db.execute_raw(db.get_database_backend().build(&delete)).await?.rows_affected())
}
