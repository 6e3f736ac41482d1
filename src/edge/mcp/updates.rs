//! Resource subscriptions: who watches which resource, and the one follower of the feed that
//! tells them when a publication changed it.
//!
//! Both protocol generations are fed from here. A 2025-11-25 session subscribes URI by URI
//! (`resources/subscribe`); its [`Subscriber`] is drained by a task of its own that sends
//! `notifications/resources/updated` to the session's peer (the session's GET stream). A
//! 2026-07-28 `subscriptions/listen` stream is one [`Subscriber`] for the life of the request,
//! drained by the handler itself through the stream's sink.
//!
//! The feed reaches them through the process's stream hub (`push::hub`), the broadcast the event
//! streams read: no subscriber reads the store. While anyone watches, one task follows the hub,
//! reads each new entry's body once, maps it to the resources it changes ([`changed_by`]: its DAO,
//! the proposal it is about, the voters it concerns) and marks those URIs pending for their
//! watchers; a watcher sends each pending URI once, however many entries changed it meanwhile.
//! With no watcher the follower stops, and the hub skips its reads again. A follower that fell
//! behind the hub's backlog lost entries: every watched URI is then marked changed (a needless
//! "updated" costs a read; a missed one is wrong).
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::{
    ErrorData as McpError, Peer, RoleServer,
    model::{PingRequest, ResourceUpdatedNotificationParam, ServerRequest},
};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast::error::RecvError};

use crate::connections::Shutdown;
use crate::contract::{
    errors::ParamLocation,
    events::EventKind,
    ids::{VoterIdentity, check_key, parse_voter_identity},
    mcp::{MAX_WATCHED_RESOURCES, ResourceDecl, ResourceKind},
    vocabulary::{ItemKind, KeyKind},
};
use crate::push::hub::{FeedHub, Frame, Subscription};

/// One watched resource: its kind and its canonical parameter (a voter's lowercase address).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub ResourceKind, pub String);

/// What a subscription to `uri` watches: an error when `uri` is no resource (-32002, "not
/// found") or names one that cannot be watched (-32602: a malformed key, a voter named by ENS).
pub fn watched(resources: &[ResourceDecl], uri: &str) -> Result<Key, McpError> {
    let Some((decl, value)) = resources.iter().find_map(|r| Some((r, r.matches(uri)?))) else {
        return Err(super::unknown_resource(uri));
    };
    let invalid = |reason: String| McpError::invalid_params(reason, Some(json!({ "uri": uri })));
    let canonical = match decl.kind {
        // The slug as entries carry it.
        ResourceKind::Dao => value,
        ResourceKind::Proposal => {
            check_key(&value, KeyKind::Proposal).map_err(|p| invalid(p.detail))?;
            value
        }
        ResourceKind::Voter => match parse_voter_identity(&value, &decl.param, ParamLocation::Path) {
            Ok(VoterIdentity::Address(address)) => address,
            // Entries name voters by address; an ENS name is resolved against the store, which a
            // subscription does not read.
            Ok(VoterIdentity::Ens(name)) => {
                return Err(invalid(format!(
                    "`{name}` is an ENS name: subscribe to a voter by its 0x address or CAIP-10 account ({} \
                     after reading `{uri}` names it)",
                    decl.param
                )));
            }
            Err(problem) => return Err(invalid(problem.detail)),
        },
    };
    Ok(Key(decl.kind, canonical))
}

/// The resources a feed entry (as `/v2/feed` lists it) changes: its DAO; the proposal its event,
/// signal or moment is about; the voter who cast its vote; the holder and both delegates of its
/// delegation.
pub fn changed_by(entry: &Value) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    if let Some(dao) = entry["daoId"].as_str() {
        keys.insert(Key(ResourceKind::Dao, dao.to_owned()));
    }
    for subject in [&entry["event"]["subject"], &entry["signal"]["subject"]] {
        if subject["kind"] == ItemKind::Proposal.as_str()
            && let Some(key) = subject["key"].as_str()
        {
            keys.insert(Key(ResourceKind::Proposal, key.to_owned()));
        }
    }
    // A proposal's moment (a deadline near or passed, its quorum reached, its ETA passed).
    if let Some(key) = entry["moment"]["proposalKey"].as_str() {
        keys.insert(Key(ResourceKind::Proposal, key.to_owned()));
    }
    let voter = |address: &str| Key(ResourceKind::Voter, address.to_ascii_lowercase());
    if entry["event"]["kind"] == EventKind::VoteCast.as_str()
        && let Some(actor) = entry["event"]["actor"].as_str()
    {
        keys.insert(voter(actor));
    }
    for member in ["delegator", "fromDelegate", "toDelegate"] {
        if let Some(address) = entry["delegation"][member].as_str() {
            keys.insert(voter(address));
        }
    }
    keys
}

