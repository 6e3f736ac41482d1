//! How a store failure is answered, for every layer that reads the store (`edge`, `push`, `api`):
//! unreachable means 503 (retry later), anything else is our defect (500). Which sea-orm errors
//! mean "the store cannot be reached now" is a fact about the database drivers, so it lives with
//! the store, and `contract` (which declares the codes) stays free of the database.
use sea_orm::DbErr;

use crate::contract::errors::{ErrorCode, Problem};

/// The problem a store failure is answered with, after marking the running read attempt failed
/// when another node may answer it (`store::nodes::read_failed`): a replica's failure is then
/// answered again from another node (`edge::retry`). Unreachable means 503 (retry later);
/// anything else is our defect (500), logged.
pub fn problem_marking_read_failed(err: &DbErr) -> Problem {
    let unreachable = store_unreachable(err);
    let transient = unreachable || recovery_conflict(err);
    if transient {
        super::nodes::read_failed(unreachable);
    }
    match transient {
        true => {
            tracing::warn!(error = %err, "store unavailable");
            Problem::new(ErrorCode::Unavailable, "The data store is unreachable; retry shortly.")
        }
        false => {
            tracing::error!(error = %err, "store error");
            Problem::internal()
        }
    }
}

/// The code the database gave a failed statement: PostgreSQL's SQLSTATE, or SQLite's (extended)
/// result code as a number. `None` when the statement never reached the database.
fn database_code(err: &DbErr) -> Option<std::borrow::Cow<'_, str>> {
    use sea_orm::{RuntimeErr, sqlx::Error};
    match err {
        DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e)) => match &**e {
            Error::Database(db) => db.code(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a store error is PostgreSQL cancelling a query (40001, `serialization_failure`): a
/// standby does so when replaying the primary's changes conflicts with the query (a recovery
/// conflict). Another node, or the same one a moment later, answers it.
fn recovery_conflict(err: &DbErr) -> bool {
    database_code(err).as_deref() == Some("40001")
}

/// Whether PostgreSQL cancelled the transaction to break a deadlock (40P01,
/// `deadlock_detected`): of two transactions that wait for each other's rows, it cancels one
/// (the one whose deadlock check runs first: in practice the one that waited first) so that the
/// other goes on. The cancelled one, started again, waits for the other to commit and then does
/// all it meant to.
fn deadlock_victim(err: &DbErr) -> bool {
    database_code(err).as_deref() == Some("40P01")
}

/// How many times [`retrying_deadlocks`] runs a write in all: a second run waits for the
/// transaction that won, so a third is for a new deadlock with yet another.
const DEADLOCK_RUNS: u32 = 3;

/// Runs `write`, a whole transaction, again when PostgreSQL cancelled it to break a deadlock,
/// up to [`DEADLOCK_RUNS`] times in all. For writes that lock many rows that another writer
/// locks in its own order: a webhook's deliveries, deleted or updated by its owner while the
/// sender records their attempts (`push::dispatch`) in one transaction for many webhooks.
pub async fn retrying_deadlocks<T, F, Fut>(mut write: F) -> Result<T, DbErr>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, DbErr>>,
{
    let mut run = 1;
    loop {
        match write().await {
            Err(e) if run < DEADLOCK_RUNS && deadlock_victim(&e) => {
                tracing::info!(run, error = %e, "a write was a deadlock's victim: started again");
                run += 1;
            }
            done => return done,
        }
    }
}

/// Whether a store error means "cannot be reached now" (503, retry) rather than a defect (500):
/// no connection to be had, a connection that broke or was terminated by the server
/// (PostgreSQL classes 08 and 57P, too many connections), or SQLite busy beyond its timeout.
fn store_unreachable(err: &DbErr) -> bool {
    use sea_orm::{RuntimeErr, sqlx::Error};
    if let Some(code) = database_code(err) {
        // SQLite reports (extended) result codes as numbers: BUSY is 5, LOCKED 6.
        let sqlite_busy = code.parse::<u32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6));
        return code.starts_with("08") || code.starts_with("57P") || code == "53300" || sqlite_busy;
    }
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e)) => matches!(
            &**e,
            Error::Io(_)
                | Error::Tls(_)
                | Error::Protocol(_)
                | Error::PoolTimedOut
                | Error::PoolClosed
                | Error::WorkerCrashed
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use sea_orm::sqlx::error::{DatabaseError, ErrorKind};
    use sea_orm::{DbErr, RuntimeErr, sqlx};

    use super::{DEADLOCK_RUNS, problem_marking_read_failed, recovery_conflict, retrying_deadlocks, store_unreachable};

    /// A database's error with SQLSTATE `code`, as the driver hands it over.
    #[derive(Debug)]
    struct Sqlstate(&'static str);

    impl std::fmt::Display for Sqlstate {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "SQLSTATE {}", self.0)
        }
    }

    impl std::error::Error for Sqlstate {}

    impl DatabaseError for Sqlstate {
        fn message(&self) -> &str {
            "canceling statement due to conflict with recovery"
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> ErrorKind {
            ErrorKind::Other
        }
    }

    fn query_error(code: &'static str) -> DbErr {
        DbErr::Query(RuntimeErr::SqlxError(sqlx::Error::Database(Box::new(Sqlstate(code))).into()))
    }

    #[test]
    fn a_recovery_conflict_is_read_again_not_a_defect() {
        // A standby cancelling a query that blocks replay: 40001, answered elsewhere or 503.
        assert!(recovery_conflict(&query_error("40001")));
        assert!(!store_unreachable(&query_error("40001")));
        // A terminated session (57P01) is the node going away; a constraint violation is ours.
        assert!(store_unreachable(&query_error("57P01")) && !recovery_conflict(&query_error("57P01")));
        assert!(!recovery_conflict(&query_error("23505")) && !store_unreachable(&query_error("23505")));
        let problem = problem_marking_read_failed(&query_error("40001"));
        assert_eq!(problem.retry_after_s, Some(crate::contract::errors::UNAVAILABLE_RETRY_AFTER_S));
    }

    #[tokio::test]
    async fn a_deadlock_victim_runs_again_and_nothing_else_does() {
        use std::cell::Cell;
        // A victim once: the second run's answer is the answer.
        let runs = Cell::new(0);
        let answer = retrying_deadlocks(|| {
            runs.set(runs.get() + 1);
            async { if runs.get() == 1 { Err(query_error("40P01")) } else { Ok(runs.get()) } }
        })
        .await;
        assert_eq!(answer.unwrap(), 2);
        // A victim every time: the last run's error, after DEADLOCK_RUNS runs.
        runs.set(0);
        let answer: Result<(), _> = retrying_deadlocks(|| {
            runs.set(runs.get() + 1);
            async { Err(query_error("40P01")) }
        })
        .await;
        assert!(answer.is_err() && runs.get() == DEADLOCK_RUNS);
        // Any other failure is answered at once: a constraint violation, a recovery conflict.
        for code in ["23505", "40001"] {
            runs.set(0);
            let answer: Result<(), _> = retrying_deadlocks(|| {
                runs.set(runs.get() + 1);
                async move { Err(query_error(code)) }
            })
            .await;
            assert!(answer.is_err() && runs.get() == 1, "{code}");
        }
    }
}
