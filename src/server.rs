//! The route tree: `/v1` and `/v2` (poem-openapi services), their documents, `/docs`, health.
//! One middleware at the edge gives every response an `x-request-id` and turns every error,
//! whoever raised it, into a problem body.
use std::{net::SocketAddr, sync::Arc};

use poem::{
    Endpoint, EndpointExt, IntoResponse, Request, Response, Route,
    endpoint::{BoxEndpoint, make_sync},
    error::{MethodNotAllowedError, NotFoundError},
    get, handler,
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Cors,
    web::{Data, Html, Json},
};
use poem_openapi::error::{ParseParamError, ParsePathError, ParseRequestPayloadError};
use sea_orm::DatabaseConnection;
use serde_json::json;

use crate::api::{self, AppState, Documents};
use crate::config::Settings;
use crate::connections::{self, MAX_HEAD_BYTES, MAX_URI_BYTES, Shutdown};
use crate::contract::vocabulary::RunTrigger;
use crate::contract::{
    access::Version,
    cursor::CursorCodec,
    document::Published,
    envelope::{REQUEST_ID_HEADER, RequestId},
    errors::{ErrorCode, FieldError, ParamLocation, Problem},
};
use crate::ingest::{self, Registry, RetryPolicy, RunOptions};
use crate::x402::PaymentTerms;

/// Builds the whole application. It holds itself weakly: an MCP tool call (`/mcp`) is a request
/// to the application.
pub fn app(state: AppState) -> Arc<BoxEndpoint<'static>> {
    Arc::new_cyclic(|itself| routes(state, itself.clone()).boxed())
}

fn routes(state: AppState, itself: std::sync::Weak<BoxEndpoint<'static>>) -> impl Endpoint<Output = Response> {
    let mcp = api::mcp::McpEndpoint::new(&state.documents.tools, itself, state.settings.limits.body_read_timeout);
    let documents = state.documents.clone();
    let draining = state.shutdown.clone();
    let gated = state.clone();
    let served = state.clone();
    let v1_redoc = redoc_page(&api::v1_service().redoc_html(), &api::v1_service().spec(), &documents.v1);
    let v2_redoc = redoc_page(&api::v2_service().redoc_html(), &api::v2_service().spec(), &documents.v2);
    Route::new()
        .nest_no_strip("/v1", api::v1_service())
        .nest_no_strip("/v2", api::v2_service())
        .at("/v1/openapi.json", get(document_json).data(Version::V1))
        .at("/v1/openapi.yaml", get(document_yaml).data(Version::V1))
        .at("/v2/openapi.json", get(document_json).data(Version::V2))
        .at("/v2/openapi.yaml", get(document_yaml).data(Version::V2))
        .at("/v1/openapi.3.1.json", get(document_json31).data(Version::V1))
        .at("/v2/openapi.3.1.json", get(document_json31).data(Version::V2))
        .at("/llms.txt", get(llms_txt))
        .at(api::mcp::MCP_PATH, mcp)
        .at("/docs", get(make_sync(|_| Html(DOCS_INDEX))))
        .at("/docs/v1", get(make_sync(move |_| Html(v1_redoc.clone()))))
        .at("/docs/v2", get(make_sync(move |_| Html(v2_redoc.clone()))))
        .at("/healthz", get(healthz))
        .at("/readyz", get(readyz))
        .at("/metrics", get(metrics))
        .at("/", get(root_index))
        .data(state)
        // Inside the gate: a cached answer is still authorised or paid for.
        .around(move |ep, req| api::cache::serve(ep, req, served.clone()))
        .around(move |ep, req| api::gate::gate(ep, req, gated.clone()))
        .around(move |ep, req| edge(ep, req, documents.clone(), draining.clone()))
        // Outermost, so that error responses (made by `edge`) carry the CORS headers too.
        .with(cors())
}

