//! Careless and hostile clients cannot starve the others: a connection that sends nothing or a
//! slow head is closed from accept, one address holds at most its cap, at the global cap the
//! longest-idle connection makes room, a client that stops reading is cut, request bodies are
//! capped and timed, and every refusal and cut is counted by cause.
//!
//! Attackers connect from 127.0.0.2 and legitimate clients from 127.0.0.3: all of 127.0.0.0/8 is
//! loopback, and the server counts them as two addresses.
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::{INTERNAL_TOKEN, TestApp, read_to_close, refusals_counted, sample_database, spawn_app_with};
use crate::on_both_backends;

const ATTACKER: &str = "127.0.0.2";
const LEGIT: &str = "127.0.0.3";

/// A raw connection from the loopback address `from`.
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    connect_with(from, to, None).await
}

async fn connect_with(from: &str, to: SocketAddr, receive_buffer: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from.parse().unwrap(), 0)).unwrap();
    if let Some(bytes) = receive_buffer {
        socket.set_recv_buffer_size(bytes).unwrap();
    }
    socket.connect(to).await.unwrap()
}

/// A client from the loopback address `from`.
fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder().local_address(from.parse::<IpAddr>().unwrap()).build().unwrap()
}

/// Whether the server still holds `stream` open after `within` (nothing to read, not closed).
async fn still_open(stream: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 1];
    tokio::time::timeout(within, stream.read(&mut byte)).await.is_err()
}

/// The problem document of a refusal written below the app.
fn refusal(answer: &str) -> (u16, Value, String) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("an HTTP answer: {answer:?}"));
    let status = head[9..12].parse().unwrap();
    (status, serde_json::from_str(body).unwrap(), head.to_ascii_lowercase())
}

async fn served(from: &str, app: &TestApp) -> bool {
    let r = client_from(from).get(app.url("/v1/daos?limit=1")).send().await;
    r.is_ok_and(|r| r.status() == 200)
}

on_both_backends!(silent_and_slow_heads_are_closed_from_accept, |backend: Backend| async move {
    let head = Duration::from_millis(500);
    let app = spawn_app_with(sample_database(backend), |a| a.limits.header_read_timeout = head).await;
    let counted = refusals_counted(&app, "head_timeout").await;
    // A connection that never sends a byte.
    let started = Instant::now();
    let mut silent = connect_from(ATTACKER, app.addr).await;
    // Slowloris: a head begun at once and trickled a byte every 100 ms, which must not extend it.
    let slow = connect_from(ATTACKER, app.addr).await;
    let (mut slow_read, mut slow_write) = slow.into_split();
    let trickle = tokio::spawn(async move {
        let _ = slow_write.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n").await;
        for byte in b"x-one: 1\r\nx-two: 2\r\nx-three: 3\r\n" {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if slow_write.write_all(&[*byte]).await.is_err() {
                break;
            }
        }
    });
    assert_eq!(read_to_close(&mut silent, Duration::from_secs(10)).await.as_deref(), Some(""), "closed, unanswered");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), slow_read.read_to_end(&mut rest)).await.expect("closed");
    let took = started.elapsed();
    assert!(took >= head, "not before the timeout: {took:?}");
    assert!(took < Duration::from_millis(2_500), "the trickle (3 s) did not extend the head: {took:?}");
    trickle.abort();
    assert!(refusals_counted(&app, "head_timeout").await >= counted + 2.0);
    // An idle keep-alive connection after an answer is closed after the same timeout.
    let mut idle = connect_from(LEGIT, app.addr).await;
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
    let answer = read_to_close(&mut idle, Duration::from_secs(10)).await.expect("closed once idle");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(served(LEGIT, &app).await);
});

