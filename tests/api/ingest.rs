//! Ingestion from the HTTP upstreams (Snapshot hub, Discourse) against local stand-ins that
//! answer in the upstreams' formats: paging past the hub's caps, exact numbers, topic links,
//! upstream faults, idempotent re-runs, and what is served afterwards.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use govdata::contract::vocabulary::{RunStatus, RunTrigger, SourceKind};
use govdata::ingest::{Registry, RunOptions, run_once};
use govdata::store::entities::{forum_post, forum_topic, ingestion_run, proposal, staged_record, vote};
use govdata::store::staging::{self, STALE_AFTER};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::Value;

use crate::fixtures::testgov::{
    BASE, BIG_VOTES, DAO, HUGE_VP, LINKED_TOPIC, PROPOSALS, SPACE, TOPIC_POSTS, UNREADABLE_CREATED, big, forum_data,
    hub_data, options, proposal_id, registry_file, world,
};
use crate::fixtures::upstreams::{
    Fake, Fault, HubProposal, HubVote, OSNAP_SAFE, OSNAP_TO, OSNAP_TOKEN, discourse, snapshot_hub,
};
use crate::helpers::{Backend, TestApp, eventually, eventually_within, fresh_database, spawn_app_with};
use crate::on_both_backends;

fn key(source: &str, external_id: &str) -> String {
    govdata::store::keys::proposal_key(DAO, source, external_id)
}

on_both_backends!(replica: snapshot_and_discourse_are_ingested_and_served, |backend: Backend| async move {
    let w = world(backend).await;
    let report = run_once(&w.db, &w.registry, &options()).await.expect("the run completes");
    for o in &report.outcomes {
        assert!(o.result.is_ok(), "{o:?}");
    }
    assert_eq!(report.published.proposals.inserted, PROPOSALS as u64, "{report}");
    assert_eq!(report.published.votes.inserted, BIG_VOTES as u64);
    assert_eq!(report.published.topics.inserted, 35);
    assert!(report.published.revision_id.is_some());
    // The unreadable proposal and vote are reported, not guessed, and stop nothing.
    let skipped = &report.published.skipped;
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped.iter().any(|s| s.contains(&format!("snapshot proposal {}", proposal_id(PROPOSALS)))),
        "{skipped:?}"
    );
    assert!(skipped.iter().any(|s| s.contains("snapshot vote") && s.contains("is not a number")), "{skipped:?}");

    // The hub was paged within its caps: proposals past the tie at the page boundary, votes
    // deeper than one page at one second.
    let requests = w.hub.requests();
    let vars: Vec<&Value> = requests.iter().map(|r| &r.body["variables"]).collect();
    assert!(vars.iter().all(|v| v["first"].as_u64().unwrap_or(0) <= 1000 && v["skip"].as_u64().unwrap_or(0) <= 5000));
    let paging = |kind: &str| -> Vec<(i64, u64)> {
        requests
            .iter()
            .filter(|r| r.body["query"].as_str().unwrap().contains(kind) && r.body["variables"]["ids"].is_null())
            .filter(|r| kind != "votes(" || r.body["variables"]["proposal"] == big().as_str())
            .map(|r| {
                (r.body["variables"]["created_gte"].as_i64().unwrap(), r.body["variables"]["skip"].as_u64().unwrap())
            })
            .collect()
    };
    assert_eq!(paging("proposals("), vec![(0, 0), (BASE + 998 * 60, 2)]);
    assert_eq!(paging("votes("), vec![(0, 0), (BASE + 120, 1000), (BASE + 120, 2000)]);

    // Stored exactly, every vote once.
    let stored = vote::Entity::find().filter(vote::Column::DaoId.eq(DAO)).count(&w.db).await.unwrap();
    assert_eq!(stored, BIG_VOTES as u64);

    // Served: the proposal with its scores as the hub wrote them, its votes with exact power.
    let (status, detail) = w.app.get_json(&format!("/v2/proposals/{}", key("snapshot", &big()))).await;
    assert_eq!(status, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["scores"], serde_json::json!(["345043.3752998372", "2.11e-16", "0"]));
    assert_eq!(d["scoresTotal"], "345043.3752998372");
    assert_eq!(d["scoresState"], "pending");
    assert_eq!(d["state"], "active");
    assert_eq!(d["votes"]["ingested"], BIG_VOTES.to_string());
    assert_eq!(detail["meta"]["freshness"]["cacheStatus"], "fresh");
    let (status, votes) = w.app.get_json(&format!("/v2/proposals/{}/votes?limit=3", key("snapshot", &big()))).await;
    assert_eq!(status, 200, "{votes}");
    let top = &votes["data"]["items"][0];
    assert_eq!(top["votingPower"], HUGE_VP, "the largest vote, exact: {votes}");
    assert_eq!(top["votingPowerFromFloat"], true);

    // The forum topic with all 45 posts (20 inline, 25 fetched by id in two requests), linked
    // to the proposal its third post cites.
    let topic = forum_topic::Entity::find()
        .filter(forum_topic::Column::ExternalId.eq(LINKED_TOPIC.to_string()))
        .one(&w.db)
        .await
        .unwrap()
        .expect("topic stored");
    let posts = forum_post::Entity::find().filter(forum_post::Column::TopicId.eq(topic.id)).count(&w.db).await.unwrap();
    assert_eq!(posts, TOPIC_POSTS as u64);
    let by_id: Vec<String> = w
        .forum
        .requests()
        .into_iter()
        .filter(|r| r.path == format!("/t/{LINKED_TOPIC}/posts.json"))
        .map(|r| r.query)
        .collect();
    assert_eq!(by_id.len(), 2, "25 posts beyond the first 20, in chunks of 20: {by_id:?}");
    let (status, served) = w.app.get_json(&format!("/v2/topics/{}", topic.topic_key)).await;
    assert_eq!(status, 200, "{served}");
    assert_eq!(served["data"]["linkedProposal"]["externalId"], big(), "{served}");

    // Freshness: every source succeeded, with its watermark; the run is recorded.
    let (status, fresh) = w.app.get_json("/v1/system/freshness").await;
    assert_eq!(status, 200);
    let sources = fresh["data"]["sources"].as_array().unwrap();
    for source in ["snapshot", "discourse"] {
        let s = sources.iter().find(|s| s["daoId"] == DAO && s["source"] == source).expect(source);
        assert_eq!(s["lastStatus"], "succeeded", "{s}");
        assert!(s["dataAsOf"].is_string());
    }
    assert_eq!(fresh["data"]["lastRun"]["status"], "succeeded");
    assert_eq!(fresh["data"]["lastRun"]["trigger"], "manual");

    // The signal rules ran on the publication and stored what they found, with evidence.
    // (Read from the store: the API's signal windows end now, and this data is from 2023.)
    let signals = govdata::store::entities::signal::Entity::find()
        .filter(govdata::store::entities::signal::Column::DaoId.eq(DAO))
        .all(&w.db)
        .await
        .unwrap();
    assert!(!signals.is_empty(), "the rules found something in 1003 proposals");
    for s in &signals {
        let evidence: Value = serde_json::from_str(&s.evidence).unwrap();
        assert!(evidence.as_object().is_some_and(|e| !e.is_empty()), "{s:?}");
        assert_eq!(Some(s.revision_id), report.published.revision_id);
    }

    // Again: nothing new upstream, nothing written; each source resumes where it stopped.
    w.hub.clear();
    w.forum.clear();
    let again = run_once(&w.db, &w.registry, &options()).await.expect("second run");
    assert_eq!(again.published.rows_written(), 0, "{again}");
    let first = &w.hub.requests()[0].body["variables"];
    assert_eq!((first["created_gte"].as_i64(), first["skip"].as_u64()), (Some(UNREADABLE_CREATED), Some(0)));
    let lists: Vec<String> =
        w.forum.requests().into_iter().filter(|r| r.path == "/latest.json").map(|r| r.query).collect();
    assert_eq!(lists, vec!["page=0".to_owned()], "the forum is read until nothing is newer than the last run");
    let runs = ingestion_run::Entity::find().order_by_asc(ingestion_run::Column::Id).all(&w.db).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["succeeded", "succeeded"]);
    assert_eq!(runs[0].rows_skipped, 2);
    assert_eq!(
        proposal::Entity::find().filter(proposal::Column::DaoId.eq(DAO)).count(&w.db).await.unwrap(),
        PROPOSALS as u64
    );
});

