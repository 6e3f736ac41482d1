//! The accept loop under the app, where abuse is refused before it costs a request: a cap on open
//! connections, a deadline for a request's head (slowloris) that is also the idle keep-alive
//! timeout, a bound on the bytes of a head, and a graceful drain on shutdown.
//!
//! poem's own `Server` offers none of the first three, so connections are served here with
//! hyper directly (what poem uses underneath); every request still goes through the one poem app.
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::{conn::auto, graceful::GracefulShutdown};
use poem::{Addr, Endpoint, endpoint::BoxEndpoint, http::uri::Scheme};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use crate::contract::envelope::REQUEST_ID_HEADER;
use crate::contract::errors::{ErrorCode, PROBLEM_CONTENT_TYPE, Problem};
use crate::metrics::METRICS;

/// The longest request target (path and query) the app reads; a longer one is refused with a
/// problem document before any parsing (`server::edge`).
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most bytes of request headers (names and values) the app reads.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;
/// The most bytes hyper buffers for one request head; a head larger than this is refused by
/// hyper, and `Refusals` gives that refusal its problem document.
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
        let connection =
            builder.serve_connection_with_upgrades(TokioIo::new(Refusals::new(stream)), service).into_owned();
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
    let response = closing_response(problem);
    let write = async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, write).await;
}

/// A whole HTTP/1.1 response carrying `problem`, after which the connection closes: for the
/// refusals made below the app, where no poem response exists.
fn closing_response(mut problem: Problem) -> Vec<u8> {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    problem.request_id.clone_from(&request_id);
    let body = serde_json::to_vec(&problem).unwrap_or_default();
    let status = problem.status_code();
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {PROBLEM_CONTENT_TYPE}\r\n{REQUEST_ID_HEADER}: {request_id}\r\n\
         content-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(seconds) = problem.retry_after_s {
        head.push_str(&format!("retry-after: {seconds}\r\n"));
    }
    head.push_str("\r\n");
    let mut response = head.into_bytes();
    response.extend_from_slice(&body);
    response
}

/// The connection as hyper writes to it, with hyper's own refusals rewritten.
///
/// hyper answers a request it cannot parse itself (a head over `HYPER_MAX_HEAD_BYTES`, a raw
/// NUL or another byte HTTP forbids in the request line or a header) with a bare status and no
/// body, then closes the connection; it offers no hook to shape that answer. Those answers are
/// the only 400/414/431 responses with `content-length: 0` (every answer of the app carries a
/// problem document), so they are recognised as they are written and replaced by a problem
/// document, `VALIDATION_ERROR` as the app gives for the same fault in a smaller head.
struct Refusals<S> {
    inner: S,
    /// A replacement being written: the bytes and how many went out.
    pending: Option<(Vec<u8>, usize)>,
}

impl<S> Refusals<S> {
    fn new(inner: S) -> Self {
        Self { inner, pending: None }
    }
}

/// hyper's refusal of an unparsable request, and the problem document that replaces it.
fn replacement(written: &[u8]) -> Option<Vec<u8>> {
    let status = written.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    let end = written.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&written[..end]).ok()?.to_ascii_lowercase();
    if end + 4 != written.len() || !head.contains("\r\ncontent-length: 0") || head.contains("\r\ncontent-type:") {
        return None;
    }
    let detail = match status {
        b"431" | b"414" => format!(
            "The request head is larger than {HYPER_MAX_HEAD_BYTES} bytes; at most {} bytes of target and {} bytes of \
             headers are accepted.",
            MAX_URI_BYTES, MAX_HEAD_BYTES
        ),
        b"400" => "The request is not valid HTTP/1.1: its request line or a header holds a byte HTTP does not \
                   allow (a raw NUL, a control character, a space in the target) or is malformed. Percent-encode \
                   what the target carries."
            .to_owned(),
        _ => return None,
    };
    Some(closing_response(Problem::new(ErrorCode::ValidationError, detail)))
}

impl<S: tokio::io::AsyncWrite + Unpin> Refusals<S> {
    /// Writes out a pending replacement; ready when there is none left.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while let Some((bytes, sent)) = &mut self.pending {
            if *sent == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *sent += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Refusals<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Refusals<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(problem) = replacement(buf) {
            // hyper's bytes count as written; the problem document goes out in their place.
            self.pending = Some((problem, 0));
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        // A bare refusal is a head alone: one slice.
        if let [only] = bufs
            && let Some(problem) = replacement(only)
        {
            self.pending = Some((problem, 0));
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(only.len()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_bare_refusals_are_replaced_and_nothing_else() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Tue, 24 Nov 2026 10:00:00 GMT\r\n\r\n";
        let replaced = String::from_utf8(replacement(bare).expect("replaced")).unwrap();
        assert!(replaced.starts_with("HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\n"));
        let body: serde_json::Value = serde_json::from_str(replaced.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["code"], "VALIDATION_ERROR");
        assert!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").is_some());
        // The app's answers carry bodies (or say what they are): never touched.
        for kept in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 120\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n{}",
            b"{\"data\":1}",
        ] {
            assert!(replacement(kept).is_none(), "{}", String::from_utf8_lossy(kept));
        }
    }
}
