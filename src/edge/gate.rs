//! The access gate, in front of every handler. It finds the operation a request is for in the
//! published document, reads its tier from `contract::operations`, and decides:
//!
//! - free operations (and anything unmatched, which the router answers) pass, counted against
//!   the client address; of the paths that are not operations (`contract::paths`), the probes
//!   pass uncounted and the internal token's (metrics) are a 404 to anyone else;
//! - the internal first-party token opens everything;
//! - a partner token opens what its scopes grant: unknown or revoked → 401, lacking scope → 403;
//! - an x402 payment (`PAYMENT-SIGNATURE` v2, `X-PAYMENT` v1) is checked here (a payment that
//!   does not check out counts against the client, like a challenge), then reserved, verified,
//!   and settled only after the handler succeeded (`edge::payment`, which never calls back: the
//!   402 both answer is `edge::challenge`'s);
//! - no credentials → 402 with the challenge of both x402 generations.
//!
//! A partner token wins over a payment sent with it, as in the reference servers: a partner is
//! never charged twice.
use std::sync::Arc;

use poem::{
    Endpoint, IntoResponse, Request, Response,
    error::NotFoundError,
    http::{HeaderValue, Method, header},
};
use subtle::ConstantTimeEq;

use super::{
    AppState,
    challenge::{PaidCall, challenge},
    payment,
    rate::{self, Decision},
    route::{AccessNote, Route, ToolCall},
};
use crate::contract::x402::Generation;
use crate::contract::{
    access::{INTERNAL_TOKEN_HEADER, PARTNER_TOKEN_HEADER, RatePolicy, Scope, Tier, Version},
    envelope::RequestId,
    errors::{ErrorCode, Problem},
    exports::{GRANT_HEADER, grant_opens},
    paths::{self, PathAccess},
    time::now_ms,
};
use crate::store::failures::problem_marking_read_failed;
use crate::store::tokens::LiveToken;