// Shielded voting (Snapshot `privacy: shutter`): while the scores are pending the hub returns each
// choice encrypted; the store keeps it as received, the tally counts it as unreadable (never a
// guess), and the answers say the scores are provisional and the voting shielded. Once the hub
// reveals the choices and finalises the scores, the next run replaces every encrypted choice.
on_both_backends!(replica: shielded_choices_are_never_guessed_and_are_replaced_once_revealed, |backend: Backend| async move {
    let w = world(backend).await;
    let shielded = proposal_id(PROPOSALS + 1);
    let voters: Vec<String> = (0..3).map(|i| format!("0x{:040x}", 0x5e1d00 + i)).collect();
    let encrypted = |i: usize| format!("\"0x03{}\"", format!("{:02x}", 0xa0 + i).repeat(40));
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals.push(HubProposal {
            id: shielded.clone(),
            created: UNREADABLE_CREATED + 60,
            state: "active",
            scores: vec![],
            scores_total: "0",
            scores_state: "pending",
            title: "Shielded treasury vote".to_owned(),
            votes: 3,
        });
        for (i, voter) in voters.iter().enumerate() {
            hub.votes.push(HubVote {
                id: format!("0x{:064x}", 9_000_000 + i),
                proposal: shielded.clone(),
                voter: voter.clone(),
                created: UNREADABLE_CREATED + 120 + i as i64,
                choice: encrypted(i),
                vp: format!("{}.5", 10 + i),
            });
        }
    }
    run_once(&w.db, &w.registry, &snapshot_only()).await.expect("the run completes");
    let path = format!("/v2/proposals/{}", key("snapshot", &shielded));
    let (status, detail) = w.app.get_json(&path).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["data"]["privacy"], "shutter", "{detail}");
    assert_eq!(detail["data"]["scoresProvisional"], true);
    let evidence_path = format!("/v1/daos/{DAO}/proposals/snapshot/{shielded}/evidence");
    let (status, evidence) = w.app.get_json(&evidence_path).await;
    assert_eq!(status, 200, "{evidence}");
    let e = &evidence["data"];
    assert_eq!(e["turnout"]["votesUnreadable"], "3", "an encrypted choice is no choice: {e}");
    assert_eq!(e["turnout"]["votesCounted"], "0");
    let note = e["scoresNote"].as_str().unwrap();
    assert!(note.contains("Provisional") && note.contains("Shielded"), "{note}");
    let (_, votes) = w.app.get_json(&format!("{path}/votes?sort=time")).await;
    let served: Vec<&str> =
        votes["data"]["items"].as_array().unwrap().iter().map(|v| v["choice"].as_str().unwrap()).collect();
    assert_eq!(served.len(), 3, "{votes}");
    assert!(served.iter().all(|c| c.contains("0x03")), "kept as received, never decoded or guessed: {served:?}");

    // The hub reveals the choices and finalises the scores.
    {
        let mut hub = w.hub_data.lock().unwrap();
        let p = hub.proposals.iter_mut().find(|p| p.id == shielded).unwrap();
        p.state = "closed";
        p.scores = vec!["23", "11.5", "0"];
        p.scores_total = "34.5";
        p.scores_state = "final";
        for v in hub.votes.iter_mut().filter(|v| v.proposal == shielded) {
            v.choice = if v.voter == voters[1] { "2".to_owned() } else { "1".to_owned() };
        }
    }
    run_once(&w.db, &w.registry, &snapshot_only()).await.expect("the run completes");
    let (_, detail) = w.app.get_json(&path).await;
    assert_eq!(detail["data"]["privacy"], "shutter");
    assert_eq!(detail["data"]["scoresProvisional"], false, "{detail}");
    assert_eq!(detail["data"]["scores"], serde_json::json!(["23", "11.5", "0"]));
    let (_, votes) = w.app.get_json(&format!("{path}/votes?sort=time")).await;
    let served: Vec<&str> =
        votes["data"]["items"].as_array().unwrap().iter().map(|v| v["choice"].as_str().unwrap()).collect();
    assert_eq!(served, ["1", "2", "1"], "the revealed choices replace the encrypted ones: {votes}");
    let (_, evidence) = w.app.get_json(&evidence_path).await;
    let e = &evidence["data"];
    assert_eq!(e["turnout"]["votesUnreadable"], "0", "{e}");
    let note = e["scoresNote"].as_str().unwrap();
    assert!(!note.contains("Provisional") && note.contains("Shielded"), "{note}");
});

