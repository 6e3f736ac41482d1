//! Reads on PostgreSQL streaming replicas (`store::nodes`): served by a replica that has replayed
//! the serving revision, by the primary while none has; a lagging or failed replica left and
//! taken back; a primary outage that leaves reads served and refuses writes with 503 until it
//! recovers by itself. The tests of routing, consistency and failover also run with their reads on a replica
//! (`::postgres_replica`); these tests cut nodes, so they use a pair of their own
//! (`fixtures::pair`).
use std::time::Duration;

use govdata::contract::vocabulary::NodeHealth;
use sea_orm::{ConnectionTrait, Database, DbBackend, Statement, TransactionTrait};
use serde_json::{Value, json};

use crate::fixtures::pair::OutagePair;
use crate::helpers::{Backend, TestApp, eventually, require, sample_database, spawn_app_with};

/// Requests each node served, by name.
fn reads(app: &TestApp) -> (u64, u64) {
    let report = app.serving.nodes().report();
    (report[0].reads, report[1].reads)
}

/// `name` as `/v1/system/freshness` reports it (asked without `sync`, which waits for the replica).
async fn node(app: &TestApp, name: &str) -> Value {
    let response = app.client.get(app.url("/v1/system/freshness")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["data"]["storeNodes"].as_array().unwrap().iter().find(|n| n["name"] == name).cloned().unwrap_or(Value::Null)
}

/// A server over a database of the outage pair, reading from its replica, with no response
/// cache (every request reads the store) and a lag bound of a second.
async fn app_on_pair(pair: &OutagePair) -> TestApp {
    let (primary, replica) = pair.sample_database().await;
    spawn_app_with(primary, move |a| {
        a.response_cache_mb = 0;
        a.replicas.read_replica_urls = vec![replica];
        a.replicas.replica_max_lag = Duration::from_secs(1);
    })
    .await
}

async fn sql(url: &str, statement: &str) {
    let db = Database::connect(url).await.expect("connect");
    db.execute_raw(Statement::from_string(db.get_database_backend(), statement)).await.expect(statement);
    db.close().await.ok();
}

const READS: [&str; 4] = ["/v1/daos", "/v2/daos/uniswap", "/v2/daos/uniswap/voters?limit=3", "/v1/system/freshness"];

#[tokio::test]
async fn reads_are_the_replicas_once_it_has_the_revision() {
    if !require(Backend::Replica) {
        return;
    }
    let app = spawn_app_with(sample_database(Backend::Replica), |a| a.response_cache_mb = 0).await;
    for path in READS {
        let (status, body) = app.get_json(path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (primary, replica) = reads(&app);
    assert_eq!(primary, 0, "no read went to the primary");
    assert!(replica >= READS.len() as u64, "{replica}");
    // An export file is built from a view of the replica too (the catalogue is the primary's).
    let download = app.client.get(app.url("/v2/exports/uniswap/votes.csv")).send().await.unwrap();
    assert_eq!(download.status(), 200);
    assert!(download.text().await.unwrap().lines().count() > 1);
    let (primary, after) = reads(&app);
    assert_eq!(primary, 0, "the build did not read the primary");
    assert!(after > replica, "the build read the replica");
    // The operator sees each node on /metrics.
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"govdata_store_node_up{node="replica-1",role="replica"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"govdata_store_node_up{node="primary",role="primary"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"govdata_store_node_lag_seconds{node="replica-1"}"#), "{metrics}");
}

#[tokio::test]
async fn a_lagging_replica_is_not_read_for_a_revision_it_lacks_and_is_taken_back() {
    let Some((_turn, pair)) = OutagePair::take().await else { return };
    let app = app_on_pair(pair).await;
    assert_eq!(app.serving.nodes().report().len(), 2);
    let (_, before) = app.get_json("/v1/system/freshness").await;
    assert_eq!(before["data"]["revision"]["id"], "1");
    let replica_db = app.database_url.replace(&pair.primary_base(), &pair.replica_base());
    // The replica stops replaying; the primary publishes revision 2.
    sql(&replica_db, "SELECT pg_wal_replay_pause()").await;
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let run_id = govdata::store::publish::current_revision(&db).await.unwrap().unwrap().run_id.unwrap();
    govdata::store::publish::publish(&db, run_id, "while the replica is paused", &govdata::store::publish::Scope::All)
        .await
        .expect("publish");
    app.serving.refresh().await.unwrap();
    assert_eq!(app.serving.current().id, 2);
    // Revision 2 is served at once, by the primary: no answer is read from the replica's 1.
    let (primary_before, replica_before) = reads(&app);
    for path in READS {
        let (status, body) = app.client.get(app.url(path)).send().await.map(|r| (r.status(), r)).unwrap();
        assert_eq!(status, 200, "{path}");
        let body: Value = body.json().await.unwrap();
        if path == "/v1/system/freshness" {
            assert_eq!(body["data"]["revision"]["id"], "2", "{body}");
        }
    }
    // A cursor made while the replica lags.
    let (status, first) = app.get_json("/v2/daos?limit=3").await;
    assert_eq!(status, 200, "{first}");
    let cursor = first["meta"]["page"]["nextCursor"].as_str().expect("a next page").to_owned();
    let (primary_after, replica_after) = reads(&app);
    assert_eq!(replica_after, replica_before, "the replica lacks revision 2: not read");
    assert_eq!(primary_after - primary_before, READS.len() as u64 + 1);
    // Past the lag bound (a second) it is left, and says why.
    eventually("the paused replica is reported lagging", || async {
        let n = node(&app, "replica-1").await;
        n["state"] == "lagging" && n["revision"] == "1" && n["error"].as_str().is_some_and(|e| e.contains("behind"))
    })
    .await;
    let lag: f64 = node(&app, "replica-1").await["lagSeconds"].as_str().unwrap().parse().unwrap();
    assert!(lag >= 1.0, "{lag}");
    // Replaying again, it catches up, is taken back within a second, and serves reads again.
    sql(&replica_db, "SELECT pg_wal_replay_resume()").await;
    let resumed = std::time::Instant::now();
    eventually("the replica is taken back", || async {
        let n = node(&app, "replica-1").await;
        n["state"] == "serving" && n["revision"] == "2"
    })
    .await;
    assert!(resumed.elapsed() < Duration::from_secs(1), "taken back in {:?}", resumed.elapsed());
    let (_, replica_before) = reads(&app);
    let (status, _) = app.get_json("/v1/daos").await;
    assert_eq!(status, 200);
    assert!(reads(&app).1 > replica_before, "read from the replica again");
    // The cursor made during the lag pages on, now from the replica: lag never made it stale.
    let (status, second) = app.get_json(&format!("/v2/daos?limit=3&cursor={cursor}")).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["data"]["items"][0]["daoId"], "dimo", "{second}");
    db.close().await.ok();
}

#[tokio::test]
async fn a_replica_cut_mid_traffic_costs_no_request_and_is_taken_back() {
    let Some((_turn, pair)) = OutagePair::take().await else { return };
    let app = app_on_pair(pair).await;
    app.sync().await;
    // Requests keep coming while the replica is cut: none fails, and it is left within a second.
    let traffic = {
        let (client, base) = (app.client.clone(), app.url(""));
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            for i in 0..300 {
                let path = READS[i % READS.len()];
                let status = client.get(format!("{base}{path}")).send().await.map(|r| r.status().as_u16()).unwrap_or(0);
                statuses.push((path, status));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            statuses
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    pair.cut("replica");
    let cut = std::time::Instant::now();
    // Read off the node monitor itself: a request asking would add its own time.
    let replica_down = || app.serving.nodes().report()[1].state.health == NodeHealth::Down;
    eventually("the cut replica is left", || async { replica_down() }).await;
    assert!(cut.elapsed() < Duration::from_secs(1), "left in {:?}", cut.elapsed());
    assert_eq!(node(&app, "replica-1").await["state"], "down");
    let statuses = traffic.await.unwrap();
    let failed: Vec<_> = statuses.iter().filter(|(_, s)| *s != 200).collect();
    assert!(failed.is_empty(), "every request answered while the replica went: {failed:?}");
    // Back: taken back once it answers and has caught up, and read from again.
    pair.restore("replica");
    eventually("the replica is taken back", || async { node(&app, "replica-1").await["state"] == "serving" }).await;
    let (_, replica_before) = reads(&app);
    let (status, _) = app.get_json("/v2/daos/uniswap").await;
    assert_eq!(status, 200);
    assert!(reads(&app).1 > replica_before);
}

// A read in flight on a replica that fails under it is answered from another node. Made
// deterministic: the primary holds `daos` locked, so the replayed lock holds the replica's read of
// `/v1/daos` waiting; its session is terminated (as a replica restarting, or a recovery conflict,
// ends it) and the request is read again from the primary, which answers once the lock is let go.
#[tokio::test]
async fn a_read_a_replica_fails_midway_is_read_again_elsewhere() {
    let Some((_turn, pair)) = OutagePair::take().await else { return };
    let app = app_on_pair(pair).await;
    app.sync().await;
    let name = app.database_url.rsplit('/').next().unwrap().to_owned();
    let primary = Database::connect(&app.database_url).await.unwrap();
    let lock = primary.begin().await.unwrap();
    lock.execute_unprepared("LOCK TABLE daos IN ACCESS EXCLUSIVE MODE").await.unwrap();
    // The lock's WAL record is sent once flushed: a WAL switch flushes it now.
    primary.execute_unprepared("SELECT pg_switch_wal()").await.unwrap();
    let replica_admin = Database::connect(format!("{}/postgres", pair.replica_base())).await.unwrap();
    let replayed = "SELECT 1 AS held FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation IS NOT NULL";
    eventually("the replica replays the lock", || async {
        let rows = replica_admin.query_all_raw(Statement::from_string(DbBackend::Postgres, replayed.to_owned())).await;
        rows.is_ok_and(|r| !r.is_empty())
    })
    .await;
    let (primary_before, replica_before) = reads(&app);
    let retried_before = govdata::metrics::METRICS.replica_retries.get();
    let request = tokio::spawn({
        let (client, url) = (app.client.clone(), app.url("/v1/daos"));
        async move {
            let response = client.get(url).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    });
    let waiting = format!("SELECT pid FROM pg_stat_activity WHERE datname = '{name}' AND wait_event_type = 'Lock'");
    eventually("the replica's read waits on the replayed lock", || async {
        let rows = replica_admin.query_all_raw(Statement::from_string(DbBackend::Postgres, waiting.clone())).await;
        rows.is_ok_and(|r| !r.is_empty())
    })
    .await;
    assert_eq!(reads(&app).1, replica_before + 1, "the request went to the replica");
    replica_admin
        .execute_unprepared(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND wait_event_type = 'Lock'"
        ))
        .await
        .unwrap();
    eventually("the request is read again from the primary", || async { reads(&app).0 > primary_before }).await;
    lock.commit().await.unwrap();
    let (status, body) = request.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["items"].as_array().map(Vec::len), Some(8), "{body}");
    assert!(govdata::metrics::METRICS.replica_retries.get() > retried_before);
    // Its session ended, not its node: the replica is (or is soon) serving again.
    eventually("the replica is serving", || async { node(&app, "replica-1").await["state"] == "serving" }).await;
    primary.close().await.ok();
    replica_admin.close().await.ok();
}

#[tokio::test]
async fn without_the_primary_reads_are_served_and_writes_refused_until_it_returns() {
    let Some((_turn, pair)) = OutagePair::take().await else { return };
    let app = app_on_pair(pair).await;
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let (_, token) = govdata::store::tokens::create(&db, "p", &["v2:paid:standard"], None, 0).await.unwrap();
    db.close().await.ok();
    app.sync().await;
    let subscribe = |app: &TestApp| {
        app.anonymous
            .post(app.url("/v2/webhooks"))
            .header("x-service-api-token", token.clone())
            .json(&json!({ "url": "http://127.0.0.1:9/hook" }))
            .send()
    };
    pair.cut("primary");
    eventually("the primary is reported down", || async { node(&app, "primary").await["state"] == "down" }).await;
    // Reads: served from the replica, free and paid (internal token), and partner tokens known
    // before the outage still open paid reads.
    for path in READS {
        let (status, body) = app.get_json(path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let partner = app.anonymous.get(app.url("/v2/daos/uniswap")).header("x-service-api-token", &token).send().await;
    assert_eq!(partner.unwrap().status(), 200);
    // An event stream resumed from the start catches up from the replica: the entries the feed
    // lists, in order.
    let listed = crate::feed::entries_after(&app, "0").await;
    assert!(!listed.is_empty(), "the sample's publication fed entries");
    let mut stream = crate::stream::Sse::open(&app, "/v2/stream?after=0", &[]).await;
    stream.next(Duration::from_secs(5)).await.expect("the stream's first event");
    let n = listed.len().min(20);
    let streamed: Vec<String> = stream.entries(n).await.into_iter().map(|e| e.id.unwrap()).collect();
    let expected: Vec<String> = listed[..n].iter().map(|e| e["sequence"].as_str().unwrap().to_owned()).collect();
    assert_eq!(streamed, expected);
    let ready = app.anonymous.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["primary"], "down", "{ready}");
    // Writes: 503 with Retry-After and a problem body, at once.
    let started = std::time::Instant::now();
    let refused = subscribe(&app).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(refused.headers()["retry-after"], "1");
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "UNAVAILABLE", "{problem}");
    // The primary returns: writes succeed again by themselves.
    pair.restore("primary");
    eventually("writes succeed again", || async { subscribe(&app).await.is_ok_and(|r| r.status() == 201) }).await;
    eventually("the primary is reported serving", || async { node(&app, "primary").await["state"] == "serving" }).await;
}

/// Revisions as a store holds them: (id, run), oldest first.
async fn revisions(url: &str) -> Vec<(i64, Option<i64>)> {
    let db = Database::connect(url).await.expect("connect");
    let sql = "SELECT id, run_id FROM data_revisions ORDER BY id";
    let rows = db.query_all_raw(Statement::from_string(DbBackend::Postgres, sql.to_owned())).await.expect(sql);
    db.close().await.ok();
    rows.iter().map(|r| (r.try_get("", "id").unwrap(), r.try_get("", "run_id").unwrap())).collect()
}

/// The ingestion runs `url` recorded, one line each, their times in ms after `since_ms`.
async fn runs_since(url: &str, since_ms: i64) -> String {
    let db = Database::connect(url).await.expect("connect");
    let sql = format!(
        "SELECT id, status, started_ms - {since_ms} AS started, finished_ms - {since_ms} AS finished, error \
         FROM ingestion_runs WHERE coalesce(finished_ms, started_ms) >= {since_ms} - 1000 ORDER BY id"
    );
    let rows = db.query_all_raw(Statement::from_string(DbBackend::Postgres, sql.clone())).await.expect("runs");
    db.close().await.ok();
    rows.iter()
        .map(|r| {
            let id: i64 = r.try_get("", "id").unwrap();
            let status: String = r.try_get("", "status").unwrap();
            let started: i64 = r.try_get("", "started").unwrap();
            let finished: Option<i64> = r.try_get("", "finished").unwrap();
            let error: Option<String> = r.try_get("", "error").unwrap();
            format!("run {id} {status}: {started} ms to {finished:?} ms, error {error:?}\n")
        })
        .collect()
}

/// A Snapshot space with one active proposal, for a quick scheduled ingestion.
fn one_proposal_space() -> crate::fixtures::upstreams::HubData {
    use crate::fixtures::upstreams::{HubData, HubProposal, HubVote};
    let proposal = format!("0x{:064x}", 45);
    let votes = (1..=2)
        .map(|i| HubVote {
            id: format!("0x{:064x}", 4500 + i),
            proposal: proposal.clone(),
            voter: format!("0x{:040x}", i),
            created: 1_700_000_000 + i,
            choice: "1".to_owned(),
            vp: "1.5".to_owned(),
        })
        .collect();
    HubData {
        space: "failover.eth".to_owned(),
        proposals: vec![HubProposal {
            id: proposal,
            created: 1_700_000_000,
            state: "active",
            scores: vec!["3", "0"],
            scores_total: "3",
            scores_state: "pending",
            title: "Before the failover".to_owned(),
            votes: 2,
        }],
        votes,
    }
}

// Issue 45, item 5. Measured from the old primary's stop: the watch moves the pool within
// `TAKEOVER`; a write already waiting for a connection waits one more connect backoff at most;
// the run the cut interrupted goes on on the new primary and cannot publish there (its run was
// recorded on the old one); the schedule's next run starts a period later and publishes.
#[tokio::test]
async fn writes_follow_a_promoted_replica_without_a_restart() {
    use govdata::store::primary::{LONGEST_CONNECT_BACKOFF, TAKEOVER};
    /// The schedule's period here: short, so the run after the takeover comes soon.
    const INGEST_EVERY: Duration = Duration::from_millis(200);
    /// A scheduled run of the one-proposal DAO, fetch to commit, with room for a loaded machine.
    const ONE_RUN: Duration = Duration::from_secs(2);
    let Some((_turn, pair)) = OutagePair::take().await else { return };
    let (old_primary, replica) = pair.sample_database().await;
    let name = old_primary.rsplit('/').next().unwrap().to_owned();
    let hub_data = std::sync::Arc::new(std::sync::Mutex::new(one_proposal_space()));
    let hub = crate::fixtures::upstreams::snapshot_hub(hub_data.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry.toml");
    let text = format!(
        "[[dao]]\nid = \"failover\"\nname = \"Failover\"\n[dao.snapshot]\nspace = \"failover.eth\"\nhub = \"{}/graphql\"\n",
        hub.url
    );
    std::fs::write(&registry, text).unwrap();
    // Both hosts as primary candidates; the replica also serves reads.
    let app = spawn_app_with(pair.both_hosts(&name), |a| {
        a.response_cache_mb = 0;
        a.replicas.read_replica_urls = vec![replica.clone()];
        a.replicas.replica_max_lag = Duration::from_secs(1);
        a.registry.registry = Some(registry.clone());
        a.ingest_every = Some(INGEST_EVERY);
    })
    .await;
    // The schedule publishes the DAO on the first primary, and the replica replays it.
    eventually("the first run publishes", || async { revisions(&old_primary).await.len() == 2 }).await;
    let before = revisions(&old_primary).await;
    eventually("the replica replays it", || async { revisions(&replica).await == before }).await;
    let (_, served) = app.get_json("/v2/proposals?daoId=failover").await;
    assert_eq!(served["data"]["items"][0]["title"], "Before the failover", "{served}");

    // Failover: the replica is promoted, the old primary takes writes the promoted replica never
    // sees (lost, as asynchronous replication loses the last writes), and goes; the space changes.
    pair.promote();
    let lost = sea_orm::Database::connect(old_primary.as_str()).await.unwrap();
    lost.execute_unprepared(
        "CREATE TABLE lost_in_failover AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g",
    )
    .await
    .unwrap();
    lost.close().await.ok();
    // Long enough for the node monitor to sample the old primary's WAL past those writes.
    tokio::time::sleep(govdata::store::nodes::PROBE_INTERVAL * 5).await;
    pair.cut("primary");
    let cut = std::time::Instant::now();
    let cut_ms = govdata::contract::time::now_ms();
    hub_data.lock().unwrap().proposals[0].title = "After the failover".to_owned();
    let published = before.len() + 1;
    let bound = TAKEOVER + LONGEST_CONNECT_BACKOFF + ONE_RUN + INGEST_EVERY + ONE_RUN;
    while revisions(&replica).await.len() < published {
        if cut.elapsed() > bound {
            // Where the time went: each run the new primary recorded, against the cut.
            let runs = runs_since(&replica, cut_ms).await;
            panic!(
                "not within {bound:?}: ingestion publishes on the promoted replica; its runs since the cut:\n{runs}"
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = cut.elapsed();
    eprintln!("published on the new primary {took:?} after the old one stopped (bound {bound:?})");

    // Nothing lost, nothing twice: the revisions of before, then one new one, and no more after
    // further runs (the space has not changed again).
    tokio::time::sleep(INGEST_EVERY * 5).await;
    let after = revisions(&replica).await;
    assert_eq!(after.len(), published, "{after:?}");
    assert_eq!(after[..before.len()], before[..], "{after:?}");
    assert!(after[before.len()].0 > before[before.len() - 1].0, "{after:?}");
    // Served: the new revision, read from the promoted replica too, with the new primary serving.
    let (_, fresh) = app.get_json("/v1/system/freshness").await;
    assert_eq!(fresh["data"]["revision"]["id"], after[before.len()].0.to_string(), "{fresh}");
    eventually("both nodes serve", || async {
        node(&app, "primary").await["state"] == "serving" && node(&app, "replica-1").await["state"] == "serving"
    })
    .await;
    let (_, served) = app.get_json("/v2/proposals?daoId=failover").await;
    assert_eq!(served["data"]["items"][0]["title"], "After the failover", "{served}");
}
