//! `soak abuse`: legitimate clients' latency and errors while careless and hostile clients do
//! their worst at once, against the same clients alone.
//!
//! The attack, all from loopback addresses of its own (every 127.x.y.z is this machine):
//! - `--idle` sockets that never send a byte, spread over addresses of 250 each (under the
//!   per-address cap, so the global cap and its eviction are what holds them), each reconnecting
//!   a second after the server closes it;
//! - `--slowloris` heads, a header line a second, reconnecting when cut;
//! - `--slow-readers` clients that pipeline twenty requests for the v2 document through a 4 KiB
//!   receive buffer and read a byte a second, reconnecting when cut;
//! - one address hammering a free operation past its rate limit on `--hammer` connections.
//!
//! The legitimate clients (`--clients` keep-alive clients from 127.0.0.3, a partner token) walk
//! the same paid paths as `soak load`. Goal: no legitimate error, and their p99 under attack
//! within `--max-p99-ratio` (2) of the quiet run's. Each phase prints the connections the
//! legitimate clients opened (a client holds one or two: see `Server::builder`), the answers
//! after which a client went on on another connection, and its failures apart by side: the
//! server's (an answer other than 2xx, a connection refused, reset or cut) and this program's
//! own (no local port left, its own timeout); a missed goal names the side.
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;

use super::{Outcome, Server, fetch, paths, percentile};

/// The sizes of one run.
#[derive(Debug, Clone, Copy)]
pub struct Attack {
    pub idle: usize,
    pub slowloris: usize,
    pub slow_readers: usize,
    pub hammer: usize,
    pub clients: usize,
    pub phase: Duration,
    pub warm_up: Duration,
    pub max_p99_ratio: f64,
}

const LEGIT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
const INTERNAL_TOKEN: &str = "soak-abuse-internal";
/// Idle sockets per attacking address: under the default per-address cap (256).
const IDLE_PER_ADDRESS: usize = 250;
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// What the attackers saw.
#[derive(Default)]
struct Tally {
    idle_opened: AtomicU64,
    idle_closed: AtomicU64,
    slowloris_cut: AtomicU64,
    readers_cut: AtomicU64,
    reader_bytes: AtomicU64,
    connect_errors: AtomicU64,
    hammer: std::sync::Mutex<BTreeMap<String, u64>>,
}

pub async fn run(govdata: &std::path::Path, url: &str, attack: Attack) -> anyhow::Result<()> {
    // This program holds more than ten thousand sockets.
    govdata::connections::fit_connection_cap(usize::MAX);
    let server = Server::start(govdata, url, &[("GOVDATA_INTERNAL_TOKEN", INTERNAL_TOKEN)]).await?;
    let addr: SocketAddr = server.base.trim_start_matches("http://").parse().context("the server's address")?;
    let (paths, _) = paths(&server).await?;
    let paths = Arc::new(paths);
    println!(
        "abuse: {} legitimate connections from {LEGIT} over {} paths; {} s quiet, then {} idle sockets, {} slowloris \
         heads, {} slow readers and {} hammering connections, {} s warm-up, {} s measured",
        attack.clients,
        paths.len(),
        attack.phase.as_secs(),
        attack.idle,
        attack.slowloris,
        attack.slow_readers,
        attack.hammer,
        attack.warm_up.as_secs(),
        attack.phase.as_secs()
    );
    let quiet = legit(&server, &paths, attack).await;
    println!("quiet:  {quiet}");

    let (stop_tx, stop) = watch::channel(false);
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::new();
    for i in 0..attack.idle {
        let from = Ipv4Addr::new(127, 0, 1, 1 + (i / IDLE_PER_ADDRESS) as u8);
        // Spread the first connects over two seconds, as a real flood ramps.
        let delay = Duration::from_millis((i as u64 * 2_000) / attack.idle.max(1) as u64);
        tasks.push(tokio::spawn(idle(addr, from, delay, stop.clone(), tally.clone())));
    }
    for i in 0..attack.slowloris {
        let from = Ipv4Addr::new(127, 0, 2, 1 + (i / IDLE_PER_ADDRESS) as u8);
        tasks.push(tokio::spawn(slowloris(addr, from, stop.clone(), tally.clone())));
    }
    for _ in 0..attack.slow_readers {
        tasks.push(tokio::spawn(slow_reader(addr, Ipv4Addr::new(127, 0, 3, 1), stop.clone(), tally.clone())));
    }
    let hammer = reqwest::Client::builder().local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 4, 1))).build()?;
    for _ in 0..attack.hammer {
        tasks.push(tokio::spawn(hammering(hammer.clone(), server.base.clone(), stop.clone(), tally.clone())));
    }
    tokio::time::sleep(attack.warm_up).await;
    let rss_before = server.rss_mib();
    let attacked = legit(&server, &paths, attack).await;
    let rss_after = server.rss_mib();
    println!("attack: {attacked}");
    let _ = stop_tx.send(true);
    for task in tasks {
        let _ = task.await;
    }
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "attackers: {} idle sockets opened, {} closed by the server; {} slowloris heads cut; {} slow readers cut after \
         {} bytes read in all; {} connects failed; hammering: {:?}",
        load(&tally.idle_opened),
        load(&tally.idle_closed),
        load(&tally.slowloris_cut),
        load(&tally.readers_cut),
        load(&tally.reader_bytes),
        load(&tally.connect_errors),
        tally.hammer.lock().expect("not poisoned")
    );
    println!(
        "server RSS: {} MiB before the measured attack, {} MiB after",
        rss_before.map_or("?".to_owned(), |m| format!("{m:.1}")),
        rss_after.map_or("?".to_owned(), |m| format!("{m:.1}"))
    );
    print_refusals(&server).await?;
    let mut missed = Vec::new();
    if quiet.server_failed > 0 || attacked.server_failed > 0 {
        missed.push(format!(
            "no legitimate error, on the server's side ({} quiet, {} under attack)",
            quiet.server_failed, attacked.server_failed
        ));
    }
    if quiet.client_failed > 0 || attacked.client_failed > 0 {
        // Not the server's doing, but the run measured less than it claims: say so, apart.
        missed.push(format!(
            "no legitimate error, on this program's side: its own ports or timeouts ({} quiet, {} under attack)",
            quiet.client_failed, attacked.client_failed
        ));
    }
    let ratio = attacked.p99_ms / quiet.p99_ms.max(0.001);
    println!("p99 under attack / quiet: {ratio:.2} (goal ≤ {})", attack.max_p99_ratio);
    if ratio > attack.max_p99_ratio {
        missed.push(format!("p99 within {}× of the quiet run ({ratio:.2}×)", attack.max_p99_ratio));
    }
    if !missed.is_empty() {
        bail!("goals missed: {}", missed.join("; "));
    }
    Ok(())
}

