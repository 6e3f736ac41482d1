//! MCP over Streamable HTTP at `/mcp`, served by the official Rust SDK (`rmcp`), stateless and
//! answering in plain JSON. The tools are `contract::mcp`'s, one per operation.
//!
//! A tool call is the operation's HTTP request, made in-process to the application itself: the
//! same edge, access gate, response cache and handler, so the answer is the HTTP answer
//! (`structuredContent` is its envelope) and a paid call is authorised, charged and rate-limited
//! exactly as over HTTP. The call carries the credentials of the MCP request it arrived on (a
//! partner token, an x402 payment). What only HTTP can say goes back on that request:
//!
//! - a call the gate answers 402 turns the whole MCP request into that 402, challenge and all, so
//!   an x402 client (`@x402/fetch` as the transport's fetch) pays and sends the request again;
//! - a served paid call's receipt (`PAYMENT-RESPONSE`) and cache policy ride on the MCP answer.
//!
//! Any other refusal is an MCP tool error (`isError`) whose text is the problem document; it is
//! never charged (the gate settles only what the handler served).
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use http_body_util::BodyExt;
use poem::{
    Body, Endpoint, Request, RequestParts, Response,
    endpoint::BoxEndpoint,
    http::{self, HeaderMap, HeaderValue, StatusCode, uri::Scheme},
    web::{LocalAddr, RemoteAddr},
};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
    },
};
use serde_json::{Map, Value};

use super::route::ToolCall;
use crate::config::McpAccess;
use crate::contract::{
    access::{INTERNAL_TOKEN_HEADER, PARTNER_TOKEN_HEADER},
    envelope::{REQUEST_ID_HEADER, RequestId},
    errors::{ErrorCode, FieldError, ParamLocation, Problem},
    mcp::{ToolDecl, ToolParam},
    x402::Generation,
};

pub use crate::contract::mcp::MCP_PATH;
/// A tool call's arguments are a handful of scalars.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The `/mcp` endpoint.
pub struct McpEndpoint {
    service: StreamableHttpService<Tools, NeverSessionManager>,
}

impl McpEndpoint {
    /// `app` is the application the endpoint is part of: tool calls are requests to it.
    pub fn new(tools: &[ToolDecl], app: Weak<BoxEndpoint<'static>>) -> Self {
        let listed = tools
            .iter()
            .map(|t| serde_json::from_value::<Tool>(t.listed()).expect("a declared tool is an MCP tool"))
            .collect();
        let tools = Tools { decls: Arc::new(tools.to_vec()), listed: Arc::new(listed), app };
        let config = StreamableHttpServerConfig::default()
            // Stateless: every request stands alone, so any instance answers any request and a
            // paid retry is the same request again.
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            // `Host` and `Origin` are checked before the request reaches the SDK (or its body is
            // read), against the declared `McpAccess`, and refused with a problem document: [`admit`].
            .disable_allowed_hosts();
        let service =
            StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(NeverSessionManager::default()), config);
        Self { service }
    }
}

/// The middleware that refuses (403) a request to `/mcp` whose `Origin` names a site not
/// allowed to call, or whose `Host` is not a name this server answers to: what a page on another
/// site, or one that rebound its own name to this server's address, sends. Other paths pass.
pub async fn admit<E: Endpoint>(ep: Arc<E>, req: Request, access: Arc<McpAccess>) -> poem::Result<Response> {
    if req.uri().path() == MCP_PATH {
        refuse_foreign(&req, &access)?;
    }
    ep.call(req).await.map(poem::IntoResponse::into_response)
}

