//! Prometheus metrics, served at `/metrics` (internal token only) in the text exposition format
//! by the `prometheus` crate. A leaf module: the layers that observe something call into it.
use std::sync::LazyLock;

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder, core::Collector,
};

/// Latency buckets (seconds): a cached answer takes well under a millisecond, a deep store page a
/// few, a live refresh seconds.
const LATENCY_BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// Webhook delivery latency buckets (seconds), from a publication to a receiver's 2xx: a loopback
/// receiver answers within milliseconds, a remote one within a second, and a retried delivery
/// waits the retry schedule (minutes to a day).
const DELIVERY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1_800.0, 7_200.0,
    21_600.0, 86_400.0,
];
/// Ingestion and publication buckets (seconds).
const RUN_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];

pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
    pub request_seconds: HistogramVec,
    pub payments: IntCounterVec,
    pub rate_limited: IntCounterVec,
    pub cache_hits: IntCounter,
    pub cache_misses: IntCounter,
    pub cache_evictions: IntCounter,
    pub cache_bytes: IntGauge,
    pub cache_entries: IntGauge,
    pub connections_open: IntGauge,
    pub streams_open: IntGauge,
    pub publication_notifications: IntCounter,
    pub stream_reads: IntCounterVec,
    pub webhook_attempts: IntCounterVec,
    pub webhook_enqueued: IntCounter,
    pub webhook_delivery_latency: HistogramVec,
    pub webhook_fanout_entries: IntCounter,
    pub webhook_fanout_touched: IntCounter,
    pub refusals: IntCounterVec,
    pub ingest_runs: IntCounterVec,
    pub ingest_source_seconds: HistogramVec,
    pub ingest_source_rows: IntCounterVec,
    pub ingest_source_failures: IntCounterVec,
    pub publication_seconds: HistogramVec,
    pub pool_connections: IntGaugeVec,
    pub replica_retries: IntCounter,
    pub node_up: IntGaugeVec,
    pub node_lag_seconds: GaugeVec,
    pub node_lag_bytes: IntGaugeVec,
    pub node_revision: IntGaugeVec,
    pub node_reads: IntGaugeVec,
    pub index_bytes: IntGaugeVec,
    pub index_excess: GaugeVec,
    pub index_repacks: IntCounterVec,
}

/// `metric`, registered in `registry`.
fn registered<M: Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
    registry.register(Box::new(metric.clone())).expect("registered once");
    metric
}

fn counter(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(r, IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric"))
}

fn histogram(r: &Registry, name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    registered(r, HistogramVec::new(opts, labels).expect("a valid metric"))
}

fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    registered(r, IntGauge::new(name, help).expect("a valid metric"))
}

