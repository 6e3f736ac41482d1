//! The database nodes a process reads from: the primary (`DATABASE_URL`), which takes every
//! write, and PostgreSQL streaming replicas (`GOVDATA_READ_REPLICA_URLS`), which serve reads.
//! Replication is PostgreSQL's own (physical streaming, `pg_basebackup -R`); this module only
//! chooses, per read, a node that can answer it faithfully.
//!
//! **Revision-consistent.** A publication is one transaction that ends with its `data_revisions`
//! row, so a node that shows revision `r` has replayed everything `r` serves, and nothing of `r`
//! half. A read for serving revision `r` goes to a replica whose visible revision is at least `r`
//! ([`Nodes::reader`]); when none has it yet, to the primary. An answer therefore never mixes
//! revisions and a cursor is never refused because a replica lags: lag only moves reads to the
//! primary for as long as it lasts.
//!
//! **Watched, not asked per read.** A monitor probes every node every [`PROBE_INTERVAL`] with one
//! small query bounded by [`PROBE_TIMEOUT`] (the primary's WAL position; a replica's replayed
//! position and visible revision), and every [`FOLLOW_INTERVAL`] while a replica has not yet shown
//! the primary's newest revision, so a new revision reaches the replicas' readers within
//! milliseconds of its replay. A node that does not answer is left at once (`down`), as is one
//! whose failure a request reports ([`Nodes::left`]); a replica whose lag passes the declared
//! bound is left (`lagging`). Either is taken back when a probe finds it answering and caught up.
//! So a failed or lagging replica is left within `PROBE_INTERVAL + PROBE_TIMEOUT`, well inside a
//! second.
//!
//! **Lag** is measured in time, the way an operator reads it: the primary's WAL position is
//! sampled at every probe, and a replica's lag is how long ago the primary first wrote past the
//! position the replica has replayed (0 when it has replayed the newest sample). Bytes behind the
//! newest sample are reported too.
//!
//! **A moving primary.** When `DATABASE_URL` names several hosts, the primary's pool follows the
//! one that is not in recovery (`store::primary`). A replica that is not in recovery is left (its
//! data may have diverged), unless it is the host the primary's pool now connects to: a listed
//! replica that was promoted and taken over goes on serving reads, its lag measured from the new
//! primary's positions alone (what the old one wrote after the promotion is lost, not owed).
//!
//! **Retries.** A read that fails on a replica, because the replica went away or because it
//! cancelled the query in a recovery conflict (`max_standby_streaming_delay`), is run again on
//! another node by the HTTP edge ([`attempt`] records which replicas a request read from and
//! whether one failed it).
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::{Mutex, RwLock};
use std::time::{Duration, Instant};

use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement};

use crate::contract::vocabulary::{NodeHealth, NodeRole};

/// How often every node is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// How often replicas are probed while one has not shown the primary's newest revision.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(10);
/// A probe not answered within this long leaves its node (`down`).
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// A replica past the lag bound is taken back once its lag is at most this: caught up to
/// within a probe or two.
pub const CAUGHT_UP: Duration = Duration::from_millis(250);
/// How long a read waits for a connection to a replica before it goes elsewhere: a replica is
/// never worth waiting for, the primary is always there to fall back on. A replica that went away
/// a moment before the monitor noticed costs a request at most this.
const REPLICA_CONNECT_TIMEOUT: Duration = PROBE_TIMEOUT;
/// How many primary WAL positions are kept for measuring lag (at [`PROBE_INTERVAL`], a minute):
/// a lag longer than the samples reach is reported as at least their span.
const POSITION_SAMPLES: usize = 600;

/// One node's state as last probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub health: NodeHealth,
    /// The newest revision the node shows (`None` before it first answered).
    pub revision: Option<i64>,
    /// The primary's current WAL position, or the position a replica has replayed.
    pub wal_position: Option<u64>,
    /// How far behind the primary a replica is (0 for the primary).
    pub lag: Duration,
    /// WAL bytes between the primary's newest sampled position and the replica's replay.
    pub lag_bytes: u64,
    /// Why the node was last left, while it is left.
    pub error: Option<String>,
}

