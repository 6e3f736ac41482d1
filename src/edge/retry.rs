//! A read that a replica failed is answered again from another node, so a replica that goes away
//! or cancels a query in a recovery conflict (`max_standby_streaming_delay`) costs a request a
//! second try, never a 500 or a 503 it would not have got from the primary.
//!
//! Each try is one `store::nodes::attempt`: every read of the request goes to the node the first
//! read chose; when a read failed in a way another node may not (`store::failures::problem_marking_read_failed` records
//! it) and that node was a replica, the request is handled again with the replicas that failed it
//! left out, until it was read from the primary or succeeded. Only reads are tried again (`GET`,
//! `HEAD`: they have no body and change nothing); a write is the primary's and answered once.
use std::sync::Arc;

use poem::http::Method;
use poem::{Endpoint, IntoResponse, Request, Response};

use super::AppState;
use crate::store::nodes;

pub async fn serve<E: Endpoint>(ep: Arc<E>, req: Request, state: AppState) -> poem::Result<Response> {
    if !state.nodes.has_replicas() || !matches!(*req.method(), Method::GET | Method::HEAD) {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let (method, uri, version) = (req.method().clone(), req.uri().clone(), req.version());
    let (headers, extensions) = (req.headers().clone(), req.extensions().clone());
    let mut excluded = Vec::new();
    let mut req = req;
    loop {
        let (answer, outcome) = nodes::attempt(excluded.clone(), ep.call(req)).await;
        let Some(replica) = outcome.replica.filter(|_| outcome.failed) else {
            return answer.map(IntoResponse::into_response);
        };
        if outcome.unreachable {
            state.nodes.left(replica, "a read could not reach it".to_owned());
        }
        tracing::info!(replica, uri = %uri, "a replica failed a read; reading again from another node");
        crate::metrics::METRICS.replica_retries.inc();
        excluded.push(replica);
        req = Request::builder().method(method.clone()).uri(uri.clone()).version(version).finish();
        *req.headers_mut() = headers.clone();
        *req.extensions_mut() = extensions.clone();
    }
}