// Copeland ballots rank every choice: the store's tally gives each vote's power to its first
// preference only (never to every ranked choice, as an approval would), says so, and names the
// rule Snapshot decides by (no race is judged on it: `rules::signals::facts`' unit tests).
on_both_backends!(replica: copeland_ballots_are_tallied_as_first_preferences_and_explained, |backend: Backend| async move {
    let w = world(backend).await;
    let id = proposal_id(PROPOSALS + 2);
    {
        let mut hub = w.hub_data.lock().unwrap();
        hub.proposals.push(HubProposal {
            id: id.clone(),
            created: UNREADABLE_CREATED + 90,
            state: "closed",
            scores: vec![],
            scores_total: "21",
            scores_state: "final",
            title: "Copeland grants round".to_owned(),
            votes: 3,
        });
        for (i, (ballot, vp)) in [("[1,2,3]", "10"), ("[2,3,1]", "6"), ("[3,2,1]", "5")].into_iter().enumerate() {
            hub.votes.push(HubVote {
                id: format!("0x{:064x}", 9_100_000 + i),
                proposal: id.clone(),
                voter: format!("0x{:040x}", 0xc0be00 + i),
                created: UNREADABLE_CREATED + 150 + i as i64,
                choice: ballot.to_owned(),
                vp: vp.to_owned(),
            });
        }
    }
    run_once(&w.db, &w.registry, &snapshot_only()).await.expect("the run completes");
    let (status, detail) = w.app.get_json(&format!("/v2/proposals/{}", key("snapshot", &id))).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["data"]["votingType"], "copeland");
    let rule = detail["data"]["votingRule"].as_str().unwrap();
    assert!(rule.contains("every pair of choices is a contest"), "{rule}");
    let (status, evidence) = w.app.get_json(&format!("/v1/daos/{DAO}/proposals/snapshot/{id}/evidence")).await;
    assert_eq!(status, 200, "{evidence}");
    let e = &evidence["data"];
    let scores: Vec<(u64, &str)> = e["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["choice"].as_u64().unwrap(), c["score"].as_str().unwrap()))
        .collect();
    assert_eq!(scores, [(1, "10"), (2, "6"), (3, "5")], "first preferences, not 21 each: {e}");
    assert!(e["scoresNote"].as_str().unwrap().contains("first preferences"), "{e}");
});