/// The middleware. The rarer paths' futures (a payment's verification and settlement, a token the
/// server does not remember, an operation only a partner opens) are boxed where they are taken:
/// this layer's future, which every request moves to the heap (`server::routes`' `.boxed()`),
/// then holds none of them (docs/benchmarks.md, "The cached path's futures").
pub async fn gate<E: Endpoint>(ep: Arc<E>, req: Request, state: AppState) -> poem::Result<Response> {
    let internal = internal_token_matches(&state, &req);
    if internal {
        AccessNote::credential(&req, "internal");
    }
    if let Some((version, tier)) = Route::of(&req).and_then(|r| Some((r.version, r.decl?.partner_tier()?))) {
        return Box::pin(partner_only(ep, req, &state, version, tier)).await;
    }
    let Some(call) = paid_call(&state, &req) else {
        let access = paths::find(req.uri().path()).map(|p| p.access);
        if internal || access == Some(PathAccess::Probe) {
            return ep.call(req).await.map(IntoResponse::into_response);
        }
        // Free operations, documents and unknown paths count against the client address.
        return match client_rate(&state, &req) {
            Some(d) if !d.allowed => Ok(d.refusal(&request_id(&req))),
            // The internal token's paths do not exist for anyone else.
            _ if access == Some(PathAccess::Internal) => Err(NotFoundError.into()),
            decision => Ok(rate::stamped(decision, ep.call(req).await?.into_response())),
        };
    };
    if internal {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    if let Some(sent) = req.headers().get(PARTNER_TOKEN_HEADER) {
        AccessNote::credential(&req, "partner");
        let sent = sent.to_str().unwrap_or_default().trim().to_owned();
        let (_, decision) = match partner(&state, &req, &sent, call.version, call.tier, &call.request_id).await {
            Ok(checked) => checked,
            Err(refused) => return refused,
        };
        let mut response = ep.call(req).await?.into_response();
        // Paid data answered to one partner is not for shared caches; an answer no cache may
        // keep at all (a stream) stays so, and one that must be revalidated (a file) stays so.
        match response.headers().get(header::CACHE_CONTROL).and_then(|v| v.to_str().ok()) {
            Some("no-store") => {}
            Some(v) if v.contains("no-cache") => {
                response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
            }
            _ => {
                response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private"));
            }
        }
        return Ok(rate::stamped(decision, response));
    }
    // A paid download's grant opens the same file's range requests and resumed downloads
    // (`contract::exports::GRANT_HEADER`): a Parquet reader's many ranges cost one payment.
    if call.downloads
        && let Some(grant) = req.headers().get(GRANT_HEADER).and_then(|v| v.to_str().ok())
        && grant_opens(&state.cursors, req.uri().path(), grant, now_ms())
    {
        AccessNote::credential(&req, "grant");
        return match client_rate(&state, &req) {
            Some(d) if !d.allowed => Ok(d.refusal(&call.request_id)),
            decision => {
                let mut response = ep.call(req).await?.into_response();
                response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
                Ok(rate::stamped(decision, response))
            }
        };
    }
    let sent = [Generation::V2, Generation::V1]
        .into_iter()
        .find_map(|g| req.headers().get(g.request_header()).map(|v| (g, v.to_str().unwrap_or_default().to_owned())));
    match sent {
        Some((generation, header)) => {
            AccessNote::credential(&req, "x402");
            match payment::check(&state, &call, generation, &header) {
                Ok(checked) => Box::pin(payment::pay(ep, req, &state, &call, generation, checked)).await,
                Err(refusal) => {
                    // A payment that does not check out counts against the client, like a challenge.
                    if let Some(refused) = client_refusal(&state, &req, &call.request_id) {
                        return Ok(refused);
                    }
                    Ok(challenge(&state.payments, &call, refusal.reason, refusal.detail))
                }
            }
        }
        None => {
            if let Some(refused) = client_refusal(&state, &req, &call.request_id) {
                return Ok(refused);
            }
            let per = if call.streams { state.payments.prices.per_stream_payment() } else { "per request".to_owned() };
            Ok(challenge(
                &state.payments,
                &call,
                "payment_required",
                format!(
                    "This endpoint is in the {} tier ({} atomic units of the asset {per}). Pay with x402 (send \
                 `X-PAYMENT` or `PAYMENT-SIGNATURE` as the challenge describes) or send a partner token in `{}`.",
                    call.tier.as_str(),
                    state.payments.prices.of(call.tier),
                    PARTNER_TOKEN_HEADER
                ),
            ))
        }
    }
}

/// A partner token's check: known and live (401), within its rate (429), holding a scope that
/// opens `tier` of `version` (403). The token, and the rate decision to stamp on the answer.
async fn partner(
    state: &AppState,
    req: &Request,
    sent: &str,
    version: Version,
    tier: Tier,
    request_id: &str,
) -> Result<(LiveToken, Option<Decision>), poem::Result<Response>> {
    let token = match state.serving.remembered(sent) {
        Some(token) => Some(token),
        None => {
            // A client already over its limit (guessing tokens, say) is refused before the
            // store is asked about a token it does not remember.
            if let Some(d) = state.rates.exhausted(RatePolicy::Client, &client_key(req)) {
                return Err(Ok(d.refusal(request_id)));
            }
            if let Some(away) = state.serving.store_away() {
                return Err(Err(away.into()));
            }
            Box::pin(state.serving.look_up(sent)).await.map_err(|e| Err(problem_marking_read_failed(&e).into()))?
        }
    };
    let Some(token) = token else {
        if let Some(refused) = client_refusal(state, req, request_id) {
            return Err(Ok(refused));
        }
        return Err(Err(Problem::new(
            ErrorCode::Unauthorized,
            format!("The partner token in `{PARTNER_TOKEN_HEADER}` is unknown or has been revoked."),
        )
        .into()));
    };
    let decision = state.rates.check(RatePolicy::Partner, &token.id.to_string(), token.rate);
    if let Some(d) = decision.filter(|d| !d.allowed) {
        return Err(Ok(d.refusal(request_id)));
    }
    let scopes: Vec<Scope> = token.scopes.split(',').filter_map(Scope::parse).collect();
    if !scopes.iter().any(|s| s.grants(version, tier)) {
        return Err(Err(forbidden(version, tier, &scopes).into()));
    }
    Ok((token, decision))
}

/// An operation only a partner token opens (what it manages belongs to the token): no payment
/// is offered, and the handler is handed the token ([`LiveToken`] in the request's extensions).
/// Its answers are the partner's own and change without a new revision: never stored by a cache.
async fn partner_only<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    state: &AppState,
    version: Version,
    tier: Tier,
) -> poem::Result<Response> {
    let request_id = request_id(&req);
    let Some(sent) = req.headers().get(PARTNER_TOKEN_HEADER) else {
        if let Some(refused) = client_refusal(state, &req, &request_id) {
            return Ok(refused);
        }
        return Err(Problem::new(
            ErrorCode::Unauthorized,
            format!(
                "This operation manages what belongs to a partner token: send the token in `{PARTNER_TOKEN_HEADER}` \
                 (it cannot be paid for with x402). Operators manage every partner's webhooks with `govdata webhooks`."
            ),
        )
        .into());
    };
    AccessNote::credential(&req, "partner");
    let sent = sent.to_str().unwrap_or_default().trim().to_owned();
    let (token, decision) = match partner(state, &req, &sent, version, tier, &request_id).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    req.extensions_mut().insert(token);
    let mut response = ep.call(req).await?.into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(rate::stamped(decision, response))
}

