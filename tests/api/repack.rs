//! `govdata repack`: `votes`' B-trees, loosened by inserts, rebuilt packed on PostgreSQL while the
//! store keeps serving the same answers (issue 31: at most 350 bytes per vote).
use std::process::Command;
use std::time::Duration;

use govdata::store::{self, repack};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement};

use crate::helpers::{Backend, eventually_within, fresh_database, require, spawn_app_with};

fn govdata(url: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(args)
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run govdata");
    assert!(out.status.success(), "govdata {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// (index, bytes) of every index of `votes`.
async fn index_sizes(db: &DatabaseConnection) -> Vec<(String, i64)> {
    let sql = "SELECT c.relname::text AS name, pg_relation_size(c.oid) AS bytes FROM pg_index x
               JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
               WHERE t.relname = 'votes' ORDER BY 1";
    let rows = db.query_all_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap();
    rows.iter().map(|r| (r.try_get("", "name").unwrap(), r.try_get("", "bytes").unwrap())).collect()
}

/// (index, bytes) recorded as packed.
async fn recorded(db: &DatabaseConnection) -> Vec<(String, i64)> {
    let sql = "SELECT index_name, bytes FROM index_packing ORDER BY 1";
    let rows = db.query_all_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap();
    rows.iter().map(|r| (r.try_get("", "index_name").unwrap(), r.try_get("", "bytes").unwrap())).collect()
}

/// A new PostgreSQL store loaded by `synth --defer-indexes` (its indexes built by sorting), the
/// store's connection, and the sizes of `votes`' indexes.
async fn bulk_loaded() -> (String, DatabaseConnection, Vec<(String, i64)>) {
    let url = fresh_database(Backend::Postgres).await;
    govdata(&url, &["synth", "--votes", "3000", "--voters", "800", "--proposals", "6", "--defer-indexes"]);
    let db = store::connect(&url).await.unwrap();
    let sizes = index_sizes(&db).await;
    (url, db, sizes)
}

fn survey(outcome: &repack::Outcome) -> &[repack::IndexState] {
    match outcome {
        repack::Outcome::Done { surveyed, .. } => surveyed,
        repack::Outcome::Busy => panic!("no other repack runs"),
    }
}

// A store grown by inserts (`synth` without `--defer-indexes`) holds loose B-trees: `repack --all`
// rebuilds each, records its packed size, and the store answers exactly as before.
#[tokio::test]
async fn repack_packs_the_indexes_inserts_loosened() {
    if !require(Backend::Postgres) {
        return;
    }
    let url = fresh_database(Backend::Postgres).await;
    govdata(&url, &["synth", "--votes", "40000", "--voters", "8000", "--proposals", "8"]);
    // No response cache: the pages after the rebuild are read from the store again.
    let app = spawn_app_with(url.clone(), |a| a.response_cache_mb = 0).await;
    let (_, proposals) = app.get_json("/v2/proposals?daoId=synthetic&limit=1").await;
    let key = proposals["data"]["items"][0]["proposalKey"].as_str().unwrap_or_else(|| panic!("{proposals}")).to_owned();
    let pages = [
        format!("/v2/proposals/{key}/votes?limit=100"),
        format!("/v2/proposals/{key}/votes?limit=100&sort=time"),
        format!("/v2/proposals/{key}/votes?limit=100&choice=2"),
    ];
    let mut before = Vec::new();
    for page in &pages {
        let (status, body) = app.get_json(page).await;
        assert_eq!(status, 200, "{page}: {body}");
        assert_eq!(body["data"]["items"].as_array().unwrap().len(), 100, "{page}: {body}");
        before.push(body["data"].clone());
    }
    let db = Database::connect(&url).await.unwrap();
    let loose = index_sizes(&db).await;
    assert_eq!(loose.len(), 6, "{loose:?}");

    // A check rebuilds nothing and says why: these indexes are small.
    let out = String::from_utf8(govdata(&url, &["repack", "--check"]).stdout).unwrap();
    for (name, _) in &loose {
        assert!(out.contains(name.as_str()), "{name} missing from\n{out}");
    }
    assert!(out.contains("smaller than the repack threshold") && out.contains("nothing rebuilt"), "{out}");
    assert_eq!(index_sizes(&db).await, loose);
    assert!(recorded(&db).await.is_empty());

    let out = String::from_utf8(govdata(&url, &["repack", "--all"]).stdout).unwrap();
    assert!(out.contains("6 indexes rebuilt"), "{out}");
    let packed = index_sizes(&db).await;
    assert_eq!(packed.iter().map(|(n, _)| n).collect::<Vec<_>>(), loose.iter().map(|(n, _)| n).collect::<Vec<_>>());
    assert_eq!(recorded(&db).await, packed, "each rebuilt index's size is its packed record");
    // The voter history and the natural key take their votes in no key order: packing them
    // saves a fifth or more.
    for name in ["ix_votes_voter_dao_time", "natural"] {
        let size = |sizes: &[(String, i64)]| {
            sizes.iter().find(|(n, _)| n.contains(name)).unwrap_or_else(|| panic!("{name} in {sizes:?}")).1
        };
        let (was, now) = (size(&loose), size(&packed));
        assert!(now * 5 <= was * 4, "{name}: {was} bytes loose, {now} packed");
    }
    let total = |sizes: &[(String, i64)]| sizes.iter().map(|(_, b)| b).sum::<i64>();
    assert!(total(&packed) < total(&loose), "{loose:?} -> {packed:?}");

    // Packed now, and measured so: nothing is over its packed size.
    let store = store::connect(&url).await.unwrap();
    let outcome = repack::run(&store, repack::Scope::Survey).await.unwrap();
    for state in survey(&outcome).iter().filter(|s| s.entries > 0.0) {
        let excess = state.excess().unwrap_or_else(|| panic!("{state:?} has a record"));
        assert!(excess.abs() < 0.02, "{state:?}");
    }

    for (page, was) in pages.iter().zip(&before) {
        let (status, body) = app.get_json(page).await;
        assert_eq!(status, 200, "{page}: {body}");
        assert_eq!(&body["data"], was, "{page} after the rebuild");
    }
}

// A bulk load's sorted builds are recorded as packed; a rebuild that was cut off leaves an invalid
// copy that the next run drops; and one run at a time holds the store's repack lock.
#[tokio::test]
async fn bulk_loads_are_recorded_leftovers_dropped_and_runs_take_turns() {
    if !require(Backend::Postgres) {
        return;
    }
    let (url, db, sizes) = bulk_loaded().await;
    assert_eq!(recorded(&db).await, sizes, "the deferred builds are recorded packed");

    // What `REINDEX INDEX CONCURRENTLY` leaves when it fails: an invalid `_ccnew` index.
    let failed = db
        .execute_unprepared(r#"CREATE UNIQUE INDEX CONCURRENTLY "ix_votes_voter_dao_time_ccnew" ON votes (dao_id)"#)
        .await;
    assert!(failed.is_err(), "3,000 votes of one DAO are not unique by DAO");
    assert_eq!(index_sizes(&db).await.len(), sizes.len() + 1);

    // Another process is repacking: this one does nothing.
    let holder = Database::connect(&url).await.unwrap();
    let lock = format!("SELECT pg_advisory_lock({})", repack::REPACK_LOCK);
    holder.execute_unprepared(&lock).await.unwrap();
    assert_eq!(repack::run(&db, repack::Scope::Due).await.unwrap(), repack::Outcome::Busy);
    assert_eq!(index_sizes(&db).await.len(), sizes.len() + 1, "a busy run drops nothing");
    holder.close().await.unwrap();

    let outcome = repack::run(&db, repack::Scope::Due).await.unwrap();
    let repack::Outcome::Done { surveyed, repacked, dropped } = &outcome else { panic!("{outcome:?}") };
    assert_eq!(dropped, &["ix_votes_voter_dao_time_ccnew".to_owned()]);
    assert!(repacked.is_empty(), "{outcome}");
    assert_eq!(surveyed.len(), sizes.len(), "{outcome}");
    // Packed, each index that holds entries (migration 23's partial indexes hold none here).
    for state in surveyed.iter().filter(|s| s.entries > 0.0) {
        assert!(state.excess().is_some_and(|e| e.abs() < 0.02), "{state:?}\n{outcome}");
    }
    assert_eq!(index_sizes(&db).await, sizes);
    // The lock is free again.
    assert!(matches!(repack::run(&db, repack::Scope::Survey).await.unwrap(), repack::Outcome::Done { .. }));
}

// `serve` checks the indexes every `--repack-every` (one process at a time) and shows what it found
// in `/metrics`: each index's size, and its excess over its packed size once that is on record.
#[tokio::test]
async fn the_server_checks_its_indexes_on_its_schedule() {
    if !require(Backend::Postgres) {
        return;
    }
    let (url, db, sizes) = bulk_loaded().await;
    let app = spawn_app_with(url, |a| a.repack_every = govdata::config::Period(Some(Duration::from_secs(1)))).await;
    let (name, bytes) = sizes.iter().find(|(n, _)| n == "ix_votes_voter_dao_time").expect("the voter history").clone();
    let size_line = format!("govdata_store_index_bytes{{index=\"{name}\"}} {bytes}");
    let excess_line = format!("govdata_store_index_excess_ratio{{index=\"{name}\"}} ");
    eventually_within(Duration::from_secs(20), "the first index check", || async {
        let text = app.get("/metrics").await.text().await.unwrap();
        text.contains(&size_line) && text.contains(&excess_line)
    })
    .await;
    // Small and packed: nothing was rebuilt.
    assert_eq!(index_sizes(&db).await, sizes);
    assert_eq!(recorded(&db).await, sizes);
}

// SQLite's B-trees stay compact as inserts grow them: there is nothing to repack, and the command
// says so instead of pretending.
#[tokio::test]
async fn repack_is_refused_on_sqlite() {
    let url = fresh_database(Backend::Sqlite).await;
    let out = Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(["repack", "--check"])
        .env("DATABASE_URL", &url)
        .output()
        .expect("run govdata");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("repack is for PostgreSQL"), "{out:?}");
}
