//! Which of several PostgreSQL hosts is the primary, and following it when it moves.
//!
//! `DATABASE_URL` may name several hosts the way libpq does
//! (`postgres://user@h1:5432,h2:5432/db`): the primary and the standbys that may be promoted in
//! its place. As libpq's `target_session_attrs=read-write`, the process writes to the first host,
//! in the listed order, that takes writes: not in recovery (`pg_is_in_recovery()`), nor read-only
//! by default. sqlx connects to one host, so the process keeps one pool and moves it: the pool
//! opens its connections with the options of the host chosen last
//! ([`PgPool::set_connect_options`]), and every handle of it (ingestion, payments, webhooks, the
//! node monitor) follows at once.
//!
//! **Re-checked.** A watch asks the current primary whether it takes writes every
//! [`PROBE_INTERVAL`], on a connection of its own, bounded by [`PROBE_TIMEOUT`]. When it does not
//! answer, or answers no, every host is asked at once and the first that takes writes becomes the
//! primary; while none does, they are asked again at every tick. A connection the pool opens is
//! asked too: one that landed on a host that refuses writes is closed (the pool tries again) and
//! wakes the watch at once. A write waiting for a connection meanwhile (sqlx retries a refused
//! connection until its acquire timeout) goes to the new primary; one that failed on a lost
//! connection is its caller's to retry (ingestion's next run publishes what the failed one did
//! not). Connections opened before a move are not handed out after it, so no write goes to the
//! host left behind. So writes reach a promoted standby [`TAKEOVER`] at most after the old
//! primary stops answering or taking writes. A write that was already waiting for a connection
//! then may wait one step of sqlx's backoff longer, [`LONGEST_CONNECT_BACKOFF`] at most: sqlx
//! sleeps between refused connects in doubling steps, and no move wakes it. The failover test
//! measured 0.15-0.7 s from the cut to a published run.
//!
//! While the old primary still answers and takes writes after a standby was promoted, it stays
//! the primary: as with libpq, fencing it (stopping it) is the failover tooling's part.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{ConnectOptions, DatabaseConnection};

use super::nodes::{PROBE_INTERVAL, PROBE_TIMEOUT};

/// How long after the primary stops answering (or accepting writes) new writes go to the host
/// that took over: a tick of the watch to notice, the current primary's probe running out, and
/// every host's probe.
pub const TAKEOVER: Duration = PROBE_INTERVAL.saturating_add(PROBE_TIMEOUT.saturating_mul(2));

/// The longest sleep between two of a pool's refused connects: sqlx doubles it from 10 ms up to
/// a fifth of the acquire timeout.
pub const LONGEST_CONNECT_BACKOFF: Duration = Duration::from_millis(super::ACQUIRE_TIMEOUT.as_millis() as u64 / 5);

/// The hosts of a multi-host `postgres://` URL, and which one is the primary.
pub struct Primaries {
    hosts: Vec<Host>,
    /// The URL before the hosts (`postgres://user:password@`) and after them (`/db?params`):
    /// with one host between them, a URL sqlx parses.
    before: String,
    after: String,
    follow: Arc<Follow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Host {
    /// As the URL writes it (an IPv6 address in brackets).
    text: String,
    /// As a socket is opened to it.
    name: String,
    port: Option<u16>,
}

/// What the pool's callbacks and the watch share.
struct Follow {
    /// The host the pool connects to.
    current: AtomicUsize,
    /// When the pool last moved: a connection older than this is never handed out again.
    moved: Mutex<Instant>,
    /// Wakes the watch before its tick (a new connection found a standby).
    poked: tokio::sync::Notify,
}

impl Primaries {
    /// The hosts of `url`, when it names more than one (`None` for one host: nothing to follow).
    pub fn parse(url: &str) -> anyhow::Result<Option<Self>> {
        let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| matches!(*s, "postgres" | "postgresql"))
        else {
            return Ok(None);
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, hostlist) = match authority.rfind('@') {
            Some(at) => (&authority[..=at], &authority[at + 1..]),
            None => ("", authority),
        };
        if !hostlist.contains(',') {
            return Ok(None);
        }
        let hosts = hostlist
            .split(',')
            .enumerate()
            .map(|(i, h)| {
                parse_host(h).ok_or_else(|| anyhow::anyhow!("DATABASE_URL: host {} ({h:?}) is not HOST[:PORT]", i + 1))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Some(Self {
            before: format!("{scheme}://{userinfo}"),
            after: without_session_attrs(tail)?,
            hosts,
            follow: Arc::new(Follow {
                current: AtomicUsize::new(0),
                moved: Mutex::new(Instant::now()),
                poked: tokio::sync::Notify::new(),
            }),
        }))
    }