/// The client address a request counts against: the connection's peer (a proxy in front
/// should be given its own, larger limit, or turn the client policy off).
pub fn client_key(req: &Request) -> String {
    match req.remote_addr().as_socket_addr() {
        Some(addr) => addr.ip().to_string(),
        None => req.remote_addr().to_string(),
    }
}

/// Counts `req` against its client address (a tool call's MCP request was counted already).
fn client_rate(state: &AppState, req: &Request) -> Option<Decision> {
    if req.extensions().get::<ToolCall>().is_some() {
        return None;
    }
    state.rates.check(RatePolicy::Client, &client_key(req), None)
}

/// Counts `req` against its client address: the 429 when that is over its limit.
fn client_refusal(state: &AppState, req: &Request, request_id: &str) -> Option<Response> {
    client_rate(state, req).filter(|d| !d.allowed).map(|d| d.refusal(request_id))
}

fn request_id(req: &Request) -> String {
    req.extensions().get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default()
}

/// The paid operation `req` asks for, if any (the edge found its route).
fn paid_call(state: &AppState, req: &Request) -> Option<PaidCall> {
    let route = Route::of(req)?;
    let decl = route.decl?;
    let tier = decl.tier()?;
    let path = req.uri().path();
    let url = match req.uri().query() {
        Some(query) => format!("{}{path}?{query}", state.settings.public_url),
        None => format!("{}{path}", state.settings.public_url),
    };
    let method = if req.method() == Method::HEAD { "get" } else { req.method().as_str() };
    let published = state.documents.get(route.version);
    Some(PaidCall {
        version: route.version,
        tier,
        endpoint: format!("{} {}", method.to_ascii_uppercase(), route.template),
        description: published.summary(&route.template, method).unwrap_or(decl.id).to_owned(),
        url,
        streams: decl.streams,
        downloads: decl.downloads,
        discovery: state.documents.discovery.get(decl.id),
        request_id: request_id(req),
    })
}

pub fn internal_token_matches(state: &AppState, req: &Request) -> bool {
    let (Some(configured), Some(sent)) =
        (state.settings.payments.internal_token.as_deref(), req.headers().get(INTERNAL_TOKEN_HEADER))
    else {
        return false;
    };
    // A wrong internal token is ignored, not refused: its existence stays undisclosed.
    !configured.is_empty() && bool::from(configured.as_bytes().ct_eq(sent.as_bytes()))
}

fn forbidden(version: Version, tier: Tier, held: &[Scope]) -> Problem {
    let needed = Scope::needed(version, tier);
    let accepted: Vec<String> = Scope::accepted(version, tier).iter().map(|s| format!("`{}`", s.as_str())).collect();
    let held: Vec<String> = held.iter().map(|s| format!("`{}`", s.as_str())).collect();
    Problem::new(
        ErrorCode::Forbidden,
        format!(
            "This endpoint needs the scope `{}` (any of {} opens it); the token holds {}.",
            needed.as_str(),
            accepted.join(", "),
            if held.is_empty() { "no scope".to_owned() } else { held.join(", ") }
        ),
    )
}
