//! x402 end to end, on loopback: a local anvil chain (id 84532), the project's EIP-3009 test
//! token, a facilitator built on `@x402/core` + `@x402/evm`, and the reference clients
//! `x402-fetch` (v1) and `@x402/fetch` (v2) paying govdata. Money really moves: the payee's
//! on-chain balance grows by exactly the price.
//!
//! The JavaScript side lives in `tests/chain/` (versions pinned by its lockfile); its packages
//! are installed on first use. Node.js ≥ 20 must be on PATH.
use std::{path::PathBuf, process::Stdio, time::Duration};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    sync::OnceCell,
};

use crate::helpers::{Backend, TestApp, sample_database, spawn_app_with};

/// anvil's well-known dev accounts: #0 deploys and pays the settlement gas, #1 pays, #2 is paid.
const DEPLOYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PAYER_KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PAYER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const PAY_TO: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

pub(crate) fn toolkit() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/chain")
}

/// Installs the locked JavaScript packages once per run, exactly as the lockfile pins them.
pub(crate) async fn install_toolkit() {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            let installed = ["@x402/fetch", "@openzeppelin/contracts"]
                .iter()
                .all(|p| toolkit().join(format!("node_modules/{p}/package.json")).exists());
            if installed {
                return;
            }
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(toolkit())
                .status()
                .await
                .expect("npm must be on PATH (Node.js >= 20) for the x402 end-to-end test");
            assert!(status.success(), "npm ci in tests/chain failed");
        })
        .await;
}

/// Runs one of the toolkit's scripts to completion and parses its one line of JSON.
pub(crate) async fn script(name: &str, args: &[&str]) -> Value {
    let output = Command::new("node")
        .arg(name)
        .args(args)
        .current_dir(toolkit())
        .stdin(Stdio::null())
        .output()
        .await
        .expect("node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{name} {args:?} failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{name} printed {stdout:?}: {e}"))
}

/// The anvil binary itself: its npm wrapper would survive the SIGKILL that `kill_on_drop` sends.
fn anvil_binary() -> PathBuf {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    toolkit().join(format!("node_modules/@foundry-rs/anvil-{os}-{arch}/bin/anvil"))
}

/// A local chain with id 84532 on a free port; killed when dropped.
pub(crate) async fn start_chain() -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(anvil_binary())
        .args(["--chain-id", "84532", "--host", "127.0.0.1", "--port", &port.to_string(), "--silent"])
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start anvil");
    let rpc = format!("http://127.0.0.1:{port}");
    let ask = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []});
    for _ in 0..200 {
        if let Ok(answer) = reqwest::Client::new().post(&rpc).json(&ask).send().await
            && let Ok(body) = answer.json::<Value>().await
        {
            assert_eq!(body["result"], "0x14a34", "anvil runs chain 84532");
            return (child, rpc);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("anvil did not answer on {rpc} within 10 s");
}

/// The facilitator; it exits when its stdin closes, and is killed when dropped.
async fn start_facilitator(rpc: &str) -> (Child, String) {
    let mut child = Command::new("node")
        .args(["facilitator.mjs", "--rpc", rpc, "--key", DEPLOYER_KEY, "--exit-on-stdin-eof"])
        .current_dir(toolkit())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the facilitator");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the facilitator starts within 60 s")
        .expect("read")
        .expect("the facilitator prints its URL");
    let url = serde_json::from_str::<Value>(&line).expect("JSON")["url"].as_str().expect("url").to_owned();
    (child, url)
}

async fn balance(rpc: &str, asset: &str) -> u128 {
    let answer = script("balance.mjs", &["--rpc", rpc, "--asset", asset, "--address", PAY_TO]).await;
    answer["balance"].as_str().expect("a decimal string").parse().expect("a number")
}

async fn reference_view(app: &TestApp, path: &str) -> Value {
    let (status, body) = app.get_json(path).await;
    assert_eq!(status, 200, "{path}");
    body["data"].clone()
}

#[tokio::test]
async fn the_reference_clients_pay_on_a_local_chain() {
    install_toolkit().await;
    let (_chain, rpc) = start_chain().await;
    let token = script("deploy-token.mjs", &["--rpc", &rpc]).await;
    let asset = token["asset"].as_str().expect("asset").to_owned();
    let (_facilitator, facilitator_url) = start_facilitator(&rpc).await;

    let app = spawn_app_with(sample_database(Backend::Sqlite), |a| {
        a.payments.facilitator_url = Some(facilitator_url);
        a.payments.pay_to = Some(PAY_TO.to_owned());
        a.payments.network = "eip155:84532".to_owned();
        a.payments.asset = asset.clone();
        a.payments.asset_name = token["name"].as_str().unwrap().to_owned();
        a.payments.asset_version = token["version"].as_str().unwrap().to_owned();
    })
    .await;
    let db = govdata::store::connect(&app.database_url).await.expect("connect");

    // v1 pays a standard v1 endpoint, v2 a plus v2 endpoint.
    for (client, path, price, receipt_header) in [
        ("v1", "/v1/daos/uniswap/brief", 1_000u128, "X-PAYMENT-RESPONSE"),
        ("v2", "/v2/daos/uniswap/voters?limit=3", 5_000, "PAYMENT-RESPONSE"),
    ] {
        let before = balance(&rpc, &asset).await;
        let paid = script("pay.mjs", &["--client", client, "--url", &app.url(path), "--key", PAYER_KEY]).await;
        assert_eq!(paid["status"], 200, "{client}: {paid}");
        let mut data = paid["body"]["data"].clone();
        let mut expected = reference_view(&app, path).await;
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

        assert_eq!(balance(&rpc, &asset).await, before + price, "{client}: the payee got exactly the price");

        let ledger = govdata::store::payments::list(&db).await.expect("payments");
        let row = ledger.iter().find(|p| p.transaction.as_deref() == Some(&transaction)).expect("recorded");
        assert_eq!(row.status, govdata::store::payments::STATUS_SETTLED);
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
        assert_eq!(balance(&rpc, &asset).await, before + price, "{client}: the replay moved nothing");
    }
}
