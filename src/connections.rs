//! The accept loop under the app, where abuse is refused before it costs a request: a cap on open
//! connections, a deadline for a request's head (slowloris) that is also the idle keep-alive
//! timeout, a bound on the bytes of a head, and a graceful drain on shutdown.
//!
//! poem's own `Server` offers none of the first three, so connections are served here with
//! hyper directly (what poem uses underneath); every request still goes through the one poem app.
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::{conn::auto, graceful::GracefulShutdown};
use poem::{Addr, Endpoint, endpoint::BoxEndpoint, http::uri::Scheme};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::contract::errors::{ErrorCode, Problem};
use crate::metrics::METRICS;

/// The most bytes hyper buffers for one request head; the app refuses smaller oversized heads
/// with a problem document (`server::MAX_URI_BYTES`, `server::MAX_HEAD_BYTES`), so only a head
/// larger than this meets hyper's bare 431.
pub const HYPER_MAX_HEAD_BYTES: usize = 64 * 1024;
/// Descriptors kept free for the store's connections, files and the process itself when the
/// connection cap is fitted under the descriptor limit.
const RESERVED_DESCRIPTORS: u64 = 256;
/// How long an over-cap connection gets to receive its 503 before it is closed.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// What one process accepts.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Open connections at most; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Longest wait for a request head, counted from when the connection is ready for the next
    /// request: bounds both a slow head and an idle keep-alive connection.
    pub header_read_timeout: Duration,
    /// How long the listener keeps accepting once draining has begun (`/readyz` already answers
    /// 503), so that a load balancer stops routing here before connections are refused.
    pub drain_delay: Duration,
    /// Longest wait for in-flight requests once the listener has closed.
    pub drain_timeout: Duration,
}

/// Draining: set once by a shutdown signal; `/readyz` answers 503 from then on, the listener
/// closes, in-flight requests finish.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self { tx: Arc::new(watch::Sender::new(false)) }
    }
}

impl Shutdown {
    /// Starts draining (idempotent).
    pub fn begin(&self) {
        self.tx.send_replace(true);
    }

    pub fn draining(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once draining has begun.
    pub async fn begun(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|d| *d).await;
    }
}

/// Raises the soft descriptor limit to the hard one and fits `wanted` connections under it, so
/// that accepting never fails with "too many open files" (which would leave `/healthz`
/// unanswered). Returns the cap to use.
pub fn fit_connection_cap(wanted: usize) -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return wanted;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
        limit.rlim_cur
    };
    let room = usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS)).unwrap_or(usize::MAX).max(1);
    if room < wanted {
        tracing::warn!(
            wanted,
            cap = room,
            descriptor_limit = soft,
            "the descriptor limit allows fewer connections than configured; capping"
        );
    }
    wanted.min(room)
}

/// Serves `app` on `listener` until `shutdown` begins, then drains: stops accepting, lets
/// in-flight requests finish within the drain timeout, and returns.
pub async fn serve(
    listener: TcpListener,
    app: Arc<BoxEndpoint<'static>>,
    limits: ConnectionLimits,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(HYPER_MAX_HEAD_BYTES);
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(limits.header_read_timeout);
    let mut accept_errors_logged = false;
    let stop_accepting = async {
        shutdown.begun().await;
        if !limits.drain_delay.is_zero() {
            tracing::info!(delay = ?limits.drain_delay, "draining: /readyz answers 503; still accepting for the delay");
            tokio::time::sleep(limits.drain_delay).await;
        }
    };
    tokio::pin!(stop_accepting);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => { accept_errors_logged = false; pair }
                Err(err) => {
                    // Out of descriptors or memory: back off instead of spinning on the error.
                    if !accept_errors_logged {
                        tracing::error!(error = %err, "cannot accept connections; retrying");
                        accept_errors_logged = true;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop_accepting => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            METRICS.connections_refused.inc();
            tokio::spawn(refuse(stream, limits.max_connections));
            continue;
        };
        METRICS.connections_open.inc();
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let app = app.clone();
            async move {
                let req = poem::Request::from((
                    req,
                    poem::web::LocalAddr(Addr::SocketAddr(local)),
                    poem::web::RemoteAddr(Addr::SocketAddr(remote)),
                    Scheme::HTTP,
                ));
                let response: poem::Response = (**app).get_response(req).await;
                Ok::<_, Infallible>(hyper::Response::from(response))
            }
        });
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away mid-request is not our error; hyper reports it here.
            let _ = connection.await;
            METRICS.connections_open.dec();
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!(timeout = ?limits.drain_timeout, "draining: no new connections; finishing requests in flight");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("drained: every request in flight was answered"),
        () = tokio::time::sleep(limits.drain_timeout) => {
            tracing::warn!(timeout = ?limits.drain_timeout, "drain timeout: closing the connections still open");
        }
    }
    Ok(())
}

/// Answers a connection over the cap with a 503 problem document and closes it, without reading
/// its request: the cap holds however the client behaves.
async fn refuse(mut stream: tokio::net::TcpStream, cap: usize) {
    let problem = Problem::new(
        ErrorCode::Unavailable,
        format!("The server holds its maximum of {cap} connections; retry shortly."),
    );
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let response = problem.into_response_with(&request_id);
    let mut head = format!("HTTP/1.1 {}\r\n", response.status());
    for (name, value) in response.headers() {
        head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap_or_default()));
    }
    let body: Bytes = response.into_body().into_bytes().await.unwrap_or_default();
    head.push_str(&format!(
        "x-request-id: {request_id}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, write).await;
}
