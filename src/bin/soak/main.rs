//! Soak and outage benchmark against a real `govdata serve` process, as an operator runs it.
//!
//! `soak load`: starts `govdata serve` (the binary beside this one) over `DATABASE_URL` (a new
//! SQLite file with the bundled sample when unset), creates a partner token with a rate far
//! above the load, and sends `--connections` keep-alive connections of paid requests for
//! `--duration`: DAO, proposal, vote, voter, topic, signal and activity lists, details,
//! evidence, brief, lookup and freshness; one request in four asks for a vote page at a size
//! not asked for lately, so the store answers it and the response cache keeps evicting. Every `--every` it prints requests, non-2xx,
//! p50 and p99 latency, and the server's RSS; at the end the totals and the connections the
//! clients opened, and it exits 1 when any request failed or RSS grew by more than
//! `--max-rss-growth-mb` after the first interval.
//!
//! `soak outage` (PostgreSQL): the server reaches PostgreSQL through a TCP relay that this
//! program owns. After a warm-up the relay cuts every open connection and refuses new ones for
//! `--outage`, then forwards again. Pollers request answers that need the store (never the
//! freshness, which is never cached). Prints the time from the cut to the first 503,
//! whether every 503 carried `Retry-After`, and the time from recovery to the first 200.
//!
//! `soak abuse`: see `abuse.rs`: legitimate clients under idle sockets, slowloris heads, slow
//! readers and a hammering address at once, against the same clients alone.
//!
//! `soak streams`: see `streams.rs`: 1,000 open event streams, idle and through a publication.
//! `soak webhooks`: see `webhooks.rs`: ~10,000 feed entries to 100 receivers, a kill, a day down.
//! `soak latency`: see `latency.rs`: publication to a receiver's 2xx, p50/p99 per webhook format.
//!
//! ```sh
//! cargo build --release --bin govdata --bin soak
//! target/release/soak load                           # 10 minutes, 64 connections, SQLite
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/soak target/release/soak outage
//! target/release/soak abuse                          # 10,000 idle sockets and the rest, SQLite
//! target/release/soak streams                        # 1,000 streams through a publication, SQLite
//! target/release/soak webhooks                       # 100 receivers, ~1M deliveries (`--kill`, `--day`)
//! target/release/soak latency                        # delivery latency per format, 20 publications
//! ```
//! The figures belong in docs/benchmarks.md, never in timed tests.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

mod abuse;
mod latency;
mod streams;
mod webhooks;

#[derive(Debug, Parser)]
#[command(name = "soak", about = "Soak and database-outage runs against a govdata serve process")]
struct Args {
    /// The store; a new SQLite file in a temporary folder when unset.
    #[arg(long, env = "DATABASE_URL", global = true)]
    database_url: Option<String>,
    /// The govdata binary; the one beside this program when unset.
    #[arg(long, global = true)]
    govdata: Option<PathBuf>,
    #[command(subcommand)]
    run: Run,
}

