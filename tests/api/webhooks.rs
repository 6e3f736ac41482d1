//! Webhooks (`/v2/webhooks`): a partner subscribes its URL with its token, and every feed entry
//! published afterwards reaches a real receiver on 127.0.0.1, signed as Standard Webhooks
//! v1.0.0 (checked with the reference TypeScript and Python libraries), retried on the
//! standard's schedule, at least once and never twice by two processes. Request bodies are
//! validated member by member, and the address guard refuses loopback URLs when private reach
//! is off, when a subscription is made and at send time (tested with loopback names and
//! addresses only, and a resolver of the test's own for public-looking names: nothing leaves
//! the machine).
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use govdata::contract::webhooks::WebhookId;
use govdata::ingest::run_once;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::{Value, json};

use crate::access::partner_token;
use crate::feed::entries_after;
use crate::fixtures::receiver::Receiver;
use crate::fixtures::testgov::{DAO, options, world, world_with};
use crate::helpers::{Backend, TestApp, fresh_database, spawn_app_with};
use crate::on_both_backends;

const TOKEN: &str = "x-service-api-token";

async fn send(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = app.anonymous.request(method.parse().unwrap(), app.url(path)).header(TOKEN, token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    if response.status().is_success() && status != 204 {
        assert_eq!(response.headers()["cache-control"], "no-store", "{method} {path}");
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn subscribe(app: &TestApp, token: &str, body: Value) -> (String, String) {
    let (status, created) = send(app, "POST", "/v2/webhooks", token, Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let data = &created["data"];
    let secret = data["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    (data["id"].as_str().unwrap().to_owned(), secret)
}

/// Every attempt of webhook `id`, newest first, page after page.
async fn attempts(app: &TestApp, token: &str, id: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut path = format!("/v2/webhooks/{id}/deliveries?limit=100");
    loop {
        let (status, page) = send(app, "GET", &path, token, None).await;
        assert_eq!(status, 200, "{page}");
        all.extend(page["data"]["items"].as_array().unwrap().iter().cloned());
        match page["meta"]["page"]["nextCursor"].as_str() {
            Some(cursor) => path = format!("/v2/webhooks/{id}/deliveries?limit=100&cursor={cursor}"),
            None => return all,
        }
    }
}

on_both_backends!(replica: every_entry_reaches_the_receiver_signed_as_the_standard_says, |backend: Backend| async move {
    let w = world(backend).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    let (status, created) = {
        let response = w
            .app
            .anonymous
            .post(w.app.url("/v2/webhooks"))
            .header(TOKEN, &token)
            .json(&json!({ "url": receiver.url, "description": "all of it" }))
            .send()
            .await
            .unwrap();
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(location, format!("/v2/webhooks/{}", body["data"]["id"].as_str().unwrap()));
        (status, body)
    };
    assert_eq!(status, 201, "{created}");
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let secret = created["data"]["secret"].as_str().unwrap().to_owned();
    assert_eq!(created["data"]["enabled"], true);
    // The secret is shown once: never in a later answer.
    let (_, shown) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert!(shown["data"].get("secret").is_none() && !shown.to_string().contains(&secret), "{shown}");
    let (_, listed) = send(&w.app, "GET", "/v2/webhooks", &token, None).await;
    assert_eq!(listed["data"]["items"][0]["id"], id.as_str());
    assert!(!listed.to_string().contains(&secret));

    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let feed = entries_after(&w.app, "0").await;
    assert!(feed.len() > 100, "{}", feed.len());
    let got = receiver.wait_for(feed.len(), Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), feed.len(), "each entry once when every attempt succeeds");
    // Each message is the entry as /v2/feed shows it, in `{type, timestamp, data}`.
    let mut by_sequence: Vec<Value> = got.iter().map(|d| d.json()).collect();
    by_sequence.sort_by_key(|m| m["data"]["sequence"].as_str().unwrap().parse::<i64>().unwrap());
    for (message, entry) in by_sequence.iter().zip(&feed) {
        assert_eq!(&message["data"], entry);
        assert_eq!(message["type"], entry["kind"]);
        assert_eq!(message["timestamp"], entry["publishedAt"]);
    }
    for d in &got {
        assert_eq!(d.content_type, "application/json");
        let sequence = d.json()["data"]["sequence"].as_str().unwrap().to_owned();
        assert_eq!(d.id, format!("msg_{}_{sequence}", id.trim_start_matches("wh_")));
        let at: i64 = d.timestamp.parse().unwrap();
        assert!((at - govdata::contract::time::now_ms() / 1000).abs() < 120, "{}", d.timestamp);
        assert!(d.signature.starts_with("v1,") && !d.signature.contains(' '), "{}", d.signature);
    }
    // Verified by the reference libraries, and by nothing of ours.
    if let Some(types) = Receiver::verify(&got, &[&secret]).await {
        assert_eq!(types.len(), feed.len());
    }
    let made = attempts(&w.app, &token, &id).await;
    assert!(!made.is_empty());
    for a in &made {
        assert_eq!(a["outcome"], "delivered", "{a}");
        assert_eq!(a["statusCode"], 204);
        assert_eq!(a["attempt"], 1);
        assert!(a.get("nextAttemptAt").is_none());
    }

    // A test message, then a rotation: both secrets sign for the overlap, and either verifies.
    let (status, queued) = send(&w.app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    assert_eq!(status, 202, "{queued}");
    let test = receiver.wait_for(feed.len() + 1, Duration::from_secs(20)).await.pop().unwrap();
    assert_eq!(test.id, queued["data"]["messageId"].as_str().unwrap());
    assert_eq!(test.json()["type"], "webhook.test");
    let (status, rotated) = send(&w.app, "POST", &format!("/v2/webhooks/{id}/rotate-secret"), &token, None).await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["data"]["secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, secret);
    assert!(rotated["data"]["previousSecretExpiresAt"].is_string(), "{rotated}");
    send(&w.app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    let overlap = receiver.wait_for(feed.len() + 2, Duration::from_secs(20)).await.pop().unwrap();
    assert_eq!(overlap.signature.split(' ').count(), 2, "{}", overlap.signature);
    for secrets in [[new_secret.as_str()], [secret.as_str()]] {
        if let Some(types) = Receiver::verify(std::slice::from_ref(&overlap), &secrets).await {
            assert_eq!(types, ["webhook.test"]);
        }
    }

    // A replay from the start sends every entry again, each with the webhook-id it had.
    let (status, replay) =
        send(&w.app, "POST", &format!("/v2/webhooks/{id}/replay"), &token, Some(json!({"after": "0"}))).await;
    assert_eq!(status, 202, "{replay}");
    assert_eq!(replay["data"]["from"], "0");
    let again = receiver.wait_for(2 * feed.len() + 2, Duration::from_secs(60)).await;
    let mut first: Vec<String> = got.iter().map(|d| d.id.clone()).collect();
    let mut second: Vec<String> = again[feed.len() + 2..].iter().map(|d| d.id.clone()).collect();
    first.sort();
    second.sort();
    assert_eq!(first, second);

    // Deleted: nothing more is sent, and it is gone.
    let (status, _) = send(&w.app, "DELETE", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert_eq!(status, 204);
    let (status, _) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert_eq!(status, 404);
});

on_both_backends!(replica: failures_are_retried_on_the_schedule_and_a_410_disables, |backend: Backend| async move {
    let w = world(backend).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:plus"]).await;
    let receiver = Receiver::start().await;
    // A kind of few entries (the forum's topics): a retry falls due behind the first attempts
    // queued before it, and the hub's thousand proposals took longer than the schedule's 5 s to
    // send on a busy machine.
    let kind = "forum_topic_created";
    let (id, _) = subscribe(&w.app, &token, json!({ "url": receiver.url, "kinds": [kind] })).await;
    // The first attempt fails (500): the same message comes again 5 s later (the schedule's
    // second step); a 429 asks for 1 s, and is given it.
    receiver.answer(500, None);
    receiver.answer(429, Some("1"));
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let created: Vec<Value> = entries_after(&w.app, "0").await.into_iter().filter(|e| e["kind"] == kind).collect();
    let n = created.len();
    assert!(n >= 2, "{n}");
    let got = receiver.wait_for(n + 2, Duration::from_secs(30)).await;
    let failed = &got[0];
    let retried: Vec<_> = got.iter().filter(|d| d.id == failed.id).collect();
    assert_eq!(retried.len(), 2, "the failed message once more: {:?}", got.iter().map(|d| &d.id).collect::<Vec<_>>());
    let waited = retried[1].at - retried[0].at;
    assert!(waited >= Duration::from_millis(4_900), "the retry waited the schedule's 5 s: {waited:?}");
    let throttled = &got[1];
    let again: Vec<_> = got.iter().filter(|d| d.id == throttled.id).collect();
    assert_eq!(again.len(), 2);
    let waited = again[1].at - again[0].at;
    assert!(waited >= Duration::from_millis(900) && waited < Duration::from_millis(4_500), "Retry-After 1: {waited:?}");
    // The receiver has the retry; its record follows the batch it was sent in.
    let recorded = |made: &[Value], attempt: i64| {
        made.iter().find(|a| a["messageId"] == failed.id.as_str() && a["attempt"] == attempt).cloned()
    };
    crate::helpers::eventually("the retry is recorded", || async {
        recorded(&attempts(&w.app, &token, &id).await, 2).is_some()
    })
    .await;
    let made = attempts(&w.app, &token, &id).await;
    let first = recorded(&made, 1).unwrap();
    assert_eq!(first["outcome"], "retrying");
    assert_eq!(first["statusCode"], 500);
    assert_eq!(first["error"], "the endpoint answered 500 Internal Server Error");
    assert!(first["nextAttemptAt"].is_string());
    let second = recorded(&made, 2).unwrap();
    assert_eq!(second["outcome"], "delivered");

    // 410 Gone disables the webhook, with the reason shown; enabling it again works.
    receiver.answer(410, None);
    let (status, _) = send(&w.app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    assert_eq!(status, 202);
    crate::helpers::eventually("the webhook is disabled", || async {
        let (_, shown) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
        shown["data"]["enabled"] == false
            && shown["data"]["disabledReason"].as_str().is_some_and(|r| r.contains("410 Gone"))
    })
    .await;
    let before = receiver.received().len();
    send(&w.app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.received().len(), before, "a disabled webhook is sent nothing");
    let (status, enabled) =
        send(&w.app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "enabled": true }))).await;
    assert_eq!(status, 200, "{enabled}");
    assert_eq!(enabled["data"]["enabled"], true);
    assert!(enabled["data"].get("disabledReason").is_none());
    // What was queued while it was disabled goes once it is enabled.
    receiver.wait_for(before + 1, Duration::from_secs(10)).await;
});

on_both_backends!(replica: two_processes_never_send_the_same_attempt, |backend: Backend| async move {
    let w = world(backend).await;
    let other = spawn_app_with(w.app.database_url.clone(), |_| {}).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    subscribe(&w.app, &token, json!({ "url": receiver.url })).await;
    subscribe(&other, &token, json!({ "url": receiver.url, "kinds": ["signal_raised"] })).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let feed = entries_after(&w.app, "0").await;
    let signals = feed.iter().filter(|e| e["kind"] == "signal_raised").count();
    receiver.wait_for(feed.len() + signals, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = receiver.received();
    let mut ids: Vec<&str> = got.iter().map(|d| d.id.as_str()).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "no message sent twice by the two processes");
    assert_eq!(n, feed.len() + signals);
    drop(other);
});

on_both_backends!(replica: request_bodies_are_validated_member_by_member, |backend: Backend| async move {
    let w = world(backend).await;
    // The DAO a filter names must be covered: publish it first.
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let app = &w.app;
    let refused = |body: Value| {
        let token = token.clone();
        async move {
            let (status, problem) = send(app, "POST", "/v2/webhooks", &token, Some(body)).await;
            assert_eq!(status, 400, "{problem}");
            assert_eq!(problem["code"], "VALIDATION_ERROR");
            let errors = problem["errors"].as_array().unwrap().clone();
            errors
                .iter()
                .map(|e| {
                    assert_eq!(e["in"], "body", "{e}");
                    (e["name"].as_str().unwrap().to_owned(), e["reason"].as_str().unwrap().to_owned())
                })
                .collect::<Vec<_>>()
        }
    };
    let names = |errors: Vec<(String, String)>| errors.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names(refused(json!({ "url": "http://127.0.0.1:9/x", "extra": 1 })).await), ["extra"]);
    assert_eq!(names(refused(json!({ "url": 7 })).await), ["url"]);
    assert_eq!(names(refused(json!({})).await), ["url"]);
    assert_eq!(names(refused(json!({ "url": "ftp://127.0.0.1/x" })).await), ["url"]);
    assert_eq!(
        names(refused(json!({ "url": "http://127.0.0.1:9/x", "kinds": ["vote_cast", "nope"] })).await),
        ["kinds[1]"]
    );
    assert_eq!(names(refused(json!({ "url": "http://127.0.0.1:9/x", "daoIds": ["No Such"] })).await), ["daoIds[0]"]);
    assert_eq!(names(refused(json!({ "url": "http://127.0.0.1:9/x", "daoIds": ["nosuchdao"] })).await), ["daoIds[0]"]);
    assert_eq!(
        names(refused(json!({ "url": 1, "daoIds": "x", "description": false })).await),
        ["daoIds", "description", "url"]
    );
    let huge = "x".repeat(govdata::contract::body::MAX_BODY_BYTES);
    assert_eq!(names(refused(json!({ "url": "http://127.0.0.1:9/", "description": huge })).await), ["body"]);
    // Not JSON, and no JSON content type.
    let tok = token.clone();
    for (content_type, body, name, location) in [
        (Some("application/json"), "{not json", "body", "body"),
        (Some("text/plain"), "{}", "content-type", "header"),
        (None, "{}", "content-type", "header"),
    ] {
        let mut request = app.anonymous.post(app.url("/v2/webhooks")).header(TOKEN, &tok).body(body);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 400);
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["errors"][0]["name"], name, "{problem}");
        assert_eq!(problem["errors"][0]["in"], location, "{problem}");
    }
    // A change and a replay are read the same way.
    let (id, _) = subscribe(app, &tok, json!({ "url": "http://127.0.0.1:9/x" })).await;
    let (status, problem) =
        send(app, "PATCH", &format!("/v2/webhooks/{id}"), &tok, Some(json!({ "enabled": "yes" }))).await;
    assert_eq!((status, problem["errors"][0]["name"].clone()), (400, json!("enabled")), "{problem}");
    let (status, problem) =
        send(app, "POST", &format!("/v2/webhooks/{id}/replay"), &tok, Some(json!({ "after": -1 }))).await;
    assert_eq!((status, problem["errors"][0]["name"].clone()), (400, json!("after")), "{problem}");
    // A description can be set and removed.
    let (_, changed) = send(
        app,
        "PATCH",
        &format!("/v2/webhooks/{id}"),
        &tok,
        Some(json!({ "description": "note", "daoIds": [DAO] })),
    )
    .await;
    assert_eq!(changed["data"]["description"], "note", "{changed}");
    assert_eq!(changed["data"]["daoIds"], json!([DAO]));
    let (_, changed) =
        send(app, "PATCH", &format!("/v2/webhooks/{id}"), &tok, Some(json!({ "description": null }))).await;
    assert!(changed["data"].get("description").is_none(), "{changed}");
});

on_both_backends!(replica: loopback_urls_are_refused_unless_private_reach_is_allowed, |backend: Backend| async move {
    let w = world_with(backend, |args| args.webhooks.webhook_allow_private = false).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    // Loopback names and addresses only: the guard is checked, and nothing is sent anywhere.
    for (url, reason) in [
        ("http://hooks.localhost/x", "scheme"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://127.8.9.10:8443/x", "loopback"),
        ("https://[::1]/x", "loopback"),
        ("https://localhost/x", "loopback"),
        ("https://[::ffff:127.0.0.1]/x", "loopback"),
    ] {
        let (status, problem) = send(&w.app, "POST", "/v2/webhooks", &token, Some(json!({ "url": url }))).await;
        assert_eq!(status, 400, "{url}: {problem}");
        let error = &problem["errors"][0];
        assert_eq!((error["in"].as_str(), error["name"].as_str()), (Some("body"), Some("url")), "{problem}");
        assert!(error["reason"].as_str().unwrap().contains(reason), "{url}: {problem}");
        assert_eq!(error["received"], url);
    }
});

on_both_backends!(replica: a_partner_sees_only_its_own_webhooks, |backend: Backend| async move {
    let w = world(backend).await;
    let (a_id, a) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let (_, b) = partner_token(&w.app, &["v2:paid:*"]).await;
    let (_, v1_only) = partner_token(&w.app, &["v1:paid:*"]).await;
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&w.app, &a, json!({ "url": receiver.url })).await;
    for (method, path, body) in [
        ("GET", format!("/v2/webhooks/{id}"), None),
        ("PATCH", format!("/v2/webhooks/{id}"), Some(json!({ "enabled": false }))),
        ("DELETE", format!("/v2/webhooks/{id}"), None),
        ("POST", format!("/v2/webhooks/{id}/test"), None),
        ("POST", format!("/v2/webhooks/{id}/replay"), Some(json!({ "after": "0" }))),
        ("GET", format!("/v2/webhooks/{id}/deliveries"), None),
    ] {
        let (status, problem) = send(&w.app, method, &path, &b, body).await;
        assert_eq!(status, 404, "{method} {path}: {problem}");
    }
    let (_, listed) = send(&w.app, "GET", "/v2/webhooks", &b, None).await;
    assert_eq!(listed["data"]["items"], json!([]));
    let (status, problem) = send(&w.app, "GET", "/v2/webhooks", &v1_only, None).await;
    assert_eq!(status, 403, "{problem}");
    // No token, a payment or the internal token alone: 401, and no payment is offered.
    let response = w.app.anonymous.get(w.app.url("/v2/webhooks")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().get("payment-required").is_none());
    let response = w.app.client.get(w.app.url("/v2/webhooks")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    // A revoked token's webhooks stop.
    assert!(govdata::edge::serving::revoke_token(&w.db, a_id).await.unwrap());
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    assert!(!entries_after(&w.app, "0").await.is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(receiver.received().is_empty(), "nothing is sent for a revoked token");
});

// A process killed while it held attempts (claimed, never recorded): once the lease runs out,
// another claims them and they are sent; the killed process's late record changes nothing. And
// an endpoint failing for days is disabled with the reason. The queue is driven with given
// times on a store no server sends from, so no test waits a lease or five days.
on_both_backends!(replica: leases_hand_a_killed_processs_attempts_to_another, |backend: Backend| async move {
    use govdata::contract::webhooks::{CLAIM_LEASE, DISABLE_AFTER_FAILING};
    use govdata::push::queue::{self, Outcome, Verdict};
    use govdata::store::webhooks as subscriptions;
    let db = govdata::store::connect(&crate::helpers::fresh_database(backend).await).await.unwrap();
    let (token, _) = govdata::store::tokens::create(&db, "p", &["v2:paid:standard"], None, 0).await.unwrap();
    let target = subscriptions::Target { url: "http://127.0.0.1:9/x".into(), ..Default::default() };
    let s = subscriptions::create(&db, token.id, &target, 0).await.unwrap();
    let t0 = 1_000_000;
    let msg = queue::queue_test(&db, &s, "a test", t0).await.unwrap();
    let lease = CLAIM_LEASE.as_millis() as i64;
    let first = queue::claim(&db, s.id, t0, t0 + lease, 8).await.unwrap();
    assert_eq!(first.len(), 1);
    // Held: nobody else gets it until the lease ends.
    assert!(queue::claim(&db, s.id, t0 + lease - 1, t0 + 2 * lease, 8).await.unwrap().is_empty());
    assert_eq!(queue::next_due(&db, s.id).await.unwrap(), Some(t0 + lease));
    // The holder was killed: after the lease another process claims it.
    let later = t0 + lease + 1;
    let second = queue::claim(&db, s.id, later, later + lease, 8).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].msg_id, msg);
    let outcome = |claimed: &queue::Claimed, at: i64, verdict: Verdict| Outcome {
        claimed: claimed.clone(),
        attempted_ms: at,
        status_code: Some(500),
        duration_ms: 1,
        error: Some("the endpoint answered 500 Internal Server Error".into()),
        verdict,
    };
    // The killed process's record, arriving late, does not move the delivery.
    queue::record(&db, &s, &[outcome(&first[0], t0, Verdict::Delivered)], t0).await.unwrap();
    assert!(queue::claim(&db, s.id, later + 1, later + lease, 8).await.unwrap().is_empty(), "still held by the second");
    // The second process's failure schedules a retry; failing since then.
    queue::record(&db, &s, &[outcome(&second[0], later, Verdict::RetryAt(later + 5_000))], later).await.unwrap();
    let s = subscriptions::get(&db, None, &WebhookId::parse(&s.public_id).unwrap()).await.unwrap().unwrap();
    assert_eq!(s.failing_since_ms, Some(later));
    assert!(s.enabled);
    let retry = queue::claim(&db, s.id, later + 5_000, later + 5_000 + lease, 8).await.unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].attempts, 1);
    // Still failing five days on: disabled, with the reason.
    let days = later + DISABLE_AFTER_FAILING.as_millis() as i64;
    let disabled = queue::record(&db, &s, &[outcome(&retry[0], days, Verdict::RetryAt(days + 1))], days).await.unwrap();
    let reason = disabled.expect("disabled");
    assert!(reason.contains("failed for 5 days"), "{reason}");
    let s = subscriptions::get(&db, None, &WebhookId::parse(&s.public_id).unwrap()).await.unwrap().unwrap();
    assert!(!s.enabled);
    assert_eq!(s.disabled_reason.as_deref(), Some(reason.as_str()));
    let all = queue::attempts(&db, s.id, None, 10).await.unwrap();
    assert_eq!(
        all.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [2, 1, 1],
        "every attempt is recorded, late ones too"
    );
});

// `govdata webhooks`: the operator's view over every token, doing what the API does; a running
// server sends what it queued.
on_both_backends!(replica: operators_manage_webhooks_with_the_cli, |backend: Backend| async move {
    use crate::processes::{govdata, run};
    let w = world(backend).await;
    let url = w.app.database_url.clone();
    let (token_id, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    let mut create = govdata(&url, &["webhooks", "create", "--token", &token_id.to_string(), "--url", &receiver.url]);
    create.env("GOVDATA_WEBHOOK_ALLOW_PRIVATE", "1");
    let secret = run(create).await.trim().to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    let (_, listed) = send(&w.app, "GET", "/v2/webhooks", &token, None).await;
    let id = listed["data"]["items"][0]["id"].as_str().unwrap().to_owned();
    let list = run(govdata(&url, &["webhooks", "list"])).await;
    assert!(list.contains(&id) && list.contains("enabled") && !list.contains(&secret), "{list}");
    // Without private reach, the CLI refuses a loopback URL as the API does.
    let refused =
        govdata(&url, &["webhooks", "create", "--token", &token_id.to_string(), "--url", "https://127.0.0.1/x"])
            .output()
            .await
            .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("loopback"));
    let queued = run(govdata(&url, &["webhooks", "test", &id])).await;
    let got = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(queued.trim(), format!("queued {}", got[0].id));
    if let Some(types) = Receiver::verify(&got, &[&secret]).await {
        assert_eq!(types, ["webhook.test"]);
    }
    crate::helpers::eventually("the attempt is recorded", || async {
        run(govdata(&url, &["webhooks", "deliveries", &id])).await.contains("delivered")
    })
    .await;
    run(govdata(&url, &["webhooks", "disable", &id])).await;
    let (_, shown) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert_eq!(shown["data"]["enabled"], false);
    assert_eq!(shown["data"]["disabledReason"], "disabled by its owner");
    run(govdata(&url, &["webhooks", "enable", &id])).await;
    run(govdata(&url, &["webhooks", "delete", &id])).await;
    let (status, _) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert_eq!(status, 404);
});

// A change made by another process (the operator's CLI here) applies to a delivery claimed
// after it, although this server has not looked at its subscriptions since: it polls once an
// hour here, and nothing wakes it. A retry claimed after a `rotate-secret` is signed with the new
// secret too, and one claimed after a `disable` is not sent.
on_both_backends!(a_change_by_another_process_applies_to_the_next_claim, |backend: Backend| async move {
    use crate::processes::{govdata, run};
    let hourly = |a: &mut govdata::config::ServeArgs| a.webhooks.webhook_poll = Duration::from_secs(3_600);
    let app = spawn_app_with(fresh_database(backend).await, hourly).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    let (rotated, old_secret) = subscribe(&app, &token, json!({ "url": receiver.url })).await;
    let (disabled, _) = subscribe(&app, &token, json!({ "url": receiver.url })).await;
    // Each first attempt is asked to wait: each message is due again 8 s later, long enough for
    // the two commands below (this server's last look at the subscriptions was the second test).
    receiver.answer(429, Some("8"));
    receiver.answer(429, Some("8"));
    let mut queued = HashMap::new();
    for id in [&rotated, &disabled] {
        let (status, sent) = send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
        assert_eq!(status, 202, "{sent}");
        queued.insert(id.clone(), sent["data"]["messageId"].as_str().unwrap().to_owned());
    }
    let first = receiver.wait_for(2, Duration::from_secs(20)).await;
    let url = app.database_url.clone();
    let new_secret = run(govdata(&url, &["webhooks", "rotate-secret", &rotated])).await.trim().to_owned();
    run(govdata(&url, &["webhooks", "disable", &disabled])).await;
    let commands_done = std::time::Instant::now();
    assert!(
        first.iter().all(|d| commands_done < d.at + Duration::from_secs(8)),
        "the commands took longer than the retries waited: the test shows nothing"
    );
    let got = receiver.wait_for(3, Duration::from_secs(20)).await;
    let retry = &got[2];
    assert_eq!(retry.id, queued[&rotated], "only the rotated webhook's message comes again");
    assert_eq!(retry.signature.split(' ').count(), 2, "signed with both secrets: {}", retry.signature);
    if let Some(types) = Receiver::verify(std::slice::from_ref(retry), &[&new_secret]).await {
        assert_eq!(types, ["webhook.test"]);
    }
    assert_ne!(new_secret, old_secret);
    // The disabled webhook's message was due as long ago as the rotated one's: it stays queued.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(receiver.received().len(), 3, "nothing is sent to a disabled webhook");
});

// One response snapshot per webhook operation (the v2 rule: `v2_snapshots`), on both backends
// under one name. What is random or timed is redacted: ids, secrets, message ids, times, the
// receiver's port.
on_both_backends!(replica: webhook_answers_are_snapshotted, |backend: Backend| async move {
    let w = world(backend).await;
    run_once(&w.db, &w.registry, &options()).await.expect("run");
    // Every answer states the revision's `dataAsOf`: the server has seen the run.
    w.app.sync().await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    let snap = |name: &'static str, body: Value| {
        let mut settings = crate::helpers::snapshot_settings();
        for field in
            ["id", "secret", "url", "createdAt", "updatedAt", "previousSecretExpiresAt", "messageId", "queuedAt"]
        {
            settings.add_redaction(&format!(".data.{field}"), format!("[{field}]"));
            settings.add_redaction(&format!(".data.items[].{field}"), format!("[{field}]"));
        }
        for field in ["attemptedAt", "durationMs", "enqueuedThrough", "from", "through"] {
            settings.add_redaction(&format!(".data.items[].{field}"), format!("[{field}]"));
            settings.add_redaction(&format!(".data.{field}"), format!("[{field}]"));
        }
        settings.add_redaction(".meta.freshness.dataAsOf", "[dataAsOf]");
        settings.bind(|| insta::assert_json_snapshot!(name, body));
    };
    let body = json!({
        "url": receiver.url,
        "daoIds": [DAO],
        "kinds": ["proposal_created", "proposal_closed"],
        "description": "testgov proposals to the bot",
    });
    let (status, created) = send(&w.app, "POST", "/v2/webhooks", &token, Some(body)).await;
    assert_eq!(status, 201);
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    snap("v2_webhooks_create_filtered", created);
    let (_, listed) = send(&w.app, "GET", "/v2/webhooks", &token, None).await;
    snap("v2_webhooks_list_one", listed);
    let (_, shown) = send(&w.app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    snap("v2_webhooks_get_filtered", shown);
    let (status, queued) = send(&w.app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    assert_eq!(status, 202);
    snap("v2_webhook_test_send_queued", queued);
    receiver.wait_for(1, Duration::from_secs(20)).await;
    crate::helpers::eventually("the attempt is recorded", || async { !attempts(&w.app, &token, &id).await.is_empty() })
        .await;
    let (_, made) = send(&w.app, "GET", &format!("/v2/webhooks/{id}/deliveries"), &token, None).await;
    snap("v2_webhook_deliveries_list_test_delivered", made);
    let (_, rotated) = send(&w.app, "POST", &format!("/v2/webhooks/{id}/rotate-secret"), &token, None).await;
    snap("v2_webhook_secret_rotate_overlap", rotated);
    let (_, replayed) =
        send(&w.app, "POST", &format!("/v2/webhooks/{id}/replay"), &token, Some(json!({ "after": "0" }))).await;
    snap("v2_webhooks_replay_from_start", replayed);
    let (_, disabled) =
        send(&w.app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "enabled": false }))).await;
    snap("v2_webhooks_update_disabled", disabled);
    let (status, deleted) = send(&w.app, "DELETE", &format!("/v2/webhooks/{id}"), &token, None).await;
    snap("v2_webhooks_delete_no_content", json!({ "status": status, "body": deleted }));
});

