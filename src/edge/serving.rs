//! What every request needs to know of the store, kept in memory and watched instead of read per
//! request: the serving revision (which keys the response cache and binds cursors), each DAO's
//! revision, the newest watermark (`dataAsOf`), and the live partner tokens.
//!
//! A background task polls one small query every [`WATCH_INTERVAL`] (plus a token fingerprint),
//! so another process's publication or token change reaches this one within that bound on both
//! backends. A publication made by this process ([`ServingWatch::refresh`]) is seen at once; on
//! PostgreSQL so is another process's: its commit notifies a channel this process listens on.
//!
//! **Revocation** takes effect on the next request in every process: the gate trusts its token
//! snapshot only while the query that loaded it started less than [`TOKEN_SNAPSHOT_MAX_AGE`] ago
//! (otherwise it asks the store), and `govdata tokens revoke` returns only after that long
//! ([`REVOCATION_PROPAGATION`]). Recording a token's use is bookkeeping, written by a task of
//! its own at most once per token per [`tokens::LAST_USED_RESOLUTION_MS`]; no request waits for
//! a write.
use std::collections::HashMap;
use std::sync::{Arc, Weak};

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::{Mutex, RwLock};
use std::time::{Duration, Instant};

use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::watch;

use crate::contract::errors::{ErrorCode, Problem};
use crate::metrics::METRICS;
use crate::store::nodes::Nodes;
use crate::store::publish::PUBLISHED_CHANNEL;
use crate::store::{
    freshness::{self, ServingHead},
    tokens::{self, LiveToken},
};

/// How often the store is asked whether something was published or a token changed: the bound
/// within which another process's publication reaches this process's cache and cursors.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(250);
/// When the watch's small read has not succeeded for this long (twelve ticks), the store is
/// taken to be away: requests that need it are answered 503 at once instead of each waiting out
/// the pool's connect timeout; cached answers are still served. The first read that succeeds
/// ends it.
pub const STORE_SILENT: Duration = Duration::from_secs(3);
/// The oldest token snapshot the gate trusts; an older one (the store was unreachable) sends the
/// gate to the store for every partner request until the watch catches up.
pub const TOKEN_SNAPSHOT_MAX_AGE: Duration = Duration::from_secs(1);
/// How long `govdata tokens revoke` waits before it reports the revocation effective everywhere:
/// every process has reloaded its tokens (or stopped trusting its snapshot) by then.
pub const REVOCATION_PROPAGATION: Duration = Duration::from_millis(1_100);

/// The published state requests are served from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Serving {
    /// The serving revision (0 before the first publication).
    pub id: i64,
    /// The newest ingestion watermark: the `dataAsOf` of every data answer. It moves with each
    /// successful run, also one that publishes nothing new.
    pub data_as_of_ms: Option<i64>,
    /// The revision that last changed each DAO.
    pub dao_revisions: HashMap<String, i64>,
}

impl Serving {
    /// The revision a cursor over `dao`'s data (or over every DAO, `None`) is bound to: a
    /// publication that does not touch a DAO leaves the cursors paging it valid.
    pub fn revision_of(&self, dao: Option<&str>) -> i64 {
        dao.and_then(|d| self.dao_revisions.get(d)).copied().unwrap_or(self.id)
    }
}

/// The feed's stream hub reads after each new serving revision this watch carries.
impl crate::push::hub::Revision for Arc<Serving> {
    fn revision(&self) -> i64 {
        self.id
    }
}

struct TokenSnapshot {
    /// When the query that loaded it started.
    loaded: Instant,
    fingerprint: (i64, i64, i64),
    by_hash: HashMap<String, LiveToken>,
}

/// The watched state, shared by the gate, the cache and the handlers.
pub struct ServingWatch {
    /// The primary: where the serving state is read, and token use written.
    db: DatabaseConnection,
    /// The primary and the replicas: while the primary does not answer, the serving state is
    /// read from the freshest replica, so reads go on being served.
    nodes: Arc<Nodes>,
    serving: watch::Sender<Arc<Serving>>,
    tokens: RwLock<Option<TokenSnapshot>>,
    /// When each token's use was last written (epoch ms).
    uses_written: Mutex<HashMap<i64, i64>>,
    /// One refresh at a time (the poller and a local publication may meet).
    refreshing: tokio::sync::Mutex<()>,
    /// Wakes the poller before its next tick (shared with it: the poller holds no strong
    /// reference to the watch, so it stops when the watch is dropped).
    poked: Arc<tokio::sync::Notify>,
}

