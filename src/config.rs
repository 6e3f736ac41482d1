//! Configuration: command-line flags mirroring environment variables, in one place.
use std::net::SocketAddr;

use clap::{ArgAction, Args, Parser, Subcommand, builder::BoolishValueParser};

use crate::contract::access::{
    DEFAULT_ASSET_DECIMALS, DEFAULT_PRICE_PLUS, DEFAULT_PRICE_STANDARD, DEFAULT_STREAM_PAID_SECONDS,
    DEFAULT_X402_ASSET, DEFAULT_X402_ASSET_NAME, DEFAULT_X402_ASSET_VERSION, DEFAULT_X402_NETWORK, Prices, Rate,
    RatePolicy,
};

/// The default store: an SQLite file next to the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./data/govdata.db";

#[derive(Debug, Parser)]
#[command(name = "govdata", version, about = "Read-only HTTP API serving DAO governance data to software agents")]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Log lines as human text or as JSON objects, one per line (one line per request, target
    /// `govdata::access`; filter with `RUST_LOG`).
    #[arg(long, env = "GOVDATA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (the default). Creates, migrates and loads the bundled sample into an empty store.
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Import a governance sample directory (snapshot_proposals.csv, snapshot_votes.csv,
    /// tally_delegates.csv) and publish a data revision if anything changed.
    Import {
        /// Directory holding the three CSV files.
        path: std::path::PathBuf,
    },
    /// Fetch the registry's sources once (Snapshot, Discourse, on-chain governors) and publish
    /// a new data revision if anything changed. Failing sources are reported and recorded;
    /// the exit status is non-zero when any source failed.
    Ingest(IngestArgs),
    /// Manage partner tokens.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Manage webhook subscriptions, every partner's (what `/v2/webhooks` does for one token).
    Webhooks(WebhooksArgs),
    /// Write a deterministic synthetic DAO (proposals, votes, voters) into the store and publish it,
    /// for benchmarks. Refuses a DAO that already has proposals.
    Synth {
        /// Votes to generate, spread over the proposals with a Zipf-like skew.
        #[arg(long, default_value_t = 1_000_000)]
        votes: u64,
        /// Distinct voters; a proposal holds at most one vote per voter.
        #[arg(long, default_value_t = 100_000)]
        voters: u64,
        /// Snapshot proposals.
        #[arg(long, default_value_t = 200)]
        proposals: u64,
        /// The synthetic DAO's id (daoId).
        #[arg(long = "dao", default_value = "synthetic")]
        dao: String,
        /// PostgreSQL, into an empty `votes` table: drop its secondary indexes, write the votes,
        /// then build the indexes again, as a bulk load should (PostgreSQL's "Populating a
        /// Database"). Many times faster at tens of millions of votes; the indexes come out packed
        /// (built by sorting, 90 % full) instead of about 70 % full as inserts leave them.
        #[arg(long)]
        defer_indexes: bool,
    },
    /// PostgreSQL: rebuild the indexes of `votes` that inserts have left well past their packed
    /// size (`REINDEX INDEX CONCURRENTLY`: reads and ingestion go on), and print each index's size
    /// against its packed size. `serve` does the same on its own every `--repack-every`.
    Repack {
        /// Only report: rebuild nothing.
        #[arg(long, conflicts_with = "all")]
        check: bool,
        /// Rebuild every index of `votes`, due or not.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Create a partner token; it is printed once and only its hash is stored.
    Create {
        /// A name for the partner, for operators.
        #[arg(long)]
        name: String,
        /// Comma-separated scopes: v1:paid:standard, v1:paid:plus, v1:paid:*, v2:paid:standard, v2:paid:plus, v2:paid:*.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// This token's own rate limit, `REQUESTS/DURATION` (`600/1m`); the server's partner
        /// rate (`--rate-partner`) when unset.
        #[arg(long, value_parser = parse_rate)]
        rate: Option<Rate>,
    },
    /// List partner tokens (never the tokens themselves).
    List,
    /// Revoke a partner token by id; takes effect on the next request.
    Revoke {
        /// The token's id, as `tokens list` shows it.
        id: i64,
    },
}

/// `govdata webhooks`.
#[derive(Debug, Args)]
pub struct WebhooksArgs {
    /// Let URLs reach loopback and private addresses, and plain `http` (as the server's flag).
    #[arg(long, env = "GOVDATA_WEBHOOK_ALLOW_PRIVATE", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub webhook_allow_private: bool,
    #[command(subcommand)]
    pub command: WebhooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// List subscriptions (every token's, or one token's), never their secrets.
    List {
        /// Only this partner token's (its id, as `tokens list` shows it).
        #[arg(long)]
        token: Option<i64>,
    },
    /// Subscribe a URL for a partner token; the secret is printed once.
    Create {
        /// The partner token that owns it.
        #[arg(long)]
        token: i64,
        #[arg(long)]
        url: String,
        /// Comma-separated DAO ids (every DAO when absent).
        #[arg(long, value_delimiter = ',')]
        dao: Vec<String>,
        /// Comma-separated feed kinds (every kind when absent).
        #[arg(long, value_delimiter = ',')]
        kinds: Vec<String>,
        /// Comma-separated proposal keys (`p_…`): only entries about these proposals.
        #[arg(long, value_delimiter = ',')]
        proposals: Vec<String>,
        /// Comma-separated voters (0x addresses, CAIP-10 accounts or known ENS names): only
        /// entries about these voters or delegates.
        #[arg(long, value_delimiter = ',')]
        voters: Vec<String>,
        #[arg(long)]
        description: Option<String>,
        /// How each entry is written: standard_webhooks (signed; the default), slack (an incoming
        /// webhook's URL) or discord (a Discord webhook's URL).
        #[arg(long)]
        format: Option<String>,
    },
    /// Stop deliveries to a subscription (they are kept, and sent when it is enabled again).
    Disable { id: String },
    /// Enable a subscription; its pending deliveries go at once.
    Enable { id: String },
    /// Delete a subscription with its deliveries and attempts.
    Delete { id: String },
    /// Give a subscription a new secret (printed once); the previous one signs beside it for a day.
    RotateSecret { id: String },
    /// Queue a test message.
    Test { id: String },
    /// Queue again the entries after a feed sequence.
    Replay {
        id: String,
        #[arg(long)]
        after: i64,
    },
    /// A subscription's latest delivery attempts, newest first.
    Deliveries {
        id: String,
        #[arg(long, default_value_t = 20)]
        limit: u64,
    },
}

/// The DAO registry file.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// DAO registry (TOML): which DAOs are covered and where their sources live. The bundled
    /// registry (data/registry.toml) is used when unset.
    #[arg(long, env = "GOVDATA_REGISTRY")]
    pub registry: Option<std::path::PathBuf>,
}