#[derive(Debug, Subcommand)]
enum Run {
    /// Sustained paid load with a partner token.
    Load {
        #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
        duration: Duration,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Reporting interval.
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        every: Duration,
        /// RSS may grow by at most this much between the first and the last interval.
        #[arg(long, default_value_t = 32)]
        max_rss_growth_mb: u64,
    },
    /// Legitimate clients while hostile ones attack at once, against the same clients alone.
    Abuse {
        #[arg(long, default_value_t = 10_000)]
        idle: usize,
        #[arg(long, default_value_t = 500)]
        slowloris: usize,
        #[arg(long, default_value_t = 100)]
        slow_readers: usize,
        /// Connections of the one address that hammers past its rate limit.
        #[arg(long, default_value_t = 1)]
        hammer: usize,
        /// Legitimate keep-alive connections.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// How long each measured phase (quiet, under attack) lasts.
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        phase: Duration,
        /// How long the attack runs before the measured phase.
        #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
        warm_up: Duration,
        #[arg(long, default_value_t = 2.0)]
        max_p99_ratio: f64,
    },
    /// Open event streams (`GET /v2/stream`), idle and through a publication in another process.
    Streams {
        #[arg(long, default_value_t = 1_000)]
        streams: usize,
        /// Votes of the synthetic DAO the publication adds.
        #[arg(long, default_value_t = 10_000)]
        votes: u64,
    },
    /// The feed pushed to webhook receivers on loopback (see `webhooks.rs`): a fan-out, with
    /// `--kill` a SIGKILL in the middle of it, or with `--day` a receiver down a simulated day.
    Webhooks {
        #[arg(long, default_value_t = 100)]
        receivers: usize,
        /// Proposals and votes of the publication's synthetic DAO (about 10,000 feed entries).
        #[arg(long, default_value_t = 1_900)]
        proposals: u64,
        #[arg(long, default_value_t = 15_000)]
        votes: u64,
        #[arg(long)]
        kill: bool,
        #[arg(long)]
        day: bool,
        /// Instead of `--receivers` unfiltered webhooks, this many targeted ones (most watching
        /// one voter, some a kind, a few nothing) for one publication of `--proposals` and
        /// `--votes`: deliveries per second and subscriptions the fan-out read per entry.
        #[arg(long)]
        targeted: Option<usize>,
    },
    /// Delivery latency per webhook format (see `latency.rs`): small publications, each
    /// delivered to one loopback receiver per format before the next.
    Latency {
        #[arg(long, default_value_t = 20)]
        publications: usize,
        /// Proposals and votes of each publication's synthetic DAO.
        #[arg(long, default_value_t = 10)]
        proposals: u64,
        #[arg(long, default_value_t = 200)]
        votes: u64,
        /// The wait after each publication.
        #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
        every: Duration,
    },
    /// PostgreSQL refuses connections for a while, under polling; needs a PostgreSQL `DATABASE_URL`.
    Outage {
        #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
        outage: Duration,
        /// Concurrent pollers.
        #[arg(long, default_value_t = 4)]
        pollers: usize,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let govdata = match args.govdata.clone() {
        Some(path) => path,
        None => std::env::current_exe()?.with_file_name("govdata"),
    };
    let scratch = std::env::temp_dir().join(format!("govdata-soak-{}", std::process::id()));
    let url = args.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", scratch.join("soak.db").display()));
    let result = run(args, &govdata, &url).await;
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

async fn run(args: Args, govdata: &std::path::Path, url: &str) -> anyhow::Result<()> {
    match args.run {
        Run::Load { duration, connections, every, max_rss_growth_mb } => {
            let server = Server::start(govdata, url, &[]).await?;
            load(&server, duration, connections, every, max_rss_growth_mb).await
        }
        Run::Abuse { idle, slowloris, slow_readers, hammer, clients, phase, warm_up, max_p99_ratio } => {
            let attack =
                abuse::Attack { idle, slowloris, slow_readers, hammer, clients, phase, warm_up, max_p99_ratio };
            abuse::run(govdata, url, attack).await
        }
        Run::Streams { streams, votes } => streams::run(govdata, url, streams::Streams { streams, votes }).await,
        Run::Webhooks { receivers, proposals, votes, kill, day, targeted } => {
            let plan = webhooks::Plan { receivers, proposals, votes, kill };
            match (day, targeted) {
                (true, _) => webhooks::day(url, plan).await,
                (false, Some(subscriptions)) => webhooks::targeted(govdata, url, plan, subscriptions).await,
                (false, None) => webhooks::run(govdata, url, plan).await,
            }
        }
        Run::Latency { publications, proposals, votes, every } => {
            latency::run(govdata, url, latency::Plan { publications, proposals, votes, every }).await
        }
        Run::Outage { outage: cut, pollers } => outage(govdata, url, cut, pollers).await,
    }
}

/// A `govdata serve` child process with a partner token.
struct Server {
    child: Child,
    base: String,
    token: String,
}

impl Server {
    async fn start(govdata: &std::path::Path, url: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        // The sample is imported on the first start; the token needs the migrated store.
        let migrate = Command::new(govdata).arg("migrate").env("DATABASE_URL", url).output().await?;
        if !migrate.status.success() {
            bail!("govdata migrate failed: {}", String::from_utf8_lossy(&migrate.stderr));
        }
        let created = Command::new(govdata)
            .args(["tokens", "create", "--name", "soak", "--scopes", "v1:paid:*,v2:paid:*", "--rate", "1000000000/1s"])
            .env("DATABASE_URL", url)
            .output()
            .await?;
        if !created.status.success() {
            bail!("govdata tokens create failed: {}", String::from_utf8_lossy(&created.stderr));
        }
        let token = String::from_utf8(created.stdout)?.trim().to_owned();
        let mut child = Command::new(govdata)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env("DATABASE_URL", url)
            .env("RUST_LOG", "warn,govdata=info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("start govdata serve")?;
        let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
        let base = tokio::time::timeout(Duration::from_secs(300), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    return Ok(rest.split_whitespace().next().context("an address")?.to_owned());
                }
            }
            bail!("govdata serve ended before listening")
        })
        .await
        .context("govdata serve listens within 5 minutes")??;
        // The server's warnings and errors go on to this program's stderr.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if !line.contains(" INFO ") {
                    eprintln!("server: {line}");
                }
            }
        });
        Ok(Self { child, base, token })
    }

    fn client(&self) -> reqwest::Client {
        self.client_from(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
    }

    /// A partner's client whose connections come from the loopback address `from`.
    fn client_from(&self, from: std::net::IpAddr) -> reqwest::Client {
        self.builder(from).build().expect("a client")
    }

    /// A partner's client from `from` that counts in `connects` every connection it opens: it
    /// is to be used with `named_base`, a name that only its resolver knows, and each new
    /// connection resolves the name once (an address in the URL would skip the resolver).
    fn counted_client_from(&self, from: std::net::IpAddr, connects: Arc<AtomicU64>) -> reqwest::Client {
        let to = self.base.trim_start_matches("http://").parse().expect("the server's address");
        self.builder(from).dns_resolver(Arc::new(Connects { to, count: connects })).build().expect("a client")
    }

    /// The server's base URL by the name `counted_client_from` resolves (to the same loopback
    /// address: `.invalid` never resolves elsewhere).
    fn named_base(&self) -> String {
        let port = self.base.rsplit(':').next().expect("a port");
        format!("http://soak.invalid:{port}")
    }

    fn builder(&self, from: std::net::IpAddr) -> reqwest::ClientBuilder {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("x-service-api-token", self.token.parse().expect("a token is a header value"));
        // No cap on idle connections (issue 50): hyper-util hands a connection back to the pool
        // from a task of its own once the answer's end is read, so a client's next request often
        // finds none idle and opens another; with `pool_max_idle_per_host(1)` the pool then
        // closed one of the two, from this side, on almost every such race: 14,608 connections
        // opened in a 10 s phase of `soak abuse` (1,460/s, 19,511 switches of connection, every
        // one after a plain 200), each left in TIME_WAIT here until the ports of 127.0.0.3 ran
        // out. Uncapped, a client keeps the second connection and takes it in the next race.
        // Idle ones are let go before the server's keep-alive idle timeout (10 s) closes them.
        reqwest::Client::builder()
            .local_address(from)
            .default_headers(headers)
            .pool_idle_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
    }

    /// The server's `/metrics` text, asked with the internal token it was started with
    /// ([`webhook_env`]).
    async fn metrics(&self, internal: &str) -> anyhow::Result<String> {
        Ok(reqwest::Client::new()
            .get(format!("{}/metrics", self.base))
            .header("x-internal-token", internal)
            .send()
            .await?
            .text()
            .await?)
    }

    /// Resident set size of the server process, in MiB.
    fn rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        let kib: f64 = status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    }
}

