//! How a data response is served, and the `cacheStatus` it says so with.
//!
//! A middleware inside the access gate (so every cached answer is still paid for or
//! authorised):
//! 1. **Live refresh** (opt-in, `edge::live`): a request about a stale registered DAO ingests it
//!    first (`refreshed_live`, then `cached_live` for the TTL).
//! 2. **Memory cache**: successful GET answers are kept per serving revision, keyed by path and
//!    query, and served again with `memory_cache`. A new revision (any process's publication,
//!    seen by `edge::serving`) empties it. Entries are evicted oldest first beyond the byte budget.
//!
//! A replayed answer is re-stamped: `generatedAt`, `dataAsOf`, the v1 `request.requestId`, and
//! `cacheStatus`. Everything else is the body as first served.
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::Mutex;

use bytes::Bytes;
use poem::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use serde_json::Value;

use super::{AppState, Documents, route::Route};
use crate::contract::access::Version;
use crate::contract::envelope::{CacheStatus, RequestId};
use crate::contract::errors::ParamLocation;
use crate::contract::operations::{ExportsListV2, FreshnessGetV1, Operation, OperationDecl, PricingGetV1};
use crate::contract::params::DAO_ID_PARAM;
use crate::contract::time::{now_ms, rfc3339_ms};
use crate::contract::vocabulary::DaoId;
use crate::metrics::METRICS;

/// Operations whose answers describe the service rather than a data revision: the ingestion
/// state moves without a new revision, prices are not data, and the export list changes as
/// files are built. Never cached.
const UNCACHED: [OperationDecl; 3] = [FreshnessGetV1::DECL, PricingGetV1::DECL, ExportsListV2::DECL];

/// Responses of the current revision, oldest first out.
pub struct ResponseCache {
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    revision: i64,
    /// The key is held once, by the map and the queue together.
    map: HashMap<Arc<str>, Arc<Cached>>,
    order: VecDeque<Arc<str>>,
    /// What the entries cost (`Cached::cost`), and the tables' first allocations once there are any.
    bytes: usize,
    tables_counted: bool,
}

/// The map's and the queue's first allocations (4 slots each, with the map's control bytes),
/// which the per-entry slot costs do not cover at a handful of entries.
const TABLES: usize = 256;

/// An answer as first served: its headers and body bytes, and where in the body the values a
/// replay changes are.
struct Cached {
    headers: Vec<(HeaderName, HeaderValue)>,
    /// An allocation of exactly the body's length (`Cached::new`), so that its length is its cost.
    body: Bytes,
    stamps: Option<Stamps>,
}

/// What the allocator really holds for a request of `bytes`: the block of mimalloc's size class
/// (the global allocator, `lib.rs`), in 8-byte words: one word, an even number of words up to
/// eight, then four classes per power of two (80, 96, 112, 128, 160, 192, … bytes: mimalloc's
/// `mi_bin`). Blocks carry no header. Past its medium sizes (128 KiB) mimalloc rounds less; the
/// classes' at most 25 % then counts more than is held, never less.
const fn heap(bytes: usize) -> usize {
    let words = bytes.div_ceil(8);
    let class = if words <= 1 {
        words
    } else if words <= 8 {
        (words + 1) & !1
    } else {
        let w = words - 1;
        let step = (usize::BITS - 1 - w.leading_zeros()) - 2;
        ((w >> step) + 1) << step
    };
    class * 8
}

/// The `Arc` header: strong and weak counts.
const ARC: usize = 2 * std::mem::size_of::<usize>();

impl Cached {
    fn new(headers: &HeaderMap, body: &Bytes, stamps: Option<Stamps>) -> Self {
        let mut kept: Vec<(HeaderName, HeaderValue)> = headers
            .iter()
            .filter(|(n, _)| **n != header::CONTENT_LENGTH)
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        kept.shrink_to_fit();
        Self { headers: kept, body: Bytes::copy_from_slice(body), stamps }
    }

    /// Every byte the entry holds on the heap, allocator overhead included, with its key: the
    /// body; the `Arc` around the entry and the `Bytes` control block a clone of the body makes;
    /// the header list, each value, and each name (standard names are static: counted anyway);
    /// the key; the map slot at hashbrown's lowest load just after growing (7/16), and the
    /// queue slot at `VecDeque`'s (1/2). A unit test holds this to what the allocator sees.
    fn cost(&self, key: &str) -> usize {
        use std::mem::size_of;
        let headers: usize = self.headers.iter().map(|(n, v)| heap(n.as_str().len()) + heap(v.len())).sum();
        let map_slot = (size_of::<(Arc<str>, Arc<Cached>)>() + 1) * 16 / 7 + 1;
        let queue_slot = size_of::<Arc<str>>() * 2;
        heap(self.body.len())
            + heap(ARC + size_of::<Cached>())
            + heap(3 * size_of::<usize>())
            + heap(self.headers.capacity() * size_of::<(HeaderName, HeaderValue)>())
            + headers
            + heap(ARC + key.len())
            + map_slot
            + queue_slot
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
        let mut e = self.inner.lock();
        e.reset_if_stale(revision);
        let hit = e.map.get(key).cloned();
        match hit {
            Some(_) => METRICS.cache_hits.inc(),
            None => METRICS.cache_misses.inc(),
        }
        hit
    }