/// Browsers may call the API from any origin and must be able to read the x402 headers; MCP
/// clients post JSON-RPC to `/mcp` with their protocol headers.
fn cors() -> Cors {
    use crate::contract::access::PARTNER_TOKEN_HEADER;
    use crate::contract::x402::{Generation, PAYMENT_REQUIRED_HEADER};
    let payment_request = [Generation::V1, Generation::V2].map(Generation::request_header);
    let payment_response = [Generation::V1, Generation::V2].map(Generation::response_header);
    let mcp = ["content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"];
    Cors::new()
        .allow_methods([Method::GET, Method::HEAD, Method::POST])
        .allow_headers([PARTNER_TOKEN_HEADER, REQUEST_ID_HEADER].into_iter().chain(payment_request).chain(mcp))
        .expose_headers([PAYMENT_REQUIRED_HEADER, REQUEST_ID_HEADER, "retry-after"].into_iter().chain(payment_response))
        .max_age(86_400)
}

/// A bound server, not yet running.
pub struct Listening<F> {
    /// Runs the server until `shutdown` begins and the drain ends.
    pub server: F,
    pub addr: SocketAddr,
    /// What the server serves from (its revision watch), for callers that publish in-process.
    pub serving: Arc<api::serving::ServingWatch>,
    /// Begins the graceful drain (`govdata serve` on SIGTERM or SIGINT).
    pub shutdown: Shutdown,
}

/// Binds `addr` (port 0 picks a free one): the server future, the bound address and its watch.
pub async fn bind(
    db: DatabaseConnection,
    addr: SocketAddr,
    settings: &dyn Fn(SocketAddr) -> anyhow::Result<Settings>,
) -> anyhow::Result<Listening<impl std::future::Future<Output = std::io::Result<()>> + use<>>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let settings = settings(bound)?;
    let documents = Arc::new(
        Documents::build(settings.prices())
            .served_at(settings.public_url_configured.then_some(settings.public_url.as_str())),
    );
    let secret = match &settings.payments.cursor_secret {
        Some(configured) => configured.as_bytes().to_vec(),
        None => crate::store::settings::cursor_secret(&db).await?,
    };
    let payments = Arc::new(PaymentTerms::from_args(&settings.payments)?);
    let cache = Arc::new(api::cache::ResponseCache::new(settings.response_cache_bytes));
    let serving = api::serving::ServingWatch::start(db.clone()).await?;
    let registry = match (settings.live, settings.ingest_every) {
        (None, None) => None,
        _ => Some(Arc::new(ingest::load_registry(settings.registry.as_ref())?)),
    };
    let live = match (settings.live, &registry) {
        (Some(live), Some(registry)) => {
            let ingestion = Arc::new(Ingestion { db: db.clone(), registry: registry.clone() });
            Some(Arc::new(api::live::LiveRefresh::new(ingestion, live)))
        }
        _ => None,
    };
    let shutdown = Shutdown::default();
    let schedule = match (settings.ingest_every, &registry) {
        (Some(every), Some(registry)) => {
            tracing::info!("ingesting {} DAOs every {}", registry.daos.len(), humantime::format_duration(every));
            let watch = serving.clone();
            let registry = Registry::clone(registry);
            let stop = shutdown.clone();
            Some(ingest::schedule::spawn(db.clone(), registry, every, RunOptions::default(), stop, move || {
                watch.poke()
            }))
        }
        _ => None,
    };
    let limits = connections::ConnectionLimits {
        max_connections: connections::fit_connection_cap(settings.limits.max_connections),
        max_per_address: settings.limits.max_connections_per_address,
        header_read_timeout: settings.limits.header_read_timeout,
        write_timeout: settings.limits.write_timeout,
        drain_delay: settings.limits.drain_delay,
        drain_timeout: settings.limits.drain_timeout,
    };
    let queries = api::bounds::QuerySlots::new(&settings.limits);
    let rates = api::rate::RateLimiter::start(settings.rates, db.clone());
    let state = AppState {
        db,
        settings: Arc::new(settings),
        documents,
        cursors: CursorCodec::new(&secret),
        payments,
        cache,
        live,
        serving: serving.clone(),
        shutdown: shutdown.clone(),
        queries,
        rates,
    };
    let app = app(state);
    let draining = shutdown.clone();
    let server = async move {
        connections::serve(listener, app, limits, draining).await?;
        // A scheduled run in progress finishes (its publication commits or rolls back whole);
        // past the drain timeout the process exits and the open transaction rolls back.
        if let Some(schedule) = schedule
            && tokio::time::timeout(limits.drain_timeout, schedule).await.is_err()
        {
            tracing::warn!("drain timeout: the running ingestion is abandoned; its transaction rolls back");
        }
        Ok(())
    };
    Ok(Listening { server, addr: bound, serving, shutdown })
}

