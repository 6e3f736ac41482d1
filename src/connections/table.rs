//! The open connections: who holds how many, which are idle and since when.
//!
//! Admission follows what nginx, HAProxy and Envoy do under a flood: an address over its own cap
//! is refused; at the global cap the longest-idle connection is closed to admit the newcomer,
//! and only when every connection is busy is the newcomer refused. An idle connection is one
//! with no request in flight: a new connection that has not sent a whole head yet, a slowloris
//! head, or a keep-alive connection between requests. Busy clients are never the ones closed.
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

use super::report::{Cause, canonical};

/// The caps a table enforces.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_connections: usize,
    pub max_per_address: usize,
}

/// Whom a connection counts against: its IPv4 address, or its IPv6 /64 (one host commonly
/// holds a whole /64, so counting single IPv6 addresses would cap nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    pub fn of(ip: IpAddr) -> Self {
        match canonical(ip) {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Self(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => Self(v4),
        }
    }
}

/// The open connections of one listener.
pub struct Table {
    caps: Caps,
    epoch: Instant,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, Arc<Conn>>,
    per_client: HashMap<ClientKey, usize>,
    /// The longest-idle connections at the last look, longest first, as (idle since, id).
    idlest: VecDeque<(u64, u64)>,
}

/// At the cap, one look over the table lines up this share of it for eviction (a sixteenth),
/// so that a flood of newcomers costs a scan per that many admissions instead of one each (the
/// scan per admission was a fifth of the server's time under `soak abuse`).
const EVICTION_BATCH_DIVISOR: usize = 16;

/// One open connection, as its task, its I/O and the table see it.
pub struct Conn {
    id: u64,
    pub client: IpAddr,
    key: ClientKey,
    epoch: Instant,
    /// Requests whose answer hyper has not yet taken whole.
    busy: AtomicU32,
    /// Requests whose head arrived (0: the connection has not sent a complete head).
    heads: AtomicU64,
    /// When the connection last had nothing in flight (ms since the epoch).
    idle_since: AtomicU64,
    /// Since when a write has waited for the client to read (ms since the epoch + 1; 0: none).
    stalled_since: AtomicU64,
    /// Set when the table closes the connection to admit another.
    evicted: AtomicBool,
    /// Wakes the connection's watchdog: it was evicted, or a write stalled.
    pub(super) wake: Notify,
}

/// A connection admitted into the table; leaving the table when dropped.
pub struct Slot {
    table: Arc<Table>,
    pub conn: Arc<Conn>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.lock().remove(self.conn.id);
    }
}

impl Table {
    pub fn new(caps: Caps) -> Arc<Self> {
        Arc::new(Self { caps, epoch: Instant::now(), inner: Mutex::default() })
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open connections now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Admits a connection from `client`, closing the longest-idle connection when the table is
    /// full (its watchdog is woken and reports `Cause::Evicted`), or says why not.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Result<Slot, Cause> {
        let key = ClientKey::of(client);
        let mut inner = self.lock();
        if inner.per_client.get(&key).copied().unwrap_or(0) >= self.caps.max_per_address {
            return Err(Cause::AddressCap);
        }
        if inner.open.len() >= self.caps.max_connections {
            let Some(victim) = inner.evict_idlest() else {
                return Err(Cause::ConnectionCap);
            };
            victim.evicted.store(true, Ordering::Release);
            victim.wake.notify_one();
        }
        inner.next_id += 1;
        // Clocks start at the next millisecond: truncated, a deadline could fall up to a
        // millisecond early.
        let now = self.epoch.elapsed().as_millis() as u64 + 1;
        let conn = Arc::new(Conn {
            id: inner.next_id,
            client: canonical(client),
            key,
            epoch: self.epoch,
            busy: AtomicU32::new(0),
            heads: AtomicU64::new(0),
            idle_since: AtomicU64::new(now),
            stalled_since: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
        });
        inner.open.insert(conn.id, conn.clone());
        *inner.per_client.entry(key).or_default() += 1;
        Ok(Slot { table: self.clone(), conn })
    }
}

impl Inner {
    /// Takes the connection idle the longest out of the table, if any is idle.
    ///
    /// Exact, though it looks over the table only once per batch: the lined-up connections were
    /// idle before the look, so any that went idle since is younger, and a lined-up one that
    /// served a request meanwhile (its idle clock restarted) is skipped.
    fn evict_idlest(&mut self) -> Option<Arc<Conn>> {
        for _ in 0..2 {
            while let Some((since, id)) = self.idlest.pop_front() {
                let still = self.open.get(&id).is_some_and(|c| c.is_idle() && c.idle_since() == since);
                if still {
                    return self.remove(id);
                }
            }
            self.line_up_idlest();
        }
        None
    }

