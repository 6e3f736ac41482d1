//! MCP over Streamable HTTP at `/mcp`, served by the official Rust SDK (`rmcp`), answering in
//! plain JSON. The tools are `contract::mcp`'s, one per operation; the resources are some of them
//! again (a DAO, a proposal, a voter at `govdata://…`), and clients may subscribe to those.
//!
//! A tool call, and a resource read, is the operation's HTTP request, made in-process to the
//! application itself: the same edge, access gate, response cache and handler, so the answer is
//! the HTTP answer (a tool's `structuredContent` is its envelope, a resource's text is it) and a
//! paid call is authorised, charged and rate-limited exactly as over HTTP. The call carries the
//! credentials of the MCP request it arrived on (a partner token, an x402 payment). What only
//! HTTP can say goes back on that request:
//!
//! - a call the gate answers 402 turns the whole MCP request into that 402, challenge and all, so
//!   an x402 client (`@x402/fetch` as the transport's fetch) pays and sends the request again;
//! - a served paid call's receipt (`PAYMENT-RESPONSE`) and cache policy ride on the MCP answer.
//!
//! Any other refusal is an MCP tool error (`isError`) whose text is the problem document, or for a
//! resource a JSON-RPC error whose `data` carries it; it is never charged (the gate settles only
//! what the handler served).
//!
//! Requests are served statelessly, so any instance answers any request and a paid retry is the
//! same request again, with one exception: protocol 2025-11-25's `resources/subscribe` needs a
//! session, whose GET stream carries `notifications/resources/updated` later. So `initialize`
//! opens a session (while fewer than `GOVDATA_MCP_MAX_SESSIONS` are open; otherwise it is answered
//! without one), and only what belongs to the session goes to it: `resources/subscribe` and
//! `resources/unsubscribe`, the client's notifications and answers, and the GET and DELETE of its
//! stream. Everything else a session's client sends (tool calls, reads, lists) is served
//! statelessly as before, whatever `Mcp-Session-Id` it carries. A session no request reaches for
//! `GOVDATA_MCP_SESSION_IDLE` is closed. Protocol 2026-07-28 has no sessions: its
//! `subscriptions/listen` is one long POST whose answer streams the notifications, served
//! statelessly. Both are fed by [`updates`], from the feed's broadcast.
pub mod updates;

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use poem::{
    Body, Endpoint, Request, RequestParts, Response,
    endpoint::BoxEndpoint,
    http::{self, HeaderMap, HeaderValue, Method, StatusCode, uri::Scheme},
    web::{LocalAddr, RemoteAddr},
};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
        ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, ResourceContents, ResourceTemplate, ServerCapabilities,
        SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
    },
    service::{RequestContext, SubscriptionContext},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
        session::{
            local::{LocalSessionManager, SessionConfig},
            never::NeverSessionManager,
        },
    },
};
use serde_json::{Map, Value, json};

use super::{AppState, route::ToolCall};
use crate::config::McpAccess;
use crate::connections::Shutdown;
use crate::contract::{
    access::{INTERNAL_TOKEN_HEADER, PARTNER_TOKEN_HEADER},
    envelope::{REQUEST_ID_HEADER, RequestId},
    errors::{ErrorCode, FieldError, ParamLocation, Problem},
    mcp::{MAX_WATCHED_RESOURCES, RESOURCE_MIME_TYPE, ResourceDecl, ToolDecl, ToolParam},
    x402::Generation,
};
use updates::Updates;

pub use crate::contract::mcp::MCP_PATH;
/// A tool call's arguments are a handful of scalars.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// A request as the SDK's service takes it.
type HttpRequest = http::Request<http_body_util::combinators::BoxBody<Bytes, std::io::Error>>;
/// The header naming a client's session (protocol 2025-11-25 and earlier).
const SESSION_HEADER: &str = "mcp-session-id";

/// The `/mcp` endpoint.
pub struct McpEndpoint {
    stateless: StreamableHttpService<Tools, NeverSessionManager>,
    sessions: StreamableHttpService<Tools, LocalSessionManager>,
    session_manager: Arc<LocalSessionManager>,
    max_sessions: usize,
    /// `initialize` requests that open a session take turns, so that the count is not passed.
    opening: tokio::sync::Mutex<()>,
    /// How long a session's request may take to answer whole (its answer is read to the end).
    request_timeout: Duration,
    shutdown: Shutdown,
}