/// The resources of a frame's entry (none when its body is not JSON, which the hub never sends).
fn frame_keys(frame: &Frame) -> BTreeSet<Key> {
    serde_json::from_slice::<Value>(frame.data()).map(|entry| changed_by(&entry)).unwrap_or_default()
}

/// One who watches: a session, or a listen stream.
pub struct Subscriber {
    id: u64,
    /// What it watches, and the URIs it named each by (notifications carry the URI as named).
    watched: Mutex<HashMap<Key, BTreeSet<String>>>,
    /// For each key, the newest entry committed when it started watching it: entries up to it
    /// were committed before, and the reader may still broadcast them (it follows publications
    /// on its own); they tell it nothing new.
    since: Mutex<HashMap<Key, i64>>,
    /// URIs changed and not yet sent.
    pending: Mutex<BTreeSet<String>>,
    wake: Notify,
    /// Set when it is removed: its drainer stops.
    closed: AtomicBool,
}

impl Subscriber {
    fn new(id: u64) -> Arc<Self> {
        Arc::new(Self {
            id,
            watched: Mutex::default(),
            since: Mutex::default(),
            pending: Mutex::default(),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
        })
    }

    /// Resolves when a URI it watches changed, or it was removed.
    pub async fn changed(&self) {
        self.wake.notified().await;
    }

    /// The URIs changed since the last call, each once.
    pub fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *lock(&self.pending))
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks `key` changed by entry `seq` (not when the entry was committed before it watched).
    fn mark(&self, key: &Key, seq: i64) {
        if lock(&self.since).get(key).is_some_and(|&since| seq <= since) {
            return;
        }
        let uris = lock(&self.watched).get(key).cloned().unwrap_or_default();
        if !uris.is_empty() {
            lock(&self.pending).extend(uris);
            self.wake.notify_one();
        }
    }

    fn mark_all(&self) {
        let uris: Vec<String> = lock(&self.watched).values().flatten().cloned().collect();
        lock(&self.pending).extend(uris);
        self.wake.notify_one();
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Default)]
struct State {
    /// Who watches each resource.
    watchers: HashMap<Key, HashSet<u64>>,
    subscribers: HashMap<u64, Arc<Subscriber>>,
    /// The subscriber of each session (by `Mcp-Session-Id`).
    sessions: HashMap<String, u64>,
    next_id: u64,
    /// The task following the hub, while anyone watches.
    follower: Option<tokio::task::AbortHandle>,
}

/// The process's resource subscriptions.
pub struct Updates {
    hub: Arc<FeedHub>,
    state: Mutex<State>,
    /// How long a session may stay silent ([`crate::config::LimitArgs::mcp_session_idle`]): a
    /// subscribed session is pinged every third of it.
    idle: Duration,
    /// Longest a listen stream stays open (the streams' `GOVDATA_STREAM_MAX_DURATION`).
    pub max_listen: Option<Duration>,
    pub shutdown: Shutdown,
}

impl Updates {
    pub fn new(hub: Arc<FeedHub>, idle: Duration, max_listen: Option<Duration>, shutdown: Shutdown) -> Arc<Self> {
        Arc::new(Self { hub, state: Mutex::default(), idle, max_listen, shutdown })
    }

    /// Registers `subscriber` as a watcher of `keys`, starting the follower if none runs. The
    /// follower subscribes to the hub before this returns: nothing published after is missed.
    fn watch(self: &Arc<Self>, state: &mut State, subscriber: &Arc<Subscriber>, keys: &[Key], since: i64) {
        state.subscribers.entry(subscriber.id).or_insert_with(|| subscriber.clone());
        for key in keys {
            state.watchers.entry(key.clone()).or_default().insert(subscriber.id);
            lock(&subscriber.since).entry(key.clone()).or_insert(since);
        }
        if state.follower.as_ref().is_none_or(tokio::task::AbortHandle::is_finished) {
            let subscription = self.hub.subscribe();
            state.follower = Some(tokio::spawn(follow(Arc::downgrade(self), subscription)).abort_handle());
        }
    }

