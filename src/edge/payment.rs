//! Serving one request paid with x402, in the order the reference servers follow:
//! local checks → reserve `(payer, nonce)` → facilitator `/verify` → the handler, its response
//! buffered → `/settle` only when the handler succeeded → the settled payment recorded → the
//! body, with the payment response header. A handler error is never charged; a refused
//! settlement withholds the body.
use std::sync::Arc;

use poem::{
    Body, Endpoint, IntoResponse, Request, Response,
    http::{HeaderValue, header},
};

use super::{
    AppState,
    gate::{PaidCall, challenge, client_refusal, resource_info},
    rate,
};
use crate::contract::x402::Generation;
use crate::contract::{
    access::RatePolicy,
    errors::{ErrorCode, Problem},
    time::now_ms,
};
use crate::store::failures::problem_marking_read_failed;
use crate::store::payments::{self, NewPayment, Reservation};
use crate::x402::wire;

/// Marks a request paid with x402 for its handler: a stream it buys is held for the paid time.
#[derive(Debug, Clone, Copy)]
pub struct PaidByPayment;

pub async fn pay<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    state: &AppState,
    call: &PaidCall,
    generation: Generation,
    header: &str,
) -> poem::Result<Response> {
    let terms = &state.payments;
    let now = now_ms();
    let outcome = |o: &str| crate::metrics::METRICS.payments.with_label_values(&[o]).inc();
    let candidate = match terms.check(generation, header, call.tier, &resource_info(call), (now / 1000) as u64) {
        Ok(candidate) => candidate,
        Err(refusal) => {
            outcome("invalid");
            // A payment that does not check out counts against the client, like a challenge.
            if let Some(refused) = client_refusal(state, &req, &call.request_id) {
                return Ok(refused);
            }
            return Ok(challenge(state, call, refusal.reason, refusal.detail));
        }
    };
    // Refused for rate before anything is reserved, verified or settled: never charged.
    let decision = state.rates.check(RatePolicy::Payer, &candidate.payer.to_ascii_lowercase(), None);
    if let Some(d) = decision.filter(|d| !d.allowed) {
        return Ok(d.refusal(&call.request_id));
    }
    let (Some(facilitator), Some(pay_to)) = (terms.facilitator.as_ref(), terms.pay_to) else {
        return Ok(challenge(
            state,
            call,
            "payments_not_enabled",
            "This server does not settle payments at the moment (no facilitator is configured); use a partner token."
                .to_owned(),
        ));
    };
    let (asset, pay_to) = (terms.asset.to_checksum(None), pay_to.to_checksum(None));
    let new = NewPayment {
        payer: &candidate.payer,
        nonce: &candidate.nonce,
        x402_version: generation.number(),
        amount: &candidate.amount,
        asset: &asset,
        network: &terms.network,
        pay_to: &pay_to,
        endpoint: &call.endpoint,
    };
    let id = match payments::reserve(state.primary()?, &new, now).await.map_err(|e| problem_marking_read_failed(&e))? {
        Reservation::Reserved(id) => id,
        Reservation::Replayed => {
            outcome("replayed");
            return Ok(challenge(
                state,
                call,
                "invalid_exact_evm_payload_authorization_nonce_used",
                format!(
                    "The authorization from {} with nonce {} was presented before; an authorization pays once. Sign a \
                     new one.",
                    candidate.payer, candidate.nonce
                ),
            ));
        }
    };
    let failed = |reason: String| async move {
        if let Err(err) = payments::fail(&state.db, id, &reason).await {
            tracing::error!(error = %err, payment = id, %reason, "could not mark a payment failed");
        }
    };

    match facilitator.verify(&candidate.payload, candidate.requirement.clone()).await {
        Ok(verdict) if verdict.is_valid => {}
        Ok(verdict) => {
            let reason = verdict.invalid_reason.unwrap_or_else(|| "invalid_payment".to_owned());
            failed(format!("verify: {reason}")).await;
            outcome("verify_refused");
            return Ok(challenge(
                state,
                call,
                // Another party's text: keep it to the characters of an x402 reason code.
                &sanitize(&reason),
                format!("The payment facilitator refused the payment ({reason}); nothing was charged."),
            ));
        }
        Err(err) => {
            failed(format!("verify: {err}")).await;
            outcome("verify_error");
            tracing::warn!(error = %err, request = %call.request_id, "facilitator verify failed");
            return Err(
                upstream("could not verify the payment; nothing was charged. Retry with a new authorization.").into()
            );
        }
    }

    req.extensions_mut().insert(PaidByPayment);
    let response = match ep.call(req).await {
        Ok(response) => response.into_response(),
        Err(err) => {
            failed(format!("the request answered {}; not charged", err.status().as_u16())).await;
            outcome("not_charged");
            return Err(err);
        }
    };
    if !response.status().is_success() {
        failed(format!("the request answered {}; not charged", response.status().as_u16())).await;
        outcome("not_charged");
        return Ok(response);
    }
    // Settlement comes before the body leaves, so the body is buffered (pages are bounded). A
    // stream never ends: it is settled once it opened, and sent as it comes.
    let (parts, body) = response.into_parts();
    let streams =
        parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = if streams {
        body
    } else {
        match body.into_bytes().await {
            Ok(bytes) => Body::from(bytes),
            Err(err) => {
                failed(format!("the response body failed: {err}; not charged")).await;
                return Err(Problem::new(
                    ErrorCode::InternalError,
                    "The request failed on our side; nothing was charged.",
                )
                .into());
            }
        }
    };

    let mut settled = match facilitator.settle(&candidate.payload, candidate.requirement).await {
        Ok(settled) if settled.success => settled,
        Ok(refused) => {
            let reason = refused.error_reason.unwrap_or_else(|| "settlement_failed".to_owned());
            failed(format!("settle: {reason}")).await;
            outcome("settle_refused");
            return Ok(challenge(
                state,
                call,
                &sanitize(&reason),
                format!("Settlement was refused ({reason}); the response is withheld and nothing was charged."),
            ));
        }
        Err(err) => {
            // The transfer may or may not have happened: keep the reservation for reconciliation.
            if let Err(db) = payments::note(&state.db, id, &format!("settle: {err}")).await {
                tracing::error!(error = %db, payment = id, "could not note a failed settlement");
            }
            outcome("settle_error");
            tracing::error!(error = %err, payment = id, request = %call.request_id, "facilitator settle failed");
            return Err(upstream(&format!(
                "failed while settling; the response is withheld. Quote payer {} and nonce {} if you were charged.",
                candidate.payer, candidate.nonce
            ))
            .into());
        }
    };
    // Durable before the response leaves. Should the write fail, the payer has still paid: the
    // data is served and the transaction is logged for an operator to record.
    if let Err(err) = payments::settle(&state.db, id, &candidate.amount, &settled.transaction, now_ms()).await {
        tracing::error!(error = %err, payment = id, transaction = %settled.transaction, "could not record a settled payment");
    }
    outcome("settled");
    settled.payer.get_or_insert_with(|| candidate.payer.clone());
    let mut response = Response::from_parts(parts, body);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&wire::encode_header(&settled)) {
        headers.insert(generation.response_header(), value);
    }
    // A paid response carries a one-off receipt: no cache may keep or replay it.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(rate::stamped(decision, response))
}

fn upstream(what: &str) -> Problem {
    Problem::new(ErrorCode::UpstreamError, format!("The payment facilitator {what}"))
}

/// Keeps a facilitator's reason to the characters of an x402 reason code.
fn sanitize(reason: &str) -> String {
    let kept: String =
        reason.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')).take(120).collect();
    if kept.is_empty() { "invalid_payment".to_owned() } else { kept }
}