/// Live refresh over ingestion: the one place the API's needs meet the writers.
struct Ingestion {
    db: DatabaseConnection,
    registry: Arc<Registry>,
}

impl api::live::Refresh for Ingestion {
    fn covers(&self, dao: &str) -> bool {
        self.registry.dao(dao).is_some()
    }

    fn refresh(
        &self,
        dao: &str,
        deadline: std::time::Duration,
    ) -> futures_util::future::BoxFuture<'static, anyhow::Result<bool>> {
        let options = RunOptions {
            dao: Some(dao.to_owned()),
            trigger: RunTrigger::Live,
            policy: RetryPolicy { attempts: 2, timeout: deadline, ..RetryPolicy::default() },
            ..RunOptions::default()
        };
        let (db, registry) = (self.db.clone(), self.registry.clone());
        Box::pin(async move {
            let report = ingest::run_once(&db, &registry, &options).await?;
            let complete = report.outcomes.iter().all(|o| o.result.is_ok());
            if !complete {
                tracing::warn!("live refresh: some sources failed\n{report}");
            }
            Ok(complete)
        })
    }
}

const DOCS_INDEX: &str = r#"<!DOCTYPE html>
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

/// poem-openapi's Redoc page embeds its own document; swap in the finished one.
fn redoc_page(html: &str, raw_spec: &str, published: &Published) -> String {
    html.replacen(raw_spec, &published.json_text, 1)
}

#[handler]
fn document_json(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/json").body(docs.documents.get(*version.0).json_text.clone())
}

#[handler]
fn document_json31(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/json").body(docs.documents.get(*version.0).json31_text.clone())
}

#[handler]
fn document_yaml(docs: Data<&AppState>, version: Data<&Version>) -> Response {
    Response::builder().content_type("application/yaml").body(docs.documents.get(*version.0).yaml_text.clone())
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
        "documents": { "v1": "/v1/openapi.json", "v2": "/v2/openapi.json" },
        "docs": "/docs",
        "llms": "/llms.txt",
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
    if crate::store::ping(&state.db).await {
        Ok(Json(json!({ "status": "ready", "store": crate::store::backend_name(&state.db) })))
    } else {
        Err(Problem::new(ErrorCode::Unavailable, "The data store is unreachable.").into())
    }
}

