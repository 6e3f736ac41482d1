//! Upgrades of stores written before a migration: what they serve is unchanged.
use govdata::store::{self, address::AccountBytes, entities::vote};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait};

use crate::helpers::{Backend, fresh_database, spawn_app_on};
use crate::on_both_backends;

/// The answers that read votes, by voter and in voter order.
async fn vote_answers(url: &str) -> Vec<serde_json::Value> {
    let app = spawn_app_on(url.to_owned()).await;
    let (_, proposals) = app.get_json("/v2/proposals?daoId=uniswap&limit=100").await;
    let mut seen = Vec::new();
    let voted =
        proposals["data"]["items"].as_array().expect("proposals").iter().filter(|p| p["votes"]["ingested"] != "0");
    for p in voted.take(3) {
        let key = p["proposalKey"].as_str().unwrap();
        let (status, votes) = app.get_json(&format!("/v2/proposals/{key}/votes?limit=50")).await;
        assert_eq!(status, 200, "{votes}");
        let voter = votes["data"]["items"][0]["voterIdentity"].as_str().unwrap().to_owned();
        seen.push(votes["data"].clone());
        let (_, one) = app.get_json(&format!("/v2/proposals/{key}/votes?voter={voter}")).await;
        seen.push(one["data"].clone());
        let (_, history) = app.get_json(&format!("/v2/voters/{voter}/votes?limit=20")).await;
        seen.push(history["data"].clone());
        let (_, profile) = app.get_json(&format!("/v2/voters/{voter}")).await;
        seen.push(profile["data"].clone());
    }
    assert_eq!(seen.len(), 12, "three proposals with votes");
    let (_, ranking) = app.get_json("/v2/daos/uniswap/voters?limit=20").await;
    seen.push(ranking["data"].clone());
    seen
}

// Migration 7 keeps voters as bytes. A store written before it (voters as hex text) is
// converted on the next start, and serves exactly what it served.
on_both_backends!(voters_as_text_are_converted, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
    let before = vote_answers(&url).await;

    // Put the store back as it was before migration 7: voters as lowercase hex text.
    let downgrade: &[&str] = match backend {
        Backend::Sqlite => &[
            "BEGIN",
            r#"CREATE TABLE votes_old ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "proposal_id" integer NOT NULL, "dao_id" varchar NOT NULL, "voter" varchar NOT NULL, "choice" varchar NOT NULL, "voting_power" varchar NOT NULL, "vp_sort" varchar NOT NULL, "vp_from_float" boolean NOT NULL, "reason" varchar, "created_ms" integer NOT NULL, "ipfs" varchar, "tx_hash" varchar, "block_number" integer)"#,
            "INSERT INTO votes_old SELECT id, proposal_id, dao_id, '0x' || lower(hex(voter)), choice, voting_power, vp_sort, vp_from_float, reason, created_ms, ipfs, tx_hash, block_number FROM votes",
            "DROP TABLE votes",
            "ALTER TABLE votes_old RENAME TO votes",
            r#"CREATE UNIQUE INDEX "idx-votes-vote_natural" ON votes (proposal_id, voter)"#,
            r#"CREATE INDEX ix_votes_proposal_power ON votes (proposal_id, vp_sort DESC, voter)"#,
            r#"CREATE INDEX ix_votes_proposal_time ON votes (proposal_id, created_ms DESC, id DESC)"#,
            r#"CREATE INDEX ix_votes_voter_time ON votes (voter, created_ms DESC, id DESC)"#,
            "COMMIT",
        ],
        Backend::Postgres | Backend::Replica => &[
            "DROP INDEX ix_votes_proposal_choice_power",
            "DROP INDEX ix_votes_proposal_choice_time",
            "ALTER TABLE votes ALTER COLUMN voter TYPE varchar USING '0x' || encode(voter, 'hex')",
        ],
    };
    // One script: one connection of the pool runs it all.
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    db.execute_unprepared("DELETE FROM seaql_migrations WHERE version = 'm0007_voter_bytes'").await.unwrap();
    let text: i64 = {
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                "SELECT COUNT(*) AS n FROM votes WHERE voter LIKE '0x%'",
            ))
            .await
            .unwrap()
            .unwrap();
        row.try_get("", "n").unwrap()
    };
    assert_eq!(text, 19_970, "the store holds voters as text again");
    db.close().await.unwrap();

    // The next start migrates it.
    let db = store::connect(&url).await.unwrap();
    let votes = vote::Entity::find().all(&db).await.unwrap();
    assert_eq!(votes.len(), 19_970);
    assert!(votes.iter().all(|v| v.voter.0.len() == 20), "every voter is 20 bytes");
    assert!(
        votes.iter().any(|v| v.voter == AccountBytes::parse("0x683a4F9915D6216f73d6Df50151725036bD26C02").unwrap())
    );
    if db.get_database_backend() == DbBackend::Sqlite {
        let indexes = db
            .query_all_raw(sea_orm::Statement::from_string(
                DbBackend::Sqlite,
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'votes' ORDER BY name",
            ))
            .await
            .unwrap()
            .iter()
            .map(|r| r.try_get::<String>("", "name").unwrap())
            .collect::<Vec<_>>();
        assert_eq!(
            indexes,
            [
                "idx-votes-vote_natural",
                "ix_votes_proposal_choice_power",
                "ix_votes_proposal_choice_time",
                "ix_votes_proposal_power",
                "ix_votes_proposal_time",
                "ix_votes_voter_time",
            ]
        );
    }
    assert_eq!(vote_answers(&url).await, before, "the converted store serves what it served");
});

