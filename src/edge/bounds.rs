//! What one request may cost: a deadline, and a slot among a bounded number of requests doing
//! store work at once. A request past either answers 503 with `Retry-After` instead of hanging,
//! and (the gate settles only after a success) a paid one is never charged.
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::config::LimitArgs;
use crate::contract::errors::{ErrorCode, Problem};
use crate::push::hub::CaughtUp;

/// The cap on concurrent store work and the request deadline.
#[derive(Clone)]
pub struct QuerySlots {
    slots: Arc<Semaphore>,
    max: usize,
    timeout: Duration,
}

impl QuerySlots {
    pub fn new(limits: &LimitArgs) -> Self {
        let max = limits.max_concurrent_queries.max(1);
        Self { slots: Arc::new(Semaphore::new(max)), max, timeout: limits.request_timeout }
    }

    /// Runs `work` (a handler) in a slot, within the request deadline.
    pub async fn run<T>(&self, work: impl Future<Output = poem::Result<T>>) -> poem::Result<T> {
        let deadline = Instant::now() + self.timeout;
        let _slot = match tokio::time::timeout_at(deadline, self.slots.acquire()).await {
            Ok(Ok(slot)) => slot,
            // The deadline passed with slots free: the request was late, not the server full.
            _ if self.slots.available_permits() > 0 => return Err(self.late()),
            _ => {
                return Err(Problem::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The server is at its limit of {} requests reading the store at once; retry shortly.",
                        self.max
                    ),
                )
                .into());
            }
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(result) => result,
            Err(_) => Err(self.late()),
        }
    }

    fn late(&self) -> poem::Error {
        tracing::warn!(timeout = ?self.timeout, "request timed out");
        Problem::new(
            ErrorCode::Unavailable,
            format!("The request took longer than {} s; retry later.", self.timeout.as_secs_f32()),
        )
        .into()
    }
}

/// A stream catching up from the store (`push::hub`) reads within the same slots and deadline
/// as a request: a burst of reconnecting streams cannot take more of the store than requests may.
impl crate::push::hub::ReadSlots for QuerySlots {
    fn run<'a>(&'a self, read: BoxFuture<'a, Result<CaughtUp, Problem>>) -> BoxFuture<'a, Result<CaughtUp, String>> {
        Box::pin(async move { QuerySlots::run(self, async move { Ok(read.await?) }).await.map_err(|e| e.to_string()) })
    }
}
