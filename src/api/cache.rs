//! How a data response is served, and the `cacheStatus` it says so with.
//!
//! A middleware inside the access gate (so every cached answer is still paid for or
//! authorised):
//! 1. **Live refresh** (opt-in, `api::live`): a request about a stale registered DAO ingests it
//!    first (`refreshed_live`, then `cached_live` for the TTL).
//! 2. **Memory cache**: successful GET answers are kept per serving revision, keyed by path and
//!    query, and served again with `memory_cache`. A new revision (any process's publication,
//!    seen by `api::serving`) empties it. Entries are evicted oldest first beyond the byte budget.
//!
//! A replayed answer is re-stamped: `generatedAt`, `dataAsOf`, the v1 `request.requestId`, and
//! `cacheStatus`. Everything else is the body as first served.
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use poem::http::{HeaderMap, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use serde_json::Value;

use super::{AppState, route::Route};
use crate::contract::access::Version;
use crate::contract::envelope::{CacheStatus, RequestId};
use crate::contract::operations::{FreshnessGetV1, Operation, OperationDecl, PricingGetV1};
use crate::contract::time::{now_ms, rfc3339_ms};
use crate::metrics::METRICS;

/// Operations whose answers describe the service rather than a data revision: the ingestion
/// state moves without a new revision, and prices are not data. Never cached.
const UNCACHED: [OperationDecl; 2] = [FreshnessGetV1::DECL, PricingGetV1::DECL];

/// What an entry costs beyond its key and body bytes (the map and queue slots, the header map,
/// the allocations' own overhead), so that the budget bounds the memory really held.
const ENTRY_OVERHEAD: usize = 512;

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

/// An answer as first served: its headers and body bytes, and where in the body the values a
/// replay changes are.
struct Cached {
    headers: HeaderMap,
    body: Bytes,
    stamps: Option<Stamps>,
}

impl Cached {
    fn cost(&self, key: &str) -> usize {
        self.body.len() + key.len() + ENTRY_OVERHEAD
    }
}

impl ResponseCache {
    /// A cache of at most `max_bytes` (entries and their overhead); 0 disables it.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, inner: Mutex::new(Entries::default()) }
    }

    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    fn get(&self, revision: i64, key: &str) -> Option<Arc<Cached>> {
        let mut e = self.inner.lock().expect("the cache lock is never poisoned");
        e.reset_if_stale(revision);
        let hit = e.map.get(key).cloned();
        match hit {
            Some(_) => METRICS.cache_hits.inc(),
            None => METRICS.cache_misses.inc(),
        }
        hit
    }

    fn put(&self, revision: i64, key: String, cached: Cached) {
        let size = cached.cost(&key);
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
                e.bytes -= gone.cost(&oldest);
                METRICS.cache_evictions.inc();
            }
        }
        e.bytes += size;
        e.order.push_back(key.clone());
        e.map.insert(key, Arc::new(cached));
        METRICS.cache_bytes.set(i64::try_from(e.bytes).unwrap_or(i64::MAX));
        METRICS.cache_entries.set(i64::try_from(e.map.len()).unwrap_or(i64::MAX));
    }
}

impl Entries {
    /// Entries belong to one revision; a newer one empties the cache.
    fn reset_if_stale(&mut self, revision: i64) {
        if revision > self.revision {
            *self = Entries { revision, ..Entries::default() };
            METRICS.cache_bytes.set(0);
            METRICS.cache_entries.set(0);
        }
    }
}

/// Where the values a replay re-stamps sit in a cached body, found once when it is stored: a
/// replay copies the bytes around them and writes the new values, without parsing the JSON.
///
/// Bodies are serialised with sorted keys, so the envelope's freshness object is
/// `"freshness":{"cacheStatus":"…"[,"dataAsOf":"…"],"generatedAt":"…"}`: the last object of that
/// shape in the body (v1: before `request`; v2: first in `meta`, after `data`). A v1 body ends
/// with its request echo's `"requestId":"…"}}`. A body that does not have this shape exactly is
/// replayed by parsing it instead.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamps {
    cache_status: Range<usize>,
    data_as_of: Option<Range<usize>>,
    generated_at: Range<usize>,
    request_id: Option<Range<usize>>,
}

