//! Event streams of the feed (`GET /v2/stream`): one reader per process, fanned out.
//!
//! After each publication (the serving revision moved: this process's, or another's seen by
//! the watch it is handed, the edge's `serving`) the process's [`FeedHub`] reads the new feed entries once, renders each as
//! its finished SSE frame once, and broadcasts them; every open stream filters the shared frames
//! and writes the bytes it wants. No stream queries the store per tick or per publication.
//!
//! A stream reads the store itself only to catch up: from its resume point when it opens
//! (`Last-Event-ID` or `after`), and again from the last entry it sent if it fell behind the
//! broadcast (a client reading slower than entries are published, past the batches the hub
//! keeps: `GOVDATA_STREAM_BACKLOG_BATCHES`). It subscribes before it reads, and drops every
//! broadcast entry at or before the last one it sent, so that it sends each entry once, in
//! sequence order, with no gap: sequences commit in the order they are drawn (publications take
//! turns, `store::publish`), so an entry the broadcast has not yet carried is above every entry a
//! catch-up read saw.
//!
//! A stream ends with a `stream_ended` event ([`StreamEnded`]) when the time a payment bought
//! is over, when the server's longest stream duration passes, when the process drains, or when
//! the store cannot be read; the client resumes with `Last-Event-ID`. With nothing to send it
//! sends a keep-alive comment.
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, future::BoxFuture};
use poem_openapi::types::ToJSON;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::connections::Shutdown;
use crate::contract::errors::Problem;
use crate::contract::feed::{FeedKind, STREAM_ENDED_EVENT, STREAM_RETRY_MS, StreamEndReason, StreamEnded};
use crate::metrics::METRICS;
use crate::store::{
    self,
    failures::problem_marking_read_failed,
    feed::{FeedFilter, FeedRecord, Subjects},
};

/// Entries the hub reads at a time (shared by every stream).
const PAGE: u64 = 200;
/// Entries a stream catching up reads at a time: what it holds of its own, rendered, at most.
const CATCH_UP_PAGE: u64 = 50;
/// How long the hub waits before reading again after a failed read.
const RETRY_READ: Duration = Duration::from_secs(1);

/// One feed entry, as every stream sends it.
#[derive(Debug, Clone)]
pub struct Frame {
    pub seq: i64,
    pub dao_id: String,
    pub kind: FeedKind,
    /// What the entry is about (its proposal, its voters), as its filters match it.
    pub subjects: Subjects,
    /// `id: <seq>`, `event: <kind>`, `data: <entry JSON>` and the blank line.
    pub bytes: Bytes,
}

impl Frame {
    /// The frame of entry `seq` whose `data` is `json` (one line: compact JSON has no newline).
    pub fn new(seq: i64, dao_id: String, kind: FeedKind, subjects: Subjects, json: &str) -> Self {
        let bytes = Bytes::from(format!("id: {seq}\nevent: {}\ndata: {json}\n\n", kind.as_str()));
        Self { seq, dao_id, kind, subjects, bytes }
    }

    /// The entry, as JSON: the frame's `data` (what `/v2/feed` lists).
    pub fn data(&self) -> &[u8] {
        let bytes = &self.bytes[..];
        let start = bytes.windows(7).position(|w| w == b"\ndata: ").map_or(bytes.len(), |at| at + 7);
        let rest = &bytes[start..];
        &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())]
    }

    /// Whether a stream filtered by `filter` sends this frame (`None`: a filter no entry matches):
    /// what a catch-up read from the store with the same filter returns.
    fn wanted(&self, filter: Option<&FeedFilter>) -> bool {
        filter.is_some_and(|filter| filter.matches(&self.dao_id, self.kind, &self.subjects))
    }
}

/// Turns feed records into frames, showing each entry as `/v2/feed` does. The surfaces
/// implement it (`api::views::feed`); the edge knows no view.
pub trait RenderFrames: Send + Sync + 'static {
    fn render(
        &self,
        db: DatabaseConnection,
        records: Vec<FeedRecord>,
    ) -> BoxFuture<'static, Result<Vec<Frame>, Problem>>;
}

type Batch = Arc<[Frame]>;

/// A value of the watch the hub follows that names the serving revision (the edge's
/// `serving::Serving`): the hub reads after each new one.
pub trait Revision: Send + Sync + 'static {
    fn revision(&self) -> i64;
}

/// What a stream's catch-up read came to: its frames and whether the page was full, or `None`
/// when pruning passed the stream's position.
pub type CaughtUp = Option<(Vec<Frame>, bool)>;

