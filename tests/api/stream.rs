//! The feed as a stream (`GET /v2/stream`, Server-Sent Events), read the way a client reads it:
//! over HTTP, frame by frame. Each stream must carry exactly the entries `/v2/feed` lists after
//! its resume point, in order, each once, live as publications commit, across a server restart,
//! and end with `stream_ended` when the server ends it.
use std::time::Duration;

use govdata::contract::feed::FEED_RETENTION;
use govdata::ingest::run_once;
use serde_json::Value;

use crate::feed::entries_after;
use crate::fixtures::testgov::{DAO, options, world_with};
use crate::helpers::{INTERNAL_TOKEN, TestApp, spawn_app_with};
use crate::on_both_backends;

/// One event as a client sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub retry: Option<u64>,
    /// A comment line (keep-alive).
    pub comment: bool,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().expect("data")).expect("data is JSON")
    }
}

/// A stream being read.
pub struct Sse {
    pub response: reqwest::Response,
    buffer: String,
}

impl Sse {
    /// Opens `path` with the internal token and `headers`; the answer must be a stream.
    pub async fn open(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Sse {
        let sse = Self::request(app, path, headers).await;
        assert_eq!(sse.response.status(), 200, "{path}");
        sse
    }

    pub async fn request(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Sse {
        app.sync().await;
        let mut request = app.anonymous.get(app.url(path)).header("x-internal-token", INTERNAL_TOKEN);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Self::of(request.send().await.expect("request"))
    }

    /// Reads `response` as a stream.
    pub fn of(response: reqwest::Response) -> Sse {
        Sse { response, buffer: String::new() }
    }

    /// The next event, or `None` when the server closed the stream. Fails after `within`.
    pub async fn next(&mut self, within: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                return Some(parse(&block));
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("no event within {within:?}; buffered: {:?}", self.buffer))
                .expect("the stream reads");
            match chunk {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).expect("UTF-8")),
                None => {
                    assert!(self.buffer.is_empty(), "the stream ended inside an event: {:?}", self.buffer);
                    return None;
                }
            }
        }
    }

    /// The next event that is not a keep-alive comment.
    pub async fn next_event(&mut self, within: Duration) -> Option<SseEvent> {
        loop {
            match self.next(within).await {
                Some(e) if e.comment => continue,
                other => return other,
            }
        }
    }

    /// The next `n` entries (events with an id), failing on anything else.
    pub async fn entries(&mut self, n: usize) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while out.len() < n {
            let e = self.next_event(Duration::from_secs(20)).await.expect("the stream goes on");
            assert!(e.id.is_some(), "an entry, got {e:?} after {} entries", out.len());
            out.push(e);
        }
        out
    }
}

fn parse(block: &str) -> SseEvent {
    let mut event = SseEvent::default();
    for line in block.lines().filter(|l| !l.is_empty()) {
        if line.starts_with(':') {
            event.comment = true;
            continue;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "id" => event.id = Some(value.to_owned()),
            "event" => event.event = Some(value.to_owned()),
            "data" => {
                assert!(event.data.is_none(), "one line of data per event: {block:?}");
                event.data = Some(value.to_owned());
            }
            "retry" => event.retry = Some(value.parse().expect("retry is a number")),
            other => panic!("unknown field {other:?} in {block:?}"),
        }
    }
    event
}

/// Each streamed entry is its `/v2/feed` entry: id = sequence, event = kind, data = the entry.
fn assert_same(streamed: &[SseEvent], listed: &[Value]) {
    assert_eq!(streamed.len(), listed.len());
    for (s, l) in streamed.iter().zip(listed) {
        assert_eq!(s.id.as_deref(), l["sequence"].as_str());
        assert_eq!(s.event.as_deref(), l["kind"].as_str());
        assert_eq!(&s.json(), l);
    }
}

fn quick_streams(args: &mut govdata::config::ServeArgs) {
    args.limits.stream_keep_alive = Duration::from_millis(300);
    args.limits.stream_max_duration = None;
}

