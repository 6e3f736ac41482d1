//! The dispatcher: the feed's entries sent to webhook subscriptions (Standard Webhooks v1.0.0).
//!
//! Every serving process runs one [`Dispatcher`]. Woken by each publication (and at least every
//! poll interval, for what other processes queued), it enqueues the new entries
//! (`queue::enqueue`: a delivery row per entry and subscription, in the store before
//! anything is sent), then each active subscription's own task claims that subscription's due
//! deliveries with a lease, sends at most [`ENDPOINT_CONCURRENCY`] at a time, and records every
//! attempt. A slow or dead receiver holds only its own task and slots: never the publication
//! (which only appended to the feed), the API, or another receiver.
//!
//! What a receiver may see: each entry at least once (a `webhook-id` seen before is a
//! duplicate); entries in sequence order as long as every attempt succeeds at the first try,
//! but up to [`ENDPOINT_CONCURRENCY`] are in flight at once, and a retried entry arrives after
//! later ones. `data.sequence` orders them.
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

// parking_lot's locks do not poison: a panic inside a critical section (a bug in one request)
// must not turn every later request that takes the same lock into a panic too.
use parking_lot::Mutex;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, future::BoxFuture, stream};
use sea_orm::DatabaseConnection;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::contract::errors::Problem;
use crate::contract::time::Timestamp;
use crate::contract::webhooks::{
    CLAIM_LEASE, ENDPOINT_CONCURRENCY, ID_HEADER, MAX_RETRY_AFTER, SIGNATURE_HEADER, THIN_PAYLOAD_BYTES,
    TIMESTAMP_HEADER, WebhookFormat, retry_delay,
};
use crate::metrics::METRICS;
use crate::store::failures::problem_marking_read_failed;
use crate::store::feed::FeedRecord;
use crate::store::webhooks::{self as subscriptions, Subscription};

use super::formats::{self, Chat};
use super::guard;
use super::queue::{self, Claimed, Outcome, Verdict};
use super::sign;

/// Renders feed records as `/v2/feed` shows them (compact JSON, one per record, in order). The
/// surfaces implement it (`api::views::feed`).
pub trait RenderEntries: Send + Sync + 'static {
    fn render(
        &self,
        db: DatabaseConnection,
        records: Vec<FeedRecord>,
    ) -> BoxFuture<'static, Result<Vec<String>, Problem>>;
}

/// The time the dispatcher goes by, in milliseconds since the epoch: the wall clock, or a
/// simulated one (the soak benchmark runs a day of retries in seconds).
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The wall clock.
pub fn wall_clock() -> Clock {
    Arc::new(crate::contract::time::now_ms)
}

/// How the dispatcher runs.
#[derive(Clone)]
pub struct Options {
    pub reach: guard::Reach,
    /// Where the guard learns the receivers' addresses ([`guard::resolver`]).
    pub resolver: guard::Resolver,
    /// Send only to loopback hosts, without resolving any other (tests, benchmarks and the
    /// contract tools, whose made-up URLs must never be reached).
    pub loopback_only: bool,
    /// The longest wait between looks at the queue when nothing woke the dispatcher.
    pub poll: Duration,
    /// The URL a thin payload's `url` starts with (the server's public URL).
    pub public_url: String,
    pub clock: Clock,
}

/// Rendered entries kept for the subscriptions that send the same entry (bounded).
const RENDERED_KEPT: usize = 4_096;
/// Message ids whose delivery latency this process observed, kept to observe each once.
const OBSERVED_KEPT: usize = 65_536;
/// The start of a receiver's answer kept to judge it (Slack's and Discord's errors are short).
const ANSWER_KEPT_BYTES: usize = 2 * 1024;
/// Deliveries a subscription's task claims at a time: two rounds of its slots, well within the
/// lease even when every attempt takes the whole timeout.
const CLAIM_BATCH: u64 = 2 * ENDPOINT_CONCURRENCY as u64;
/// A receiver's answer is read up to this much (then dropped): the connection stays reusable.
const ANSWER_READ_BYTES: usize = 64 * 1024;
/// How often delivered and failed rows past the retention are pruned, and how many at a time.
const PRUNE_EVERY: Duration = Duration::from_secs(3_600);
const PRUNE_BATCH: u64 = 10_000;

