//! The accept loop under the app, where abuse is refused before it costs a request, the way
//! nginx, HAProxy and Envoy hold up:
//! - a cap on open connections per client address, and a global cap at which the longest-idle
//!   connection is closed to admit a newcomer (`table`);
//! - a head-read deadline that runs from accept (and again from the end of each answer, as the
//!   keep-alive idle timeout), whatever the client sends or does not send, and a write deadline
//!   for a client that stops reading (`activity`, enforced by each connection's watchdog);
//! - a bound on the bytes of a head, and refusals as problem documents (`refusals`);
//! - every refusal and cut counted and logged by cause (`report`); a graceful drain on shutdown.
//!
//! poem's own `Server` offers none of this, so connections are served here with hyper directly
//! (what poem uses underneath); every request still goes through the one poem app.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::{conn::auto, graceful::GracefulShutdown};
use poem::{Addr, Endpoint, endpoint::BoxEndpoint, http::uri::Scheme};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::contract::errors::{ErrorCode, Problem};
use crate::metrics::METRICS;

mod activity;
mod refusals;
pub mod report;
mod table;

use refusals::{Refusals, closing_response};
pub use report::Cause;
use table::{Caps, Slot, Table, Verdict};

/// The longest request target (path and query) the app reads; a longer one is refused with a
/// problem document before any parsing (`edge::front`).
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most bytes of request headers (names and values) the app reads.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;
/// The most bytes hyper buffers for one request head; a head larger than this is refused by
/// hyper, and `Refusals` gives that refusal its problem document.
pub const HYPER_MAX_HEAD_BYTES: usize = 64 * 1024;
/// Descriptors kept free for the store's connections, files and the process itself when the
/// connection cap is fitted under the descriptor limit.
const RESERVED_DESCRIPTORS: u64 = 256;
/// How long a refused connection gets to receive its refusal before it is closed.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// What one process accepts.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Open connections at most. At the cap the longest-idle connection is closed to admit a
    /// new one; when none is idle the newcomer is answered 503 and closed.
    pub max_connections: usize,
    /// Open connections at most from one client address (an IPv6 /64); one more is answered
    /// 429 and closed.
    pub max_per_address: usize,
    /// Longest wait for a whole request head, counted from accept and again from the end of each
    /// answer: bounds a connection that sends nothing, a slow head and an idle keep-alive
    /// connection alike.
    pub header_read_timeout: Duration,
    /// Longest a write may wait for the client to read; a client that stops reading (or reads a
    /// byte now and then) is cut.
    pub write_timeout: Duration,
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
    // Every cause is a series from the start, at 0, so a dashboard's rate() sees the first one.
    for cause in Cause::ALL {
        METRICS.refusals.with_label_values(&[cause.label()]);
    }
    let table = Table::new(Caps { max_connections: limits.max_connections, max_per_address: limits.max_per_address });
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's own head timeout starts at a head's first byte, and the protocol sniffing of the
    // auto builder waits for bytes without any: each connection's watchdog bounds the head from
    // accept instead, so hyper's is off (one clock, one count of what it closed).
    builder.http1().timer(TokioTimer::new()).header_read_timeout(None).max_buf_size(HYPER_MAX_HEAD_BYTES);
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
        let slot = match table.admit(remote.ip()) {
            Ok(slot) => slot,
            Err(cause) => {
                report::record(cause, Some(remote.ip()));
                tokio::spawn(refuse(stream, cause, table.caps()));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
        let connection = serve_one(&builder, stream, (local, remote), app.clone(), &slot);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            METRICS.connections_open.inc();
            let conn = slot.conn.clone();
            tokio::select! {
                // A client that goes away mid-request is not our error; hyper reports it here.
                _ = connection => {}
                cause = watchdog(&conn, limits, fd) => report::record(cause, Some(conn.client)),
            }
            METRICS.connections_open.dec();
            drop(slot);
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

/// One connection served by hyper: each request goes to the app, and holds the connection busy
/// until hyper has taken its whole answer.
fn serve_one(
    builder: &auto::Builder<TokioExecutor>,
    stream: TcpStream,
    (local, remote): (SocketAddr, SocketAddr),
    app: Arc<BoxEndpoint<'static>>,
    slot: &Slot,
) -> impl hyper_util::server::graceful::GracefulConnection + use<> {
    let conn = slot.conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let (app, busy) = (app.clone(), conn.begin());
        async move {
            let req = poem::Request::from((
                req,
                poem::web::LocalAddr(Addr::SocketAddr(local)),
                poem::web::RemoteAddr(Addr::SocketAddr(remote)),
                Scheme::HTTP,
            ));
            let response: poem::Response = (**app).get_response(req).await;
            Ok::<_, Infallible>(hyper::Response::from(response).map(|body| activity::Answer::new(body, busy)))
        }
    });
    let io = TokioIo::new(Refusals::new(activity::Watched::new(stream, slot.conn.clone())));
    builder.serve_connection_with_upgrades(io, service).into_owned()
}

