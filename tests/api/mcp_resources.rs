//! MCP resources at `/mcp`: the templates are the v2 reads of one DAO, proposal and voter
//! (`govdata://…`), a read answers what the operation answers (paid as its tool is), and a
//! subscription is told when a publication changes the resource: `resources/subscribe` in a
//! session (protocol 2025-11-25), `subscriptions/listen` (2026-07-28). Raw JSON-RPC here; the
//! official SDKs (TypeScript and Python, both generations) and the MCP Inspector CLI in
//! `the_official_sdks_subscribe_and_are_told_within_5_s`.
use std::time::{Duration, Instant};

use govdata::contract::mcp::MAX_WATCHED_RESOURCES;
use govdata::ingest::run_once;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::access::partner_token;
use crate::fixtures::chain::{PAY_TO, require_toolkit, spawn_script, toolkit};
use crate::fixtures::testgov::{DAO, options, proposal_id, world_with};
use crate::helpers::{TestApp, sample_database, spawn_app_with};
use crate::on_both_backends;
use crate::stream::Sse;

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// A JSON-RPC request to `/mcp`: the status, headers and body of the answer. `protocol` 2026-07-28
/// puts the per-request `_meta` that protocol requires in `params`.
async fn rpc(
    app: &TestApp,
    protocol: &str,
    method: &str,
    mut params: Value,
    headers: &[(&str, &str)],
) -> (u16, HeaderMap, Value) {
    let mut standard = Vec::new();
    if protocol == MODERN {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "tests", "version": "0" },
        });
        // The protocol's standard headers: the method, and the URI or name it is about.
        standard.push(("mcp-method", method.to_owned()));
        if let Some(name) = params["uri"].as_str().or(params["name"].as_str()) {
            standard.push(("mcp-name", name.to_owned()));
        }
    }
    let mut request = app
        .anonymous
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", protocol)
        .json(&json!({ "jsonrpc": "2.0", "id": 3, "method": method, "params": params }));
    for (name, value) in standard {
        request = request.header(name, value);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

/// A 2025-11-25 session: `initialize` and `notifications/initialized`. Its id, when the server
/// opened one.
async fn open_session(app: &TestApp) -> Option<String> {
    let init =
        json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } });
    let (status, headers, body) = rpc(app, LEGACY, "initialize", init, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["content-type"], "application/json", "answered as JSON, session or not");
    assert_eq!(body["result"]["protocolVersion"], LEGACY, "{body}");
    let session = headers.get("mcp-session-id")?.to_str().unwrap().to_owned();
    let initialized = app
        .anonymous
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", &session)
        .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status(), 202);
    Some(session)
}

/// The answer without what depends on the moment it was served or the request it answered.
fn stable(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "generatedAt" | "lagSeconds" | "requestId" | "cacheStatus"))
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        other => other.clone(),
    }
}

/// A URI of each template, for a DAO, a proposal and a voter the sample holds.
async fn sample_uris(app: &TestApp) -> [(String, String); 3] {
    let (_, proposals) = app.get_json("/v2/proposals?limit=1&daoId=uniswap").await;
    let key = proposals["data"]["items"][0]["proposalKey"].as_str().expect("a proposal key").to_owned();
    let (_, voters) = app.get_json("/v2/daos/uniswap/voters?limit=1").await;
    let voter = voters["data"]["items"][0]["voterIdentity"].as_str().expect("a voter").to_owned();
    [
        ("govdata://daos/uniswap".to_owned(), "/v2/daos/uniswap".to_owned()),
        (format!("govdata://proposals/{key}"), format!("/v2/proposals/{key}")),
        (format!("govdata://voters/{voter}"), format!("/v2/voters/{voter}")),
    ]
}

