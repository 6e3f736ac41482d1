//! A proposal's execution lifecycle (issue 47) on a real chain: `tests/chain/governance.mjs`
//! leaves proposal A queued in an OpenZeppelin TimelockController (ETA 60 s after its queue);
//! the test cancels a proposal of its own, moves the chain's time past A's ETA, executes A, and
//! after each step ingests and reads `execution` over HTTP. One chain per backend: the test
//! moves its chain's time.
use alloy_primitives::{Address, Bytes, U256, keccak256};
use alloy_sol_types::{SolCall, sol};
use govdata::ingest::{Registry, RunOptions, run_once};
use serde_json::{Value, json};

use crate::fixtures::chain::{require_toolkit, script, start_chain};
use crate::fixtures::testgov::quick;
use crate::helpers::{TestApp, fresh_database, spawn_app_with};
use crate::on_both_backends;

const DAO: &str = "exectest";
/// anvil's dev accounts #0 (the scenario's deployer) and #1 (a holder with voting power), both
/// unlocked: `eth_sendTransaction` signs for them.
const DEPLOYER: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const HOLDER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const DESCRIPTION_D: &str = "# Proposal D\nProposed and withdrawn by its proposer before voting starts.";

sol! {
    function propose(address[] targets, uint256[] values, bytes[] calldatas, string description) returns (uint256);
    function execute(address[] targets, uint256[] values, bytes[] calldatas, bytes32 descriptionHash) payable returns (uint256);
    function cancel(address[] targets, uint256[] values, bytes[] calldatas, bytes32 descriptionHash) returns (uint256);
}

fn registry(rpc: &str, scenario: &Value) -> Registry {
    let toml = format!(
        "[[dao]]\nid = \"{DAO}\"\nname = \"Execution Test\"\nsymbol = \"GOV\"\n[dao.onchain]\nchain_id = {}\n\
         rpc_url = \"{rpc}\"\ngovernor = \"{}\"\ntoken = \"{}\"\nstart_block = {}\nconfirmations = 0\n",
        scenario["chainId"],
        scenario["governor"].as_str().unwrap(),
        scenario["token"].as_str().unwrap(),
        scenario["deployBlock"],
    );
    Registry::parse(&toml, "execution test registry").unwrap()
}

fn key(id: &str) -> String {
    govdata::store::keys::proposal_key(DAO, "onchain", id)
}

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer: Value = reqwest::Client::new().post(url).json(&body).send().await.unwrap().json().await.unwrap();
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