// Migrations 8 to 11: a store from before them (no row counts on its revisions, the ranking
// read through `ix_voter_stats_rank`, no rate counts, runs without heartbeats) gets its serving
// revision counted, the covering index, the rate tables and run heartbeats, and answers the
// freshness and ranking calls exactly as before.
on_both_backends!(revision_counts_and_ranking_index_are_added, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
    let answers = |url: String| async move {
        let app = spawn_app_on(url).await;
        let (_, fresh) = app.get_json("/v1/system/freshness").await;
        let (_, ranking) = app.get_json("/v2/daos/uniswap/voters?limit=50").await;
        (fresh["data"]["counts"].clone(), fresh["data"]["lastRun"].clone(), ranking["data"].clone())
    };
    let before = answers(url.clone()).await;
    assert_ne!(before.0["voters"], "0", "{:?}", before.0);
    assert_ne!(before.0["governanceEvents"], "0", "{:?}", before.0);

    let downgrade = [
        "ALTER TABLE data_revisions DROP COLUMN voters",
        "ALTER TABLE data_revisions DROP COLUMN forum_topics",
        "ALTER TABLE data_revisions DROP COLUMN governance_events",
        "ALTER TABLE data_revisions DROP COLUMN signals",
        r#"DROP INDEX "ix_voter_stats_rank_covering""#,
        r#"CREATE INDEX "ix_voter_stats_rank" ON voter_dao_stats (dao_id, vp_sort DESC, voter)"#,
        "DROP TABLE rate_counts",
        "ALTER TABLE partner_tokens DROP COLUMN rate_quota",
        "ALTER TABLE partner_tokens DROP COLUMN rate_window_s",
        "ALTER TABLE ingestion_runs DROP COLUMN heartbeat_ms",
        "DELETE FROM seaql_migrations WHERE version IN \
         ('m0008_revision_counts', 'm0009_ranking_covers', 'm0010_rate_limits', 'm0011_run_heartbeat')",
    ];
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    db.close().await.unwrap();

    let db = store::connect(&url).await.unwrap();
    let indexes = |table: &str| match backend {
        Backend::Sqlite => format!("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{table}'"),
        Backend::Postgres | Backend::Replica => {
            format!("SELECT indexname AS name FROM pg_indexes WHERE tablename = '{table}'")
        }
    };
    let names: Vec<String> = db
        .query_all_raw(sea_orm::Statement::from_string(db.get_database_backend(), indexes("voter_dao_stats")))
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<String>("", "name").unwrap())
        .collect();
    assert!(names.iter().any(|n| n == "ix_voter_stats_rank_covering"), "{names:?}");
    assert!(!names.iter().any(|n| n == "ix_voter_stats_rank"), "the covering index replaces it: {names:?}");
    // The run columns are back: a new run beats.
    assert!(govdata::store::staging::beat(&db, 1, 5).await.is_ok());
    db.close().await.unwrap();
    assert_eq!(answers(url).await, before, "the migrated store answers as before");
});