/// The process's webhook sender.
pub struct Dispatcher {
    db: DatabaseConnection,
    render: Arc<dyn RenderEntries>,
    client: reqwest::Client,
    options: Options,
    rendered: Mutex<Rendered>,
    /// Messages whose latency was observed (`govdata_webhook_delivery_latency_seconds`).
    observed: Mutex<Kept<String, ()>>,
    /// The subscription tasks' turns at the queue, written together (see [`Dispatcher::write`]).
    turns: mpsc::Sender<Turn>,
}

/// A subscription task's turn at the queue: record the outcomes of its last attempts, then
/// claim its next due deliveries.
struct Turn {
    subscription: Subscription,
    outcomes: Vec<Outcome>,
    reply: oneshot::Sender<Result<Claims, String>>,
}

/// What a turn came to.
struct Claims {
    /// Why the subscription was disabled by the outcomes, if it was (nothing is claimed then).
    disabled: Option<String>,
    /// The subscription as stored once its deliveries were claimed (when some were): what they
    /// are sent with. The task's own copy is from the supervisor's last look, which may precede a
    /// change already answered for (a format, a URL, a secret, a disabling), by this process's API
    /// or by another process.
    current: Option<Subscription>,
    claimed: Vec<Claimed>,
}

/// Turns written in one transaction at most.
const TURNS_PER_COMMIT: usize = 256;

/// A rendered message of a feed entry.
#[derive(Clone)]
struct Message {
    body: Arc<str>,
    /// The entry's time ([`entry_time`]): where its delivery latency is measured from.
    since_ms: i64,
}

/// Rendered messages by feed sequence and format.
type Rendered = Kept<(i64, WebhookFormat), Message>;

/// A bounded map, the oldest key dropped past its bound.
struct Kept<K, V> {
    by_key: HashMap<K, V>,
    order: VecDeque<K>,
    bound: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V> Kept<K, V> {
    fn new(bound: usize) -> Self {
        Self { by_key: HashMap::new(), order: VecDeque::new(), bound }
    }

    /// Keeps `value` under `key`; false when the key was kept already (the value replaced).
    fn keep(&mut self, key: K, value: V) -> bool {
        let new = self.by_key.insert(key.clone(), value).is_none();
        if new {
            self.order.push_back(key);
        }
        while self.order.len() > self.bound {
            if let Some(old) = self.order.pop_front() {
                self.by_key.remove(&old);
            }
        }
        new
    }
}

/// The time an entry's delivery latency is measured from: its publication's `published_ms`,
/// stamped as the publication takes its turn to write (its own work until the commit is counted
/// in: the store keeps no time of the commit itself). Every entry's latency goes through here, so
/// an entry written at a moment of its own (a timed entry, due at a proposal's deadline) is
/// measured from that moment by changing this one function.
fn entry_time(record: &FeedRecord) -> i64 {
    record.published_ms
}

/// A running subscription task.
struct Worker {
    subscription: watch::Sender<Subscription>,
    kick: Arc<Notify>,
}

impl Dispatcher {
    /// Starts the dispatcher; it runs until `stop` resolves. `wake` is notified after each
    /// publication and whenever a subscription changed or queued something.
    pub fn start(
        db: DatabaseConnection,
        render: Arc<dyn RenderEntries>,
        options: Options,
        wake: Arc<Notify>,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let client = guard::client(options.reach, options.resolver.clone());
        // Every format's latency is shown from the start (an empty histogram, not a missing one).
        for format in WebhookFormat::ALL {
            METRICS.webhook_delivery_latency.with_label_values(&[format.as_str()]);
        }
        let (turns, queue) = mpsc::channel(TURNS_PER_COMMIT);
        let dispatcher = Arc::new(Self {
            db,
            render,
            client,
            options,
            rendered: Mutex::new(Kept::new(RENDERED_KEPT)),
            observed: Mutex::new(Kept::new(OBSERVED_KEPT)),
            turns,
        });
        tokio::spawn(async move {
            tokio::select! {
                () = dispatcher.clone().supervise(wake) => {}
                () = dispatcher.write(queue) => {}
                () = stop => {}
            }
        })
    }