/// `govdata ingest`.
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Only this DAO (its daoId).
    #[arg(long)]
    pub dao: Option<String>,
    /// Only this source.
    #[arg(long, value_parser = ["snapshot", "discourse", "onchain"])]
    pub source: Option<String>,
    /// Timeout of one upstream request (`30s`).
    #[arg(long, env = "GOVDATA_UPSTREAM_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub upstream_timeout: std::time::Duration,
    #[command(flatten)]
    pub sourcify: SourcifyArgs,
}

/// Sourcify, where ingestion finds the verified ABIs of the contracts proposals call (off unless
/// a URL is given: the default makes no outbound call).
#[derive(Debug, Clone, Args)]
pub struct SourcifyArgs {
    /// Sourcify's server (its v2 API under it), e.g. `https://sourcify.dev/server`. Unset: no
    /// contract is looked up there.
    #[arg(long, env = "GOVDATA_SOURCIFY_URL", value_parser = parse_base_url)]
    pub sourcify_url: Option<String>,
    /// Longest wait for one Sourcify answer; past it the contract is decoded with what else is
    /// known, and Sourcify is asked again later.
    #[arg(long, env = "GOVDATA_SOURCIFY_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub sourcify_timeout: std::time::Duration,
}

impl SourcifyArgs {
    pub fn settings(&self) -> Option<SourcifySettings> {
        self.sourcify_url.clone().map(|url| SourcifySettings { url, timeout: self.sourcify_timeout })
    }
}

/// Sourcify as ingestion asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcifySettings {
    /// The server's base URL, without a trailing `/` (requests go to `{url}/v2/contract/…`).
    pub url: String,
    pub timeout: std::time::Duration,
}

/// An http(s) base URL, without its trailing `/`.
fn parse_base_url(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("an http(s) URL with a host is needed".to_owned());
    }
    Ok(text.trim_end_matches('/').to_owned())
}