    fn put(&self, revision: i64, key: &str, cached: Cached) {
        let size = cached.cost(key);
        if size + TABLES > self.max_bytes {
            return;
        }
        let mut e = self.inner.lock();
        e.reset_if_stale(revision);
        if e.revision != revision || e.map.contains_key(key) {
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
        if !e.tables_counted {
            e.bytes += TABLES;
            e.tables_counted = true;
        }
        let key: Arc<str> = Arc::from(key);
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

/// The DAO a data request is about, read where its operation declares the DAO parameter (the
/// route's document: a `{daoId}` path segment, as the router hands it to the handler, or the
/// `daoId` query parameter) and parsed by the rule every handler parses it by
/// ([`DaoId::from_request`]: any letter case), so live refresh refreshes the DAO the handler
/// answers for.
fn dao_of(req: &Request, documents: &Documents) -> Option<DaoId> {
    let route = Route::of(req)?;
    // A download names its DAO too, but is served from the revision already published: a live
    // refresh first would hold the file for an ingest run and a rebuild.
    if route.decl?.downloads {
        return None;
    }
    // The template was matched once, by the edge: a `{daoId}` segment sits at the same place in
    // the path. Only a request that sends the parameter asks the document where it goes.
    let at = route
        .template
        .split('/')
        .position(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) == Some(DAO_ID_PARAM));
    let text = match at {
        Some(at) => {
            let segment = req.uri().path().split('/').nth(at)?;
            // As the router hands it to the handler: percent-decoded.
            percent_encoding::percent_decode_str(segment).decode_utf8().ok()?.into_owned()
        }
        None => {
            let query = req.uri().query().filter(|q| q.contains(DAO_ID_PARAM))?;
            let declared =
                documents.get(route.version).param_location(&route.template, req.method().as_str(), DAO_ID_PARAM);
            if declared != Some(ParamLocation::Query) {
                return None;
            }
            serde_urlencoded::from_str::<Vec<(String, String)>>(query)
                .ok()?
                .into_iter()
                .find_map(|(k, v)| (k == DAO_ID_PARAM).then_some(v))?
        }
    };
    DaoId::from_request(&text)
}

/// A GET of a declared data operation (documents and docs pages are not operations).
fn cacheable(req: &Request) -> bool {
    req.method() == poem::http::Method::GET
        // A partner's own resources (webhooks) are not data of a revision, and not everyone's.
        && Route::of(req)
            .and_then(|r| r.decl)
            .is_some_and(|d| !UNCACHED.iter().any(|u| u == d) && d.partner_tier().is_none())
}

/// The middleware.
pub async fn serve<E: Endpoint>(ep: Arc<E>, req: Request, state: AppState) -> poem::Result<Response> {
    // The layers below (the handlers, the store's reads) are called through a box: a hit never
    // builds their future, and this layer's own future, which every request through here moves
    // to the heap (`server::routes`' `.boxed()`), stays small instead of holding theirs
    // (docs/benchmarks.md, "The cached path's futures").
    if !cacheable(&req) {
        // Pricing and freshness are bounded like every operation; documents and pages are not
        // store work.
        if Route::of(&req).is_some_and(|r| r.decl.is_some()) {
            return Box::pin(state.queries.run(ep.call(req))).await.map(IntoResponse::into_response);
        }
        return Box::pin(ep.call(req)).await.map(IntoResponse::into_response);
    }
    // Only a server with live refresh looks for the DAO a request is about.
    let live = match &state.live {
        Some(live) => match dao_of(&req, &state.documents) {
            Some(dao) => Box::pin(live.ensure(&state, dao.as_str())).await,
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
    if let Some(away) = state.serving.store_away() {
        return Err(away.into());
    }
    let response = Box::pin(state.queries.run(ep.call(req))).await?.into_response();
    if response.status() != StatusCode::OK || !is_json(response.headers()) || (revision.is_none() && live.is_none()) {
        return Ok(served(response, "miss"));
    }
    let (parts, body) = response.into_parts();
    let body = body.into_bytes().await?;
    let cached = Cached::new(&parts.headers, &body, Stamps::find(&body, v1, &request_id));
    let answer = match live {
        Some(status) => {
            replay(&cached, v1, &Restamp { status, data_as_of_ms: serving.data_as_of_ms, request_id: &request_id })
        }
        None => respond_bytes(&cached.headers, body),
    };
    if let Some(revision) = revision {
        state.cache.put(revision, &key, cached);
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
fn restamped(headers: &[(HeaderName, HeaderValue)], body: &Bytes, v1: bool, now: &Restamp<'_>) -> Response {
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

fn respond_bytes(headers: &[(HeaderName, HeaderValue)], body: Bytes) -> Response {
    let mut response = Response::builder().status(StatusCode::OK).body(body);
    for (name, value) in headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> Cached {
        Cached::new(&HeaderMap::new(), &vec![b'x'; n].into(), None)
    }

    /// A panic while the lock is held (a bug in one request) leaves the cache serving: the next
    /// request takes the lock as if nothing happened. With `std::sync::Mutex` the lock would be
    /// poisoned and every later `get` would panic too.
    #[test]
    fn a_panic_inside_the_lock_does_not_poison_the_cache() {
        let cache = Arc::new(ResponseCache::new(1 << 20));
        cache.put(1, "/a", entry(10));
        let holder = Arc::clone(&cache);
        let crashed = std::thread::spawn(move || {
            let _held = holder.inner.lock();
            panic!("a bug while the cache lock is held");
        })
        .join();
        assert!(crashed.is_err(), "the critical section panicked");
        assert!(cache.get(1, "/a").is_some(), "the cache still answers");
        cache.put(1, "/b", entry(10));
        assert!(cache.get(1, "/b").is_some(), "and still takes entries");
    }

    #[test]
    fn the_cache_keeps_one_revision_within_its_budget_oldest_out_first() {
        let each = entry(98).cost("/a");
        let cache = ResponseCache::new(TABLES + 3 * each + 10);
        cache.put(1, "/a", entry(98));
        cache.put(1, "/b", entry(98));
        cache.put(1, "/c", entry(98));
        assert!(cache.get(1, "/a").is_some() && cache.get(1, "/c").is_some());
        cache.put(1, "/d", entry(98));
        assert!(cache.get(1, "/a").is_none(), "the oldest made room");
        assert!(cache.get(1, "/b").is_some() && cache.get(1, "/d").is_some());
        cache.put(1, "/huge", entry(4 * each));
        assert!(cache.get(1, "/huge").is_none(), "larger than the whole budget: not kept");
        // A newer revision empties it; an older one never fills it again.
        assert!(cache.get(2, "/b").is_none());
        cache.put(1, "/old", entry(10));
        assert!(cache.get(2, "/old").is_none() && cache.get(1, "/old").is_none());
        let disabled = ResponseCache::new(0);
        disabled.put(1, "/a", entry(1));
        assert!(disabled.get(1, "/a").is_none());
    }

    /// Counts, per thread, what the allocator holds: the block `heap` says mimalloc gives each
    /// request. The test below runs on one thread and reads only that thread's count.
    struct Counting;

    thread_local! {
        static HELD: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    }

    fn held() -> isize {
        HELD.with(std::cell::Cell::get)
    }

    unsafe impl std::alloc::GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            let _ = HELD.try_with(|h| h.set(h.get() + heap(layout.size()) as isize));
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            let _ = HELD.try_with(|h| h.set(h.get() - heap(layout.size()) as isize));
            unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;

    /// mimalloc's size classes (`mi_bin`): words up to 8 in pairs, then four per power of two.
    #[test]
    fn heap_is_mimallocs_block() {
        let cases =
            [(0, 0), (1, 8), (8, 8), (9, 16), (17, 32), (64, 64), (65, 80), (128, 128), (129, 160), (1100, 1280)];
        for (bytes, block) in cases {
            assert_eq!(heap(bytes), block, "{bytes} bytes");
        }
    }

    /// The budget counts what entries really hold: filled with small answers as served (JSON
    /// headers, a body with a spare capacity like serde's), the cache holds no more than it
    /// counts, and counts at most a quarter more than it holds (beyond the tables' first
    /// allocations), at every fill level (the map and the queue grow by doubling).
    #[test]
    fn an_entry_costs_what_it_holds() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(120));
        // Once-only allocations (lazy statics, the thread's hasher keys) out of the way first.
        for (round, n) in [1usize, 1, 7, 8, 100, 897, 1000, 1793, 3000].into_iter().enumerate() {
            let cache = ResponseCache::new(usize::MAX);
            let before = held();
            for i in 0..n {
                let mut served = Vec::with_capacity(256);
                served.extend(std::iter::repeat_n(b'x', 120 + i % 50));
                let body = Bytes::from(served);
                let key = format!("/v2/proposals/p_{i:x}/votes?limit=1");
                let cached = Cached::new(&headers, &body, None);
                drop(respond_bytes(&cached.headers, cached.body.clone()));
                cache.put(1, &key, cached);
            }
            let holds = (held() - before) as usize;
            let counts = cache.inner.lock().bytes;
            if round == 0 {
                continue;
            }
            assert!(holds <= counts, "{n} entries hold {holds} bytes, counted {counts}");
            assert!(counts <= holds * 5 / 4 + TABLES, "{n} entries hold {holds} bytes, counted {counts}");
        }
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