fn plain_counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    registered(r, IntCounter::new(name, help).expect("a valid metric"))
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let r = Registry::new_custom(Some("govdata".to_owned()), None).expect("a valid prefix");
    Metrics {
        requests: counter(
            &r,
            "http_requests_total",
            "Requests answered, by operationId (or path kind), status and cacheStatus.",
            &["operation", "status", "cache"],
        ),
        request_seconds: histogram(
            &r,
            "http_request_duration_seconds",
            "Time to answer, by operationId.",
            &["operation"],
            LATENCY_BUCKETS,
        ),
        payments: counter(&r, "payments_total", "x402 payments by outcome.", &["outcome"]),
        rate_limited: counter(&r, "rate_limited_total", "Requests refused 429, by policy.", &["policy"]),
        cache_hits: plain_counter(&r, "response_cache_hits_total", "Answers replayed from the response cache."),
        cache_misses: plain_counter(&r, "response_cache_misses_total", "Cacheable requests the handler answered."),
        cache_evictions: plain_counter(
            &r,
            "response_cache_evictions_total",
            "Entries evicted to stay within the byte budget.",
        ),
        cache_bytes: gauge(&r, "response_cache_bytes", "Bytes the response cache holds (entries with their overhead)."),
        cache_entries: gauge(&r, "response_cache_entries", "Entries in the response cache."),
        connections_open: gauge(&r, "connections_open", "Open client connections."),
        streams_open: gauge(&r, "streams_open", "Open event streams (GET /v2/stream)."),
        publication_notifications: plain_counter(
            &r,
            "publication_notifications_total",
            "Publications this process heard of by PostgreSQL's NOTIFY (it read the serving state at once).",
        ),
        stream_reads: counter(
            &r,
            "stream_store_reads_total",
            "Feed pages read for event streams: `publication` by the process's one reader after each \
             publication (fanned out to every stream), `resume` by one stream catching up from its position.",
            &["reason"],
        ),
        webhook_attempts: counter(
            &r,
            "webhook_attempts_total",
            "Webhook delivery attempts this process made, by outcome: `delivered` (2xx), `retrying` (another \
             attempt is scheduled), `failed` (no more attempts).",
            &["outcome"],
        ),
        webhook_enqueued: plain_counter(
            &r,
            "webhook_deliveries_enqueued_total",
            "Webhook deliveries this process enqueued (one per feed entry and subscription that wants it).",
        ),
        webhook_delivery_latency: histogram(
            &r,
            "webhook_delivery_latency_seconds",
            "Time from a feed entry's time (its `publishedAt`, stamped as the publication that wrote it starts: \
             that publication's own work until its commit is counted in) to the 2xx of the attempt that delivered \
             it, by the subscription's format (`standard_webhooks`, `slack`, `discord`). Each message once, at its \
             first successful attempt (the waits of its retries included); not test messages, nor a message this \
             process counted already (a replay, a duplicate).",
            &["format"],
            DELIVERY_BUCKETS,
        ),
        webhook_fanout_entries: plain_counter(
            &r,
            "webhook_fanout_entries_total",
            "Feed entries this process fanned out to the webhook subscriptions that follow the shared fan-out.",
        ),
        webhook_fanout_touched: plain_counter(
            &r,
            "webhook_fanout_subscriptions_touched_total",
            "Subscriptions the fan-out read for the entries it fanned out, summed over entries: those routed to \
             one of an entry's values (a voter, its proposal, its DAO, its kind) or to every entry, each then \
             checked against all its filters. It follows the subscriptions an entry may concern, not all \
             subscriptions; over webhook_fanout_entries_total, the subscriptions read per entry.",
        ),
        refusals: counter(
            &r,
            "refusals_total",
            "Connections refused or cut and requests refused for their client's behaviour, by cause \
             (connections::Cause).",
            &["cause"],
        ),
        ingest_runs: counter(
            &r,
            "ingest_runs_total",
            "Ingestion runs by trigger and outcome.",
            &["trigger", "outcome"],
        ),
        ingest_source_seconds: histogram(
            &r,
            "ingest_source_duration_seconds",
            "Time to fetch one source of one DAO.",
            &["source"],
            RUN_BUCKETS,
        ),
        ingest_source_rows: counter(
            &r,
            "ingest_source_rows_total",
            "Records fetched and staged, by source.",
            &["source"],
        ),
        ingest_source_failures: counter(
            &r,
            "ingest_source_failures_total",
            "Source fetches that failed, by source.",
            &["source"],
        ),
        publication_seconds: histogram(
            &r,
            "publication_duration_seconds",
            "Time to apply a run and publish (outcome published or unchanged).",
            &["outcome"],
            RUN_BUCKETS,
        ),
        pool_connections: registered(
            &r,
            IntGaugeVec::new(
                Opts::new("db_pool_connections", "Store connections by state (idle, in_use, max)."),
                &["state"],
            )
            .expect("a valid metric"),
        ),
        replica_retries: plain_counter(
            &r,
            "replica_read_retries_total",
            "Requests read again from another node because a replica failed them (it went away, or \
             cancelled the query in a recovery conflict).",
        ),
        node_up: gauge_vec(
            &r,
            "store_node_up",
            "1 while a database node is used (serving), 0 while it is left (lagging or down).",
            &["node", "role"],
        ),
        node_lag_seconds: registered(
            &r,
            GaugeVec::new(
                Opts::new("store_node_lag_seconds", "How far a replica is behind the primary, in time."),
                &["node"],
            )
            .expect("a valid metric"),
        ),
        node_lag_bytes: gauge_vec(&r, "store_node_lag_bytes", "WAL bytes a replica has not replayed yet.", &["node"]),
        node_revision: gauge_vec(&r, "store_node_revision", "The newest revision a database node shows.", &["node"]),
        node_reads: gauge_vec(
            &r,
            "store_node_reads",
            "Requests this process has read from each database node since it started.",
            &["node"],
        ),
        index_bytes: gauge_vec(
            &r,
            "store_index_bytes",
            "Size of each index of votes at this process's last index check (PostgreSQL, `govdata repack`).",
            &["index"],
        ),
        index_excess: registered(
            &r,
            GaugeVec::new(
                Opts::new(
                    "store_index_excess_ratio",
                    "How much larger than packed each index of votes was at the last check (0.05: 5 %); \
                     absent while an index has no packed size on record.",
                ),
                &["index"],
            )
            .expect("a valid metric"),
        ),
        index_repacks: counter(
            &r,
            "store_index_repacks_total",
            "Indexes of votes this process rebuilt packed (REINDEX INDEX CONCURRENTLY).",
            &["index"],
        ),
        registry: r,
    }
});

fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(r, IntGaugeVec::new(Opts::new(name, help), labels).expect("a valid metric"))
}

impl Metrics {
    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out).expect("metrics encode");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}