    fn now(&self) -> i64 {
        (self.options.clock)()
    }

    /// Enqueues, starts and stops subscription tasks, and prunes, each time it is woken.
    async fn supervise(self: Arc<Self>, wake: Arc<Notify>) {
        let mut workers: HashMap<i64, Worker> = HashMap::new();
        let mut pruned_at: Option<Instant> = None;
        loop {
            if let Err(err) = self.enqueue_all().await {
                tracing::warn!(error = %err, "webhooks: could not enqueue the feed's new entries");
            }
            match subscriptions::active(&self.db).await {
                Ok(active) => {
                    let keep: Vec<i64> = active.iter().map(|s| s.id).collect();
                    // A subscription no longer active (disabled, deleted, its token revoked): its
                    // task ends when its sender is dropped.
                    workers.retain(|id, _| keep.contains(id));
                    for s in active {
                        match workers.get(&s.id) {
                            Some(w) => {
                                w.subscription.send_if_modified(|current| {
                                    let changed = *current != s;
                                    *current = s.clone();
                                    changed
                                });
                                w.kick.notify_one();
                            }
                            None => {
                                let (tx, rx) = watch::channel(s.clone());
                                let kick = Arc::new(Notify::new());
                                tokio::spawn(self.clone().work(rx, kick.clone()));
                                workers.insert(s.id, Worker { subscription: tx, kick });
                            }
                        }
                    }
                }
                Err(err) => tracing::warn!(error = %err, "webhooks: could not read the subscriptions"),
            }
            if pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                pruned_at = Some(Instant::now());
                if let Err(err) = queue::prune(&self.db, self.now(), PRUNE_BATCH).await {
                    tracing::warn!(error = %err, "webhooks: could not prune old deliveries");
                }
            }
            tokio::select! {
                () = wake.notified() => {}
                () = tokio::time::sleep(self.options.poll) => {}
            }
        }
    }

    async fn enqueue_all(&self) -> Result<(), sea_orm::DbErr> {
        loop {
            let done = queue::enqueue(&self.db, self.now()).await?;
            METRICS.webhook_enqueued.inc_by(done.deliveries);
            if !done.more {
                return Ok(());
            }
        }
    }

    /// One subscription's task: record its last attempts and claim what is due (one turn), send
    /// it; wait when nothing is due.
    async fn work(self: Arc<Self>, mut subscription: watch::Receiver<Subscription>, kick: Arc<Notify>) {
        let mut outcomes = Vec::new();
        let mut warned = false;
        loop {
            // The supervisor dropped the sender: the subscription is no longer active. What was
            // attempted is still recorded.
            let gone = subscription.has_changed().is_err();
            let s = subscription.borrow_and_update().clone();
            if outcomes.is_empty() {
                if gone {
                    return;
                }
                // A format a newer build stored: its deliveries wait for a process that knows it
                // (claimed here, they would fail and be retried for nothing).
                if let Err(unknown) = subscriptions::format_of(&s) {
                    if !std::mem::replace(&mut warned, true) {
                        tracing::warn!(subscription = s.public_id, error = %unknown, "webhooks: not sending this format");
                    }
                    self.idle(&kick, None).await;
                    continue;
                }
                // Nothing to record: a turn (a write) only when something is due. An idle
                // webhook costs one read per wake, and never the writer's lock a publication
                // needs.
                let due = match queue::next_due(&self.db, s.id).await {
                    Ok(due) => due,
                    Err(err) => {
                        tracing::warn!(error = %err, subscription = s.public_id, "webhooks: could not read the queue");
                        self.idle(&kick, None).await;
                        continue;
                    }
                };
                if due.is_none_or(|at| at > self.now()) {
                    self.idle(&kick, due).await;
                    continue;
                }
            }
            let recorded = !outcomes.is_empty();
            let claims = self.turn(&s, std::mem::take(&mut outcomes)).await;
            let (claimed, current) = match claims {
                Ok(Claims { disabled: Some(reason), .. }) => {
                    tracing::warn!(subscription = s.public_id, reason, "webhooks: subscription disabled");
                    return;
                }
                Ok(Claims { claimed, current, .. }) => (claimed, current),
                Err(err) => {
                    // The claims' leases run out and the attempts are made again: at least once.
                    tracing::warn!(error = %err, subscription = s.public_id, "webhooks: could not record or claim");
                    self.idle(&kick, None).await;
                    continue;
                }
            };
            if gone {
                return;
            }
            let (Some(current), false) = (current, claimed.is_empty()) else {
                // Attempts just recorded: what is due next (a retry) is read from the queue.
                // Otherwise it was due, but is held by another process's claim being written, or
                // the subscription is no longer active (the supervisor ends this task when it
                // looks next): look again later.
                if !recorded {
                    self.idle(&kick, None).await;
                }
                continue;
            };
            outcomes = self.send_all(&current, claimed).await;
        }
    }

