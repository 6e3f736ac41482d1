//! x402 payments through the gate, against a recording stand-in facilitator on 127.0.0.1:0 and
//! authorizations signed here with a real secp256k1 key. The stand-in lets these tests reach
//! every verdict a facilitator can give (approve, refuse, garble, vanish); `chain.rs` pays for
//! real with the reference clients on a local chain.
//!
//! Payment rows are written into the shared sample database: no read endpoint exposes them, and
//! every test looks its rows up by its own random nonce.
use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::Engine;
use govdata::{
    store::{entities::x402_payment::PaymentStatus, payments},
    x402::eip3009::{ParsedAuthorization, TokenDomain},
    x402::wire::Authorization,
};
use serde_json::{Value, json};

use crate::fixtures::facilitator::{Facilitator, Verdict};
use crate::helpers::{Backend, TestApp, sample_database, spawn_app_with};
use crate::on_both_backends;

/// anvil's account #1: the payer.
const PAYER_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PAYER: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
/// anvil's account #3: signs where it has no authority.
const STRANGER_KEY: &str = "7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const PAY_TO: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const ELSEWHERE: &str = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const OTHER_TOKEN: &str = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

const STANDARD: &str = "/v2/daos/uniswap";
const PLUS: &str = "/v2/daos/uniswap/voters?limit=3";

