//! Answers made below the app, where no poem response exists: a refusal written straight to a
//! socket, and hyper's bare refusals of unparsable requests rewritten as problem documents.
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::contract::envelope::REQUEST_ID_HEADER;
use crate::contract::errors::{ErrorCode, PROBLEM_CONTENT_TYPE, Problem};

use super::{HYPER_MAX_HEAD_BYTES, MAX_HEAD_BYTES, MAX_URI_BYTES};

/// A whole HTTP/1.1 response carrying `problem`, after which the connection closes: for the
/// refusals made below the app, where no poem response exists.
pub(super) fn closing_response(mut problem: Problem) -> Vec<u8> {
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
pub(super) struct Refusals<S> {
    inner: S,
    /// A replacement being written: the bytes and how many went out.
    pending: Option<(Vec<u8>, usize)>,
}

impl<S> Refusals<S> {
    pub(super) fn new(inner: S) -> Self {
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