on_both_backends!(one_address_holds_at_most_its_cap, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.max_connections_per_address = 3;
        a.limits.header_read_timeout = Duration::from_secs(30);
    })
    .await;
    let counted = refusals_counted(&app, "address_cap").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from(ATTACKER, app.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut over = connect_from(ATTACKER, app.addr).await;
    let answer = read_to_close(&mut over, Duration::from_secs(5)).await.expect("answered and closed at once");
    let (status, body, head) = refusal(&answer);
    assert_eq!(status, 429, "{answer}");
    assert_eq!(body["code"], "RATE_LIMITED");
    assert!(head.contains("content-type: application/problem+json") && head.contains("retry-after: 1"), "{head}");
    assert!(body["detail"].as_str().unwrap().contains("maximum of 3 open connections"), "{body}");
    assert_eq!(body["requestId"], head.lines().find_map(|l| l.strip_prefix("x-request-id: ")).unwrap());
    assert!(refusals_counted(&app, "address_cap").await > counted);
    // Another address is served, and the capped one as soon as a connection of its closes.
    assert!(served(LEGIT, &app).await);
    for held in &mut held {
        assert!(still_open(held, Duration::from_millis(50)).await);
    }
    held.pop();
    crate::helpers::eventually("a freed slot is the address's again", || async { served(ATTACKER, &app).await }).await;
});

on_both_backends!(at_the_global_cap_the_longest_idle_connection_makes_room, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.max_connections = 4;
        a.limits.header_read_timeout = Duration::from_secs(30);
    })
    .await;
    let counted = refusals_counted(&app, "evicted_idle").await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(connect_from(ATTACKER, app.addr).await);
        // Accepted in this order, so the first is the longest idle.
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    // Full: a newcomer is admitted, not refused (the scrape of /metrics itself needs a slot too).
    assert!(served(LEGIT, &app).await, "the newcomer is served");
    assert_eq!(read_to_close(&mut idle[0], Duration::from_secs(5)).await.as_deref(), Some(""), "the idlest went");
    assert!(refusals_counted(&app, "evicted_idle").await > counted);
    assert!(still_open(&mut idle[3], Duration::from_millis(50)).await, "the most recent idle one stays");
});

/// A connection whose request is in flight: an MCP request whose body is still arriving.
async fn busy_connection(app: &TestApp, from: &str) -> TcpStream {
    let mut stream = connect_from(from, app.addr).await;
    stream
        // The server's own name: `/mcp` refuses another (`mcp::mcp_refuses_foreign_origins_and_hosts`).
        .write_all(format!("POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\"", app.addr).as_bytes())
        .await
        .unwrap();
    stream
}

on_both_backends!(when_every_connection_is_busy_a_newcomer_gets_503, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.max_connections = 2;
        a.limits.body_read_timeout = Duration::from_secs(30);
    })
    .await;
    let counted = refusals_counted(&app, "connection_cap").await;
    let busy = [busy_connection(&app, ATTACKER).await, busy_connection(&app, ATTACKER).await];
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = connect_from(LEGIT, app.addr).await;
    let answer = read_to_close(&mut third, Duration::from_secs(5)).await.expect("answered and closed at once");
    let (status, body, head) = refusal(&answer);
    assert_eq!(status, 503, "{answer}");
    assert!(head.contains("retry-after: 1"), "{head}");
    assert_eq!(body["code"], "UNAVAILABLE");
    assert!(body["detail"].as_str().unwrap().contains("maximum of 2 connections, all busy"), "{body}");
    drop(busy);
    crate::helpers::eventually("freed slots are served again", || async { served(LEGIT, &app).await }).await;
    assert!(refusals_counted(&app, "connection_cap").await > counted);
});