/// A govdata server taking payments through `facilitator_url` on Base Sepolia's USDC.
async fn paying_app(backend: Backend, facilitator_url: &str) -> TestApp {
    let url = facilitator_url.to_owned();
    spawn_app_with(sample_database(backend), move |a| {
        a.payments.facilitator_url = Some(url);
        a.payments.pay_to = Some(PAY_TO.to_owned());
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Paying clients, by hand

fn b64(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode(header: &str) -> Value {
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(header).expect("base64")).expect("JSON")
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn random_nonce() -> String {
    format!("0x{}", hex::encode(rand::random::<[u8; 32]>()))
}

/// What a 402 offered: the v1 requirement from the body, the v2 challenge from the header.
struct Offer {
    v1: Value,
    v2_accepted: Value,
    v2_resource: Value,
}

async fn offer(app: &TestApp, path: &str) -> Offer {
    let response = app.anonymous.get(app.url(path)).send().await.expect("request");
    assert_eq!(response.status(), 402, "{path} is paid");
    let v2 = decode(response.headers()["payment-required"].to_str().unwrap());
    let body: Value = response.json().await.unwrap();
    Offer { v1: body["accepts"][0].clone(), v2_accepted: v2["accepts"][0].clone(), v2_resource: v2["resource"].clone() }
}

/// A payment being written, which a test may spoil before `encode` signs and wraps it.
struct Draft {
    generation: u8,
    /// What goes into `x402Version` (normally `generation`).
    x402_version: u64,
    /// v1: the network named in the payload.
    network: String,
    /// v2: the requirement the client says it accepted.
    accepted: Value,
    resource: Value,
    authorization: Authorization,
    signer: &'static str,
    /// The token domain the client signs for.
    token: String,
    signature: Option<String>,
}

impl Draft {
    /// An honest payment of what `offer` asks, in `generation`.
    fn honest(offer: &Offer, generation: u8) -> Self {
        let (amount, pay_to, asset) = match generation {
            1 => (&offer.v1["maxAmountRequired"], &offer.v1["payTo"], &offer.v1["asset"]),
            _ => (&offer.v2_accepted["amount"], &offer.v2_accepted["payTo"], &offer.v2_accepted["asset"]),
        };
        Self {
            generation,
            x402_version: generation.into(),
            network: offer.v1["network"].as_str().unwrap_or_default().to_owned(),
            accepted: offer.v2_accepted.clone(),
            resource: offer.v2_resource.clone(),
            authorization: Authorization {
                from: PAYER.to_owned(),
                to: pay_to.as_str().unwrap().to_owned(),
                value: amount.as_str().unwrap().to_owned(),
                valid_after: (now() - 600).to_string(),
                valid_before: (now() + 60).to_string(),
                nonce: random_nonce(),
            },
            signer: PAYER_KEY,
            token: asset.as_str().unwrap().to_owned(),
            signature: None,
        }
    }

    fn header_name(&self) -> &'static str {
        if self.generation == 1 { "X-PAYMENT" } else { "PAYMENT-SIGNATURE" }
    }

    /// Signs the authorization (EIP-712 over the token's domain) and base64-encodes the payload.
    fn encode(&self) -> String {
        let domain = TokenDomain {
            name: "USDC".into(),
            version: "2".into(),
            chain_id: 84532,
            verifying_contract: self.token.parse().unwrap(),
        };
        let hash = ParsedAuthorization::parse(&self.authorization).expect("well-formed").signing_hash(&domain);
        let key = k256::ecdsa::SigningKey::from_slice(&hex::decode(self.signer).unwrap()).unwrap();
        let (signature, recovery) = key.sign_prehash_recoverable(hash.as_slice()).expect("signs");
        let mut bytes = signature.to_bytes().to_vec();
        bytes.push(27 + recovery.to_byte());
        let signature = self.signature.clone().unwrap_or_else(|| format!("0x{}", hex::encode(bytes)));
        let payload = json!({ "signature": signature, "authorization": self.authorization });
        let document = if self.generation == 1 {
            json!({ "x402Version": self.x402_version, "scheme": "exact", "network": self.network, "payload": payload })
        } else {
            json!({
                "x402Version": self.x402_version, "resource": self.resource,
                "accepted": self.accepted, "payload": payload
            })
        };
        b64(document.to_string())
    }
}

async fn pay(app: &TestApp, path: &str, header: (&str, &str)) -> reqwest::Response {
    app.anonymous.get(app.url(path)).header(header.0, header.1).send().await.expect("request")
}

async fn payment_row(app: &TestApp, nonce: &str) -> Option<govdata::store::entities::x402_payment::Model> {
    let db = govdata::store::connect(&app.database_url).await.expect("connect");
    payments::list(&db).await.expect("list payments").into_iter().find(|p| p.nonce == nonce)
}

/// A 402 that refuses a payment: the reason, a sentence, both challenges again, and no data.
async fn assert_refused(response: reqwest::Response, reason: &str, case: &str) -> Value {
    assert_eq!(response.status(), 402, "{case}");
    assert_eq!(response.headers()["content-type"], "application/problem+json", "{case}");
    assert_eq!(response.headers()["cache-control"], "no-store", "{case}");
    let v2 = decode(response.headers()["payment-required"].to_str().unwrap());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], reason, "{case}: {body}");
    assert_eq!(v2["error"], reason, "{case}: the v2 challenge says the same");
    assert!(body["detail"].as_str().is_some_and(|d| d.len() > 20), "{case}: a sentence says why");
    assert!(body.get("data").is_none(), "{case}: no data");
    assert_eq!(body["accepts"].as_array().map(Vec::len), Some(1), "{case}: the offer stands");
    body
}

// ---------------------------------------------------------------------------------------------
// Tests

// Every malformed, mismatched or forged payment is refused by the local checks with its own
// reason code, before the facilitator hears of it and before anything is reserved.
on_both_backends!(replica: bad_payments_are_refused_with_a_reason_and_serve_nothing, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let app = paying_app(backend, &facilitator.url).await;
    let standard = offer(&app, STANDARD).await;
    let plus = offer(&app, PLUS).await;
    assert_eq!(standard.v1["maxAmountRequired"], "1000");
    assert_eq!(plus.v1["maxAmountRequired"], "5000");

    type Spoil = fn(&mut Draft);
    let cases: &[(&str, u8, &str, Spoil)] = &[
        ("v1 amount below the price", 1, "invalid_exact_evm_payload_authorization_value", |d| {
            d.authorization.value = "999".into()
        }),
        ("v2 amount below the price", 2, "invalid_exact_evm_payload_authorization_value", |d| {
            d.accepted["amount"] = json!("999");
            d.authorization.value = "999".into();
        }),
        ("v2 amount above the exact price", 2, "invalid_exact_evm_payload_authorization_value", |d| {
            d.authorization.value = "1001".into()
        }),
        ("v1 pays someone else", 1, "invalid_exact_evm_payload_recipient_mismatch", |d| {
            d.authorization.to = ELSEWHERE.into()
        }),
        ("v2 accepted someone else's payTo", 2, "invalid_exact_evm_payload_recipient_mismatch", |d| {
            d.accepted["payTo"] = json!(ELSEWHERE);
            d.authorization.to = ELSEWHERE.into();
        }),
        ("v2 accepted another asset", 2, "invalid_payment_requirements", |d| {
            d.accepted["asset"] = json!(OTHER_TOKEN);
            d.token = OTHER_TOKEN.into();
        }),
        ("v1 signed for another token", 1, "invalid_exact_evm_payload_signature", |d| d.token = OTHER_TOKEN.into()),
        ("v1 on another network", 1, "invalid_network", |d| d.network = "base".into()),
        ("v2 on another network", 2, "invalid_network", |d| d.accepted["network"] = json!("eip155:8453")),
        ("v2 under another scheme", 2, "unsupported_scheme", |d| d.accepted["scheme"] = json!("upto")),
        ("v2 expired", 2, "invalid_exact_evm_payload_authorization_valid_before", |d| {
            d.authorization.valid_before = (now() - 10).to_string()
        }),
        ("v1 expiring before it can settle", 1, "invalid_exact_evm_payload_authorization_valid_before", |d| {
            d.authorization.valid_before = (now() + 2).to_string()
        }),
        ("v1 not yet valid", 1, "invalid_exact_evm_payload_authorization_valid_after", |d| {
            d.authorization.valid_after = (now() + 3600).to_string()
        }),
        ("v2 signed by a stranger", 2, "invalid_exact_evm_payload_signature", |d| d.signer = STRANGER_KEY),
        ("v1 signature too short", 1, "invalid_exact_evm_payload_signature", |d| d.signature = Some("0x1234".into())),
        ("v2 signature not hex", 2, "invalid_exact_evm_payload_signature", |d| d.signature = Some("0xzz".into())),
        ("v2 unknown x402 version", 2, "invalid_x402_version", |d| d.x402_version = 3),
        ("a v1 payload in the v2 header", 2, "invalid_x402_version", |d| d.x402_version = 1),
        ("v2 without the EIP-712 domain", 2, "invalid_payment_requirements", |d| {
            d.accepted.as_object_mut().unwrap().remove("extra");
        }),
    ];
    for (case, generation, reason, spoil) in cases {
        let mut draft = Draft::honest(&standard, *generation);
        spoil(&mut draft);
        let response = pay(&app, STANDARD, (draft.header_name(), &draft.encode())).await;
        let body = assert_refused(response, reason, case).await;
        assert!(payment_row(&app, &draft.authorization.nonce).await.is_none(), "{case}: nothing reserved");
        if *reason == "invalid_x402_version" && draft.x402_version == 3 {
            assert!(body["detail"].as_str().unwrap().contains("versions 1 and 2"), "{body}");
        }
    }

    // A plus-tier endpoint paid at the standard price.
    for generation in [1, 2] {
        let draft = Draft::honest(&standard, generation);
        let body = assert_refused(
            pay(&app, PLUS, (draft.header_name(), &draft.encode())).await,
            "invalid_exact_evm_payload_authorization_value",
            &format!("v{generation} standard price for a plus endpoint"),
        )
        .await;
        assert!(body["detail"].as_str().unwrap().contains("5000"), "the detail names the price: {body}");
    }

    // Headers that are not payments at all.
    let garbage: &[(&str, &str, &str)] = &[
        ("X-PAYMENT", "not base64!", "not base64"),
        ("PAYMENT-SIGNATURE", &b64("{\"x402Version\":2,"), "not a valid x402 payment payload"),
        ("X-PAYMENT", &b64("[1,2,3]"), "not a valid x402 payment payload"),
        ("PAYMENT-SIGNATURE", &b64(r#"{"x402Version":2,"payload":{}}"#), "not a valid x402 payment payload"),
    ];
    for (name, value, says) in garbage {
        let body = assert_refused(pay(&app, STANDARD, (name, value)).await, "invalid_payload", value).await;
        assert!(body["detail"].as_str().unwrap().contains(says), "{value}: {body}");
    }
    assert_eq!(facilitator.actions(), Vec::<String>::new(), "no bad payment reached the facilitator");
});

on_both_backends!(replica: a_payment_is_verified_settled_recorded_and_never_replayed, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let app = paying_app(backend, &facilitator.url).await;
    let (_, free_view) = app.get_json(PLUS).await;
    for generation in [1u8, 2] {
        facilitator.forget();
        let offer = offer(&app, PLUS).await;
        let draft = Draft::honest(&offer, generation);
        let header = draft.encode();
        let response = pay(&app, PLUS, (draft.header_name(), &header)).await;
        assert_eq!(response.status(), 200, "v{generation}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let (answer_header, other) = if generation == 1 {
            ("x-payment-response", "payment-response")
        } else {
            ("payment-response", "x-payment-response")
        };
        assert!(response.headers().get(other).is_none(), "v{generation} answers in its own generation only");
        let receipt = decode(response.headers()[answer_header].to_str().unwrap());
        let network = if generation == 1 { "base-sepolia" } else { "eip155:84532" };
        assert_eq!(
            receipt,
            json!({"success": true, "transaction": format!("0x{}", "ab".repeat(32)), "network": network, "payer": PAYER})
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["data"], free_view["data"], "v{generation}: the paid answer is the data");

        // The facilitator judged the payment by our requirement, the one the 402 offered.
        assert_eq!(facilitator.actions(), ["verify", "settle"]);
        let sent = facilitator.last_body();
        let ours = if generation == 1 { &offer.v1 } else { &offer.v2_accepted };
        assert_eq!(&sent["paymentRequirements"], ours);
        assert_eq!(sent["x402Version"], generation);
        assert_eq!(sent["paymentPayload"], decode(&header), "the client's payload, untouched");

        let row = payment_row(&app, &draft.authorization.nonce).await.expect("recorded");
        assert_eq!(row.status, PaymentStatus::Settled);
        assert_eq!(row.payer, PAYER.to_lowercase());
        assert_eq!(row.amount, "5000");
        assert_eq!(row.endpoint, "GET /v2/daos/{daoId}/voters");
        assert_eq!(row.transaction.as_deref(), Some(format!("0x{}", "ab".repeat(32)).as_str()));
        assert_eq!(row.x402_version, i32::from(generation));
        assert!(row.settled_ms.is_some());

        // The same authorization again: refused, and the facilitator is not asked.
        facilitator.forget();
        assert_refused(
            pay(&app, PLUS, (draft.header_name(), &header)).await,
            "invalid_exact_evm_payload_authorization_nonce_used",
            "replay",
        )
        .await;
        assert!(facilitator.actions().is_empty());
    }
});

// A payer over its rate is refused before its payment is reserved, verified or settled.
on_both_backends!(replica: a_payer_over_its_rate_is_refused_before_anything_is_charged, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let url = facilitator.url.clone();
    let app = spawn_app_with(sample_database(backend), move |a| {
        a.payments.facilitator_url = Some(url);
        a.payments.pay_to = Some(PAY_TO.to_owned());
        a.rates.rate_payer = "1/1h".parse().unwrap();
    })
    .await;
    let offer = offer(&app, STANDARD).await;
    let first = Draft::honest(&offer, 2);
    let response = pay(&app, STANDARD, (first.header_name(), &first.encode())).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["ratelimit-policy"], "\"payer\";q=1;w=3600");
    facilitator.forget();
    let second = Draft::honest(&offer, 2);
    let response = pay(&app, STANDARD, (second.header_name(), &second.encode())).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "RATE_LIMITED");
    assert!(facilitator.actions().is_empty(), "the facilitator never heard of it");
    assert!(payment_row(&app, &second.authorization.nonce).await.is_none(), "nothing reserved");
});

