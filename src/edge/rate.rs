//! Rate limits (`contract::access::RatePolicy`): counted in memory on the request path, shared
//! with the other processes on the same store in the background.
//!
//! Each key (`partner:7`, `payer:0xabc…`, `client:203.0.113.9`) is counted in fixed windows
//! aligned to the epoch, and a request is admitted while the sliding estimate, the previous
//! window's count weighted by how much of it still overlaps plus the current window's, stays
//! within the quota. Every [`SYNC_INTERVAL`] a task reports what this process admitted per
//! active key and reads every process's totals back, in one batched upsert
//! (`store::rates::exchange`).
//!
//! **Cost per request**: one hash-map update under a short lock; no store access. **Tolerance
//! across processes**: a process knows the others' counts as of its last exchange, so across
//! N processes a key can be over-admitted by what the other N-1 admitted for it within the last
//! two intervals (at most 0.5 s of its traffic); with one process the limit is exact. A store
//! that cannot be reached leaves every process limiting on what it knows.
use std::collections::HashMap;
use std::sync::{Arc, Weak};

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::Mutex;
use std::time::Duration;

use poem::Response;
use poem::http::HeaderValue;
use sea_orm::DatabaseConnection;

use crate::config::RateSettings;
use crate::contract::access::{RATE_LIMIT_HEADER, RATE_LIMIT_POLICY_HEADER, Rate, RatePolicy};
use crate::contract::errors::{ErrorCode, Problem};
use crate::contract::time::now_ms;
use crate::store::rates::{self, Report};

/// How often admitted counts are exchanged with the other processes.
pub const SYNC_INTERVAL: Duration = Duration::from_millis(250);
/// How often windows no process needs any more are deleted from the store.
const SWEEP_EVERY: u32 = 240;

/// One key's counts, all processes' as last exchanged plus this process's since.
#[derive(Debug, Default)]
struct Counter {
    window_ms: i64,
    start_ms: i64,
    /// Every process's admissions in the current window (as known).
    total: i64,
    /// This process's admissions in the current window not yet reported.
    unsynced: i64,
    /// Every process's admissions in the previous window.
    previous: i64,
    /// This process's admissions in the previous window not yet reported.
    previous_unsynced: i64,
    last_seen_ms: i64,
}

impl Counter {
    /// Moves the counter to the window holding `now`.
    fn roll(&mut self, now: i64, window_ms: i64) {
        let start = now - now.rem_euclid(window_ms);
        if self.window_ms != window_ms {
            *self = Self { window_ms, start_ms: start, ..Self::default() };
        } else if start > self.start_ms {
            let adjacent = start - self.start_ms == window_ms;
            // Admissions of a window left behind are still reported (for the other processes).
            self.previous_unsynced = self.unsynced;
            self.previous = if adjacent { self.total } else { 0 };
            self.start_ms = start;
            self.total = 0;
            self.unsynced = 0;
            if !adjacent {
                self.previous_unsynced = 0;
            }
        }
    }

    fn estimate(&self, now: i64) -> f64 {
        let overlap = (self.window_ms - (now - self.start_ms)) as f64 / self.window_ms as f64;
        self.previous as f64 * overlap + self.total as f64
    }
}

/// What the limiter decided for one request.
#[derive(Debug, Clone, Copy)]
pub struct Decision {
    pub policy: RatePolicy,
    pub rate: Rate,
    pub allowed: bool,
    pub remaining: u32,
    /// Seconds until the current window ends.
    pub reset_s: u64,
    /// For a refusal: seconds until a request would be admitted.
    pub retry_after_s: u64,
}