on_both_backends!(replica: streams_the_feed_live_and_resumes_exactly, |backend: Backend| async move {
    let w = world_with(backend, quick_streams).await;
    // Opened before anything is published: the stream starts from now.
    let mut live = Sse::open(&w.app, "/v2/stream", &[]).await;
    let headers = live.response.headers().clone();
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-store");
    let hello = live.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(hello.retry, Some(govdata::contract::feed::STREAM_RETRY_MS), "{hello:?}");
    // Nothing to send: keep-alive comments.
    assert!(live.next(Duration::from_secs(5)).await.unwrap().comment);
    // Tier plus: a partner token with the scope opens it (and no cache may keep it); a standard
    // scope is refused.
    for (scope, status) in [("v2:paid:plus", 200), ("v2:paid:standard", 403)] {
        let (_, token) = crate::access::partner_token(&w.app, &[scope]).await;
        let response =
            w.app.anonymous.get(w.app.url("/v2/stream")).header("x-service-api-token", &token).send().await.unwrap();
        assert_eq!(response.status(), status, "{scope}");
        if status == 200 {
            assert_eq!(response.headers()["cache-control"], "no-store", "{scope}");
        }
    }

    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let all = entries_after(&w.app, "0").await;
    assert!(all.len() > 250, "more than a page of the hub: {}", all.len());
    let got = live.entries(all.len()).await;
    assert_same(&got, &all);

    // From the oldest kept; and the header wins over `after` (an EventSource reconnects with
    // the URL it opened and the last id it saw).
    let mut from_start = Sse::open(&w.app, "/v2/stream?after=0", &[]).await;
    from_start.next(Duration::from_secs(5)).await;
    assert_same(&from_start.entries(all.len()).await, &all);
    let tenth = all[9]["sequence"].as_str().unwrap();
    let mut resumed = Sse::open(&w.app, "/v2/stream?after=0", &[("last-event-id", tenth)]).await;
    resumed.next(Duration::from_secs(5)).await;
    assert_same(&resumed.entries(all.len() - 10).await, &all[10..]);

    // Filters, as the list's.
    let mut signals = Sse::open(&w.app, "/v2/stream?after=0&kinds=signal_raised,voting_started", &[]).await;
    signals.next(Duration::from_secs(5)).await;
    let wanted: Vec<Value> =
        all.iter().filter(|e| e["kind"] == "signal_raised" || e["kind"] == "voting_started").cloned().collect();
    assert!(!wanted.is_empty());
    assert_same(&signals.entries(wanted.len()).await, &wanted);
    for other in ["/v2/stream?after=0&daoId=uniswap", "/v2/stream?after=0&daoId=Not%20A%20Dao"] {
        let mut none = Sse::open(&w.app, other, &[]).await;
        none.next(Duration::from_secs(5)).await;
        let next = none.next(Duration::from_secs(5)).await.unwrap();
        assert!(next.comment, "{other}: nothing of another DAO, only keep-alive: {next:?}");
    }

    // A second publication reaches every open stream: exactly its entries, after the first's.
    let newest = all.last().unwrap()["sequence"].as_str().unwrap().to_owned();
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    let run = run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert!(run.published.revision_id.is_some(), "{run}");
    let new = entries_after(&w.app, &newest).await;
    assert!(!new.is_empty());
    assert_same(&live.entries(new.len()).await, &new);
    assert_same(&from_start.entries(new.len()).await, &new);
    assert_same(&resumed.entries(new.len()).await, &new);
    let new_wanted: Vec<Value> =
        new.iter().filter(|e| e["kind"] == "signal_raised" || e["kind"] == "voting_started").cloned().collect();
    assert_same(&signals.entries(new_wanted.len()).await, &new_wanted);
    // And nothing more: the next thing on the stream is a keep-alive.
    assert!(live.next(Duration::from_secs(5)).await.unwrap().comment);
    assert!(new.iter().all(|e| e["daoId"] == DAO));
});

on_both_backends!(replica: stream_resumes_on_another_server_after_a_restart, |backend: Backend| async move {
    let w = world_with(backend, quick_streams).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let all = entries_after(&w.app, "0").await;
    let mut first = Sse::open(&w.app, "/v2/stream?after=0", &[]).await;
    first.next(Duration::from_secs(5)).await;
    let part = first.entries(7).await;
    drop(first);
    // Another process on the same store (the server the stream was on may be gone).
    let other = spawn_app_with(w.app.database_url.clone(), quick_streams).await;
    let last = part.last().unwrap().id.clone().unwrap();
    let mut rest = Sse::open(&other, "/v2/stream", &[("last-event-id", &last)]).await;
    rest.next(Duration::from_secs(5)).await;
    let rest = rest.entries(all.len() - 7).await;
    let streamed: Vec<SseEvent> = part.into_iter().chain(rest).collect();
    assert_same(&streamed, &all);
});

