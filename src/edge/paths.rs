//! The handlers of the paths that are not operations: the documents, `/llms.txt`, `/docs`,
//! the root index, liveness, readiness and metrics.
use poem::{
    Request, Response, handler,
    web::{Data, Json},
};
use serde_json::json;

use super::{AppState, gate};
use crate::contract::{
    access::Version,
    errors::{ErrorCode, Problem},
};

pub const DOCS_INDEX: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>govdata API documentation</title>
<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style></head>
<body><h1>govdata</h1>
<p>Read-only DAO governance data for software agents.</p>
<ul>
<li><a href="/docs/v1">v1 reference</a> (stable) &middot; <a href="/v1/openapi.json">openapi.json</a> &middot; <a href="/v1/openapi.yaml">openapi.yaml</a></li>
<li><a href="/docs/v2">v2 reference</a> (additive) &middot; <a href="/v2/openapi.json">openapi.json</a> &middot; <a href="/v2/openapi.yaml">openapi.yaml</a></li>
</ul>
<p>Prices and access terms: <a href="/v1/meta/pricing">GET /v1/meta/pricing</a>.</p>
</body></html>
"#;

#[handler]
pub fn document_json(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/json").body(docs.documents.get(*version.0).json_text.clone())
}

#[handler]
pub fn document_json31(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/json").body(docs.documents.get(*version.0).json31_text.clone())
}

#[handler]
pub fn document_yaml(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/yaml").body(docs.documents.get(*version.0).yaml_text.clone())
}

#[handler]
pub fn llms_txt(docs: Data<&AppState>) -> Response {
    Response::builder().content_type("text/plain; charset=utf-8").body(docs.documents.llms_txt.clone())
}

#[handler]
pub fn root_index() -> Json<serde_json::Value> {
    Json(json!({
        "name": "govdata",
        "description": "Read-only DAO governance data for software agents.",
        "documents": { "v1": "/v1/openapi.json", "v2": "/v2/openapi.json" },
        "docs": "/docs",
        "llms": "/llms.txt",
        "pricing": "/v1/meta/pricing",
    }))
}

/// Liveness: the process answers.
#[handler]
pub fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the store answers and the process is not draining (a load balancer stops
/// sending it new requests as soon as a shutdown begins).
#[handler]
pub async fn readyz(state: Data<&AppState>) -> poem::Result<Json<serde_json::Value>> {
    if state.shutdown.draining() {
        return Err(Problem::new(ErrorCode::Unavailable, "The server is shutting down; use another instance.").into());
    }
    if crate::store::ping(&state.db).await {
        Ok(Json(json!({ "status": "ready", "store": crate::store::backend_name(&state.db) })))
    } else {
        Err(Problem::new(ErrorCode::Unavailable, "The data store is unreachable.").into())
    }
}

/// Prometheus metrics for the operator: answered only with the internal token; to anyone else
/// it does not exist.
#[handler]
pub fn metrics(req: &Request, state: Data<&AppState>) -> poem::Result<Response> {
    if !gate::internal_token_matches(&state, req) {
        return Err(Problem::not_found(format!(
            "No endpoint at {}. The documents at /v1/openapi.json and /v2/openapi.json list every path.",
            req.uri().path()
        ))
        .into());
    }
    let m = &crate::metrics::METRICS;
    let (size, idle, max) = crate::store::pool_use(&state.db);
    m.pool_connections.with_label_values(&["in_use"]).set(i64::from(size.saturating_sub(idle)));
    m.pool_connections.with_label_values(&["idle"]).set(i64::from(idle));
    m.pool_connections.with_label_values(&["max"]).set(i64::from(max));
    Ok(Response::builder().content_type("text/plain; version=0.0.4; charset=utf-8").body(m.render()))
}
