//! Request bodies, read whole at the edge before the request costs anything more: before the
//! gate (no payment reserved) and before a query slot (`bounds`) is taken, so a body that
//! trickles in holds nothing it has not earned. A body is read within its cap (one declared over
//! it is refused from its `Content-Length`, before a byte is read) and within
//! `GOVDATA_BODY_READ_TIMEOUT`; the operation then reads bytes already here.
//!
//! Read here: `/mcp`'s JSON-RPC messages, and the body of every operation whose document
//! declares one (`Route::takes_body`). Every refusal is a 400 problem naming the body, counted
//! as `body_too_large` or `body_timeout` (`connections::report`).
use std::sync::Arc;
use std::time::Duration;

use poem::{
    Endpoint, IntoResponse, Request, Response,
    error::ReadBodyError,
    http::{Method, header},
};

use super::{mcp, route::Route};
use crate::connections::{self, Cause};
use crate::contract::{
    body::{MAX_BODY_BYTES, refuse_body},
    errors::Problem,
};

/// The middleware: reads the body of `req` whole when it is one the edge reads, then passes on.
pub async fn read<E: Endpoint>(ep: Arc<E>, mut req: Request, timeout: Duration) -> poem::Result<Response> {
    if let Some(cap) = cap(&req) {
        // A refused body is left unread: hyper closes the connection after the answer. The read
        // is boxed: only a request with a body builds its future, and this layer's own future,
        // which every request holds, does not hold it (docs/benchmarks.md, "The cached path's
        // futures").
        Box::pin(whole(&mut req, cap, timeout)).await?;
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

/// The cap of `req`'s body, when it has one the edge reads.
fn cap(req: &Request) -> Option<usize> {
    if req.uri().path() == mcp::MCP_PATH {
        return (req.method() == Method::POST).then_some(mcp::MAX_BODY_BYTES);
    }
    Route::of(req).filter(|r| r.takes_body).map(|_| MAX_BODY_BYTES)
}

/// Replaces the body of `req` with its bytes, read within `cap` and `timeout`.
async fn whole(req: &mut Request, cap: usize, timeout: Duration) -> Result<(), Problem> {
    let client = req.remote_addr().as_socket_addr().map(|a| a.ip());
    let refuse = |cause: Cause, problem: Problem| {
        connections::report::record(cause, client);
        problem
    };
    let too_large = || refuse_body(format!("is larger than {cap} bytes"), &format!("at most {cap} bytes"));
    let declared = req.header(header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(refuse(Cause::BodyTooLarge, too_large()));
    }
    let body = req.take_body();
    match tokio::time::timeout(timeout, body.into_bytes_limit(cap)).await {
        Ok(Ok(bytes)) => {
            req.set_body(bytes);
            Ok(())
        }
        Ok(Err(ReadBodyError::PayloadTooLarge)) => Err(refuse(Cause::BodyTooLarge, too_large())),
        Ok(Err(err)) => Err(refuse_body(format!("could not be read: {err}"), "a whole body")),
        Err(_) => {
            let within = humantime::format_duration(timeout);
            Err(refuse(
                Cause::BodyTimeout,
                refuse_body(
                    format!("did not arrive whole within {within}; send it at once"),
                    &format!("the whole body within {within}"),
                ),
            ))
        }
    }
}