impl McpEndpoint {
    /// `app` is the application the endpoint is part of: tool calls are requests to it.
    pub fn new(state: &AppState, app: Weak<BoxEndpoint<'static>>) -> Self {
        let documents = &state.documents;
        let limits = &state.settings.limits;
        let listed = documents
            .tools
            .iter()
            .map(|t| serde_json::from_value::<Tool>(t.listed()).expect("a declared tool is an MCP tool"))
            .collect();
        let templates = documents
            .resources
            .iter()
            .map(|r| serde_json::from_value::<ResourceTemplate>(r.listed()).expect("a declared resource is an MCP one"))
            .collect();
        let updates = Updates::new(
            state.feed.clone(),
            limits.mcp_session_idle,
            limits.stream_max_duration,
            state.shutdown.clone(),
        );
        let tools = Tools {
            decls: Arc::new(documents.tools.clone()),
            listed: Arc::new(listed),
            resources: Arc::new(documents.resources.clone()),
            templates: Arc::new(templates),
            app,
            updates,
            in_session: false,
        };
        // Each its own: draining cancels the sessions' token only.
        let config = || {
            StreamableHttpServerConfig::default()
                .with_json_response(true)
                // A listen stream's, and a session's GET stream's, keep-alive: as the event streams'.
                .with_sse_keep_alive(Some(limits.stream_keep_alive))
                .with_max_request_body_bytes(MAX_BODY_BYTES)
                // `Host` and `Origin` are checked before the request reaches the SDK (or its body
                // is read), against the declared `McpAccess`, and refused with a problem document:
                // [`admit`].
                .disable_allowed_hosts()
        };
        let stateless_tools = tools.clone();
        let stateless = StreamableHttpService::new(
            move || Ok(stateless_tools.clone()),
            Arc::new(NeverSessionManager::default()),
            config().with_legacy_session_mode(false),
        );
        let mut session_config = SessionConfig::default();
        session_config.keep_alive = Some(limits.mcp_session_idle);
        let mut session_manager = LocalSessionManager::default();
        session_manager.session_config = session_config;
        let session_manager = Arc::new(session_manager);
        let session_tools = Tools { in_session: true, ..tools };
        let sessions = StreamableHttpService::new(
            move || Ok(session_tools.clone()),
            session_manager.clone(),
            config().with_legacy_session_mode(true),
        );
        // Draining ends the sessions and their GET streams (a listen stream ends by itself), so
        // that they do not hold the drain to its timeout.
        let ended = sessions.config.cancellation_token.clone();
        let shutdown = state.shutdown.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                shutdown.begun().await;
                ended.cancel();
            });
        }
        Self {
            stateless,
            sessions,
            session_manager,
            max_sessions: limits.mcp_max_sessions,
            opening: tokio::sync::Mutex::new(()),
            request_timeout: limits.request_timeout,
            shutdown: state.shutdown.clone(),
        }
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

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        // The body is here whole, read within its cap and its time by the edge (`edge::body`).
        let peek = if req.method() == Method::POST {
            let body = req.take_body().into_bytes().await?;
            let peek = serde_json::from_slice::<Peek>(&body).unwrap_or_default();
            req.set_body(body);
            Some(peek)
        } else {
            None
        };
        let in_session = req.headers().contains_key(SESSION_HEADER);
        let exchange = Arc::new(Exchange {
            origin: (req.local_addr().clone(), req.remote_addr().clone(), req.scheme().clone()),
            answer: Mutex::default(),
            carried: Mutex::default(),
        });
        let mut request: HttpRequest = req.into();
        request.extensions_mut().insert(exchange.clone());
        let response = match (peek, in_session) {
            (Some(peek), _) if peek.method.as_deref() == Some("initialize") => {
                // Takes its turn: the count of sessions holds until this one is open.
                let _turn = self.opening.lock().await;
                let open = self.session_manager.sessions.read().await.len();
                if open < self.max_sessions && !self.shutdown.draining() {
                    self.session_request(request).await
                } else {
                    // No session: tools and reads work, `resources/subscribe` says why not.
                    self.stateless_request(request).await
                }
            }
            (Some(peek), true) if peek.belongs_to_session() => match peek.id {
                Some(_) => self.session_request(request).await,
                None => self.pass(&self.sessions, request).await,
            },
            (None, true) => self.pass(&self.sessions, request).await,
            _ => self.stateless_request(request).await,
        };
        if let Some(answer) = exchange.answer.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return Ok(answer);
        }
        let mut response = response?;
        let carried = std::mem::take(&mut *exchange.carried.lock().unwrap_or_else(PoisonError::into_inner));
        response.headers_mut().extend(carried);
        Ok(response)
    }
}