// oSnap: a Snapshot proposal whose Safe would execute transactions (the plugin's data in the
// hub's `plugins`) gets them as its actions, marked as executed by a Safe module, decoded with
// the Safe as sender; a transaction the plugin never writes (a delegatecall) is reported and no
// action is guessed; a re-run changes nothing.
on_both_backends!(replica: osnap_transactions_are_a_snapshot_proposals_actions, |backend: Backend| async move {
    use govdata::store::entities::proposal_action::{self, ExecutionPath};
    let w = world(backend).await;
    let (payout, unreadable) = (proposal_id(PROPOSALS + 3), proposal_id(PROPOSALS + 4));
    {
        let mut hub = w.hub_data.lock().unwrap();
        for (id, title, offset) in
            [(&payout, "oSnap treasury payout", 200), (&unreadable, "oSnap unreadable batch", 210)]
        {
            hub.proposals.push(HubProposal {
                id: id.clone(),
                created: UNREADABLE_CREATED + offset,
                state: "active",
                scores: vec![],
                scores_total: "0",
                scores_state: "pending",
                title: title.to_owned(),
                votes: 0,
            });
        }
    }
    let actions_of = |id: String| {
        let db = w.db.clone();
        async move {
            let p = proposal::Entity::find()
                .filter(proposal::Column::DaoId.eq(DAO))
                .filter(proposal::Column::ExternalId.eq(id.as_str()))
                .one(&db)
                .await
                .unwrap()
                .expect("the proposal is stored");
            proposal_action::Entity::find()
                .filter(proposal_action::Column::ProposalId.eq(p.id))
                .order_by_asc(proposal_action::Column::Position)
                .all(&db)
                .await
                .unwrap()
        }
    };
    let report = run_once(&w.db, &w.registry, &snapshot_only()).await.expect("the run completes");
    let skipped = &report.published.skipped;
    assert!(
        skipped.iter().any(|s| s.contains(&unreadable) && s.contains("operation 1: the oSnap plugin makes calls only")),
        "{skipped:?}"
    );
    let actions = actions_of(payout.clone()).await;
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert!(actions.iter().all(|a| a.execution_path == ExecutionPath::SafeModule));
    assert_eq!((actions[0].target.as_str(), actions[0].value_wei.as_str()), (OSNAP_TOKEN.to_lowercase().as_str(), "0"));
    assert_eq!(
        (actions[1].target.as_str(), actions[1].value_wei.as_str()),
        (OSNAP_TO.to_lowercase().as_str(), "1500000000000000000")
    );
    assert_eq!(actions[1].calldata, "0x");
    let decoded: Vec<Value> = actions.iter().map(|a| serde_json::from_str(&a.decoded).unwrap()).collect();
    let safe = OSNAP_SAFE.parse::<alloy_primitives::Address>().unwrap().to_checksum(None);
    assert!(decoded.iter().all(|d| d["sender"] == safe.as_str()), "the Safe makes the calls: {decoded:?}");
    let transfer = &decoded[0]["call"];
    assert_eq!(
        (transfer["kind"].as_str(), transfer["function"].as_str()),
        (Some("decoded"), Some("transfer")),
        "{transfer}"
    );
    assert_eq!(transfer["arguments"][0]["value"], OSNAP_TO);
    assert_eq!(transfer["arguments"][1]["value"], "1250000000000000000000000", "exact base units: {transfer}");
    assert_eq!(decoded[1]["call"]["kind"], "native_transfer");
    assert!(decoded[0]["summary"].as_str().unwrap().starts_with("transfer"), "{}", decoded[0]);
    assert!(actions_of(unreadable.clone()).await.is_empty(), "nothing guessed for the unreadable batch");

    run_once(&w.db, &w.registry, &snapshot_only()).await.expect("the run completes");
    assert_eq!(actions_of(payout).await, actions, "a re-read proposal keeps its actions");
});

fn snapshot_only() -> RunOptions {
    RunOptions { source: Some(SourceKind::Snapshot), ..options() }
}

#[tokio::test]
async fn upstream_faults_are_retried_or_recorded_and_never_block_other_sources() {
    let w = world(Backend::Sqlite).await;

    // 429 with Retry-After: 1 → the next attempt waits a second, then the run completes.
    w.hub.fault(Fault::Status(429, Some("1")));
    // Then a 503 on the same request's next attempt: retried with backoff (3 attempts in all).
    w.hub.fault(Fault::Status(503, None));
    let report = run_once(&w.db, &w.registry, &snapshot_only()).await.unwrap();
    assert!(report.outcomes[0].result.is_ok(), "{report}");
    let seen = w.hub.requests();
    assert!(
        seen[1].at.duration_since(seen[0].at) >= Duration::from_millis(990),
        "Retry-After: 1 was honoured ({:?})",
        seen[1].at.duration_since(seen[0].at)
    );
    assert_eq!(report.published.proposals.inserted, PROPOSALS as u64);

    // Malformed JSON from the forum: the forum fails, the hub's data is still published.
    w.forum.fault(Fault::Malformed);
    w.hub_data.lock().unwrap().proposals[5].title = "Renamed upstream".to_owned();
    w.hub_data.lock().unwrap().proposals[5].created = UNREADABLE_CREATED;
    let report = run_once(&w.db, &w.registry, &options()).await.unwrap();
    let outcome = |source: SourceKind| report.outcomes.iter().find(|o| o.source == source).unwrap().result.clone();
    let error = outcome(SourceKind::Discourse).unwrap_err();
    assert!(error.contains("not the expected JSON"), "{error}");
    assert!(outcome(SourceKind::Snapshot).is_ok());
    assert_eq!(report.published.topics.written(), 0, "a failed source publishes nothing");
    let renamed = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(proposal_id(5)))
        .one(&w.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renamed.title, "Renamed upstream");
    let run = ingestion_run::Entity::find().order_by_desc(ingestion_run::Column::Id).one(&w.db).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Partial);
    assert!(run.error.as_deref().unwrap_or_default().contains("testgov/discourse"), "{run:?}");
    let (_, fresh) = w.app.get_json("/v1/system/freshness").await;
    let forum = fresh["data"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "discourse")
        .cloned()
        .expect("the forum's watermark row records the failure");
    assert_eq!(forum["lastStatus"], "failed");
    assert!(forum["lastError"].as_str().unwrap().contains("not the expected JSON"), "{forum}");
    assert_eq!(fresh["data"]["lastRun"]["status"], "partial");

    // A stalled upstream: every attempt times out.
    for _ in 0..3 {
        w.hub.fault(Fault::Stall(Duration::from_secs(4)));
    }
    let report = run_once(&w.db, &w.registry, &snapshot_only()).await.unwrap();
    let error = report.outcomes[0].result.clone().unwrap_err();
    assert!(error.contains("timed out") && error.contains("after 3 attempts"), "{error}");

    // A persistent 500.
    for _ in 0..3 {
        w.hub.fault(Fault::Status(500, None));
    }
    let report = run_once(&w.db, &w.registry, &snapshot_only()).await.unwrap();
    let error = report.outcomes[0].result.clone().unwrap_err();
    assert!(error.contains("HTTP 500") && error.contains("after 3 attempts"), "{error}");

    // A Retry-After longer than the policy allows fails the request instead of stalling the run.
    w.hub.fault(Fault::Status(429, Some("3600")));
    let report = run_once(&w.db, &w.registry, &snapshot_only()).await.unwrap();
    let error = report.outcomes[0].result.clone().unwrap_err();
    assert!(error.contains("Retry-After"), "{error}");

    // None of the failures lost what was published.
    assert_eq!(
        proposal::Entity::find().filter(proposal::Column::DaoId.eq(DAO)).count(&w.db).await.unwrap(),
        PROPOSALS as u64
    );
    let (status, detail) = w.app.get_json(&format!("/v2/proposals/{}", key("snapshot", &big()))).await;
    assert_eq!(status, 200);
    assert_eq!(detail["data"]["votes"]["ingested"], BIG_VOTES.to_string());
}

