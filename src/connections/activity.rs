//! What the watchdog of a connection reads: whether the client reads what is written (the I/O
//! wrapper) and whether an answer is still being handed to hyper (the body wrapper).
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};

use super::table::{Busy, Conn};

/// A connection's socket, reporting when a write blocks on the client and when it flows again.
pub struct Watched<S> {
    inner: S,
    conn: Arc<Conn>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, conn: Arc<Conn>) -> Self {
        Self { inner, conn }
    }

    fn observe<T>(&self, poll: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        match &poll {
            Poll::Pending => self.conn.write_blocked(),
            Poll::Ready(_) => self.conn.write_flowed(),
        }
        poll
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.observe(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.observe(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.observe(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An answer's body, holding its connection busy until hyper has taken it whole (hyper drops a
/// body once its last frame is out, or when the connection ends).
pub struct Answer<B> {
    body: B,
    _busy: Busy,
}

impl<B> Answer<B> {
    pub fn new(body: B, busy: Busy) -> Self {
        Self { body, _busy: busy }
    }
}

impl<B: Body + Unpin> Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