// What the handler answers decides whether anything is charged; what the facilitator answers
// decides whether anything is served.
on_both_backends!(
    replica: only_a_successful_answer_is_charged_and_only_a_settled_one_is_served,
    |backend: Backend| async move {
        let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
        let app = paying_app(backend, &facilitator.url).await;
        let offer = offer(&app, STANDARD).await;

        // A handler error (unknown DAO) is answered as it is, and never settled.
        let missing = "/v2/daos/no-such-dao";
        let draft = Draft::honest(&offer, 2);
        let response = pay(&app, missing, (draft.header_name(), &draft.encode())).await;
        assert_eq!(response.status(), 404);
        assert!(response.headers().get("payment-response").is_none());
        assert_eq!(facilitator.actions(), ["verify"], "verified, never settled");
        let row = payment_row(&app, &draft.authorization.nonce).await.expect("reserved");
        assert_eq!(row.status, PaymentStatus::Failed);
        assert!(row.error.as_deref().unwrap().contains("404"), "{row:?}");

        // The facilitator refuses at /verify: 402 with its reason, the handler never runs.
        facilitator.forget();
        facilitator.set(Verdict::RefuseVerify);
        let draft = Draft::honest(&offer, 1);
        assert_refused(
            pay(&app, STANDARD, (draft.header_name(), &draft.encode())).await,
            "insufficient_funds",
            "verify",
        )
        .await;
        assert_eq!(facilitator.actions(), ["verify"]);
        assert_eq!(payment_row(&app, &draft.authorization.nonce).await.unwrap().status, PaymentStatus::Failed);

        // The facilitator refuses at /settle: the answer is withheld.
        facilitator.forget();
        facilitator.set(Verdict::RefuseSettle);
        let draft = Draft::honest(&offer, 2);
        assert_refused(
            pay(&app, STANDARD, (draft.header_name(), &draft.encode())).await,
            "invalid_transaction_state",
            "settle",
        )
        .await;
        assert_eq!(facilitator.actions(), ["verify", "settle"]);
        assert_eq!(payment_row(&app, &draft.authorization.nonce).await.unwrap().status, PaymentStatus::Failed);
    }
);