/// Prometheus metrics for the operator: answered only with the internal token; to anyone else
/// it does not exist.
#[handler]
fn metrics(req: &Request, state: Data<&AppState>) -> poem::Result<Response> {
    if !api::gate::internal_token_matches(&state, req) {
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

/// A client's request id is echoed when it is short and printable; otherwise we make one.
fn request_id(req: &Request) -> String {
    req.header(REQUEST_ID_HEADER)
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
}

async fn edge<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    documents: Arc<Documents>,
    shutdown: Shutdown,
) -> poem::Result<Response> {
    let started = std::time::Instant::now();
    let rid = request_id(&req);
    req.extensions_mut().insert(RequestId(rid.clone()));
    let route = api::route::Route::find(&documents, &req);
    let (operation, tier) = (
        api::route::Route::label(route.as_ref(), req.uri().path()),
        route.as_ref().and_then(|r| r.decl).and_then(|d| d.tier()).map_or("free", |t| t.as_str()),
    );
    if let Some(route) = route {
        req.extensions_mut().insert(route);
    }
    let note = Arc::new(api::route::AccessNote::default());
    req.extensions_mut().insert(note.clone());
    let (method, path, query) =
        (req.method().clone(), req.uri().path().to_owned(), req.uri().query().map(str::to_owned));
    let client_ip = req.remote_addr().as_socket_addr().map(|a| a.ip());
    let refused = oversized(&req).or_else(|| nul_parameter(&req));
    let outcome = match refused {
        Some(problem) => Err(problem.into()),
        None => ep.call(req).await,
    };
    let mut response = match outcome {
        Ok(r) => r.into_response(),
        Err(err) => problem_response(err, &documents, &method, &path, query.as_deref(), &rid),
    };
    if let Ok(v) = HeaderValue::from_str(&rid) {
        response.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    if response.status() == StatusCode::TOO_MANY_REQUESTS {
        connections::report::record(connections::Cause::RateLimited, client_ip);
    }
    if shutdown.draining() {
        // Keep-alive clients reconnect (elsewhere) instead of reusing a connection about to close.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    let access = Access {
        request_id: &rid,
        method: method.as_str(),
        path: &path,
        operation: &operation,
        status: response.status().as_u16(),
        seconds: started.elapsed().as_secs_f64(),
        cache: response.extensions().get::<api::cache::CacheOutcome>().map_or("bypass", |c| c.0),
        tier,
        credential: note.credential.get().copied().unwrap_or("none"),
    };
    access.record();
    Ok(response)
}

fn problem_response(
    err: poem::Error,
    documents: &Documents,
    method: &Method,
    path: &str,
    query: Option<&str>,
    rid: &str,
) -> Response {
    let published = if path.starts_with("/v2/") { &documents.v2 } else { &documents.v1 };
    let matched = published.match_path(path, method.as_str());
    let mut allow = None;
    let problem = if let Some(p) = err.downcast_ref::<Problem>() {
        p.clone()
    } else if let Some(e) = err.downcast_ref::<ParseParamError>() {
        let received = query.and_then(|q| {
            serde_urlencoded::from_str::<Vec<(String, String)>>(q)
                .ok()?
                .into_iter()
                // The first of repeated values is the one applied (and echoed).
                .find(|(k, _)| k == e.name)
                .map(|(_, v)| v)
        });
        let expected = matched.as_ref().and_then(|m| published.param_expectation(m.template, method.as_str(), e.name));
        Problem::validation(FieldError {
            location: ParamLocation::Query,
            name: e.name.to_owned(),
            reason: if received.is_none() { "is required".to_owned() } else { readable(&e.reason) },
            expected,
            received,
        })
    } else if let Some(e) = err.downcast_ref::<ParsePathError>() {
        // poem-openapi names path parameters `param0`, `param1`…; the document knows their names.
        let index = e.name.strip_prefix("param").and_then(|n| n.parse::<usize>().ok());
        let name = matched.as_ref().and_then(|m| index.and_then(|i| m.params.get(i).copied())).unwrap_or(e.name);
        let expected = matched.as_ref().and_then(|m| published.param_expectation(m.template, method.as_str(), name));
        // The segment at the parameter's place in the template, as the request wrote it.
        let received = matched.as_ref().and_then(|m| {
            let at = m
                .template
                .split('/')
                .position(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) == Some(name))?;
            path.split('/').nth(at).map(str::to_owned)
        });
        Problem::validation(FieldError {
            location: ParamLocation::Path,
            name: name.to_owned(),
            reason: readable(&e.reason),
            expected,
            received,
        })
    } else if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
        Problem::new(ErrorCode::ValidationError, format!("This API takes no request body: {}", e.reason))
    } else if err.is::<MethodNotAllowedError>() || err.status() == StatusCode::METHOD_NOT_ALLOWED {
        let methods = matched.map(|m| m.methods).unwrap_or_else(|| vec!["GET".to_owned()]);
        allow = Some(methods.join(", "));
        Problem::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not served on {path}; allowed: {}.", methods.join(", ")),
        )
    } else if err.is::<NotFoundError>() || err.status() == StatusCode::NOT_FOUND {
        Problem::not_found(format!(
            "No endpoint at {path}. The documents at /v1/openapi.json and /v2/openapi.json list every path."
        ))
    } else if err.status().is_client_error() {
        Problem::new(ErrorCode::ValidationError, err.to_string())
    } else {
        tracing::error!(error = %err, %path, request_id = rid, "unhandled error");
        Problem::new(ErrorCode::InternalError, "The request failed on our side.")
    };
    let mut response = problem.into_response_with(rid);
    if let Some(allow) = allow.and_then(|a| HeaderValue::from_str(&a).ok()) {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

/// One answered request, as the access log and the metrics see it. Never the token or the
/// payment itself: only the kind of credential.
struct Access<'a> {
    request_id: &'a str,
    method: &'a str,
    path: &'a str,
    operation: &'a str,
    status: u16,
    seconds: f64,
    cache: &'static str,
    tier: &'static str,
    credential: &'static str,
}

