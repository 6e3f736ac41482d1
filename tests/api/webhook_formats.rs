//! Webhook formats (`format` of `/v2/webhooks`): the feed's entries posted as Slack
//! incoming-webhook messages and Discord webhook messages, to loopback stand-ins of both services
//! that hold each message to the documented shapes and limits (`fixtures::chat`). Every entry of
//! a real run arrives once, is accepted, and states what happened, the proposal's link here and
//! upstream, the voting deadline in UTC and the entry's exact figures; what those services answer
//! is honoured (a 429 is retried when it says, a deleted hook disables the subscription); a bad
//! `format` is refused by name; the delivery latency is measured per format.
use std::time::Duration;

use govdata::ingest::run_once;
use serde_json::{Value, json};

use crate::access::partner_token;
use crate::feed::entries_after;
use crate::fixtures::chat::{ChatFake, Posted, Service};
use crate::fixtures::testgov::{HUGE_VP, options, world};
use crate::helpers::{TestApp, fresh_database, spawn_app_with};
use crate::on_both_backends;

const TOKEN: &str = "x-service-api-token";

async fn send(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = app.anonymous.request(method.parse().unwrap(), app.url(path)).header(TOKEN, token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn subscribe(app: &TestApp, token: &str, body: Value) -> String {
    let (status, created) = send(app, "POST", "/v2/webhooks", token, Some(body.clone())).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["format"], body["format"], "{created}");
    assert!(created["data"]["secret"].as_str().unwrap().starts_with("whsec_"), "every webhook has its secret");
    created["data"]["id"].as_str().unwrap().to_owned()
}

/// Webhook `id`'s attempts, newest first (one page: these tests make few).
async fn attempts(app: &TestApp, token: &str, id: &str) -> Vec<Value> {
    let (status, page) = send(app, "GET", &format!("/v2/webhooks/{id}/deliveries?limit=100"), token, None).await;
    assert_eq!(status, 200, "{page}");
    page["data"]["items"].as_array().unwrap().clone()
}

/// How many deliveries `/metrics` has measured the latency of, by format.
async fn latencies_measured(app: &TestApp, format: &str) -> u64 {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let series = format!("govdata_webhook_delivery_latency_seconds_count{{format=\"{format}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .unwrap_or_else(|| panic!("no {series} in /metrics"))
        .trim()
        .parse()
        .unwrap()
}

/// A kind in words, as a reader sees it (written here, not read from govdata).
fn in_words(kind: &str) -> String {
    let mut words = kind.replace('_', " ");
    words[..1].make_ascii_uppercase();
    words
}

/// The feed sequence a message names (Slack: its last section; Discord: its footer).
fn sequence_of(service: Service, message: &Value) -> String {
    let (text, marker) = match service {
        Service::Slack => {
            let blocks = message["blocks"].as_array().unwrap();
            (blocks[blocks.len() - 1]["text"]["text"].as_str().unwrap().to_owned(), "Feed entry ")
        }
        Service::Discord => (message["embeds"][0]["footer"]["text"].as_str().unwrap().to_owned(), "feed entry "),
    };
    let at = text.find(marker).unwrap_or_else(|| panic!("no sequence in {text}")) + marker.len();
    text[at..].chars().take_while(char::is_ascii_digit).collect()
}

/// Every figure of a message: Slack's fields (`*Name*\nvalue`), Discord's embed fields.
fn figures(service: Service, message: &Value) -> Vec<(String, String)> {
    match service {
        Service::Slack => message["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["fields"].as_array())
            .flatten()
            .map(|f| {
                let (name, value) = f["text"].as_str().unwrap().split_once('\n').unwrap();
                (name.trim_matches('*').to_owned(), value.to_owned())
            })
            .collect(),
        Service::Discord => message["embeds"][0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_owned(), f["value"].as_str().unwrap().to_owned()))
            .collect(),
    }
}

/// Every message accepted as the service would, none carrying Standard Webhooks headers.
fn all_accepted(got: &[Posted]) {
    for p in got {
        assert_eq!(p.refused, None, "refused as the service would: {}", p.body);
        assert!(p.webhook_headers.is_empty(), "no Standard Webhooks headers: {:?}", p.webhook_headers);
        assert_eq!(p.content_type, "application/json");
    }
}

on_both_backends!(slack_and_discord_carry_every_entry_within_their_limits, |backend: Backend| async move {
    let w = world(backend).await;
    let (_, token) = partner_token(&w.app, &["v2:paid:standard"]).await;
    let slack = ChatFake::start(Service::Slack).await;
    let discord = ChatFake::start(Service::Discord).await;
    let measured = (latencies_measured(&w.app, "slack").await, latencies_measured(&w.app, "discord").await);
    subscribe(&w.app, &token, json!({ "url": slack.url, "format": "slack" })).await;
    subscribe(&w.app, &token, json!({ "url": discord.url, "format": "discord" })).await;

    run_once(&w.db, &w.registry, &options()).await.expect("run");
    let feed = entries_after(&w.app, "0").await;
    let n = feed.len();
    assert!(n > 1_000, "{n}");
    let by_sequence: std::collections::HashMap<String, &Value> =
        feed.iter().map(|e| (e["sequence"].as_str().unwrap().to_owned(), e)).collect();
    for fake in [&slack, &discord] {
        fake.wait_for(n, Duration::from_secs(120)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    for (service, fake) in [(Service::Slack, &slack), (Service::Discord, &discord)] {
        let got = fake.posted();
        all_accepted(&got);
        assert_eq!(got.len(), n, "{service:?}: each entry once when every attempt succeeds");
        let mut sequences: Vec<String> = got.iter().map(|p| sequence_of(service, &p.json())).collect();
        sequences.sort();
        sequences.dedup();
        assert_eq!(sequences.len(), n, "{service:?}: every entry, each once");
        for p in &got {
            let message = p.json();
            let entry = by_sequence[&sequence_of(service, &message)];
            let kind = entry["kind"].as_str().unwrap();
            // What happened, first.
            let head = match service {
                Service::Slack => message["blocks"][0]["text"]["text"].as_str().unwrap().to_owned(),
                Service::Discord => message["content"].as_str().unwrap().to_owned(),
            };
            assert!(head.trim_start_matches('*').starts_with(&in_words(kind)), "{service:?} {kind}: {head}");
            // Every exact figure of an event, as the entry has it.
            let shown = figures(service, &message);
            if let Some(details) = entry["event"]["details"].as_object() {
                for value in details.values().filter(|v| v != &"") {
                    let value = value.as_str().unwrap();
                    assert!(shown.iter().any(|(_, v)| v == value), "{service:?} {kind}: {value} in {shown:?}");
                }
            }
            if let Some(total) = entry["signal"]["evidence"]["scoresTotal"].as_str() {
                assert!(shown.contains(&("Scores total".to_owned(), total.to_owned())), "{service:?}: {shown:?}");
            }
            if service == Service::Discord {
                assert_eq!(message["allowed_mentions"], json!({ "parse": [] }));
            }
        }
        let kinds: std::collections::BTreeSet<&str> = feed.iter().map(|e| e["kind"].as_str().unwrap()).collect();
        assert!(kinds.len() >= 5, "the run feeds events and signals of several kinds: {kinds:?}");
    }

    // The vote no f64 holds: its link here and upstream, its deadline in UTC, its exact power.
    let vote = feed
        .iter()
        .find(|e| e["kind"] == "vote_cast" && e["event"]["details"]["votingPower"] == HUGE_VP)
        .expect("the huge vote is notable");
    let sequence = vote["sequence"].as_str().unwrap();
    let key = vote["event"]["subject"]["key"].as_str().unwrap();
    let upstream = vote["event"]["subject"]["url"].as_str().unwrap();
    let link = w.app.url(&format!("/v2/proposals/{key}"));
    // Voting on the proposal ended three days after it was created (BASE + 3 days).
    let deadline = ("Voting ended".to_owned(), "2023-11-17 22:13:20 UTC".to_owned());
    let power = ("Voting power".to_owned(), HUGE_VP.to_owned());
    let message_of = |service: Service, fake: &ChatFake| {
        fake.posted().into_iter().map(|p| p.json()).find(|m| sequence_of(service, m) == sequence).unwrap()
    };
    let m = message_of(Service::Slack, &slack);
    assert_eq!(
        m["blocks"][0]["text"]["text"].as_str().unwrap().lines().nth(1),
        Some(format!("*<{link}|Fund the grants program>*").as_str()),
        "{m:#}"
    );
    let text = m["text"].as_str().unwrap();
    assert!(text.contains(HUGE_VP) && text.contains("Voting ended: 2023-11-17 22:13:20 UTC"), "{text}");
    assert!(figures(Service::Slack, &m).starts_with(std::slice::from_ref(&deadline)), "{m:#}");
    assert!(figures(Service::Slack, &m).contains(&power), "{m:#}");
    let tail = m["blocks"].as_array().unwrap().last().unwrap()["text"]["text"].as_str().unwrap().to_owned();
    assert!(tail.contains(&format!("<{link}|Open in govdata>")), "{tail}");
    assert!(tail.contains(&format!("<{upstream}|Open upstream>")), "{tail}");
    let m = message_of(Service::Discord, &discord);
    let embed = &m["embeds"][0];
    assert_eq!(embed["title"], "Fund the grants program");
    assert_eq!(embed["url"], link.as_str());
    assert!(embed["description"].as_str().unwrap().contains(&format!("[Open upstream]({upstream})")), "{m:#}");
    assert!(figures(Service::Discord, &m).starts_with(&[deadline]), "{m:#}");
    assert!(figures(Service::Discord, &m).contains(&power), "{m:#}");
    assert_eq!(embed["timestamp"], vote["publishedAt"]);
    // The link is the proposal's v2 resource on this server.
    let (status, proposal) = w.app.get_json(&format!("/v2/proposals/{key}")).await;
    assert_eq!(status, 200, "{proposal}");
    assert_eq!(proposal["data"]["proposalKey"], key);

    // The latency of each delivery was measured, per format (the counts are the process's:
    // other tests' deliveries may add to them).
    assert!(latencies_measured(&w.app, "slack").await >= measured.0 + n as u64);
    assert!(latencies_measured(&w.app, "discord").await >= measured.1 + n as u64);
});

on_both_backends!(a_429_is_retried_when_the_service_says, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let slack = ChatFake::start(Service::Slack).await;
    let discord = ChatFake::start(Service::Discord).await;
    // Slack: `Retry-After` in seconds. Discord: the header's whole seconds and the body's exact
    // `retry_after`; the later (1.5 s) is waited.
    slack.answer(429, &[("retry-after", "1")], r#"{"ok": false, "error": "rate_limited"}"#);
    discord.answer(
        429,
        &[("retry-after", "1"), ("x-ratelimit-scope", "user"), ("content-type", "application/json")],
        r#"{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}"#,
    );
    let slack_id = subscribe(&app, &token, json!({ "url": slack.url, "format": "slack" })).await;
    let discord_id = subscribe(&app, &token, json!({ "url": discord.url, "format": "discord" })).await;
    for id in [&slack_id, &discord_id] {
        let (status, queued) = send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
        assert_eq!(status, 202, "{queued}");
    }
    for (fake, id, asked_ms, ok) in [(&slack, &slack_id, 1_000, 200), (&discord, &discord_id, 1_500, 204)] {
        let got = fake.wait_for(2, Duration::from_secs(20)).await;
        all_accepted(&got);
        assert_eq!((got[0].status, got[1].status), (429, ok));
        assert_eq!(got[0].body, got[1].body, "the same message again");
        let waited = got[1].at - got[0].at;
        // Not before the service said (less the few milliseconds between the attempt's time and
        // the request's arrival), and well before the schedule's own 5 s.
        assert!(waited >= Duration::from_millis(asked_ms - 60), "{id}: waited {waited:?} of {asked_ms} ms");
        assert!(waited < Duration::from_millis(4_500), "{id}: waited {waited:?}, the schedule's wait");
        crate::helpers::eventually("both attempts are recorded", || async {
            attempts(&app, &token, id).await.len() == 2
        })
        .await;
        let made = attempts(&app, &token, id).await;
        let first = &made[1];
        assert_eq!((first["outcome"].as_str(), first["statusCode"].as_i64()), (Some("retrying"), Some(429)));
        let at = |v: &Value| govdata::contract::time::parse_rfc3339_ms(v.as_str().unwrap()).unwrap();
        assert_eq!(at(&first["nextAttemptAt"]) - at(&first["attemptedAt"]), asked_ms as i64, "{first}");
        assert_eq!(made[0]["outcome"], "delivered");
    }
    let slack_test = slack.posted()[1].json();
    assert!(slack_test["text"].as_str().unwrap().starts_with(&format!("govdata test message for {slack_id}")));
    assert_eq!(discord.posted()[1].json()["embeds"][0]["title"], "govdata test message");
});

on_both_backends!(a_deleted_hook_disables_its_subscription, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let json_type = [("content-type", "application/json")];
    let cases = [
        (
            Service::Discord,
            404,
            r#"{"message": "Unknown Webhook", "code": 10015}"#,
            "Unknown Webhook (Discord code 10015)",
        ),
        (Service::Slack, 410, "channel_is_archived", "410 Gone: channel_is_archived"),
        (Service::Slack, 404, "no_service", "404 Not Found: no_service"),
    ];
    let mut gone = Vec::new();
    for (service, status, body, reason) in cases {
        let fake = ChatFake::start(service).await;
        fake.answer(status, if service == Service::Discord { &json_type } else { &[] }, body);
        let format = if service == Service::Slack { "slack" } else { "discord" };
        let id = subscribe(&app, &token, json!({ "url": fake.url, "format": format })).await;
        send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
        gone.push((fake, id, status, reason));
    }
    // Another 404 from Discord (a thread that is not there) is a failure like any other: retried.
    let other = ChatFake::start(Service::Discord).await;
    other.answer(404, &json_type, r#"{"message": "Unknown Channel", "code": 10003}"#);
    let other_id = subscribe(&app, &token, json!({ "url": other.url, "format": "discord" })).await;
    send(&app, "POST", &format!("/v2/webhooks/{other_id}/test"), &token, None).await;

    for (fake, id, status, reason) in &gone {
        crate::helpers::eventually("the webhook is disabled", || async {
            let (_, shown) = send(&app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
            shown["data"]["enabled"] == false
        })
        .await;
        let (_, shown) = send(&app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
        let why = shown["data"]["disabledReason"].as_str().unwrap();
        assert!(why.contains(reason), "{why}");
        let made = attempts(&app, &token, id).await;
        assert_eq!(made.len(), 1, "not retried: {made:?}");
        assert_eq!(
            (made[0]["outcome"].as_str(), made[0]["statusCode"].as_i64()),
            (Some("failed"), Some(*status as i64))
        );
        assert!(made[0].get("nextAttemptAt").is_none());
        // Disabled: a new message is kept, not sent.
        send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(fake.posted().len(), 1, "nothing more is sent to a deleted hook");
    }
    crate::helpers::eventually("the other 404 is recorded", || async {
        !attempts(&app, &token, &other_id).await.is_empty()
    })
    .await;
    let made = attempts(&app, &token, &other_id).await;
    assert_eq!(made[0]["outcome"], "retrying", "{made:?}");
    assert_eq!(made[0]["error"], "the endpoint answered 404 Not Found: Unknown Channel (Discord code 10003)");
    let (_, shown) = send(&app, "GET", &format!("/v2/webhooks/{other_id}"), &token, None).await;
    assert_eq!(shown["data"]["enabled"], true);
});

on_both_backends!(a_format_is_validated_stored_and_changed, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let url = "http://127.0.0.1:9/hook";
    for (format, received) in [(json!("teams"), Some("\"teams\"")), (json!(7), None), (json!(null), None)] {
        let (status, problem) =
            send(&app, "POST", "/v2/webhooks", &token, Some(json!({ "url": url, "format": format }))).await;
        assert_eq!(status, 400, "{problem}");
        assert_eq!(problem["code"], "VALIDATION_ERROR");
        let errors = problem["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{problem}");
        assert_eq!((errors[0]["in"].as_str(), errors[0]["name"].as_str()), (Some("body"), Some("format")));
        if let Some(received) = received {
            assert_eq!(errors[0]["reason"], "is not a webhook format");
            assert_eq!(errors[0]["expected"], "standard_webhooks | slack | discord");
            assert_eq!(errors[0]["received"].to_string(), received);
        }
    }
    // Absent: Standard Webhooks, as before formats existed.
    let (status, created) = send(&app, "POST", "/v2/webhooks", &token, Some(json!({ "url": url }))).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["format"], "standard_webhooks");
    let id = created["data"]["id"].as_str().unwrap();
    let (status, changed) =
        send(&app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "format": "discord" }))).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["data"]["format"], "discord");
    let (_, shown) = send(&app, "GET", &format!("/v2/webhooks/{id}"), &token, None).await;
    assert_eq!(shown["data"]["format"], "discord");
    let (_, listed) = send(&app, "GET", "/v2/webhooks", &token, None).await;
    assert_eq!(listed["data"]["items"][0]["format"], "discord");
    let (status, problem) =
        send(&app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "format": "Slack" }))).await;
    assert_eq!((status, problem["errors"][0]["name"].as_str()), (400, Some("format")), "{problem}");
});