fn refuse_foreign(req: &Request, access: &McpAccess) -> Result<(), Problem> {
    let origin = req.headers().get(http::header::ORIGIN).map(|v| v.to_str().unwrap_or(""));
    let refuse = |detail: String| Problem {
        title: "The request's origin or host is not allowed to call this endpoint".to_owned(),
        ..Problem::new(ErrorCode::Forbidden, detail)
    };
    if !access.allows_origin(origin) {
        return Err(refuse(format!(
            "`Origin: {}` is not allowed to call {MCP_PATH}: a page of another site may not reach this server \
             through a browser. Clients that are not browsers send no `Origin`; an operator allows a site with \
             GOVDATA_MCP_ALLOWED_ORIGINS.",
            origin.unwrap_or_default()
        )));
    }
    let host = req.headers().get(http::header::HOST).and_then(|v| v.to_str().ok()).or(req.uri().host());
    if !access.allows_host(host, req.scheme().as_str()) {
        return Err(refuse(format!(
            "`Host: {}` is not a name this server answers to at {MCP_PATH} (a name rebound to its address is \
             refused); use the server's own address or its public URL.",
            host.unwrap_or_default()
        )));
    }
    Ok(())
}

impl Endpoint for McpEndpoint {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        // The body is here whole, read within its cap and its time by the edge (`edge::body`).
        let exchange = Arc::new(Exchange {
            origin: (req.local_addr().clone(), req.remote_addr().clone(), req.scheme().clone()),
            answer: Mutex::default(),
            carried: Mutex::default(),
        });
        let mut request: http::Request<_> = req.into();
        request.extensions_mut().insert(exchange.clone());
        let mut service = self.service.clone();
        let Ok(response) = tower_service::Service::call(&mut service, request).await;
        if let Some(answer) = exchange.answer.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return Ok(answer);
        }
        let response = response.map(|body| body.map_err(|never: Infallible| -> std::io::Error { match never {} }));
        let mut response = Response::from(response);
        let carried = std::mem::take(&mut *exchange.carried.lock().unwrap_or_else(PoisonError::into_inner));
        response.headers_mut().extend(carried);
        Ok(response)
    }
}

/// One MCP HTTP request, as its tool call sees it.
struct Exchange {
    /// The connection the request came on: a tool call is counted and logged as from there.
    origin: (LocalAddr, RemoteAddr, Scheme),
    /// The HTTP answer to the whole request, when a tool call's answer is one only HTTP can give.
    answer: Mutex<Option<Response>>,
    /// Headers of a served call that the MCP answer carries.
    carried: Mutex<HeaderMap>,
}

/// What a served paid call's answer says that belongs on the MCP answer too.
const CARRIED_BACK: [&str; 3] = [Generation::V2.response_header(), Generation::V1.response_header(), "cache-control"];

#[derive(Clone)]
struct Tools {
    decls: Arc<Vec<ToolDecl>>,
    listed: Arc<Vec<Tool>>,
    app: Weak<BoxEndpoint<'static>>,
}

impl ServerHandler for Tools {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("govdata", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Read-only DAO governance data. One tool per operation of govdata's HTTP API, named \
                 `<surface>_<resource>_<verb>`; a tool's answer is the HTTP answer's envelope. Paid tools take a \
                 partner token in the `{PARTNER_TOKEN_HEADER}` header of the MCP request, or an x402 payment: an \
                 unpaid call answers HTTP 402 with the challenge; pay it and send the same request again."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self.decls.iter().find(|t| t.name == request.name) else {
            return Err(McpError::invalid_params(
                format!("There is no tool `{}`; tools/list names every tool.", request.name),
                None,
            ));
        };
        let outer = context.extensions.get::<http::request::Parts>();
        let exchange = outer.and_then(|p| p.extensions.get::<Arc<Exchange>>()).cloned();
        let (Some(outer), Some(exchange), Some(app)) = (outer, exchange, self.app.upgrade()) else {
            return Err(McpError::internal_error("the tool call lost its HTTP request", None));
        };
        let request_id = outer.extensions.get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default();
        let target = match target(tool, request.arguments.unwrap_or_default()) {
            Ok(target) => target,
            Err(problem) => return Ok(refused(problem, &request_id).into()),
        };
        let call = operation_request(&target, outer, &exchange, &request_id);
        let response = app.call(call).await.unwrap_or_else(poem::Error::into_response);
        if response.status() == StatusCode::PAYMENT_REQUIRED {
            *exchange.answer.lock().unwrap_or_else(PoisonError::into_inner) = Some(response);
            // Never sent: the request is answered with the 402 itself.
            return Ok(CallToolResult::error(Vec::new()).into());
        }
        let (status, headers) = (response.status(), response.headers().clone());
        let body = match response.into_body().into_bytes().await {
            Ok(body) => body,
            Err(err) => {
                tracing::error!(error = %err, request = %request_id, "a tool call's answer could not be read");
                let problem = Problem::internal();
                return Ok(refused(problem, &request_id).into());
            }
        };
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            // The problem document as the HTTP answer had it. Not as `structuredContent`: that
            // must match the tool's output schema, the envelope of a served call.
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        }
        let mut carried = exchange.carried.lock().unwrap_or_else(PoisonError::into_inner);
        for name in CARRIED_BACK {
            if let Some(value) = headers.get(name) {
                carried.insert(name, value.clone());
            }
        }
        let envelope: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(envelope);
        Ok(result.into())
    }
}