#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The store: `sqlite://PATH` (embedded, created on first start) or `postgres://…`. A
    /// PostgreSQL URL may name several hosts (`postgres://USER@H1:P1,H2:P2/DB`): writes go to the
    /// one not in recovery, and follow a promoted standby (`store::primary`).
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "GOVDATA_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Absolute base URL used in x402 `resource` URLs and links (default `http://{addr}`).
    #[arg(long, env = "GOVDATA_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Web origins (`https://app.example.com`, comma-separated) whose pages may call `/mcp` from a
    /// browser, besides the server's own: the origin of `GOVDATA_PUBLIC_URL` and, when bound to
    /// loopback, `http://localhost`, `http://127.0.0.1` and `http://[::1]` at the bound port.
    /// `*` allows every origin (the `Host` check stays). A request without `Origin` (servers,
    /// CLIs) is always served.
    #[arg(long, env = "GOVDATA_MCP_ALLOWED_ORIGINS", value_delimiter = ',', value_parser = parse_allowed_origin)]
    pub mcp_allowed_origins: Vec<AllowedOrigin>,
    /// Do not load the bundled sample into an empty store.
    #[arg(long, env = "GOVDATA_NO_SAMPLE", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub no_sample: bool,
    /// Run ingestion inside the server: at start, then this long after each run ends (`15m`, `1h`).
    #[arg(long, env = "GOVDATA_INGEST_EVERY", value_parser = humantime::parse_duration)]
    pub ingest_every: Option<std::time::Duration>,
    /// PostgreSQL: how often this process checks the indexes of `votes` and rebuilds those that
    /// inserts have left well past their packed size (`govdata repack`); `off` never does. One
    /// process at a time does it, whatever the number of processes.
    #[arg(long, env = "GOVDATA_REPACK_EVERY", default_value = "6h", value_parser = parse_period_or_off)]
    pub repack_every: Period,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub sourcify: SourcifyArgs,
    /// Memory for the in-process cache of answers of the serving revision, in MiB (0 disables it).
    #[arg(long, env = "GOVDATA_RESPONSE_CACHE_MB", default_value_t = 64)]
    pub response_cache_mb: usize,
    /// Refresh a registered DAO from its upstreams while answering a request about it, when its
    /// data is older than `--freshness-target`.
    #[arg(long, env = "GOVDATA_LIVE_REFRESH", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub live_refresh: bool,
    /// How old a DAO's data may be before a request refreshes it live (with `--live-refresh`).
    #[arg(long, env = "GOVDATA_FRESHNESS_TARGET", default_value = "15m", value_parser = humantime::parse_duration)]
    pub freshness_target: std::time::Duration,
    /// How long after a live refresh the DAO's answers are `cached_live` rather than refreshed again.
    #[arg(long, env = "GOVDATA_LIVE_TTL", default_value = "60s", value_parser = humantime::parse_duration)]
    pub live_ttl: std::time::Duration,
    /// Longest a request waits for a live refresh before the stored data is served.
    #[arg(long, env = "GOVDATA_LIVE_DEADLINE", default_value = "20s", value_parser = humantime::parse_duration)]
    pub live_deadline: std::time::Duration,
    #[command(flatten)]
    pub payments: PaymentArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub rates: RateArgs,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    pub exports: ExportArgs,
    #[command(flatten)]
    pub replicas: ReplicaArgs,
}

/// PostgreSQL streaming replicas that serve reads (`store::nodes`).
#[derive(Debug, Clone, Args)]
pub struct ReplicaArgs {
    /// Streaming replicas of the `DATABASE_URL` primary, comma-separated `postgres://` URLs:
    /// serving reads go to a replica that has replayed the serving revision, every write to the
    /// primary.
    #[arg(long, env = "GOVDATA_READ_REPLICA_URLS", value_delimiter = ',')]
    pub read_replica_urls: Vec<String>,
    /// A replica further behind the primary than this is left until it catches up.
    #[arg(long, env = "GOVDATA_REPLICA_MAX_LAG", default_value = "5s", value_parser = humantime::parse_duration)]
    pub replica_max_lag: std::time::Duration,
}

/// Where whole-table export files are kept (`exports`).
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The directory export files are built in and served from. Several processes on one store
    /// may share it (they never build the same file twice at once); each may also have its own.
    #[arg(long, env = "GOVDATA_EXPORT_DIR", default_value = "govdata-exports")]
    pub export_dir: std::path::PathBuf,
    /// The disk the export files may take, in MiB: past it, the least recently served files
    /// are removed (and built again when asked for).
    #[arg(long, env = "GOVDATA_EXPORT_BUDGET_MB", default_value_t = crate::contract::exports::DEFAULT_BUDGET_MB)]
    pub export_budget_mb: u64,
}