// The format is the only difference: a subscription changed from Standard Webhooks to Slack
// gets its pending message in Slack's shape, unsigned; changed back, signed again.
on_both_backends!(a_changed_format_applies_to_what_is_pending, |backend: Backend| async move {
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let (_, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let slack = ChatFake::start(Service::Slack).await;
    let (status, created) = send(&app, "POST", "/v2/webhooks", &token, Some(json!({ "url": slack.url }))).await;
    assert_eq!(status, 201, "{created}");
    let id = created["data"]["id"].as_str().unwrap();
    send(&app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "enabled": false }))).await;
    send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    let body = json!({ "format": "slack", "enabled": true });
    let (status, changed) = send(&app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(body)).await;
    assert_eq!(status, 200, "{changed}");
    let got = slack.wait_for(1, Duration::from_secs(20)).await;
    all_accepted(&got);
    assert!(got[0].json()["text"].as_str().unwrap().starts_with("govdata test message"), "{}", got[0].body);
    send(&app, "PATCH", &format!("/v2/webhooks/{id}"), &token, Some(json!({ "format": "standard_webhooks" }))).await;
    send(&app, "POST", &format!("/v2/webhooks/{id}/test"), &token, None).await;
    let got = slack.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(got[1].json()["type"], "webhook.test");
    assert_eq!(got[1].webhook_headers.len(), 3, "signed: {:?}", got[1].webhook_headers);
    assert!(got[1].refused.is_some(), "a Standard Webhooks message is no Slack message");
});

