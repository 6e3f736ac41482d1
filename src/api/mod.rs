//! The HTTP surfaces: typed poem-openapi endpoint declarations, one file per resource
//! (parameters, response types and handler together). Handlers stay thin: parse, ask `store`,
//! shape the envelope. They are handed `edge::AppState`; everything around them (access,
//! caching, limits, errors, the paths that are not operations) is the edge's (`crate::edge`).
pub mod serde_json_body;
pub mod v1;
pub mod v2;
pub mod views;

use poem_openapi::OpenApiService;

use crate::contract::{access::Prices, document::Published};
use crate::edge::Documents;
// The state every handler is handed is the edge's; controllers name it from here.
pub use crate::edge::AppState;

/// The document version of each surface (`info.version`).
pub const V1_DOC_VERSION: &str = "1.0.0";
pub const V2_DOC_VERSION: &str = "2.0.0";

/// Both surfaces' finished documents, `/llms.txt`, the MCP tools and the x402 discovery
/// extensions, made from the services' own documents.
pub fn documents(prices: Prices) -> Documents {
    Documents::build(&v1_service().spec(), &v2_service().spec(), prices)
}

/// The Redoc reference pages of both surfaces (`/docs/v1`, `/docs/v2`), each embedding its
/// finished document.
pub fn reference_pages(documents: &Documents) -> [String; 2] {
    // poem-openapi's Redoc page embeds its own document; swap in the finished one.
    let page =
        |html: String, raw_spec: String, published: &Published| html.replacen(&raw_spec, &published.json_text, 1);
    [
        page(v1_service().redoc_html(), v1_service().spec(), &documents.v1),
        page(v2_service().redoc_html(), v2_service().spec(), &documents.v2),
    ]
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
        v2::delegates::Api,
        v2::events::Api,
        v2::exports::Api,
        v2::feed::Api,
        v2::stream::Api,
        v2::proposals::Api,
        v2::signals::Api,
        v2::topics::Api,
        v2::voters::Api,
        v2::webhooks::Api,
    ]
);