async fn assert_upstream_error(response: reqwest::Response, case: &str) {
    assert_eq!(response.status(), 502, "{case}");
    assert!(response.headers().get("payment-response").is_none(), "{case}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "UPSTREAM_ERROR", "{case}: {body}");
    assert!(body.get("data").is_none(), "{case}");
    assert!(body["detail"].as_str().unwrap().contains("facilitator"), "{case}: {body}");
}

on_both_backends!(replica: a_garbled_or_unreachable_facilitator_is_an_upstream_error, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Garble, Duration::ZERO).await;
    let app = paying_app(backend, &facilitator.url).await;
    let offer = offer(&app, STANDARD).await;
    for generation in [1, 2] {
        let draft = Draft::honest(&offer, generation);
        assert_upstream_error(pay(&app, STANDARD, (draft.header_name(), &draft.encode())).await, "garbled").await;
        let row = payment_row(&app, &draft.authorization.nonce).await.unwrap();
        assert_eq!(row.status, PaymentStatus::Failed, "nothing was verified, so nothing can have moved");
    }

    // A port nothing listens on.
    let vacant = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let app = paying_app(backend, &format!("http://{vacant}")).await;
    let draft = Draft::honest(&offer, 2);
    assert_upstream_error(pay(&app, STANDARD, (draft.header_name(), &draft.encode())).await, "unreachable").await;
});