// `govdata webhooks create --format`: the operator names the format as the API does.
on_both_backends!(operators_name_the_format_with_the_cli, |backend: Backend| async move {
    use crate::processes::{govdata, run};
    let app = spawn_app_with(fresh_database(backend).await, |_| {}).await;
    let url = app.database_url.clone();
    let (token_id, token) = partner_token(&app, &["v2:paid:standard"]).await;
    let discord = ChatFake::start(Service::Discord).await;
    let token_arg = token_id.to_string();
    let create = |format: &str| {
        let mut c = govdata(&url, &["webhooks", "create", "--token", &token_arg, "--url", &discord.url]);
        c.args(["--format", format]).env("GOVDATA_WEBHOOK_ALLOW_PRIVATE", "1");
        c
    };
    let refused = create("teams").output().await.unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("unknown format `teams`; formats are standard_webhooks | slack | discord"), "{why}");
    let secret = run(create("discord")).await;
    assert!(secret.trim().starts_with("whsec_"));
    let list = run(govdata(&url, &["webhooks", "list"])).await;
    assert!(list.contains("discord"), "{list}");
    let (_, listed) = send(&app, "GET", "/v2/webhooks", &token, None).await;
    let id = listed["data"]["items"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(listed["data"]["items"][0]["format"], "discord");
    run(govdata(&url, &["webhooks", "test", &id])).await;
    let got = discord.wait_for(1, Duration::from_secs(20)).await;
    all_accepted(&got);
});