// Migration 12: a store from before it (voter stats without `vp_from_float`, the covering index
// without it) gets the column filled from the votes, by publication's own recomputation, and the
// index rebuilt with it; the ranking, the brief's top voters and a profile answer exactly as a
// store built after it does, flags included.
on_both_backends!(voter_stats_gain_the_float_flag, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
    let answers = |url: String| async move {
        let app = spawn_app_on(url).await;
        let (_, ranking) = app.get_json("/v2/daos/uniswap/voters?limit=50").await;
        let (_, brief) = app.get_json("/v1/daos/uniswap/brief").await;
        let (_, profile) = app.get_json("/v2/voters/gauntletgov.eth").await;
        (ranking["data"].clone(), brief["data"]["topVoters"].clone(), profile["data"].clone())
    };
    let before = answers(url.clone()).await;
    // The sample's votes are Snapshot's: every power is flagged. The column's default is false, so
    // an upgrade that did not recompute the stats would answer differently.
    let ranked = before.0["items"].as_array().unwrap();
    assert_eq!(ranked.len(), 50);
    assert!(ranked.iter().all(|r| r["votingPowerFromFloat"] == true), "{:#}", before.0);
    assert!(before.1.as_array().unwrap().iter().all(|r| r["votingPowerFromFloat"] == true), "{:#}", before.1);
    assert!(before.2["daos"].as_array().unwrap().iter().any(|d| d["votingPowerFromFloat"] == true), "{:#}", before.2);

    let downgrade = [
        r#"DROP INDEX "ix_voter_stats_rank_covering""#,
        "ALTER TABLE voter_dao_stats DROP COLUMN vp_from_float",
        r#"CREATE INDEX "ix_voter_stats_rank_covering" ON "voter_dao_stats"
           ("dao_id", "vp_sort" DESC, "voter", "voting_power", "votes_cast", "first_vote_ms", "last_vote_ms", "id")"#,
        "DELETE FROM seaql_migrations WHERE version = 'm0012_voter_stats_float'",
    ];
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    let index_sql = match backend {
        Backend::Sqlite => "SELECT sql AS def FROM sqlite_master WHERE name = 'ix_voter_stats_rank_covering'",
        Backend::Postgres | Backend::Replica => {
            "SELECT indexdef AS def FROM pg_indexes WHERE indexname = 'ix_voter_stats_rank_covering'"
        }
    };
    let index = |db: sea_orm::DatabaseConnection| async move {
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), index_sql))
            .await
            .unwrap()
            .expect("the covering index");
        row.try_get::<String>("", "def").unwrap()
    };
    assert!(!index(db.clone()).await.contains("vp_from_float"), "the store is as it was before migration 12");
    db.close().await.unwrap();

    let db = store::connect(&url).await.unwrap();
    assert!(index(db.clone()).await.contains("vp_from_float"), "the covering index holds the flag");
    db.close().await.unwrap();
    assert_eq!(answers(url).await, before, "the migrated store answers as before, flags included");
});