/// How webhooks are sent (`push`).
#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// Let webhook subscriptions reach loopback, private and link-local addresses, and plain
    /// `http` URLs (tests, private deployments). Off: only `https` to public addresses.
    #[arg(long, env = "GOVDATA_WEBHOOK_ALLOW_PRIVATE", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub webhook_allow_private: bool,
    /// Send webhooks only to loopback hosts (`localhost`, 127.0.0.0/8, ::1), resolving no other
    /// name: for tests, benchmarks and contract tools, whose made-up URLs must never be reached.
    #[arg(long, env = "GOVDATA_WEBHOOK_LOOPBACK_ONLY", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub webhook_loopback_only: bool,
    /// Longest the webhook sender waits before looking at its queue again when nothing woke it
    /// (a publication, a subscription change and a due retry each wake it at once).
    #[arg(long, env = "GOVDATA_WEBHOOK_POLL", default_value = "1s", value_parser = humantime::parse_duration)]
    pub webhook_poll: std::time::Duration,
    /// Not a flag: the resolver webhook hosts are resolved with, when a Rust caller puts one in
    /// place of the system's (tests of the address guard).
    #[arg(skip)]
    pub webhook_resolver: InjectedResolver,
}

/// A name resolver put in place of the system's by a Rust caller (`None`: the system's). Tests
/// answer fixed loopback addresses for public-looking names with it, so that the address guard
/// is exercised at send time with nothing leaving the machine.
#[derive(Clone, Default)]
pub struct InjectedResolver(pub Option<std::sync::Arc<dyn reqwest::dns::Resolve>>);

impl std::fmt::Debug for InjectedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "InjectedResolver(injected)" } else { "InjectedResolver(system)" })
    }
}

impl Default for ServeArgs {
    fn default() -> Self {
        Self::parse_from_env_defaults()
    }
}

impl ServeArgs {
    fn parse_from_env_defaults() -> Self {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            serve: ServeArgs,
        }
        Wrapper::parse_from(["govdata"]).serve
    }
}

/// What one process accepts before it refuses (connections, time, concurrent store work).
#[derive(Debug, Clone, Copy, Args)]
pub struct LimitArgs {
    /// Open connections at most. At the cap the longest-idle connection is closed to admit a
    /// new one; when every connection is busy the newcomer is answered 503. Fitted under the
    /// process's descriptor limit (raised to its hard limit at start).
    #[arg(long, env = "GOVDATA_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// Open connections at most from one client address (IPv4 address or IPv6 /64); one more is
    /// answered 429. Generous enough for an office behind one NAT address; set it to the global
    /// cap behind a proxy that does not pass the client's address.
    #[arg(long, env = "GOVDATA_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 256)]
    pub max_connections_per_address: usize,
    /// Longest wait for a whole request head, counted from accept and again from the end of each
    /// answer: bounds a connection that never sends a byte, a slow head (slowloris) and an idle
    /// keep-alive connection.
    #[arg(long, env = "GOVDATA_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: std::time::Duration,
    /// Longest a write of an answer may wait for the client to read it: a client that stops
    /// reading, or reads a byte a second, is cut.
    #[arg(long, env = "GOVDATA_WRITE_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub write_timeout: std::time::Duration,
    /// Longest wait for a request body (`/mcp`) to arrive whole, from the end of its head.
    #[arg(long, env = "GOVDATA_BODY_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub body_read_timeout: std::time::Duration,
    /// Longest a request may take (waiting for a query slot included); past it the answer is
    /// 503 with `Retry-After`, and a paid request is not charged.
    #[arg(long, env = "GOVDATA_REQUEST_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Requests doing store work (cache misses) at once; more wait for a slot within the
    /// request timeout.
    #[arg(long, env = "GOVDATA_MAX_CONCURRENT_QUERIES", default_value_t = 32)]
    pub max_concurrent_queries: usize,
    /// On SIGTERM or SIGINT: how long to keep accepting while `/readyz` answers 503, so a load
    /// balancer moves away before connections are refused (`5s` behind one; `0s` alone).
    #[arg(long, env = "GOVDATA_DRAIN_DELAY", default_value = "0s", value_parser = humantime::parse_duration)]
    pub drain_delay: std::time::Duration,
    /// On SIGTERM or SIGINT: longest wait for requests in flight and a running ingestion.
    #[arg(long, env = "GOVDATA_DRAIN_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub drain_timeout: std::time::Duration,
    /// How often an open stream (`GET /v2/stream`) with nothing to send sends a keep-alive
    /// comment, so that proxies and clients see the connection alive.
    #[arg(long, env = "GOVDATA_STREAM_KEEP_ALIVE", default_value = "15s", value_parser = humantime::parse_duration)]
    pub stream_keep_alive: std::time::Duration,
    /// Longest any stream stays open before the server ends it with a `stream_ended` event (the
    /// client resumes with `Last-Event-ID`, on any process): spreads long-lived streams over
    /// processes after a deploy. Unset: a partner token's stream stays open as long as it likes.
    #[arg(long, env = "GOVDATA_STREAM_MAX_DURATION", value_parser = humantime::parse_duration)]
    pub stream_max_duration: Option<std::time::Duration>,
    /// Batches of new feed entries each process keeps for its streams (a publication is one
    /// batch per 200 entries): a stream that falls further behind (a client reading slowly)
    /// catches up from the store instead. More costs memory, fewer costs store reads.
    #[arg(long, env = "GOVDATA_STREAM_BACKLOG_BATCHES", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub stream_backlog_batches: u32,
    /// MCP sessions (protocol 2025-11-25 and earlier, where `resources/subscribe` lives) this
    /// process keeps at once. At the cap, `initialize` is answered without a session: tools and
    /// resource reads work, subscriptions need a session (or `subscriptions/listen`, 2026-07-28).
    #[arg(long, env = "GOVDATA_MCP_MAX_SESSIONS", default_value_t = 1024)]
    pub mcp_max_sessions: usize,
    /// An MCP session no request has reached for this long is closed. A session holding resource
    /// subscriptions is pinged by the server every third of it and stays while its client answers.
    #[arg(long, env = "GOVDATA_MCP_SESSION_IDLE", default_value = "10m", value_parser = parse_mcp_session_idle)]
    pub mcp_session_idle: std::time::Duration,
}