/// The process's bound on concurrent store work, that a stream catching up reads within (the
/// edge's query slots, `edge::bounds`): a catch-up is a read like a request's.
pub trait ReadSlots: Send + Sync + 'static {
    /// Runs `read` in a slot, within the request deadline; the error says why it failed or was
    /// not run.
    fn run<'a>(&'a self, read: BoxFuture<'a, Result<CaughtUp, Problem>>) -> BoxFuture<'a, Result<CaughtUp, String>>;
}

/// The process's one reader of new feed entries, and the broadcast every stream listens to.
pub struct FeedHub {
    /// The primary: new entries are read there as publications commit.
    db: DatabaseConnection,
    /// The primary's health and the replicas, for catching up while the primary is away.
    nodes: Arc<store::nodes::Nodes>,
    render: Arc<dyn RenderFrames>,
    tx: broadcast::Sender<Batch>,
    /// The newest sequence the hub has read (or seen, when no stream listened).
    position: AtomicI64,
    /// Subscriptions ever taken: the hub skips reading only when none was taken meanwhile.
    subscriptions: AtomicU64,
}

impl FeedHub {
    /// Starts the hub after the newest entry, following `serving`, keeping `backlog` batches for
    /// streams that have not taken them yet (a stream further behind catches up from the
    /// store); it stops when the hub is dropped.
    pub async fn start<R: Revision>(
        nodes: Arc<store::nodes::Nodes>,
        render: Arc<dyn RenderFrames>,
        serving: watch::Receiver<R>,
        backlog: usize,
    ) -> Result<Arc<Self>, DbErr> {
        let db = nodes.primary().clone();
        let position = store::feed::newest(&db).await?;
        let (tx, _) = broadcast::channel(backlog.max(1));
        let hub = Arc::new(Self {
            db,
            nodes,
            render,
            tx,
            position: AtomicI64::new(position),
            subscriptions: AtomicU64::new(0),
        });
        tokio::spawn(follow(Arc::downgrade(&hub), serving));
        Ok(hub)
    }

    /// Where a stream catches up: the primary; while the primary is seen down, the freshest
    /// replica, if it holds every entry the hub has broadcast. Nothing is published without the
    /// primary, so such a replica lacks no entry a stream can have missed: those before its
    /// subscription or dropped while it lagged are at or below the hub's position, and later
    /// ones reach it by the broadcast. Otherwise the primary still: the read fails, and the
    /// stream ends `unavailable` with where to resume.
    async fn catch_up_node(&self) -> DatabaseConnection {
        if self.nodes.primary_down()
            && let Some(replica) = self.nodes.freshest_replica()
            && store::feed::newest(replica).await.is_ok_and(|n| n >= self.position.load(Ordering::Acquire))
        {
            return replica.clone();
        }
        self.db.clone()
    }

    /// The newest entry committed now, as a follower's starting point (the hub's own position,
    /// which is never ahead of it, when the primary cannot be read).
    pub async fn newest_committed(&self) -> i64 {
        match store::feed::newest(&self.db).await {
            Ok(newest) => newest,
            Err(_) => self.position.load(Ordering::Acquire),
        }
    }

    /// Reads and broadcasts every entry after the hub's position. With no stream listening it
    /// only moves the position to the newest entry.
    async fn read_new(&self) -> Result<(), Problem> {
        let mut position = self.position.load(Ordering::Acquire);
        let taken = self.subscriptions.load(Ordering::Acquire);
        if self.tx.receiver_count() == 0 {
            let newest = store::feed::newest(&self.db).await.map_err(|e| problem_marking_read_failed(&e))?;
            // A stream that subscribed meanwhile may have caught up from the store to before
            // entries this skip would pass over: then they are read and broadcast after all.
            if self.subscriptions.load(Ordering::Acquire) == taken {
                self.position.store(newest.max(position), Ordering::Release);
                return Ok(());
            }
        }
        loop {
            let records = store::feed::after(&self.db, &FeedFilter::default(), position, PAGE)
                .await
                .map_err(|e| problem_marking_read_failed(&e))?;
            METRICS.stream_reads.with_label_values(&["publication"]).inc();
            let full = records.len() as u64 == PAGE;
            let frames = self.render.render(self.db.clone(), records).await?;
            let Some(last) = frames.last() else { return Ok(()) };
            position = last.seq;
            self.position.store(position, Ordering::Release);
            // No receiver left is no error: the next stream reads from the store.
            let _ = self.tx.send(frames.into());
            if !full {
                return Ok(());
            }
        }
    }
}