/// A node as `/v1/system/freshness` and `/metrics` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    pub name: String,
    pub role: NodeRole,
    pub state: NodeState,
    /// Reads this process sent the node.
    pub reads: u64,
}

struct Node {
    name: String,
    role: NodeRole,
    db: DatabaseConnection,
    state: RwLock<NodeState>,
    reads: AtomicU64,
}

impl Node {
    fn new(name: String, role: NodeRole, db: DatabaseConnection) -> Self {
        let state = NodeState {
            // The primary is taken to answer until a probe says otherwise; a replica is used only
            // once a probe has seen what it holds.
            health: if role == NodeRole::Primary { NodeHealth::Serving } else { NodeHealth::Down },
            revision: None,
            wal_position: None,
            lag: Duration::ZERO,
            lag_bytes: 0,
            error: (role == NodeRole::Replica).then(|| "not probed yet".to_owned()),
        };
        Self { name, role, db, state: RwLock::new(state), reads: AtomicU64::new(0) }
    }

    fn state(&self) -> NodeState {
        self.state.read().clone()
    }

    fn leave(&self, why: String) {
        let mut state = self.state.write();
        if state.health != NodeHealth::Down {
            tracing::warn!(node = %self.name, reason = %why, "database node left");
        }
        state.health = NodeHealth::Down;
        state.error = Some(why);
    }
}

/// The primary and the replicas of one process, with the monitor that watches them.
pub struct Nodes {
    primary: Node,
    replicas: Vec<Node>,
    /// A replica whose lag passes this is left until it catches up.
    max_lag: Duration,
    /// Where the next read starts looking among the replicas (round robin).
    next: AtomicUsize,
    /// Recent (when, position) samples of the primary's WAL, oldest first.
    positions: Mutex<VecDeque<(Instant, u64)>>,
    /// The newest revision the primary has shown (probe or serving watch).
    newest: AtomicU64,
    poked: Arc<tokio::sync::Notify>,
}

impl Nodes {
    /// Only the primary: SQLite, or PostgreSQL without replicas. Every read goes to `primary`.
    pub fn single(primary: DatabaseConnection) -> Arc<Self> {
        Arc::new(Self::with(primary, Vec::new(), Duration::ZERO))
    }