/// A session's idle time: a duration of at least 3 s (a subscribed session is pinged every third of it).
fn parse_mcp_session_idle(text: &str) -> Result<std::time::Duration, String> {
    let idle = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if idle < std::time::Duration::from_secs(3) {
        return Err(format!("`{text}` is shorter than 3s"));
    }
    Ok(idle)
}

/// Rate limits per policy (`contract::access::RatePolicy`): `REQUESTS/DURATION` or `off`.
#[derive(Debug, Clone, Copy, Args)]
pub struct RateArgs {
    /// Per client address: free endpoints, 402 challenges, refused credentials, documents.
    #[arg(long, env = "GOVDATA_RATE_CLIENT", default_value_t = RateArg(Some(RatePolicy::Client.default_rate())))]
    pub rate_client: RateArg,
    /// Per partner token (a token created with `--rate` has its own).
    #[arg(long, env = "GOVDATA_RATE_PARTNER", default_value_t = RateArg(Some(RatePolicy::Partner.default_rate())))]
    pub rate_partner: RateArg,
    /// Per x402 payer (the paying address), checked before anything is charged.
    #[arg(long, env = "GOVDATA_RATE_PAYER", default_value_t = RateArg(Some(RatePolicy::Payer.default_rate())))]
    pub rate_payer: RateArg,
}

impl RateArgs {
    pub fn settings(&self) -> RateSettings {
        RateSettings { client: self.rate_client.0, partner: self.rate_partner.0, payer: self.rate_payer.0 }
    }
}

/// The limits this process enforces (`None`: the policy is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSettings {
    pub client: Option<Rate>,
    pub partner: Option<Rate>,
    pub payer: Option<Rate>,
}

impl RateSettings {
    pub fn of(&self, policy: RatePolicy) -> Option<Rate> {
        match policy {
            RatePolicy::Client => self.client,
            RatePolicy::Partner => self.partner,
            RatePolicy::Payer => self.payer,
        }
    }
}

/// A rate setting: `REQUESTS/DURATION` (`300/1m`, `20/1s`) or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateArg(pub Option<Rate>);

impl std::fmt::Display for RateArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(rate) => write!(f, "{rate}"),
            None => f.write_str("off"),
        }
    }
}

impl std::str::FromStr for RateArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "off" | "none" | "0" => Ok(Self(None)),
            other => parse_rate(other).map(|r| Self(Some(r))),
        }
    }
}

/// A period that can be switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period(pub Option<std::time::Duration>);

/// `off`, or a duration (`6h`, `30m`) of at least one second.
pub fn parse_period_or_off(s: &str) -> Result<Period, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(Period(None));
    }
    match humantime::parse_duration(s.trim()) {
        Ok(d) if d >= std::time::Duration::from_secs(1) => Ok(Period(Some(d))),
        Ok(_) => Err(format!("`{s}`: at least 1s, or `off`")),
        Err(_) => Err(format!("`{s}` is not a duration (`6h`, `30m`) nor `off`")),
    }
}

/// `REQUESTS/DURATION`: `600/1m`, `100/10s` (a bare number of seconds is accepted too).
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let invalid = || format!("`{s}` is not a rate; write REQUESTS/DURATION, e.g. 600/1m or 20/1s");
    let (quota, window) = s.trim().split_once('/').ok_or_else(invalid)?;
    let quota: u32 = quota.trim().parse().map_err(|_| invalid())?;
    let window = window.trim();
    let window_s = match window.parse::<u64>() {
        Ok(seconds) => seconds,
        Err(_) => humantime::parse_duration(window).map_err(|_| invalid())?.as_secs(),
    };
    let window_s = u32::try_from(window_s).map_err(|_| invalid())?;
    if quota == 0 || window_s == 0 {
        return Err(format!("`{s}`: the quota and the window (whole seconds) must be at least 1"));
    }
    Ok(Rate { quota, window_s })
}