/// What the legitimate clients saw in one phase.
#[derive(Default)]
struct Phase {
    requests: u64,
    /// Requests the server failed: an answer other than 2xx, a connection refused, reset or
    /// closed before the answer's end.
    server_failed: u64,
    /// Requests this program failed on its own side: no local port left, its own timeout.
    client_failed: u64,
    p50_ms: f64,
    p99_ms: f64,
    failures: BTreeMap<String, u64>,
    /// Connections the legitimate clients opened (each resolves the server's name once).
    connects: u64,
    /// What the answer before each change of connection was (status, and whether it asked for
    /// `connection: close`): why a client reconnected, seen from its side.
    reconnects_after: BTreeMap<String, u64>,
}

impl Phase {
    fn failed(&self) -> u64 {
        self.server_failed + self.client_failed
    }

    /// "…, 0 server-side, 153 client-side".
    fn sides(&self) -> String {
        format!("{} server-side, {} client-side", self.server_failed, self.client_failed)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests, {} failed ({}), p50 {:.2} ms, p99 {:.2} ms; {} connections opened",
            self.requests,
            self.failed(),
            self.sides(),
            self.p50_ms,
            self.p99_ms,
            self.connects
        )?;
        if !self.reconnects_after.is_empty() {
            let after: Vec<String> = self.reconnects_after.iter().map(|(k, n)| format!("{n} × {k}")).collect();
            write!(f, "; changes of connection (to a pooled or a new one) after: {}", after.join(", "))?;
        }
        for (what, n) in &self.failures {
            write!(f, "\n  {n} × {what}")?;
        }
        Ok(())
    }
}

/// What one legitimate worker saw.
#[derive(Default)]
struct Seen {
    micros: Vec<u32>,
    server_failed: u64,
    client_failed: u64,
    failures: BTreeMap<String, u64>,
    reconnects_after: BTreeMap<String, u64>,
}

/// The legitimate clients for one phase.
async fn legit(server: &Server, paths: &Arc<Vec<String>>, attack: Attack) -> Phase {
    let until = Instant::now() + attack.phase;
    let connects = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for worker in 0..attack.clients {
        let client = server.counted_client_from(IpAddr::V4(LEGIT), connects.clone());
        let (paths, base) = (paths.clone(), server.named_base());
        workers.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            let mut i = worker * paths.len() / attack.clients.max(1);
            let mut last: Option<(u16, String)> = None;
            while Instant::now() < until {
                let path = &paths[i % paths.len()];
                i += 1;
                let started = Instant::now();
                let fetched = fetch(&client, &format!("{base}{path}")).await;
                seen.micros.push(started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                if !fetched.outcome.is_success() {
                    match fetched.outcome {
                        Outcome::Client(_) => seen.client_failed += 1,
                        Outcome::Answer(_) | Outcome::Server(_) => seen.server_failed += 1,
                    }
                    *seen.failures.entry(fetched.outcome.label()).or_default() += 1;
                }
                if let Some(port) = fetched.local_port {
                    if let Some((before, answer)) = last.take()
                        && before != port
                    {
                        *seen.reconnects_after.entry(answer).or_default() += 1;
                    }
                    let close = if fetched.close { " connection: close" } else { "" };
                    last = Some((port, format!("{}{close}", fetched.outcome.label())));
                }
            }
            seen
        }));
    }
    let mut phase = Phase::default();
    let mut micros = Vec::new();
    for w in workers {
        if let Ok(seen) = w.await {
            micros.extend(seen.micros);
            phase.server_failed += seen.server_failed;
            phase.client_failed += seen.client_failed;
            for (k, v) in seen.failures {
                *phase.failures.entry(k).or_default() += v;
            }
            for (k, v) in seen.reconnects_after {
                *phase.reconnects_after.entry(k).or_default() += v;
            }
        }
    }
    micros.sort_unstable();
    Phase {
        requests: micros.len() as u64,
        p50_ms: percentile(&micros, 50.0),
        p99_ms: percentile(&micros, 99.0),
        connects: connects.load(Ordering::Relaxed),
        ..phase
    }
}