    /// The primary and a replica per URL, each connected lazily (a replica down at start-up is
    /// left until it answers), and the monitor, which stops when the nodes are dropped. Replicas
    /// need a PostgreSQL primary: SQLite has no replication.
    pub async fn start(
        primary: DatabaseConnection,
        replica_urls: &[String],
        max_lag: Duration,
    ) -> anyhow::Result<Arc<Self>> {
        let replica_urls: Vec<&String> = replica_urls.iter().filter(|u| !u.trim().is_empty()).collect();
        if replica_urls.is_empty() {
            return Ok(Self::single(primary));
        }
        if primary.get_database_backend() != DbBackend::Postgres {
            anyhow::bail!("GOVDATA_READ_REPLICA_URLS needs a PostgreSQL DATABASE_URL: SQLite has no replicas");
        }
        let mut replicas = Vec::with_capacity(replica_urls.len());
        for (i, url) in replica_urls.iter().enumerate() {
            let url = url.trim();
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                anyhow::bail!("GOVDATA_READ_REPLICA_URLS: replica {} is not a postgres:// URL", i + 1);
            }
            let mut options = ConnectOptions::new(url.trim().to_owned());
            options
                .connect_lazy(true)
                .max_connections(16)
                .connect_timeout(REPLICA_CONNECT_TIMEOUT)
                .acquire_timeout(REPLICA_CONNECT_TIMEOUT)
                .sqlx_logging(false);
            let db = Database::connect(options).await?;
            replicas.push(Node::new(format!("replica-{}", i + 1), NodeRole::Replica, db));
        }
        let nodes = Arc::new(Self::with(primary, replicas, max_lag));
        nodes.probe().await;
        tokio::spawn(monitor(Arc::downgrade(&nodes), nodes.poked.clone()));
        Ok(nodes)
    }

    fn with(primary: DatabaseConnection, replicas: Vec<Node>, max_lag: Duration) -> Self {
        Self {
            primary: Node::new("primary".to_owned(), NodeRole::Primary, primary),
            replicas,
            max_lag,
            next: AtomicUsize::new(0),
            positions: Mutex::default(),
            newest: AtomicU64::new(0),
            poked: Arc::default(),
        }
    }

    /// The primary: every write, and reads of what is written outside publications (payments,
    /// tokens, subscriptions, export bookkeeping), which must see what was just written.
    pub fn primary(&self) -> &DatabaseConnection {
        &self.primary.db
    }

    /// Whether the monitor's last probe of the primary failed. Without replicas there is no
    /// monitor and this is always false: a lost store is the serving watch's to report.
    pub fn primary_down(&self) -> bool {
        self.primary.state().health == NodeHealth::Down
    }

    pub fn has_replicas(&self) -> bool {
        !self.replicas.is_empty()
    }

    /// Where a read of serving revision `revision` goes: a serving replica that shows it (not
    /// one this request already saw fail), in turn; else the primary. Within one request
    /// ([`attempt`]) every read goes to the node its first read went to, so an answer is read
    /// from one node.
    pub fn reader(&self, revision: i64) -> DatabaseConnection {
        if self.replicas.is_empty() {
            return self.primary.db.clone();
        }
        let pinned = ATTEMPT.try_with(|a| *a.chosen.lock()).ok().flatten();
        if let Some(chosen) = pinned {
            return self.replicas.get(chosen).map_or(&self.primary.db, |n| &n.db).clone();
        }
        let excluded = ATTEMPT.try_with(|a| a.excluded.clone()).unwrap_or_default();
        let chosen = self.pick(revision, &excluded);
        let node = chosen.map_or(&self.primary, |i| &self.replicas[i]);
        node.reads.fetch_add(1, Ordering::Relaxed);
        let _ = ATTEMPT.try_with(|a| *a.chosen.lock() = Some(chosen.unwrap_or(PRIMARY)));
        node.db.clone()
    }

    /// A serving replica that shows `revision`, if one does (in turn, counted as a read, never
    /// pinned): for work outside requests that may fall back to the primary itself, such as an
    /// export build.
    pub fn replica_for(&self, revision: i64) -> Option<DatabaseConnection> {
        let node = &self.replicas[self.pick(revision, &[])?];
        node.reads.fetch_add(1, Ordering::Relaxed);
        Some(node.db.clone())
    }

    /// The next serving replica, in turn, that shows `revision` and is not `excluded`.
    fn pick(&self, revision: i64, excluded: &[usize]) -> Option<usize> {
        let n = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n).map(|k| (start + k) % n).find(|i| {
            let s = self.replicas[*i].state.read();
            s.health == NodeHealth::Serving && s.revision.is_some_and(|r| r >= revision) && !excluded.contains(i)
        })
    }

    /// The answering replica that shows the newest revision: where the serving state is read
    /// while the primary does not answer.
    pub fn freshest_replica(&self) -> Option<&DatabaseConnection> {
        self.replicas
            .iter()
            .filter_map(|n| {
                let s = n.state();
                (s.health != NodeHealth::Down).then_some((s.revision.unwrap_or(0), n))
            })
            .max_by_key(|(revision, _)| *revision)
            .map(|(_, n)| &n.db)
    }

    /// Leaves replica `i` (a request saw it fail); the monitor takes it back when it answers.
    pub fn left(&self, i: usize, why: String) {
        if let Some(node) = self.replicas.get(i) {
            node.leave(why);
            self.poked.notify_one();
        }
    }

    /// The primary has shown `revision` (the serving watch read it): replicas are followed
    /// closely until they show it too.
    pub fn published(&self, revision: i64) {
        {
            let mut state = self.primary.state.write();
            state.revision = state.revision.max(Some(revision));
        }
        let revision = u64::try_from(revision).unwrap_or(0);
        if self.newest.fetch_max(revision, Ordering::Relaxed) < revision {
            self.poked.notify_one();
        }
    }

    /// Asks the monitor to probe every node now rather than at its next tick.
    pub fn probe_soon(&self) {
        self.poked.notify_one();
    }

    /// Every node, primary first.
    pub fn report(&self) -> Vec<NodeReport> {
        std::iter::once(&self.primary)
            .chain(&self.replicas)
            .map(|n| NodeReport {
                name: n.name.clone(),
                role: n.role,
                state: n.state(),
                reads: n.reads.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Whether some answering replica has not shown the primary's newest revision.
    fn following(&self) -> bool {
        let newest = i64::try_from(self.newest.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        self.replicas.iter().any(|n| {
            let s = n.state();
            s.health != NodeHealth::Down && s.revision.is_some_and(|r| r < newest)
        })
    }

    /// Probes every node once, all at the same time.
    async fn probe(&self) {
        let primary = tokio::time::timeout(PROBE_TIMEOUT, probe(&self.primary.db));
        let replicas = futures_util::future::join_all(
            self.replicas.iter().map(|n| tokio::time::timeout(PROBE_TIMEOUT, probe(&n.db))),
        );
        let (primary, replicas) = tokio::join!(primary, replicas);
        let now = Instant::now();
        match primary {
            Ok(Ok(p)) => {
                self.sample(now, p.position);
                self.newest.fetch_max(u64::try_from(p.revision).unwrap_or(0), Ordering::Relaxed);
                let mut state = self.primary.state.write();
                if state.health != NodeHealth::Serving {
                    tracing::info!(node = %self.primary.name, "database node answers again");
                }
                *state = NodeState {
                    health: NodeHealth::Serving,
                    revision: Some(p.revision),
                    wal_position: Some(p.position),
                    lag: Duration::ZERO,
                    lag_bytes: 0,
                    error: None,
                };
            }
            Ok(Err(e)) => self.primary.leave(e.to_string()),
            Err(_) => self.primary.leave(format!("no answer within {PROBE_TIMEOUT:?}")),
        }
        for (node, probed) in self.replicas.iter().zip(replicas) {
            let p = match probed {
                Ok(Ok(p)) if p.in_recovery => p,
                // Promoted, and the primary this process writes to now (`store::primary`): it
                // shows everything written.
                Ok(Ok(p)) if same_server(&self.primary.db, &node.db) => p,
                Ok(Ok(_)) => {
                    node.leave("not a standby (promoted?): its data may have diverged".to_owned());
                    continue;
                }
                Ok(Err(e)) => {
                    node.leave(e.to_string());
                    continue;
                }
                Err(_) => {
                    node.leave(format!("no answer within {PROBE_TIMEOUT:?}"));
                    continue;
                }
            };
            let (lag, lag_bytes) = self.lag_of(p.position, now);
            let mut state = node.state.write();
            let health = match state.health {
                NodeHealth::Serving if lag <= self.max_lag => NodeHealth::Serving,
                _ if lag <= CAUGHT_UP.min(self.max_lag) => NodeHealth::Serving,
                _ => NodeHealth::Lagging,
            };
            if health != state.health {
                match health {
                    NodeHealth::Serving => tracing::info!(node = %node.name, "database node taken back"),
                    _ => {
                        tracing::warn!(node = %node.name, lag_ms = lag.as_millis() as u64, "database node left: lagging")
                    }
                }
            }
            *state = NodeState {
                health,
                revision: Some(p.revision),
                wal_position: Some(p.position),
                lag,
                lag_bytes,
                error: (health == NodeHealth::Lagging).then(|| {
                    format!("{} ms behind the primary (bound {} ms)", lag.as_millis(), self.max_lag.as_millis())
                }),
            };
        }
    }

    /// Keeps the primary's WAL position `position`, seen at `now`. A position behind the newest
    /// kept one is another server's or another timeline's: the primary moved to a promoted
    /// standby, whose WAL goes on from where it stopped replaying, behind what the old primary
    /// wrote last (writes a failover loses). The positions kept before are forgotten, or every
    /// replica would look as far behind as those lost writes until the new primary wrote past them.
    fn sample(&self, now: Instant, position: u64) {
        let mut positions = self.positions.lock();
        if positions.back().is_some_and(|&(_, newest)| newest > position) {
            positions.clear();
        }
        if positions.len() == POSITION_SAMPLES {
            positions.pop_front();
        }
        positions.push_back((now, position));
    }

    /// A replica's lag, having replayed `replayed`: how long ago the primary was first seen past
    /// it, and how many bytes the newest sample is ahead.
    fn lag_of(&self, replayed: u64, now: Instant) -> (Duration, u64) {
        let positions = self.positions.lock();
        let bytes = positions.back().map_or(0, |&(_, newest)| newest.saturating_sub(replayed));
        let first_past = positions.iter().find(|&&(_, position)| position > replayed);
        (first_past.map_or(Duration::ZERO, |&(at, _)| now.saturating_duration_since(at)), bytes)
    }
}

struct Probed {
    position: u64,
    revision: i64,
    in_recovery: bool,
}

/// One node's probe: its WAL position (replayed on a standby, current on a primary, a promoted
/// replica included) and the newest revision it shows.
async fn probe(db: &DatabaseConnection) -> Result<Probed, DbErr> {
    let sql = "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text
                    AS position,
                pg_is_in_recovery() AS in_recovery,
                COALESCE((SELECT MAX(id) FROM data_revisions), 0) AS revision"
        .to_owned();
    let row = db
        .query_one_raw(Statement::from_string(DbBackend::Postgres, sql))
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("probe".to_owned()))?;
    let position: Option<String> = row.try_get("", "position")?;
    Ok(Probed {
        position: position.as_deref().and_then(parse_lsn).unwrap_or(0),
        revision: row.try_get("", "revision")?,
        in_recovery: row.try_get("", "in_recovery")?,
    })
}

/// A PostgreSQL WAL position (`pg_lsn` text, `16/B374D848`) as a byte offset.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (high, low) = text.split_once('/')?;
    Some((u64::from_str_radix(high, 16).ok()? << 32) | u64::from_str_radix(low, 16).ok()?)
}

async fn monitor(nodes: Weak<Nodes>, poked: Arc<tokio::sync::Notify>) {
    loop {
        let interval = match nodes.upgrade() {
            Some(n) if n.following() => FOLLOW_INTERVAL,
            Some(_) => PROBE_INTERVAL,
            None => return,
        };
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = poked.notified() => {}
        }
        let Some(nodes) = nodes.upgrade() else { return };
        nodes.probe().await;
    }
}