/// x402 payment settings.
#[derive(Debug, Clone, Args)]
pub struct PaymentArgs {
    /// Base URL of the x402 facilitator (`/verify`, `/settle`). Without it only partner tokens open paid endpoints.
    #[arg(long, env = "GOVDATA_X402_FACILITATOR_URL")]
    pub facilitator_url: Option<String>,
    /// Payment network, CAIP-2 (`eip155:8453` Base, `eip155:84532` Base Sepolia).
    #[arg(long, env = "GOVDATA_X402_NETWORK", default_value = DEFAULT_X402_NETWORK)]
    pub network: String,
    /// Payment asset: the token contract address.
    #[arg(long, env = "GOVDATA_X402_ASSET", default_value = DEFAULT_X402_ASSET)]
    pub asset: String,
    /// The asset's EIP-712 domain name.
    #[arg(long, env = "GOVDATA_X402_ASSET_NAME", default_value = DEFAULT_X402_ASSET_NAME)]
    pub asset_name: String,
    /// The asset's EIP-712 domain version.
    #[arg(long, env = "GOVDATA_X402_ASSET_VERSION", default_value = DEFAULT_X402_ASSET_VERSION)]
    pub asset_version: String,
    /// The asset's decimals: prices are in its smallest unit, and `/v1/meta/pricing` shows them
    /// in whole units too.
    #[arg(long, env = "GOVDATA_X402_ASSET_DECIMALS", default_value_t = DEFAULT_ASSET_DECIMALS)]
    pub asset_decimals: u32,
    /// Address that receives payments.
    #[arg(long, env = "GOVDATA_X402_PAY_TO")]
    pub pay_to: Option<String>,
    /// Price of a standard-tier call, in atomic units of the asset.
    #[arg(long, env = "GOVDATA_PRICE_STANDARD", default_value_t = DEFAULT_PRICE_STANDARD)]
    pub price_standard: u64,
    /// Price of a plus-tier call, in atomic units of the asset.
    #[arg(long, env = "GOVDATA_PRICE_PLUS", default_value_t = DEFAULT_PRICE_PLUS)]
    pub price_plus: u64,
    /// How long one x402 payment holds a stream (`GET /v2/stream`) open, in seconds; the stream
    /// then ends with an event saying to pay again and resume.
    #[arg(long, env = "GOVDATA_STREAM_PAID_SECONDS", default_value_t = DEFAULT_STREAM_PAID_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub stream_paid_seconds: u64,
    /// First-party token that opens every endpoint (header `x-internal-token`); not public.
    #[arg(long, env = "GOVDATA_INTERNAL_TOKEN", hide_env_values = true)]
    pub internal_token: Option<String>,
    /// Secret that signs v2 cursors; generated and kept in the store when unset.
    #[arg(long, env = "GOVDATA_CURSOR_SECRET", hide_env_values = true)]
    pub cursor_secret: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_callers_are_the_servers_own_origins_and_names() {
        let bound: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local = McpAccess::new("http://127.0.0.1:8080", false, bound, &[]);
        for origin in ["http://127.0.0.1:8080", "http://localhost:8080", "http://LOCALHOST:8080/", "http://[::1]:8080"]
        {
            assert!(local.allows_origin(Some(origin)), "{origin}");
        }
        for origin in ["https://evil.example", "http://127.0.0.1:8081", "https://localhost:8080", "null", "", "x"] {
            assert!(!local.allows_origin(Some(origin)), "{origin}");
        }
        assert!(local.allows_origin(None), "no Origin: not a browser");
        for host in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"] {
            assert!(local.allows_host(Some(host), "http"), "{host}");
        }
        for host in ["evil.example:8080", "localhost", "127.0.0.1:9", "127.0.0.1:8080/x", "a b"] {
            assert!(!local.allows_host(Some(host), "http"), "{host}");
        }
        assert!(!local.allows_host(None, "http"), "HTTP/1.1 requires Host");