    fn line_up_idlest(&mut self) {
        let mut idle: Vec<(u64, u64)> =
            self.open.values().filter(|c| c.is_idle()).map(|c| (c.idle_since(), c.id)).collect();
        let batch = (self.open.len() / EVICTION_BATCH_DIVISOR).max(1);
        if idle.len() > batch {
            idle.select_nth_unstable(batch - 1);
            idle.truncate(batch);
        }
        // Of two idle since the same millisecond, the one accepted first.
        idle.sort_unstable();
        self.idlest = idle.into();
    }

    /// Takes a connection out of the table (once: eviction and the end of its task both call it).
    fn remove(&mut self, id: u64) -> Option<Arc<Conn>> {
        let conn = self.open.remove(&id)?;
        if let Some(n) = self.per_client.get_mut(&conn.key) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&conn.key);
            }
        }
        Some(conn)
    }
}

/// How often an evicted connection that is still answering a request is looked at again.
const EVICTED_BUSY_RECHECK_MS: u64 = 20;

/// What the watchdog finds when it looks at a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Close it now, for this cause.
    Close(Cause),
    /// Look again at this instant (ms since the epoch), or when woken.
    Until(u64),
}

impl Conn {
    /// Milliseconds since the table's epoch.
    pub fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The instant `ms` after the epoch.
    pub fn instant(&self, ms: u64) -> Instant {
        self.epoch + std::time::Duration::from_millis(ms)
    }

    fn idle_since(&self) -> u64 {
        self.idle_since.load(Ordering::Relaxed)
    }

    fn is_idle(&self) -> bool {
        self.busy.load(Ordering::Acquire) == 0 && !self.evicted.load(Ordering::Relaxed)
    }

    /// A request's head arrived: the connection is busy until the returned guard drops (when
    /// hyper has taken the whole answer).
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.heads.fetch_add(1, Ordering::Relaxed);
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// A write could not proceed: the client is not reading.
    pub fn write_blocked(&self) {
        if self.stalled_since.load(Ordering::Relaxed) == 0 {
            self.stalled_since.store(self.now_ms() + 1, Ordering::Relaxed);
            self.wake.notify_one();
        }
    }

    /// A write went through.
    pub fn write_flowed(&self) {
        if self.stalled_since.load(Ordering::Relaxed) != 0 {
            self.stalled_since.store(0, Ordering::Relaxed);
        }
    }

    /// Whether to close the connection at `now`, given the head-read and write timeouts (ms).
    pub fn verdict(&self, now: u64, head_ms: u64, write_ms: u64) -> Verdict {
        if self.evicted.load(Ordering::Acquire) {
            // A request that arrived between the table's look and now is answered first.
            if self.busy.load(Ordering::Acquire) == 0 {
                return Verdict::Close(Cause::Evicted);
            }
            return Verdict::Until(now + EVICTED_BUSY_RECHECK_MS);
        }
        // While an answer waits on the client, the write timeout is the only clock: the
        // connection is not waiting for a head (and its cut is counted as what it is).
        let stalled = self.stalled_since.load(Ordering::Relaxed);
        if stalled != 0 {
            let due = stalled - 1 + write_ms;
            return if now >= due { Verdict::Close(Cause::WriteTimeout) } else { Verdict::Until(due) };
        }
        if self.busy.load(Ordering::Acquire) == 0 {
            let due = self.idle_since.load(Ordering::Relaxed) + head_ms;
            if now >= due {
                let first = self.heads.load(Ordering::Relaxed) == 0;
                return Verdict::Close(if first { Cause::HeadTimeout } else { Cause::IdleTimeout });
            }
            return Verdict::Until(due);
        }
        // Busy: look again a head timeout from now. An answer ending does not wake the watchdog
        // (that would cost every request a task wake-up); whenever it looks next and finds the
        // connection idle, it waits for exactly the idle clock's end.
        Verdict::Until(now + head_ms)
    }

    /// Whether a write is waiting for the client to read.
    pub fn write_stalled(&self) -> bool {
        self.stalled_since.load(Ordering::Relaxed) != 0
    }
}