    /// Takes a turn at the queue (see [`Self::write`]).
    async fn turn(&self, subscription: &Subscription, outcomes: Vec<Outcome>) -> Result<Claims, String> {
        let (reply, answer) = oneshot::channel();
        let turn = Turn { subscription: subscription.clone(), outcomes, reply };
        self.turns.send(turn).await.map_err(|_| "the dispatcher stopped".to_owned())?;
        answer.await.map_err(|_| "the dispatcher stopped".to_owned())?
    }

    /// Writes the subscription tasks' turns, as many as are waiting (up to
    /// [`TURNS_PER_COMMIT`]) in one transaction: each task's outcomes recorded and its next
    /// deliveries claimed. One commit (one fsync on SQLite) serves every receiver at once,
    /// instead of two per batch of each.
    async fn write(&self, mut queue: mpsc::Receiver<Turn>) {
        while let Some(first) = queue.recv().await {
            let mut turns = vec![first];
            while turns.len() < TURNS_PER_COMMIT {
                match queue.try_recv() {
                    Ok(turn) => turns.push(turn),
                    Err(_) => break,
                }
            }
            match self.write_turns(&turns).await {
                Ok(claims) => {
                    for (turn, claims) in turns.into_iter().zip(claims) {
                        let _ = turn.reply.send(Ok(claims));
                    }
                }
                Err(err) => {
                    for turn in turns {
                        let _ = turn.reply.send(Err(err.to_string()));
                    }
                }
            }
        }
    }

    async fn write_turns(&self, turns: &[Turn]) -> Result<Vec<Claims>, sea_orm::DbErr> {
        use sea_orm::TransactionTrait;
        let txn = self.db.begin().await?;
        let now = self.now();
        let lease = now + CLAIM_LEASE.as_millis() as i64;
        let mut claims = Vec::with_capacity(turns.len());
        for turn in turns {
            let id = turn.subscription.id;
            let disabled = queue::record(&txn, &turn.subscription, &turn.outcomes, now).await?;
            let claimed = match disabled {
                Some(_) => Vec::new(),
                None => queue::claim(&txn, id, now, lease, CLAIM_BATCH).await?,
            };
            claims.push(Claims { disabled, current: None, claimed });
        }
        // The subscriptions are read after the claims: a change committed before a claimed
        // delivery was queued is seen (on PostgreSQL each statement sees what committed before it
        // started). What an inactive one claimed is let go at once, for when it is enabled again.
        let sending: Vec<i64> =
            turns.iter().zip(&claims).filter(|(_, c)| !c.claimed.is_empty()).map(|(t, _)| t.subscription.id).collect();
        let current: HashMap<i64, Subscription> =
            subscriptions::active_among(&txn, &sending).await?.into_iter().map(|s| (s.id, s)).collect();
        let mut released = Vec::new();
        for (turn, c) in turns.iter().zip(&mut claims) {
            match current.get(&turn.subscription.id) {
                Some(s) => c.current = Some(s.clone()),
                None => released.extend(std::mem::take(&mut c.claimed).into_iter().map(|d| d.id)),
            }
        }
        queue::release(&txn, &released).await?;
        txn.commit().await?;
        Ok(claims)
    }