impl McpEndpoint {
    async fn stateless_request(&self, request: HttpRequest) -> poem::Result<Response> {
        self.pass(&self.stateless, request).await
    }

    /// The SDK's answer to `request`, as it is (a JSON answer, a stream, a 202).
    async fn pass<M>(&self, service: &StreamableHttpService<Tools, M>, request: HttpRequest) -> poem::Result<Response>
    where
        M: rmcp::transport::streamable_http_server::SessionManager,
    {
        let mut service = service.clone();
        let Ok(response) = tower_service::Service::call(&mut service, request).await;
        let response = response.map(|body| body.map_err(|never: Infallible| -> std::io::Error { match never {} }));
        Ok(Response::from(response))
    }

    /// A request of a session that the session answers with one message (`initialize`,
    /// `resources/subscribe`…): the SDK streams that answer; it goes back as JSON, as every other
    /// answer does.
    async fn session_request(&self, request: HttpRequest) -> poem::Result<Response> {
        let mut service = self.sessions.clone();
        let Ok(response) = tower_service::Service::call(&mut service, request).await;
        let streamed = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if !streamed {
            let response = response.map(|body| body.map_err(|never: Infallible| -> std::io::Error { match never {} }));
            return Ok(Response::from(response));
        }
        let (mut parts, body) = response.into_parts();
        let read = tokio::time::timeout(self.request_timeout, body.collect()).await;
        let Ok(Ok(collected)) = read else {
            tracing::error!("an MCP session's answer did not end within the request timeout");
            return Err(Problem::internal().into());
        };
        let Some(message) = last_message(&collected.to_bytes()) else {
            tracing::error!("an MCP session's answer held no message");
            return Err(Problem::internal().into());
        };
        parts.headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        parts.headers.remove(http::header::CONTENT_LENGTH);
        parts.headers.remove(http::header::CACHE_CONTROL);
        parts.headers.remove("x-accel-buffering");
        let mut answer = Response::builder().status(parts.status).body(Body::from(message));
        *answer.headers_mut() = parts.headers;
        Ok(answer)
    }
}

/// What the endpoint reads of a JSON-RPC message to route it.
#[derive(Debug, Default, serde::Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<Value>,
}

impl Peek {
    /// Whether a session's client sends this to its session: what needs the session's state (its
    /// subscriptions, its handshake), and the client's answers to the session's pings.
    fn belongs_to_session(&self) -> bool {
        match self.method.as_deref() {
            Some(method) => {
                matches!(method, "resources/subscribe" | "resources/unsubscribe")
                    || method.starts_with("notifications/")
            }
            None => true,
        }
    }
}

/// The data of the last event of an SSE body that carries one (a priming event carries none).
fn last_message(body: &[u8]) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:").map(|d| d.strip_prefix(' ').unwrap_or(d)))
                .collect();
            let data = data.join("\n");
            (!data.trim().is_empty()).then_some(data)
        })
        .last()
        .map(Bytes::from)
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
    resources: Arc<Vec<ResourceDecl>>,
    templates: Arc<Vec<ResourceTemplate>>,
    app: Weak<BoxEndpoint<'static>>,
    updates: Arc<Updates>,
    /// Whether this handler serves a session (where `resources/subscribe` lives).
    in_session: bool,
}

/// What an operation's request made for an MCP request came to.
enum Outcome {
    /// The gate answered 402: that answers the whole MCP request (held by its [`Exchange`]), and
    /// what the handler returns is never sent.
    PaymentRequired,
    /// The call could not be made as asked.
    Refused(Problem),
    /// The operation's answer (a served one's carried headers are on the MCP answer already).
    Answered { status: StatusCode, body: Bytes },
}