fn number(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// The time of block `block` (a number or a tag), in seconds.
async fn block_time(url: &str, block: Value) -> u64 {
    number(&rpc(url, "eth_getBlockByNumber", json!([block, false])).await["timestamp"])
}

/// Sends `data` to `to` from the unlocked account `from` and returns its receipt, which must
/// show success.
async fn send(url: &str, from: &str, to: &str, data: Vec<u8>) -> Value {
    let tx = json!({"from": from, "to": to, "data": Bytes::from(data), "gas": "0x1e8480"});
    let hash = rpc(url, "eth_sendTransaction", json!([tx])).await;
    // anvil answers with the hash and mines the transaction (automine) at once, or nearly.
    let mut receipt = Value::Null;
    for _ in 0..200 {
        receipt = rpc(url, "eth_getTransactionReceipt", json!([hash])).await;
        if !receipt.is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(receipt["transactionHash"], hash);
    receipt
}

fn timestamp(seconds: u64) -> String {
    govdata::contract::time::rfc3339_ms(seconds as i64 * 1000)
}

async fn ingest(db: &sea_orm::DatabaseConnection, registry: &Registry) -> govdata::store::apply::PublishReport {
    let options = RunOptions { policy: quick(), ..RunOptions::default() };
    let report = run_once(db, registry, &options).await.unwrap();
    for o in &report.outcomes {
        assert!(o.result.is_ok(), "{o:?}");
    }
    report.published
}

/// The served detail of proposal `id`.
async fn detail(app: &TestApp, id: &str) -> Value {
    let (status, body) = app.get_json(&format!("/v2/proposals/{}", key(id))).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// `step` is the log of `receipt`'s transaction, at its block's time.
async fn assert_step(url: &str, step: &Value, receipt: &Value) {
    assert_eq!(step["transactionHash"], receipt["transactionHash"], "{step}");
    let block = number(&receipt["blockNumber"]);
    assert_eq!(step["blockNumber"], block.to_string(), "{step}");
    assert_eq!(step["at"], timestamp(block_time(url, json!(format!("{block:#x}"))).await), "{step}");
}

fn addresses(v: &Value) -> Vec<Address> {
    v.as_array().unwrap().iter().map(|a| a.as_str().unwrap().parse().unwrap()).collect()
}

on_both_backends!(execution_lifecycle_is_served_from_the_governors_logs, |backend: Backend| async move {
    if !require_toolkit().await {
        return;
    }
    let (_anvil, url) = start_chain().await;
    let scenario = script("governance.mjs", &["--rpc", &url]).await;
    let governor = scenario["governor"].as_str().unwrap();
    let a = &scenario["proposals"][0];
    let b = &scenario["proposals"][1];
    let a_id = a["id"].as_str().unwrap();
    let db_url = fresh_database(backend).await;
    let db = govdata::store::connect(&db_url).await.unwrap();
    let registry = registry(&url, &scenario);

    // 1. A is queued: its queue's block, transaction and time, the ETA the log carried (the
    //    timelock's 60 s delay after the queue) and a time to execute still ahead of the chain.
    let report = ingest(&db, &registry).await;
    let queued = scenario["proposals"].as_array().unwrap().iter().filter(|p| p["queuedBlock"].is_u64()).count();
    assert_eq!(report.proposal_executions.inserted, queued as u64, "A's queue and no other: {report}");
    let app = spawn_app_with(db_url.clone(), |_| {}).await;
    let d = detail(&app, a_id).await;
    assert_eq!(d["state"], "queued", "{d}");
    let execution = &d["execution"];
    let queued_block = a["queuedBlock"].as_u64().unwrap();
    assert_eq!(execution["queued"]["blockNumber"], queued_block.to_string(), "{execution}");
    assert_eq!(execution["queued"]["transactionHash"], a["queuedTxHash"], "{execution}");
    let queued_at = block_time(&url, json!(format!("{queued_block:#x}"))).await;
    assert_eq!(execution["queued"]["at"], timestamp(queued_at));
    assert_eq!(execution["eta"], a["eta"], "the ETA is the governor's proposalEta: {execution}");
    let eta: u64 = a["eta"].as_str().unwrap().parse().unwrap();
    assert_eq!(eta, queued_at + 60, "the timelock's minimum delay after the queue");
    assert_eq!(execution["executableAt"], timestamp(eta));
    let now = block_time(&url, json!("latest")).await;
    assert!(now < eta, "A cannot execute yet: chain time {now}, ETA {eta}");
    // A TimelockController's operations never expire; nothing executed or canceled yet.
    for absent in ["expiresAt", "expired", "executed", "canceled"] {
        assert!(execution.get(absent).is_none(), "{absent}: {execution}");
    }
    // B was never queued, executed or canceled: no execution at all.
    let d = detail(&app, b["id"].as_str().unwrap()).await;
    assert!(d.get("execution").is_none(), "{d}");

    // 2. A proposal of the test's own, withdrawn by its proposer while pending (voting starts
    //    one block after it is proposed): canceled, never queued.
    let token: Address = scenario["token"].as_str().unwrap().parse().unwrap();
    let (targets, values) = (vec![token], vec![U256::ZERO]);
    let calldatas = vec![Bytes::from(hex_literal(&format!("0xa9059cbb{:0>64}{:0>64}", &HOLDER[2..], "0")))];
    let propose = proposeCall {
        targets: targets.clone(),
        values: values.clone(),
        calldatas: calldatas.clone(),
        description: DESCRIPTION_D.to_owned(),
    };
    let created = send(&url, HOLDER, governor, propose.abi_encode()).await;
    // ProposalCreated's data starts with the proposal id (no parameter is indexed).
    let data = created["logs"][0]["data"].as_str().unwrap();
    let d_id = U256::from_str_radix(&data[2..66], 16).unwrap().to_string();
    let description_hash = keccak256(DESCRIPTION_D.as_bytes());
    let cancel = cancelCall { targets, values, calldatas, descriptionHash: description_hash };
    let canceled = send(&url, HOLDER, governor, cancel.abi_encode()).await;

    // 3. The chain's time moves past A's ETA.
    rpc(&url, "evm_increaseTime", json!([120])).await;
    rpc(&url, "anvil_mine", json!(["0x1"])).await;
    let report = ingest(&db, &registry).await;
    assert_eq!(report.proposal_executions.inserted, 1, "D's cancellation: {report}");
    let d = detail(&app, &d_id).await;
    assert_eq!(d["state"], "canceled", "{d}");
    assert_step(&url, &d["execution"]["canceled"], &canceled).await;
    for absent in ["queued", "eta", "executableAt", "executed"] {
        assert!(d["execution"].get(absent).is_none(), "{absent}: {d}");
    }
    let d = detail(&app, a_id).await;
    assert_eq!(d["state"], "queued", "{d}");
    let now = block_time(&url, json!("latest")).await;
    assert!(now >= eta, "A can execute now: chain time {now}, ETA {eta}");
    assert_eq!(d["execution"]["executableAt"], timestamp(eta));
    assert!(d["execution"]["executableAt"].as_str().unwrap() <= timestamp(now).as_str());
    // Its ETA passed: `proposal_executable` is fed once, at the first look after the ETA (the
    // scheduler's, here on the chain's clock; or a publication's, had the wall clock passed it).
    let eta_ms = eta as i64 * 1000;
    govdata::store::timed::publish_due(&db, eta_ms + 1000).await.unwrap();
    assert_eq!(govdata::store::timed::publish_due(&db, eta_ms + 5000).await.unwrap(), None, "fed once");
    app.sync().await;
    let (status, page) = app.get_json("/v2/feed?kinds=proposal_executable").await;
    assert_eq!(status, 200, "{page}");
    let fed = page["data"]["items"].as_array().unwrap();
    assert_eq!(fed.len(), 1, "{page}");
    let moment = &fed[0]["moment"];
    assert_eq!(moment["externalId"], a_id, "{moment}");
    assert_eq!((&moment["eta"], &moment["executableAt"]), (&a["eta"], &json!(timestamp(eta))), "{moment}");

    // 4. Anyone executes A (the timelock's executor role is open): executed, with its transaction.
    let execute = executeCall {
        targets: addresses(&a["targets"]),
        values: a["values"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse().unwrap()).collect(),
        calldatas: a["calldatas"].as_array().unwrap().iter().map(|c| hex_literal(c.as_str().unwrap()).into()).collect(),
        descriptionHash: keccak256(a["description"].as_str().unwrap().as_bytes()),
    };
    let executed = send(&url, DEPLOYER, governor, execute.abi_encode()).await;
    let report = ingest(&db, &registry).await;
    assert_eq!(report.proposal_executions.updated, 1, "A's execution: {report}");
    let d = detail(&app, a_id).await;
    assert_eq!(d["state"], "executed", "{d}");
    let execution = &d["execution"];
    assert_step(&url, &execution["executed"], &executed).await;
    assert_eq!(execution["queued"]["transactionHash"], a["queuedTxHash"], "the queue read earlier stays: {execution}");
    assert_eq!(execution["eta"], a["eta"]);
    assert!(execution.get("canceled").is_none(), "{execution}");

    // Again at the same height: nothing new.
    let again = ingest(&db, &registry).await;
    assert_eq!(again.rows_written(), 0, "{again}");

    // 5. A store from before lifecycles were kept: A's lifecycle is not stored, its logs lie in
    //    blocks earlier runs read. The next run reads those blocks again for these three events,
    //    once: A's queue and execution come back exactly, served again, and the DAO is marked so
    //    that the history is not read again (even where it found nothing).
    use govdata::store::entities::{proposal, proposal_execution, setting};
    use sea_orm::{ColumnTrait, EntityTrait, ModelTrait, QueryFilter};
    let stored_a = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .filter(proposal::Column::ExternalId.eq(a_id))
        .one(&db)
        .await
        .unwrap()
        .expect("A is stored");
    let kept = proposal_execution::Entity::find_by_id(stored_a.id).one(&db).await.unwrap().expect("A's lifecycle");
    kept.clone().delete(&db).await.unwrap();
    let marker = || setting::Entity::find_by_id(govdata::store::staging::lifecycle_history_key(DAO)).one(&db);
    assert!(marker().await.unwrap().is_none());
    let report = ingest(&db, &registry).await;
    assert_eq!(report.proposal_executions.inserted, 1, "A's lifecycle read again: {report}");
    let read_again = proposal_execution::Entity::find_by_id(stored_a.id).one(&db).await.unwrap();
    assert_eq!(read_again.as_ref(), Some(&kept), "the same steps, exactly");
    let d = detail(&app, a_id).await;
    assert_step(&url, &d["execution"]["executed"], &executed).await;
    assert!(marker().await.unwrap().is_some(), "the DAO's lifecycle history is marked read");
    kept.delete(&db).await.unwrap();
    let report = ingest(&db, &registry).await;
    assert_eq!(report.proposal_executions.inserted, 0, "the history is read once: {report}");
});

fn hex_literal(text: &str) -> Vec<u8> {
    alloy_primitives::hex::decode(text).unwrap()
}