// Migration 35: a SQLite store from before it (time indexes keyed with the id, the proposal-wide
// time index holding every vote) gets them keyed without the id, which SQLite ends every entry
// with, and the proposal-wide one partial; the votes by time and the voters' histories answer as
// before. PostgreSQL's indexes are left as they are.
on_both_backends!(time_indexes_drop_the_repeated_id, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    govdata::sample::import_if_empty(&db).await.unwrap();
    let answers = |url: String| async move {
        let app = spawn_app_on(url).await;
        let (_, proposals) = app.get_json("/v2/proposals?daoId=uniswap&limit=100").await;
        let mut seen = Vec::new();
        let voted = proposals["data"]["items"].as_array().unwrap().iter().filter(|p| p["votes"]["ingested"] != "0");
        for p in voted.take(3) {
            let key = p["proposalKey"].as_str().unwrap();
            let (status, page) = app.get_json(&format!("/v2/proposals/{key}/votes?sort=time&limit=5")).await;
            assert_eq!(status, 200, "{page}");
            let voter = page["data"]["items"][0]["voterIdentity"].as_str().unwrap().to_owned();
            let next = match page["meta"]["page"]["nextCursor"].as_str() {
                Some(c) => app.get_json(&format!("/v2/proposals/{key}/votes?sort=time&limit=5&cursor={c}")).await.1,
                None => serde_json::Value::Null,
            };
            let (_, chosen) = app.get_json(&format!("/v2/proposals/{key}/votes?sort=time&choice=1&limit=40")).await;
            let (_, history) = app.get_json(&format!("/v2/voters/{voter}/votes?limit=20")).await;
            let (_, in_dao) = app.get_json(&format!("/v2/voters/{voter}/votes?daoId=uniswap&limit=20")).await;
            seen.extend([page["data"].clone(), next["data"].clone(), chosen["data"].clone()]);
            seen.extend([history["data"].clone(), in_dao["data"].clone()]);
        }
        assert_eq!(seen.len(), 15, "three proposals with votes");
        seen
    };
    let before = answers(url.clone()).await;
    let definitions = |db: sea_orm::DatabaseConnection| async move {
        let sql = match db.get_database_backend() {
            DbBackend::Sqlite => {
                "SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND tbl_name = 'votes' ORDER BY name"
            }
            _ => {
                "SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'votes' ORDER BY indexname"
            }
        };
        let rows = db.query_all_raw(sea_orm::Statement::from_string(db.get_database_backend(), sql)).await.unwrap();
        rows.iter()
            .map(|r| (r.try_get::<String>("", "name").unwrap(), r.try_get::<String>("", "def").unwrap()))
            .collect::<Vec<_>>()
    };
    let migrated = definitions(db.clone()).await;
    let time_indexes = ["ix_votes_proposal_choice_time", "ix_votes_proposal_time", "ix_votes_voter_dao_time"];
    let mut downgrade = Vec::new();
    if backend == Backend::Sqlite {
        for (name, def) in &migrated {
            if time_indexes.contains(&name.as_str()) {
                assert!(!def.contains("\"id\""), "{def}");
            }
        }
        downgrade.extend([
            "DROP INDEX ix_votes_proposal_time",
            "DROP INDEX ix_votes_proposal_choice_time",
            "DROP INDEX ix_votes_voter_dao_time",
            "CREATE INDEX ix_votes_proposal_time ON votes (proposal_id, created_ms DESC, id DESC)",
            "CREATE INDEX ix_votes_proposal_choice_time ON votes (proposal_id, choice, created_ms DESC, id DESC)",
            "CREATE INDEX ix_votes_voter_dao_time ON votes (voter, dao_id, created_ms DESC, id DESC)",
        ]);
    }
    downgrade.push("DELETE FROM seaql_migrations WHERE version = 'm0035_sqlite_time_orders'");
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    if backend == Backend::Sqlite {
        assert_ne!(definitions(db.clone()).await, migrated, "the store is as it was before migration 35");
    }
    db.close().await.unwrap();

    let db = store::connect(&url).await.unwrap();
    let upgraded = definitions(db.clone()).await;
    db.close().await.unwrap();
    assert_eq!(upgraded, migrated, "the upgraded store has the indexes a new store has");
    if backend == Backend::Sqlite {
        let partial = upgraded.iter().find(|(name, _)| name == "ix_votes_proposal_time").unwrap();
        assert!(
            partial.1.ends_with(&format!("WHERE {}", govdata::store::vote_arms::sqlite_others_sql())),
            "{partial:?}"
        );
    }
    assert_eq!(answers(url).await, before, "the upgraded store answers as before");
});