impl ServingWatch {
    /// Loads the current state and starts the poller, which stops when the watch is dropped.
    pub async fn start(nodes: Arc<Nodes>) -> Result<Arc<Self>, DbErr> {
        let watch = Arc::new(Self {
            db: nodes.primary().clone(),
            nodes,
            serving: watch::Sender::new(Arc::new(Serving::default())),
            tokens: RwLock::new(None),
            uses_written: Mutex::default(),
            refreshing: tokio::sync::Mutex::new(()),
            poked: Arc::default(),
        });
        watch.refresh().await?;
        tokio::spawn(poll(Arc::downgrade(&watch), watch.poked.clone()));
        if watch.db.get_database_backend() == sea_orm::DbBackend::Postgres {
            let options = (*watch.db.get_postgres_connection_pool().connect_options()).clone();
            tokio::spawn(listen(Arc::downgrade(&watch), watch.poked.clone(), options));
        }
        Ok(watch)
    }

    /// The state requests are served from now.
    pub fn current(&self) -> Arc<Serving> {
        self.serving.borrow().clone()
    }

    /// Follows changes of the serving state (tests wait on it).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Serving>> {
        self.serving.subscribe()
    }

    /// Asks the poller to read the store now, without waiting for it: what this process just
    /// published is served from the next request on.
    pub fn poke(&self) {
        self.poked.notify_one();
    }

    /// Reads the store now: after a publication by this process, or on the poller's tick.
    pub async fn refresh(&self) -> Result<(), DbErr> {
        let _one = self.refreshing.lock().await;
        // A primary the node monitor has seen go is not waited for: the replicas hold the state.
        let primary_down = self.nodes.primary_down();
        let from_primary = match primary_down {
            true => None,
            false => Some(self.refresh_from(&self.db).await),
        };
        match (from_primary, self.nodes.freshest_replica()) {
            (Some(Ok(revision)), _) => {
                self.nodes.published(revision);
                Ok(())
            }
            (Some(Err(e)), None) => Err(e),
            (None, None) => {
                Err(DbErr::Conn(sea_orm::RuntimeErr::Internal("neither the primary nor a replica answers".to_owned())))
            }
            (_, Some(replica)) => self.refresh_from(replica).await.map(|_| ()),
        }
    }

    /// Reads the serving state and the tokens from `db`; the revision it shows.
    async fn refresh_from(&self, db: &DatabaseConnection) -> Result<i64, DbErr> {
        let head = freshness::serving_head(db).await?;
        let known = self.current();
        if head.revision != known.id || head.data_as_of_ms != known.data_as_of_ms {
            let dao_revisions = if head.revision == known.id {
                known.dao_revisions.clone()
            } else {
                freshness::dao_revisions(db).await?.into_iter().collect()
            };
            let ServingHead { revision, data_as_of_ms } = head;
            self.serving.send_replace(Arc::new(Serving { id: revision, data_as_of_ms, dao_revisions }));
        }
        self.refresh_tokens(db).await?;
        Ok(head.revision)
    }

    /// The primary and the replicas requests read from.
    pub fn nodes(&self) -> &Arc<Nodes> {
        &self.nodes
    }

    /// A 503 for a request that needs the store, when the store has not answered for longer
    /// than `STORE_SILENT`: the token snapshot is stamped by every refresh that succeeds (the
    /// last step of one), so its age is how long the store has been silent.
    pub fn store_away(&self) -> Option<Problem> {
        let snapshot = self.tokens.read();
        let silent = snapshot.as_ref().map(|s| s.loaded.elapsed())?;
        (silent > STORE_SILENT).then(|| {
            Problem::new(
                ErrorCode::Unavailable,
                format!("The store has not answered for {} s; retry shortly.", silent.as_secs()),
            )
        })
    }

    async fn refresh_tokens(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let started = Instant::now();
        let fingerprint = tokens::fingerprint(db).await?;
        let unchanged = {
            let mut snapshot = self.tokens.write();
            match snapshot.as_mut() {
                Some(s) if s.fingerprint == fingerprint => {
                    s.loaded = started;
                    true
                }
                _ => false,
            }
        };
        if !unchanged {
            let by_hash = tokens::live_by_hash(db).await?;
            *self.tokens.write() = Some(TokenSnapshot { loaded: started, fingerprint, by_hash });
        }
        Ok(())
    }

    /// The live partner token `sent` if a recent snapshot holds it (no store access), recording
    /// its use. A token not remembered is for [`ServingWatch::look_up`]: one created since the
    /// snapshot works at once, and an unknown one is refused only by the store.
    pub fn remembered(self: &Arc<Self>, sent: &str) -> Option<LiveToken> {
        let hash = tokens::hash(sent);
        let token = {
            let snapshot = self.tokens.read();
            snapshot
                .as_ref()
                .filter(|s| s.loaded.elapsed() < TOKEN_SNAPSHOT_MAX_AGE)
                .and_then(|s| s.by_hash.get(&hash).cloned())
        }?;
        self.record_use(token.id);
        Some(token)
    }

    /// The live partner token `sent` as the store holds it, if any, recording its use.
    pub async fn look_up(self: &Arc<Self>, sent: &str) -> Result<Option<LiveToken>, DbErr> {
        // A token created since the snapshot is on the primary first; while the primary does
        // not answer, a replica knows every token made before it went.
        let primary_down = self.nodes.primary_down();
        let found = match primary_down {
            true => Err(DbErr::Conn(sea_orm::RuntimeErr::Internal("the primary is down".to_owned()))),
            false => tokens::find_live(&self.db, sent).await,
        };
        let found = match found {
            Err(e) => match self.nodes.freshest_replica() {
                Some(replica) => tokens::find_live(replica, sent).await.map_err(|_| e),
                None => Err(e),
            },
            found => found,
        };
        let token = found?.map(LiveToken::from);
        if let Some(t) = &token {
            self.record_use(t.id);
        }
        Ok(token)
    }

    /// Writes that token `id` was used now, in a task of its own, when its last use written is
    /// older than the resolution: a slow or locked store holds up no request.
    fn record_use(self: &Arc<Self>, id: i64) {
        let now = crate::contract::time::now_ms();
        {
            let mut written = self.uses_written.lock();
            if written.get(&id).is_some_and(|&at| now - at < tokens::LAST_USED_RESOLUTION_MS) {
                return;
            }
            written.insert(id, now);
        }
        let db = self.db.clone();
        tokio::spawn(async move {
            if let Err(err) = tokens::touch(&db, id, now).await {
                tracing::warn!(error = %err, token = id, "could not record partner token use");
            }
        });
    }
}