// A client that reads slowly falls behind the broadcast (here the hub keeps one batch): the
// stream catches up from the store where it left off, and the client still gets every entry
// once, in order. The client holds a 4 KiB receive buffer and reads nothing until two
// publications (the first one several batches) are done.
on_both_backends!(replica: a_slow_reader_falls_behind_and_catches_up, |backend: Backend| async move {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let w = world_with(backend, |args| {
        quick_streams(args);
        args.limits.stream_backlog_batches = 1;
    })
    .await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(w.app.addr).await.unwrap();
    // HTTP/1.0: the answer is delimited by the close, not chunked.
    let request = format!("GET /v2/stream?after=0 HTTP/1.0\r\nx-internal-token: {INTERNAL_TOKEN}\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    w.app.sync().await;
    let all = entries_after(&w.app, "0").await;
    assert!(all.len() > 400, "the first publication is several of the hub's batches: {}", all.len());

    let mut text = String::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let ids = loop {
        let n = tokio::time::timeout(Duration::from_secs(20), client.read(&mut chunk)).await.expect("reads").unwrap();
        assert!(n > 0, "the stream goes on: {:.300}", text);
        text.push_str(std::str::from_utf8(&chunk[..n]).unwrap());
        let ids: Vec<&str> = text.split("\nid: ").skip(1).filter_map(|rest| rest.split('\n').next()).collect();
        if ids.len() >= all.len() {
            break ids.into_iter().map(str::to_owned).collect::<Vec<_>>();
        }
    };
    assert!(text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"), "{:.200}", text);
    let expected: Vec<&str> = all.iter().map(|e| e["sequence"].as_str().unwrap()).collect();
    assert_eq!(ids, expected, "every entry once, in order, though the client fell behind");
});

on_both_backends!(replica: stream_refuses_what_it_cannot_resume, |backend: Backend| async move {
    let w = world_with(backend, quick_streams).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    for (path, header, name, location) in [
        ("/v2/stream?after=abc", None, "after", "query"),
        ("/v2/stream?kinds=nope", None, "kinds", "query"),
        ("/v2/stream", Some("abc"), "Last-Event-ID", "header"),
        ("/v2/stream?after=0", Some("-1"), "Last-Event-ID", "header"),
    ] {
        let headers: Vec<(&str, &str)> = header.map(|h| ("last-event-id", h)).into_iter().collect();
        let sse = Sse::request(&w.app, path, &headers).await;
        assert_eq!(sse.response.status(), 400, "{path} {header:?}");
        let body: Value = sse.response.json().await.unwrap();
        assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
        assert_eq!(body["errors"][0]["name"], name, "{body}");
        assert_eq!(body["errors"][0]["in"], location, "{body}");
    }

    // A resume point pruning passed is refused: the client resynchronises from the lists.
    let later = govdata::contract::time::now_ms() + FEED_RETENTION.max_ms() + 1;
    govdata::store::feed::prune(&w.db, later).await.unwrap();
    let sse = Sse::request(&w.app, "/v2/stream", &[("last-event-id", "1")]).await;
    assert_eq!(sse.response.status(), 400);
    let body: Value = sse.response.json().await.unwrap();
    assert_eq!(body["code"], "INVALID_CURSOR", "{body}");
    assert_eq!(body["errors"][0]["name"], "Last-Event-ID", "{body}");
    assert_eq!(body["errors"][0]["in"], "header", "{body}");
    assert!(body["detail"].as_str().unwrap().contains("without `Last-Event-ID`"), "{body}");
    // The start is never refused.
    let mut start = Sse::open(&w.app, "/v2/stream?after=0", &[]).await;
    start.next(Duration::from_secs(5)).await;
    assert!(start.next(Duration::from_secs(5)).await.unwrap().comment);
});

on_both_backends!(replica: the_server_ends_a_stream_at_its_longest_duration, |backend: Backend| async move {
    const LONGEST: Duration = Duration::from_millis(1500);
    let w = world_with(backend, |args| {
        args.limits.stream_keep_alive = Duration::from_secs(60);
        args.limits.stream_max_duration = Some(LONGEST);
    })
    .await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let all = entries_after(&w.app, "0").await;
    let opened = std::time::Instant::now();
    let mut sse = Sse::open(&w.app, "/v2/stream?after=0", &[]).await;
    sse.next(Duration::from_secs(5)).await;
    // The backlog is replayed until the longest duration ends the stream. On a busy machine that
    // can come before the backlog's last entry (it did once in CI, after 2,000 of them), so the
    // entries sent are the feed's first ones, in order, however many they are, and the end says
    // where to resume: after the last of them.
    let mut sent = Vec::new();
    let ended = loop {
        let event = sse.next_event(Duration::from_secs(20)).await.expect("an end event");
        if event.id.is_none() {
            break event;
        }
        sent.push(event);
    };
    assert!(opened.elapsed() >= LONGEST, "the stream ended after {:?}, before its longest duration", opened.elapsed());
    assert!(sent.len() <= all.len(), "{} entries sent of the {} listed", sent.len(), all.len());
    assert_same(&sent, &all[..sent.len()]);
    assert_eq!(ended.event.as_deref(), Some("stream_ended"), "{ended:?}");
    let data = ended.json();
    assert_eq!(data["reason"], "max_duration", "{data}");
    // Last-Event-ID stays the last entry's: the end has no id, and names that entry.
    assert_eq!(data["lastSequence"].as_str(), sent.last().and_then(|e| e.id.as_deref()), "{data}");
    assert!(sse.next(Duration::from_secs(5)).await.is_none(), "then the stream closes");
});

// ---------------------------------------------------------------------------------------------
// The reference client: the `eventsource` package, driven by `tests/chain/stream.mjs`.

/// The script's arguments that make it listen for every event the stream sends.
fn every_event() -> Vec<String> {
    let kinds = govdata::contract::feed::FeedKind::ALL.iter().map(|k| k.as_str());
    kinds
        .chain([govdata::contract::feed::STREAM_ENDED_EVENT])
        .flat_map(|k| ["--event".to_owned(), k.to_owned()])
        .collect()
}

/// Reads the script's progress on stderr until it holds at least `n` entries; the rest of its
/// stderr is drained (and kept for a failure's message) by a task of its own.
async fn entries_seen(
    mut lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    n: usize,
) -> tokio::task::JoinHandle<String> {
    let mut log = String::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the client got {n} entries within 60 s: {log}"))
            .expect("stderr reads")
            .unwrap_or_else(|| panic!("the client ended early: {log}"));
        log.push_str(&line);
        log.push('\n');
        let held = line.strip_prefix("[stream.mjs] entries ").and_then(|r| r.split(' ').next()?.parse::<usize>().ok());
        if held.is_some_and(|h| h >= n) {
            break;
        }
    }
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            log.push_str(&line);
            log.push('\n');
        }
        log
    })
}

