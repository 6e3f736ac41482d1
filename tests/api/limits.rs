//! Requests that cannot starve anyone: request timeout, oversized and NUL-bearing requests, a
//! terminated store connection. Every refusal is a problem document. (Connections themselves:
//! `connections.rs`.)
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::helpers::{
    Backend, TestApp, fresh_sample_database, read_to_close, refusals_counted, require, sample_database, spawn_app,
    spawn_app_on, spawn_app_with,
};
use crate::on_both_backends;

/// A request held past its deadline (here by a lock another session holds on the table it
/// reads) answers 503 with `Retry-After` instead of hanging, and the next one is served.
#[tokio::test]
async fn a_request_past_its_deadline_is_503_with_retry_after() {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    if !require(Backend::Postgres) {
        return;
    }
    let url = fresh_sample_database(Backend::Postgres).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let app = spawn_app_with(url, |a| {
        a.limits.request_timeout = Duration::from_secs(1);
        a.response_cache_mb = 0;
    })
    .await;
    let lock = db.begin().await.unwrap();
    lock.execute_unprepared("LOCK TABLE proposals IN ACCESS EXCLUSIVE MODE").await.unwrap();
    let r = app.get("/v2/proposals?limit=100").await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "UNAVAILABLE");
    assert!(body["detail"].as_str().unwrap().contains("took longer than"), "{body}");
    lock.rollback().await.unwrap();
    assert_eq!(app.get("/v2/proposals?limit=100").await.status(), 200);
}

async fn refusals(app: &TestApp) {
    // NUL in a query or path parameter: a validation error naming it, on both backends.
    for (path, location, name) in [
        ("/v1/proposals/lookup?title=a%00b", "query", "title"),
        ("/v2/proposals?daoId=uni%00swap", "query", "daoId"),
        ("/v1/daos/uni%00swap/brief", "path", "daoId"),
        ("/v2/voters/0x%0012/votes", "path", "voterIdentity"),
    ] {
        let (status, body) = app.get_json(path).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["code"], "VALIDATION_ERROR", "{path}");
        assert_eq!(body["errors"][0]["in"], location, "{path}");
        assert_eq!(body["errors"][0]["name"], name, "{path}");
        assert!(body["errors"][0]["received"].as_str().unwrap().contains("\\u0000"), "{path}: {body}");
    }
    // Oversized target and head: problem documents, not bare statuses.
    let long = format!("/v1/proposals/lookup?title={}", "a".repeat(9_000));
    let (status, body) = app.get_json(&long).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{body}");
    assert!(body["detail"].as_str().unwrap().contains("at most 8192"));
    let r = app.client.get(app.url("/v1/daos")).header("x-padding", "p".repeat(40_000)).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    // Below the app: a head beyond hyper's buffer, and bytes HTTP does not allow (a raw NUL in
    // the target, a control byte in a header) are refused with problem documents too.
    let huge = format!("GET /v1/daos HTTP/1.1\r\nhost: x\r\nx-padding: {}\r\n\r\n", "p".repeat(70_000));
    for (what, request) in [
        ("a 70 kB head", huge.into_bytes()),
        ("a raw NUL in the target", b"GET /v1/daos?x=a\0b HTTP/1.1\r\nhost: x\r\n\r\n".to_vec()),
        ("a control byte in a header", b"GET /v1/daos HTTP/1.1\r\nhost: x\r\nx-a: a\x01b\r\n\r\n".to_vec()),
    ] {
        let (head, body) = raw_exchange(app, &request).await;
        assert!(head.starts_with("HTTP/1.1 400 "), "{what}: {head}");
        assert!(head.contains("content-type: application/problem+json"), "{what}: {head}");
        let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
        assert_eq!(body["code"], "VALIDATION_ERROR", "{what}");
        let id = head.lines().find_map(|l| l.strip_prefix("x-request-id: ")).expect("a request id");
        assert_eq!(body["requestId"], id, "{what}");
    }
    // A repeated parameter: the first value is applied, and echoed.
    let (status, body) = app.get_json("/v1/daos?limit=2&limit=5").await;
    assert_eq!(status, 200);
    assert_eq!(body["request"]["params"]["limit"], "2");
    assert_eq!(body["data"]["items"].as_array().unwrap().len(), 2);
}