// Migration 33: a store from before it (webhook subscriptions without a format) gets the column,
// each subscription in `standard_webhooks`, what it was sent in all along.
on_both_backends!(webhook_subscriptions_gain_a_format, |backend: Backend| async move {
    use govdata::contract::webhooks::{WebhookFormat, WebhookId};
    use govdata::store::webhooks as subscriptions;
    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    let (token, _) = store::tokens::create(&db, "p", &["v2:paid:standard"], None, 0).await.unwrap();
    let target = subscriptions::Target { url: "http://127.0.0.1:9/x".into(), ..Default::default() };
    let made = subscriptions::create(&db, token.id, &target, 0).await.unwrap();
    let downgrade = [
        "ALTER TABLE webhook_subscriptions DROP COLUMN format",
        "DELETE FROM seaql_migrations WHERE version = 'm0033_subscription_formats'",
    ];
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    db.close().await.unwrap();

    let db = store::connect(&url).await.unwrap();
    let id = WebhookId::parse(&made.public_id).unwrap();
    let upgraded = subscriptions::get(&db, None, &id).await.unwrap().expect("kept");
    assert_eq!(subscriptions::format_of(&upgraded), Ok(WebhookFormat::StandardWebhooks));
    let target = subscriptions::Target { format: Some(WebhookFormat::Discord), ..target };
    let discord = subscriptions::create(&db, token.id, &target, 0).await.unwrap();
    assert_eq!(subscriptions::format_of(&discord), Ok(WebhookFormat::Discord));
    db.close().await.unwrap();
});