impl Decision {
    fn headers(&self, response: &mut Response) {
        let name = self.policy.name();
        let policy = format!("\"{name}\";q={};w={}", self.rate.quota, self.rate.window_s);
        let state = format!("\"{name}\";r={};t={}", self.remaining, self.reset_s);
        for (header, value) in [(RATE_LIMIT_POLICY_HEADER, policy), (RATE_LIMIT_HEADER, state)] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(header, value);
            }
        }
    }

    /// The 429 for a refused request.
    pub fn refusal(&self, request_id: &str) -> Response {
        crate::metrics::METRICS.rate_limited.with_label_values(&[self.policy.name()]).inc();
        let who = match self.policy {
            RatePolicy::Client => "this client address",
            RatePolicy::Partner => "this partner token",
            RatePolicy::Payer => "this payer",
        };
        let problem = Problem {
            retry_after_s: Some(self.retry_after_s),
            ..Problem::new(
                ErrorCode::RateLimited,
                format!(
                    "The {} limit of {} requests per {} s for {who} is used up; retry in {} s. Nothing was charged.",
                    self.policy.name(),
                    self.rate.quota,
                    self.rate.window_s,
                    self.retry_after_s
                ),
            )
        };
        let mut response = problem.into_response_with(request_id);
        self.headers(&mut response);
        response
    }
}

/// `response` with the state of the limit that admitted it, if one applied.
pub fn stamped(decision: Option<Decision>, mut response: Response) -> Response {
    if let Some(d) = decision {
        d.headers(&mut response);
    }
    response
}

/// The counters of this process.
pub struct RateLimiter {
    settings: RateSettings,
    counters: Mutex<HashMap<String, Counter>>,
}

impl RateLimiter {
    /// A limiter sharing its counts through `db`; the exchange task stops when it is dropped.
    pub fn start(settings: RateSettings, db: DatabaseConnection) -> Arc<Self> {
        let limiter = Arc::new(Self { settings, counters: Mutex::default() });
        tokio::spawn(exchange_loop(Arc::downgrade(&limiter), db));
        limiter
    }

    /// Counts a request for `key` under `policy` (with `rate`, or the policy's configured one),
    /// unless it would exceed the limit. `None`: the policy is off.
    pub fn check(&self, policy: RatePolicy, key: &str, rate: Option<Rate>) -> Option<Decision> {
        self.decide(policy, key, rate, true)
    }

    /// Whether `key` is over its limit now, without counting a request.
    pub fn exhausted(&self, policy: RatePolicy, key: &str) -> Option<Decision> {
        self.decide(policy, key, None, false).filter(|d| !d.allowed)
    }

    fn decide(&self, policy: RatePolicy, key: &str, rate: Option<Rate>, count: bool) -> Option<Decision> {
        let rate = rate.or(self.settings.of(policy))?;
        let now = now_ms();
        let window_ms = i64::from(rate.window_s.max(1)) * 1_000;
        let quota = f64::from(rate.quota);
        // The window is part of the key: counts of different rates for one key never meet.
        let full_key = format!("{}/{}:{key}", policy.name(), rate.window_s);
        let mut counters = self.counters.lock();
        let counter = match counters.get_mut(&full_key) {
            Some(c) => c,
            None if !count => return None,
            None => counters.entry(full_key).or_default(),
        };
        counter.roll(now, window_ms);
        counter.last_seen_ms = now;
        let estimate = counter.estimate(now);
        let elapsed = now - counter.start_ms;
        let reset_s = ((window_ms - elapsed) as u64).div_ceil(1_000);
        if estimate + 1.0 > quota {
            let wait_ms = if counter.total as f64 + 1.0 > quota || counter.previous == 0 {
                window_ms - elapsed
            } else {
                // The previous window's weight must fall to what the quota leaves.
                let overlap = (quota - counter.total as f64 - 1.0) / counter.previous as f64;
                ((1.0 - overlap) * window_ms as f64) as i64 - elapsed
            };
            let retry_after_s = (wait_ms.max(1) as u64).div_ceil(1_000);
            return Some(Decision { policy, rate, allowed: false, remaining: 0, reset_s, retry_after_s });
        }
        if count {
            counter.total += 1;
            counter.unsynced += 1;
        }
        let remaining = (quota - estimate - f64::from(u8::from(count))).floor().max(0.0) as u32;
        Some(Decision { policy, rate, allowed: true, remaining, reset_s, retry_after_s: 0 })
    }