#[tokio::test]
async fn an_unknown_dao_or_missing_source_is_refused_before_anything_runs() {
    let w = world(Backend::Sqlite).await;
    let unknown = RunOptions { dao: Some("nope".to_owned()), ..options() };
    let error = format!("{:#}", run_once(&w.db, &w.registry, &unknown).await.unwrap_err());
    assert!(error.contains("no DAO `nope`") && error.contains(DAO), "{error}");
    let missing = RunOptions { dao: Some(DAO.to_owned()), source: Some(SourceKind::Onchain), ..options() };
    let error = format!("{:#}", run_once(&w.db, &w.registry, &missing).await.unwrap_err());
    assert!(error.contains("has no onchain source"), "{error}");
    assert_eq!(ingestion_run::Entity::find().count(&w.db).await.unwrap(), 0);
    assert!(w.hub.requests().is_empty());
}

// ---------------------------------------------------------------------------------------------
// A killed ingester

/// What a client sees of the dataset, without the per-response fields (`generatedAt`, ids).
async fn served(app: &TestApp) -> Vec<Value> {
    let mut seen = Vec::new();
    for path in [
        "/v1/daos".to_owned(),
        format!("/v2/proposals?daoId={DAO}&limit=100"),
        format!("/v2/proposals/{}", key("snapshot", &big())),
        format!("/v2/proposals/{}/votes?limit=100", key("snapshot", &big())),
    ] {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        seen.push(body["data"].clone());
        seen.push(body["meta"]["freshness"]["dataAsOf"].clone());
    }
    let (_, fresh) = app.get_json("/v1/system/freshness").await;
    seen.push(fresh["data"]["revision"].clone());
    seen
}

/// Starts `govdata ingest` with its publication transaction held open for `hold_ms`, and
/// returns once it is holding.
async fn held_at_publication(mut command: tokio::process::Command, hold_ms: u64) -> tokio::process::Child {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = command
        .env(govdata::store::apply::HOLD_ENV, hold_ms.to_string())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("publication: holding") {
                return;
            }
        }
        panic!("the ingester ended before publishing");
    })
    .await
    .expect("the ingester reaches publication");
    // Keep reading, so that a full pipe never blocks the ingester.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

on_both_backends!(replica: a_killed_publication_leaves_the_served_revision_intact, |backend: Backend| async move {
    let w = world(backend).await;
    run_once(&w.db, &w.registry, &options()).await.unwrap();
    let before = served(&w.app).await;

    // Upstream moves on: a renamed proposal and a new vote.
    {
        let mut data = w.hub_data.lock().unwrap();
        data.proposals[1].title = "Renamed after the first run".to_owned();
        data.proposals[1].created = UNREADABLE_CREATED;
        let mut vote = data.votes[0].clone();
        vote.id = format!("0x{:064x}", 9_999_999);
        vote.voter = format!("0x{:040x}", 0xfeed);
        vote.vp = "7.5".to_owned();
        data.votes.push(vote);
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_file(&dir, &w.hub, &w.forum);
    let ingest = || {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_govdata"));
        c.args(["ingest", "--registry", registry.to_str().unwrap()])
            .env("DATABASE_URL", &w.app.database_url)
            .env("RUST_LOG", "warn")
            .kill_on_drop(true);
        c
    };
    let mut child = held_at_publication(ingest(), 120_000).await;

    // Inside the publication transaction: readers still see the old revision, all of it.
    assert_eq!(served(&w.app).await, before, "nothing of an uncommitted publication is visible");
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    assert_eq!(served(&w.app).await, before, "a killed publication leaves the served revision intact");
    let runs = ingestion_run::Entity::find().order_by_asc(ingestion_run::Column::Id).all(&w.db).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["succeeded", "running"]);
    assert_eq!(runs[1].revision_id, None);
    let killed = runs[1].id;
    let staged = || staged_record::Entity::find().filter(staged_record::Column::RunId.eq(killed)).count(&w.db);
    assert!(staged().await.unwrap() > 0, "the killed run left its staged records");

    // Its process beats no more. Rather than waiting for the beats to go stale, move its last
    // beat back past the limit: readers see it abandoned at once, before any run records it.
    let (_, fresh) = w.app.get_json("/v1/system/freshness").await;
    assert_eq!(fresh["data"]["lastRun"]["status"], "running", "{fresh}");
    let silent_since = runs[1].heartbeat_ms.expect("a run beats from its start") - STALE_AFTER.as_millis() as i64 - 1;
    ingestion_run::Entity::update_many()
        .col_expr(ingestion_run::Column::HeartbeatMs, sea_orm::sea_query::Expr::value(silent_since))
        .filter(ingestion_run::Column::Id.eq(killed))
        .exec(&w.db)
        .await
        .unwrap();
    let (_, fresh) = w.app.get_json("/v1/system/freshness").await;
    assert_eq!(fresh["data"]["lastRun"]["status"], "abandoned", "{fresh}");

    // The next run records it abandoned, drops what it staged, and publishes what it fetched
    // itself.
    let out = ingest().output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = ingestion_run::Entity::find().order_by_asc(ingestion_run::Column::Id).all(&w.db).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["succeeded", "abandoned", "succeeded"]);
    assert_eq!(staged().await.unwrap(), 0, "the abandoned run's staged records are dropped");
    let after = served(&w.app).await;
    assert_ne!(after, before);
    let renamed = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(proposal_id(1)))
        .one(&w.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renamed.title, "Renamed after the first run");
    let (_, detail) = w.app.get_json(&format!("/v2/proposals/{}", key("snapshot", &big()))).await;
    assert_eq!(detail["data"]["votes"]["ingested"], (BIG_VOTES + 1).to_string());
    let (_, fresh) = w.app.get_json("/v1/system/freshness").await;
    assert_eq!(fresh["data"]["lastRun"]["status"], "succeeded");
    let revision = |v: &Value| v["id"].as_str().unwrap().parse::<i64>().unwrap();
    assert!(revision(&fresh["data"]["revision"]) > revision(before.last().unwrap()), "{fresh}");
});

