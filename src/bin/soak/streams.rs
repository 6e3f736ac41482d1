//! `soak streams`: many open event streams (`GET /v2/stream`) on one `govdata serve`, idle and
//! through a publication. Measures what an open stream costs the server (its RSS growth per
//! stream, idle) and how long after the publication every stream has its first entry: from the
//! entry's `publishedAt`, which the publication stamps as it starts (an upper bound on the time
//! from the commit), and from the publishing process's exit (just after its commit).
//!
//! The publication is `govdata synth` writing a new DAO in another process, as an ingester
//! would. Streams are raw keep-alive connections spread over loopback source addresses
//! (127.0.0.2 …), within the server's per-address cap.
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::process::Command;
use tokio::sync::mpsc;

use super::{Server, percentile};

/// Streams per source address (the server's default cap per address is 256).
const PER_ADDRESS: usize = 200;

pub struct Streams {
    pub streams: usize,
    /// Votes of the synthetic DAO the publication adds.
    pub votes: u64,
}

pub async fn run(govdata: &std::path::Path, url: &str, plan: Streams) -> anyhow::Result<()> {
    let server = Server::start(govdata, url, &[]).await?;
    let to: SocketAddr = server.base.trim_start_matches("http://").parse().context("the server's address")?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = server.rss_mib().context("the server's RSS")?;

    // Each stream reports when it first sees an entry of the new DAO.
    let dao = format!("streambench{}", std::process::id());
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<u128>();
    let marker: Arc<[u8]> = format!("\"daoId\":\"{dao}\"").into_bytes().into();
    let opened = std::time::Instant::now();
    let mut tasks = Vec::with_capacity(plan.streams);
    for i in 0..plan.streams {
        let from = Ipv4Addr::new(127, 0, 0, 2 + (i / PER_ADDRESS) as u8);
        let mut stream = open(from, to, &server.token).await.with_context(|| format!("stream {i}"))?;
        let (tx, marker) = (seen_tx.clone(), marker.clone());
        tasks.push(tokio::spawn(async move {
            let mut buffer = Vec::with_capacity(64 * 1024);
            let mut chunk = vec![0u8; 16 * 1024];
            let mut reported = false;
            loop {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) if !reported => {
                        buffer.extend_from_slice(&chunk[..n]);
                        if buffer.windows(marker.len()).any(|w| w == &marker[..]) {
                            reported = true;
                            let _ =
                                tx.send(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis());
                            buffer = Vec::new();
                        } else if buffer.len() > marker.len() {
                            // Keep only what a marker split across reads may start in.
                            buffer.drain(..buffer.len() - marker.len());
                        }
                    }
                    Ok(_) => {}
                }
            }
        }));
    }
    drop(seen_tx);
    println!("opened {} streams in {:.2} s", plan.streams, opened.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = server.rss_mib().context("the server's RSS")?;
    println!(
        "server RSS {before:.1} MiB before, {idle:.1} MiB with {} idle streams: {:.1} KiB per stream",
        plan.streams,
        (idle - before) * 1024.0 / plan.streams as f64
    );

    let synth = std::time::Instant::now();
    let out = Command::new(govdata)
        .args(["synth", "--votes", &plan.votes.to_string(), "--voters", &plan.votes.to_string(), "--proposals", "20"])
        .args(["--dao", &dao])
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .output()
        .await?;
    let exited_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    if !out.status.success() {
        bail!("govdata synth failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    println!("the publication (govdata synth, {} votes) took {:.2} s", plan.votes, synth.elapsed().as_secs_f64());
    let published_ms = published_at(&server, &dao).await?;

    // From the entries' `publishedAt` (stamped as the publication starts: an upper bound on the
    // time from the commit) and from the publishing process's exit (after its commit: about a
    // lower bound; a stream that had the entry before the exit counts 0).
    let (mut since_stamp, mut since_exit) = (Vec::with_capacity(plan.streams), Vec::with_capacity(plan.streams));
    let micros = |ms: u128| u32::try_from(ms * 1000).unwrap_or(u32::MAX);
    while since_stamp.len() < plan.streams {
        match tokio::time::timeout(Duration::from_secs(30), seen.recv()).await {
            Ok(Some(at)) => {
                since_stamp.push(micros(at.saturating_sub(published_ms)));
                since_exit.push(micros(at.saturating_sub(exited_ms)));
            }
            Ok(None) | Err(_) => break,
        }
    }
    let after = server.rss_mib().context("the server's RSS")?;
    println!("{} of {} streams had the publication's first entry", since_stamp.len(), plan.streams);
    for (what, latencies) in [("after publishedAt", &mut since_stamp), ("after the publisher exited", &mut since_exit)]
    {
        latencies.sort_unstable();
        println!(
            "  {what}: p50 {:.0} ms, p99 {:.0} ms, last {:.0} ms",
            percentile(latencies, 50.0),
            percentile(latencies, 99.0),
            percentile(latencies, 100.0)
        );
    }
    println!("server RSS {after:.1} MiB after the fan-out");
    for task in tasks {
        task.abort();
    }
    if since_stamp.len() < plan.streams {
        bail!("{} streams never got the publication", plan.streams - since_stamp.len());
    }
    Ok(())
}

/// A stream from `from` to `to`, its head and `retry:` read.
async fn open(from: Ipv4Addr, to: SocketAddr, token: &str) -> anyhow::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.into(), 0))?;
    let mut stream = socket.connect(to).await?;
    let request = format!(
        "GET /v2/stream HTTP/1.1\r\nhost: {to}\r\nx-service-api-token: {token}\r\naccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(7).any(|w| w == b"retry: ") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await??;
        if n == 0 {
            bail!("closed before the stream began: {}", String::from_utf8_lossy(&head));
        }
        head.extend_from_slice(&byte[..n]);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        bail!("not a stream: {}", String::from_utf8_lossy(&head));
    }
    Ok(stream)
}

/// When the publication that created `dao` was published (its feed entries' `publishedAt`), in
/// epoch milliseconds.
async fn published_at(server: &Server, dao: &str) -> anyhow::Result<u128> {
    let url = format!("{}/v2/feed?daoId={dao}&limit=1", server.base);
    let body: serde_json::Value = server.client().get(&url).send().await?.json().await?;
    let text = body["data"]["items"][0]["publishedAt"].as_str().with_context(|| format!("no entry: {body}"))?;
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)?;
    Ok(u128::try_from(at.unix_timestamp_nanos() / 1_000_000)?)
}
