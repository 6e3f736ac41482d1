//! How the edge answers what the store hands it: a stored value the code does not know, and a
//! store failure raised through `?` in a handler (`store::failures` decides 503 or 500).
use sea_orm::DbErr;

use crate::contract::vocabulary::UnknownValue;
use crate::contract::{api_error::ApiError, errors::Problem};
use crate::store::failures::problem_marking_read_failed;

/// A stored value this build does not know (a source, a kind, a state): the store holds
/// something the code cannot serve faithfully. That is our defect (500, logged), never a reason
/// to serve another value.
impl From<UnknownValue> for Problem {
    fn from(err: UnknownValue) -> Self {
        tracing::error!(error = %err, "unknown stored value");
        Self::internal()
    }
}

impl<Op> From<UnknownValue> for ApiError<Op> {
    fn from(err: UnknownValue) -> Self {
        Self::new(err.into())
    }
}

impl<Op> From<DbErr> for ApiError<Op> {
    fn from(err: DbErr) -> Self {
        Self::new(problem_marking_read_failed(&err))
    }
}