impl Stamps {
    fn find(body: &[u8], v1: bool, request_id: &str) -> Option<Self> {
        const START: &[u8] = b"\"freshness\":{\"cacheStatus\":\"";
        let at = rfind(body, START)?;
        let mut cursor = at + START.len();
        let string_end = |from: usize| body[from..].iter().position(|&b| b == b'"').map(|n| from + n);
        let cache_status = cursor..string_end(cursor)?;
        cursor = cache_status.end + 1;
        let member = |name: &[u8], cursor: &mut usize| -> Option<Range<usize>> {
            let prefix = [b",\"".as_slice(), name, b"\":\"".as_slice()].concat();
            if !body[*cursor..].starts_with(&prefix) {
                return None;
            }
            let from = *cursor + prefix.len();
            let range = from..string_end(from)?;
            *cursor = range.end + 1;
            Some(range)
        };
        let data_as_of = member(b"dataAsOf", &mut cursor);
        let generated_at = member(b"generatedAt", &mut cursor)?;
        if body.get(cursor) != Some(&b'}') {
            return None;
        }
        let request_id = if v1 {
            let escaped = serde_json::to_string(request_id).ok()?;
            let tail = format!("\"requestId\":{escaped}}}}}");
            if !body.ends_with(tail.as_bytes()) || body.len() - tail.len() < cursor {
                return None;
            }
            let from = body.len() - tail.len() + "\"requestId\":\"".len();
            Some(from..body.len() - 3)
        } else {
            None
        };
        Some(Self { cache_status, data_as_of, generated_at, request_id })
    }

    /// `body` with this serving's values in place of the stamped ones.
    fn apply(&self, body: &[u8], now: &Restamp<'_>) -> Vec<u8> {
        let status = now.status_text();
        let generated = rfc3339_ms(now_ms());
        let as_of = now.data_as_of_ms.map(rfc3339_ms);
        let rid = serde_json::to_string(now.request_id).unwrap_or_default();
        let rid = rid.get(1..rid.len().saturating_sub(1)).unwrap_or_default();
        let keep_status = &body[self.cache_status.clone()] == CacheStatus::RegistryOnly.text().as_bytes();
        let mut holes: Vec<(&Range<usize>, &[u8])> = Vec::with_capacity(4);
        if !keep_status {
            holes.push((&self.cache_status, status.as_bytes()));
        }
        if let (Some(range), Some(value)) = (&self.data_as_of, &as_of) {
            holes.push((range, value.as_bytes()));
        }
        holes.push((&self.generated_at, generated.as_bytes()));
        if let Some(range) = &self.request_id {
            holes.push((range, rid.as_bytes()));
        }
        let mut out = Vec::with_capacity(body.len() + 64);
        let mut copied = 0;
        for (range, value) in holes {
            out.extend_from_slice(&body[copied..range.start]);
            out.extend_from_slice(value);
            copied = range.end;
        }
        out.extend_from_slice(&body[copied..]);
        out
    }
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// How an answer is served this time.
struct Restamp<'a> {
    status: CacheStatus,
    data_as_of_ms: Option<i64>,
    request_id: &'a str,
}

impl Restamp<'_> {
    fn status_text(&self) -> &'static str {
        self.status.text()
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
fn cacheable(req: &Request) -> bool {
    req.method() == poem::http::Method::GET
        && Route::of(req).and_then(|r| r.decl).is_some_and(|d| !UNCACHED.iter().any(|u| u == d))
}