    /// What to report: every key seen in its current window (a read, when nothing was admitted
    /// since), and the unreported rest of a window just left.
    fn reports(&self, now: i64) -> Vec<Report> {
        let mut counters = self.counters.lock();
        counters.retain(|_, c| now - c.last_seen_ms < 2 * c.window_ms || c.unsynced > 0 || c.previous_unsynced > 0);
        let mut reports = Vec::new();
        for (key, c) in counters.iter() {
            if c.previous_unsynced > 0 {
                let start = c.start_ms - c.window_ms;
                reports.push(Report {
                    key: key.clone(),
                    window_start_ms: start,
                    admitted: c.previous_unsynced,
                    expires_ms: start + 2 * c.window_ms,
                });
            }
            if now - c.last_seen_ms < c.window_ms {
                reports.push(Report {
                    key: key.clone(),
                    window_start_ms: c.start_ms,
                    admitted: c.unsynced,
                    expires_ms: c.start_ms + 2 * c.window_ms,
                });
            }
        }
        reports
    }

    /// Takes in the totals the store returned for `reports`.
    fn settle(&self, reports: &[Report], totals: &[(String, i64, i64)]) {
        let reported: HashMap<(&str, i64), i64> =
            reports.iter().map(|r| ((r.key.as_str(), r.window_start_ms), r.admitted)).collect();
        let mut counters = self.counters.lock();
        for (key, start, total) in totals {
            let (Some(c), Some(&sent)) = (counters.get_mut(key), reported.get(&(key.as_str(), *start))) else {
                continue;
            };
            if *start == c.start_ms {
                c.unsynced -= sent.min(c.unsynced);
                c.total = total + c.unsynced;
            } else if *start == c.start_ms - c.window_ms {
                c.previous_unsynced -= sent.min(c.previous_unsynced);
                c.previous = total + c.previous_unsynced;
            }
        }
    }
}

async fn exchange_loop(limiter: Weak<RateLimiter>, db: DatabaseConnection) {
    let mut tick = tokio::time::interval(SYNC_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u32 = 0;
    let mut failing = false;
    loop {
        tick.tick().await;
        let Some(limiter) = limiter.upgrade() else { return };
        ticks = ticks.wrapping_add(1);
        let now = now_ms();
        let reports = limiter.reports(now);
        if !reports.is_empty() {
            match rates::exchange(&db, &reports).await {
                Ok(totals) => {
                    limiter.settle(&reports, &totals);
                    failing = false;
                }
                Err(err) if !failing => {
                    tracing::warn!(error = %err, "cannot share rate-limit counts; limiting on this process's own");
                    failing = true;
                }
                Err(_) => {}
            }
        }
        if ticks.is_multiple_of(SWEEP_EVERY)
            && let Err(err) = rates::sweep(&db, now).await
        {
            tracing::debug!(error = %err, "cannot sweep old rate-limit windows");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_admitted_up_to_its_quota_then_told_when_to_retry() {
        let c = Counter { window_ms: 60_000, start_ms: 0, total: 3, previous: 0, ..Counter::default() };
        assert_eq!(c.estimate(30_000), 3.0);
        // Half of the previous window still overlaps: half of its count weighs.
        let c = Counter { window_ms: 60_000, start_ms: 60_000, total: 1, previous: 10, ..Counter::default() };
        assert_eq!(c.estimate(90_000), 6.0);
        let mut c = Counter { window_ms: 60_000, start_ms: 0, total: 4, unsynced: 2, ..Counter::default() };
        c.roll(61_000, 60_000);
        assert_eq!((c.start_ms, c.previous, c.previous_unsynced, c.total, c.unsynced), (60_000, 4, 2, 0, 0));
        c.roll(200_000, 60_000);
        assert_eq!((c.start_ms, c.previous, c.previous_unsynced), (180_000, 0, 0), "a gap forgets");
    }
}