/// The paths the load walks: paid operations of both surfaces over the store's own ids; and the
/// proposals whose vote pages are asked for with ever-changing sizes (`churn`).
async fn paths(server: &Server) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let client = server.client();
    let get = |path: String| {
        let client = client.clone();
        let url = format!("{}{path}", server.base);
        async move {
            let r = client.get(&url).send().await?;
            let status = r.status();
            let body: Value = r.json().await?;
            if !status.is_success() {
                bail!("{url}: {status} {body}");
            }
            anyhow::Ok(body)
        }
    };
    let daos = get("/v2/daos?limit=100".to_owned()).await?;
    let items = |body: &Value| body["data"]["items"].as_array().cloned().unwrap_or_default();
    let dao_ids: Vec<String> = items(&daos).iter().filter_map(|d| d["daoId"].as_str().map(str::to_owned)).collect();
    if dao_ids.is_empty() {
        bail!("the store has no DAOs: {daos}");
    }
    let mut churn = Vec::new();
    let mut paths = vec![
        "/v2/daos?limit=100".to_owned(),
        "/v1/system/freshness".to_owned(),
        "/v1/activity?limit=50".to_owned(),
        "/v2/activity?limit=50".to_owned(),
        "/v2/signals?limit=50".to_owned(),
        "/v2/events?limit=50".to_owned(),
        "/v1/governance-signals?limit=50".to_owned(),
    ];
    for dao in &dao_ids {
        paths.push(format!("/v2/daos/{dao}"));
        paths.push(format!("/v1/daos/{dao}/brief"));
        paths.push(format!("/v2/daos/{dao}/voters?limit=100"));
        paths.push(format!("/v2/topics?daoId={dao}&limit=20"));
        let proposals = get(format!("/v2/proposals?daoId={dao}&limit=20")).await?;
        paths.push(format!("/v2/proposals?daoId={dao}&limit=20"));
        for p in items(&proposals).iter().take(10) {
            let Some(key) = p["proposalKey"].as_str() else { continue };
            paths.push(format!("/v2/proposals/{key}"));
            churn.push(format!("/v2/proposals/{key}/votes"));
            // Page sizes 1..=100 over a rotating offset: most of these miss the cache at first.
            for limit in [1, 7, 25, 50, 100] {
                paths.push(format!("/v2/proposals/{key}/votes?limit={limit}"));
            }
            if let (Some(source), Some(external)) = (p["source"].as_str(), p["externalId"].as_str()) {
                paths.push(format!("/v1/daos/{dao}/proposals/{source}/{external}/evidence"));
            }
            if let Some(title) = p["title"].as_str() {
                let words: Vec<&str> = title.split_whitespace().take(4).collect();
                let query = percent_encoding::utf8_percent_encode(&words.join(" "), percent_encoding::NON_ALPHANUMERIC)
                    .to_string();
                // A title's first words may fit several titles equally: the lookup then answers
                // 404 (never a guess), which is not what the load measures.
                let lookup = format!("/v1/proposals/lookup?title={query}&daoId={dao}");
                if get(lookup.clone()).await.is_ok() {
                    paths.push(lookup);
                }
            }
        }
        let voters = get(format!("/v2/daos/{dao}/voters?limit=5")).await?;
        for v in items(&voters) {
            if let Some(id) = v["voterIdentity"].as_str() {
                paths.push(format!("/v2/voters/{id}"));
                paths.push(format!("/v2/voters/{id}/votes?limit=50"));
            }
        }
    }
    Ok((paths, churn))
}

