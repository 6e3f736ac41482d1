//! Several govdata processes on one store, as an operator runs them behind a load balancer: two
//! `govdata serve` and a `govdata ingest` in a third process. A publication reaches both servers'
//! caches within the watch's bound, and a revocation holds on the next request in both.
use std::time::{Duration, Instant};

use govdata::edge::serving::WATCH_INTERVAL;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::fixtures::testgov::{DAO, big, registry_file, world};
use crate::helpers::INTERNAL_TOKEN;
use crate::on_both_backends;

/// A `govdata serve` process and the address it listens on.
pub struct Server {
    pub child: Child,
    pub base: String,
    /// Sends the internal token.
    pub client: reqwest::Client,
}

impl Server {
    pub async fn start(database_url: &str) -> Self {
        Self::start_at(database_url, "127.0.0.1:0").await
    }

    /// A server listening on `addr` (a restarted server takes its predecessor's port).
    pub async fn start_at(database_url: &str, addr: &str) -> Self {
        Self::start_with(database_url, addr, &[]).await
    }

    /// A server listening on `addr`, with the environment variables `env` set too.
    pub async fn start_with(database_url: &str, addr: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_govdata"))
            .args(["serve", "--addr", addr, "--no-sample"])
            .envs(env.iter().copied())
            .env("DATABASE_URL", database_url)
            .env("GOVDATA_INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start govdata serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let base = loop {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("the server starts within 30 s")
                .expect("read stderr")
                .expect("the server says where it listens");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().expect("an address").to_owned();
            }
        };
        // Keep reading, so a full pipe never blocks the server.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("x-internal-token", reqwest::header::HeaderValue::from_static(INTERNAL_TOKEN));
        Self { child, base, client: reqwest::Client::builder().default_headers(headers).build().unwrap() }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(format!("{}{path}", self.base)).send().await.expect("request");
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn get_with_token(&self, path: &str, token: &str) -> u16 {
        let r = reqwest::Client::new()
            .get(format!("{}{path}", self.base))
            .header("x-service-api-token", token)
            .send()
            .await
            .expect("request");
        r.status().as_u16()
    }
}

/// The value of the metric line `series` (name and labels, as exposed) of `server`.
async fn metric(server: &Server, series: &str) -> f64 {
    let text = server.client.get(format!("{}/metrics", server.base)).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.parse().expect("a number"))
}

pub fn govdata(database_url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_govdata"));
    c.args(args).env("DATABASE_URL", database_url).env("RUST_LOG", "warn").kill_on_drop(true);
    c
}