on_both_backends!(replica: the_templates_are_the_reads_of_one_thing, |app: TestApp| async move {
    let init =
        json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } });
    let (_, headers, body) = rpc(&app, LEGACY, "initialize", init, &[]).await;
    let resources = &body["result"]["capabilities"]["resources"];
    assert_eq!(resources["subscribe"], true, "{body}");
    assert!(resources.get("listChanged").is_none(), "the lists never change while the server runs: {body}");
    assert!(headers.contains_key("mcp-session-id"), "initialize opens a session for resources/subscribe");

    let documents = govdata::api::documents(govdata::contract::access::Prices::default());
    let committed: Value = serde_json::from_str(&documents.resources_json).unwrap();
    for protocol in [LEGACY, MODERN] {
        let (status, _, body) = rpc(&app, protocol, "resources/templates/list", json!({}), &[]).await;
        assert_eq!(status, 200, "{body}");
        let templates = &body["result"]["resourceTemplates"];
        assert_eq!(templates, &committed["resourceTemplates"], "served as committed (`openapi/mcp-resources.json`)");
        // `resources/list` is empty: the resources are every DAO, proposal and voter.
        let (_, _, body) = rpc(&app, protocol, "resources/list", json!({}), &[]).await;
        assert_eq!(body["result"]["resources"], json!([]), "{body}");
    }
    let templates = committed["resourceTemplates"].as_array().unwrap();
    let uris: Vec<&str> = templates.iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        ["govdata://daos/{daoId}", "govdata://proposals/{proposalKey}", "govdata://voters/{voterIdentity}"]
    );
    for (template, tool) in templates.iter().zip(["v2_daos_get", "v2_proposals_get", "v2_voters_get"]) {
        assert_eq!(template["mimeType"], "application/json");
        let description = template["description"].as_str().unwrap();
        assert!(description.contains("Access: paid"), "{description}");
        assert!(description.contains(&format!("`{tool}`")), "{description}");
    }
});

on_both_backends!(replica: a_read_answers_what_its_operation_answers, |app: TestApp| async move {
    let (_, token) = partner_token(&app, &["v2:paid:*"]).await;
    let credential = [("x-service-api-token", token.as_str())];
    for (uri, path) in sample_uris(&app).await {
        let (_, http) = app.get_json(&path).await;
        for protocol in [LEGACY, MODERN] {
            let (status, _, body) = rpc(&app, protocol, "resources/read", json!({ "uri": uri }), &credential).await;
            assert_eq!(status, 200, "{uri}: {body}");
            let contents = body["result"]["contents"].as_array().expect("contents");
            assert_eq!(contents.len(), 1, "{body}");
            assert_eq!(contents[0]["uri"], uri.as_str());
            assert_eq!(contents[0]["mimeType"], "application/json");
            let read: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(stable(&read), stable(&http), "{uri}: the operation's answer");
        }
    }
    // A voter named any way the operation takes: a CAIP-10 account, upper-case hex.
    let (_, voters) = app.get_json("/v2/daos/uniswap/voters?limit=1").await;
    let voter = voters["data"]["items"][0]["voterIdentity"].as_str().unwrap().to_owned();
    let caip = format!("govdata://voters/eip155:1:{}", voter.to_uppercase().replacen("0X", "0x", 1));
    let (_, _, body) = rpc(&app, LEGACY, "resources/read", json!({ "uri": caip }), &credential).await;
    assert!(body["result"]["contents"][0]["text"].as_str().unwrap().contains(&voter), "{body}");

    // What is no resource: -32002 before 2026-07-28, -32602 from it.
    for uri in ["govdata://nothing/x", "govdata://daos/", "govdata://daos/uniswap/voters", "https://example.com/x"] {
        for (protocol, code) in [(LEGACY, -32002), (MODERN, -32602)] {
            let (status, _, body) = rpc(&app, protocol, "resources/read", json!({ "uri": uri }), &credential).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["error"]["code"], code, "{protocol} {uri}: {body}");
            assert_eq!(body["error"]["data"]["uri"], uri);
        }
    }
    // What the operation refuses is an error carrying its problem document.
    let cases = [
        ("govdata://proposals/p_short", -32602, 400, "VALIDATION_ERROR"),
        ("govdata://proposals/p_AAAAAAAAAAAAAAAAAAAAAA", -32002, 404, "NOT_FOUND"),
        ("govdata://daos/no-such-dao", -32002, 404, "NOT_FOUND"),
        ("govdata://voters/nobody.eth", -32002, 404, "NOT_FOUND"),
    ];
    for (uri, code, status, problem) in cases {
        let (_, _, body) = rpc(&app, LEGACY, "resources/read", json!({ "uri": uri }), &credential).await;
        let error = &body["error"];
        assert_eq!(error["code"], code, "{uri}: {body}");
        assert_eq!(error["data"]["status"], status, "{uri}: {body}");
        assert_eq!(error["data"]["problem"]["code"], problem, "{uri}: {body}");
        assert!(!error["data"]["problem"]["requestId"].as_str().unwrap().is_empty());
    }
});

