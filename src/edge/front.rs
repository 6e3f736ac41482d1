//! The outermost layer: the first and last to see every request. It gives every response an
//! `x-request-id`, finds the operation a request is for (`super::route`), refuses what no
//! handler should read (a head or target beyond the caps, NUL in a parameter), turns every
//! error, whoever raised it, into a problem body, and records the request (access log, metrics).
use std::sync::Arc;

use poem::{
    Endpoint, IntoResponse, Request, Response,
    error::{MethodNotAllowedError, NotFoundError},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Cors,
};
use poem_openapi::error::{ParseParamError, ParsePathError, ParseRequestPayloadError};

use super::{
    Documents,
    cache::CacheOutcome,
    route::{AccessNote, Route},
};
use crate::connections::{self, MAX_HEAD_BYTES, MAX_URI_BYTES, Shutdown};
use crate::contract::{
    access::Version,
    envelope::{REQUEST_ID_HEADER, RequestId},
    errors::{ErrorCode, FieldError, ParamLocation, Problem},
    paths::{self, Format},
};

/// Browsers may call the API from any origin and must be able to read the x402 headers; MCP
/// clients post JSON-RPC to `/mcp` with their protocol headers.
pub fn cors() -> Cors {
    use crate::contract::access::PARTNER_TOKEN_HEADER;
    use crate::contract::x402::{Generation, PAYMENT_REQUIRED_HEADER};
    let payment_request = [Generation::V1, Generation::V2].map(Generation::request_header);
    let payment_response = [Generation::V1, Generation::V2].map(Generation::response_header);
    let mcp = ["content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"];
    Cors::new()
        .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::PATCH, Method::DELETE])
        .allow_headers([PARTNER_TOKEN_HEADER, REQUEST_ID_HEADER].into_iter().chain(payment_request).chain(mcp))
        .expose_headers([PAYMENT_REQUIRED_HEADER, REQUEST_ID_HEADER, "retry-after"].into_iter().chain(payment_response))
        .max_age(86_400)
}

/// A client's request id is echoed when it is short and printable; otherwise we make one: a v4
/// UUID from the thread's generator (`rand`), not `Uuid::new_v4`, which asks the kernel
/// (`getrandom`) for each id, a system call on every request.
fn request_id(req: &Request) -> String {
    req.header(REQUEST_ID_HEADER)
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Builder::from_random_bytes(rand::random()).into_uuid().simple().to_string())
}

pub async fn edge<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    documents: Arc<Documents>,
    shutdown: Shutdown,
) -> poem::Result<Response> {
    let started = std::time::Instant::now();
    let rid = request_id(&req);
    req.extensions_mut().insert(RequestId(rid.clone()));
    let route = Route::find(&documents, &req);
    let (operation, tier) = (
        Route::label(route.as_ref(), req.uri().path()),
        route.as_ref().and_then(|r| r.decl).and_then(|d| d.tier().or(d.partner_tier())).map_or("free", |t| t.as_str()),
    );
    if let Some(route) = route {
        req.extensions_mut().insert(route);
    }
    let note = Arc::new(AccessNote::default());
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
        cache: response.extensions().get::<CacheOutcome>().map_or("bypass", |c| c.0),
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
        let location = matched
            .as_ref()
            .and_then(|m| published.param_location(m.template, method.as_str(), e.name))
            .unwrap_or(ParamLocation::Query);
        // A header's text is not kept past the handler (every request would pay for a copy): a
        // header parameter's problem names it and what it expects, without an echo.
        let received = (location == ParamLocation::Query)
            .then(|| {
                serde_urlencoded::from_str::<Vec<(String, String)>>(query?)
                    .ok()?
                    .into_iter()
                    // The first of repeated values is the one applied (and echoed).
                    .find(|(k, _)| k == e.name)
                    .map(|(_, v)| v)
            })
            .flatten();
        let expected = matched.as_ref().and_then(|m| published.param_expectation(m.template, method.as_str(), e.name));
        let missing = received.is_none() && location == ParamLocation::Query;
        Problem::validation(FieldError {
            location,
            name: e.name.to_owned(),
            reason: if missing { "is required".to_owned() } else { readable(&e.reason) },
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
        let methods = matched
            .map(|m| m.methods)
            .or_else(|| paths::find(path).map(|p| p.methods.iter().map(|m| (*m).to_owned()).collect()))
            .unwrap_or_else(|| vec!["GET".to_owned()]);
        allow = Some(methods.join(", "));
        Problem::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not served on {path}; allowed: {}.", methods.join(", ")),
        )
    } else if err.is::<NotFoundError>() || err.status() == StatusCode::NOT_FOUND {
        Problem::not_found(format!(
            "No endpoint at {path}. The documents at {} and {} list every path.",
            paths::document(Version::V1, Format::Json),
            paths::document(Version::V2, Format::Json),
        ))
    } else if err.status().is_client_error() {
        Problem::new(ErrorCode::ValidationError, err.to_string())
    } else {
        tracing::error!(error = %err, %path, request_id = rid, "unhandled error");
        Problem::internal()
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
    let route = Route::of(req)?;
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