tokio::task_local! {
    static ATTEMPT: Attempt;
}

/// What [`Attempt::chosen`] holds when a request reads from the primary.
const PRIMARY: usize = usize::MAX;

/// One try at answering a request: the replicas it must not read from, and what happened.
struct Attempt {
    excluded: Vec<usize>,
    /// The node its reads go to, once the first read chose it (a replica's index, or [`PRIMARY`]).
    chosen: Mutex<Option<usize>>,
    failed: AtomicBool,
    unreachable: AtomicBool,
}

/// What an [`attempt`] did: the replica it read from (if any), and whether a read failed in a
/// way another node may not (the replica went away, or cancelled the query in a recovery
/// conflict).
#[derive(Debug, Default)]
pub struct Outcome {
    pub replica: Option<usize>,
    pub failed: bool,
    /// The failure was the node not answering (not a cancelled query): leave it now.
    pub unreachable: bool,
}

/// Runs `f` (a request's handling) as one attempt that reads from no replica in `excluded`.
pub async fn attempt<F: Future>(excluded: Vec<usize>, f: F) -> (F::Output, Outcome) {
    let attempt = Attempt {
        excluded,
        chosen: Mutex::default(),
        failed: AtomicBool::new(false),
        unreachable: AtomicBool::new(false),
    };
    ATTEMPT
        .scope(attempt, async {
            let out = f.await;
            let outcome = ATTEMPT.with(|a| Outcome {
                replica: a.chosen.lock().filter(|&c| c != PRIMARY),
                failed: a.failed.load(Ordering::Relaxed),
                unreachable: a.unreachable.load(Ordering::Relaxed),
            });
            (out, outcome)
        })
        .await
}