async fn result_of(client: tokio::process::Child, log: tokio::task::JoinHandle<String>) -> Value {
    let out = tokio::time::timeout(Duration::from_secs(120), client.wait_with_output()).await.expect("ends").unwrap();
    let log = log.await.unwrap();
    assert!(out.status.success(), "stream.mjs failed: {log}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {log}"))
}

// The client reads the whole feed while its server is killed (SIGKILL) and another takes the
// port, and while a publication lands: it reconnects by itself with `Last-Event-ID`, and what it
// got is the feed, each entry once, in order.
on_both_backends!(replica: the_eventsource_client_resumes_through_a_restart_without_a_gap, |backend: Backend| async move {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    use crate::fixtures::chain::{require_toolkit, spawn_script};
    use crate::processes::{Server, govdata, run};
    if !require_toolkit().await {
        return;
    }
    let w = world_with(backend, quick_streams).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let url = w.app.database_url.clone();
    let token = run(govdata(&url, &["tokens", "create", "--name", "es", "--scopes", "v2:paid:plus"])).await;
    let first = Server::start(&url).await;
    let addr = first.base.trim_start_matches("http://").to_owned();
    let mut args = vec![
        "--url".to_owned(),
        format!("{}/v2/stream?after=0", first.base),
        "--header".to_owned(),
        format!("x-service-api-token:{}", token.trim()),
    ];
    args.extend(every_event());
    let mut client = spawn_script("stream.mjs", &args.iter().map(String::as_str).collect::<Vec<_>>());
    let lines = tokio::io::BufReader::new(client.stderr.take().unwrap()).lines();
    let log = entries_seen(lines, 20).await;

    let Server { mut child, .. } = first;
    child.kill().await.expect("killed");
    let _second = Server::start_at(&url, &addr).await;
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    let published = run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert!(published.published.revision_id.is_some(), "{published}");
    let all = entries_after(&w.app, "0").await;
    let mut stdin = client.stdin.take().unwrap();
    stdin.write_all(format!("count {}\n", all.len()).as_bytes()).await.unwrap();
    let result = result_of(client, log).await;

    let got = result["entries"].as_array().unwrap();
    let ids: Vec<&str> = got.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let expected: Vec<&str> = all.iter().map(|e| e["sequence"].as_str().unwrap()).collect();
    assert_eq!(ids, expected, "every entry once, in order, through the restart");
    for (e, listed) in got.iter().zip(&all) {
        assert_eq!(&e["data"], listed);
        assert_eq!(e["type"], listed["kind"]);
    }
    let requests = result["requests"].as_array().unwrap();
    assert!(requests.len() >= 2, "it reconnected: {requests:?}");
    let resumed = requests.iter().rev().find(|r| r["status"] == 200).unwrap();
    let from: usize = ids.iter().position(|id| Some(*id) == resumed["lastEventId"].as_str()).expect("a sent id");
    assert!(from >= 19, "resumed after what it had: {resumed}");
});

