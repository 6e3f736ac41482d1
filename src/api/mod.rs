//! The HTTP surfaces: typed poem-openapi endpoint declarations, one file per resource
//! (parameters, response types and handler together). Handlers stay thin: parse, ask `store`,
//! shape the envelope.
pub mod bounds;
pub mod cache;
pub mod gate;
pub mod live;
pub mod mcp;
pub mod payment;
pub mod rate;
pub mod route;
pub mod serving;
pub mod store_errors;
pub mod v1;
pub mod v2;
pub mod views;

use std::sync::Arc;

use poem_openapi::OpenApiService;
use sea_orm::DatabaseConnection;

use crate::config::Settings;
use crate::contract::{
    access::{Prices, Version},
    cursor::CursorCodec,
    document::Published,
    llms::llms_txt,
};
use crate::x402::PaymentTerms;

/// The document version of each surface (`info.version`).
pub const V1_DOC_VERSION: &str = "1.0.0";
pub const V2_DOC_VERSION: &str = "2.0.0";

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub db: DatabaseConnection,
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
    prices: Prices,
}

impl Documents {
    pub fn build(prices: Prices) -> Self {
        let v1 = Published::new(Version::V1, &v1_service().spec(), prices);
        let v2 = Published::new(Version::V2, &v2_service().spec(), prices);
        let llms_txt = llms_txt([&v1, &v2], prices, None);
        let discovery = crate::x402::bazaar::Catalog::of([&v1.json, &v2.json]);
        let tools = crate::contract::mcp::tools([&v1, &v2]);
        let tools_json = crate::contract::mcp::listing(&tools);
        Self { v1, v2, llms_txt, discovery, tools, tools_json, prices }
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
    pub fn files(&self) -> [(&'static str, &str); 8] {
        [
            ("v1.json", &self.v1.json_text),
            ("v1.yaml", &self.v1.yaml_text),
            ("v1.3.1.json", &self.v1.json31_text),
            ("v2.json", &self.v2.json_text),
            ("v2.yaml", &self.v2.yaml_text),
            ("v2.3.1.json", &self.v2.json31_text),
            ("llms.txt", &self.llms_txt),
            ("mcp-tools.json", &self.tools_json),
        ]
    }

    pub fn get(&self, version: Version) -> &Published {
        match version {
            Version::V1 => &self.v1,
            Version::V2 => &self.v2,
        }
    }
}

/// One list per surface: the tuple type and the service are built from the same list.
macro_rules! surface {
    ($apis:ident, $service:ident, $title:literal, $version:expr, [$($api:path),* $(,)?]) => {
        pub type $apis = ($($api,)*);

        pub fn $service() -> OpenApiService<$apis, ()> {
            OpenApiService::new(($($api,)*), $title, $version)
        }
    };
}

surface!(
    V1Apis,
    v1_service,
    "govdata v1",
    V1_DOC_VERSION,
    [
        v1::pricing::Api,
        v1::daos::Api,
        v1::freshness::Api,
        v1::events::Api,
        v1::activity::Api,
        v1::brief::Api,
        v1::lookup::Api,
        v1::items::Api,
        v1::evidence::Api,
        v1::signals::Api,
    ]
);

surface!(
    V2Apis,
    v2_service,
    "govdata v2",
    V2_DOC_VERSION,
    [
        v2::activity::Api,
        v2::daos::Api,
        v2::events::Api,
        v2::proposals::Api,
        v2::signals::Api,
        v2::topics::Api,
        v2::voters::Api,
    ]
);
