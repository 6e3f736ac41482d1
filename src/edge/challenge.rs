//! What a paid request is, and the 402 that asks for its payment: shared by the gate (no
//! payment sent) and the payment (one that was refused), which neither calls back into the
//! other for it. A leaf: it knows the payment terms and the wire format, not the gate's rules.
use std::sync::Arc;

use poem::{Response, http::HeaderValue};

use crate::contract::x402::PAYMENT_REQUIRED_HEADER;
use crate::contract::{
    access::{Tier, Version},
    errors::{ErrorCode, Problem},
    exports::ExportFile,
};
use crate::x402::{PaymentTerms, wire};

/// A request for a paid operation.
#[derive(Debug, Clone)]
pub struct PaidCall {
    pub version: Version,
    pub tier: Tier,
    /// `GET /v1/daos/{daoId}/brief`: what a payment record names.
    pub endpoint: String,
    /// The operation's summary, the `description` of what a payment buys.
    pub description: String,
    /// The absolute URL of the requested resource (x402 `resource`).
    pub url: String,
    /// The operation answers a stream (`text/event-stream`) that one payment holds open for a time.
    pub streams: bool,
    /// The operation answers a file (an export): a grant from its payment opens its range requests.
    pub downloads: bool,
    /// The operation's x402 discovery extension (`bazaar`), made once at start-up.
    pub discovery: Option<Arc<serde_json::Value>>,
    pub request_id: String,
}

/// The 402: a problem body carrying the x402 v1 challenge, and the v2 challenge in
/// `PAYMENT-REQUIRED`. `error` is the x402 reason (why payment is still required).
pub fn challenge(terms: &PaymentTerms, call: &PaidCall, error: &str, detail: String) -> Response {
    let resource = resource_info(call);
    let problem = Problem {
        x402_version: Some(1),
        error: Some(error.to_owned()),
        accepts: Some(terms.requirement_v1(call.tier, &resource).into_iter().collect()),
        ..Problem::new(ErrorCode::PaymentRequired, detail)
    };
    let v2 = terms.challenge_v2(call.tier, resource, error, call.discovery.as_deref());
    let mut response = problem.into_response_with(&call.request_id);
    if let Ok(value) = HeaderValue::from_str(&wire::encode_header(&v2)) {
        response.headers_mut().insert(PAYMENT_REQUIRED_HEADER, value);
    }
    response
}

pub fn resource_info(call: &PaidCall) -> wire::ResourceInfo {
    wire::ResourceInfo {
        url: call.url.clone(),
        description: call.description.clone(),
        mime_type: if call.streams {
            "text/event-stream"
        } else if call.downloads {
            call.url
                .rsplit('/')
                .next()
                .and_then(|name| ExportFile::parse(name.split('?').next().unwrap_or(name)))
                .map_or("application/octet-stream", |f| f.format.media_type())
        } else {
            "application/json"
        }
        .to_owned(),
    }
}
