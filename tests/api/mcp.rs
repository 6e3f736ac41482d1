//! MCP at `/mcp` over HTTP: the tool list is the operation table, every tool answers what its
//! operation answers over HTTP, paid tools are gated exactly as HTTP is (402 with the challenge
//! at the HTTP layer, a token on the MCP request), and bad calls are tool errors carrying the
//! problem document. The reference clients (the TypeScript SDK, the MCP Inspector CLI, and
//! `@x402/fetch` paying on a local chain) are in `the_reference_clients_*`.
use std::collections::BTreeSet;

use base64::Engine;
use govdata::{
    api,
    contract::{access::Prices, operations},
};
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::access::{paid_paths, partner_token};
use crate::fixtures::chain::{PAY_TO, PAYER_KEY, PayingRig, require_toolkit, script, toolkit};
use crate::helpers::{TestApp, sample_database, spawn_app_with};
use crate::on_both_backends;

const PROTOCOL: &str = "2025-11-25";

/// One JSON-RPC request to `/mcp`, with `headers`: the status, headers and body of the answer.
async fn rpc(app: &TestApp, method: &str, params: Value, headers: &[(&str, &str)]) -> (u16, HeaderMap, Value) {
    let mut request = app
        .anonymous
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL)
        .json(&json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

/// `tools/call` of `name`: the answer's status, headers and JSON-RPC body.
async fn call(app: &TestApp, name: &str, arguments: Value, headers: &[(&str, &str)]) -> (u16, HeaderMap, Value) {
    rpc(app, "tools/call", json!({ "name": name, "arguments": arguments }), headers).await
}

/// The problem document a tool error carries.
fn problem_of(body: &Value) -> Value {
    let result = &body["result"];
    assert_eq!(result["isError"], true, "a tool error: {body}");
    assert!(result.get("structuredContent").is_none(), "an error has no envelope: {body}");
    serde_json::from_str(result["content"][0]["text"].as_str().expect("text content")).expect("a problem document")
}

/// The answer without what depends on the moment it was served, the request it answered, or
/// whether the same question was asked just before (`cacheStatus`: the response cache).
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

/// Where two JSON values differ (JSON pointers), for a readable failure.
fn differences(a: &Value, b: &Value, at: &str) -> Vec<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    differences(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        &format!("{at}/{k}"),
                    )
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().flat_map(|(i, (x, y))| differences(x, y, &format!("{at}/{i}"))).collect()
        }
        _ if a == b => Vec::new(),
        _ => vec![format!("{at}: {a} ≠ {b}")],
    }
}

/// A tool's arguments for a concrete request path of its operation (`paid_paths`' paths).
fn arguments(tool: &Value, template: &str, path: &str) -> Value {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut args = Map::new();
    for (t, segment) in template.split('/').zip(path.split('/')) {
        if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            let value = percent_encoding::percent_decode_str(segment).decode_utf8().unwrap().into_owned();
            args.insert(name.to_owned(), json!(value));
        }
    }
    for (name, value) in serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap() {
        // Typed as the input schema types it, as a model would write it.
        let typed = match tool["inputSchema"]["properties"][&name]["type"].as_str() {
            Some("integer") => json!(value.parse::<i64>().unwrap()),
            _ => json!(value),
        };
        args.insert(name, typed);
    }
    Value::Object(args)
}

