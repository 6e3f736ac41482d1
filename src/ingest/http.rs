//! Upstream etiquette, shared by every HTTP connector: a timeout on every request, bounded
//! concurrency, retries with exponential backoff and full jitter for transient failures
//! (connection errors, timeouts, 5xx), and `429 Retry-After` honoured (seconds or an HTTP date).
//! A request that still fails after the last attempt is an [`UpstreamError`] naming the URL.
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use reqwest::{RequestBuilder, StatusCode, header::RETRY_AFTER};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

/// How hard a connector tries before it gives up on a request.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    pub attempts: u32,
    /// Backoff before the second attempt; doubles each attempt, with full jitter.
    pub base_delay: Duration,
    /// Longest backoff.
    pub max_delay: Duration,
    /// Longest `Retry-After` honoured; a longer one fails the request instead of stalling the run.
    pub max_retry_after: Duration,
    /// Timeout of one attempt, from connecting to the last body byte.
    pub timeout: Duration,
    /// Requests in flight at once to one upstream.
    pub concurrency: usize,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            timeout: Duration::from_secs(30),
            concurrency: 4,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{url}: {reason} (after {attempts} attempts)")]
    Exhausted { url: String, reason: String, attempts: u32 },
    #[error("{url}: HTTP {status}: {body}")]
    Refused { url: String, status: u16, body: String },
    #[error("{url}: asked to wait {wait:?} (Retry-After), longer than the {max:?} allowed")]
    RetryAfterTooLong { url: String, wait: Duration, max: Duration },
    #[error("{url}: the response is not the expected JSON: {reason}")]
    Malformed { url: String, reason: String },
    #[error("{url}: {reason}")]
    Protocol { url: String, reason: String },
}

/// A client for one upstream.
#[derive(Clone)]
pub struct Upstream {
    client: reqwest::Client,
    policy: RetryPolicy,
    slots: Arc<Semaphore>,
}

impl Upstream {
    pub fn new(policy: RetryPolicy) -> Self {
        let client = reqwest::Client::builder()
            .user_agent(concat!("govdata/", env!("CARGO_PKG_VERSION"), " (+governance data ingestion)"))
            .connect_timeout(policy.timeout.min(Duration::from_secs(10)))
            .timeout(policy.timeout)
            .build()
            .expect("a reqwest client with rustls builds");
        let slots = Arc::new(Semaphore::new(policy.concurrency.max(1)));
        Self { client, policy, slots }
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, UpstreamError> {
        let body = self.send(url, || self.client.get(url).header("accept", "application/json")).await?;
        decode(url, &body)
    }

    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        payload: &serde_json::Value,
    ) -> Result<T, UpstreamError> {
        let body = self.send(url, || self.client.post(url).json(payload)).await?;
        decode(url, &body)
    }

    /// Sends the request `build` makes until it succeeds, fails for good, or runs out of attempts.
    async fn send(&self, url: &str, build: impl Fn() -> RequestBuilder) -> Result<Vec<u8>, UpstreamError> {
        let _slot = self.slots.acquire().await.expect("the semaphore is never closed");
        let mut last = String::new();
        for attempt in 1..=self.policy.attempts {
            let wait = match build().send().await {
                Ok(response) if response.status().is_success() => match response.bytes().await {
                    Ok(body) => return Ok(body.to_vec()),
                    Err(e) => {
                        last = format!("reading the body failed: {}", describe(&e));
                        self.backoff(attempt)
                    }
                },
                Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS => {
                    last = "HTTP 429 Too Many Requests".to_owned();
                    match retry_after(&response) {
                        Some(wait) if wait > self.policy.max_retry_after => {
                            return Err(UpstreamError::RetryAfterTooLong {
                                url: url.to_owned(),
                                wait,
                                max: self.policy.max_retry_after,
                            });
                        }
                        Some(wait) => wait,
                        None => self.backoff(attempt),
                    }
                }
                Ok(response) if response.status().is_server_error() => {
                    last = format!("HTTP {}", response.status());
                    self.backoff(attempt)
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response.text().await.unwrap_or_default();
                    return Err(UpstreamError::Refused { url: url.to_owned(), status, body: snippet(&body) });
                }
                Err(e) => {
                    last = describe(&e);
                    self.backoff(attempt)
                }
            };
            if attempt < self.policy.attempts {
                tracing::debug!(url, attempt, ?wait, reason = %last, "upstream request failed; retrying");
                tokio::time::sleep(wait).await;
            }
        }
        Err(UpstreamError::Exhausted { url: url.to_owned(), reason: last, attempts: self.policy.attempts })
    }

    /// Full jitter: a uniform wait in `[0, min(max, base · 2^(attempt-1))]`.
    fn backoff(&self, attempt: u32) -> Duration {
        let cap = self.policy.base_delay.saturating_mul(1 << (attempt - 1).min(16)).min(self.policy.max_delay);
        let millis = cap.as_millis() as u64;
        Duration::from_millis(if millis == 0 { 0 } else { rand::rng().random_range(0..=millis) })
    }
}

fn decode<T: DeserializeOwned>(url: &str, body: &[u8]) -> Result<T, UpstreamError> {
    serde_json::from_slice(body).map_err(|e| UpstreamError::Malformed { url: url.to_owned(), reason: e.to_string() })
}

/// `Retry-After` as delay-seconds or an HTTP date.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    let wait = at - time::OffsetDateTime::now_utc();
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
    }
}

/// The start of an error body, for the run's error message.
fn snippet(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_owned(),
    }
}