on_both_backends!(replica: a_paid_resource_is_paid_as_its_tool, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| a.payments.pay_to = Some(PAY_TO.to_owned())).await;
    let read = json!({ "uri": "govdata://daos/uniswap" });
    for protocol in [LEGACY, MODERN] {
        // No credentials: the MCP request itself answers 402 with the operation's challenge.
        let (status, headers, body) = rpc(&app, protocol, "resources/read", read.clone(), &[]).await;
        assert_eq!(status, 402, "{protocol}: {body}");
        assert_eq!(body["code"], "PAYMENT_REQUIRED");
        assert_eq!(body["accepts"][0]["resource"], app.url("/v2/daos/uniswap"), "{body}");
        let http = app.anonymous.get(app.url("/v2/daos/uniswap")).send().await.unwrap();
        assert_eq!(headers["payment-required"], http.headers()["payment-required"], "the operation's own challenge");
    }
    // A partner token pays: served, and private.
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let (status, headers, body) =
        rpc(&app, LEGACY, "resources/read", read.clone(), &[("x-service-api-token", &token)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["contents"][0]["text"].as_str().unwrap().contains("\"daoId\":\"uniswap\""), "{body}");
    assert_eq!(headers["cache-control"], "private");
    // A refused credential is an error carrying the problem, never a 402.
    let (status, _, body) = rpc(&app, LEGACY, "resources/read", read, &[("x-service-api-token", "gdp_nope")]).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["error"]["data"]["problem"]["code"], "UNAUTHORIZED", "{body}");
});