// The client pays for its stream with `@x402/fetch` as EventSource's `fetch`, on a local chain:
// each payment holds the stream for the paid time, the stream ends with `payment_expired`, the
// reconnection is answered 402, the client pays again and resumes after the last entry. The
// payee is paid exactly twice.
#[tokio::test]
async fn the_eventsource_client_pays_for_its_stream_with_x402_fetch() {
    use crate::fixtures::chain::{PAYER_KEY, PayingRig, require_toolkit, spawn_script};
    if !require_toolkit().await {
        return;
    }
    let rig = PayingRig::start_with(|a| {
        a.payments.stream_paid_seconds = 2;
        a.limits.stream_max_duration = None;
    })
    .await;
    let before = rig.balance().await;
    let (_, listed) = rig.app.get_json("/v2/feed?daoId=dimo&kinds=proposal_closed").await;
    let listed = listed["data"]["items"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 4);
    let mut args = vec![
        "--url".to_owned(),
        rig.app.url("/v2/stream?after=0&daoId=dimo&kinds=proposal_closed"),
        "--key".to_owned(),
        PAYER_KEY.to_owned(),
        "--count".to_owned(),
        "4".to_owned(),
        "--ended".to_owned(),
        "2".to_owned(),
    ];
    args.extend(every_event());
    let mut client = spawn_script("stream.mjs", &args.iter().map(String::as_str).collect::<Vec<_>>());
    use tokio::io::AsyncBufReadExt;
    let lines = tokio::io::BufReader::new(client.stderr.take().unwrap()).lines();
    let log = entries_seen(lines, 4).await;
    let result = result_of(client, log).await;

    let got: Vec<&Value> = result["entries"].as_array().unwrap().iter().map(|e| &e["data"]).collect();
    assert_eq!(got, listed.iter().collect::<Vec<_>>(), "each entry once, across the paid reconnection");
    let ended: Vec<&str> = result["ended"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(ended, ["payment_expired", "payment_expired"]);
    let requests = result["requests"].as_array().unwrap();
    let paid: Vec<&Value> = requests.iter().filter(|r| r["paid"] == true).collect();
    assert_eq!(paid.len(), 2, "{requests:?}");
    assert!(paid.iter().all(|r| r["status"] == 200), "{requests:?}");
    assert_eq!(requests.iter().filter(|r| r["status"] == 402).count(), 2, "asked to pay each time: {requests:?}");
    assert_eq!(paid[1]["lastEventId"], listed[3]["sequence"], "resumed after the last entry");
    assert_eq!(rig.balance().await, before + 2 * 5_000, "paid twice, on chain");
}
