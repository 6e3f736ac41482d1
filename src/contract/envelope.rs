//! Response envelopes. v1: `{request, freshness, data}` with the request echo (params as
//! received, values applied, adjustments made). v2: `{data, meta}` with keyset page metadata.
use std::collections::BTreeMap;

use poem::{FromRequest, Request, RequestBody};
use poem_openapi::{
    Enum, Object,
    types::{ParseFromJSON, ToJSON, Type},
};
use serde::Serialize;

use super::time::{Timestamp, now_ms};

/// How a response was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum, Serialize)]
#[oai(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Served from the in-process cache of the current data revision.
    MemoryCache,
    /// Read from the published store during this request.
    Fresh,
    /// Served from a cached on-demand upstream fetch.
    CachedLive,
    /// The data was past its freshness target and was fetched from upstream during this request.
    RefreshedLive,
    /// The DAO is registered but nothing has been ingested for it yet; only registry fields.
    RegistryOnly,
}

impl CacheStatus {
    /// The value as served (a unit test holds it to the derive's names).
    pub const fn text(self) -> &'static str {
        match self {
            Self::MemoryCache => "memory_cache",
            Self::Fresh => "fresh",
            Self::CachedLive => "cached_live",
            Self::RefreshedLive => "refreshed_live",
            Self::RegistryOnly => "registry_only",
        }
    }
}

/// Freshness metadata of a response.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Freshness {
    /// When this response was made (RFC 3339 UTC, milliseconds).
    pub generated_at: Timestamp,
    /// Ingestion watermark of the data behind the response. Present on every answer that carries
    /// governance data, with two exceptions where there is no such watermark: a DAO that is
    /// registered but has nothing ingested yet (`cacheStatus: registry_only`), or a store with
    /// nothing ingested at all; and `/v1/meta/pricing`, whose answer is configuration, not data.
    pub data_as_of: Option<Timestamp>,
    /// How the response was served.
    pub cache_status: CacheStatus,
}

impl Freshness {
    pub fn new(data_as_of_ms: Option<i64>, cache_status: CacheStatus) -> Self {
        Self {
            generated_at: Timestamp::from_ms(now_ms()),
            data_as_of: data_as_of_ms.map(Timestamp::from_ms),
            cache_status,
        }
    }
}

/// Why an input was changed before use (v1 only: v2 rejects instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum AdjustmentReason {
    /// Above the maximum: the maximum was used.
    ClampedToMax,
    /// Below the minimum: the minimum was used.
    ClampedToMin,
    /// The window was longer than allowed: its start was moved forward.
    WindowClampedToMax,
    /// The window's start was after its end: the start was moved to the end.
    StartAfterEnd,
    /// The text had more words than a search uses: the words beyond the limit were dropped.
    TruncatedToMaxWords,
    /// The value was written in another letter case than its canonical form (a DAO slug, a 0x
    /// hex id): the canonical form was used.
    Normalized,
}

/// One input changed before use.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct Adjustment {
    pub param: String,
    pub received: String,
    pub applied: String,
    pub reason: AdjustmentReason,
}

/// Echo of a v1 request.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct RequestEcho {
    pub method: String,
    pub path: String,
    /// Query parameters exactly as received.
    pub params: BTreeMap<String, String>,
    /// Effective values after defaults and clamping.
    pub applied: BTreeMap<String, String>,
    /// Every value that was changed before use.
    pub adjustments: Vec<Adjustment>,
    pub request_id: String,
}

/// The v1 envelope.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct V1Envelope<T: ParseFromJSON + ToJSON + Type> {
    pub request: RequestEcho,
    pub freshness: Freshness,
    pub data: T,
}

/// The header that carries a request's id: echoed from the request when it is short and
/// printable, generated otherwise, on every response (the documents declare it on each).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The id of the request being served (set by the middleware, echoed in `x-request-id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

/// A v1 request being answered: collects applied values and adjustments for the echo.
pub struct V1Request {
    echo: RequestEcho,
}