on_both_backends!(a_client_that_stops_reading_is_cut_after_the_write_timeout, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.write_timeout = Duration::from_millis(500);
        a.limits.header_read_timeout = Duration::from_secs(30);
    })
    .await;
    let counted = refusals_counted(&app, "write_timeout").await;
    let document = app.get("/v2/openapi.json").await.bytes().await.unwrap();
    // Twenty pipelined requests for the document (about 5 MB) through a small receive buffer,
    // read a byte every 200 ms for three seconds: far more than the socket buffers hold.
    let mut slow = connect_with(ATTACKER, app.addr, Some(4096)).await;
    let request = "GET /v2/openapi.json HTTP/1.1\r\nhost: x\r\n\r\n".repeat(20);
    slow.write_all(request.as_bytes()).await.unwrap();
    let mut read = 0usize;
    let mut byte = [0u8; 1];
    for _ in 0..15 {
        match slow.read(&mut byte).await {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // By now the server has reset the connection: what the client's buffer held, then the end.
    // Uncut, this would read all twenty documents.
    let mut chunk = vec![0u8; 64 * 1024];
    let drained = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match slow.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the connection ended");
    assert!(read < document.len(), "cut before one document was read: {read} bytes");
    assert!(refusals_counted(&app, "write_timeout").await > counted);
    // A client that reads is never cut: the whole document, twice on one connection.
    let legit = client_from(LEGIT);
    for _ in 0..2 {
        let body = legit.get(app.url("/v2/openapi.json")).send().await.unwrap().bytes().await.unwrap();
        assert_eq!(body, document);
    }
});

on_both_backends!(request_bodies_are_capped_and_timed, |backend: Backend| async move {
    let app =
        spawn_app_with(sample_database(backend), |a| a.limits.body_read_timeout = Duration::from_millis(400)).await;
    let (too_large, timed_out) =
        (refusals_counted(&app, "body_too_large").await, refusals_counted(&app, "body_timeout").await);
    let post = |extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, \
             text/event-stream\r\n{extra}\r\n",
            app.addr
        )
    };
    let problem = |answer: &str| {
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{answer:?}"));
        assert!(head.starts_with("HTTP/1.1 400"), "{head}");
        assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{head}");
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["code"], "VALIDATION_ERROR");
        body["detail"].as_str().unwrap().to_owned()
    };
    // Declared over the cap: refused before a byte of it is read.
    let mut declared = connect_from(ATTACKER, app.addr).await;
    declared.write_all(post("content-length: 100000\r\n").as_bytes()).await.unwrap();
    let detail = problem(&read_to_close(&mut declared, Duration::from_secs(5)).await.expect("answered"));
    assert!(detail.contains("larger than 65536 bytes"), "{detail}");
    // Sent over the cap in chunks, with no length declared.
    let mut chunked = connect_from(ATTACKER, app.addr).await;
    chunked.write_all(post("transfer-encoding: chunked\r\n").as_bytes()).await.unwrap();
    let chunk = format!("4000\r\n{}\r\n", "x".repeat(0x4000));
    for _ in 0..5 {
        if chunked.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let detail = problem(&read_to_close(&mut chunked, Duration::from_secs(5)).await.expect("answered"));
    assert!(detail.contains("larger than 65536 bytes"), "{detail}");
    // A body that stops arriving.
    let started = Instant::now();
    let mut stalled = connect_from(ATTACKER, app.addr).await;
    stalled.write_all(format!("{}{{\"jsonrpc\"", post("content-length: 100\r\n")).as_bytes()).await.unwrap();
    let detail = problem(&read_to_close(&mut stalled, Duration::from_secs(5)).await.expect("answered"));
    assert!(detail.contains("did not arrive whole within 400ms"), "{detail}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(refusals_counted(&app, "body_too_large").await >= too_large + 2.0);
    assert!(refusals_counted(&app, "body_timeout").await > timed_out);
    // A whole body is served.
    let r = client_from(LEGIT)
        .post(app.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("x-internal-token", INTERNAL_TOKEN)
        .json(&serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
});

/// Reads one answer from a keep-alive connection, whatever its framing (a length, chunks, none
/// for a 304): its status, its head lowercased, and its body. `pending` keeps what was read
/// past it.
async fn one_answer(stream: &mut TcpStream, pending: &mut Vec<u8>) -> (u16, String, Vec<u8>) {
    async fn more(stream: &mut TcpStream, pending: &mut Vec<u8>) {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .expect("read");
        assert!(n > 0, "the server closed the connection mid-answer: {:?}", String::from_utf8_lossy(pending));
        pending.extend_from_slice(&chunk[..n]);
    }
    let end = loop {
        if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        more(stream, pending).await;
    };
    let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
    pending.drain(..end);
    let status: u16 = head[9..12].parse().expect("a status");
    let field =
        |name: &str| head.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_owned()));
    let mut body = Vec::new();
    if status == 304 || status == 204 {
    } else if let Some(length) = field("content-length") {
        let length: usize = length.parse().expect("a length");
        while pending.len() < length {
            more(stream, pending).await;
        }
        body = pending.drain(..length).collect();
    } else {
        assert_eq!(field("transfer-encoding").as_deref(), Some("chunked"), "a framed answer: {head}");
        loop {
            let line_end = loop {
                if let Some(i) = pending.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                more(stream, pending).await;
            };
            let size_line = String::from_utf8_lossy(&pending[..line_end]).into_owned();
            let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16).expect("a chunk size");
            while pending.len() < line_end + 2 + size + 2 {
                more(stream, pending).await;
            }
            body.extend_from_slice(&pending[line_end + 2..line_end + 2 + size]);
            pending.drain(..line_end + 2 + size + 2);
            if size == 0 {
                break;
            }
        }
    }
    (status, head, body)
}