// PostgreSQL cancels one of two transactions that wait for each other (40P01). The sender records
// attempts and claims deliveries in one transaction, locking them in its own order, while an
// owner's DELETE locks the same deliveries in the table's. Here a transaction of the test's own
// plays the sender: it locks the second delivery, lets the deletion lock the first and wait for
// the second, then asks for the first. The deletion, which waited first, is the one cancelled;
// started again, it answers 204 once the "sender" has committed, not 500.
#[tokio::test]
async fn a_deletion_deadlocked_with_the_sender_is_started_again() {
    use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
    if !crate::helpers::require(Backend::Postgres) {
        return;
    }
    let w = world(Backend::Postgres).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&w.app, &token, json!({ "url": receiver.url })).await;
    let path = format!("/v2/webhooks/{id}");
    let (status, _) = send(&w.app, "PATCH", &path, &token, Some(json!({ "enabled": false }))).await;
    assert_eq!(status, 200);
    let sql = |text: String| Statement::from_string(DbBackend::Postgres, text);
    // Two deliveries owed tomorrow, in the order of the table and of its due index: the
    // dispatcher leaves them alone (its subscription is disabled, and they are not due).
    let tomorrow = govdata::contract::time::now_ms() + 86_400_000;
    let rows =
        w.db.query_all_raw(sql(format!(
            "INSERT INTO webhook_deliveries (subscription_id, seq, payload, msg_id, attempts, state, \
             next_attempt_ms, lease_until_ms, created_ms) \
             SELECT s.id, NULL, '{{}}', 'msg_deadlock_' || n, 0, 'pending', {tomorrow} + n, 0, {tomorrow} \
             FROM webhook_subscriptions s, generate_series(1, 2) n WHERE s.public_id = '{id}' ORDER BY n RETURNING id"
        )))
        .await
        .unwrap();
    let deliveries: Vec<i64> = rows.iter().map(|r| r.try_get("", "id").unwrap()).collect();
    assert_eq!(deliveries.len(), 2);
    let deadlocks = || async {
        let row =
            w.db.query_one_raw(sql("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()".into()))
                .await
                .unwrap()
                .unwrap();
        row.try_get::<i64>("", "deadlocks").unwrap()
    };
    let deadlocks_before = deadlocks().await;

    let lock = |delivery: i64| sql(format!("UPDATE webhook_deliveries SET attempts = attempts WHERE id = {delivery}"));
    let sender = w.db.begin().await.unwrap();
    sender.execute_raw(lock(deliveries[1])).await.unwrap();
    let deletion = send(&w.app, "DELETE", &path, &token, None);
    let the_sender = async {
        crate::helpers::eventually("the deletion waits for the second delivery", || async {
            let waiting = "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() \
                           AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM \"webhook_deliveries\"%'";
            let row = w.db.query_one_raw(sql(waiting.into())).await.unwrap().unwrap();
            row.try_get::<i64>("", "n").unwrap() == 1
        })
        .await;
        // Waits until PostgreSQL cancels the deletion, then commits.
        sender.execute_raw(lock(deliveries[0])).await.unwrap();
        sender.commit().await.unwrap();
    };
    let ((status, body), ()) = tokio::join!(deletion, the_sender);
    assert_eq!(status, 204, "{body}");
    // There was a deadlock, and the deletion outlasted it: the webhook and its deliveries are gone.
    crate::helpers::eventually("PostgreSQL counts the deadlock", || async { deadlocks().await > deadlocks_before })
        .await;
    let (status, _) = send(&w.app, "GET", &path, &token, None).await;
    assert_eq!(status, 404);
    let left =
        format!("SELECT count(*) AS n FROM webhook_deliveries WHERE id IN ({}, {})", deliveries[0], deliveries[1]);
    let row = w.db.query_one_raw(sql(left)).await.unwrap().unwrap();
    assert_eq!(row.try_get::<i64>("", "n").unwrap(), 0);
}