        // A public URL: its origin and host; an operator's extra origin; `*`.
        let extra = [parse_allowed_origin("https://app.example.com").unwrap()];
        let public = McpAccess::new("https://api.govdata.example", true, "0.0.0.0:8080".parse().unwrap(), &extra);
        assert!(public.allows_origin(Some("https://api.govdata.example:443")));
        assert!(public.allows_origin(Some("https://app.example.com")));
        assert!(!public.allows_origin(Some("http://app.example.com")), "another scheme is another origin");
        assert!(!public.allows_origin(Some("http://localhost:8080")), "not bound to loopback");
        assert!(public.allows_host(Some("api.govdata.example"), "https"));
        assert!(!public.allows_host(Some("app.example.com"), "https"), "an allowed page's site is not a name of ours");
        let any = McpAccess::new("https://api.govdata.example", true, bound, &[AllowedOrigin::Any]);
        assert!(any.allows_origin(Some("https://anywhere.example")));
        assert!(!any.allows_host(Some("anywhere.example"), "https"), "the Host check stays");
        // Bound to all interfaces without a public URL: the names are not known.
        let open = McpAccess::new("http://0.0.0.0:8080", false, "0.0.0.0:8080".parse().unwrap(), &[]);
        assert!(open.allows_host(Some("govdata.internal:8080"), "http"));
        assert!(!open.allows_origin(Some("https://evil.example")));
        assert!(parse_allowed_origin("ftp://x").is_err() && parse_allowed_origin("app.example.com").is_err());
    }

    #[test]
    fn rates_read_as_operators_write_them() {
        assert_eq!(parse_rate("600/1m"), Ok(Rate { quota: 600, window_s: 60 }));
        assert_eq!(parse_rate(" 20 / 1s "), Ok(Rate { quota: 20, window_s: 1 }));
        assert_eq!(parse_rate("5/3600"), Ok(Rate { quota: 5, window_s: 3600 }));
        assert!(parse_rate("600").is_err() && parse_rate("0/1m").is_err() && parse_rate("5/100ms").is_err());
        assert_eq!("off".parse::<RateArg>(), Ok(RateArg(None)));
        assert_eq!(
            RateArg(Some(Rate { quota: 300, window_s: 60 })).to_string().parse(),
            Ok(RateArg(Some(Rate { quota: 300, window_s: 60 })))
        );
    }
}

impl PaymentArgs {
    pub fn prices(&self) -> Prices {
        Prices { standard: self.price_standard, plus: self.price_plus, stream_seconds: self.stream_paid_seconds }
    }
}

/// What the running server knows about its deployment: plain data, read from the flags and the
/// environment; `server.rs` builds the parts (cache, live refresh, schedule) from it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The base URL clients reach this server at: `GOVDATA_PUBLIC_URL`, else the bound address.
    pub public_url: String,
    /// Whether the operator named `public_url` (only then do the served documents carry it as
    /// their `servers`: a bound address is often not what clients reach).
    pub public_url_configured: bool,
    pub payments: PaymentArgs,
    pub response_cache_bytes: usize,
    /// Live refresh, when enabled.
    pub live: Option<LiveSettings>,
    /// Scheduled ingestion inside the server, when enabled.
    pub ingest_every: Option<std::time::Duration>,
    /// How often the server repacks loose indexes (PostgreSQL), when enabled.
    pub repack_every: Option<std::time::Duration>,
    /// The DAO registry file (the bundled one when `None`), for live refresh and the schedule.
    pub registry: Option<std::path::PathBuf>,
    /// Sourcify, for the scheduled runs (live refresh never asks it: it runs for a request).
    pub sourcify: Option<SourcifySettings>,
    pub limits: LimitArgs,
    pub rates: RateSettings,
    pub webhooks: WebhookArgs,
    pub exports: ExportArgs,
    pub replicas: ReplicaArgs,
    /// Who may call `/mcp` (origins and host names).
    pub mcp_access: McpAccess,
}

/// One entry of `GOVDATA_MCP_ALLOWED_ORIGINS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedOrigin {
    /// `*`: every origin.
    Any,
    One(url::Origin),
}

impl std::str::FromStr for AllowedOrigin {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        parse_allowed_origin(text)
    }
}

fn parse_allowed_origin(text: &str) -> Result<AllowedOrigin, String> {
    let text = text.trim();
    if text == "*" {
        return Ok(AllowedOrigin::Any);
    }
    web_origin(text).map(AllowedOrigin::One).ok_or_else(|| {
        format!("`{text}` is not a web origin; write `scheme://host[:port]`, e.g. `https://app.example.com`, or `*`")
    })
}

/// The origin of an `http(s)` URL, as a browser names it in `Origin` (scheme, host, port with
/// the scheme's default filled in); `None` for anything else (`null`, other schemes, garbage).
pub fn web_origin(text: &str) -> Option<url::Origin> {
    let url = url::Url::parse(text).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| url.origin()).filter(url::Origin::is_tuple)
}