// Keep-alive holds for every kind of answer the server gives, as for curl and browsers: on one
// connection, five requests each for a 200, a 304, a 400 and a 404 problem, a 402 challenge and
// a 429, none answered with `connection: close`, and the connection still open after them all.
// (A client whose pool reconnected after some answer would exhaust its ports under load: issue 50.)
on_both_backends!(keep_alive_holds_for_every_kind_of_answer, |backend: Backend| async move {
    let url = crate::helpers::fresh_sample_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    db.close().await.ok();
    let dir = tempfile::tempdir().unwrap();
    let exports = dir.path().to_owned();
    let app = spawn_app_with(url, move |a| {
        a.exports.export_dir = exports;
        // Anonymous requests from this address: five challenges, then refusals.
        a.rates.rate_client = "5/1h".parse().unwrap();
    })
    .await;
    app.sync().await;
    let export = "/v2/exports/uniswap/votes.parquet";
    let built = app.client.get(app.url(export)).send().await.unwrap();
    assert_eq!(built.status(), 200);
    let etag = built.headers()["etag"].to_str().unwrap().to_owned();

    let first_party = format!("x-internal-token: {INTERNAL_TOKEN}\r\n");
    let kinds: [(u16, &str, String); 6] = [
        (200, "/v1/daos?limit=1", first_party.clone()),
        (304, export, format!("{first_party}if-none-match: {etag}\r\n")),
        (400, "/v1/daos?limit=abc", first_party.clone()),
        (404, "/no/such/path", first_party.clone()),
        (402, "/v1/system/freshness", String::new()),
        (429, "/v1/system/freshness", String::new()),
    ];
    let mut stream = connect_from(LEGIT, app.addr).await;
    let mut pending = Vec::new();
    for (status, path, headers) in &kinds {
        for i in 0..5 {
            let request = format!("GET {path} HTTP/1.1\r\nhost: govdata\r\n{headers}\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let (got, head, body) = one_answer(&mut stream, &mut pending).await;
            assert_eq!(got, *status, "request {i} for {path}: {head}");
            assert!(!head.contains("connection: close"), "{path} asks the client to close: {head}");
            if *status >= 400 && *status != 402 {
                let problem: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(problem["status"], *status, "a problem document");
            }
        }
    }
    assert!(pending.is_empty(), "nothing sent past the answers");
    assert!(still_open(&mut stream, Duration::from_millis(300)).await, "the connection is still open");
    // And it still serves.
    stream
        .write_all(format!("GET /v1/daos?limit=1 HTTP/1.1\r\nhost: govdata\r\n{first_party}\r\n").as_bytes())
        .await
        .unwrap();
    assert_eq!(one_answer(&mut stream, &mut pending).await.0, 200);
});
