//! The paths that are not operations, mounted from their table (`contract::paths::PATHS`), and
//! their handlers: the documents, `/llms.txt`, `/docs`, the root index, liveness, readiness and
//! metrics. `/mcp` is `super::mcp`'s.
use poem::{
    EndpointExt, Response, Route,
    endpoint::{BoxEndpoint, make_sync},
    get, handler,
    web::{Data, Html, Json},
};
use serde_json::json;

use super::{AppState, mcp::McpEndpoint};
use crate::contract::vocabulary::{NodeHealth, NodeRole};
use crate::contract::{
    access::Version,
    errors::{ErrorCode, Problem},
    paths::{self, Format, PATHS, PathKind},
};

/// Mounts every path of `PATHS` on `route`, each on its handler. `reference` holds the Redoc
/// pages of v1 and v2 (`/docs/v1`, `/docs/v2`).
pub fn mount(route: Route, reference: [String; 2], mcp: McpEndpoint) -> Route {
    let mut mcp = Some(mcp);
    let index = docs_index();
    PATHS.iter().fold(route, |route, decl| {
        let endpoint: BoxEndpoint<'static> = match decl.kind {
            PathKind::Root => get(root_index).boxed(),
            PathKind::Health => get(healthz).boxed(),
            PathKind::Readiness => get(readyz).boxed(),
            PathKind::Metrics => get(metrics).boxed(),
            PathKind::Llms => get(llms_txt).boxed(),
            PathKind::Document(version, format) => get(document).data((version, format)).boxed(),
            PathKind::Docs(None) => {
                let index = index.clone();
                get(make_sync(move |_| Html(index.clone()))).boxed()
            }
            PathKind::Docs(Some(version)) => {
                let page = reference[usize::from(version == Version::V2)].clone();
                get(make_sync(move |_| Html(page.clone()))).boxed()
            }
            PathKind::Mcp => mcp.take().expect("one MCP path").boxed(),
        };
        route.at(decl.path, endpoint)
    })
}

/// `/docs`: links to both references and their documents.
fn docs_index() -> String {
    let surface = |version: Version, note: &str| {
        format!(
            "<li><a href=\"{}\">{} reference</a> ({note}) &middot; <a href=\"{}\">openapi.json</a> &middot; <a \
             href=\"{}\">openapi.yaml</a></li>",
            paths::of(PathKind::Docs(Some(version))),
            &version.prefix()[1..],
            paths::document(version, Format::Json),
            paths::document(version, Format::Yaml),
        )
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>govdata API documentation</title>
<style>body{{font-family:system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;line-height:1.5}}</style></head>
<body><h1>govdata</h1>
<p>Read-only DAO governance data for software agents.</p>
<ul>
{}
{}
</ul>
<p>Prices and access terms: <a href="/v1/meta/pricing">GET /v1/meta/pricing</a>.</p>
</body></html>
"#,
        surface(Version::V1, "stable"),
        surface(Version::V2, "additive"),
    )
}

/// A surface's published document, in one rendition.
#[handler]
fn document(docs: Data<&AppState>, document: Data<&(Version, Format)>) -> Response {
    let (version, format) = *document.0;
    let published = docs.documents.get(version);
    let (content_type, text) = match format {
        Format::Json => ("application/json", &published.json_text),
        Format::Json31 => ("application/json", &published.json31_text),
        Format::Yaml => ("application/yaml", &published.yaml_text),
    };
    Response::builder().content_type(content_type).body(text.clone())
}

#[handler]
fn llms_txt(docs: Data<&AppState>) -> Response {
    Response::builder().content_type("text/plain; charset=utf-8").body(docs.documents.llms_txt.clone())
}

#[handler]
fn root_index() -> Json<serde_json::Value> {
    Json(json!({
        "name": "govdata",
        "description": "Read-only DAO governance data for software agents.",
        "documents": {
            "v1": paths::document(Version::V1, Format::Json),
            "v2": paths::document(Version::V2, Format::Json),
        },
        "docs": paths::of(PathKind::Docs(None)),
        "llms": paths::of(PathKind::Llms),
        "pricing": "/v1/meta/pricing",
    }))
}

/// Liveness: the process answers.
#[handler]
fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the store answers and the process is not draining (a load balancer stops
/// sending it new requests as soon as a shutdown begins).
#[handler]
async fn readyz(state: Data<&AppState>) -> poem::Result<Json<serde_json::Value>> {
    if state.shutdown.draining() {
        return Err(Problem::new(ErrorCode::Unavailable, "The server is shutting down; use another instance.").into());
    }
    let store = crate::store::backend_name(&state.db);
    if crate::store::ping(&state.db).await {
        return Ok(Json(json!({ "status": "ready", "store": store })));
    }
    // Without the primary, a process whose replicas answer still serves reads (writes answer 503).
    let serving = state
        .nodes
        .report()
        .into_iter()
        .filter(|n| n.role == NodeRole::Replica && n.state.health == NodeHealth::Serving)
        .count();
    if serving > 0 {
        return Ok(Json(json!({ "status": "ready", "store": store, "primary": "down", "replicasServing": serving })));
    }
    Err(Problem::new(ErrorCode::Unavailable, "The data store is unreachable.").into())
}

/// Prometheus metrics for the operator. The path is `PathAccess::Internal`: the gate answers
/// 404 to anyone without the internal token, as though it did not exist.
#[handler]
fn metrics(state: Data<&AppState>) -> Response {
    let m = &crate::metrics::METRICS;
    let (size, idle, max) = crate::store::pool_use(&state.db);
    m.pool_connections.with_label_values(&["in_use"]).set(i64::from(size.saturating_sub(idle)));
    m.pool_connections.with_label_values(&["idle"]).set(i64::from(idle));
    m.pool_connections.with_label_values(&["max"]).set(i64::from(max));
    for node in state.nodes.report() {
        let name = node.name.as_str();
        let up = i64::from(node.state.health == NodeHealth::Serving);
        m.node_up.with_label_values(&[name, node.role.as_str()]).set(up);
        m.node_lag_seconds.with_label_values(&[name]).set(node.state.lag.as_secs_f64());
        m.node_lag_bytes.with_label_values(&[name]).set(i64::try_from(node.state.lag_bytes).unwrap_or(i64::MAX));
        m.node_revision.with_label_values(&[name]).set(node.state.revision.unwrap_or(0));
        m.node_reads.with_label_values(&[name]).set(i64::try_from(node.reads).unwrap_or(i64::MAX));
    }
    Response::builder().content_type("text/plain; version=0.0.4; charset=utf-8").body(m.render())
}