/// Revokes partner token `id` (`Ok(false)`: no such token) and returns once every server
/// refuses it: each trusts its in-memory tokens for less than [`REVOCATION_PROPAGATION`].
pub async fn revoke_token(db: &DatabaseConnection, id: i64) -> Result<bool, DbErr> {
    let revoked = tokens::revoke(db, id, crate::contract::time::now_ms()).await?;
    if revoked {
        tokio::time::sleep(REVOCATION_PROPAGATION).await;
    }
    Ok(revoked)
}

/// On PostgreSQL, a publication notifies [`PUBLISHED_CHANNEL`] as it commits: this wakes the
/// poller at once, so another process's publication reaches this one's cache, cursors and
/// streams in milliseconds instead of up to a tick. The listener holds one connection of its
/// own (outside the pool requests use); while it is down, the tick still bounds the delay.
async fn listen(watch: Weak<ServingWatch>, poked: Arc<tokio::sync::Notify>, options: PgConnectOptions) {
    let mut failing = false;
    while watch.strong_count() > 0 {
        let pool = PgPoolOptions::new().max_connections(1).connect_lazy_with(options.clone());
        let listening = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(PUBLISHED_CHANNEL).await?;
            if failing {
                tracing::info!("listening for publications again");
                failing = false;
            }
            loop {
                listener.recv().await?;
                if watch.strong_count() == 0 {
                    return Ok::<(), sea_orm::sqlx::Error>(());
                }
                METRICS.publication_notifications.inc();
                poked.notify_one();
            }
        };
        if let Err(err) = listening.await {
            if !failing {
                tracing::warn!(error = %err, "cannot listen for publications; polling every {WATCH_INTERVAL:?} meanwhile");
                failing = true;
            }
            tokio::time::sleep(LISTEN_RETRY).await;
        }
        pool.close().await;
    }
}

/// How long the listener waits before it connects again after a failure.
const LISTEN_RETRY: Duration = Duration::from_secs(1);

async fn poll(watch: Weak<ServingWatch>, poked: Arc<tokio::sync::Notify>) {
    let mut tick = tokio::time::interval(WATCH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = poked.notified() => {}
        }
        let Some(watch) = watch.upgrade() else { return };
        match watch.refresh().await {
            Ok(()) if failing => {
                tracing::info!("the store answers again; serving state refreshed");
                failing = false;
            }
            Ok(()) => {}
            Err(err) if !failing => {
                tracing::warn!(error = %err, "cannot read the serving state; retrying every {WATCH_INTERVAL:?}");
                failing = true;
            }
            Err(_) => {}
        }
    }
}