/// Sends `request` as raw bytes and reads the answer until the server closes: (head, body).
async fn raw_exchange(app: &TestApp, request: &[u8]) -> (String, String) {
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    // The server may answer and close before it has read everything sent.
    let _ = stream.write_all(request).await;
    let answer = read_to_close(&mut stream, Duration::from_secs(10)).await.expect("the server answers and closes");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_owned(), body.to_owned())
}

on_both_backends!(replica: bad_requests_are_refused_with_problem_documents, |app: TestApp| async move {
    refusals(&app).await;
});

/// A store connection terminated by PostgreSQL (a failover, an operator) is a 503 to retry, never
/// a 500; the pool recovers by itself.
#[tokio::test]
async fn a_terminated_store_connection_is_unavailable_or_recovered_never_an_error() {
    use sea_orm::ConnectionTrait;
    if !require(Backend::Postgres) {
        return;
    }
    let app = spawn_app(Backend::Postgres).await;
    let name = app.database_url.rsplit('/').next().unwrap().to_owned();
    let admin = sea_orm::Database::connect(format!("{}/postgres", crate::helpers::pg_base_url())).await.unwrap();
    for _ in 0..3 {
        assert_eq!(app.get("/v2/proposals?limit=5").await.status(), 200);
        admin
            .execute_unprepared(&format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
            ))
            .await
            .unwrap();
        for path in ["/v2/proposals?limit=7", "/v1/daos/uniswap/brief", "/readyz"] {
            let r = app.client.get(app.url(path)).send().await.unwrap();
            let status = r.status().as_u16();
            assert!(status == 200 || status == 503, "{path}: {status}");
            if status == 503 {
                assert!(r.headers().contains_key("retry-after"), "{path}");
            }
        }
    }
    crate::helpers::eventually("the pool reconnects", || async {
        app.client.get(app.url("/v2/proposals?limit=5")).send().await.is_ok_and(|r| r.status() == 200)
    })
    .await;
}

/// PostgreSQL refusing connections (a restart, a failover): answers that need the store are 503
/// with `Retry-After`, at once after the store has been silent for `STORE_SILENT` (not after each
/// request's connect timeout); cached answers are still served; answers resume by themselves.
#[tokio::test]
async fn a_store_that_refuses_connections_answers_503_at_once_and_keeps_cached_answers() {
    use sea_orm::ConnectionTrait;
    if !require(Backend::Postgres) {
        return;
    }
    // A database of its own: the shared one serves the other tests meanwhile.
    let url = fresh_sample_database(Backend::Postgres).await;
    let db = govdata::store::connect(&url).await.unwrap();
    db.close().await.unwrap();
    let app = spawn_app_on(url).await;
    let name = app.database_url.rsplit('/').next().unwrap().to_owned();
    let admin = sea_orm::Database::connect(format!("{}/postgres", crate::helpers::pg_base_url())).await.unwrap();
    let allow = |yes: bool| format!(r#"ALTER DATABASE "{name}" ALLOW_CONNECTIONS {yes}"#);
    assert_eq!(app.get("/v2/daos?limit=5").await.status(), 200, "answered, and cached");
    admin.execute_unprepared(&allow(false)).await.unwrap();
    admin
        .execute_unprepared(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ))
        .await
        .unwrap();
    let mut n = 0;
    crate::helpers::eventually("the store is known to be away", || {
        // A new path each try (none cached), within the list's declared page sizes: on a busy
        // machine the store may take more than a hundred tries to be known away.
        n = n % govdata::contract::limits::MOST_LISTS.max + 1;
        let path = format!("/v2/proposals?limit={n}");
        let app = &app;
        async move {
            let r = app.get(&path).await;
            assert_eq!(r.status(), 503, "{path}");
            assert_eq!(r.headers()["retry-after"], "1", "{path}");
            let body: Value = r.json().await.unwrap();
            body["detail"].as_str().unwrap().contains("has not answered")
        }
    })
    .await;
    let r = app.get("/v2/daos?limit=5").await;
    assert_eq!(r.status(), 200, "a cached answer is served while the store is away");
    admin.execute_unprepared(&allow(true)).await.unwrap();
    crate::helpers::eventually("answers resume", || async { app.get("/v2/proposals?limit=99").await.status() == 200 })
        .await;
}

