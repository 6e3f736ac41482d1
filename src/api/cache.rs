//! How a data response is served, and the `cacheStatus` it says so with.
//!
//! A middleware inside the access gate (so every cached answer is still paid for or
//! authorised):
//! 1. **Live refresh** (opt-in, `--live-refresh`): a request naming a registered DAO whose data
//!    is older than the freshness target runs an ingestion of that DAO before it is answered
//!    (`refreshed_live`); for the TTL after that, the DAO's answers say `cached_live`. One
//!    refresh per DAO at a time: concurrent requests wait for the same one.
//! 2. **Memory cache**: successful GET answers are kept per serving revision, keyed by path and
//!    query, and served again with `memory_cache`. A new revision (any process's publication)
//!    empties it. Entries are evicted oldest first beyond the byte budget.
//!
//! A replayed answer is re-stamped: `generatedAt`, the v1 `request.requestId`, and
//! `cacheStatus`. Everything else is the body as first served.
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use poem::http::{HeaderMap, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use poem_openapi::types::ToJSON;
use serde_json::Value;

use super::AppState;
use crate::contract::access::Version;
use crate::contract::envelope::{CacheStatus, RequestId};
use crate::contract::operations::{FreshnessGetV1, Operation, OperationDecl, PricingGetV1};
use crate::contract::time::{now_ms, rfc3339_ms};
use crate::ingest::{Registry, RetryPolicy, RunOptions};

/// Operations whose answers describe the service rather than a data revision: the ingestion
/// state moves without a new revision, and prices are not data. Never cached.
const UNCACHED: [OperationDecl; 2] = [FreshnessGetV1::DECL, PricingGetV1::DECL];

/// Responses of the current revision, oldest first out.
pub struct ResponseCache {
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    revision: i64,
    map: HashMap<String, Arc<Cached>>,
    order: VecDeque<String>,
    bytes: usize,
}

/// An answer as first served: its headers and body bytes (what the budget counts).
struct Cached {
    headers: HeaderMap,
    body: Vec<u8>,
}

impl ResponseCache {
    /// A cache of at most `max_bytes` of bodies; 0 disables it.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, inner: Mutex::new(Entries::default()) }
    }

    fn get(&self, revision: i64, key: &str) -> Option<Arc<Cached>> {
        let mut e = self.inner.lock().expect("the cache lock is never poisoned");
        e.reset_if_stale(revision);
        e.map.get(key).cloned()
    }

    fn put(&self, revision: i64, key: String, cached: Cached) {
        let size = cached.body.len() + key.len();
        if size > self.max_bytes {
            return;
        }
        let mut e = self.inner.lock().expect("the cache lock is never poisoned");
        e.reset_if_stale(revision);
        if e.revision != revision || e.map.contains_key(&key) {
            return;
        }
        while e.bytes + size > self.max_bytes {
            let Some(oldest) = e.order.pop_front() else { break };
            if let Some(gone) = e.map.remove(&oldest) {
                e.bytes -= gone.body.len() + oldest.len();
            }
        }
        e.bytes += size;
        e.order.push_back(key.clone());
        e.map.insert(key, Arc::new(cached));
    }
}

impl Entries {
    /// Entries belong to one revision; a newer one empties the cache.
    fn reset_if_stale(&mut self, revision: i64) {
        if revision > self.revision {
            *self = Entries { revision, ..Entries::default() };
        }
    }
}