    /// Removes `subscriber` and what it watched; the follower stops with the last one.
    fn remove(&self, subscriber: &Subscriber) {
        subscriber.close();
        let mut state = lock(&self.state);
        if state.subscribers.remove(&subscriber.id).is_none() {
            return;
        }
        state.sessions.retain(|_, id| *id != subscriber.id);
        for key in lock(&subscriber.watched).keys() {
            if let Some(ids) = state.watchers.get_mut(key) {
                ids.remove(&subscriber.id);
                if ids.is_empty() {
                    state.watchers.remove(key);
                }
            }
        }
        if state.subscribers.is_empty()
            && let Some(follower) = state.follower.take()
        {
            follower.abort();
        }
    }

    /// Marks the watchers of `keys` changed by entry `seq`.
    fn changed(&self, seq: i64, keys: &BTreeSet<Key>) {
        let state = lock(&self.state);
        for key in keys {
            for id in state.watchers.get(key).into_iter().flatten() {
                if let Some(subscriber) = state.subscribers.get(id) {
                    subscriber.mark(key, seq);
                }
            }
        }
    }

    /// The newest entry committed now: a new watcher is told of the entries after it.
    pub async fn newest_committed(&self) -> i64 {
        self.hub.newest_committed().await
    }

    /// Marks everything watched changed.
    fn all_changed(&self) {
        for subscriber in lock(&self.state).subscribers.values() {
            subscriber.mark_all();
        }
    }

    /// A 2025-11-25 session subscribes to `uri` (watching `key`, for the entries after `since`,
    /// [`Self::newest_committed`]); the first subscription of a session starts the task that
    /// sends its notifications to `peer`.
    pub fn subscribe(
        self: &Arc<Self>,
        session: &str,
        peer: &Peer<RoleServer>,
        key: Key,
        uri: &str,
        since: i64,
    ) -> Result<(), McpError> {
        let mut state = lock(&self.state);
        let existing = state.sessions.get(session).and_then(|id| state.subscribers.get(id)).cloned();
        let subscriber = match existing {
            Some(subscriber) => subscriber,
            None => {
                state.next_id += 1;
                let subscriber = Subscriber::new(state.next_id);
                state.sessions.insert(session.to_owned(), subscriber.id);
                tokio::spawn(deliver(Arc::downgrade(self), subscriber.clone(), peer.clone(), self.idle / 3));
                subscriber
            }
        };
        {
            let mut watched = lock(&subscriber.watched);
            let count: usize = watched.values().map(BTreeSet::len).sum();
            let known = watched.get(&key).is_some_and(|uris| uris.contains(uri));
            if !known && count >= MAX_WATCHED_RESOURCES {
                return Err(McpError::invalid_params(
                    format!("A session watches at most {MAX_WATCHED_RESOURCES} resources; unsubscribe from one first."),
                    Some(json!({ "uri": uri })),
                ));
            }
            watched.entry(key.clone()).or_default().insert(uri.to_owned());
        }
        self.watch(&mut state, &subscriber, &[key], since);
        Ok(())
    }

    /// A session unsubscribes from `uri` (unknown ones are no error: the spec's unsubscribe is
    /// idempotent). Its last unsubscription ends its subscriber.
    pub fn unsubscribe(&self, session: &str, key: &Key, uri: &str) {
        let subscriber = {
            let state = lock(&self.state);
            state.sessions.get(session).and_then(|id| state.subscribers.get(id)).cloned()
        };
        let Some(subscriber) = subscriber else { return };
        let (gone, empty) = {
            let mut watched = lock(&subscriber.watched);
            let gone = watched.get_mut(key).is_some_and(|uris| {
                uris.remove(uri);
                uris.is_empty()
            });
            if gone {
                watched.remove(key);
                lock(&subscriber.since).remove(key);
            }
            (gone, watched.is_empty())
        };
        if empty {
            self.remove(&subscriber);
        } else if gone {
            let mut state = lock(&self.state);
            if let Some(ids) = state.watchers.get_mut(key) {
                ids.remove(&subscriber.id);
                if ids.is_empty() {
                    state.watchers.remove(key);
                }
            }
        }
    }

    /// A 2026-07-28 listen stream watches `watched` (key and URI pairs), for the entries after
    /// `since` ([`Self::newest_committed`]), until the guard drops.
    pub fn listen(self: &Arc<Self>, watched: Vec<(Key, String)>, since: i64) -> Listening {
        let mut state = lock(&self.state);
        state.next_id += 1;
        let subscriber = Subscriber::new(state.next_id);
        let keys: Vec<Key> = {
            let mut map = lock(&subscriber.watched);
            for (key, uri) in watched {
                map.entry(key).or_default().insert(uri);
            }
            map.keys().cloned().collect()
        };
        self.watch(&mut state, &subscriber, &keys, since);
        Listening { updates: self.clone(), subscriber }
    }
}