impl Tools {
    /// Makes `tool`'s request with `arguments`, carrying the credentials of `context`'s request.
    async fn run(
        &self,
        tool: &ToolDecl,
        arguments: Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Outcome, String), McpError> {
        let outer = context.extensions.get::<http::request::Parts>();
        let exchange = outer.and_then(|p| p.extensions.get::<Arc<Exchange>>()).cloned();
        let (Some(outer), Some(exchange), Some(app)) = (outer, exchange, self.app.upgrade()) else {
            return Err(McpError::internal_error("the call lost its HTTP request", None));
        };
        let request_id = outer.extensions.get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default();
        let target = match target(tool, arguments) {
            Ok(target) => target,
            Err(problem) => return Ok((Outcome::Refused(problem), request_id)),
        };
        let call = operation_request(&target, outer, &exchange, &request_id);
        let response = app.call(call).await.unwrap_or_else(poem::Error::into_response);
        if response.status() == StatusCode::PAYMENT_REQUIRED {
            *exchange.answer.lock().unwrap_or_else(PoisonError::into_inner) = Some(response);
            return Ok((Outcome::PaymentRequired, request_id));
        }
        let (status, headers) = (response.status(), response.headers().clone());
        let body = match response.into_body().into_bytes().await {
            Ok(body) => body,
            Err(err) => {
                tracing::error!(error = %err, request = %request_id, "a call's answer could not be read");
                return Ok((Outcome::Refused(Problem::internal()), request_id));
            }
        };
        if status.is_success() {
            let mut carried = exchange.carried.lock().unwrap_or_else(PoisonError::into_inner);
            for name in CARRIED_BACK {
                if let Some(value) = headers.get(name) {
                    carried.insert(name, value.clone());
                }
            }
        }
        Ok((Outcome::Answered { status, body }, request_id))
    }

    /// The session a request of a session handler came with.
    fn session_of(context: &RequestContext<RoleServer>) -> Option<String> {
        let parts = context.extensions.get::<http::request::Parts>()?;
        parts.headers.get(SESSION_HEADER)?.to_str().ok().map(str::to_owned)
    }
}