// Migration 32: a store from before it (each webhook's DAOs and kinds as comma-separated text,
// entries without their subjects, subscriptions with entries still to enqueue) gets its filters
// as rows, in the order they were written, the entries' proposals and voters from their bodies,
// and each subscription then receives exactly the entries its filters want, once, before it
// follows the shared fan-out.
on_both_backends!(comma_separated_webhook_filters_become_rows, |backend: Backend| async move {
    use std::sync::{Arc, Mutex};

    use govdata::contract::{feed::FeedKind, vocabulary::DaoId};
    use govdata::push::queue;
    use govdata::store::{feed, webhooks as subs};

    use crate::fixtures::testgov::{DAO, forum_data, hub_data, options, registry};
    use crate::fixtures::upstreams::{discourse, snapshot_hub};

    let url = fresh_database(backend).await;
    let db = store::connect(&url).await.unwrap();
    let hub_state = Arc::new(Mutex::new(hub_data()));
    let hub = snapshot_hub(hub_state.clone()).await;
    let forum = discourse(Arc::new(Mutex::new(forum_data()))).await;
    let registry = registry(&hub, &forum);
    govdata::ingest::run_once(&db, &registry, &options()).await.expect("run");
    let (token, _) = store::tokens::create(&db, "p", &["v2:paid:standard"], None, 0).await.unwrap();
    let dao = DaoId::parse(DAO).unwrap();
    let written = [
        (
            subs::Filters::new(vec![dao.clone()], vec![FeedKind::VoteCast, FeedKind::ProposalCreated]),
            DAO,
            "vote_cast,proposal_created",
        ),
        (subs::Filters::new(vec![], vec![FeedKind::SignalRaised]), "", "signal_raised"),
        (subs::Filters::default(), "", ""),
    ];
    let mut ids = Vec::new();
    for (filters, _, _) in &written {
        let target =
            subs::Target { url: "http://127.0.0.1:9/x".into(), filters: filters.clone(), ..Default::default() };
        ids.push(subs::create(&db, token.id, &target, 0).await.unwrap().id);
    }

    // Put the store back as it was before migration 32.
    let mut downgrade: Vec<String> = vec![
        "ALTER TABLE webhook_subscriptions ADD COLUMN dao_ids TEXT NOT NULL DEFAULT ''".into(),
        "ALTER TABLE webhook_subscriptions ADD COLUMN kinds TEXT NOT NULL DEFAULT ''".into(),
    ];
    for (id, (_, daos, kinds)) in ids.iter().zip(&written) {
        downgrade
            .push(format!("UPDATE webhook_subscriptions SET dao_ids = '{daos}', kinds = '{kinds}' WHERE id = {id}"));
    }
    downgrade.extend(
        [
            // Nothing enqueued yet: every entry is still to come.
            "UPDATE webhook_subscriptions SET enqueued_through = 0",
            "DROP INDEX ix_webhook_subscriptions_behind",
            "DROP INDEX ix_webhook_subscriptions_paused",
            "DROP INDEX ix_webhook_subscriptions_replaying",
            "DROP INDEX ix_feed_proposal_seq",
            "ALTER TABLE webhook_subscriptions DROP COLUMN follows_fanout",
            "ALTER TABLE feed_entries DROP COLUMN proposal_key",
            "DROP TABLE webhook_filters",
            "DROP TABLE webhook_routes",
            "DROP TABLE webhook_fanout",
            "DROP TABLE feed_entry_voters",
            "DELETE FROM seaql_migrations WHERE version = 'm0032_subscription_filters'",
        ]
        .map(str::to_owned),
    );
    db.execute_unprepared(&downgrade.join(";\n")).await.expect("downgrade");
    db.close().await.unwrap();

    // The next start migrates it.
    let db = store::connect(&url).await.unwrap();
    let shown = subs::shown(&db, subs::list(&db, None).await.unwrap()).await.unwrap();
    assert_eq!(shown.len(), 3);
    for (s, (filters, _, _)) in shown.iter().zip(&written) {
        assert_eq!(&s.filters, filters, "the filters as they were written, in order");
        assert_eq!(s.enqueued_through, 0);
        assert!(!s.subscription.follows_fanout);
    }
    let old = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT dao_ids FROM webhook_subscriptions",
        ))
        .await;
    assert!(old.is_err(), "the text columns are gone");
    // Each entry has its subjects, as its body says.
    let newest = feed::newest(&db).await.unwrap();
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let page = feed::after(&db, &feed::FeedFilter::default(), after, 500).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        all.extend(page);
    }
    assert_eq!(all.last().map(|e| e.seq), Some(newest));
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    for entry in &all {
        let expected = entry.body.subjects();
        assert_eq!(entry.subjects.proposal_key, expected.proposal_key, "{}", entry.seq);
        assert_eq!(sorted(entry.subjects.voters.clone()), sorted(expected.voters.clone()), "{}", entry.seq);
    }
    assert!(all.iter().any(|e| !e.subjects.voters.is_empty()), "the notable vote's voter");
    assert!(all.iter().any(|e| e.subjects.proposal_key.is_some()));

    // Each catches up the entries its filters want, once, then follows the fan-out.
    let enqueue_all = || async { while queue::enqueue(&db, 0).await.unwrap().more {} };
    enqueue_all().await;
    let delivered = |id: i64| {
        let db = db.clone();
        async move {
            let stmt = sea_orm::Statement::from_sql_and_values(
                db.get_database_backend(),
                "SELECT seq FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY seq",
                [id.into()],
            );
            db.query_all_raw(stmt)
                .await
                .unwrap()
                .iter()
                .map(|r| r.try_get::<i64>("", "seq").unwrap())
                .collect::<Vec<_>>()
        }
    };
    let wanted = |daos: &[&str], kinds: &[&str]| -> Vec<i64> {
        all.iter()
            .filter(|e| daos.is_empty() || daos.contains(&e.dao_id.as_str()))
            .filter(|e| kinds.is_empty() || kinds.contains(&e.kind.as_str()))
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(delivered(ids[0]).await, wanted(&[DAO], &["vote_cast", "proposal_created"]));
    assert_eq!(delivered(ids[1]).await, wanted(&[], &["signal_raised"]));
    assert_eq!(delivered(ids[2]).await, wanted(&[], &[]));
    let shown = subs::shown(&db, subs::list(&db, None).await.unwrap()).await.unwrap();
    assert!(shown.iter().all(|s| s.subscription.follows_fanout && s.enqueued_through == newest));

    // The next publication goes through the shared fan-out: its entries once to each that
    // wants them.
    {
        let mut hub = hub_state.lock().unwrap();
        hub.proposals[0].scores_total = "999999";
    }
    govdata::ingest::run_once(&db, &registry, &options()).await.expect("run");
    enqueue_all().await;
    let newer = feed::after(&db, &feed::FeedFilter::default(), newest, 500).await.unwrap();
    assert!(!newer.is_empty());
    let everything = delivered(ids[2]).await;
    assert_eq!(everything.len(), all.len() + newer.len(), "each entry once");
    assert!(newer.iter().all(|e| everything.contains(&e.seq)));
});
