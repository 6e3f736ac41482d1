//! Import tests on a fresh SQLite file and on PostgreSQL (`GOVDATA_TEST_PG_URL`, default the local server)
//! (a base URL such as `postgres://postgres@127.0.0.1:5432`, optionally with a query part such
//! as `?host=/var/run/postgresql`). The PostgreSQL test creates and drops its own database.
use std::time::Instant;

use sea_orm::{ColumnTrait, ConnectionTrait, Database, DatabaseConnection, EntityTrait, QueryFilter, Statement};

use super::*;
use crate::contract::decimal;
use crate::contract::vocabulary::RunTrigger;
use crate::store::entities::{dao_summary, delegate, vote, voter, voter_dao_stat};
use crate::store::{self, sort_keys};

async fn sqlite() -> (tempfile::TempDir, DatabaseConnection) {
    let dir = tempfile::tempdir().unwrap();
    let db = store::connect(&format!("sqlite://{}/govdata.db", dir.path().display())).await.unwrap();
    (dir, db)
}

async fn scalar(db: &DatabaseConnection, sql: &str) -> i64 {
    let row = db.query_one_raw(Statement::from_string(db.get_database_backend(), sql)).await.unwrap().unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

/// 2025-03-29 and 2025-05-02, 00:00 UTC.
const MAR_29_2025: i64 = 1_743_206_400_000;
const MAY_02_2025: i64 = 1_746_144_000_000;
/// 2026-03-26, the newest date in the sample (an Arbitrum proposal start).
const SAMPLE_AS_OF: i64 = 1_774_483_200_000;

/// Imports the bundled sample into an empty store and checks it thoroughly; returns the time the
/// import took.
async fn import_and_check_bundled(db: &DatabaseConnection) -> std::time::Duration {
    let started = Instant::now();
    let report = import(db, &SampleFiles::bundled(), RunTrigger::Import).await.unwrap();
    let elapsed = started.elapsed();

    assert!(report.skipped.is_empty(), "{report}");
    assert!(report.changed);
    assert_eq!(report.revision_id, Some(1));
    assert_eq!(report.proposals.inserted, 131);
    assert_eq!(report.votes.inserted, 19_970);
    assert_eq!(report.delegates.inserted, 500);
    assert_eq!(report.voters.inserted, 6_488);

    assert_eq!(scalar(db, "SELECT COUNT(*) FROM daos").await, 8);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM proposals").await, 131);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM votes").await, 19_970);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM delegates").await, 500);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM voter_dao_stats").await, 6_782);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM data_sources").await, 6 + 5);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM dao_summaries").await, 8);
    assert_eq!(scalar(db, "SELECT CAST(SUM(ingested_vote_count) AS BIGINT) FROM proposals").await, 19_970);

    let arbitrum = dao_summary::Entity::find_by_id("arbitrum").one(db).await.unwrap().unwrap();
    assert_eq!(
        arbitrum,
        dao_summary::Model {
            dao_id: "arbitrum".into(),
            proposals: 43,
            active_proposals: 2,
            upstream_votes: 110_682,
            ingested_votes: 16_969,
            voters: 5_241,
            delegates: 100,
            forum_topics: 0,
            data_as_of_ms: Some(SAMPLE_AS_OF),
            revision_id: 1,
        }
    );
    let revision = publish::current_revision(db).await.unwrap().unwrap();
    assert_eq!((revision.id, revision.data_as_of_ms, revision.run_id), (1, SAMPLE_AS_OF, Some(report.run_id)));

    check_exact_values(db).await;
    check_voter(db).await;
    elapsed
}