/// A listener on 127.0.0.1 that only counts the connections made to it: where a guard that
/// failed would have sent.
struct Doorbell {
    port: u16,
    rings: Arc<AtomicUsize>,
}

impl Doorbell {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("bound").port();
        let rings = Arc::new(AtomicUsize::new(0));
        let counted = rings.clone();
        tokio::spawn(async move {
            while listener.accept().await.is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Self { port, rings }
    }

    fn rings(&self) -> usize {
        self.rings.load(Ordering::SeqCst)
    }
}

/// The resolver a test puts in place of the system's: each name answers what the test last
/// set for it (an unknown name does not resolve), and every question is logged with its answer.
#[derive(Default)]
struct Names {
    answers: Mutex<HashMap<String, IpAddr>>,
    asked: Mutex<Vec<(String, IpAddr)>>,
}

impl Names {
    fn answer(&self, name: &str, ip: &str) {
        self.answers.lock().unwrap().insert(name.to_owned(), ip.parse().expect("an address"));
    }

    fn asked(&self) -> Vec<(String, IpAddr)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Resolve for Names {
    fn resolve(&self, name: Name) -> Resolving {
        let answer = self.answers.lock().unwrap().get(name.as_str()).copied();
        if let Some(ip) = answer {
            self.asked.lock().unwrap().push((name.as_str().to_owned(), ip));
        }
        Box::pin(async move {
            let ip = answer.ok_or_else(|| format!("{} is not a name this test answers", name.as_str()))?;
            Ok(Box::new(std::iter::once(std::net::SocketAddr::new(ip, 0))) as Addrs)
        })
    }
}

/// A server over a fresh store with the address rule on (no private reach, so `https` only).
/// Given `names`, it resolves with them and sends to any host (they answer only what the test
/// set); otherwise it keeps to loopback hosts, resolving nothing.
async fn guarded_app(backend: Backend, names: Option<Arc<Names>>) -> TestApp {
    spawn_app_with(fresh_database(backend).await, |args| {
        args.webhooks.webhook_allow_private = false;
        if let Some(names) = names {
            args.webhooks.webhook_loopback_only = false;
            args.webhooks.webhook_resolver = govdata::config::InjectedResolver(Some(names));
        }
    })
    .await
}

/// A made-up public-looking name (`.example` resolves nowhere) and what it answers when the
/// subscription is checked: a public address, never connected to, since nothing is queued
/// before the test points the name at loopback.
const REBOUND_HOST: &str = "hooks.rebound.example";
const PUBLIC_ANSWER: &str = "93.184.215.14";

// DNS rebinding: a name that was public when subscribed answers loopback when the sender
// connects. The guard, asked at send time, refuses it: nothing connects, and the attempt is
// recorded with why.
on_both_backends!(replica: a_name_rebound_to_loopback_is_refused_at_send_time, |backend: Backend| async move {
    let door = Doorbell::start().await;
    let names = Arc::new(Names::default());
    names.answer(REBOUND_HOST, PUBLIC_ANSWER);
    let app = guarded_app(backend, Some(names.clone())).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let (id, _) = subscribe(&app, &token, json!({ "url": format!("https://{REBOUND_HOST}:{}/hook", door.port) })).await;
    names.answer(REBOUND_HOST, "127.0.0.1");
    let (status, queued) = send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    assert_eq!(status, 202, "{queued}");
    crate::helpers::eventually("the attempt is recorded", || async { !attempts(&app, &token, &id).await.is_empty() })
        .await;
    let made = attempts(&app, &token, &id).await;
    let attempt = &made[made.len() - 1];
    assert_eq!(attempt["messageId"], queued["data"]["messageId"]);
    assert_eq!(attempt["outcome"], "retrying", "{attempt}");
    assert!(attempt.get("statusCode").is_none(), "{attempt}");
    assert_eq!(
        attempt["error"],
        format!(
            "refused by the address guard: {REBOUND_HOST} resolves to 127.0.0.1, a loopback address, which webhooks \
             may not reach"
        )
    );
    let asked = names.asked();
    let answers: Vec<String> = asked.iter().take(2).map(|(name, ip)| format!("{name} {ip}")).collect();
    assert_eq!(
        answers,
        [format!("{REBOUND_HOST} {PUBLIC_ANSWER}"), format!("{REBOUND_HOST} 127.0.0.1")],
        "asked when subscribed, and again at send time"
    );
    assert_eq!(door.rings(), 0, "nothing connected to where the name pointed");
});

/// A receiver on 127.0.0.1 that answers every request to `/hook` with a 307 to `/landing` on
/// itself, and records each request's path.
struct Redirector {
    url: String,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Redirector {
    async fn start() -> Self {
        use poem::listener::{Acceptor, Listener, TcpListener};
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.expect("bind");
        let addr = *acceptor.local_addr()[0].as_socket_addr().expect("socket address");
        let paths: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = paths.clone();
        let landing = format!("http://{addr}/landing");
        let endpoint = poem::endpoint::make_sync(move |req: poem::Request| {
            seen.lock().unwrap().push(req.uri().path().to_owned());
            poem::Response::builder()
                .status(poem::http::StatusCode::TEMPORARY_REDIRECT)
                .header("location", landing.as_str())
                .finish()
        });
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(endpoint));
        Self { url: format!("http://{addr}/hook"), paths }
    }
}

// A 3xx is an answer, not a way elsewhere: the sender does not follow it (a redirect could lead
// past the guard), and records the attempt as failed because it was redirected. The receiver
// must be reached, so this server has the test servers' private reach (plain `http` to
// 127.0.0.1); following redirects is the client's rule whatever the reach, and with that reach
// nothing but the rule would stop the redirect being followed to `/landing`.
on_both_backends!(replica: a_redirect_is_not_followed_and_is_recorded_as_a_failure, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let redirector = Redirector::start().await;
    let (id, _) = subscribe(&app, &token, json!({ "url": redirector.url })).await;
    let (status, _) = send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    assert_eq!(status, 202);
    crate::helpers::eventually("the attempt is recorded", || async { !attempts(&app, &token, &id).await.is_empty() })
        .await;
    let made = attempts(&app, &token, &id).await;
    let attempt = &made[made.len() - 1];
    assert_eq!(attempt["outcome"], "retrying", "{attempt}");
    assert_eq!(attempt["statusCode"], 307, "{attempt}");
    assert_eq!(attempt["error"], "the endpoint answered 307 Temporary Redirect; redirects are not followed");
    assert_eq!(*redirector.paths.lock().unwrap(), ["/hook"], "the redirect's target received nothing");
});

// An address written in the URL never reaches a resolver: the sender judges it before it
// connects. Stored directly (as a subscription made before a rule existed, or with private
// reach allowed then), each is refused at send time, and nothing connects.
on_both_backends!(replica: a_stored_forbidden_address_is_refused_before_any_connection, |backend: Backend| async move {
    let door = Doorbell::start().await;
    let app = guarded_app(backend, None).await;
    let (token_id, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let db = govdata::store::connect(&app.database_url).await.expect("connect");
    for (host, reason) in [
        ("127.0.0.1".to_owned(), "127.0.0.1 is a loopback address".to_owned()),
        (
            "[2002:7f00:1::1]".to_owned(),
            "2002:7f00:1::1 is a 6to4 address (it reaches the IPv4 address it carries)".to_owned(),
        ),
    ] {
        let url = format!("https://{host}:{}/hook", door.port);
        let target = govdata::store::webhooks::Target { url: url.clone(), ..Default::default() };
        let stored = govdata::store::webhooks::create(&db, token_id, &target, govdata::contract::time::now_ms())
            .await
            .unwrap_or_else(|_| panic!("stored {url}"));
        let id = stored.public_id;
        let (status, _) = send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
        assert_eq!(status, 202);
        crate::helpers::eventually("the attempt is recorded", || async {
            !attempts(&app, &token, &id).await.is_empty()
        })
        .await;
        let made = attempts(&app, &token, &id).await;
        let attempt = &made[made.len() - 1];
        assert_eq!(attempt["outcome"], "retrying", "{attempt}");
        assert!(attempt.get("statusCode").is_none(), "{attempt}");
        assert_eq!(
            attempt["error"],
            format!("refused by the address guard: {reason}, which webhooks may not reach"),
            "{url}"
        );
    }
    assert_eq!(door.rings(), 0, "nothing connected");
});

// Addresses that carry or reach private IPv4 through a tunnel or translator are refused when a
// webhook is subscribed, naming the member. Subscribing connects to nothing, and none was
// made, so nothing can be sent.
on_both_backends!(replica: addresses_that_tunnel_to_ipv4_are_refused_when_subscribing, |backend: Backend| async move {
    let app = guarded_app(backend, None).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    for (url, reason) in [
        // 6to4 carrying 127.0.0.1.
        ("https://[2002:7f00:1::1]/hook", "resolves to 2002:7f00:1::1, a 6to4 address"),
        // Teredo, its client 127.0.0.1 (obfuscated).
        ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook", "a Teredo address"),
        ("https://[64:ff9b:1::7f00:1]/hook", "a local-use NAT64 address"),
        ("https://192.88.99.1/hook", "resolves to 192.88.99.1, the 6to4 relay anycast address"),
    ] {
        let (status, problem) = send(&app, "POST", "/v2/webhooks", &token, Some(json!({ "url": url }))).await;
        assert_eq!(status, 400, "{url}: {problem}");
        assert_eq!(problem["code"], "VALIDATION_ERROR", "{problem}");
        let errors = problem["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{problem}");
        assert_eq!((errors[0]["in"].as_str(), errors[0]["name"].as_str()), (Some("body"), Some("url")), "{problem}");
        assert!(errors[0]["reason"].as_str().unwrap().contains(reason), "{url}: {problem}");
        assert_eq!(errors[0]["received"], url);
    }
    let (_, listed) = send(&app, "GET", "/v2/webhooks", &token, None).await;
    assert_eq!(listed["data"]["items"], json!([]), "no subscription was made, so none is sent to");
});