/// The hub's loop: a read after each new serving revision.
async fn follow<R: Revision>(hub: Weak<FeedHub>, mut serving: watch::Receiver<R>) {
    let mut revision = serving.borrow_and_update().revision();
    loop {
        if serving.changed().await.is_err() {
            return;
        }
        let id = serving.borrow_and_update().revision();
        if id == revision {
            continue;
        }
        revision = id;
        loop {
            let Some(hub) = hub.upgrade() else { return };
            match hub.read_new().await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(detail = %e.detail, "the stream hub could not read the feed; retrying");
                    drop(hub);
                    tokio::time::sleep(RETRY_READ).await;
                }
            }
        }
    }
}

/// What one stream was asked for.
pub struct StreamPlan {
    /// Which entries (`None`: a filter no entry matches, such as a DAO id that names no DAO).
    pub filter: Option<FeedFilter>,
    /// The last entry the client has: the stream sends the entries after it.
    pub after: i64,
    /// When the server ends the stream, and why (a payment's time, the longest stream duration).
    pub ends: Option<(Instant, StreamEndReason)>,
    pub keep_alive: Duration,
}

/// A subscription taken before the stream's start is decided (so nothing published meanwhile
/// is missed).
pub struct Subscription(broadcast::Receiver<Batch>);

impl Subscription {
    /// The next batch of new entries, for a follower other than a stream (`edge::mcp`'s
    /// resource subscriptions); `Lagged` when it fell behind the batches the hub keeps.
    pub async fn next_batch(&mut self) -> Result<Arc<[Frame]>, broadcast::error::RecvError> {
        self.0.recv().await
    }
}

impl FeedHub {
    pub fn subscribe(&self) -> Subscription {
        let rx = self.tx.subscribe();
        self.subscriptions.fetch_add(1, Ordering::AcqRel);
        Subscription(rx)
    }

    /// The stream of `plan`'s bytes: the `retry:` hint, then the entries after `plan.after`
    /// (caught up from the store, then from the broadcast), keep-alive comments, and a last
    /// `stream_ended` event when the server ends it.
    pub fn stream(
        self: &Arc<Self>,
        subscription: Subscription,
        plan: StreamPlan,
        queries: impl ReadSlots,
        shutdown: Shutdown,
    ) -> Pin<Box<dyn Stream<Item = Bytes> + Send>> {
        let reader = Reader {
            hub: self.clone(),
            rx: subscription.0,
            plan,
            queries: Box::new(queries),
            shutdown,
            phase: Phase::Hello,
            written: Instant::now(),
            pending: VecDeque::new(),
            sent: None,
            _open: OpenStream::new(),
        };
        Box::pin(futures_util::stream::unfold(reader, |mut reader| async move {
            let bytes = reader.next().await?;
            Some((bytes, reader))
        }))
    }
}

/// Counts an open stream while it lives.
struct OpenStream;

impl OpenStream {
    fn new() -> Self {
        METRICS.streams_open.inc();
        Self
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        METRICS.streams_open.dec();
    }
}

/// What woke a stream following the broadcast.
enum Woke {
    End(StreamEndReason),
    Batch(Result<Batch, broadcast::error::RecvError>),
    /// Nothing was sent for the keep-alive interval.
    Quiet,
}

enum Phase {
    /// Nothing sent yet: the `retry:` hint goes first.
    Hello,
    /// Reading the store from the last entry sent.
    CatchUp,
    /// Following the broadcast.
    Live,
    Done,
}

struct Reader {
    hub: Arc<FeedHub>,
    rx: broadcast::Receiver<Batch>,
    plan: StreamPlan,
    queries: Box<dyn ReadSlots>,
    shutdown: Shutdown,
    phase: Phase,
    /// When bytes were last handed to the connection: a keep-alive follows a quiet interval.
    written: Instant,
    /// Frames taken and not yet handed to the connection: shared with the broadcast, not copied.
    pending: VecDeque<Bytes>,
    /// The sequence of the last entry sent.
    sent: Option<i64>,
    _open: OpenStream,
}

impl Reader {
    fn position(&self) -> i64 {
        self.sent.unwrap_or(self.plan.after)
    }

    /// The next bytes to send; `None` ends the stream.
    async fn next(&mut self) -> Option<Bytes> {
        let bytes = self.produce().await;
        self.written = Instant::now();
        bytes
    }