    /// Waits for a kick, for the next due attempt, or for the poll interval, whichever is first.
    async fn idle(&self, kick: &Notify, due: Option<i64>) {
        let mut wait = self.options.poll;
        if let Some(due) = due {
            let until = Duration::from_millis((due - self.now()).max(0) as u64);
            wait = wait.min(until.max(Duration::from_millis(1)));
        }
        tokio::select! {
            () = kick.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }

    async fn send_all(&self, s: &Subscription, claimed: Vec<Claimed>) -> Vec<Outcome> {
        // A format this build does not know (stored by a newer one while these were claimed):
        // each attempt fails with why, and is retried on the schedule.
        let format = subscriptions::format_of(s).map_err(|e| format!("not sent: {e}"));
        let bodies = match &format {
            Ok(format) => self.bodies(&claimed, *format).await,
            Err(why) => claimed.iter().map(|_| Err(why.clone())).collect(),
        };
        let format = format.unwrap_or(WebhookFormat::DEFAULT);
        let url = reqwest::Url::parse(&s.url);
        stream::iter(claimed.into_iter().zip(bodies))
            .map(|(c, body)| {
                let url = url.clone();
                async move {
                    let attempted_ms = self.now();
                    let started = Instant::now();
                    let mut since_ms = None;
                    let judged = match (body, url) {
                        (Ok(message), Ok(url)) => {
                            since_ms = c.seq.map(|_| message.since_ms);
                            self.attempt(s, format, &url, &c.msg_id, message.body).await
                        }
                        (Err(why), _) => (None, formats::Judged { error: Some(why), retry_after: None, gone: false }),
                        (_, Err(e)) => {
                            let why = format!("the subscribed URL does not parse: {e}");
                            (None, formats::Judged { error: Some(why), retry_after: None, gone: false })
                        }
                    };
                    let (status, formats::Judged { error, retry_after, gone }) = judged;
                    let verdict = verdict(&c, status, error.is_some(), retry_after, gone, attempted_ms);
                    let outcome = match verdict {
                        Verdict::Delivered => "delivered",
                        Verdict::RetryAt(_) => "retrying",
                        Verdict::Failed | Verdict::Gone => "failed",
                    };
                    METRICS.webhook_attempts.with_label_values(&[outcome]).inc();
                    if let (Verdict::Delivered, Some(since)) = (verdict, since_ms) {
                        self.observe_latency(format, &c.msg_id, since);
                    }
                    Outcome {
                        claimed: c,
                        attempted_ms,
                        status_code: status,
                        duration_ms: started.elapsed().as_millis() as i64,
                        error,
                        verdict,
                    }
                }
            })
            .buffer_unordered(ENDPOINT_CONCURRENCY)
            .collect()
            .await
    }

    /// Observes the latency of message `msg_id`, delivered now, of an entry of time `since_ms`:
    /// once per message (a duplicate or a replay of a message this process observed already is
    /// not observed again: the latency is that of the first successful attempt).
    fn observe_latency(&self, format: WebhookFormat, msg_id: &str, since_ms: i64) {
        if !self.observed.lock().keep(msg_id.to_owned(), ()) {
            return;
        }
        let seconds = (self.now() - since_ms).max(0) as f64 / 1_000.0;
        METRICS.webhook_delivery_latency.with_label_values(&[format.as_str()]).observe(seconds);
    }

    /// The body of each claimed delivery in `format`: its test payload, or its feed entry as a
    /// message (an entry no longer kept is an error, recorded as the attempt's).
    async fn bodies(&self, claimed: &[Claimed], format: WebhookFormat) -> Vec<Result<Message, String>> {
        let missing: Vec<i64> = {
            let kept = self.rendered.lock();
            claimed.iter().filter_map(|c| c.seq).filter(|seq| !kept.by_key.contains_key(&(*seq, format))).collect()
        };
        let mut failed = None;
        if !missing.is_empty() {
            match self.render_messages(&missing, format).await {
                Ok(messages) => {
                    let mut kept = self.rendered.lock();
                    for (seq, message) in messages {
                        kept.keep((seq, format), message);
                    }
                }
                Err(problem) => failed = Some(format!("the entry could not be read: {}", problem.detail)),
            }
        }
        let kept = self.rendered.lock();
        claimed
            .iter()
            .map(|c| match (&c.payload, c.seq) {
                (Some(payload), _) => {
                    let body = match Chat::of(format) {
                        None => Arc::from(payload.as_str()),
                        Some(chat) => Arc::from(formats::test_message(chat, payload)),
                    };
                    Ok(Message { body, since_ms: 0 })
                }
                (None, Some(seq)) => kept.by_key.get(&(seq, format)).cloned().ok_or_else(|| {
                    failed.clone().unwrap_or_else(|| format!("feed entry {seq} is no longer kept (pruned)"))
                }),
                (None, None) => Err("the delivery names no entry".to_owned()),
            })
            .collect()
    }

    /// The messages of entries `seqs` in `format`: for Standard Webhooks `{type, timestamp,
    /// data}`, thin past the size limit; for a chat service its message of the same entry,
    /// with the deadline of the proposal it concerns.
    async fn render_messages(&self, seqs: &[i64], format: WebhookFormat) -> Result<Vec<(i64, Message)>, Problem> {
        let records = queue::entries(&self.db, seqs).await.map_err(|e| problem_marking_read_failed(&e))?;
        let heads: Vec<(i64, &'static str, String, i64, i64, i64)> = records
            .iter()
            .map(|r| (r.seq, r.kind.as_str(), r.dao_id.clone(), r.revision_id, r.published_ms, entry_time(r)))
            .collect();
        let rendered = self.render.render(self.db.clone(), records).await?;
        let keys: Vec<Option<String>> = match Chat::of(format) {
            Some(_) => rendered.iter().map(|data| formats::proposal_key(data)).collect(),
            None => vec![None; rendered.len()],
        };
        let deadlines = match Chat::of(format) {
            Some(_) => {
                let keys: Vec<String> = keys.iter().flatten().cloned().collect();
                crate::store::proposals::voting_ends(&self.db, &keys)
                    .await
                    .map_err(|e| problem_marking_read_failed(&e))?
                    .into_iter()
                    .collect::<HashMap<String, i64>>()
            }
            None => HashMap::new(),
        };
        let public_url = self.options.public_url.as_str();
        Ok(heads
            .into_iter()
            .zip(rendered)
            .zip(keys)
            .map(|(((seq, kind, dao, revision, published_ms, since_ms), data), key)| {
                let body = match Chat::of(format) {
                    None => Head { seq, kind, dao_id: &dao, revision, published_ms }.message(&data, public_url),
                    Some(chat) => {
                        let deadline_ms = key.and_then(|k| deadlines.get(&k).copied());
                        let context = formats::Context { public_url, deadline_ms };
                        // An entry that cannot be read as JSON is a defect of the renderer; it
                        // still goes, generically, rather than stalling the queue.
                        formats::entry_message(chat, &data, context).unwrap_or_else(|why| {
                            tracing::error!(seq, error = why, "webhooks: an entry could not be rendered");
                            let head = format!(r#"{{"sequence":"{seq}","kind":"{kind}","daoId":"{dao}"}}"#);
                            formats::entry_message(chat, &head, context).unwrap_or_default()
                        })
                    }
                };
                (seq, Message { body: Arc::from(body), since_ms })
            })
            .collect())
    }

    /// One attempt: the status code, if there was one, and what the answer (or its absence)
    /// comes to in `format`.
    async fn attempt(
        &self,
        s: &Subscription,
        format: WebhookFormat,
        url: &reqwest::Url,
        msg_id: &str,
        body: Arc<str>,
    ) -> (Option<u16>, formats::Judged) {
        let failed = |why: String| (None, formats::Judged { error: Some(why), retry_after: None, gone: false });
        if let Some(refused) = guard::literal_refused(self.options.reach, url) {
            return failed(refused.to_string());
        }
        if self.options.loopback_only && !guard::names_loopback(url) {
            return failed(
                "not sent: this server sends only to loopback hosts (GOVDATA_WEBHOOK_LOOPBACK_ONLY)".to_owned(),
            );
        }
        let mut request = self.client.post(url.clone()).header(reqwest::header::CONTENT_TYPE, "application/json");
        // Slack and Discord take no Standard Webhooks headers: their URL is the secret.
        if format.signed() {
            let now = self.now();
            let timestamp = now.div_euclid(1_000);
            let secrets = subscriptions::signing_secrets(s, now);
            let signature = sign::signature(&secrets, msg_id, timestamp, body.as_bytes());
            request = request
                .header(ID_HEADER, msg_id)
                .header(TIMESTAMP_HEADER, timestamp.to_string())
                .header(SIGNATURE_HEADER, signature);
        }
        match request.body(body.to_string()).send().await {
            Ok(mut answer) => {
                let status = answer.status();
                let retry_after =
                    answer.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
                // Read up to ANSWER_READ_BYTES (then dropped: the connection stays reusable),
                // keeping the start to judge.
                let mut kept = Vec::new();
                let mut read = 0;
                while read < ANSWER_READ_BYTES {
                    match answer.chunk().await {
                        Ok(Some(chunk)) => {
                            read += chunk.len();
                            let room = ANSWER_KEPT_BYTES.saturating_sub(kept.len());
                            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                        }
                        _ => break,
                    }
                }
                // The client follows no redirect (one could lead past the guard): a 3xx is a
                // failed attempt, and its error says why nothing more was sent.
                let answer = formats::Answer { status, retry_after: retry_after.as_deref(), body: &kept };
                (Some(status.as_u16()), formats::judge(format, answer))
            }
            Err(err) => failed(describe(err)),
        }
    }
}

/// `{type, timestamp, data}` around an entry's JSON.
fn message(kind: &str, timestamp: &str, data: &str) -> String {
    format!(r#"{{"type":"{kind}","timestamp":"{timestamp}","data":{data}}}"#)
}

/// What a thin message says of its entry.
struct Head<'a> {
    seq: i64,
    kind: &'static str,
    dao_id: &'a str,
    revision: i64,
    published_ms: i64,
}

impl Head<'_> {
    /// The message of this entry, whose JSON is `data`: thin (the entry named, and the URL that
    /// serves it under `public_url`) when it would be larger than [`THIN_PAYLOAD_BYTES`].
    fn message(&self, data: &str, public_url: &str) -> String {
        let timestamp = Timestamp::from_ms(self.published_ms).to_string();
        let full = message(self.kind, &timestamp, data);
        if full.len() <= THIN_PAYLOAD_BYTES {
            return full;
        }
        let thin = serde_json::json!({
            "sequence": self.seq.to_string(),
            "kind": self.kind,
            "daoId": self.dao_id,
            "revision": self.revision,
            "publishedAt": timestamp,
            "thin": true,
            "url": format!("{public_url}/v2/feed?after={}&limit=1", self.seq - 1),
        });
        message(self.kind, &timestamp, &thin.to_string())
    }
}

/// What follows an attempt made at `now_ms` that got `status` (or none), and an answer saying
/// the destination is `gone` (`formats::judge`).
fn verdict(
    c: &Claimed,
    status: Option<u16>,
    failed: bool,
    retry_after: Option<Duration>,
    gone: bool,
    now_ms: i64,
) -> Verdict {
    match status {
        Some(s) if (200..300).contains(&s) && !failed => return Verdict::Delivered,
        Some(_) if gone => return Verdict::Gone,
        _ => {}
    }
    let made = c.attempts as usize + 1;
    let Some(delay) = retry_delay(made + 1) else { return Verdict::Failed };
    let delay = match (status, retry_after) {
        (Some(429 | 503), Some(asked)) => asked.min(MAX_RETRY_AFTER),
        _ => delay,
    };
    Verdict::RetryAt(now_ms + delay.as_millis() as i64)
}

/// Why a request failed, without its URL (which may carry the receiver's own secret): the
/// guard's refusal when it refused the address, else the kind of failure and its innermost
/// cause. (No redirect error can arrive here: the client follows none, so a 3xx comes back as
/// an answer.)
fn describe(err: reqwest::Error) -> String {
    let mut detail = String::new();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        if let Some(refused) = s.downcast_ref::<guard::Refused>() {
            return refused.to_string();
        }
        detail = s.to_string();
        source = s.source();
    }
    let what = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    if detail.is_empty() { what.to_owned() } else { format!("{what}: {detail}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(attempts: i32) -> Claimed {
        Claimed { id: 1, seq: Some(1), payload: None, msg_id: "msg_1".into(), attempts, lease_until_ms: 9 }
    }

    #[test]
    fn verdicts_follow_the_schedule_and_the_receiver() {
        assert_eq!(verdict(&claimed(0), Some(204), false, None, false, 0), Verdict::Delivered);
        assert_eq!(verdict(&claimed(0), Some(500), true, None, false, 0), Verdict::RetryAt(5_000));
        assert_eq!(verdict(&claimed(1), None, true, None, false, 0), Verdict::RetryAt(300_000));
        assert_eq!(verdict(&claimed(9), Some(500), true, None, false, 0), Verdict::Failed);
        assert_eq!(verdict(&claimed(3), Some(410), true, None, true, 0), Verdict::Gone);
        // Gone is the format's judgement (a Discord 404 with code 10015), not a status.
        assert_eq!(verdict(&claimed(0), Some(404), true, None, true, 0), Verdict::Gone);
        assert_eq!(verdict(&claimed(0), Some(404), true, None, false, 0), Verdict::RetryAt(5_000));
        let asked = Some(Duration::from_secs(42));
        assert_eq!(verdict(&claimed(0), Some(429), true, asked, false, 0), Verdict::RetryAt(42_000));
        assert_eq!(
            verdict(&claimed(0), Some(503), true, Some(Duration::from_secs(1 << 40)), false, 0),
            Verdict::RetryAt(MAX_RETRY_AFTER.as_millis() as i64)
        );
        // A Discord 429's fractional wait is kept to the millisecond.
        let fraction = Some(Duration::from_millis(1_500));
        assert_eq!(verdict(&claimed(0), Some(429), true, fraction, false, 7), Verdict::RetryAt(1_507));
        // A Retry-After on another status is not a request to wait.
        assert_eq!(verdict(&claimed(0), Some(500), true, asked, false, 0), Verdict::RetryAt(5_000));
    }

    #[test]
    fn a_large_entry_is_sent_thin_with_the_url_that_serves_it() {
        let head = Head { seq: 42, kind: "proposal_closed", dao_id: "uniswap", revision: 7, published_ms: 0 };
        let small = head.message(r#"{"sequence":"42"}"#, "https://api.example");
        assert!(small.contains(r#""data":{"sequence":"42"}"#), "{small}");
        let data = format!(r#"{{"sequence":"42","text":"{}"}}"#, "x".repeat(THIN_PAYLOAD_BYTES));
        let thin: serde_json::Value = serde_json::from_str(&head.message(&data, "https://api.example")).unwrap();
        assert_eq!(thin["type"], "proposal_closed");
        assert_eq!(thin["data"]["thin"], true);
        assert_eq!(thin["data"]["sequence"], "42");
        assert_eq!(thin["data"]["url"], "https://api.example/v2/feed?after=41&limit=1");
        assert!(thin.to_string().len() < THIN_PAYLOAD_BYTES);
    }

    #[test]
    fn a_message_wraps_the_entry() {
        let m = message("vote_cast", "2026-01-01T00:00:00.000Z", r#"{"sequence":"1"}"#);
        let v: serde_json::Value = serde_json::from_str(&m).unwrap();
        assert_eq!(v["type"], "vote_cast");
        assert_eq!(v["data"]["sequence"], "1");
    }
}