/// Resolves when the connection is to be closed, with why: no whole head within the head-read
/// timeout of accept or of its last answer, a write waiting on the client past the write
/// timeout, or closed by the table to admit another. A connection closed with an answer still
/// waiting on the client is reset (socket `fd`), so the kernel stops sending it.
async fn watchdog(conn: &table::Conn, limits: ConnectionLimits, fd: std::os::fd::RawFd) -> Cause {
    let head_ms = limits.header_read_timeout.as_millis() as u64;
    let write_ms = limits.write_timeout.as_millis() as u64;
    // One timer for the connection's life, moved as the deadline moves.
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    loop {
        match conn.verdict(conn.now_ms(), head_ms, write_ms) {
            Verdict::Close(cause) => {
                // Here, while the connection (polled beside this watchdog) still holds the socket
                // open: `select!` drops it before running the winning arm. An answer the client
                // has not read (a write waiting, or bytes the kernel still holds for it) means a
                // client that stopped reading: reset, and count it as such.
                if conn.write_stalled() || unsent_bytes(fd) > 0 {
                    reset_on_close(fd);
                    return if cause == Cause::IdleTimeout { Cause::WriteTimeout } else { cause };
                }
                return cause;
            }
            Verdict::Until(due) => {
                timer.as_mut().reset(conn.instant(due).into());
                tokio::select! {
                    () = &mut timer => {}
                    () = conn.wake.notified() => {}
                }
            }
        }
    }
}

/// Bytes written to the socket that the client has not yet acknowledged (`TIOCOUTQ`): an answer
/// the kernel holds whole once hyper is done, for a client that reads slowly.
fn unsent_bytes(fd: std::os::fd::RawFd) -> libc::c_int {
    let mut unsent: libc::c_int = 0;
    // SAFETY: `fd` is the connection's open socket (see `reset_on_close`); the ioctl writes one
    // int through the pointer passed.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &raw mut unsent) } == 0;
    if ok { unsent } else { 0 }
}

/// Makes closing the socket a reset that discards what the client has not read, as nginx's
/// `reset_timedout_connection` does: a client that stopped reading would otherwise keep the
/// kernel sending the rest of the answer after the connection is gone.
fn reset_on_close(fd: std::os::fd::RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `fd` is the connection's socket, held open by the connection future that is polled
    // beside the watchdog calling this; setsockopt reads the struct passed by pointer with its size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Answers a refused connection with a problem document and closes it, without reading its
/// request: the caps hold however the client behaves.
async fn refuse(mut stream: TcpStream, cause: Cause, caps: Caps) {
    let problem = match cause {
        Cause::AddressCap => Problem {
            retry_after_s: Some(1),
            ..Problem::new(
                ErrorCode::RateLimited,
                format!(
                    "This client address holds its maximum of {} open connections; reuse one (keep-alive) or retry \
                     when one closes.",
                    caps.max_per_address
                ),
            )
        },
        _ => Problem::new(
            ErrorCode::Unavailable,
            format!("The server holds its maximum of {} connections, all busy; retry shortly.", caps.max_connections),
        ),
    };
    let response = closing_response(problem);
    let write = async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, write).await;
}
