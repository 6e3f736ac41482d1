//! Serving one request paid with x402, in the order the reference servers follow, one named
//! step each: [`check`] the payment locally → [`reserve`] `(payer, nonce)` → [`verify`] it with
//! the facilitator → [`serve`] the handler, its response buffered → [`settle`] only when the
//! handler succeeded, the settled payment recorded → the body, with the payment response header.
//! A handler error is never charged; a refused settlement withholds the body.
//!
//! The gate decides that a request is paid and calls [`check`], then [`pay`]; nothing here calls
//! back into the gate (the 402 is `edge::challenge`'s). A step that stops the request hands back
//! its answer (`Err(answer)`), which [`pay`] returns.
use std::sync::Arc;

use poem::{
    Body, Endpoint, IntoResponse, Request, Response, ResponseParts as Parts,
    http::{HeaderValue, header},
};

use super::{
    AppState,
    challenge::{PaidCall, challenge, resource_info},
    rate::{self, Decision},
};
use crate::contract::x402::Generation;
use crate::contract::{
    access::RatePolicy,
    errors::{ErrorCode, Problem},
    time::now_ms,
};
use crate::store::failures::problem_marking_read_failed;
use crate::store::payments::{self, NewPayment, Reservation};
use crate::x402::{CheckedPayment, Refusal, facilitator::Facilitator, wire};

/// Marks a request paid with x402 for its handler: a stream it buys is held for the paid time.
#[derive(Debug, Clone, Copy)]
pub struct PaidByPayment;

/// A payment that checked out locally, and when: its reservation is made at that time.
pub struct Checked {
    payment: CheckedPayment,
    at_ms: i64,
}

/// A reserved payment, on its way to being verified and settled.
struct Reserved<'a> {
    /// The row to settle or fail.
    id: i64,
    facilitator: &'a Facilitator,
    /// The payer's rate decision, stamped on the answer.
    decision: Option<Decision>,
}

/// The answer a step stops the request with: a response (a challenge, a refusal) or an error.
type Stop = poem::Result<Response>;

fn outcome(o: &str) {
    crate::metrics::METRICS.payments.with_label_values(&[o]).inc();
}

/// Check: the payment `header` carries, for `call`, checked without the network (its form, its
/// signature, its amount and time). A refusal is counted; the gate answers it.
pub fn check(state: &AppState, call: &PaidCall, generation: Generation, header: &str) -> Result<Checked, Refusal> {
    let now = now_ms();
    match state.payments.check(generation, header, call.tier, &resource_info(call), (now / 1000) as u64) {
        Ok(payment) => Ok(Checked { payment, at_ms: now }),
        Err(refusal) => {
            outcome("invalid");
            Err(refusal)
        }
    }
}

/// Serves `req`, paid by the payment [`check`] let through: reserve, verify, serve, settle.
pub async fn pay<E: Endpoint>(
    ep: Arc<E>,
    req: Request,
    state: &AppState,
    call: &PaidCall,
    generation: Generation,
    checked: Checked,
) -> poem::Result<Response> {
    let Checked { payment, at_ms } = checked;
    let reserved = match reserve(state, call, generation, &payment, at_ms).await {
        Ok(reserved) => reserved,
        Err(stop) => return stop,
    };
    if let Err(stop) = verify(state, call, &reserved, &payment).await {
        return stop;
    }
    let (parts, body) = match serve(ep, req, state, &reserved).await {
        Ok(served) => served,
        Err(stop) => return stop,
    };
    settle(state, call, generation, reserved, payment, parts, body).await
}

/// Reserve: the payer within its rate, payments enabled, and `(payer, nonce)` reserved (a
/// replay is refused). Refused for rate before anything is reserved, verified or settled: never
/// charged.
async fn reserve<'a>(
    state: &'a AppState,
    call: &PaidCall,
    generation: Generation,
    payment: &CheckedPayment,
    now: i64,
) -> Result<Reserved<'a>, Stop> {
    let terms = &state.payments;
    let decision = state.rates.check(RatePolicy::Payer, &payment.payer.to_ascii_lowercase(), None);
    if let Some(d) = decision.filter(|d| !d.allowed) {
        return Err(Ok(d.refusal(&call.request_id)));
    }
    let (Some(facilitator), Some(pay_to)) = (terms.facilitator.as_ref(), terms.pay_to) else {
        return Err(Ok(challenge(
            terms,
            call,
            "payments_not_enabled",
            "This server does not settle payments at the moment (no facilitator is configured); use a partner token."
                .to_owned(),
        )));
    };
    let (asset, pay_to) = (terms.asset.to_checksum(None), pay_to.to_checksum(None));
    let new = NewPayment {
        payer: &payment.payer,
        nonce: &payment.nonce,
        x402_version: generation.number(),
        amount: &payment.amount,
        asset: &asset,
        network: &terms.network,
        pay_to: &pay_to,
        endpoint: &call.endpoint,
    };
    let primary = state.primary().map_err(|p| -> Stop { Err(p.into()) })?;
    match payments::reserve(primary, &new, now)
        .await
        .map_err(|e| -> Stop { Err(problem_marking_read_failed(&e).into()) })?
    {
        Reservation::Reserved(id) => Ok(Reserved { id, facilitator, decision }),
        Reservation::Replayed => {
            outcome("replayed");
            Err(Ok(challenge(
                terms,
                call,
                "invalid_exact_evm_payload_authorization_nonce_used",
                format!(
                    "The authorization from {} with nonce {} was presented before; an authorization pays once. Sign a \
                     new one.",
                    payment.payer, payment.nonce
                ),
            )))
        }
    }
}