impl ServerHandler for Tools {
    fn get_info(&self) -> InitializeResult {
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_resources().enable_resources_subscribe().build();
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("govdata", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Read-only DAO governance data. One tool per operation of govdata's HTTP API, named \
                 `<surface>_<resource>_<verb>`; a tool's answer is the HTTP answer's envelope. Resources: a DAO, a \
                 proposal and a voter (`govdata://daos/{{daoId}}`, `govdata://proposals/{{proposalKey}}`, \
                 `govdata://voters/{{voterIdentity}}`); a read answers what the matching v2 tool answers, and a \
                 subscription (`resources/subscribe`, or `subscriptions/listen` from protocol 2026-07-28) is told \
                 when a publication changes one. Paid tools and reads take a partner token in the \
                 `{PARTNER_TOKEN_HEADER}` header of the MCP request, or an x402 payment: an unpaid call answers HTTP \
                 402 with the challenge; pay it and send the same request again."
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
        let (body, status) = match self.run(tool, request.arguments.unwrap_or_default(), &context).await? {
            // Never sent: the request is answered with the 402 itself.
            (Outcome::PaymentRequired, _) => return Ok(CallToolResult::error(Vec::new()).into()),
            (Outcome::Refused(problem), request_id) => return Ok(refused(problem, &request_id).into()),
            (Outcome::Answered { status, body }, _) => (body, status),
        };
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            // The problem document as the HTTP answer had it. Not as `structuredContent`: that
            // must match the tool's output schema, the envelope of a served call.
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        }
        let envelope: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(envelope);
        Ok(result.into())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(self.templates.to_vec()))
    }

    // `resources/list` is the SDK's empty list: the resources are every DAO, proposal and voter,
    // reached through the templates (the list tools name them).

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let Some((decl, value)) = self.resources.iter().find_map(|r| Some((r, r.matches(&uri)?))) else {
            return Err(unknown_resource(&uri));
        };
        let arguments = Map::from_iter([(decl.param.clone(), Value::String(value))]);
        let (status, body) = match self.run(&decl.tool, arguments, &context).await? {
            // Never sent: the request is answered with the 402 itself.
            (Outcome::PaymentRequired, _) => return Ok(ReadResourceResult::new(Vec::new()).into()),
            (Outcome::Refused(problem), request_id) => {
                let problem = Problem { request_id, ..problem };
                let body = serde_json::to_vec(&problem).unwrap_or_default();
                (StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_REQUEST), Bytes::from(body))
            }
            (Outcome::Answered { status, body }, _) => (status, body),
        };
        if !status.is_success() {
            return Err(resource_error(&uri, status, &body));
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let contents = ResourceContents::text(text, uri).with_mime_type(RESOURCE_MIME_TYPE);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let key = updates::watched(&self.resources, &request.uri)?;
        let session = Self::session_of(&context).filter(|_| self.in_session);
        let Some(session) = session else {
            return Err(McpError::invalid_request(
                "resources/subscribe needs an MCP session, and this client has none: the server answered its \
                 `initialize` without `Mcp-Session-Id` (it holds as many sessions as it keeps). Subscribe with \
                 `subscriptions/listen` (protocol 2026-07-28), or initialize again later.",
                None,
            ));
        };
        let since = self.updates.newest_committed().await;
        self.updates.subscribe(&session, &context.peer, key, &request.uri, since)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let key = updates::watched(&self.resources, &request.uri)?;
        if let Some(session) = Self::session_of(&context).filter(|_| self.in_session) {
            self.updates.unsubscribe(&session, &key, &request.uri);
        }
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Resource URIs only (no list changes: the lists never change while the server runs),
        // those that are resources, up to the most one subscriber watches.
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| updates::watched(&self.resources, uri).is_ok())
            .take(MAX_WATCHED_RESOURCES)
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::default();
        accepted.resource_subscriptions = Some(uris);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let watched =
            uris.into_iter().filter_map(|uri| Some((updates::watched(&self.resources, &uri).ok()?, uri))).collect();
        let since = self.updates.newest_committed().await;
        let listening = self.updates.listen(watched, since);
        let subscriber = listening.subscriber.clone();
        let ends = self.updates.max_listen.map(|d| tokio::time::Instant::now() + d);
        let until_end = async move {
            match ends {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(until_end);
        let shutdown = self.updates.shutdown.clone();
        loop {
            tokio::select! {
                // The client closed the stream: nothing more can reach it.
                () = context.cancelled() => return Ok(()),
                // A graceful close (the final result): the client listens again, on any instance.
                () = shutdown.begun() => return Ok(()),
                () = &mut until_end => return Ok(()),
                () = subscriber.changed() => {
                    for uri in subscriber.take() {
                        if context.sink().notify_resource_updated(uri).await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

/// The error for a URI that names no resource (`-32002`; the SDK answers a 2026-07-28 client
/// `-32602`, as that protocol says).
fn unknown_resource(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "`{uri}` is no govdata resource: resources/templates/list names the templates \
             (`govdata://daos/{{daoId}}`, `govdata://proposals/{{proposalKey}}`, `govdata://voters/{{voterIdentity}}`)."
        ),
        Some(json!({ "uri": uri })),
    )
}

/// The error for a read the operation refused with `status`: its `data` carries the problem
/// document (`problem`) and the status. A 404 is "resource not found" (`-32002`), another 4xx
/// invalid parameters (`-32602`: the URI's parameter, or the request's credentials), a 5xx an
/// internal error (`-32603`).
fn resource_error(uri: &str, status: StatusCode, body: &[u8]) -> McpError {
    let problem: Value = serde_json::from_slice(body).unwrap_or_else(|_| json!(String::from_utf8_lossy(body)));
    let message = problem["detail"].as_str().or(problem["title"].as_str()).unwrap_or("the operation refused the read");
    let message = format!("{message} (HTTP {})", status.as_u16());
    let data = Some(json!({ "uri": uri, "status": status.as_u16(), "problem": problem }));
    match status {
        StatusCode::NOT_FOUND => McpError::resource_not_found(message, data),
        s if s.is_client_error() => McpError::invalid_params(message, data),
        _ => McpError::internal_error(message, data),
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