// Subscribing needs a session (2025-11-25) and a URI that names a resource; a session watches
// at most `MAX_WATCHED_RESOURCES`; the server keeps at most `GOVDATA_MCP_MAX_SESSIONS` sessions
// (past it, `initialize` is answered without one) and closes one no request reaches for
// `GOVDATA_MCP_SESSION_IDLE`.
on_both_backends!(replica: subscriptions_are_checked_and_bounded, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.limits.mcp_max_sessions = 1;
        a.limits.mcp_session_idle = Duration::from_secs(3);
    })
    .await;
    let (status, _, body) =
        rpc(&app, LEGACY, "resources/subscribe", json!({ "uri": "govdata://daos/uniswap" }), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32600, "no session, no subscription: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("subscriptions/listen"), "{body}");

    let session = open_session(&app).await.expect("a session");
    let in_session = [("mcp-session-id", session.as_str())];
    let subscribe = |uri: String| {
        let app = &app;
        async move { rpc(app, LEGACY, "resources/subscribe", json!({ "uri": uri }), &in_session).await }
    };
    let (status, headers, body) = subscribe("govdata://daos/uniswap".into()).await;
    assert_eq!((status, &body["result"]), (200, &json!({})), "{body}");
    assert_eq!(headers["content-type"], "application/json");
    for (uri, code) in [
        ("govdata://nothing/x", -32002),
        ("govdata://proposals/p_short", -32602),
        ("govdata://voters/vitalik.eth", -32602),
        ("govdata://voters/0x12", -32602),
    ] {
        let (_, _, body) = subscribe(uri.into()).await;
        assert_eq!(body["error"]["code"], code, "{uri}: {body}");
    }
    let (_, _, body) = subscribe("govdata://voters/vitalik.eth".into()).await;
    assert!(body["error"]["message"].as_str().unwrap().contains("by its 0x address"), "{body}");
    for i in 1..MAX_WATCHED_RESOURCES {
        let (_, _, body) = subscribe(format!("govdata://daos/dao-{i}")).await;
        assert_eq!(body["result"], json!({}), "{i}: {body}");
    }
    let (_, _, body) = subscribe("govdata://daos/one-too-many".into()).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains(&MAX_WATCHED_RESOURCES.to_string()));
    // Subscribing again to a watched URI, and unsubscribing, need no room.
    let (_, _, body) = subscribe("govdata://daos/uniswap".into()).await;
    assert_eq!(body["result"], json!({}), "{body}");
    let (_, _, body) =
        rpc(&app, LEGACY, "resources/unsubscribe", json!({ "uri": "govdata://daos/dao-1" }), &in_session).await;
    assert_eq!(body["result"], json!({}), "{body}");
    let (_, _, body) = subscribe("govdata://daos/now-there-is-room".into()).await;
    assert_eq!(body["result"], json!({}), "{body}");

    // One session is all this server keeps: the next client has none, its tools still work.
    let init =
        json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } });
    let (status, headers, body) = rpc(&app, LEGACY, "initialize", init.clone(), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(!headers.contains_key("mcp-session-id"), "at the cap, no session");
    let (_, _, body) = rpc(&app, LEGACY, "tools/list", json!({}), &[]).await;
    assert!(body["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));

    // A session nothing reaches closes after its idle time (this one's client answers no ping:
    // it has no GET stream), and makes room for another.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (status, _, _) = subscribe("govdata://daos/uniswap".into()).await;
    assert_eq!(status, 404, "the session is gone");
    let (_, headers, _) = rpc(&app, LEGACY, "initialize", init, &[]).await;
    assert!(headers.contains_key("mcp-session-id"), "room for a new session");
});

/// The proposal the testgov upstream changes when its first proposal's scores do.
async fn first_proposal(app: &TestApp) -> String {
    // The first proposal is the upstream's one active proposal.
    let (_, list) = app.get_json(&format!("/v2/proposals?daoId={DAO}&state=active&limit=100")).await;
    let external = proposal_id(0);
    let items = list["data"]["items"].as_array().unwrap_or_else(|| panic!("proposals: {list}"));
    let item = items.iter().find(|p| p["externalId"] == external.as_str()).expect("the first proposal is listed");
    item["proposalKey"].as_str().unwrap().to_owned()
}

/// Publishes a change of the first proposal: its scores (a correction of its closing event).
async fn change_first_proposal(w: &crate::fixtures::testgov::World) -> Instant {
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    let run = run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert!(run.published.revision_id.is_some(), "{run}");
    Instant::now()
}

// Protocol 2026-07-28 over raw HTTP: `subscriptions/listen` is acknowledged with the URIs
// accepted (a URI that is no resource is not), streams `notifications/resources/updated` for the
// changed proposal (and its DAO), nothing for another proposal, and closes gracefully (the final
// result) when the stream's longest duration passes.
on_both_backends!(replica: listen_streams_the_updates_of_a_publication, |backend: Backend| async move {
    let w = world_with(backend, |a| a.limits.stream_max_duration = Some(Duration::from_secs(20))).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let key = first_proposal(&w.app).await;
    let watched = format!("govdata://proposals/{key}");
    let others = [format!("govdata://daos/{DAO}"), "govdata://proposals/p_AAAAAAAAAAAAAAAAAAAAAA".to_owned()];
    let params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "tests", "version": "0" },
        },
        "notifications": {
            "toolsListChanged": true,
            "resourceSubscriptions": [watched, others[0], others[1], "govdata://nothing/x"],
        },
    });
    let response = w
        .app
        .anonymous
        .post(w.app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "subscriptions/listen")
        .json(&json!({ "jsonrpc": "2.0", "id": 41, "method": "subscriptions/listen", "params": params }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = Sse::of(response);
    let ack = loop {
        let event = stream.next_event(Duration::from_secs(5)).await.expect("the acknowledgment");
        if event.data.as_deref().is_some_and(|d| !d.is_empty()) {
            break event.json();
        }
    };
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41);
    let accepted = &ack["params"]["notifications"];
    assert_eq!(accepted["resourceSubscriptions"], json!([watched, others[0], others[1]]), "{ack}");
    assert!(accepted.get("toolsListChanged").is_none_or(|v| v == false), "not offered: {ack}");

    let published = change_first_proposal(&w).await;
    let mut told = Vec::new();
    while told.len() < 2 {
        let event = stream.next_event(Duration::from_secs(5)).await.expect("an update");
        let message = event.json();
        assert_eq!(message["method"], "notifications/resources/updated", "{message}");
        assert_eq!(message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41);
        told.push(message["params"]["uri"].as_str().unwrap().to_owned());
    }
    assert!(published.elapsed() < Duration::from_secs(5), "told within 5 s: {:?}", published.elapsed());
    told.sort();
    let mut expected = vec![watched.clone(), others[0].clone()];
    expected.sort();
    assert_eq!(told, expected, "the proposal and its DAO, each once; not the other proposal");
    // The longest stream duration passes: the final result, then the end of the stream.
    let last = loop {
        let event = stream.next_event(Duration::from_secs(25)).await.expect("the final result");
        if event.data.as_deref().is_some_and(|d| !d.is_empty()) {
            break event.json();
        }
    };
    assert_eq!(last["id"], 41, "{last}");
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{last}");
    assert!(stream.next(Duration::from_secs(5)).await.is_none(), "the stream ends");
});