async fn connect(from: Ipv4Addr, to: SocketAddr, receive_buffer: Option<u32>) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(from), 0))?;
    if let Some(bytes) = receive_buffer {
        socket.set_recv_buffer_size(bytes)?;
    }
    socket.connect(to).await
}

/// Resolves when the run stops.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Reads until the server closes `stream` (true) or the run stops (false), a byte every `pace`
/// when one is given.
async fn until_closed(
    stream: &mut TcpStream,
    pace: Option<Duration>,
    stop: &watch::Receiver<bool>,
    read: &AtomicU64,
) -> bool {
    let mut buf = [0u8; 512];
    let reading = async {
        loop {
            let n = match pace {
                Some(pace) => {
                    tokio::time::sleep(pace).await;
                    stream.read(&mut buf[..1]).await
                }
                None => stream.read(&mut buf).await,
            };
            match n {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    read.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        }
    };
    tokio::select! {
        () = reading => true,
        () = stopped(stop.clone()) => false,
    }
}

async fn idle(to: SocketAddr, from: Ipv4Addr, delay: Duration, stop: watch::Receiver<bool>, tally: Arc<Tally>) {
    tokio::time::sleep(delay).await;
    let ignored = AtomicU64::new(0);
    while !*stop.borrow() {
        match connect(from, to, None).await {
            Ok(mut stream) => {
                tally.idle_opened.fetch_add(1, Ordering::Relaxed);
                if !until_closed(&mut stream, None, &stop, &ignored).await {
                    return;
                }
                tally.idle_closed.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                tally.connect_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

async fn slowloris(to: SocketAddr, from: Ipv4Addr, stop: watch::Receiver<bool>, tally: Arc<Tally>) {
    while !*stop.borrow() {
        let Ok(stream) = connect(from, to, None).await else {
            tally.connect_errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(RECONNECT_AFTER).await;
            continue;
        };
        let (mut reader, mut writer) = stream.into_split();
        let trickle = async {
            let _ = writer.write_all(b"GET /v1/daos HTTP/1.1\r\nhost: govdata\r\n").await;
            for i in 0u64.. {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if writer.write_all(format!("x-slow-{i}: 1\r\n").as_bytes()).await.is_err() {
                    break;
                }
            }
        };
        let mut buf = [0u8; 512];
        let closed = async {
            while let Ok(n) = reader.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        };
        tokio::select! {
            () = trickle => {}
            () = closed => {}
            () = stopped(stop.clone()) => return,
        }
        tally.slowloris_cut.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

async fn slow_reader(to: SocketAddr, from: Ipv4Addr, stop: watch::Receiver<bool>, tally: Arc<Tally>) {
    let request = "GET /v2/openapi.json HTTP/1.1\r\nhost: govdata\r\n\r\n".repeat(20);
    while !*stop.borrow() {
        let Ok(mut stream) = connect(from, to, Some(4096)).await else {
            tally.connect_errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(RECONNECT_AFTER).await;
            continue;
        };
        if stream.write_all(request.as_bytes()).await.is_ok()
            && !until_closed(&mut stream, Some(Duration::from_secs(1)), &stop, &tally.reader_bytes).await
        {
            return;
        }
        tally.readers_cut.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

async fn hammering(client: reqwest::Client, base: String, stop: watch::Receiver<bool>, tally: Arc<Tally>) {
    let url = format!("{base}/v1/daos?limit=1");
    while !*stop.borrow() {
        let outcome = match client.get(&url).send().await {
            Ok(r) => r.status().as_u16().to_string(),
            Err(_) => "error".to_owned(),
        };
        *tally.hammer.lock().expect("not poisoned").entry(outcome).or_default() += 1;
    }
}

/// The server's own count of what it refused and cut.
async fn print_refusals(server: &Server) -> anyhow::Result<()> {
    let text = reqwest::Client::new()
        .get(format!("{}/metrics", server.base))
        .header("x-internal-token", INTERNAL_TOKEN)
        .send()
        .await?
        .text()
        .await?;
    let causes: Vec<&str> = text.lines().filter(|l| l.starts_with("govdata_refusals_total{")).collect();
    println!("server refusals and cuts: {}", causes.join(", "));
    Ok(())
}