/// A request in flight on a connection.
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        let conn = &self.0;
        // The idle clock starts before the count falls, so an observer never sees an idle
        // connection with a stale start.
        conn.idle_since.store(conn.now_ms() + 1, Ordering::Relaxed);
        conn.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_address_is_capped_and_its_slots_come_back() {
        let table = Table::new(Caps { max_connections: 100, max_per_address: 2 });
        let a = table.admit(ip("127.0.0.2")).unwrap();
        let _b = table.admit(ip("127.0.0.2")).unwrap();
        assert_eq!(table.admit(ip("127.0.0.2")).err(), Some(Cause::AddressCap));
        assert!(table.admit(ip("127.0.0.3")).is_ok(), "another address has its own cap");
        drop(a);
        assert!(table.admit(ip("127.0.0.2")).is_ok());
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(ClientKey::of(ip("2001:db8:1:2::1")), ClientKey::of(ip("2001:db8:1:2:ffff::9")));
        assert_ne!(ClientKey::of(ip("2001:db8:1:2::1")), ClientKey::of(ip("2001:db8:1:3::1")));
        assert_eq!(ClientKey::of(ip("::ffff:127.0.0.2")), ClientKey::of(ip("127.0.0.2")));
    }

    #[test]
    fn at_the_cap_the_longest_idle_goes_and_busy_ones_stay() {
        let table = Table::new(Caps { max_connections: 3, max_per_address: 10 });
        let busy = table.admit(ip("127.0.0.3")).unwrap();
        let working = busy.conn.begin();
        let oldest_idle = table.admit(ip("127.0.0.2")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let newer_idle = table.admit(ip("127.0.0.2")).unwrap();
        let newcomer = table.admit(ip("127.0.0.4")).expect("room made");
        assert_eq!(oldest_idle.conn.verdict(oldest_idle.conn.now_ms(), 10_000, 10_000), Verdict::Close(Cause::Evicted));
        assert!(matches!(newer_idle.conn.verdict(0, 10_000, 10_000), Verdict::Until(_)));
        assert_eq!(table.len(), 3);
        drop(oldest_idle); // its task ends: nothing is counted twice
        assert_eq!(table.len(), 3);
        // Now: one busy, two idle (newer_idle, newcomer); newer_idle goes next.
        let _another = table.admit(ip("127.0.0.5")).unwrap();
        assert_eq!(newer_idle.conn.verdict(0, 10_000, 10_000), Verdict::Close(Cause::Evicted));
        drop(newcomer);
        drop(working);
        // Every connection busy: the newcomer is refused.
        let table = Table::new(Caps { max_connections: 1, max_per_address: 10 });
        let only = table.admit(ip("127.0.0.3")).unwrap();
        let _working = only.conn.begin();
        assert_eq!(table.admit(ip("127.0.0.2")).err(), Some(Cause::ConnectionCap));
    }

    #[test]
    fn eviction_lined_up_in_batches_stays_exact() {
        let table = Table::new(Caps { max_connections: 32, max_per_address: 100 });
        let slots: Vec<Slot> = (0..32).map(|_| table.admit(ip("127.0.0.2")).unwrap()).collect();
        let evicted = |s: &Slot| s.conn.verdict(s.conn.now_ms(), 10_000, 10_000) == Verdict::Close(Cause::Evicted);
        let _first = table.admit(ip("127.0.0.3")).unwrap();
        assert!(evicted(&slots[0]), "the longest idle (accepted first)");
        // The second in line serves a request meanwhile: its idle clock restarts, so the next
        // eviction passes over it.
        let request = slots[1].conn.begin();
        std::thread::sleep(std::time::Duration::from_millis(3));
        drop(request);
        let _second = table.admit(ip("127.0.0.3")).unwrap();
        assert!(!evicted(&slots[1]), "idle again, but younger than the rest");
        assert!(evicted(&slots[2]));
        // A connection evicted while a request arrived finishes that request first.
        let request = slots[3].conn.begin();
        slots[3].conn.evicted.store(true, Ordering::Release);
        assert!(matches!(slots[3].conn.verdict(0, 10_000, 10_000), Verdict::Until(_)));
        drop(request);
        assert!(evicted(&slots[3]));
    }

    #[test]
    fn the_watchdog_closes_idle_heads_and_stalled_writes() {
        let table = Table::new(Caps { max_connections: 10, max_per_address: 10 });
        let slot = table.admit(ip("127.0.0.2")).unwrap();
        let c = &slot.conn;
        // Never a head: the head-read timeout runs from accept.
        let accepted = c.idle_since.load(Ordering::Relaxed);
        assert_eq!(c.verdict(accepted + 99, 100, 1_000), Verdict::Until(accepted + 100));
        assert_eq!(c.verdict(accepted + 100, 100, 1_000), Verdict::Close(Cause::HeadTimeout));
        // Busy: no head deadline; looked at again a head timeout later.
        let req = c.begin();
        assert_eq!(c.verdict(10_000, 100, 1_000), Verdict::Until(10_100));
        // A stalled write is cut after the write timeout, busy or not.
        c.write_blocked();
        let since = c.stalled_since.load(Ordering::Relaxed) - 1;
        assert_eq!(c.verdict(since + 999, 100, 1_000), Verdict::Until(since + 1_000));
        assert_eq!(c.verdict(since + 1_000, 100, 1_000), Verdict::Close(Cause::WriteTimeout));
        // Idle with an answer still waiting on the client: the write timeout governs.
        drop(req);
        let idle = c.idle_since.load(Ordering::Relaxed);
        assert_eq!(c.verdict(idle + 100, 100, 1_000), Verdict::Until(since + 1_000));
        assert_eq!(c.verdict(since + 1_000, 100, 1_000), Verdict::Close(Cause::WriteTimeout));
        c.write_flowed();
        assert!(!c.write_stalled());
        // Idle after an answer: the keep-alive idle timeout.
        let idle = c.idle_since.load(Ordering::Relaxed);
        assert_eq!(c.verdict(idle + 100, 100, 1_000), Verdict::Close(Cause::IdleTimeout));
    }
}