// Protocol 2025-11-25 over raw HTTP: a session subscribes, and its GET stream carries
// `notifications/resources/updated` for the changed proposal once, not for what it unsubscribed
// from.
on_both_backends!(replica: a_session_is_told_on_its_get_stream, |backend: Backend| async move {
    let w = world_with(backend, |_| {}).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let key = first_proposal(&w.app).await;
    let watched = format!("govdata://proposals/{key}");
    let session = open_session(&w.app).await.expect("a session");
    let in_session = [("mcp-session-id", session.as_str())];
    let response = w
        .app
        .anonymous
        .get(w.app.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", LEGACY)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = Sse::of(response);
    for uri in [watched.clone(), format!("govdata://daos/{DAO}")] {
        let (_, _, body) = rpc(&w.app, LEGACY, "resources/subscribe", json!({ "uri": uri }), &in_session).await;
        assert_eq!(body["result"], json!({}), "{body}");
    }
    let dao = format!("govdata://daos/{DAO}");
    let (_, _, body) = rpc(&w.app, LEGACY, "resources/unsubscribe", json!({ "uri": dao }), &in_session).await;
    assert_eq!(body["result"], json!({}), "{body}");

    let published = change_first_proposal(&w).await;
    let update = loop {
        let event = stream.next_event(Duration::from_secs(5)).await.expect("an update");
        if event.data.as_deref().is_some_and(|d| !d.is_empty()) {
            break event.json();
        }
    };
    assert!(published.elapsed() < Duration::from_secs(5), "told within 5 s: {:?}", published.elapsed());
    assert_eq!(update["method"], "notifications/resources/updated", "{update}");
    assert_eq!(update["params"]["uri"], watched.as_str(), "{update}");
    // Nothing else: the DAO was unsubscribed from, the proposal is told once.
    if let Ok(next) = tokio::time::timeout(Duration::from_secs(3), stream.next(Duration::from_secs(60))).await {
        assert!(next.as_ref().is_none_or(|e| e.comment), "{next:?}");
    }
});

/// The script's progress on stderr, line by line, until `wanted` appears (failing after `within`);
/// the rest is drained into the returned log by a task of its own.
async fn progress_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    log: &mut String,
    wanted: &str,
    within: Duration,
) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("`{wanted}` within {within:?}; the client said:\n{log}"))
            .expect("stderr reads")
            .unwrap_or_else(|| panic!("the client ended before `{wanted}`:\n{log}"));
        log.push_str(&line);
        log.push('\n');
        if line.contains(wanted) {
            return;
        }
    }
}

/// One SDK client, started.
struct Client {
    name: &'static str,
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    log: String,
}

async fn python() -> Option<std::path::PathBuf> {
    static READY: tokio::sync::OnceCell<Result<std::path::PathBuf, String>> = tokio::sync::OnceCell::const_new();
    crate::helpers::pinned_python(&READY, "mcp", "mcp").await
}