// Many requests racing with one authorization: exactly one is served.
on_both_backends!(replica: one_authorization_pays_once_under_concurrency, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Approve, Duration::from_millis(150)).await;
    let app = Arc::new(paying_app(backend, &facilitator.url).await);
    let offer = offer(&app, STANDARD).await;
    let draft = Draft::honest(&offer, 2);
    let header = draft.encode();
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (app, header) = (app.clone(), header.clone());
            tokio::spawn(async move { pay(&app, STANDARD, ("PAYMENT-SIGNATURE", &header)).await.status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for racer in racers {
        statuses.push(racer.await.unwrap());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 402, 402, 402, 402, 402, 402, 402]);
    assert_eq!(facilitator.actions(), ["verify", "settle"], "the facilitator saw it once");
});

// One payment holds a stream for the paid time: it is settled once the stream opened (the
// stream is not buffered for it), and the stream then ends saying to pay again. A stream refused
// before it opens is not charged.
on_both_backends!(replica: a_payment_buys_a_stream_for_its_paid_time, |backend: Backend| async move {
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let url = facilitator.url.clone();
    let app = spawn_app_with(sample_database(backend), move |a| {
        a.payments.facilitator_url = Some(url);
        a.payments.pay_to = Some(PAY_TO.to_owned());
        a.payments.stream_paid_seconds = 1;
        a.limits.stream_max_duration = None;
    })
    .await;
    let (bad, good) = ("/v2/stream?after=abc", "/v2/stream?after=0");
    let offer_bad = offer(&app, bad).await;
    let offer = offer(&app, good).await;
    assert_eq!(offer.v1["maxAmountRequired"], "5000", "the plus tier's price");
    assert_eq!(offer.v2_resource["mimeType"], "text/event-stream");
    let (_, pricing) = app.get_json("/v1/meta/pricing").await;
    let priced = pricing["data"]["endpoints"].as_array().unwrap().iter().find(|e| e["path"] == "/v2/stream").cloned();
    assert_eq!(priced.as_ref().map(|e| &e["paidSeconds"]), Some(&json!(1)), "{priced:?}");

    // A bad parameter is refused before anything is settled.
    let draft = Draft::honest(&offer_bad, 2);
    let header = draft.encode();
    let refused = pay(&app, bad, (draft.header_name(), &header)).await;
    assert_eq!(refused.status(), 400, "a bad `after`");
    assert_eq!(facilitator.actions(), ["verify"], "verified, never settled");
    assert_eq!(payment_row(&app, &draft.authorization.nonce).await.unwrap().status, PaymentStatus::Failed);

    facilitator.forget();
    let draft = Draft::honest(&offer, 2);
    let header = draft.encode();
    let opened = tokio::time::Instant::now();
    let mut response = pay(&app, good, (draft.header_name(), &header)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(response.headers().contains_key("payment-response"), "settled before the stream flows");
    assert_eq!(facilitator.actions(), ["verify", "settle"]);
    let row = payment_row(&app, &draft.authorization.nonce).await.expect("recorded");
    assert_eq!(row.status, PaymentStatus::Settled);
    assert_eq!(row.endpoint, "GET /v2/stream");
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), response.chunk()).await.unwrap().unwrap() {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(opened.elapsed() >= Duration::from_secs(1), "held for the paid second");
    assert!(text.starts_with("retry: "), "{text:.200}");
    let last = text.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: stream_ended\ndata: "), "{last}");
    let ended: Value = serde_json::from_str(last.split("data: ").nth(1).unwrap()).unwrap();
    assert_eq!(ended["reason"], "payment_expired", "{ended}");
    assert!(ended["detail"].as_str().unwrap().contains("402"), "{ended}");
    // The reconnection is a 402 again.
    let again = app.anonymous.get(app.url("/v2/stream")).header("last-event-id", "1").send().await.unwrap();
    assert_eq!(again.status(), 402);
});