/// On-demand refresh of DAOs whose data is past its freshness target.
pub struct LiveRefresh {
    pub registry: Arc<Registry>,
    /// Data older than this is refreshed on demand.
    pub target: Duration,
    /// How long after a refresh the DAO's answers count as `cached_live`.
    pub ttl: Duration,
    /// Longest a request waits for a refresh; past it, the stored data is served.
    pub deadline: Duration,
    /// When each DAO was last refreshed live (shared with the refresh tasks).
    refreshed: Arc<Mutex<HashMap<String, Instant>>>,
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl LiveRefresh {
    pub fn new(registry: Arc<Registry>, target: Duration, ttl: Duration, deadline: Duration) -> Self {
        Self { registry, target, ttl, deadline, refreshed: Arc::default(), flights: Mutex::default() }
    }

    fn recently_refreshed(&self, dao: &str) -> bool {
        let refreshed = self.refreshed.lock().expect("never poisoned");
        refreshed.get(dao).is_some_and(|at| at.elapsed() < self.ttl)
    }

    /// Refreshes `dao` when its data is past the target; says how the answer is served.
    async fn ensure(&self, state: &AppState, dao: &str) -> Option<CacheStatus> {
        // Only registered DAOs have upstreams to refresh from.
        self.registry.dao(dao)?;
        if self.recently_refreshed(dao) {
            return Some(CacheStatus::CachedLive);
        }
        let newest = match crate::store::freshness::dao_data_as_of(&state.db, dao).await {
            Ok(newest) => newest,
            Err(e) => {
                tracing::warn!(dao, "live refresh: cannot read the watermark: {e}");
                return None;
            }
        };
        let target_ms = i64::try_from(self.target.as_millis()).unwrap_or(i64::MAX);
        if newest.is_some_and(|t| now_ms().saturating_sub(t) <= target_ms) {
            return None;
        }
        let flight = self.flights.lock().expect("never poisoned").entry(dao.to_owned()).or_default().clone();
        // A refresh already running is waited for, up to the same deadline.
        let waited = std::time::Instant::now();
        let Ok(one_at_a_time) = tokio::time::timeout(self.deadline, flight.lock_owned()).await else {
            return None;
        };
        if self.recently_refreshed(dao) {
            // Another request refreshed it while this one waited.
            return Some(CacheStatus::CachedLive);
        }
        // The refresh runs as its own task, holding the DAO's flight: a request that stops
        // waiting at the deadline leaves it to finish (and later requests to wait for it), rather
        // than abandoning a run half-way.
        let options = RunOptions {
            dao: Some(dao.to_owned()),
            trigger: "live",
            policy: RetryPolicy { attempts: 2, timeout: self.deadline, ..RetryPolicy::default() },
            ..RunOptions::default()
        };
        let (db, registry, refreshed, id) =
            (state.db.clone(), self.registry.clone(), self.refreshed.clone(), dao.to_owned());
        let refresh = tokio::spawn(async move {
            let _flight = one_at_a_time;
            match crate::ingest::run_once(&db, &registry, &options).await {
                Ok(report) if report.outcomes.iter().all(|o| o.result.is_ok()) => {
                    refreshed.lock().expect("never poisoned").insert(id, Instant::now());
                    true
                }
                Ok(report) => {
                    tracing::warn!(dao = id, "live refresh: some sources failed; serving the stored data\n{report}");
                    false
                }
                Err(e) => {
                    tracing::warn!(dao = id, "live refresh failed; serving the stored data: {e:#}");
                    false
                }
            }
        });
        match tokio::time::timeout(self.deadline.saturating_sub(waited.elapsed()), refresh).await {
            Ok(Ok(true)) => Some(CacheStatus::RefreshedLive),
            Ok(_) => None,
            Err(_) => {
                tracing::warn!(
                    dao,
                    "live refresh takes longer than {:?}; serving the stored data meanwhile",
                    self.deadline
                );
                None
            }
        }
    }
}

/// The DAO a data request is about: `/v1/daos/{id}/…`, `/v2/daos/{id}…`, or `?daoId=`.
fn dao_of(req: &Request) -> Option<String> {
    let path = req.uri().path();
    let in_path = ["/v1/daos/", "/v2/daos/"]
        .iter()
        .find_map(|p| path.strip_prefix(p))
        .and_then(|rest| rest.split('/').next())
        .filter(|id| !id.is_empty());
    if let Some(id) = in_path {
        return Some(id.to_owned());
    }
    let query = req.uri().query()?;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == "daoId")
        .map(|(_, v)| v)
}

/// A GET of a declared data operation (documents and docs pages are not operations).
fn cacheable(state: &AppState, req: &Request) -> bool {
    if req.method() != poem::http::Method::GET {
        return false;
    }
    let path = req.uri().path();
    let Some(version) = [Version::V1, Version::V2].into_iter().find(|v| path.starts_with(&format!("{}/", v.prefix())))
    else {
        return false;
    };
    let operation = state.documents.get(version).match_path(path, "get").and_then(|m| m.operation_id);
    operation.is_some_and(|id| !UNCACHED.iter().any(|d| d.version == version && d.id == id))
}

