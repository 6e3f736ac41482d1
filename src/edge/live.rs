//! Live refresh (opt-in, `--live-refresh`): a request naming a registered DAO whose data is older
//! than the freshness target ingests that DAO before it is answered (`refreshed_live`); for the
//! TTL after that, the DAO's answers say `cached_live`. One refresh per DAO at a time: concurrent
//! requests wait for the same one, at most the deadline.
//!
//! The edge never imports the writers: it asks a [`Refresh`], which `server.rs` implements over
//! `ingest`.
use std::collections::HashMap;
use std::sync::Arc;

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::AppState;
use crate::config::LiveSettings;
use crate::contract::envelope::CacheStatus;
use crate::contract::time::now_ms;

/// What the server asks of ingestion.
pub trait Refresh: Send + Sync + 'static {
    /// Whether `dao` is registered (has upstreams to refresh from).
    fn covers(&self, dao: &str) -> bool;
    /// Ingests `dao` once and publishes what changed, each upstream request given at most
    /// `deadline`; `Ok(true)` when every source succeeded.
    fn refresh(&self, dao: &str, deadline: Duration) -> BoxFuture<'static, anyhow::Result<bool>>;
}

/// On-demand refresh of DAOs whose data is past its freshness target.
pub struct LiveRefresh {
    ingestion: Arc<dyn Refresh>,
    settings: LiveSettings,
    /// When each DAO was last refreshed live (shared with the refresh tasks).
    refreshed: Arc<Mutex<HashMap<String, Instant>>>,
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl LiveRefresh {
    pub fn new(ingestion: Arc<dyn Refresh>, settings: LiveSettings) -> Self {
        Self { ingestion, settings, refreshed: Arc::default(), flights: Mutex::default() }
    }

    fn recently_refreshed(&self, dao: &str) -> bool {
        let refreshed = self.refreshed.lock();
        refreshed.get(dao).is_some_and(|at| at.elapsed() < self.settings.ttl)
    }

    /// Refreshes `dao` when its data is past the target; says how the answer is served.
    pub async fn ensure(&self, state: &AppState, dao: &str) -> Option<CacheStatus> {
        let LiveSettings { target, deadline, .. } = self.settings;
        // Only registered DAOs have upstreams to refresh from.
        if !self.ingestion.covers(dao) {
            return None;
        }
        if self.recently_refreshed(dao) {
            return Some(CacheStatus::CachedLive);
        }
        let newest = match crate::store::freshness::dao_data_as_of(&state.reads(), dao).await {
            Ok(newest) => newest,
            Err(e) => {
                tracing::warn!(dao, "live refresh: cannot read the watermark: {e}");
                return None;
            }
        };
        let target_ms = i64::try_from(target.as_millis()).unwrap_or(i64::MAX);
        if newest.is_some_and(|t| now_ms().saturating_sub(t) <= target_ms) {
            return None;
        }
        let flight = self.flights.lock().entry(dao.to_owned()).or_default().clone();
        // A refresh already running is waited for, up to the same deadline.
        let waited = Instant::now();
        let Ok(one_at_a_time) = tokio::time::timeout(deadline, flight.lock_owned()).await else {
            return None;
        };
        if self.recently_refreshed(dao) {
            // Another request refreshed it while this one waited.
            return Some(CacheStatus::CachedLive);
        }
        // The refresh runs as its own task, holding the DAO's flight: a request that stops
        // waiting at the deadline leaves it to finish (and later requests to wait for it), rather
        // than abandoning a run half-way.
        let run = self.ingestion.refresh(dao, deadline);
        let (refreshed, serving, id) = (self.refreshed.clone(), state.serving.clone(), dao.to_owned());
        let refresh = tokio::spawn(async move {
            let _flight = one_at_a_time;
            let outcome = run.await;
            // What it published is served from now on, in this process at once.
            serving.poke();
            match outcome {
                Ok(true) => {
                    refreshed.lock().insert(id, Instant::now());
                    true
                }
                Ok(false) => {
                    tracing::warn!(dao = id, "live refresh: some sources failed; serving the stored data");
                    false
                }
                Err(e) => {
                    tracing::warn!(dao = id, "live refresh failed; serving the stored data: {e:#}");
                    false
                }
            }
        });
        match tokio::time::timeout(deadline.saturating_sub(waited.elapsed()), refresh).await {
            Ok(Ok(true)) => {
                // The answer reads the refreshed data under the new revision.
                let _ = state.serving.refresh().await;
                Some(CacheStatus::RefreshedLive)
            }
            Ok(_) => None,
            Err(_) => {
                tracing::warn!(dao, "live refresh takes longer than {deadline:?}; serving the stored data meanwhile");
                None
            }
        }
    }
}
