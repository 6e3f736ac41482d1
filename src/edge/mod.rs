//! The HTTP edge: everything a request meets before and after the operation that answers it,
//! and the state the surfaces (`api::v1`, `api::v2`) are handed. It knows no surface: it finds
//! operations through the published documents and `contract::operations`, and the paths that
//! are not operations through `contract::paths`.
//!
//! Outermost first, as a request meets them (`server::routes` wires them in this order):
//! - `front`: the request id, the problem body of every error whoever raised it, refusals of
//!   what no handler should read (oversized heads, NUL in parameters), the access log and the
//!   request metrics. `route` is the operation a request is for, found there once.
//! - `body`: a request body (`/mcp`, an operation that declares one) read whole, within its cap
//!   and its time, before the request reserves a payment or takes a query slot.
//! - `gate`: who may (free, internal token, partner token, x402); it decides, and calls
//!   `payment` (check, reserve, verify, serve, settle), which never calls back: the 402 both
//!   answer is `challenge`'s; `rate` (limits per client, partner and payer).
//! - `cache`: answers of the serving revision, and `live` refresh of a stale DAO first.
//! - `retry`: a read a replica failed, handled again from another node (`store::nodes`).
//! - `paths`: the handlers of the paths that are not operations (documents, `/llms.txt`,
//!   `/docs`, health, readiness, metrics), and `mcp`, the MCP endpoint, whose tool calls are
//!   requests to the whole application again.
//!
//! And what the handlers use of it: `serving` (the watched serving revision, `dataAsOf` and
//! partner tokens), `bounds` (the request deadline and the cap on concurrent store work, also
//! of the event streams' catch-up reads), `store_errors` (how a store failure raised in a
//! handler is answered). They are the edge's because they are about serving HTTP under load and
//! failure, not about what any operation answers. The event streams of the feed are push's
//! (`push::hub`): the edge holds the process's hub for the handlers, and follows nothing of push
//! back.
pub mod body;
pub mod bounds;
pub mod cache;
pub mod challenge;
pub mod front;
pub mod gate;
pub mod live;
pub mod mcp;
pub mod paths;
pub mod payment;
pub mod rate;
pub mod retry;
pub mod route;
pub mod serving;
pub mod store_errors;

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::config::Settings;
use crate::contract::{
    access::{Prices, Version},
    cursor::CursorCodec,
    document::Published,
    llms::llms_txt,
};
use crate::x402::PaymentTerms;

/// Shared by every handler, and handed on by every layer: one `Arc`, so each of a request's
/// clones (three layers and poem's `Data` take one) moves one count, not one per field (`perf` of
/// the cached path, issue 49).
#[derive(Clone)]
pub struct AppState(Arc<State>);

impl AppState {
    pub fn new(state: State) -> Self {
        Self(Arc::new(state))
    }
}

impl std::ops::Deref for AppState {
    type Target = State;