/// Who may call `/mcp`, declared once from the settings. The MCP Streamable HTTP transport
/// requires a server to refuse (403) a request whose `Origin` is present and not allowed: a web
/// page elsewhere must not reach a server through a browser, least of all one on a developer's
/// loopback through DNS rebinding, where the page's own name resolves to 127.0.0.1 and the
/// browser sends that name as `Host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAccess {
    /// Origins whose pages may call; `None`: any (`*` was configured).
    pub origins: Option<Vec<url::Origin>>,
    /// Names (and ports) the server answers to in `Host`; `None`: any. Checked when they are
    /// known: bound to loopback (the loopback names at the bound port) or with a public URL
    /// configured (its host). A server bound to another address without a public URL is reached
    /// under names it cannot know.
    pub hosts: Option<Vec<(url::Host<String>, u16)>>,
}

impl McpAccess {
    pub fn new(public_url: &str, public_url_configured: bool, bound: SocketAddr, extra: &[AllowedOrigin]) -> Self {
        let mut origins: Vec<url::Origin> = web_origin(public_url).into_iter().collect();
        if bound.ip().is_loopback() {
            let port = bound.port();
            origins.extend(
                ["localhost", "127.0.0.1", "[::1]"].iter().filter_map(|h| web_origin(&format!("http://{h}:{port}"))),
            );
        }
        let hosts = (bound.ip().is_loopback() || public_url_configured).then(|| {
            origins
                .iter()
                .filter_map(|o| match o {
                    url::Origin::Tuple(_, host, port) => Some((host.clone(), *port)),
                    url::Origin::Opaque(_) => None,
                })
                .collect()
        });
        let any = extra.contains(&AllowedOrigin::Any);
        origins.extend(extra.iter().filter_map(|e| match e {
            AllowedOrigin::One(o) => Some(o.clone()),
            AllowedOrigin::Any => None,
        }));
        let mut unique = Vec::with_capacity(origins.len());
        for origin in origins {
            if !unique.contains(&origin) {
                unique.push(origin);
            }
        }
        Self { origins: (!any).then_some(unique), hosts }
    }

    /// Whether a request whose `Origin` header is `origin` may be served (one without is).
    pub fn allows_origin(&self, origin: Option<&str>) -> bool {
        let (Some(origin), Some(allowed)) = (origin, &self.origins) else { return true };
        web_origin(origin).is_some_and(|o| allowed.contains(&o))
    }

    /// Whether a request whose `Host` header is `host` may be served. A `Host` without a port
    /// names the scheme's default one, which none of the bound loopback ports is; one that does
    /// not parse is refused.
    pub fn allows_host(&self, host: Option<&str>, scheme: &str) -> bool {
        let Some(allowed) = &self.hosts else { return true };
        let Some(host) = host else { return false };
        let Ok(url) = url::Url::parse(&format!("{scheme}://{host}/")) else { return false };
        let (Some(name), Some(port)) = (url.host(), url.port_or_known_default()) else { return false };
        url.path() == "/" && allowed.iter().any(|(h, p)| *h == name.to_owned() && *p == port)
    }
}

/// When live refresh happens and how long requests wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSettings {
    /// Data older than this is refreshed on demand.
    pub target: std::time::Duration,
    /// How long after a refresh the DAO's answers count as `cached_live`.
    pub ttl: std::time::Duration,
    /// Longest a request waits for a refresh; past it, the stored data is served.
    pub deadline: std::time::Duration,
}

impl Settings {
    pub fn from_args(args: &ServeArgs, bound: SocketAddr) -> anyhow::Result<Self> {
        let public_url =
            args.public_url.clone().unwrap_or_else(|| format!("http://{bound}")).trim_end_matches('/').to_owned();
        let live = args.live_refresh.then_some(LiveSettings {
            target: args.freshness_target,
            ttl: args.live_ttl,
            deadline: args.live_deadline,
        });
        Ok(Self {
            mcp_access: McpAccess::new(&public_url, args.public_url.is_some(), bound, &args.mcp_allowed_origins),
            public_url,
            public_url_configured: args.public_url.is_some(),
            payments: args.payments.clone(),
            response_cache_bytes: args.response_cache_mb.saturating_mul(1 << 20),
            live,
            ingest_every: args.ingest_every,
            repack_every: args.repack_every.0,
            registry: args.registry.registry.clone(),
            sourcify: args.sourcify.settings(),
            limits: args.limits,
            rates: args.rates.settings(),
            webhooks: args.webhooks.clone(),
            exports: args.exports.clone(),
            replicas: args.replicas.clone(),
        })
    }

    pub fn prices(&self) -> Prices {
        self.payments.prices()
    }
}