// A paid export download answers a grant that opens the same file's ranges without paying again
// (a Parquet reader makes several requests), and nothing else.
on_both_backends!(replica: a_paid_download_grants_its_file_s_ranges, |backend: Backend| async move {
    const FILE: &str = "/v2/exports/uniswap/votes.csv";
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let app = paying_app(backend, &facilitator.url).await;
    let offer = offer(&app, FILE).await;
    assert_eq!(offer.v2_resource["mimeType"], "text/csv; charset=utf-8; header=present");
    let draft = Draft::honest(&offer, 2);
    let response = pay(&app, FILE, (draft.header_name(), &draft.encode())).await;
    assert_eq!(response.status(), 200);
    let grant = response.headers()["export-grant"].to_str().unwrap().to_owned();
    let whole = response.bytes().await.unwrap();
    assert_eq!(facilitator.actions(), ["verify", "settle"]);
    // The grant opens ranges of the same file, uncharged.
    let part = app
        .anonymous
        .get(app.url(FILE))
        .header("export-grant", &grant)
        .header("range", "bytes=0-9")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["cache-control"], "private, no-cache");
    assert_eq!(part.bytes().await.unwrap(), whole.slice(0..10));
    assert_eq!(facilitator.actions(), ["verify", "settle"], "no second payment");
    // Not another file, not a forged or expired grant.
    for (path, sent) in [
        ("/v2/exports/uniswap/votes.ndjson", grant.clone()),
        (FILE, format!("{}0", grant)),
        (FILE, format!("1.{}", grant.split_once('.').unwrap().1)),
    ] {
        let r = app.anonymous.get(app.url(path)).header("export-grant", &sent).send().await.unwrap();
        assert_eq!(r.status(), 402, "{path} {sent}");
    }
});