// The official SDKs, each a real client of a real server: the TypeScript SDK 1.x (protocol
// 2025-11-25: a session, `resources/subscribe`, the GET stream), its 2.x client (2026-07-28:
// `subscriptions/listen`), and the Python SDK in both generations. Each lists the templates,
// reads a proposal (with a partner token: the read is paid), subscribes to it; then a
// publication changes that proposal, and each must be told within 5 s (the sessions of the
// 2025-11-25 clients outlive their idle time meanwhile: the clients answer the server's pings).
// The MCP Inspector's CLI lists the templates.
on_both_backends!(replica: the_official_sdks_subscribe_and_are_told_within_5_s, |backend: Backend| async move {
    if !require_toolkit().await {
        return;
    }
    let Some(python) = python().await else { return };
    // A listen stream lives as long as the server lets a stream live: the test's own servers end
    // theirs after a second.
    // Sessions idle out after 3 s here: a subscribed session's client answers the server's pings
    // (every second) and keeps it.
    let w = world_with(backend, |a| {
        a.limits.stream_max_duration = None;
        a.limits.mcp_session_idle = Duration::from_secs(3);
    })
    .await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let key = first_proposal(&w.app).await;
    let uri = format!("govdata://proposals/{key}");
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let url = w.app.url("/mcp");
    let header = format!("x-service-api-token:{token}");
    let wait = "20000";
    let common = ["--url", &url, "--header", &header, "--read", &uri, "--subscribe", &uri, "--wait-ms", wait];
    let mut clients = Vec::new();
    for (name, sdk) in [("typescript 1.x, 2025-11-25", "v1"), ("typescript 2.x, 2026-07-28", "v2")] {
        let mut args = vec!["--sdk", sdk];
        args.extend(common);
        let mut child = spawn_script("mcp-resources.mjs", &args);
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        clients.push(Client { name, child, lines, log: String::new() });
    }
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/resources.py");
    for (name, mode) in [("python, 2025-11-25", "legacy"), ("python, 2026-07-28", MODERN)] {
        let mut child = tokio::process::Command::new(&python)
            .arg(&script)
            .args(["--mode", mode])
            .args(common)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python");
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        clients.push(Client { name, child, lines, log: String::new() });
    }
    for client in &mut clients {
        progress_until(&mut client.lines, &mut client.log, "subscribed", Duration::from_secs(60)).await;
    }

    // Longer than a session's idle time: the 2025-11-25 sessions live on their pings.
    tokio::time::sleep(Duration::from_secs(5)).await;
    // What a read answered before the publication.
    let (_, http) = w.app.get_json(&format!("/v2/proposals/{key}")).await;
    let published = change_first_proposal(&w).await;
    for client in &mut clients {
        let left = Duration::from_secs(5).saturating_sub(published.elapsed());
        progress_until(&mut client.lines, &mut client.log, &format!("updated {uri}"), left).await;
        eprintln!("{}: told {:?} after the publication", client.name, published.elapsed());
    }

    for Client { name, child, mut lines, mut log } in clients {
        let drained = tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                log.push_str(&line);
                log.push('\n');
            }
            log
        });
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.expect("ends").unwrap();
        let log = drained.await.unwrap();
        assert!(out.status.success(), "{name}: {log}");
        let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {log}"));
        let protocol = if name.ends_with(MODERN) { MODERN } else { LEGACY };
        assert_eq!(result["protocolVersion"], protocol, "{name}: {result}");
        let names: Vec<&str> =
            result["templates"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["dao", "proposal", "voter"], "{name}");
        let text = result["read"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{name}: {result}"));
        let read: Value = serde_json::from_str(text).unwrap();
        assert_eq!(read["data"], http["data"], "{name}: the read is the operation's answer");
        assert!(result["updates"].as_array().unwrap().contains(&json!(uri)), "{name}: {result}");
    }

    // The MCP Inspector's CLI lists the templates.
    let catalog = tempfile::tempdir().unwrap();
    let inspector = tokio::process::Command::new("node")
        .arg("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
        .args(["--cli", &url, "--transport", "http", "--method", "resources/templates/list"])
        .env("MCP_CATALOG_PATH", catalog.path().join("mcp.json"))
        .current_dir(toolkit())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&inspector.stdout);
    assert!(inspector.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&inspector.stderr));
    let listed: Value = serde_json::from_str(&stdout).expect("the inspector prints the list");
    let templates: Vec<&str> =
        listed["resourceTemplates"].as_array().unwrap().iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert_eq!(
        templates,
        ["govdata://daos/{daoId}", "govdata://proposals/{proposalKey}", "govdata://voters/{voterIdentity}"]
    );
});