on_both_backends!(the_tools_are_the_operations, |app: TestApp| async move {
    let (status, headers, body) = rpc(
        &app,
        "initialize",
        json!({ "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } }),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(headers.contains_key("x-request-id"));
    let init = &body["result"];
    assert_eq!(init["protocolVersion"], PROTOCOL, "{body}");
    assert_eq!(init["serverInfo"]["name"], "govdata");
    assert!(init["capabilities"]["tools"].is_object());
    assert!(init["instructions"].as_str().unwrap().contains("x-service-api-token"));

    let (status, _, body) = rpc(&app, "tools/list", json!({}), &[]).await;
    assert_eq!(status, 200, "tools/list is free: {body}");
    let tools = body["result"]["tools"].as_array().expect("tools").clone();
    let names: BTreeSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // A stream is no tool: a tool call returns.
    let declared: BTreeSet<String> = operations::ALL.iter().filter(|d| is_tool(d)).map(|d| d.qualified_id()).collect();
    assert_eq!(names.len(), tools.len(), "names are unique");
    assert_eq!(names, declared.iter().map(String::as_str).collect(), "one tool per declared operation");
    // What is served is what is committed (`openapi/mcp-tools.json`, kept fresh by codegen).
    let documents = api::documents(Prices::default());
    let committed: Value = serde_json::from_str(&documents.tools_json).unwrap();
    assert_eq!(body["result"]["tools"], committed["tools"]);

    for version in [govdata::contract::access::Version::V1, govdata::contract::access::Version::V2] {
        let published = documents.get(version);
        for (method, template, id) in published.operations() {
            let decl = operations::find(version, id).unwrap();
            if !is_tool(decl) {
                continue;
            }
            let tool = tools.iter().find(|t| t["name"] == decl.qualified_id()).unwrap();
            let op = &published.json["paths"][template][method];
            let summary = op["summary"].as_str().unwrap();
            assert_eq!(tool["title"], summary);
            let description = tool["description"].as_str().unwrap();
            assert!(description.starts_with(summary), "{id}");
            assert!(description.contains("Access: "), "{id}: the tool says what it costs: {description}");
            // The arguments are the operation's parameters, the path ones required.
            let input = &tool["inputSchema"];
            assert_eq!(input["type"], "object");
            assert_eq!(input["additionalProperties"], false);
            let params: BTreeSet<&str> =
                op["parameters"].as_array().into_iter().flatten().map(|p| p["name"].as_str().unwrap()).collect();
            let properties: BTreeSet<&str> =
                input["properties"].as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(properties, params, "{id}");
            for p in template.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))) {
                assert!(input["required"].as_array().unwrap().contains(&json!(p)), "{id}: {p} is required");
            }
            // Self-contained JSON Schema: no reference leaves the schema.
            let output = &tool["outputSchema"];
            assert_eq!(output["type"], "object", "{id}");
            for schema in [input, output] {
                let text = schema.to_string();
                assert!(!text.contains("#/components/"), "{id}: {text:.200}");
                for reference in text.split("\"$ref\":\"").skip(1) {
                    let name = reference.split('"').next().unwrap().strip_prefix("#/$defs/").expect("into $defs");
                    assert!(schema["$defs"].get(name).is_some(), "{id}: $defs has {name}");
                }
            }
            assert_eq!(tool["annotations"]["readOnlyHint"], true);
        }
    }
});