// With the primary away, a paid call cannot write its ledger row: it is refused 503 before the
// facilitator hears of it, so nothing is charged; once the primary is back, the same call pays.
#[tokio::test]
async fn a_payment_is_refused_uncharged_while_the_primary_is_away() {
    let Some((_turn, pair)) = crate::fixtures::pair::OutagePair::take().await else { return };
    let facilitator = Facilitator::start(Verdict::Approve, Duration::ZERO).await;
    let (primary, replica) = pair.sample_database().await;
    let url = facilitator.url.clone();
    let app = spawn_app_with(primary, move |a| {
        a.payments.facilitator_url = Some(url);
        a.payments.pay_to = Some(PAY_TO.to_owned());
        a.replicas.read_replica_urls = vec![replica];
    })
    .await;
    app.sync().await;
    pair.cut("primary");
    crate::helpers::eventually("the primary is seen down", || async { app.serving.nodes().primary_down() }).await;
    // The price is still offered (reading it writes nothing); paying it is refused, uncharged.
    let offered = offer(&app, PLUS).await;
    let draft = Draft::honest(&offered, 2);
    let refused = pay(&app, PLUS, (draft.header_name(), &draft.encode())).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert!(refused.headers().get("payment-response").is_none());
    assert!(facilitator.actions().is_empty(), "the facilitator never heard of it: {:?}", facilitator.actions());
    pair.restore("primary");
    crate::helpers::eventually("the primary is seen again", || async { !app.serving.nodes().primary_down() }).await;
    // As a client does, a 503 is retried after its Retry-After: on a loaded machine the first
    // payment after the primary was seen again was sometimes refused so (in one CI run before
    // the facilitator heard of it, in one run here after its verify: the read it paid for
    // failed; the cause was not found). A refused payment is never settled, whenever it was
    // refused, and the payment that is served is settled once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut refusals = Vec::new();
    let paid = loop {
        let draft = Draft::honest(&offer(&app, PLUS).await, 2);
        let paid = pay(&app, PLUS, (draft.header_name(), &draft.encode())).await;
        if paid.status() != 503 || tokio::time::Instant::now() > deadline {
            break paid;
        }
        assert_eq!(paid.headers()["retry-after"], "1");
        refusals.push(paid.text().await.unwrap());
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    if !refusals.is_empty() {
        eprintln!("refused before the payment that was served: {refusals:?}");
    }
    assert_eq!(paid.status(), 200, "after {refusals:?}");
    let actions = facilitator.actions();
    let (settled, verified) = actions.split_last().expect("the facilitator heard of the payment");
    assert_eq!(settled, "settle", "{actions:?}");
    assert!(!verified.is_empty() && verified.iter().all(|a| a == "verify"), "one settlement: {actions:?}");
    assert!(verified.len() <= refusals.len() + 1, "a verify per attempt at most: {actions:?} after {refusals:?}");
}