    /// Finds the primary among the hosts and returns the URL of it alone, for the pool.
    pub async fn resolve(&self) -> anyhow::Result<String> {
        let base: PgConnectOptions = self.url(0).parse()?;
        match self.first_read_write(&base).await {
            Some((i, _)) => {
                self.follow.current.store(i, Ordering::Relaxed);
                Ok(self.url(i))
            }
            None => anyhow::bail!(
                "DATABASE_URL: none of its {} hosts ({}) answers as a read-write primary",
                self.hosts.len(),
                self.hosts.iter().map(|h| h.text_with_port()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// The pool's callbacks: a new connection must reach a primary, and an old one is not handed
    /// out after the pool moved.
    pub fn configure(&self, options: &mut ConnectOptions) {
        let follow = self.follow.clone();
        options.map_sqlx_postgres_pool_opts(move |pool: PgPoolOptions| {
            let (on_connect, on_acquire) = (follow.clone(), follow.clone());
            pool.after_connect(move |conn, _| {
                let follow = on_connect.clone();
                Box::pin(async move {
                    if read_only(conn).await? {
                        follow.poked.notify_one();
                        return Err(sqlx::Error::Protocol(
                            "the host is read-only (a standby?): writes need the primary".to_owned(),
                        ));
                    }
                    Ok(())
                })
            })
            .before_acquire(move |_, meta| {
                let moved_since = on_acquire.moved.lock().elapsed();
                Box::pin(async move { Ok(meta.age <= moved_since) })
            })
        });
    }

    /// Starts the watch over `db`'s pool; it ends when the pool is closed.
    pub fn watch(self, db: &DatabaseConnection) {
        let pool = db.get_postgres_connection_pool().clone();
        tokio::spawn(async move {
            let mut closed = pool.close_event();
            closed.do_until(self.follow_primary(&pool)).await.ok();
        });
    }

    async fn follow_primary(&self, pool: &PgPool) {
        let mut conn: Option<PgConnection> = None;
        let mut none_found = false;
        loop {
            tokio::select! {
                () = tokio::time::sleep(PROBE_INTERVAL) => {}
                () = self.follow.poked.notified() => {}
            }
            if let Some(c) = conn.as_mut()
                && matches!(tokio::time::timeout(PROBE_TIMEOUT, read_only(c)).await, Ok(Ok(false)))
            {
                continue;
            }
            conn = None;
            let base = (*pool.connect_options()).clone();
            let Some((i, found)) = self.first_read_write(&base).await else {
                if !std::mem::replace(&mut none_found, true) {
                    tracing::warn!(
                        hosts = self.hosts.len(),
                        "no database host answers as a read-write primary: writes wait"
                    );
                }
                continue;
            };
            none_found = false;
            conn = Some(found);
            if self.follow.current.swap(i, Ordering::Relaxed) != i {
                pool.set_connect_options(self.options(&base, i));
                *self.follow.moved.lock() = Instant::now();
                tracing::warn!(primary = %self.hosts[i].text_with_port(), "the primary moved: writes go to the new one");
            }
        }
    }

    /// The URL of host `i` alone.
    fn url(&self, i: usize) -> String {
        format!("{}{}{}", self.before, self.hosts[i].text_with_port(), self.after)
    }

    /// Host `i`'s options: `base`'s, with its host and port.
    fn options(&self, base: &PgConnectOptions, i: usize) -> PgConnectOptions {
        let host = &self.hosts[i];
        let port = host.port.unwrap_or_else(|| PgConnectOptions::new_without_pgpass().get_port());
        base.clone().host(&host.name).port(port)
    }

    /// Asks every host at once; the first, in the listed order, that answers not in recovery
    /// within [`PROBE_TIMEOUT`], with the connection that asked it.
    async fn first_read_write(&self, base: &PgConnectOptions) -> Option<(usize, PgConnection)> {
        let asked = futures_util::future::join_all((0..self.hosts.len()).map(|i| {
            let options = self.options(base, i);
            async move {
                let ask = async {
                    let mut conn = PgConnection::connect_with(&options).await?;
                    let standby = read_only(&mut conn).await?;
                    Ok::<_, sqlx::Error>((conn, standby))
                };
                match tokio::time::timeout(PROBE_TIMEOUT, ask).await {
                    Ok(Ok((conn, false))) => Some(conn),
                    _ => None,
                }
            }
        }))
        .await;
        asked.into_iter().enumerate().find_map(|(i, conn)| Some((i, conn?)))
    }
}

impl Host {
    fn text_with_port(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.text),
            None => self.text.clone(),
        }
    }
}

/// `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT`.
fn parse_host(text: &str) -> Option<Host> {
    let (host, port) = match text.strip_prefix('[') {
        Some(v6) => {
            let (address, after) = v6.split_once(']')?;
            (format!("[{address}]"), (after.strip_prefix(':'), address.to_owned()))
        }
        None => match text.split_once(':') {
            Some((host, port)) => (host.to_owned(), (Some(port), host.to_owned())),
            None => (text.to_owned(), (None, text.to_owned())),
        },
    };
    let (port, name) = port;
    if name.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some(Host { text: host, name, port })
}

/// The path and query with libpq's `target_session_attrs` taken out: the read-write rule is
/// what this module does, and sqlx does not know the parameter. Any other value is refused.
fn without_session_attrs(tail: &str) -> anyhow::Result<String> {
    let Some((path, query)) = tail.split_once('?') else { return Ok(tail.to_owned()) };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("target_session_attrs", "read-write" | "primary")) => {}
            Some(("target_session_attrs", other)) => anyhow::bail!(
                "DATABASE_URL: target_session_attrs={other} is not supported: govdata writes, so it connects \
                 to the read-write host (read-write)"
            ),
            _ => kept.push(pair),
        }
    }
    Ok(match kept.is_empty() {
        true => path.to_owned(),
        false => format!("{path}?{}", kept.join("&")),
    })
}

