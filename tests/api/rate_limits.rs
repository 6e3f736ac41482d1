//! Fair use: rate limits per client address, partner token and x402 payer
//! (`contract::access::RatePolicy`), answered 429 `RATE_LIMITED` with `Retry-After` and the
//! `RateLimit-Policy`/`RateLimit` headers. (Payers: `payments.rs`; several processes:
//! `processes.rs`.)
use govdata::contract::access::{Rate, RatePolicy};
use serde_json::Value;

use crate::helpers::{fresh_database, spawn_app_with};
use crate::on_both_backends;

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

on_both_backends!(a_client_over_its_limit_gets_429_with_the_rate_limit_headers, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |a| {
        a.rates.rate_client = "3/1h".parse().unwrap();
    })
    .await;
    for remaining in [2, 1, 0] {
        let r = app.anonymous.get(app.url("/v1/meta/pricing")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "ratelimit-policy"), "\"client\";q=3;w=3600");
        assert!(
            header(&r, "ratelimit").starts_with(&format!("\"client\";r={remaining};t=")),
            "{}",
            header(&r, "ratelimit")
        );
    }
    // Free, paid without credentials, documents: all count against the address, all refused now.
    for path in ["/v1/meta/pricing", "/v1/system/freshness", "/v1/openapi.json", "/no/such/path"] {
        let r = app.anonymous.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 429, "{path}");
        let retry: u64 = header(&r, "retry-after").parse().expect("Retry-After in seconds");
        assert!((1..=3600).contains(&retry), "{retry}");
        assert_eq!(header(&r, "ratelimit-policy"), "\"client\";q=3;w=3600");
        assert!(header(&r, "ratelimit").starts_with("\"client\";r=0;t="));
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "RATE_LIMITED");
        assert_eq!(body["status"], 429);
        assert!(body["detail"].as_str().unwrap().contains("3 requests per 3600 s"), "{body}");
    }
    // Probes and the first-party client are not limited.
    assert_eq!(app.anonymous.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(app.anonymous.get(app.url("/readyz")).send().await.unwrap().status(), 200);
    assert_eq!(app.get("/v1/system/freshness").await.status(), 200);
});

on_both_backends!(a_partner_token_is_limited_by_its_own_rate, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let own = Some(Rate { quota: 2, window_s: 3600 });
    let (_, limited) = govdata::store::tokens::create(&db, "small", &["v1:paid:*"], own, 0).await.unwrap();
    let (_, other) = govdata::store::tokens::create(&db, "default", &["v1:paid:*"], None, 0).await.unwrap();
    app.sync().await;
    let get = |token: String| {
        let (client, url) = (app.anonymous.clone(), app.url("/v1/system/freshness"));
        async move { client.get(url).header("x-service-api-token", token).send().await.unwrap() }
    };
    for remaining in [1, 0] {
        let r = get(limited.clone()).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "ratelimit-policy"), "\"partner\";q=2;w=3600", "the token's own rate");
        assert!(header(&r, "ratelimit").starts_with(&format!("\"partner\";r={remaining};")));
    }
    let refused = get(limited.clone()).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "ratelimit-policy"), "\"partner\";q=2;w=3600");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "RATE_LIMITED");
    // Another partner is not held up; it has the server's partner rate.
    let r = get(other).await;
    assert_eq!(r.status(), 200);
    let Rate { quota, window_s } = RatePolicy::Partner.default_rate();
    assert_eq!(header(&r, "ratelimit-policy"), format!("\"partner\";q={quota};w={window_s}"));
    // The counts reached the store; windows past their use are swept from it.
    crate::helpers::eventually("the counts are shared", || async {
        govdata::store::rates::sweep(&db, i64::MAX).await.unwrap() > 0
    })
    .await;
});

// Guessing tokens counts against the client address: past its limit the store is not even
// asked, and every answer is a 429.
on_both_backends!(token_guessing_is_rate_limited_per_client, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |a| {
        a.rates.rate_client = "5/1h".parse().unwrap();
    })
    .await;
    let mut statuses = Vec::new();
    for n in 0..8 {
        let r = app
            .anonymous
            .get(app.url("/v1/system/freshness"))
            .header("x-service-api-token", format!("gdp_guess{n}"))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
});