async fn check_exact_values(db: &DatabaseConnection) {
    let tiny = vote::Entity::find().filter(vote::Column::VotingPower.eq("2.11e-16")).all(db).await.unwrap();
    assert_eq!(tiny.len(), 1);
    assert_eq!(tiny[0].voter.lower(), "0x772f61bb54dbd1c9cde9f8ba11b02268235a2c25");
    assert_eq!(tiny[0].vp_sort, sort_keys::sort_key(&decimal::parse("2.11e-16").unwrap()).unwrap());
    assert!(tiny[0].vp_from_float);

    let whale = delegate::Entity::find()
        .filter(delegate::Column::Address.eq("0x11da8ae234edd16b135edc47e5d9becc8717ecdc"))
        .one(db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((whale.dao_id.as_str(), whale.decimals), ("uniswap", 18));
    assert_eq!(whale.voting_power_raw, "15000002250692637600296876");
    assert_eq!(whale.voting_power, "15000002.250692637600296876");
    assert_eq!(whale.as_of_ms, SAMPLE_AS_OF);
}

/// Hand-checked in the CSV: three Uniswap votes, the last two both on 2025-05-02 with powers
/// 26.890954924112947 and 9.985868809120003; the larger wins the tie.
async fn check_voter(db: &DatabaseConnection) {
    let address = "0x2c65456c62f849f8b0e5f354b0102e0e1fc07fc0";
    let s = voter_dao_stat::Entity::find()
        .filter(voter_dao_stat::Column::DaoId.eq("uniswap"))
        .filter(voter_dao_stat::Column::Voter.eq(address))
        .one(db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.votes_cast, 3);
    assert_eq!(s.voting_power, "26.890954924112947");
    assert_eq!(s.vp_sort, sort_keys::sort_key(&decimal::parse("26.890954924112947").unwrap()).unwrap());
    assert_eq!((s.first_vote_ms, s.last_vote_ms), (MAR_29_2025, MAY_02_2025));

    // A delegate who also votes: EIP-55 display form and the Tally names.
    let gauntlet =
        voter::Entity::find_by_id("0x683a4f9915d6216f73d6df50151725036bd26c02").one(db).await.unwrap().unwrap();
    assert_eq!(gauntlet.address_display, "0x683a4F9915D6216f73d6Df50151725036bD26C02");
    assert_eq!((gauntlet.ens.as_deref(), gauntlet.name.as_deref()), (Some("gauntletgov.eth"), Some("Gauntlet")));
}

async fn check_second_import_is_a_no_op(db: &DatabaseConnection) {
    let again = import(db, &SampleFiles::bundled(), RunTrigger::Manual).await.unwrap();
    assert!(!again.changed, "{again}");
    assert_eq!(again.revision_id, None);
    assert_eq!(again.rows_written(), 0);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM data_revisions").await, 1);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM votes").await, 19_970);
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM ingestion_runs WHERE status = 'succeeded'").await, 2);
    assert!(again.to_string().contains("no changes, nothing published"));
}

#[tokio::test]
async fn bundled_sample_on_sqlite() {
    let (_dir, db) = sqlite().await;
    let elapsed = import_and_check_bundled(&db).await;
    eprintln!("bundled sample import on SQLite: {elapsed:?}");
    check_second_import_is_a_no_op(&db).await;
}

#[tokio::test]
async fn bundled_sample_on_postgres() {
    // The same server the API tests use; the run fails, never skips, when it is unreachable.
    let base = std::env::var("GOVDATA_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned());
    // A query part (e.g. `?host=/var/run/postgresql` for the Unix socket) applies to both URLs.
    let (base, query) = base.split_once('?').map_or((base.as_str(), String::new()), |(b, q)| (b, format!("?{q}")));
    let base = base.trim_end_matches('/');
    // `govdata_test_<unix seconds>_...`: the API tests' cleanup reads the third part as the
    // creation time and drops databases older than an hour.
    let name = format!("govdata_test_{}_{}_sample", publish::now_ms() / 1000, std::process::id());
    let admin = Database::connect(format!("{base}/postgres{query}")).await.unwrap();
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();

    let db = store::connect(&format!("{base}/{name}{query}")).await.unwrap();
    // Run the checks in a task so a failed assertion still reaches the DROP below.
    let outcome = tokio::spawn(async move {
        let elapsed = import_and_check_bundled(&db).await;
        eprintln!("bundled sample import on PostgreSQL: {elapsed:?}");
        check_second_import_is_a_no_op(&db).await;
        db.close().await.unwrap();
    })
    .await;

    admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic.into_panic());
    }
}

const PROPOSALS_HEADER: &str =
    "symbol,space_id,proposal_id,title,type,state,start,end,votes,scores_total,quorum,top_choice_pct,author\n";
const ONE_PROPOSAL: &str = "UNI,uniswapgovernance.eth,0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf,\"Strategic Renewal of Gnosis, Linea, and Mantle Deployments\",basic,closed,2025-12-02,2025-12-07,449,13713881.867694754,10000000,79.9,0xa6e8772af29b29B9202a073f8E36f447689BEef6\n";
const VOTES_HEADER: &str = "symbol,proposal_id,voter,voting_power,choice,created\n";
const P: &str = "0x1086839122667be04c0eec25ba224fe4ac1b990383ddfe05b80ce201a06b4abf";