pub async fn run(mut command: Command) -> String {
    let out = command.output().await.expect("run govdata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

on_both_backends!(replica: two_servers_and_an_ingester, |backend: Backend| async move {
    let w = world(backend).await;
    let url = w.app.database_url.clone();
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_file(&dir, &w.hub, &w.forum);
    let ingest = || govdata(&url, &["ingest", "--registry", registry.to_str().unwrap()]);
    run(ingest()).await;

    let servers = [Server::start(&url).await, Server::start(&url).await];
    let key = govdata::store::keys::proposal_key(DAO, "snapshot", &big());
    let path = format!("/v2/proposals/{key}");
    for s in &servers {
        let (status, first) = s.get(&path).await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["data"]["title"], "Fund the grants program");
        let (_, again) = s.get(&path).await;
        assert_eq!(again["meta"]["freshness"]["cacheStatus"], "memory_cache", "cached in each server");
    }

    // Upstream renames the proposal; a third process ingests and publishes it.
    w.hub_data.lock().unwrap().proposals[0].title = "Fund the grants program, amended".to_owned();
    run(ingest()).await;
    let published = Instant::now();
    let bound = WATCH_INTERVAL + Duration::from_secs(1);
    let deadline = tokio::time::Instant::from_std(published) + bound;
    for (i, s) in servers.iter().enumerate() {
        let serves_the_publication = async {
            loop {
                let (_, body) = s.get(&path).await;
                if body["data"]["title"] == "Fund the grants program, amended" {
                    assert_eq!(body["meta"]["freshness"]["cacheStatus"], "fresh", "the old answer was dropped");
                    return;
                }
                assert_eq!(body["meta"]["freshness"]["cacheStatus"], "memory_cache", "until then, the cached answer");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout_at(deadline, serves_the_publication).await.unwrap_or_else(|_| {
            panic!("server {i} still serves the old revision {bound:?} after the ingester exited (the watch's bound)")
        });
        eprintln!("server {i} served the publication {:?} after the ingester exited", published.elapsed());
        // On PostgreSQL the publication's commit woke the server (NOTIFY); SQLite has no such
        // channel and relies on the tick.
        let heard = metric(s, "govdata_publication_notifications_total").await;
        match backend {
            crate::helpers::Backend::Postgres | crate::helpers::Backend::Replica => {
                assert!(heard >= 1.0, "server {i} heard of the publication")
            }
            crate::helpers::Backend::Sqlite => assert_eq!(heard, 0.0, "server {i}"),
        }
    }

    // A partner token, seen by both servers (they hold it in memory), revoked by the command:
    // refused by both on the very next request.
    let token = run(govdata(&url, &["tokens", "create", "--name", "lb", "--scopes", "v2:paid:*"])).await;
    let token = token.trim();
    for s in &servers {
        assert_eq!(s.get_with_token(&path, token).await, 200);
    }
    tokio::time::sleep(2 * WATCH_INTERVAL).await;
    for s in &servers {
        assert_eq!(s.get_with_token(&path, token).await, 200, "answered from the server's tokens in memory");
    }
    let list = run(govdata(&url, &["tokens", "list"])).await;
    let id = list.lines().find(|l| l.contains(" lb ")).and_then(|l| l.split_whitespace().next()).unwrap().to_owned();
    run(govdata(&url, &["tokens", "revoke", &id])).await;
    for s in &servers {
        assert_eq!(s.get_with_token(&path, token).await, 401, "revoked on the next request");
    }
});

// A token's rate limit holds across two servers on one store: they exchange counts every
// `rate::SYNC_INTERVAL`, so requests spaced wider than two intervals are counted exactly.
on_both_backends!(replica: a_rate_limit_holds_across_processes, |backend: Backend| async move {
    let url = crate::helpers::sample_database(backend);
    let servers = [Server::start(&url).await, Server::start(&url).await];
    let token =
        run(govdata(&url, &["tokens", "create", "--name", "capped", "--scopes", "v2:paid:*", "--rate", "4/1h"])).await;
    let token = token.trim();
    let mut statuses = Vec::new();
    for n in 0..8 {
        statuses.push(servers[n % 2].get_with_token("/v2/daos?limit=1", token).await);
        tokio::time::sleep(3 * govdata::edge::rate::SYNC_INTERVAL + Duration::from_millis(50)).await;
    }
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429, 429, 429], "4 per hour across both servers");
});

// SIGTERM under load: `/readyz` turns 503 at once and answers say `connection: close`; the
// clients, like a load balancer, stop sending once they see it; every request sent is answered
// 200 (none fails); the listener closes after the drain delay, and the process exits 0.
on_both_backends!(replica: sigterm_drains_in_flight_requests_and_exits_0, |backend: Backend| async move {
    let url = crate::helpers::sample_database(backend);
    let mut child = Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(["serve", "--addr", "127.0.0.1:0", "--no-sample", "--drain-delay", "1s"])
        .env("DATABASE_URL", &url)
        .env("GOVDATA_INTERNAL_TOKEN", INTERNAL_TOKEN)
        .env("GOVDATA_RESPONSE_CACHE_MB", "0")
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start govdata serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("the server says where it listens");
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let log = tokio::spawn(async move {
        let mut all = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The load balancer: polls readiness and stops routing here once it fails.
    let balancer = {
        let (base, stop) = (base.clone(), stop.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            loop {
                let r = client.get(format!("{base}/readyz")).send().await.expect("accepting until after the delay");
                if r.status() == 503 {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let load: Vec<_> = (0..16)
        .map(|_| {
            let (base, stop) = (base.clone(), stop.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut answered = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = client
                        .get(format!("{base}/v2/proposals?limit=50"))
                        .header("x-internal-token", INTERNAL_TOKEN)
                        .send()
                        .await
                        .expect("every request sent is answered");
                    let closing = r.headers().get("connection").is_some_and(|v| v == "close");
                    answered.push((r.status().as_u16(), closing));
                }
                answered
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let pid = child.id().expect("running").to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    tokio::time::timeout(Duration::from_secs(1), balancer)
        .await
        .expect("readiness fails at once: /readyz is 503 within 1 s of SIGTERM")
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "exit status {status:?}");
    let mut answered = Vec::new();
    for task in load {
        answered.extend(task.await.unwrap());
    }
    assert!(answered.len() > 16, "under load: {} answered", answered.len());
    assert!(answered.iter().all(|(s, _)| *s == 200), "every answer was a 200: {answered:?}");
    assert!(answered.iter().any(|(_, closing)| *closing), "answers while draining close their connection");
    let refused = reqwest::Client::new().get(format!("{base}/healthz")).send().await;
    assert!(refused.is_err_and(|e| e.is_connect()), "the listener is closed");
    let log = log.await.unwrap();
    assert!(log.contains("drained"), "{log}");
});

// Streams on two servers while a third process publishes: each stream gets exactly the entries
// `/v2/feed` lists, and each server read them once per publication for all its streams (its
// `govdata_stream_store_reads_total`), not once per stream. SIGTERM then ends a server's
// streams with `shutting_down`.
on_both_backends!(replica: streams_fan_out_one_read_per_publication, |backend: Backend| async move {
    use crate::stream::Sse;
    let w = world(backend).await;
    let url = w.app.database_url.clone();
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_file(&dir, &w.hub, &w.forum);
    let servers = [Server::start(&url).await, Server::start(&url).await];
    let mut streams = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        for _ in 0..[5, 2][i] {
            let response = s.client.get(format!("{}/v2/stream", s.base)).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let mut sse = Sse::of(response);
            assert!(sse.next(Duration::from_secs(5)).await.unwrap().retry.is_some());
            streams.push((i, sse));
        }
    }
    run(govdata(&url, &["ingest", "--registry", registry.to_str().unwrap()])).await;
    let (_, page) = servers[0].get("/v2/feed?limit=200").await;
    let mut all: Vec<Value> = Vec::new();
    let mut after = "0".to_owned();
    loop {
        let (status, page) = servers[0].get(&format!("/v2/feed?limit=200&after={after}")).await;
        assert_eq!(status, 200, "{page}");
        let items = page["data"]["items"].as_array().unwrap().clone();
        let Some(last) = items.last() else { break };
        after = last["sequence"].as_str().unwrap().to_owned();
        all.extend(items);
    }
    assert!(all.len() > 200, "more than one read's worth: {} ({page})", all.len());
    for (i, sse) in &mut streams {
        let got = sse.entries(all.len()).await;
        let data: Vec<Value> = got.iter().map(|e| e.json()).collect();
        assert_eq!(data, all, "server {i}: every entry, in order, once");
    }
    for (i, s) in servers.iter().enumerate() {
        let reads = metric(s, r#"govdata_stream_store_reads_total{reason="publication"}"#).await;
        assert_eq!(reads as usize, all.len() / 200 + 1, "server {i}: one read of the publication for all its streams");
        let resumes = metric(s, r#"govdata_stream_store_reads_total{reason="resume"}"#).await;
        assert_eq!(resumes as usize, [5, 2][i], "server {i}: one start-up read per stream");
        assert_eq!(metric(s, "govdata_streams_open").await as usize, [5, 2][i]);
    }

    // Draining ends a server's streams, saying so; the client resumes elsewhere.
    let pid = servers[1].child.id().expect("running").to_string();
    let mut kill = Command::new("kill");
    kill.args(["-TERM", &pid]);
    run(kill).await;
    for (i, sse) in streams.iter_mut().filter(|(i, _)| *i == 1) {
        let ended = sse.next_event(Duration::from_secs(10)).await.expect("an end event");
        assert_eq!(ended.event.as_deref(), Some("stream_ended"), "server {i}: {ended:?}");
        assert_eq!(ended.json()["reason"], "shutting_down");
        assert_eq!(ended.json()["lastSequence"], all.last().unwrap()["sequence"]);
        assert!(sse.next(Duration::from_secs(10)).await.is_none());
    }
});

/// The download of `path` from `server`, asked again while the file is being built (503), until
/// it is served whole or `within` passes: the bytes.
async fn download_within(server: &Server, path: &str, within: Duration) -> Vec<u8> {
    let deadline = Instant::now() + within;
    loop {
        let r = server.client.get(format!("{}{path}", server.base)).send().await.expect("request");
        match r.status().as_u16() {
            200 => return r.bytes().await.expect("the whole file").to_vec(),
            503 => assert!(Instant::now() < deadline, "{path} not served within {within:?}"),
            status => panic!("{path}: {status} {}", r.text().await.unwrap_or_default()),
        }
    }
}

// A builder killed mid-build (SIGKILL) does not block its file: its claim's heartbeat stops,
// and the surviving process takes the claim over once it is `TAKEOVER_AFTER` old and serves
// the download within that and a build.
on_both_backends!(replica: a_killed_builders_file_is_taken_over_by_the_survivor, |backend: Backend| async move {
    use govdata::exports::claim::{HEARTBEAT, TAKEOVER_AFTER};
    use govdata::store::exports::{ExportState, FileKey, get};
    let url = crate::helpers::fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    // Enough votes for a build to take a while, few enough to stay fast.
    let spec = govdata::sample::synth::SynthSpec { votes: 60_000, voters: 6_000, proposals: 20, ..Default::default() };
    govdata::sample::synth::synth(&db, &spec).await.expect("synth");
    let dir = tempfile::tempdir().unwrap();
    let env = [("GOVDATA_EXPORT_DIR", dir.path().to_str().unwrap())];
    let mut a = Server::start_with(&url, "127.0.0.1:0", &env).await;
    let b = Server::start_with(&url, "127.0.0.1:0", &env).await;
    let patience = Duration::from_secs(120);
    // What one build of the table takes here: the survivor builds it in another text format.
    let started = Instant::now();
    download_within(&b, &format!("/v2/exports/{}/votes.ndjson", spec.dao_id), patience).await;
    let build = started.elapsed();

    let path = format!("/v2/exports/{}/votes.csv", spec.dao_id);
    let asked = a.client.get(format!("{}{path}", a.base)).send();
    let asked = tokio::spawn(asked);
    let key = FileKey { dao_id: &spec.dao_id, table: "votes", format: "csv" };
    let builder_a = format!("{}-", a.child.id().expect("running"));
    let held_by_a = |row: Option<govdata::store::exports::ExportFileRow>| {
        row.is_some_and(|r| r.state == ExportState::Building && r.builder.is_some_and(|b| b.starts_with(&builder_a)))
    };
    let deadline = Instant::now() + patience;
    while !held_by_a(get(&db, key).await.unwrap()) {
        assert!(Instant::now() < deadline, "A never claimed the build");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let killed = Instant::now();
    let _ = asked.await;
    assert!(held_by_a(get(&db, key).await.unwrap()), "A was killed mid-build, holding the claim");

    let bytes = download_within(&b, &path, patience).await;
    let took = killed.elapsed();
    let bound = TAKEOVER_AFTER + build * 2 + HEARTBEAT;
    eprintln!("a build takes {build:?}; served {took:?} after the kill (bound {bound:?})");
    assert!(took <= bound, "served {took:?} after the kill; a build takes {build:?}, the bound is {bound:?}");
    let rows = bytes.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(rows as u64, spec.votes + 1, "every vote and the header");
    let row = get(&db, key).await.unwrap().expect("catalogued");
    assert_eq!((row.state, row.rows as u64), (ExportState::Ready, spec.votes));
});