/// The middleware.
pub async fn serve<E: Endpoint>(ep: Arc<E>, req: Request, state: AppState) -> poem::Result<Response> {
    if !cacheable(&req) {
        // Pricing and freshness are bounded like every operation; documents and pages are not
        // store work.
        if Route::of(&req).is_some_and(|r| r.decl.is_some()) {
            return state.queries.run(ep.call(req)).await.map(IntoResponse::into_response);
        }
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
    let v1 = Route::of(&req).is_some_and(|r| r.version == Version::V1);
    let key = req.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let serving = state.serving.current();
    // The serving revision keys the cache; a disabled cache keeps nothing.
    let revision = state.cache.enabled().then_some(serving.id);
    if let Some(revision) = revision
        && let Some(hit) = state.cache.get(revision, &key)
    {
        let now = Restamp {
            status: live.unwrap_or(CacheStatus::MemoryCache),
            data_as_of_ms: serving.data_as_of_ms,
            request_id: &request_id,
        };
        return Ok(served(replay(&hit, v1, &now), "hit"));
    }
    let response = state.queries.run(ep.call(req)).await?.into_response();
    if response.status() != StatusCode::OK || !is_json(response.headers()) || (revision.is_none() && live.is_none()) {
        return Ok(served(response, "miss"));
    }
    let (parts, body) = response.into_parts();
    let body = body.into_bytes().await?;
    let cached = Cached { stamps: Stamps::find(&body, v1, &request_id), headers: parts.headers, body };
    let answer = match live {
        Some(status) => {
            replay(&cached, v1, &Restamp { status, data_as_of_ms: serving.data_as_of_ms, request_id: &request_id })
        }
        None => respond_bytes(&cached.headers, cached.body.clone()),
    };
    if let Some(revision) = revision {
        state.cache.put(revision, key, cached);
    }
    Ok(served(answer, "miss"))
}

/// How the response cache served an answer (`hit`, `miss`), for the access log and metrics.
#[derive(Debug, Clone, Copy)]
pub struct CacheOutcome(pub &'static str);

fn served(mut response: Response, outcome: &'static str) -> Response {
    response.extensions_mut().insert(CacheOutcome(outcome));
    response
}

/// A stored answer, served again as `now` says.
fn replay(cached: &Cached, v1: bool, now: &Restamp<'_>) -> Response {
    match &cached.stamps {
        Some(stamps) => respond_bytes(&cached.headers, stamps.apply(&cached.body, now).into()),
        None => restamped(&cached.headers, &cached.body, v1, now),
    }
}

/// `body` with how it was served this time, by parsing it; a body that is not JSON goes out as
/// it is. Only for bodies whose stamps could not be located.
fn restamped(headers: &HeaderMap, body: &Bytes, v1: bool, now: &Restamp<'_>) -> Response {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            stamp(&mut value, v1, now);
            respond_bytes(headers, serde_json::to_vec(&value).expect("a JSON value serialises").into())
        }
        Err(_) => respond_bytes(headers, body.clone()),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("json"))
}

/// Sets how this answer was served. `registry_only` is a fact about the data, not about the
/// serving path, and stays.
fn stamp(body: &mut Value, v1: bool, now: &Restamp<'_>) {
    let freshness = if v1 { body.get_mut("freshness") } else { body.pointer_mut("/meta/freshness") };
    if let Some(f) = freshness.and_then(Value::as_object_mut) {
        f.insert("generatedAt".to_owned(), Value::String(rfc3339_ms(now_ms())));
        if let (Some(as_of), true) = (now.data_as_of_ms, f.contains_key("dataAsOf")) {
            f.insert("dataAsOf".to_owned(), Value::String(rfc3339_ms(as_of)));
        }
        if f.get("cacheStatus").and_then(Value::as_str) != Some(CacheStatus::RegistryOnly.text()) {
            f.insert("cacheStatus".to_owned(), Value::String(now.status_text().to_owned()));
        }
    }
    if v1 && let Some(echo) = body.get_mut("request").and_then(Value::as_object_mut) {
        echo.insert("requestId".to_owned(), Value::String(now.request_id.to_owned()));
    }
}