fn write_dir(proposals: &str, votes: &str, delegates: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(PROPOSALS_FILE), proposals).unwrap();
    std::fs::write(dir.path().join(VOTES_FILE), votes).unwrap();
    std::fs::write(dir.path().join(DELEGATES_FILE), delegates).unwrap();
    dir
}

#[tokio::test]
async fn malformed_rows_are_reported_and_skipped() {
    let votes = [
        format!("UNI,{P},0x683a4F9915D6216f73d6Df50151725036bD26C02,2755022.0714428956,3,2025-12-03"),
        format!("UNI,{P},0xECC2a9240268BC7a26386ecB49E1Befca2706AC9,abc,1,2025-12-03"),
        format!("UNI,{P},0x3FB1977194707262,2504102.9694649545,1,2025-12-05"),
        format!("UNI,{P},0xB933AEe47C438f22DE0747D57fc239FE37878Dd1,1,1,2025-12-03,extra"),
        "UNI,0xfeed,0xB933AEe47C438f22DE0747D57fc239FE37878Dd1,1,1,2025-12-03".to_owned(),
        format!("UNI,{P},0xB933AEe47C438f22DE0747D57fc239FE37878Dd1,5.7e-05,\"{{'2': 1}}\",2025-12-03"),
    ];
    let dir = write_dir(
        &format!("{PROPOSALS_HEADER}{ONE_PROPOSAL}"),
        &format!("{VOTES_HEADER}{}\n", votes.join("\n")),
        "symbol,address,ens,name,votes_count,delegators_count\nAAVE,0x4da27a545c0c5B758a6BA100e3a049001de870f5,,,12.5,1\n",
    );
    let (_db_dir, db) = sqlite().await;
    let report = import(&db, &SampleFiles::from_dir(dir.path()).unwrap(), RunTrigger::Manual).await.unwrap();

    let lines: Vec<String> = report.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "snapshot_votes.csv:3: voting_power: `abc` is not a decimal number",
            "snapshot_votes.csv:4: voter: `0x3FB1977194707262` is not a 0x address (20-byte EVM or 32-byte Starknet hex)",
            "snapshot_votes.csv:5: expected 6 columns, found 7",
            "snapshot_votes.csv:6: unknown proposal `0xfeed` (not a valid row of snapshot_proposals.csv)",
            "tally_delegates.csv:2: votes_count `12.5` is not a non-negative integer",
        ]
    );
    let display = report.to_string();
    assert!(display.contains("snapshot_votes.csv:3: voting_power"), "{display}");

    let stored: Vec<(String, String, String)> = vote::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|v| (v.voter.lower(), v.voting_power, v.choice))
        .collect();
    assert_eq!(
        stored,
        [
            ("0x683a4f9915d6216f73d6df50151725036bd26c02".into(), "2755022.0714428956".into(), "3".into()),
            ("0xb933aee47c438f22de0747d57fc239fe37878dd1".into(), "5.7e-05".into(), "{'2': 1}".into()),
        ]
    );
    assert_eq!(scalar(&db, "SELECT rows_skipped FROM ingestion_runs").await, 5);
    assert_eq!(scalar(&db, "SELECT ingested_vote_count FROM proposals").await, 2);
}

#[tokio::test]
async fn a_foreign_header_fails_the_import_and_the_run() {
    let dir = write_dir(&format!("{PROPOSALS_HEADER}{ONE_PROPOSAL}"), "a,b\n1,2\n", "");
    let (_db_dir, db) = sqlite().await;
    let error = import(&db, &SampleFiles::from_dir(dir.path()).unwrap(), RunTrigger::Manual).await.unwrap_err();
    assert!(error.to_string().contains("snapshot_votes.csv: header is `a,b`"), "{error:#}");
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM ingestion_runs WHERE status = 'failed'").await, 1);
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM proposals").await, 0);
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(PROPOSALS_FILE), PROPOSALS_HEADER).unwrap();
    let error = SampleFiles::from_dir(dir.path()).err().unwrap();
    assert!(format!("{error:#}").contains("snapshot_votes.csv"), "{error:#}");
}

#[tokio::test]
async fn import_if_empty_imports_once() {
    let (_dir, db) = sqlite().await;
    let first = import_if_empty(&db).await.unwrap().unwrap();
    assert_eq!(first.revision_id, Some(1));
    assert!(import_if_empty(&db).await.unwrap().is_none());
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM ingestion_runs").await, 1);
}
