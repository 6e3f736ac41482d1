//! x402 end to end, on loopback: a local anvil chain (id 84532), the project's EIP-3009 test
//! token, a facilitator built on `@x402/core` + `@x402/evm`, and the reference clients
//! `x402-fetch` (v1) and `@x402/fetch` (v2) paying govdata. Money really moves: the payee's
//! on-chain balance grows by exactly the price.
//!
//! The JavaScript side lives in `tests/chain/` (versions pinned by its lockfile), driven through
//! `fixtures::chain`.
use serde_json::Value;

use crate::fixtures::chain::{PAY_TO, PAYER, PAYER_KEY, PayingRig, require_toolkit, script};
use crate::helpers::{Backend, TestApp, sample_database, spawn_app_with};

/// Every paid operation's 402 carries a `bazaar` discovery extension that the reference package
/// (`@x402/extensions`) validates and extracts (`tests/chain/discovery.mjs` fails on any refusal).
#[tokio::test]
async fn the_reference_package_accepts_every_discovery_extension() {
    if !require_toolkit().await {
        return;
    }
    let app = spawn_app_with(sample_database(Backend::Sqlite), |a| a.payments.pay_to = Some(PAY_TO.to_owned())).await;
    let paths = crate::access::paid_paths(&app).await;
    let urls: Vec<String> = paths.iter().map(|(_, _, _, path)| app.url(path)).collect();
    let mut args = Vec::new();
    for url in &urls {
        args.extend(["--url", url.as_str()]);
    }
    let checked = script("discovery.mjs", &args).await;
    let results = checked["results"].as_array().expect("results");
    assert_eq!(results.len(), paths.len());
    let documents = govdata::api::documents(Default::default());
    for ((version, id, decl, path), result) in paths.iter().zip(results) {
        assert_eq!(result["valid"], true, "{id}: {result}");
        let discovered = &result["discovered"];
        assert_eq!(discovered["method"], "GET", "{id}: {discovered}");
        assert_eq!(discovered["x402Version"], 2);
        let (_, template, _) = documents.get(*version).operations().find(|(_, _, op)| op == id).expect("documented");
        let template = govdata::x402::bazaar::route_template(template);
        let canonical = if template.contains(':') { template } else { path.split('?').next().unwrap().to_owned() };
        assert!(discovered["resourceUrl"].as_str().unwrap().ends_with(&canonical), "{id}: {discovered}");
        // A stream's answer is no JSON document: its discovery describes the input only.
        if decl.downloads {
            assert!(discovered["discoveryInfo"]["output"]["example"].is_string(), "{id}: a file's first bytes");
        } else if !decl.streams {
            assert!(discovered["discoveryInfo"]["output"]["example"].is_object(), "{id}: an output example");
        }
    }
}

async fn reference_view(app: &TestApp, path: &str) -> Value {
    let (status, body) = app.get_json(path).await;
    assert_eq!(status, 200, "{path}");
    body["data"].clone()
}

#[tokio::test]
async fn the_reference_clients_pay_on_a_local_chain() {
    if !require_toolkit().await {
        return;
    }
    let rig = PayingRig::start().await;
    let app = &rig.app;
    let db = govdata::store::connect(&app.database_url).await.expect("connect");

    // v1 pays a standard v1 endpoint, v2 a plus v2 endpoint.
    for (client, path, price, receipt_header) in [
        ("v1", "/v1/daos/uniswap/brief", 1_000u128, "X-PAYMENT-RESPONSE"),
        ("v2", "/v2/daos/uniswap/voters?limit=3", 5_000, "PAYMENT-RESPONSE"),
    ] {
        let before = rig.balance().await;
        let paid = script("pay.mjs", &["--client", client, "--url", &app.url(path), "--key", PAYER_KEY]).await;
        assert_eq!(paid["status"], 200, "{client}: {paid}");
        let mut data = paid["body"]["data"].clone();
        let mut expected = reference_view(app, path).await;
        for view in [&mut data, &mut expected] {
            if let Some(object) = view.as_object_mut() {
                object.remove("generatedAt");
            }
        }
        assert_eq!(data, expected, "{client}: the paid answer is the data");
        assert_eq!(paid["paymentResponseHeader"], receipt_header, "{client}: {paid}");
        let receipt = &paid["paymentResponse"];
        assert_eq!(receipt["success"], true, "{client}: {receipt}");
        assert_eq!(receipt["payer"].as_str().map(str::to_lowercase).as_deref(), Some(PAYER));
        let transaction = receipt["transaction"].as_str().expect("a transaction hash").to_owned();
        assert_eq!(transaction.len(), 66, "{transaction}");

        assert_eq!(rig.balance().await, before + price, "{client}: the payee got exactly the price");

        let ledger = govdata::store::payments::list(&db).await.expect("payments");
        let row = ledger.iter().find(|p| p.transaction.as_deref() == Some(&transaction)).expect("recorded");
        assert_eq!(row.status, govdata::store::entities::x402_payment::PaymentStatus::Settled);
        assert_eq!(row.amount, price.to_string());
        assert_eq!(row.payer, PAYER);

        // The captured payment, sent again: refused, and nothing more moves.
        let sent = &paid["sentPaymentHeader"];
        let replay = app
            .anonymous
            .get(app.url(path))
            .header(sent["name"].as_str().unwrap(), sent["value"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), 402, "{client}: a replay");
        let body: Value = replay.json().await.unwrap();
        assert_eq!(body["error"], "invalid_exact_evm_payload_authorization_nonce_used", "{body}");
        assert!(body.get("data").is_none());
        assert_eq!(rig.balance().await, before + price, "{client}: the replay moved nothing");
    }
}