/// A raw `POST /v2/webhooks` with a partner token and `content-length: declared`, of which only
/// `sent` bytes follow the head; the connection stays open.
async fn webhook_post(app: &TestApp, token: &str, declared: usize, sent: &str) -> TcpStream {
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /v2/webhooks HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-service-api-token: {token}\r\n\
         content-length: {declared}\r\n\r\n{sent}"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// The status line and problem document of a raw answer.
fn raw_problem(answer: &str) -> (String, Value) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{answer:?}"));
    assert!(head.to_ascii_lowercase().contains("content-type: application/problem+json"), "{head}");
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}")))
}

// A body that trickles in is refused at the body clock, as `/mcp`'s is, not at the request
// deadline: `POST /v2/webhooks` declaring 2,000 bytes and sending 20.
on_both_backends!(replica: a_webhook_body_that_trickles_is_refused_at_the_body_clock, |backend: Backend| async move {
    let body_timeout = Duration::from_millis(500);
    let app = spawn_app_with(sample_database(backend), |a| a.limits.body_read_timeout = body_timeout).await;
    let (_, token) = crate::access::partner_token(&app, &["v2:paid:standard"]).await;
    let counted = refusals_counted(&app, "body_timeout").await;
    let started = std::time::Instant::now();
    let mut stalled = webhook_post(&app, &token, 2_000, r#"{"url": "https://exa"#).await;
    // Well within the 30 s request deadline: the body clock answers.
    let answer = read_to_close(&mut stalled, Duration::from_secs(5)).await.expect("answered at the body clock");
    let elapsed = started.elapsed();
    let (status, problem) = raw_problem(&answer);
    assert!(status.starts_with("HTTP/1.1 400"), "{status}");
    assert_eq!(problem["code"], "VALIDATION_ERROR", "{problem}");
    assert_eq!((&problem["errors"][0]["in"], &problem["errors"][0]["name"]), (&json!("body"), &json!("body")));
    assert!(problem["detail"].as_str().unwrap().contains("did not arrive whole within 500ms"), "{problem}");
    assert!(elapsed >= body_timeout, "answered after {elapsed:?}");
    assert!(refusals_counted(&app, "body_timeout").await > counted, "counted as body_timeout");
});

// A body that trickles in holds no query slot: with one slot, other requests are served while
// it is pending.
on_both_backends!(replica: a_trickling_body_holds_no_query_slot, |backend: Backend| async move {
    let body_timeout = Duration::from_secs(4);
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.max_concurrent_queries = 1;
        a.limits.body_read_timeout = body_timeout;
    })
    .await;
    let (_, token) = crate::access::partner_token(&app, &["v2:paid:standard"]).await;
    let mut stalled = webhook_post(&app, &token, 2_000, r#"{"url": "https://exa"#).await;
    // Let the server take the head (and, were it to, the slot).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    for _ in 0..3 {
        // A partner's own list is store work in a slot, never a cached answer.
        let served = app.anonymous.get(app.url("/v2/webhooks")).header("x-service-api-token", &token).send();
        let r = tokio::time::timeout(Duration::from_secs(2), served)
            .await
            .expect("served while the body trickles")
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert!(started.elapsed() < body_timeout, "served before the body clock ran out: {:?}", started.elapsed());
    // The trickling request is still pending, and then refused at its clock.
    let mut byte = [0u8; 1];
    let pending = tokio::time::timeout(Duration::from_millis(50), stalled.peek(&mut byte)).await;
    assert!(pending.is_err(), "the trickling request is still unanswered");
    let answer = read_to_close(&mut stalled, body_timeout * 2).await.expect("answered at the body clock");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
});

// A body declared over the cap is refused from its `Content-Length`, before a byte is read,
// and counted.
on_both_backends!(replica: a_body_declared_over_the_cap_is_refused_from_its_length, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |_| {}).await;
    let (_, token) = crate::access::partner_token(&app, &["v2:paid:standard"]).await;
    let counted = refusals_counted(&app, "body_too_large").await;
    let cap = govdata::contract::body::MAX_BODY_BYTES;
    let mut declared = webhook_post(&app, &token, cap + 1, "").await;
    let answer = read_to_close(&mut declared, Duration::from_secs(5)).await.expect("answered without the body");
    let (status, problem) = raw_problem(&answer);
    assert!(status.starts_with("HTTP/1.1 400"), "{status}");
    assert_eq!(problem["errors"][0]["name"], "body", "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains(&format!("larger than {cap} bytes")), "{problem}");
    assert!(refusals_counted(&app, "body_too_large").await > counted, "counted as body_too_large");
});