// A running run's process beats; the beats stop when the run is no longer running, and a run
// that another process reclaimed cannot publish.
on_both_backends!(replica: a_run_beats_while_it_runs, |backend: Backend| async move {
    use sea_orm::{ActiveModelTrait, ActiveValue::Set};
    let db = govdata::store::connect(&fresh_database(backend).await).await.unwrap();
    let run = ingestion_run::ActiveModel {
        trigger: Set(RunTrigger::Manual),
        started_ms: Set(1),
        heartbeat_ms: Set(Some(1)),
        status: Set(RunStatus::Running),
        rows_written: Set(0),
        rows_skipped: Set(0),
        ..Default::default()
    }
    .insert(&db)
    .await
    .unwrap();
    let beat = |db: DatabaseConnection| async move {
        ingestion_run::Entity::find_by_id(run.id).one(&db).await.unwrap().unwrap().heartbeat_ms.unwrap()
    };
    let _alive = govdata::ingest::Heartbeat::start(db.clone(), run.id, Duration::from_millis(20));
    eventually("the run beats", || async { beat(db.clone()).await > 1 }).await;

    // Another process saw it silent and reclaimed it: no more beats, and no publication.
    staging::reclaim(&db, 0, i64::MAX).await.unwrap();
    let stored = ingestion_run::Entity::find_by_id(run.id).one(&db).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Abandoned);
    assert!(!staging::beat(&db, run.id, 2).await.unwrap(), "an abandoned run beats no more");
    let refused = govdata::store::apply::publish_run(&db, run.id, &[], None).await.unwrap_err();
    assert!(refused.to_string().contains("is abandoned and can no longer publish"), "{refused}");
});

// ---------------------------------------------------------------------------------------------
// How answers are served: memory cache, live refresh, registry only

fn cache_status(body: &Value) -> &str {
    body["freshness"]["cacheStatus"].as_str().or_else(|| body["meta"]["freshness"]["cacheStatus"].as_str()).unwrap()
}

#[tokio::test]
async fn answers_are_cached_per_revision_and_a_publication_empties_the_cache() {
    let w = world(Backend::Sqlite).await;
    run_once(&w.db, &w.registry, &options()).await.unwrap();
    let detail = format!("/v2/proposals/{}", key("snapshot", &big()));
    for path in ["/v1/daos", detail.as_str(), "/v1/daos/testgov/brief"] {
        let first = w.app.get(path).await;
        let first_id = first.headers()["x-request-id"].to_str().unwrap().to_owned();
        let first: Value = first.json().await.unwrap();
        assert_eq!(cache_status(&first), "fresh", "{path}");
        let again = w.app.get(path).await;
        let again_id = again.headers()["x-request-id"].to_str().unwrap().to_owned();
        let again: Value = again.json().await.unwrap();
        assert_eq!(cache_status(&again), "memory_cache", "{path}: {again}");
        assert_eq!(first["data"], again["data"], "{path}: the same answer");
        if path.starts_with("/v1/") {
            assert_eq!(again["request"]["requestId"], again_id.as_str(), "the echo names this request");
            assert_ne!(first_id, again_id);
        }
    }
    // Behind the gate: a cached paid answer still asks an anonymous caller to pay.
    let anonymous = w.app.anonymous.get(w.app.url("/v1/daos/testgov/brief")).send().await.unwrap();
    assert_eq!(anonymous.status(), 402);
    // Not cached: errors, and the service's own state.
    for _ in 0..2 {
        let (status, body) = w.app.get_json("/v2/proposals/p_AAAAAAAAAAAAAAAAAAAAAA").await;
        assert_eq!(status, 404, "{body}");
        for service in ["/v1/system/freshness", "/v1/meta/pricing"] {
            let (_, body) = w.app.get_json(service).await;
            assert_eq!(cache_status(&body), "fresh", "{service}");
        }
    }

    // A publication: the next answer is read from the new revision.
    w.hub_data.lock().unwrap().proposals[0].title = "Fund the grants program, amended".to_owned();
    run_once(&w.db, &w.registry, &options()).await.unwrap();
    let (_, after) = w.app.get_json(&detail).await;
    assert_eq!(cache_status(&after), "fresh", "{after}");
    assert_eq!(after["data"]["title"], "Fund the grants program, amended");
    let (_, cached) = w.app.get_json(&detail).await;
    assert_eq!(cache_status(&cached), "memory_cache");
}