    fn deref(&self) -> &State {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct State {
    /// The primary: every write, and the reads of what is written outside publications
    /// (payments, tokens, subscriptions, export bookkeeping). Served data is read through
    /// [`State::reads`].
    pub db: DatabaseConnection,
    /// The SQLite store's file read on connections of its own, for the lists whose pages run on
    /// it (`store::sqlite_reader`); none on PostgreSQL.
    pub sqlite_reader: Option<Arc<crate::store::sqlite_reader::SqliteReader>>,
    /// The primary and the streaming replicas, watched.
    pub nodes: Arc<crate::store::nodes::Nodes>,
    pub settings: Arc<Settings>,
    pub documents: Arc<Documents>,
    /// Signs and checks v2 cursors.
    pub cursors: CursorCodec,
    /// What paid endpoints cost and how they are paid (checked at start-up).
    pub payments: Arc<PaymentTerms>,
    /// Answers of the serving revision.
    pub cache: Arc<cache::ResponseCache>,
    /// On-demand refresh of stale DAOs, when enabled.
    pub live: Option<Arc<live::LiveRefresh>>,
    /// The serving revision, `dataAsOf` and partner tokens, watched rather than read per request.
    pub serving: Arc<serving::ServingWatch>,
    /// Set when the process begins draining.
    pub shutdown: crate::connections::Shutdown,
    /// The request deadline and the cap on concurrent store work.
    pub queries: bounds::QuerySlots,
    /// Rate limits per client, partner token and payer.
    pub rates: Arc<rate::RateLimiter>,
    /// The process's one reader of new feed entries, fanned out to its event streams.
    pub feed: Arc<crate::push::hub::FeedHub>,
    /// Wakes the process's webhook sender (`push`): a subscription changed or queued a message.
    pub webhook_wake: Arc<tokio::sync::Notify>,
    /// The whole-table export files: built on request, kept within their disk budget.
    pub exports: Arc<crate::exports::files::Exports>,
}

impl State {
    /// The primary, for a write or a read of what was just written; a 503 at once while the node
    /// monitor sees it down and replicas carry the reads (without replicas, `store_away` says
    /// so), instead of each request waiting out the pool's connect timeout.
    pub fn primary(&self) -> Result<&DatabaseConnection, crate::contract::errors::Problem> {
        use crate::contract::errors::{ErrorCode, Problem};
        match self.nodes.primary_down() {
            true => Err(Problem::new(
                ErrorCode::Unavailable,
                "The primary database is unreachable: reads are served, writes are not; retry shortly.",
            )),
            false => Ok(&self.db),
        }
    }

    /// Where this request reads served data: a replica that has replayed the serving revision,
    /// else the primary (`store::nodes`).
    pub fn reads(&self) -> DatabaseConnection {
        match self.nodes.has_replicas() {
            true => self.nodes.reader(self.serving.current().id),
            // Without replicas, no serving state is looked up on the hot path.
            false => self.db.clone(),
        }
    }
}

/// Both finished documents, and `/llms.txt` made from them.
#[derive(Debug)]
pub struct Documents {
    pub v1: Published,
    pub v2: Published,
    pub llms_txt: String,
    /// The x402 discovery extension (`bazaar`) of every paid operation, by operationId.
    pub discovery: crate::x402::bazaar::Catalog,
    /// The MCP tools, one per operation, and `tools/list`'s answer as committed.
    pub tools: Vec<crate::contract::mcp::ToolDecl>,
    pub tools_json: String,
    /// The MCP resource templates (some of the tools again), and `resources/templates/list`'s
    /// answer as committed.
    pub resources: Vec<crate::contract::mcp::ResourceDecl>,
    pub resources_json: String,
    prices: Prices,
}

impl Documents {
    /// The documents of the surfaces whose raw (poem-openapi) documents are `v1` and `v2`
    /// (`api::documents` passes them).
    pub fn build(v1: &str, v2: &str, prices: Prices) -> Self {
        let v1 = Published::new(Version::V1, v1, prices);
        let v2 = Published::new(Version::V2, v2, prices);
        let llms_txt = llms_txt([&v1, &v2], prices, None);
        let discovery = crate::x402::bazaar::Catalog::of([&v1.json, &v2.json]);
        let tools = crate::contract::mcp::tools([&v1, &v2]);
        let tools_json = crate::contract::mcp::listing(&tools);
        let resources = crate::contract::mcp::resources(&tools);
        let resources_json = crate::contract::mcp::resource_listing(&resources);
        Self { v1, v2, llms_txt, discovery, tools, tools_json, resources, resources_json, prices }
    }

    /// The documents as this deployment serves them: with `servers` when the operator named the
    /// public URL, and `/llms.txt` linking under it (the committed files stay host-neutral).
    pub fn served_at(self, public_url: Option<&str>) -> Self {
        match public_url {
            Some(url) => {
                let (v1, v2) = (self.v1.served_at(url), self.v2.served_at(url));
                let llms_txt = llms_txt([&v1, &v2], self.prices, Some(url));
                Self { v1, v2, llms_txt, ..self }
            }
            None => self,
        }
    }

    /// The published files under `openapi/`, by name, with their content.
    pub fn files(&self) -> [(&'static str, &str); 9] {
        [
            ("v1.json", &self.v1.json_text),
            ("v1.yaml", &self.v1.yaml_text),
            ("v1.3.1.json", &self.v1.json31_text),
            ("v2.json", &self.v2.json_text),
            ("v2.yaml", &self.v2.yaml_text),
            ("v2.3.1.json", &self.v2.json31_text),
            ("llms.txt", &self.llms_txt),
            ("mcp-tools.json", &self.tools_json),
            ("mcp-resources.json", &self.resources_json),
        ]
    }

    pub fn get(&self, version: Version) -> &Published {
        match version {
            Version::V1 => &self.v1,
            Version::V2 => &self.v2,
        }
    }
}