/// Records, in the running attempt (if any), that a read failed in a way another node may not:
/// its node did not answer (`unreachable`), or cancelled the query.
pub fn read_failed(unreachable: bool) {
    let _ = ATTEMPT.try_with(|a| {
        a.failed.store(true, Ordering::Relaxed);
        a.unreachable.fetch_or(unreachable, Ordering::Relaxed);
    });
}

/// Whether two PostgreSQL connections reach the same server and database (a replica listed in
/// `GOVDATA_READ_REPLICA_URLS` that was promoted and is now the primary).
fn same_server(a: &DatabaseConnection, b: &DatabaseConnection) -> bool {
    let (a, b) =
        (a.get_postgres_connection_pool().connect_options(), b.get_postgres_connection_pool().connect_options());
    (a.get_host(), a.get_port(), a.get_database()) == (b.get_host(), b.get_port(), b.get_database())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wal_positions() {
        assert_eq!(parse_lsn("0/0"), Some(0));
        assert_eq!(parse_lsn("16/B374D848"), Some((0x16 << 32) | 0xB374_D848));
        assert_eq!(parse_lsn("FFFFFFFF/FFFFFFFF"), Some(u64::MAX));
        assert_eq!(parse_lsn("16B374D848"), None);
        assert_eq!(parse_lsn("x/1"), None);
    }

    #[tokio::test]
    async fn lag_is_how_long_ago_the_primary_passed_the_replay() {
        let db = sea_orm::Database::connect("sqlite::memory:").await.expect("an in-memory store");
        let nodes = Nodes::with(db, Vec::new(), Duration::from_secs(5));
        let t0 = Instant::now();
        {
            let mut positions = nodes.positions.lock();
            positions.push_back((t0, 100));
            positions.push_back((t0 + Duration::from_millis(100), 200));
            positions.push_back((t0 + Duration::from_millis(200), 300));
        }
        let now = t0 + Duration::from_millis(250);
        // Replayed everything sampled: no lag, whatever the bytes written since.
        assert_eq!(nodes.lag_of(300, now), (Duration::ZERO, 0));
        // Behind the sample taken at 100 ms: 150 ms behind, 150 bytes.
        assert_eq!(nodes.lag_of(150, now), (Duration::from_millis(150), 150));
        // Behind every sample: at least as old as the oldest.
        assert_eq!(nodes.lag_of(10, now), (Duration::from_millis(250), 290));
    }

    #[tokio::test]
    async fn a_primary_behind_the_positions_kept_starts_them_again() {
        let db = sea_orm::Database::connect("sqlite::memory:").await.expect("an in-memory store");
        let nodes = Nodes::with(db, Vec::new(), Duration::from_secs(5));
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        nodes.sample(at(0), 100);
        nodes.sample(at(100), 5_000);
        // A promoted standby, which had replayed up to 300, is the primary now.
        nodes.sample(at(200), 320);
        assert_eq!(nodes.positions.lock().iter().copied().collect::<Vec<_>>(), [(at(200), 320)]);
        // The promoted standby, read as a replica, is not 5,000 bytes behind the old primary.
        assert_eq!(nodes.lag_of(320, at(250)), (Duration::ZERO, 0));
        // Equal and later positions are kept as before.
        nodes.sample(at(300), 320);
        nodes.sample(at(400), 400);
        assert_eq!(nodes.positions.lock().len(), 3);
        assert_eq!(nodes.lag_of(320, at(450)), (Duration::from_millis(50), 80));
    }

    #[tokio::test]
    async fn without_replicas_every_read_is_the_primarys() {
        let db = sea_orm::Database::connect("sqlite::memory:").await.expect("an in-memory store");
        let nodes = Nodes::single(db);
        let _ = nodes.reader(7);
        let (_, outcome) = attempt(vec![0], async { nodes.reader(1) }).await;
        assert!(outcome.replica.is_none() && !outcome.failed);
        let report = nodes.report();
        assert_eq!(report.len(), 1);
        assert_eq!(
            (report[0].role, report[0].state.health, report[0].reads),
            (NodeRole::Primary, NodeHealth::Serving, 0)
        );
    }
}