/// A tool error carrying `problem`.
fn refused(problem: Problem, request_id: &str) -> CallToolResult {
    let problem = Problem { request_id: request_id.to_owned(), ..problem };
    let text = serde_json::to_string(&problem).unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The path and query of the operation's request: path arguments in their segments, the rest in
/// the query, in the document's order (a paid retry names the same resource).
fn target(tool: &ToolDecl, mut arguments: Map<String, Value>) -> Result<String, Problem> {
    let mut path = tool.template.clone();
    let mut query: Vec<(&str, String)> = Vec::new();
    for ToolParam { name, location, required } in &tool.params {
        let value = match arguments.remove(name) {
            None | Some(Value::Null) if *required => {
                return Err(invalid(*location, name, "is required".to_owned(), None));
            }
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s,
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(other) => {
                return Err(invalid(
                    *location,
                    name,
                    "must be a string, a number or a boolean".to_owned(),
                    Some(other),
                ));
            }
        };
        match location {
            ParamLocation::Path => {
                let segment = percent_encoding::utf8_percent_encode(&value, SEGMENT).to_string();
                path = path.replace(&format!("{{{name}}}"), &segment);
            }
            _ => {
                query.push((name, value));
            }
        }
    }
    if let Some((name, value)) = arguments.into_iter().next() {
        let known: Vec<String> = tool.params.iter().map(|p| format!("`{}`", p.name)).collect();
        let expected =
            if known.is_empty() { "no arguments".to_owned() } else { format!("one of {}", known.join(", ")) };
        return Err(Problem::validation(FieldError {
            location: ParamLocation::Query,
            name,
            reason: format!("is not an argument of `{}`", tool.name),
            expected: Some(expected),
            received: Some(value.to_string()),
        }));
    }
    Ok(if query.is_empty() {
        path
    } else {
        format!("{path}?{}", serde_urlencoded::to_string(&query).expect("pairs of strings encode"))
    })
}

fn invalid(location: ParamLocation, name: &str, reason: String, received: Option<Value>) -> Problem {
    Problem::validation(FieldError {
        location,
        name: name.to_owned(),
        reason,
        expected: None,
        received: received.map(|v| v.to_string()),
    })
}

/// What a path segment's value escapes: everything but RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The operation's GET request, with the credentials and request id of the MCP request.
fn operation_request(target: &str, outer: &http::request::Parts, exchange: &Exchange, request_id: &str) -> Request {
    let mut parts = http::Request::new(()).into_parts().0;
    parts.method = http::Method::GET;
    parts.uri = target.parse().unwrap_or_else(|_| http::Uri::from_static("/"));
    let credentials =
        [PARTNER_TOKEN_HEADER, INTERNAL_TOKEN_HEADER, Generation::V2.request_header(), Generation::V1.request_header()];
    for name in credentials {
        if let Some(value) = outer.headers.get(name) {
            parts.headers.insert(name, value.clone());
        }
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        parts.headers.insert(REQUEST_ID_HEADER, value);
    }
    parts.extensions.insert(ToolCall);
    let (local, remote, scheme) = exchange.origin.clone();
    Request::from_parts(RequestParts::from((parts, local, remote, scheme)), Body::empty())
}