impl Access<'_> {
    fn record(&self) {
        let m = &crate::metrics::METRICS;
        let status = self.status.to_string();
        m.requests.with_label_values(&[self.operation, status.as_str(), self.cache]).inc();
        m.request_seconds.with_label_values(&[self.operation]).observe(self.seconds);
        let latency_ms = (self.seconds * 1_000_000.0).round() / 1_000.0;
        macro_rules! line {
            ($level:ident) => {
                tracing::$level!(
                    target: "govdata::access",
                    request_id = self.request_id,
                    method = self.method,
                    path = self.path,
                    operation = self.operation,
                    status = self.status,
                    latency_ms,
                    cache = self.cache,
                    tier = self.tier,
                    credential = self.credential,
                    "request"
                )
            };
        }
        if self.status >= 500 {
            line!(error);
        } else {
            line!(info);
        }
    }
}

/// A request target or head beyond what the app reads: refused with a problem document (a head
/// beyond `connections::HYPER_MAX_HEAD_BYTES` never reaches the app: see `connections::Refusals`).
fn oversized(req: &Request) -> Option<Problem> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(Problem::new(
            ErrorCode::ValidationError,
            format!("The request target is {target} bytes; at most {MAX_URI_BYTES} are accepted."),
        ));
    }
    let head: usize = req.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
    (head > MAX_HEAD_BYTES).then(|| {
        Problem::new(
            ErrorCode::ValidationError,
            format!("The request headers are {head} bytes; at most {MAX_HEAD_BYTES} are accepted."),
        )
    })
}

/// No identifier, address or search text contains NUL, and PostgreSQL refuses it in text: a
/// NUL (`%00`) in a query or path parameter is refused up front, naming the parameter.
fn nul_parameter(req: &Request) -> Option<Problem> {
    let shown = |s: &str| s.replace('\0', "\\u0000");
    let refuse = |location, name: &str, received: &str| {
        Problem::validation(FieldError {
            location,
            name: shown(name),
            reason: "must not contain NUL (%00)".to_owned(),
            expected: None,
            received: Some(shown(received)),
        })
    };
    if let Some(query) = req.uri().query().filter(|q| q.contains("%00")) {
        let pairs = serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default();
        if let Some((k, v)) = pairs.iter().find(|(k, v)| k.contains('\0') || v.contains('\0')) {
            return Some(refuse(ParamLocation::Query, k, v));
        }
    }
    // `%00` has no letter: no case to fold.
    let path = req.uri().path();
    if !path.contains("%00") {
        return None;
    }
    // The template the edge matched names the segments.
    let route = api::route::Route::of(req)?;
    let names = route.template.split('/').zip(path.split('/'));
    names.filter(|(_, segment)| segment.contains("%00")).find_map(|(template, segment)| {
        let name = template.strip_prefix('{')?.strip_suffix('}')?;
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned();
        Some(refuse(ParamLocation::Path, name, &decoded))
    })
}

/// poem-openapi's parse messages name Rust types (`failed to parse "v2_limit_MostLists": …
/// (occurred while parsing "optional_v2_limit_MostLists")`); keep the part a caller can act on.
fn readable(reason: &str) -> String {
    let mut text = reason.trim();
    if let Some(rest) = text.strip_prefix("failed to parse \"")
        && let Some(end) = rest.find("\": ")
    {
        text = &rest[end + 3..];
    }
    if let Some(start) = text.find(" (occurred while parsing") {
        text = &text[..start];
    }
    text.trim().to_owned()
}