/// Resolves the server's name (`Server::named_base`) to its address, counting: a client resolves
/// once per connection it opens.
struct Connects {
    to: std::net::SocketAddr,
    count: Arc<AtomicU64>,
}

impl reqwest::dns::Resolve for Connects {
    fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
        self.count.fetch_add(1, Ordering::Relaxed);
        let to = self.to;
        Box::pin(async move { Ok(Box::new(std::iter::once(to)) as reqwest::dns::Addrs) })
    }
}

/// What one request came to, and on whose side it failed.
enum Outcome {
    /// The server answered with this status, and the whole body was read.
    Answer(u16),
    /// This program failed before the server could answer: its own ports (a local bind or
    /// connect that found no free port), its own timeout.
    Client(String),
    /// The server, or the connection to it, failed: refused, reset, closed before the answer's end.
    Server(String),
}

impl Outcome {
    fn is_success(&self) -> bool {
        matches!(self, Self::Answer(s) if (200..300).contains(s))
    }

    /// `"200"`, `"client: …"` or `"server: …"`.
    fn label(&self) -> String {
        match self {
            Self::Answer(status) => status.to_string(),
            Self::Client(e) => format!("client: {e}"),
            Self::Server(e) => format!("server: {e}"),
        }
    }

    fn of(e: &reqwest::Error, what: &str) -> Self {
        // The cause a client can act on is at the end of the chain (reset, closed, refused).
        let mut text = format!("{what}: {e}");
        let mut own = e.is_timeout();
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            text.push_str(&format!(": {c}"));
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                // EADDRINUSE from the local bind, EADDRNOTAVAIL from connect: no port left here.
                own |= matches!(io.kind(), std::io::ErrorKind::AddrInUse | std::io::ErrorKind::AddrNotAvailable);
                own |= io.kind() == std::io::ErrorKind::TimedOut;
            }
            cause = c.source();
        }
        if own { Self::Client(text) } else { Self::Server(text) }
    }
}

