//! Every refusal and every cut, by cause: counted in `/metrics` (`govdata_refusals_total{cause}`)
//! and logged at most once per client address per minute, with what was suppressed since. An
//! attack of ten thousand events a second writes a line a minute per address, not ten thousand.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::metrics::METRICS;

/// Why a connection was refused or cut, or a request refused for how its client behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The global connection cap was reached and no open connection was idle to make room.
    ConnectionCap,
    /// The client address already holds its cap of open connections.
    AddressCap,
    /// An idle connection closed to admit a new one at the global cap (the longest idle goes).
    Evicted,
    /// No complete request head within the head-read timeout of accepting the connection.
    HeadTimeout,
    /// A keep-alive connection sent no complete next head within the head-read timeout.
    IdleTimeout,
    /// The client read nothing of an answer for the write timeout.
    WriteTimeout,
    /// A request body did not arrive whole within the body-read timeout.
    BodyTimeout,
    /// A request body was larger than its cap.
    BodyTooLarge,
    /// A request refused 429 by a rate limit.
    RateLimited,
}

impl Cause {
    pub const ALL: [Cause; 9] = [
        Cause::ConnectionCap,
        Cause::AddressCap,
        Cause::Evicted,
        Cause::HeadTimeout,
        Cause::IdleTimeout,
        Cause::WriteTimeout,
        Cause::BodyTimeout,
        Cause::BodyTooLarge,
        Cause::RateLimited,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Cause::ConnectionCap => "connection_cap",
            Cause::AddressCap => "address_cap",
            Cause::Evicted => "evicted_idle",
            Cause::HeadTimeout => "head_timeout",
            Cause::IdleTimeout => "idle_timeout",
            Cause::WriteTimeout => "write_timeout",
            Cause::BodyTimeout => "body_timeout",
            Cause::BodyTooLarge => "body_too_large",
            Cause::RateLimited => "rate_limited",
        }
    }

    /// A keep-alive connection closed for idleness is ordinary; it is counted, not logged.
    fn logged(self) -> bool {
        self != Cause::IdleTimeout
    }
}

/// Counts `cause` and logs it unless this address was logged within the last minute.
pub fn record(cause: Cause, client: Option<IpAddr>) {
    METRICS.refusals.with_label_values(&[cause.label()]).inc();
    if !cause.logged() {
        return;
    }
    let Some(client) = client.map(canonical) else {
        tracing::info!(target: "govdata::refusals", cause = cause.label(), "refused");
        return;
    };
    let line = LOG.lock().unwrap_or_else(PoisonError::into_inner).note(client, cause, Instant::now());
    if let Some(suppressed) = line {
        tracing::info!(
            target: "govdata::refusals",
            client = %client,
            cause = cause.label(),
            suppressed_last_minute = %suppressed,
            "refused or cut (logged at most once a minute per address)"
        );
    }
}

/// An IPv4 client that reached an IPv6 socket is the IPv4 client.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// How often one address may be logged.
const LOG_EVERY: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it, addresses not logged within the minute are forgotten,
/// and a new address beyond it is counted but not logged until room frees.
const LOG_ADDRESSES: usize = 16_384;

static LOG: LazyLock<Mutex<Throttle>> = LazyLock::new(|| Mutex::new(Throttle::default()));

/// Per address: when it was last logged and what happened since.
#[derive(Default)]
struct Throttle {
    seen: HashMap<IpAddr, Window>,
}

struct Window {
    logged_at: Instant,
    suppressed: HashMap<Cause, u64>,
}

/// What was suppressed in an address's last window, as a log value (`head_timeout=12,…`).
struct Suppressed(Vec<(Cause, u64)>);

impl std::fmt::Display for Suppressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, (cause, n)) in self.0.iter().enumerate() {
            write!(f, "{}{}={n}", if i == 0 { "" } else { "," }, cause.label())?;
        }
        Ok(())
    }
}

impl Throttle {
    /// Notes one event; `Some` when it is to be logged, with what was suppressed since the
    /// address's last line.
    fn note(&mut self, client: IpAddr, cause: Cause, now: Instant) -> Option<Suppressed> {
        if let Some(window) = self.seen.get_mut(&client) {
            if now.duration_since(window.logged_at) < LOG_EVERY {
                *window.suppressed.entry(cause).or_default() += 1;
                return None;
            }
            let mut suppressed: Vec<_> = window.suppressed.drain().collect();
            suppressed.sort_by_key(|(c, _)| c.label());
            window.logged_at = now;
            return Some(Suppressed(suppressed));
        }
        if self.seen.len() >= LOG_ADDRESSES {
            self.seen.retain(|_, w| now.duration_since(w.logged_at) < LOG_EVERY);
            if self.seen.len() >= LOG_ADDRESSES {
                return None;
            }
        }
        self.seen.insert(client, Window { logged_at: now, suppressed: HashMap::new() });
        Some(Suppressed(Vec::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_logged_once_a_minute_with_what_it_did_since() {
        let mut log = Throttle::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
        let t0 = Instant::now();
        assert_eq!(log.note(a, Cause::HeadTimeout, t0).unwrap().to_string(), "none");
        for i in 0..500 {
            assert!(log.note(a, Cause::HeadTimeout, t0 + Duration::from_millis(i)).is_none());
        }
        assert!(log.note(a, Cause::AddressCap, t0 + Duration::from_secs(59)).is_none());
        // Another address has its own minute.
        assert!(log.note(b, Cause::RateLimited, t0 + Duration::from_secs(1)).is_some());
        let next = log.note(a, Cause::WriteTimeout, t0 + LOG_EVERY).expect("a minute later");
        assert_eq!(next.to_string(), "address_cap=1,head_timeout=500");
        assert!(log.note(a, Cause::WriteTimeout, t0 + LOG_EVERY + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn the_remembered_addresses_are_bounded() {
        let mut log = Throttle::default();
        let t0 = Instant::now();
        for i in 0..LOG_ADDRESSES as u32 {
            assert!(log.note(IpAddr::from(i.to_be_bytes()), Cause::HeadTimeout, t0).is_some());
        }
        let late: IpAddr = "127.255.255.254".parse().unwrap();
        assert!(log.note(late, Cause::HeadTimeout, t0).is_none(), "full: counted, not logged");
        assert!(log.note(late, Cause::HeadTimeout, t0 + LOG_EVERY).is_some(), "the stale ones are forgotten");
        assert!(log.seen.len() <= LOG_ADDRESSES);
    }

    #[test]
    fn an_ipv4_client_on_an_ipv6_socket_is_one_address() {
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(canonical(mapped), "127.0.0.2".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "::1".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }
}