impl<'a> FromRequest<'a> for V1Request {
    async fn from_request(req: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        // A repeated parameter is applied with its first value: the echo keeps that one.
        let params =
            req.uri().query().map(|q| serde_urlencoded_pairs(q).into_iter().rev().collect()).unwrap_or_default();
        Ok(Self {
            echo: RequestEcho {
                method: req.method().to_string(),
                path: req.uri().path().to_owned(),
                params,
                applied: BTreeMap::new(),
                adjustments: Vec::new(),
                request_id: req.extensions().get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default(),
            },
        })
    }
}

impl V1Request {
    /// Records the effective value of a parameter.
    pub fn applied(&mut self, param: &str, value: impl ToString) {
        self.echo.applied.insert(param.to_owned(), value.to_string());
    }

    pub fn adjust(&mut self, param: &str, received: impl ToString, applied: impl ToString, reason: AdjustmentReason) {
        self.echo.adjustments.push(Adjustment {
            param: param.to_owned(),
            received: received.to_string(),
            applied: applied.to_string(),
            reason,
        });
    }

    pub fn respond<T: ParseFromJSON + ToJSON + Type>(self, freshness: Freshness, data: T) -> V1Envelope<T> {
        V1Envelope { request: self.echo, freshness, data }
    }
}

/// Query pairs as received (percent-decoded), in order.
fn serde_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str(query).unwrap_or_default()
}

/// A v1 list page: legacy pagination with a total.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct V1Page<T: ParseFromJSON + ToJSON + Type> {
    pub items: Vec<T>,
    /// Rows in the whole list for these filters, whatever the page.
    pub total: u64,
    /// Page size applied.
    pub limit: u32,
    /// Rows skipped.
    pub offset: u64,
}

/// Rows of a v2 page.
#[derive(Debug, Clone, PartialEq, Eq, Object, Serialize)]
pub struct V2Items<T: ParseFromJSON + ToJSON + Type> {
    pub items: Vec<T>,
}

/// Keyset page metadata. No totals.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct PageMeta {
    /// Page size applied.
    pub limit: u32,
    /// True when more rows follow.
    pub has_more: bool,
    /// Opaque cursor for the next page; absent when `hasMore` is false.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct V2ListMeta {
    pub page: PageMeta,
    pub freshness: Freshness,
}

// The serde forms of the v2 list's envelope, for answers written through
// `api::serde_json_body::SerdeJson`: members in sorted order, as the documented form writes them
// (that module says why by hand), `None`s left out.

impl Serialize for Freshness {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Freshness", 3)?;
        s.serialize_field("cacheStatus", &self.cache_status)?;
        if let Some(as_of) = &self.data_as_of {
            s.serialize_field("dataAsOf", as_of)?;
        }
        s.serialize_field("generatedAt", &self.generated_at)?;
        s.end()
    }
}

impl Serialize for PageMeta {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("PageMeta", 3)?;
        s.serialize_field("hasMore", &self.has_more)?;
        s.serialize_field("limit", &self.limit)?;
        if let Some(cursor) = &self.next_cursor {
            s.serialize_field("nextCursor", cursor)?;
        }
        s.end()
    }
}

impl Serialize for V2ListMeta {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("V2ListMeta", 2)?;
        s.serialize_field("freshness", &self.freshness)?;
        s.serialize_field("page", &self.page)?;
        s.end()
    }
}

/// A v2 list.
#[derive(Debug, Clone, PartialEq, Eq, Object, Serialize)]
pub struct V2List<T: ParseFromJSON + ToJSON + Type> {
    pub data: V2Items<T>,
    pub meta: V2ListMeta,
}

#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct V2Meta {
    pub freshness: Freshness,
}

/// A v2 single resource.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
pub struct V2Single<T: ParseFromJSON + ToJSON + Type> {
    pub data: T,
    pub meta: V2Meta,
}

impl<T: ParseFromJSON + ToJSON + Type> V2Single<T> {
    pub fn new(data: T, freshness: Freshness) -> Self {
        Self { data, meta: V2Meta { freshness } }
    }
}

#[cfg(test)]
mod tests {
    use poem_openapi::types::ToJSON;

    use super::CacheStatus;

    #[test]
    fn cache_status_texts_are_the_served_values() {
        use CacheStatus::*;
        for s in [MemoryCache, Fresh, CachedLive, RefreshedLive, RegistryOnly] {
            assert_eq!(s.to_json(), Some(serde_json::Value::String(s.text().to_owned())));
        }
    }
}