/// Whether the server refuses writes by default: a standby (in recovery), or one whose
/// `default_transaction_read_only` is on. libpq's `read-write` test, which is `SHOW
/// transaction_read_only` (a standby's is always on); the recovery check says why.
async fn read_only(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")
        .fetch_one(conn)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(url: &str) -> Vec<String> {
        Primaries::parse(url).unwrap().unwrap().hosts.iter().map(Host::text_with_port).collect()
    }

    #[test]
    fn one_host_is_nothing_to_follow() {
        assert!(Primaries::parse("postgres://u:p@db:5432/govdata").unwrap().is_none());
        assert!(Primaries::parse("postgres://db/govdata?sslmode=disable").unwrap().is_none());
        assert!(Primaries::parse("sqlite://a,b.db?mode=rwc").unwrap().is_none());
    }

    #[test]
    fn reads_the_hosts_of_a_multi_host_url() {
        assert_eq!(hosts("postgres://u:p,w@a:5433,b:5434/govdata"), ["a:5433", "b:5434"]);
        assert_eq!(hosts("postgresql://a,[::1]:6000,c:7/db"), ["a", "[::1]:6000", "c:7"]);
        let p = Primaries::parse("postgres://u@a:1,b:2/db?target_session_attrs=read-write&sslmode=disable")
            .unwrap()
            .unwrap();
        assert_eq!(
            (p.url(0).as_str(), p.url(1).as_str()),
            ("postgres://u@a:1/db?sslmode=disable", "postgres://u@b:2/db?sslmode=disable")
        );
        assert_eq!(p.hosts[1], Host { text: "b".to_owned(), name: "b".to_owned(), port: Some(2) });
        assert_eq!(parse_host("[::1]").map(|h| (h.name, h.port)), Some(("::1".to_owned(), None)));
    }

    #[test]
    fn refuses_what_it_cannot_follow() {
        for url in ["postgres://a:x,b/db", "postgres://a,,b/db", "postgres://a,b:70000/db", "postgres://a,[::1/db"] {
            assert!(Primaries::parse(url).is_err(), "{url}");
        }
        let standby = Primaries::parse("postgres://a,b/db?target_session_attrs=standby");
        assert!(standby.is_err_and(|e| e.to_string().contains("target_session_attrs=standby")));
    }
}
