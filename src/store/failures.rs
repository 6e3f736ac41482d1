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

/// Whether a store error is PostgreSQL cancelling a query (40001, `serialization_failure`): a
/// standby does so when replaying the primary's changes conflicts with the query (a recovery
/// conflict). Another node, or the same one a moment later, answers it.
fn recovery_conflict(err: &DbErr) -> bool {
    use sea_orm::{RuntimeErr, sqlx::Error};
    match err {
        DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e)) => {
            matches!(&**e, Error::Database(db) if db.code().as_deref() == Some("40001"))
        }
        _ => false,
    }
}

/// Whether a store error means "cannot be reached now" (503, retry) rather than a defect (500):
/// no connection to be had, a connection that broke or was terminated by the server
/// (PostgreSQL classes 08 and 57P, too many connections), or SQLite busy beyond its timeout.
fn store_unreachable(err: &DbErr) -> bool {
    use sea_orm::{RuntimeErr, sqlx::Error};
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Query(RuntimeErr::SqlxError(e)) | DbErr::Exec(RuntimeErr::SqlxError(e)) => match &**e {
            Error::Io(_)
            | Error::Tls(_)
            | Error::Protocol(_)
            | Error::PoolTimedOut
            | Error::PoolClosed
            | Error::WorkerCrashed => true,
            Error::Database(db) => db.code().is_some_and(|code| {
                // SQLite reports (extended) result codes as numbers: BUSY is 5, LOCKED 6.
                let sqlite_busy = code.parse::<u32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6));
                code.starts_with("08") || code.starts_with("57P") || code == "53300" || sqlite_busy
            }),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use sea_orm::sqlx::error::{DatabaseError, ErrorKind};
    use sea_orm::{DbErr, RuntimeErr, sqlx};

    use super::{problem_marking_read_failed, recovery_conflict, store_unreachable};

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
}