/// One request's outcome and the connection that carried it.
struct Fetched {
    outcome: Outcome,
    /// The client's port of the connection the answer came on.
    local_port: Option<u16>,
    /// The answer asked the client to close the connection (`connection: close`).
    close: bool,
}

/// GETs `url` and reads its whole answer.
async fn fetch(client: &reqwest::Client, url: &str) -> Fetched {
    match client.get(url).send().await {
        Ok(r) => {
            let status = r.status();
            let local_port = r
                .extensions()
                .get::<hyper_util::client::legacy::connect::HttpInfo>()
                .map(|info| info.local_addr().port());
            let close = r
                .headers()
                .get(reqwest::header::CONNECTION)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            let outcome = match r.bytes().await {
                Ok(_) => Outcome::Answer(status.as_u16()),
                Err(e) => Outcome::of(&e, "body error"),
            };
            Fetched { outcome, local_port, close }
        }
        Err(e) => Fetched { outcome: Outcome::of(&e, "request error"), local_port: None, close: false },
    }
}

/// What one reporting interval saw.
#[derive(Default)]
struct Interval {
    requests: u64,
    failed: u64,
    statuses: BTreeMap<String, u64>,
    micros: Vec<u32>,
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

async fn load(
    server: &Server,
    duration: Duration,
    connections: usize,
    every: Duration,
    max_rss_growth_mb: u64,
) -> anyhow::Result<()> {
    let (paths, churn) = paths(server).await?;
    println!(
        "soak: {} paths, and vote pages of {} proposals at changing sizes, over {connections} connections for {}",
        paths.len(),
        churn.len(),
        humantime::format_duration(duration)
    );
    let (paths, churn) = (Arc::new(paths), Arc::new(churn));
    let interval = Arc::new(Mutex::new(Interval::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let connects = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for worker in 0..connections {
        let client = server.counted_client_from(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), connects.clone());
        let (paths, interval, stop) = (paths.clone(), interval.clone(), stop.clone());
        let churn = churn.clone();
        let base = server.named_base();
        workers.push(tokio::spawn(async move {
            // Each connection starts at its own place in the mix.
            let mut i = worker * paths.len() / connections.max(1);
            while !stop.load(Ordering::Relaxed) {
                // One request in four asks for a page size no one asked for lately: the store
                // answers and the response cache keeps evicting, as under real traffic.
                let path = if i % 4 == 3 && !churn.is_empty() {
                    format!("{}?limit={}", churn[(i / 4) % churn.len()], 1 + (i * 7919) % 500)
                } else {
                    paths[i % paths.len()].clone()
                };
                let path = &path;
                i += 1;
                let started = Instant::now();
                let outcome = fetch(&client, &format!("{base}{path}")).await.outcome;
                let micros = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                let mut seen = interval.lock().expect("not poisoned");
                seen.requests += 1;
                seen.micros.push(micros);
                if !outcome.is_success() {
                    seen.failed += 1;
                    *seen.statuses.entry(format!("{} {path}", outcome.label())).or_default() += 1;
                }
            }
        }));
    }
    println!(
        "{:>6}  {:>10}  {:>8}  {:>9}  {:>9}  {:>8}",
        "t (s)", "requests", "non-2xx", "p50 (ms)", "p99 (ms)", "RSS MiB"
    );
    let started = Instant::now();
    let (mut total, mut failed, mut rss) = (0u64, 0u64, Vec::new());
    let mut all = Vec::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    while started.elapsed() < duration {
        ticks.tick().await;
        let mut seen = std::mem::take(&mut *interval.lock().expect("not poisoned"));
        seen.micros.sort_unstable();
        let mem = server.rss_mib().context("the server is running")?;
        println!(
            "{:>6}  {:>10}  {:>8}  {:>9.2}  {:>9.2}  {:>8.1}",
            started.elapsed().as_secs(),
            seen.requests,
            seen.failed,
            percentile(&seen.micros, 50.0),
            percentile(&seen.micros, 99.0),
            mem
        );
        total += seen.requests;
        failed += seen.failed;
        rss.push(mem);
        for (k, v) in seen.statuses {
            *statuses.entry(k).or_default() += v;
        }
        // Per-interval percentiles are exact; the overall ones sample every 16th request.
        all.extend(seen.micros.iter().step_by(16));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await?;
    }
    all.sort_unstable();
    let secs = started.elapsed().as_secs_f64();
    let (first, last, peak) = (rss[0], *rss.last().unwrap_or(&rss[0]), rss.iter().copied().fold(0.0, f64::max));
    println!(
        "total: {total} requests ({:.0}/s), {failed} non-2xx, p50 {:.2} ms, p99 {:.2} ms, RSS first {first:.1} MiB, last {last:.1} MiB, peak {peak:.1} MiB",
        total as f64 / secs,
        percentile(&all, 50.0),
        percentile(&all, 99.0),
    );
    println!(
        "connections opened: {} by the {connections} clients (a client opens another when its pool has no idle one)",
        connects.load(Ordering::Relaxed)
    );
    for (what, n) in &statuses {
        println!("  {n} × {what}");
    }
    if failed > 0 {
        bail!("{failed} requests failed");
    }
    if last - first > max_rss_growth_mb as f64 {
        bail!("RSS grew by {:.1} MiB (at most {max_rss_growth_mb})", last - first);
    }
    Ok(())
}

/// A TCP relay in front of PostgreSQL that can cut every connection and refuse new ones.
struct Relay {
    addr: std::net::SocketAddr,
    up: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
}

impl Relay {
    async fn start(upstream: String) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let relay = Self { addr, up: up.clone(), generation: generation.clone() };
        tokio::spawn(async move {
            let mut listener = Some(listener);
            loop {
                // While the relay is down its port is closed: connecting is refused, as with a
                // stopped database.
                if !up.load(Ordering::SeqCst) {
                    listener = None;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                let l = match &listener {
                    Some(l) => l,
                    None => match TcpListener::bind(addr).await {
                        Ok(l) => listener.insert(l),
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                };
                let accepted = tokio::select! {
                    a = l.accept() => a,
                    () = tokio::time::sleep(Duration::from_millis(10)) => continue,
                };
                let Ok((mut client, _)) = accepted else { continue };
                let (upstream, generation) = (upstream.clone(), generation.clone());
                let born = generation.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else { return };
                    let cut = async {
                        while generation.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        () = cut => {}
                    }
                });
            }
        });
        Ok(relay)
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

async fn outage(govdata: &std::path::Path, url: &str, cut_for: Duration, pollers: usize) -> anyhow::Result<()> {
    let Some(rest) = url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://")) else {
        bail!("the outage run needs a PostgreSQL DATABASE_URL");
    };
    // postgres://user@host:port/db → the relay stands at host:port.
    let (auth, after) = rest.rsplit_once('@').map_or(("", rest), |(a, h)| (a, h));
    let (hostport, db) = after.split_once('/').context("a database name in DATABASE_URL")?;
    let hostport = if hostport.contains(':') { hostport.to_owned() } else { format!("{hostport}:5432") };
    let relay = Relay::start(hostport).await?;
    let at = if auth.is_empty() { String::new() } else { format!("{auth}@") };
    let relayed = format!("postgres://{at}{}/{db}", relay.addr);
    let server = Server::start(govdata, &relayed, &[]).await?;
    // Freshness is never cached: every poll needs the store.
    let events: Arc<Mutex<Vec<(Instant, u16, bool)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..pollers {
        let (client, base) = (server.client(), server.base.clone());
        let (events, stop) = (events.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let (status, retry_after) = match client.get(format!("{base}/v1/system/freshness")).send().await {
                    Ok(r) => (r.status().as_u16(), r.headers().contains_key("retry-after")),
                    Err(_) => (0, false),
                };
                events.lock().expect("not poisoned").push((Instant::now(), status, retry_after));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let cut_at = Instant::now();
    relay.cut();
    println!("outage: PostgreSQL refuses connections for {}", humantime::format_duration(cut_for));
    tokio::time::sleep(cut_for).await;
    let restored_at = Instant::now();
    relay.restore();
    println!("outage: PostgreSQL accepts connections again");
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await?;
    }
    let events = events.lock().expect("not poisoned").clone();
    let mut by_status: BTreeMap<u16, u64> = BTreeMap::new();
    for (_, s, _) in &events {
        *by_status.entry(*s).or_default() += 1;
    }
    let before: Vec<_> = events.iter().filter(|e| e.0 < cut_at).collect();
    let during: Vec<_> = events.iter().filter(|e| e.0 >= cut_at && e.0 < restored_at).collect();
    let first_503 = during.iter().find(|e| e.1 == 503).map(|e| e.0 - cut_at);
    let first_200 = events.iter().filter(|e| e.0 >= restored_at).find(|e| e.1 == 200).map(|e| e.0 - restored_at);
    let without_retry_after = events.iter().filter(|e| e.1 == 503 && !e.2).count();
    let other = events.iter().filter(|e| ![200, 503].contains(&e.1)).count();
    println!("statuses: {by_status:?}");
    println!("before the outage: {} polls, {} × 200", before.len(), before.iter().filter(|e| e.1 == 200).count());
    println!(
        "first 503 after the cut: {}",
        first_503.map_or("none".to_owned(), |d| format!("{:.3} s", d.as_secs_f64()))
    );
    println!("503 without Retry-After: {without_retry_after}");
    println!(
        "first 200 after recovery: {}",
        first_200.map_or("none".to_owned(), |d| format!("{:.3} s", d.as_secs_f64()))
    );
    println!("answers other than 200 and 503: {other}");
    let mut missed = Vec::new();
    if first_503.is_none_or(|d| d > Duration::from_secs(1)) {
        missed.push("503 within 1 s of the outage");
    }
    if first_200.is_none_or(|d| d > Duration::from_secs(5)) {
        missed.push("200 within 5 s of recovery");
    }
    if without_retry_after > 0 || other > 0 {
        missed.push("every refusal a 503 with Retry-After");
    }
    if !missed.is_empty() {
        bail!("goals missed: {}", missed.join(", "));
    }
    Ok(())
}

/// The environment of a server that delivers webhooks to this process's receivers on loopback
/// (and nowhere else), with no rate limit in the way, and `internal` as its internal token (for
/// [`Server::metrics`]).
fn webhook_env(internal: &str) -> [(&'static str, &str); 5] {
    [
        ("GOVDATA_WEBHOOK_ALLOW_PRIVATE", "1"),
        ("GOVDATA_WEBHOOK_LOOPBACK_ONLY", "1"),
        ("GOVDATA_RATE_PARTNER", "off"),
        ("GOVDATA_RATE_CLIENT", "off"),
        ("GOVDATA_INTERNAL_TOKEN", internal),
    ]
}