#[tokio::test]
async fn a_stale_dao_is_refreshed_live_then_served_as_cached_live() {
    let hub_data = Arc::new(Mutex::new(hub_data()));
    let hub = snapshot_hub(hub_data.clone()).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = registry_file(&dir, &hub, &forum);
    let url = fresh_database(Backend::Sqlite).await;
    let app = spawn_app_with(url, |a| {
        a.registry.registry = Some(file.clone());
        a.live_refresh = true;
        a.freshness_target = Duration::from_secs(3600);
        a.live_ttl = Duration::from_secs(600);
    })
    .await;

    // Nothing ingested: the request fetches the DAO from its upstreams before answering.
    let (status, body) = app.get_json(&format!("/v2/daos/{DAO}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache_status(&body), "refreshed_live", "{body}");
    assert_eq!(body["data"]["counts"]["proposals"], PROPOSALS.to_string());
    let fetched = hub.requests().len();
    assert!(fetched > 0);

    // Within the TTL: no upstream call, and the answers say they come from that fetch.
    for path in
        [format!("/v2/daos/{DAO}"), format!("/v2/proposals?daoId={DAO}&limit=5"), format!("/v1/daos/{DAO}/brief")]
    {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(cache_status(&body), "cached_live", "{path}: {body}");
    }
    assert_eq!(hub.requests().len(), fetched, "served from the live fetch, not fetched again");
    let (_, fresh) = app.get_json("/v1/system/freshness").await;
    assert_eq!(fresh["data"]["lastRun"]["trigger"], "live");
    // A list across DAOs names none: it is served as usual.
    let (_, all) = app.get_json("/v1/daos").await;
    assert_eq!(cache_status(&all), "fresh");
}

// One rule for a DAO id's letter case, live refresh included: a request naming the DAO in
// another case refreshes the DAO the handler answers for (the refresh path once sliced the URL
// text, so `TestGov` was "not registered" and served stale), and the lowercase requests after it
// are served from that refresh.
on_both_backends!(replica: a_dao_named_in_another_case_is_refreshed_live_as_its_slug, |backend: Backend| async move {
    let hub = snapshot_hub(Arc::new(Mutex::new(hub_data()))).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = registry_file(&dir, &hub, &forum);
    let app = spawn_app_with(fresh_database(backend).await, |a| {
        a.registry.registry = Some(file.clone());
        a.live_refresh = true;
        a.freshness_target = Duration::from_secs(3600);
        a.live_ttl = Duration::from_secs(600);
    })
    .await;
    let shouted = DAO.to_ascii_uppercase();
    let (status, body) = app.get_json(&format!("/v1/daos/{shouted}/brief")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache_status(&body), "refreshed_live", "{body}");
    assert_eq!(body["data"]["dao"]["daoId"], DAO);
    let fetched = hub.requests().len();
    assert!(fetched > 0);
    for path in [
        format!("/v2/daos/{DAO}"),
        format!("/v2/daos/{shouted}"),
        format!("/v2/proposals?daoId={shouted}&limit=5"),
        format!("/v1/daos/{DAO}/brief"),
    ] {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(cache_status(&body), "cached_live", "{path}: {body}");
    }
    assert_eq!(hub.requests().len(), fetched, "one DAO, refreshed once");
});

#[tokio::test]
async fn a_registered_dao_with_nothing_ingested_is_served_registry_only() {
    let w = world(Backend::Sqlite).await;
    let down = Fake::start(Arc::new(|_: &crate::fixtures::upstreams::Seen| (500, "{}".to_owned()))).await;
    let text = format!(
        "[[dao]]\nid = \"{DAO}\"\nname = \"Test Governance\"\n[dao.snapshot]\nspace = \"{SPACE}\"\nhub = \"{}/graphql\"\n\
         [[dao]]\nid = \"quietdao\"\nname = \"Quiet DAO\"\n[dao.snapshot]\nspace = \"quiet.eth\"\nhub = \"{}/graphql\"\n",
        w.hub.url, down.url
    );
    let registry = Registry::parse(&text, "two DAOs").unwrap();
    let report = run_once(&w.db, &registry, &options()).await.unwrap();
    assert!(report.outcomes.iter().any(|o| o.dao_id == "quietdao" && o.result.is_err()), "{report}");

    let (status, body) = w.app.get_json("/v2/daos/quietdao").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache_status(&body), "registry_only");
    assert_eq!(body["data"]["status"], "registry_only");
    assert_eq!(body["data"]["name"], "Quiet DAO");
    let (status, brief) = w.app.get_json("/v1/daos/quietdao/brief").await;
    assert_eq!(status, 200, "{brief}");
    assert_eq!(cache_status(&brief), "registry_only");
    // Even when replayed from the cache, registry_only stays: it describes the data.
    let (_, again) = w.app.get_json("/v2/daos/quietdao").await;
    assert_eq!(cache_status(&again), "registry_only");
    let (_, ingested) = w.app.get_json(&format!("/v2/daos/{DAO}")).await;
    assert_eq!(cache_status(&ingested), "fresh");
    assert_eq!(ingested["data"]["status"], "ingested");
}

#[tokio::test]
async fn serve_ingests_on_a_schedule() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let hub = snapshot_hub(Arc::new(Mutex::new(hub_data()))).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = registry_file(&dir, &hub, &forum);
    let url = fresh_database(Backend::Sqlite).await;
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(["serve", "--addr", "127.0.0.1:0", "--no-sample", "--ingest-every", "1s"])
        .arg("--registry")
        .arg(&file)
        .env("DATABASE_URL", &url)
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(at) = line.find("listening on http://") {
                let rest = &line[at + "listening on ".len()..];
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("the server exited");
    })
    .await
    .expect("the server starts");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    // At least two scheduled runs, the first of which loaded the DAO.
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let fresh: Value = client.get(format!("{base}/v1/daos")).send().await.unwrap().json().await.unwrap();
        let dao = fresh["data"]["items"].as_array().unwrap().iter().find(|d| d["daoId"] == DAO).cloned();
        let db = govdata::store::connect(&url).await.unwrap();
        let runs = ingestion_run::Entity::find().all(&db).await.unwrap();
        db.close().await.unwrap();
        let scheduled =
            runs.iter().filter(|r| r.trigger == RunTrigger::Schedule && r.status == RunStatus::Succeeded).count();
        if scheduled >= 2 {
            let dao = dao.expect("the DAO is registered by the first run");
            assert_eq!(dao["counts"]["proposals"], PROPOSALS.to_string(), "{dao}");
            let mut done: Vec<_> = runs.iter().filter_map(|r| Some((r.started_ms, r.finished_ms?))).collect();
            done.sort();
            assert!(done.windows(2).all(|w| w[1].0 >= w[0].1), "runs never overlap: {runs:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "two scheduled runs within 60 s: {runs:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    server.kill().await.unwrap();
}

#[tokio::test]
async fn a_slow_live_refresh_serves_the_stored_data_and_finishes_in_the_background() {
    let w = world(Backend::Sqlite).await;
    run_once(&w.db, &w.registry, &options()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = registry_file(&dir, &w.hub, &w.forum);
    let app = spawn_app_with(w.app.database_url.clone(), |a| {
        a.registry.registry = Some(file.clone());
        a.live_refresh = true;
        a.freshness_target = Duration::from_millis(1);
        a.live_ttl = Duration::from_secs(600);
        a.live_deadline = Duration::from_millis(300);
    })
    .await;
    // The hub stalls past the deadline on the refresh's first request.
    w.hub.fault(Fault::Stall(Duration::from_secs(2)));
    let path = format!("/v2/daos/{DAO}");
    let (status, body) = tokio::time::timeout(Duration::from_secs(2), app.get_json(&path))
        .await
        .expect("answered at the 300 ms deadline, not after the upstream's 2 s stall");
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache_status(&body), "fresh", "the stored data, without waiting for the upstream: {body}");
    // The refresh goes on and completes; afterwards the DAO's answers come from it.
    eventually_within(
        Duration::from_secs(30),
        "the background refresh completes and its answers are served",
        || async {
            let (_, body) = tokio::time::timeout(Duration::from_secs(1), app.get_json(&path))
                .await
                .expect("no request waits past the deadline for a refresh");
            cache_status(&body) == "cached_live"
        },
    )
    .await;
    let runs = ingestion_run::Entity::find().order_by_asc(ingestion_run::Column::Id).all(&w.db).await.unwrap();
    assert_eq!(
        runs.iter().filter(|r| r.trigger == RunTrigger::Live).count(),
        1,
        "one refresh for all those requests: {runs:?}"
    );
    assert!(runs.iter().all(|r| r.status == RunStatus::Succeeded), "{runs:?}");
}

// Two `govdata ingest` processes on one store: the second reaches its publication while the
// first holds its own open, waits its turn, and both complete. (Without the turn, PostgreSQL
// let the second rebuild the aggregates over rows it could not see: a unique violation.)
on_both_backends!(replica: two_processes_publish_in_turn, |backend: Backend| async move {
    let w = world(backend).await;
    run_once(&w.db, &w.registry, &options()).await.unwrap();
    {
        let mut data = w.hub_data.lock().unwrap();
        data.proposals[2].title = "Renamed for the second process".to_owned();
        data.proposals[2].created = UNREADABLE_CREATED;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = registry_file(&dir, &w.hub, &w.forum);
    let ingest = || {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_govdata"));
        c.arg("ingest")
            .arg("--registry")
            .arg(&file)
            .env("DATABASE_URL", &w.app.database_url)
            .env("RUST_LOG", "warn")
            .kill_on_drop(true);
        c
    };
    // Different sources, so that nothing but the publication itself makes them meet.
    let mut first = {
        let mut command = ingest();
        command.args(["--source", "discourse"]);
        held_at_publication(command, 3000).await
    };
    let second = ingest().args(["--source", "snapshot"]).output().await.unwrap();
    assert!(second.status.success(), "the second waits its turn: {}", String::from_utf8_lossy(&second.stderr));
    assert!(first.wait().await.unwrap().success());
    let runs = ingestion_run::Entity::find().order_by_asc(ingestion_run::Column::Id).all(&w.db).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["succeeded"; 3], "{runs:?}");
    assert!(runs[2].finished_ms >= runs[1].finished_ms, "the second published after the first: {runs:?}");
    let renamed = proposal::Entity::find()
        .filter(proposal::Column::ExternalId.eq(proposal_id(2)))
        .one(&w.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renamed.title, "Renamed for the second process");
});