/// The middleware.
pub async fn serve<E: Endpoint>(ep: Arc<E>, req: Request, state: AppState) -> poem::Result<Response> {
    if !cacheable(&state, &req) {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    // Only a server with live refresh looks for the DAO a request is about.
    let live = match &state.live {
        Some(live) => match dao_of(&req) {
            Some(dao) => live.ensure(&state, &dao).await,
            None => None,
        },
        None => None,
    };
    let request_id = req.extensions().get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default();
    let v1 = req.uri().path().starts_with("/v1/");
    let key = req.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    // The serving revision keys the cache; a disabled cache does not ask for it.
    let revision = match state.cache.max_bytes {
        0 => None,
        _ => crate::store::publish::current_revision(&state.db).await.ok().flatten().map(|r| r.id),
    };
    if let Some(revision) = revision
        && let Some(hit) = state.cache.get(revision, &key)
    {
        let status = live.unwrap_or(CacheStatus::MemoryCache);
        return Ok(restamped(&hit.headers, &hit.body, v1, status, &request_id));
    }
    let response = ep.call(req).await?.into_response();
    if response.status() != StatusCode::OK || !is_json(response.headers()) || (revision.is_none() && live.is_none()) {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = response.into_body().into_bytes().await?.to_vec();
    let answer = match live {
        Some(status) => restamped(&headers, &body, v1, status, &request_id),
        None => respond_bytes(&headers, body.clone()),
    };
    if let Some(revision) = revision {
        state.cache.put(revision, key, Cached { headers, body });
    }
    Ok(answer)
}

/// `body` with how it was served this time; a body that is not JSON goes out as it is.
fn restamped(headers: &HeaderMap, body: &[u8], v1: bool, status: CacheStatus, request_id: &str) -> Response {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            stamp(&mut value, v1, status, request_id);
            respond_bytes(headers, serde_json::to_vec(&value).expect("a JSON value serialises"))
        }
        Err(_) => respond_bytes(headers, body.to_vec()),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("json"))
}

/// Sets how this answer was served. `registry_only` is a fact about the data, not about the
/// serving path, and stays.
fn stamp(body: &mut Value, v1: bool, status: CacheStatus, request_id: &str) {
    let freshness = if v1 { body.get_mut("freshness") } else { body.pointer_mut("/meta/freshness") };
    if let Some(f) = freshness.and_then(Value::as_object_mut) {
        f.insert("generatedAt".to_owned(), Value::String(rfc3339_ms(now_ms())));
        if f.get("cacheStatus").and_then(Value::as_str) != Some("registry_only") {
            f.insert("cacheStatus".to_owned(), status.to_json().unwrap_or(Value::Null));
        }
    }
    if v1 && let Some(echo) = body.get_mut("request").and_then(Value::as_object_mut) {
        echo.insert("requestId".to_owned(), Value::String(request_id.to_owned()));
    }
}

fn respond_bytes(headers: &HeaderMap, body: Vec<u8>) -> Response {
    let mut response = Response::builder().status(StatusCode::OK).body(body);
    for (name, value) in headers {
        if name != header::CONTENT_LENGTH {
            response.headers_mut().insert(name.clone(), value.clone());
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> Cached {
        Cached { headers: HeaderMap::new(), body: vec![b'x'; n] }
    }

    #[test]
    fn the_cache_keeps_one_revision_within_its_budget_oldest_out_first() {
        let cache = ResponseCache::new(300);
        cache.put(1, "/a".into(), entry(98));
        cache.put(1, "/b".into(), entry(98));
        cache.put(1, "/c".into(), entry(98));
        assert!(cache.get(1, "/a").is_some() && cache.get(1, "/c").is_some());
        cache.put(1, "/d".into(), entry(98));
        assert!(cache.get(1, "/a").is_none(), "the oldest made room");
        assert!(cache.get(1, "/b").is_some() && cache.get(1, "/d").is_some());
        cache.put(1, "/huge".into(), entry(1000));
        assert!(cache.get(1, "/huge").is_none(), "larger than the whole budget: not kept");
        // A newer revision empties it; an older one never fills it again.
        assert!(cache.get(2, "/b").is_none());
        cache.put(1, "/old".into(), entry(10));
        assert!(cache.get(2, "/old").is_none() && cache.get(1, "/old").is_none());
        let disabled = ResponseCache::new(0);
        disabled.put(1, "/a".into(), entry(1));
        assert!(disabled.get(1, "/a").is_none());
    }

    #[test]
    fn a_replayed_answer_says_how_it_was_served_and_keeps_registry_only() {
        let mut v1 = serde_json::json!({"request": {"requestId": "old"}, "freshness": {"cacheStatus": "fresh", "generatedAt": "x"}, "data": 1});
        stamp(&mut v1, true, CacheStatus::MemoryCache, "new");
        assert_eq!(v1["freshness"]["cacheStatus"], "memory_cache");
        assert_eq!(v1["request"]["requestId"], "new");
        assert_ne!(v1["freshness"]["generatedAt"], "x");
        let mut v2 = serde_json::json!({"data": 1, "meta": {"freshness": {"cacheStatus": "registry_only"}}});
        stamp(&mut v2, false, CacheStatus::CachedLive, "id");
        assert_eq!(v2["meta"]["freshness"]["cacheStatus"], "registry_only");
    }
}