fn respond_bytes(headers: &HeaderMap, body: Bytes) -> Response {
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
        Cached { headers: HeaderMap::new(), body: vec![b'x'; n].into(), stamps: None }
    }

    #[test]
    fn the_cache_keeps_one_revision_within_its_budget_oldest_out_first() {
        let each = 98 + 2 + ENTRY_OVERHEAD;
        let cache = ResponseCache::new(3 * each + 10);
        cache.put(1, "/a".into(), entry(98));
        cache.put(1, "/b".into(), entry(98));
        cache.put(1, "/c".into(), entry(98));
        assert!(cache.get(1, "/a").is_some() && cache.get(1, "/c").is_some());
        cache.put(1, "/d".into(), entry(98));
        assert!(cache.get(1, "/a").is_none(), "the oldest made room");
        assert!(cache.get(1, "/b").is_some() && cache.get(1, "/d").is_some());
        cache.put(1, "/huge".into(), entry(4 * each));
        assert!(cache.get(1, "/huge").is_none(), "larger than the whole budget: not kept");
        // A newer revision empties it; an older one never fills it again.
        assert!(cache.get(2, "/b").is_none());
        cache.put(1, "/old".into(), entry(10));
        assert!(cache.get(2, "/old").is_none() && cache.get(1, "/old").is_none());
        let disabled = ResponseCache::new(0);
        disabled.put(1, "/a".into(), entry(1));
        assert!(disabled.get(1, "/a").is_none());
    }

    fn now(status: CacheStatus, rid: &str) -> Restamp<'_> {
        Restamp { status, data_as_of_ms: Some(1_795_860_000_123), request_id: rid }
    }

    /// Replays by position and by parsing agree, on the shapes the surfaces serve.
    #[test]
    fn a_replay_rewrites_the_stamps_in_place_as_parsing_would() {
        let v1 = serde_json::json!({
            "data": {"items": [{"freshness": {"cacheStatus": "fresh", "generatedAt": "inner"}, "x": "\"freshness\":{"}]},
            "freshness": {"cacheStatus": "fresh", "dataAsOf": "2026-01-01T00:00:00.000Z", "generatedAt": "2026-01-01T00:00:00.001Z"},
            "request": {"method": "GET", "params": {"freshness": "{", "requestId": "x"}, "requestId": "a\"b"},
        });
        let v2 = serde_json::json!({
            "data": {"items": []},
            "meta": {"freshness": {"cacheStatus": "registry_only", "generatedAt": "2026-01-01T00:00:00.001Z"}, "page": {"limit": 1}},
        });
        for (body, v1, rid) in [(v1, true, "a\"b"), (v2, false, "")] {
            let bytes = serde_json::to_vec(&body).unwrap();
            let stamps = Stamps::find(&bytes, v1, rid).expect("the stamps are found");
            for status in [CacheStatus::MemoryCache, CacheStatus::CachedLive] {
                let replayed: Value = serde_json::from_slice(&stamps.apply(&bytes, &now(status, "new\"id"))).unwrap();
                let mut parsed = body.clone();
                stamp(&mut parsed, v1, &now(status, "new\"id"));
                let strip = |mut v: Value| {
                    let f = if v1 { v.get_mut("freshness") } else { v.pointer_mut("/meta/freshness") };
                    f.unwrap().as_object_mut().unwrap().remove("generatedAt");
                    v
                };
                assert_eq!(strip(replayed.clone()), strip(parsed), "{status:?}");
                if v1 {
                    assert_eq!(replayed["request"]["requestId"], "new\"id");
                    assert_eq!(replayed["freshness"]["dataAsOf"], "2026-11-28T10:00:00.123Z");
                    assert_eq!(
                        replayed["data"]["items"][0]["freshness"]["generatedAt"], "inner",
                        "only the envelope's"
                    );
                } else {
                    assert_eq!(replayed["meta"]["freshness"]["cacheStatus"], "registry_only", "a fact about the data");
                }
            }
        }
        // A v1 body whose request echo is not last, or an unknown freshness shape: parsed instead.
        assert!(
            Stamps::find(
                br#"{"freshness":{"cacheStatus":"fresh","generatedAt":"t"},"request":{"requestId":"a"},"z":1}"#,
                true,
                "a"
            )
            .is_none()
        );
        assert!(Stamps::find(br#"{"meta":{"freshness":{"cacheStatus":"fresh","other":"t"}}}"#, false, "").is_none());
    }
}