    async fn produce(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            match self.phase {
                Phase::Done => return None,
                Phase::Hello => {
                    self.phase = Phase::CatchUp;
                    return Some(Bytes::from(format!("retry: {STREAM_RETRY_MS}\n\n")));
                }
                Phase::CatchUp => {
                    if let Some(reason) = self.ending() {
                        return Some(self.end(reason));
                    }
                    if let Err(reason) = self.catch_up().await {
                        return Some(self.end(reason));
                    }
                }
                Phase::Live => {
                    let ends = self.plan.ends;
                    let until_end = async move {
                        match ends {
                            Some((at, reason)) => {
                                tokio::time::sleep_until(at).await;
                                reason
                            }
                            None => std::future::pending().await,
                        }
                    };
                    let shutdown = self.shutdown.clone();
                    let quiet_until = self.written + self.plan.keep_alive;
                    let woke = tokio::select! {
                        biased;
                        () = shutdown.begun() => Woke::End(StreamEndReason::ShuttingDown),
                        reason = until_end => Woke::End(reason),
                        batch = self.rx.recv() => Woke::Batch(batch),
                        () = tokio::time::sleep_until(quiet_until) => Woke::Quiet,
                    };
                    match woke {
                        Woke::End(reason) => return Some(self.end(reason)),
                        Woke::Batch(Ok(batch)) => self.take(&batch),
                        // Fell behind the broadcast: what it dropped is in the store.
                        Woke::Batch(Err(broadcast::error::RecvError::Lagged(_))) => self.phase = Phase::CatchUp,
                        Woke::Batch(Err(broadcast::error::RecvError::Closed)) => {
                            return Some(self.end(StreamEndReason::ShuttingDown));
                        }
                        Woke::Quiet => return Some(Bytes::from_static(b":\n\n")),
                    }
                }
            }
        }
    }

    /// A reason to end now, when there is one.
    fn ending(&self) -> Option<StreamEndReason> {
        if self.shutdown.draining() {
            return Some(StreamEndReason::ShuttingDown);
        }
        self.plan.ends.filter(|(at, _)| Instant::now() >= *at).map(|(_, reason)| reason)
    }

    /// Takes one page from the store after the last entry sent (following the broadcast once a
    /// page is not full), or says why the stream must end.
    async fn catch_up(&mut self) -> Result<(), StreamEndReason> {
        let Some(filter) = self.plan.filter.clone() else {
            self.phase = Phase::Live;
            return Ok(());
        };
        let position = self.position();
        let hub = self.hub.clone();
        let render = self.hub.render.clone();
        let read = self.queries.run(Box::pin(async move {
            let db = hub.catch_up_node().await;
            // A position pruning has passed lost entries: the client must resynchronise.
            if store::feed::pruned_past(&db, position).await.map_err(|e| problem_marking_read_failed(&e))?.is_some() {
                return Ok(None);
            }
            let records = store::feed::after(&db, &filter, position, CATCH_UP_PAGE)
                .await
                .map_err(|e| problem_marking_read_failed(&e))?;
            METRICS.stream_reads.with_label_values(&["resume"]).inc();
            let full = records.len() as u64 == CATCH_UP_PAGE;
            Ok::<CaughtUp, Problem>(Some((render.render(db, records).await?, full)))
        }));
        let (frames, full) = match read.await {
            Ok(Some(read)) => read,
            Ok(None) => return Err(StreamEndReason::Expired),
            Err(e) => {
                tracing::warn!(error = %e, "a stream could not read the feed; ending it");
                return Err(StreamEndReason::Unavailable);
            }
        };
        if !full {
            self.phase = Phase::Live;
        }
        self.take(&frames);
        Ok(())
    }

    /// Queues the frames of `frames` this stream wants and has not sent.
    fn take(&mut self, frames: &[Frame]) {
        let position = self.position();
        for frame in frames.iter().filter(|f| f.seq > position && f.wanted(self.plan.filter.as_ref())) {
            self.sent = Some(frame.seq);
            self.pending.push_back(frame.bytes.clone());
        }
    }

    /// The last event: why the stream ends, and where to resume.
    fn end(&mut self, reason: StreamEndReason) -> Bytes {
        self.phase = Phase::Done;
        let ended =
            StreamEnded { reason, detail: reason.detail().to_owned(), last_sequence: self.sent.map(|s| s.to_string()) };
        Bytes::from(format!("event: {STREAM_ENDED_EVENT}\ndata: {}\n\n", ended.to_json_string()))
    }
}