/// Marks the reserved payment failed (nothing was charged), with the reason.
async fn failed(state: &AppState, reserved: &Reserved<'_>, reason: String) {
    let id = reserved.id;
    if let Err(err) = payments::fail(&state.db, id, &reason).await {
        tracing::error!(error = %err, payment = id, %reason, "could not mark a payment failed");
    }
}

/// Verify: the facilitator's `/verify`. A refusal or a failure fails the payment.
async fn verify(
    state: &AppState,
    call: &PaidCall,
    reserved: &Reserved<'_>,
    payment: &CheckedPayment,
) -> Result<(), Stop> {
    match reserved.facilitator.verify(&payment.payload, payment.requirement.clone()).await {
        Ok(verdict) if verdict.is_valid => Ok(()),
        Ok(verdict) => {
            let reason = verdict.invalid_reason.unwrap_or_else(|| "invalid_payment".to_owned());
            failed(state, reserved, format!("verify: {reason}")).await;
            outcome("verify_refused");
            Err(Ok(challenge(
                &state.payments,
                call,
                // Another party's text: keep it to the characters of an x402 reason code.
                &sanitize(&reason),
                format!("The payment facilitator refused the payment ({reason}); nothing was charged."),
            )))
        }
        Err(err) => {
            failed(state, reserved, format!("verify: {err}")).await;
            outcome("verify_error");
            tracing::warn!(error = %err, request = %call.request_id, "facilitator verify failed");
            Err(Err(
                upstream("could not verify the payment; nothing was charged. Retry with a new authorization.").into()
            ))
        }
    }
}

/// Serve: the handler's answer, its body buffered. An error or a failure answer is not charged
/// (the payment fails, the answer goes as it is).
async fn serve<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    state: &AppState,
    reserved: &Reserved<'_>,
) -> Result<(Parts, Body), Stop> {
    req.extensions_mut().insert(PaidByPayment);
    let response = match ep.call(req).await {
        Ok(response) => response.into_response(),
        Err(err) => {
            failed(state, reserved, format!("the request answered {}; not charged", err.status().as_u16())).await;
            outcome("not_charged");
            return Err(Err(err));
        }
    };
    if !response.status().is_success() {
        failed(state, reserved, format!("the request answered {}; not charged", response.status().as_u16())).await;
        outcome("not_charged");
        return Err(Ok(response));
    }
    // Settlement comes before the body leaves, so the body is buffered (pages are bounded). A
    // stream never ends: it is settled once it opened, and sent as it comes.
    let (parts, body) = response.into_parts();
    let streams =
        parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if streams {
        return Ok((parts, body));
    }
    match body.into_bytes().await {
        Ok(bytes) => Ok((parts, Body::from(bytes))),
        Err(err) => {
            failed(state, reserved, format!("the response body failed: {err}; not charged")).await;
            Err(Err(
                Problem::new(ErrorCode::InternalError, "The request failed on our side; nothing was charged.").into()
            ))
        }
    }
}

/// Settle: the facilitator's `/settle`, the settled payment recorded, and the answer with the
/// payment response header. A refused settlement withholds the body.
async fn settle(
    state: &AppState,
    call: &PaidCall,
    generation: Generation,
    reserved: Reserved<'_>,
    payment: CheckedPayment,
    parts: Parts,
    body: Body,
) -> poem::Result<Response> {
    let id = reserved.id;
    let mut settled = match reserved.facilitator.settle(&payment.payload, payment.requirement).await {
        Ok(settled) if settled.success => settled,
        Ok(refused) => {
            let reason = refused.error_reason.unwrap_or_else(|| "settlement_failed".to_owned());
            failed(state, &reserved, format!("settle: {reason}")).await;
            outcome("settle_refused");
            return Ok(challenge(
                &state.payments,
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
                payment.payer, payment.nonce
            ))
            .into());
        }
    };
    // Durable before the response leaves. Should the write fail, the payer has still paid: the
    // data is served and the transaction is logged for an operator to record.
    if let Err(err) = payments::settle(&state.db, id, &payment.amount, &settled.transaction, now_ms()).await {
        tracing::error!(error = %err, payment = id, transaction = %settled.transaction, "could not record a settled payment");
    }
    outcome("settled");
    settled.payer.get_or_insert_with(|| payment.payer.clone());
    let mut response = Response::from_parts(parts, body);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&wire::encode_header(&settled)) {
        headers.insert(generation.response_header(), value);
    }
    // A paid response carries a one-off receipt: no cache may keep or replay it.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(rate::stamped(reserved.decision, response))
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
