//! What an operator sees: Prometheus metrics at `/metrics` (internal token only) and one
//! structured log line per request.
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::{Backend, INTERNAL_TOKEN, sample_database};
use crate::on_both_backends;

fn sample<'a>(
    scrape: &'a prometheus_parse::Scrape,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'a prometheus_parse::Sample> {
    scrape.samples.iter().find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
}

fn value(s: &prometheus_parse::Sample) -> f64 {
    match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => f64::NAN,
    }
}

on_both_backends!(metrics_are_scraped_with_the_internal_token_only, |app: TestApp| async move {
    for _ in 0..2 {
        assert_eq!(app.get("/v1/daos?limit=3").await.status(), 200);
    }
    let hidden = app.anonymous.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(hidden.status(), 404, "not public");
    assert_eq!(hidden.headers()["content-type"], "application/problem+json");
    let r = app.get("/metrics").await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = r.text().await.unwrap();
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("the Prometheus text format");
    let requests = sample(
        &scrape,
        "govdata_http_requests_total",
        &[("operation", "v1.daos_list"), ("status", "200"), ("cache", "hit")],
    )
    .expect("requests by operation, status and cache");
    assert!(value(requests) >= 1.0);
    let latency = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "govdata_http_request_duration_seconds" && s.labels.get("operation") == Some("v1.daos_list")
        })
        .expect("a latency histogram");
    assert!(matches!(latency.value, prometheus_parse::Value::Histogram(_)), "{:?}", latency.value);
    assert!(value(sample(&scrape, "govdata_response_cache_hits_total", &[]).expect("cache hits")) >= 1.0);
    assert!(value(sample(&scrape, "govdata_db_pool_connections", &[("state", "max")]).expect("pool use")) >= 1.0);
    for family in ["govdata_response_cache_bytes", "govdata_connections_open", "govdata_response_cache_evictions_total"]
    {
        assert!(sample(&scrape, family, &[]).is_some(), "{family}");
    }
});

/// `GOVDATA_LOG_FORMAT=json`: one JSON line per request, with what an operator looks for and
/// never a credential.
#[tokio::test]
async fn json_logs_have_one_line_per_request() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(["serve", "--addr", "127.0.0.1:0", "--no-sample"])
        .env("DATABASE_URL", sample_database(Backend::Sqlite))
        .env("GOVDATA_INTERNAL_TOKEN", INTERNAL_TOKEN)
        .env("GOVDATA_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut base = None;
    while base.is_none() {
        let line = lines.next_line().await.unwrap().expect("logs");
        let json: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        base = json["message"]
            .as_str()
            .and_then(|m| m.split("listening on ").nth(1))
            .map(|r| r.split_whitespace().next().unwrap().to_owned());
    }
    let base = base.unwrap();
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{base}/v2/daos?limit=2"))
        .header("x-internal-token", INTERNAL_TOKEN)
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!("{base}/v2/daos"))
        .header("x-service-api-token", "gdp_not_a_token")
        .header("x-request-id", "trace-me-43")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.len() < 2 {
        let line =
            tokio::time::timeout_at(deadline, lines.next_line()).await.expect("the lines arrive").unwrap().unwrap();
        assert!(!line.contains(INTERNAL_TOKEN) && !line.contains("gdp_not_a_token"), "a credential was logged: {line}");
        let json: Value = serde_json::from_str(&line).unwrap();
        if json["target"] == "govdata::access" {
            seen.push(json);
        }
    }
    assert_eq!(seen[0]["request_id"], "trace-me-42");
    assert_eq!(seen[0]["operation"], "v2.daos_list");
    assert_eq!(seen[0]["status"], 200);
    assert_eq!(seen[0]["tier"], "standard");
    assert_eq!(seen[0]["credential"], "internal");
    assert_eq!(seen[0]["cache"], "miss");
    assert_eq!(seen[0]["method"], "GET");
    assert!(seen[0]["latency_ms"].as_f64().is_some_and(|ms| ms > 0.0));
    assert_eq!(seen[1]["request_id"], "trace-me-43");
    assert_eq!((seen[1]["status"].as_u64(), seen[1]["credential"].as_str()), (Some(401), Some("partner")));
}

// Every path the server serves is labelled in the metrics by what it serves, never
// `unmatched`: each operation of both surfaces (`v1.daos_list`), and each path that is not an
// operation by its declaration (`contract::paths`: `document`, `llms`, `health`…).
on_both_backends!(every_served_path_has_a_metrics_label, |app: TestApp| async move {
    use std::collections::BTreeMap;

    use govdata::contract::{
        access::{Prices, Version},
        operations,
        paths::PATHS,
    };

    let documents = govdata::api::documents(Prices::default());
    // (method, path, the label it must be counted under)
    let mut requests: Vec<(&str, String, String)> =
        PATHS.iter().map(|p| (p.methods[0], p.path.to_owned(), p.label.to_owned())).collect();
    for version in [Version::V1, Version::V2] {
        for (method, template, id) in documents.get(version).operations() {
            let decl = operations::find(version, id).expect("every operation is declared");
            // Any value labels the request: the route is found before the handler reads it.
            let path: Vec<&str> = template.split('/').map(|s| if s.starts_with('{') { "uniswap" } else { s }).collect();
            requests.push((method, path.join("/"), format!("{}.{}", &version.prefix()[1..], decl.local_id())));
        }
    }
    let counts = || async {
        let text = app.get("/metrics").await.text().await.unwrap();
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        let mut counts = BTreeMap::<String, f64>::new();
        for s in scrape.samples.iter().filter(|s| s.metric == "govdata_http_requests_total") {
            *counts.entry(s.labels.get("operation").unwrap_or_default().to_owned()).or_default() += value(s);
        }
        counts
    };
    let before = counts().await;
    let mut expected = BTreeMap::<String, f64>::new();
    for (method, path, label) in &requests {
        assert_ne!(label, "unmatched", "{method} {path}");
        let method: reqwest::Method = method.parse().unwrap();
        let status = app.client.request(method.clone(), app.url(path)).send().await.unwrap().status();
        if PATHS.iter().any(|p| p.path == path) {
            assert!(![404, 405].contains(&status.as_u16()), "{method} {path} is served: {status}");
        }
        *expected.entry(label.clone()).or_default() += 1.0;
    }
    let after = counts().await;
    for (label, n) in expected {
        let counted = after.get(&label).copied().unwrap_or_default() - before.get(&label).copied().unwrap_or_default();
        assert!(counted >= n, "{n} requests should be counted under `{label}`, {counted} were\n{after:#?}");
    }
});