/// A listen stream's registration: removed when dropped (the stream ended, however).
pub struct Listening {
    updates: Arc<Updates>,
    pub subscriber: Arc<Subscriber>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.updates.remove(&self.subscriber);
    }
}

/// The follower: every new entry's resources marked for their watchers.
async fn follow(updates: Weak<Updates>, mut subscription: Subscription) {
    loop {
        let batch = subscription.next_batch().await;
        let Some(updates) = updates.upgrade() else { return };
        match batch {
            Ok(frames) => {
                for frame in frames.iter() {
                    updates.changed(frame.seq, &frame_keys(frame));
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "MCP resource subscriptions fell behind the feed; every watched resource is notified"
                );
                updates.all_changed();
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// How long one notification may wait on a session's stream (a client that does not read it).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends a session's pending notifications to its peer, and pings the client every `every` while
/// nothing else is sent, which keeps the session from idling out while its client answers. A
/// client that does not answer, a send that fails or times out, or a closed session removes the
/// subscriber: the session then idles out.
async fn deliver(updates: Weak<Updates>, subscriber: Arc<Subscriber>, peer: Peer<RoleServer>, every: Duration) {
    let shutdown = match updates.upgrade() {
        Some(updates) => updates.shutdown.clone(),
        None => return,
    };
    let alive = async {
        let mut quiet_until = tokio::time::Instant::now() + every;
        loop {
            tokio::select! {
                () = subscriber.changed() => {
                    if subscriber.is_closed() {
                        return;
                    }
                    for uri in subscriber.take() {
                        let sent = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri));
                        if !matches!(tokio::time::timeout(SEND_TIMEOUT, sent).await, Ok(Ok(()))) {
                            return;
                        }
                    }
                    quiet_until = tokio::time::Instant::now() + every;
                }
                () = tokio::time::sleep_until(quiet_until) => {
                    let ping = peer.send_request(ServerRequest::PingRequest(PingRequest::default()));
                    if !matches!(tokio::time::timeout(every, ping).await, Ok(Ok(_))) {
                        tracing::debug!("an MCP session's client did not answer a ping; its subscriptions end");
                        return;
                    }
                    quiet_until = tokio::time::Instant::now() + every;
                }
                () = shutdown.begun() => return,
            }
            if peer.is_transport_closed() {
                return;
            }
        }
    };
    alive.await;
    if let Some(updates) = updates.upgrade() {
        updates.remove(&subscriber);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_changes_its_dao_proposal_and_voters() {
        let vote = json!({
            "sequence": "7", "kind": "vote_cast", "daoId": "uniswap",
            "event": { "kind": "vote_cast", "actor": "0xABCDEF0000000000000000000000000000000001",
                       "subject": { "kind": "proposal", "key": "p_aaaaaaaaaaaaaaaaaaaaaa" } },
        });
        let keys: Vec<Key> = changed_by(&vote).into_iter().collect();
        assert_eq!(
            keys,
            vec![
                Key(ResourceKind::Dao, "uniswap".into()),
                Key(ResourceKind::Proposal, "p_aaaaaaaaaaaaaaaaaaaaaa".into()),
                Key(ResourceKind::Voter, "0xabcdef0000000000000000000000000000000001".into()),
            ]
        );
        // A proposal's author is no voter change; a topic is no proposal.
        let created = json!({ "daoId": "d", "event": { "kind": "proposal_created", "actor": "0x01",
            "subject": { "kind": "forum_topic", "key": "t_x" } } });
        assert_eq!(changed_by(&created).len(), 1);
        let delegation = json!({ "daoId": "d", "delegation": { "delegator": "0x01", "toDelegate": "0x02" } });
        assert_eq!(changed_by(&delegation).len(), 3);
        let moment = json!({ "daoId": "d", "kind": "voting_ends_soon", "moment": { "proposalKey": "p_m" } });
        assert!(changed_by(&moment).contains(&Key(ResourceKind::Proposal, "p_m".to_owned())));
        let signal = json!({ "daoId": "d", "signal": { "subject": { "kind": "proposal", "key": "p_b" } } });
        assert!(changed_by(&signal).contains(&Key(ResourceKind::Proposal, "p_b".into())));
    }
}