// The transport's rule against DNS rebinding: a request whose `Origin` is present and not the
// server's own (or an allowed site's) is refused with 403 before any work, and so is one whose
// `Host` names another site (a page whose own name was rebound to 127.0.0.1 sends both).
// Requests without `Origin`, as servers and CLIs send them, and from the server's own origins,
// are served.
on_both_backends!(mcp_refuses_foreign_origins_and_hosts, |app: TestApp| async move {
    let init =
        json!({ "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } });
    let port = app.addr.port();
    let rebound_host = format!("evil.example:{port}");
    let rebound_origin = format!("http://evil.example:{port}");
    let refused: [Vec<(&str, &str)>; 5] = [
        vec![("origin", "https://evil.example")],
        vec![("origin", rebound_origin.as_str()), ("host", rebound_host.as_str())],
        vec![("host", rebound_host.as_str())],
        vec![("origin", "null")],
        // The server's name at another port is another origin.
        vec![("origin", "http://127.0.0.1:1")],
    ];
    for headers in &refused {
        let (status, answer, body) = rpc(&app, "initialize", init.clone(), headers).await;
        assert_eq!(status, 403, "{headers:?}: {body}");
        assert_eq!(answer["content-type"], "application/problem+json", "{headers:?}");
        assert_eq!(body["code"], "FORBIDDEN", "{headers:?}: {body}");
        assert_eq!(body["status"], 403);
        assert!(body["detail"].as_str().unwrap().contains("/mcp"), "{body}");
        // Refused before the SDK: no JSON-RPC answer, no tool ran.
        assert!(body.get("result").is_none() && body.get("jsonrpc").is_none(), "{body}");
    }
    let own = [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}"), format!("http://[::1]:{port}")];
    for origin in &own {
        let (status, _, body) = rpc(&app, "initialize", init.clone(), &[("origin", origin.as_str())]).await;
        assert_eq!(status, 200, "{origin}: {body}");
        assert_eq!(body["result"]["serverInfo"]["name"], "govdata");
    }
    let local_name = format!("localhost:{port}");
    let (status, _, body) = rpc(&app, "tools/list", json!({}), &[("host", local_name.as_str())]).await;
    assert_eq!(status, 200, "no Origin, a loopback name: served: {body}");
});

// An operator's `GOVDATA_MCP_ALLOWED_ORIGINS` lets that site's pages call; `*` lets any.
on_both_backends!(mcp_serves_the_origins_an_operator_allows, |backend: Backend| async move {
    let init =
        json!({ "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": { "name": "tests", "version": "0" } });
    let app = spawn_app_with(sample_database(backend), |a| {
        a.mcp_allowed_origins = vec!["https://app.example.com".parse().expect("an origin")];
    })
    .await;
    let (status, _, body) = rpc(&app, "initialize", init.clone(), &[("origin", "https://app.example.com")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = rpc(&app, "initialize", init.clone(), &[("origin", "https://other.example.com")]).await;
    assert_eq!(status, 403);
    let app =
        spawn_app_with(sample_database(backend), |a| a.mcp_allowed_origins = vec!["*".parse().expect("any")]).await;
    let (status, _, body) = rpc(&app, "initialize", init.clone(), &[("origin", "https://other.example.com")]).await;
    assert_eq!(status, 200, "{body}");
    let host = format!("other.example.com:{}", app.addr.port());
    let (status, _, _) = rpc(&app, "initialize", init, &[("host", host.as_str())]).await;
    assert_eq!(status, 403, "`*` opens origins, not host names");
});

on_both_backends!(every_tool_answers_what_its_operation_answers, |app: TestApp| async move {
    let (_, token) = partner_token(&app, &["v1:paid:*", "v2:paid:*"]).await;
    let credential = [("x-service-api-token", token.as_str())];
    let (_, _, listed) = rpc(&app, "tools/list", json!({}), &[]).await;
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    let documents = api::documents(Prices::default());

    let mut cases: Vec<(String, String, bool)> = vec![
        ("daos_list".into(), "/v1/daos?limit=3&offset=1".into(), false),
        ("pricing_get".into(), "/v1/meta/pricing".into(), false),
        // Files of a DAO no test builds (the list changes as files are built).
        ("v2_exports_list".into(), "/v2/exports?daoId=lido&limit=3".into(), false),
        ("v2_export_tables_list".into(), "/v2/export-tables".into(), false),
    ];
    cases.extend(
        paid_paths(&app)
            .await
            .into_iter()
            .filter(|(_, _, d, _)| is_tool(d))
            .map(|(_, id, _, path)| (id.to_owned(), path, true)),
    );
    assert_eq!(
        cases.len(),
        operations::ALL.iter().filter(|d| is_tool(d)).count(),
        "every operation with a tool is called"
    );
    for (id, path, paid) in cases {
        let decl = operations::ALL.iter().find(|d| d.id == id).unwrap();
        let tool = tools.iter().find(|t| t["name"] == decl.qualified_id()).unwrap();
        let (_, template, _) = documents.get(decl.version).operations().find(|(_, _, op)| *op == id).unwrap();
        let args = arguments(tool, template, &path);
        let headers: &[(&str, &str)] = if paid { &credential } else { &[] };

        let http = app.anonymous.get(app.url(&path)).header("x-service-api-token", &token).send().await.unwrap();
        let http_status = http.status().as_u16();
        let http_body: Value = http.json().await.unwrap();
        let (status, headers, body) = call(&app, tool["name"].as_str().unwrap(), args.clone(), headers).await;
        assert_eq!(status, 200, "{id} {args}: {body}");
        if http_status == 200 {
            let result = &body["result"];
            assert_eq!(result["isError"], false, "{id} {args}: {body}");
            let (tool_answer, http_answer) = (stable(&result["structuredContent"]), stable(&http_body));
            assert!(tool_answer == http_answer, "{id}: {:?}", differences(&tool_answer, &http_answer, ""));
            let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text, result["structuredContent"], "{id}: the text is the same JSON");
            if paid {
                assert_eq!(headers["cache-control"], "private", "{id}: a partner's answer stays private");
            }
        } else {
            // The sample has no forum topics: the one 404, a tool error like any refusal.
            assert_eq!((id.as_str(), http_status), ("v2_topics_get", 404), "{http_body}");
            assert_eq!(stable(&problem_of(&body)), stable(&http_body));
        }
    }
});

fn decode(header: &str) -> Value {
    let bytes = base64::engine::general_purpose::STANDARD.decode(header).expect("base64");
    serde_json::from_slice(&bytes).expect("JSON")
}

on_both_backends!(paid_tools_are_gated_as_http_is, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| a.payments.pay_to = Some(PAY_TO.to_owned())).await;
    // No credentials: the MCP request itself answers 402, with the operation's challenge.
    let (status, headers, body) = call(&app, "v2_daos_get", json!({ "daoId": "uniswap" }), &[]).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(body["code"], "PAYMENT_REQUIRED");
    assert_eq!(body["accepts"][0]["resource"], app.url("/v2/daos/uniswap"), "{body}");
    let challenge = decode(headers["payment-required"].to_str().unwrap());
    assert_eq!(challenge["x402Version"], 2);
    assert_eq!(challenge["resource"]["url"], app.url("/v2/daos/uniswap"), "the operation's resource");
    assert_eq!(challenge["accepts"][0]["amount"], "1000");
    assert!(challenge["extensions"]["bazaar"].is_object(), "the discovery extension too");
    // The same challenge as the operation's own over HTTP.
    let http = app.anonymous.get(app.url("/v2/daos/uniswap")).send().await.unwrap();
    assert_eq!(decode(http.headers()["payment-required"].to_str().unwrap()), challenge);

    // A payment that does not check out: 402 again, never a tool answer.
    let (status, _, body) =
        call(&app, "v2_daos_get", json!({ "daoId": "uniswap" }), &[("payment-signature", "bm9uc2Vuc2U=")]).await;
    assert_eq!(status, 402, "{body}");

    // Refusals of a credential are tool errors carrying the problem.
    let (status, _, body) =
        call(&app, "v2_daos_get", json!({ "daoId": "uniswap" }), &[("x-service-api-token", "gdp_nope")]).await;
    assert_eq!(status, 200);
    assert_eq!(problem_of(&body)["code"], "UNAUTHORIZED");
    let (_, v1_only) = partner_token(&app, &["v1:paid:*"]).await;
    let (_, _, body) =
        call(&app, "v2_daos_get", json!({ "daoId": "uniswap" }), &[("x-service-api-token", &v1_only)]).await;
    let problem = problem_of(&body);
    assert_eq!(problem["code"], "FORBIDDEN");
    assert!(problem["detail"].as_str().unwrap().contains("v2:paid:standard"), "{problem}");
    // The same token opens its own surface.
    let (_, _, body) = call(&app, "v1_freshness_get", json!({}), &[("x-service-api-token", &v1_only)]).await;
    assert_eq!(body["result"]["isError"], false, "{body}");

    // Free tools and the protocol's own methods need nothing.
    let (status, _, body) = call(&app, "v1_daos_list", json!({}), &[]).await;
    assert_eq!((status, &body["result"]["isError"]), (200, &json!(false)), "{body}");
});

on_both_backends!(bad_calls_are_tool_errors_never_failures, |app: TestApp| async move {
    let (status, _, body) = call(&app, "v9_nothing_here", json!({}), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32602, "an unknown tool is a protocol error: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("tools/list"));

    let internal = [("x-internal-token", crate::helpers::INTERNAL_TOKEN)];
    let cases = [
        ("v1_daos_list", json!({ "nope": 1 }), "nope", "is not an argument of `v1_daos_list`"),
        ("v1_daos_list", json!({ "limit": { "n": 1 } }), "limit", "must be a string, a number or a boolean"),
        ("v2_daos_get", json!({}), "daoId", "is required"),
    ];
    for (tool, args, name, reason) in cases {
        let (status, _, body) = call(&app, tool, args.clone(), &internal).await;
        assert_eq!(status, 200);
        let problem = problem_of(&body);
        assert_eq!(problem["code"], "VALIDATION_ERROR", "{tool} {args}: {problem}");
        assert_eq!(problem["errors"][0]["name"], name);
        assert_eq!(problem["errors"][0]["reason"], reason);
        assert!(!problem["requestId"].as_str().unwrap().is_empty());
    }
    // What the operation refuses is refused as over HTTP, in the same words.
    let (_, http) = app.get_json("/v2/proposals?limit=0").await;
    let (_, _, body) = call(&app, "v2_proposals_list", json!({ "limit": 0 }), &internal).await;
    assert_eq!(stable(&problem_of(&body)), stable(&http));
    // A path argument stays in its segment.
    let (_, _, body) = call(&app, "v2_daos_get", json!({ "daoId": "../../v1/meta/pricing" }), &internal).await;
    let problem = problem_of(&body);
    assert!(matches!(problem["status"].as_u64(), Some(400 | 404)), "{problem}");

    // Not JSON-RPC, or not a method /mcp serves: a clear 4xx, never a 500.
    let garbage = app
        .anonymous
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let status = garbage.body("{not json").send().await.unwrap().status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    let status = app.anonymous.get(app.url("/mcp")).send().await.unwrap().status().as_u16();
    assert!((400..500).contains(&status), "{status}");
    let big = "x".repeat(100 * 1024);
    let (status, headers, body) =
        rpc(&app, "tools/call", json!({ "name": "v1_daos_list", "arguments": { "q": big } }), &[]).await;
    assert_eq!(status, 400, "the body is bounded, and its refusal is a problem document");
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(body["code"], "VALIDATION_ERROR");
});

/// The MCP TypeScript SDK and the MCP Inspector CLI list and call the tools; `@x402/fetch` as the
/// SDK transport's fetch pays a paid tool on a local chain, and a refused paid call costs nothing.
#[tokio::test]
async fn the_reference_clients_list_call_and_pay() {
    if !require_toolkit().await {
        return;
    }
    let rig = PayingRig::start().await;
    let app = &rig.app;
    let url = app.url("/mcp");
    // A stream is no tool: a tool call returns.
    let declared: BTreeSet<String> = operations::ALL.iter().filter(|d| is_tool(d)).map(|d| d.qualified_id()).collect();
    let names = |tools: &Value| -> BTreeSet<String> {
        tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };

    // The TypeScript SDK: free and partner-token calls, its output-schema check on each answer.
    let (_, partner) = partner_token(app, &["v2:paid:*"]).await;
    let session = script(
        "mcp.mjs",
        &[
            "--url",
            &url,
            "--header",
            &format!("x-service-api-token: {partner}"),
            "--call",
            r#"v1_daos_list {"limit": 2}"#,
            "--call",
            r#"v2_daos_get {"daoId": "uniswap"}"#,
            "--call",
            r#"v2_proposals_list {"daoId": "uniswap", "limit": 3}"#,
            "--call",
            r#"v2_daos_get {"daoId": "no-such-dao"}"#,
        ],
    )
    .await;
    assert_eq!(session["server"]["name"], "govdata");
    assert_eq!(names(&session["tools"]), declared);
    let calls = session["calls"].as_array().unwrap();
    for served in &calls[..3] {
        assert_eq!(served["result"]["isError"], false, "{served}");
        assert!(served["result"]["structuredContent"]["data"].is_object(), "{served}");
    }
    assert_eq!(calls[1]["result"]["structuredContent"]["data"]["daoId"], "uniswap");
    assert_eq!(calls[2]["result"]["structuredContent"]["data"]["items"].as_array().unwrap().len(), 3);
    assert_eq!(calls[3]["result"]["isError"], true, "{}", calls[3]);
    let problem: Value = serde_json::from_str(calls[3]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(problem["code"], "NOT_FOUND");

    // Without credentials a paid call is an HTTP 402 the SDK reports as such.
    let unpaid = script("mcp.mjs", &["--url", &url, "--call", r#"v2_daos_get {"daoId": "uniswap"}"#]).await;
    assert_eq!(unpaid["calls"][0]["code"], 402, "{unpaid}");

    // Paying through @x402/fetch as the transport's fetch: the payee gets exactly the price, and
    // the ledger records it; a paid call the operation refuses (404) is never charged.
    let before = rig.balance().await;
    let paid = script(
        "mcp.mjs",
        &[
            "--url",
            &url,
            "--key",
            PAYER_KEY,
            "--call",
            r#"v2_voters_list {"daoId": "uniswap", "limit": 3}"#,
            "--call",
            r#"v2_daos_get {"daoId": "no-such-dao"}"#,
        ],
    )
    .await;
    let calls = paid["calls"].as_array().unwrap();
    assert_eq!(calls[0]["result"]["isError"], false, "{paid}");
    let (_, http) = app.get_json("/v2/daos/uniswap/voters?limit=3").await;
    assert_eq!(stable(&calls[0]["result"]["structuredContent"]), stable(&http), "the paid answer is the data");
    assert_eq!(calls[1]["result"]["isError"], true, "{paid}");
    let receipts = paid["payments"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "one settled payment: {paid}");
    assert_eq!(receipts[0]["paymentResponse"]["success"], true);
    assert_eq!(rig.balance().await, before + 5_000, "the plus tier's price, once");
    // The sample store is shared with other payment tests: find this payment by its transaction.
    let transaction = receipts[0]["paymentResponse"]["transaction"].as_str().expect("a transaction");
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let ledger = govdata::store::payments::list(&db).await.unwrap();
    let row = ledger.iter().find(|p| p.transaction.as_deref() == Some(transaction)).expect("recorded");
    assert_eq!(row.status, govdata::store::entities::x402_payment::PaymentStatus::Settled);
    assert_eq!(row.endpoint, "GET /v2/daos/{daoId}/voters");
    assert_eq!(row.amount, "5000");

    // The MCP Inspector CLI lists the tools, with its schema-portability check at its strictest.
    let catalog = tempfile::tempdir().unwrap();
    let inspector = tokio::process::Command::new("node")
        .arg("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
        .args(["--cli", &url, "--transport", "http", "--method", "tools/list", "--strict"])
        .env("MCP_CATALOG_PATH", catalog.path().join("mcp.json"))
        .current_dir(toolkit())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&inspector.stdout);
    assert!(inspector.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&inspector.stderr));
    let listed: Value = serde_json::from_str(&stdout).expect("the inspector prints the list");
    assert_eq!(names(&listed["tools"]), declared);
}

/// Whether an operation is an MCP tool: every one that answers and reads (not a stream, which
/// never answers; not a partner's webhook management).
fn is_tool(d: &govdata::contract::operations::OperationDecl) -> bool {
    !d.streams && !d.downloads && d.partner_tier().is_none()
}
