//! The `govdata` command as an operator runs it.
use std::process::Command;

use crate::helpers::{Backend, fresh_database};

fn govdata(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_govdata"))
        .args(args)
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run govdata")
}

#[tokio::test]
async fn tokens_are_created_once_listed_and_revoked() {
    let url = fresh_database(Backend::Sqlite).await;
    let out = govdata(&url, &["tokens", "create", "--name", "acme", "--scopes", "v1:paid:standard,v2:paid:*"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(token.starts_with("gdp_") && token.len() > 40, "{token}");

    let db = govdata::store::connect(&url).await.unwrap();
    let rows = govdata::store::tokens::list(&db).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].scopes, "v1:paid:standard,v2:paid:*");
    assert_ne!(rows[0].token_hash, token, "stored hashed");
    assert!(!rows[0].token_hash.contains(&token[4..]));
    assert!(govdata::store::tokens::find_live(&db, &token).await.unwrap().is_some());

    let list = String::from_utf8(govdata(&url, &["tokens", "list"]).stdout).unwrap();
    assert!(list.contains("acme") && list.contains("active") && !list.contains(&token));

    assert!(govdata(&url, &["tokens", "revoke", &rows[0].id.to_string()]).status.success());
    assert!(govdata::store::tokens::find_live(&db, &token).await.unwrap().is_none(), "revoked on the next lookup");
    assert!(String::from_utf8(govdata(&url, &["tokens", "list"]).stdout).unwrap().contains("revoked"));
    assert!(!govdata(&url, &["tokens", "revoke", "999"]).status.success());

    let bad = govdata(&url, &["tokens", "create", "--name", "x", "--scopes", "v1:paid:gold"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown scope `v1:paid:gold`"));
}

#[tokio::test]
async fn import_reports_malformed_rows_with_file_and_line() {
    let url = fresh_database(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample");
    for f in ["snapshot_proposals.csv", "tally_delegates.csv"] {
        std::fs::copy(sample.join(f), dir.path().join(f)).unwrap();
    }
    let votes = std::fs::read_to_string(sample.join("snapshot_votes.csv")).unwrap();
    let mut lines: Vec<String> = votes.lines().take(4).map(str::to_owned).collect();
    lines[2] = lines[2].replacen(",2505022.166713026,", ",abc,", 1);
    std::fs::write(dir.path().join("snapshot_votes.csv"), lines.join("\n") + "\n").unwrap();
    let out = govdata(&url, &["import", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("snapshot_votes.csv:3"), "{report}");
    let db = govdata::store::connect(&url).await.unwrap();
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(
        govdata::store::entities::vote::Entity::find().count(&db).await.unwrap(),
        2,
        "only the bad row is skipped"
    );
}

/// Boolean settings read as operators write them: `GOVDATA_NO_SAMPLE=1` (or `yes`) starts an
/// empty server; a value that is no boolean is refused by name.
#[tokio::test]
async fn boolean_settings_accept_1_yes_and_true() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    for value in ["1", "yes", "true", "on"] {
        let url = fresh_database(Backend::Sqlite).await;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_govdata"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .env("DATABASE_URL", &url)
            .env("GOVDATA_NO_SAMPLE", value)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            assert!(!line.contains("loaded the bundled sample"), "{value}: {line}");
            if line.contains("listening on") {
                break;
            }
        }
        let db = govdata::store::connect(&url).await.unwrap();
        use sea_orm::{EntityTrait, PaginatorTrait};
        assert_eq!(govdata::store::entities::proposal::Entity::find().count(&db).await.unwrap(), 0, "{value}");
        child.kill().await.unwrap();
    }
    let url = fresh_database(Backend::Sqlite).await;
    let out = Command::new(env!("CARGO_BIN_EXE_govdata"))
        .env("DATABASE_URL", &url)
        .env("GOVDATA_NO_SAMPLE", "maybe")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("maybe"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `votes`' indexes as PostgreSQL's catalog defines them.
async fn vote_index_defs(url: &str) -> Vec<String> {
    use sea_orm::ConnectionTrait;
    let db = govdata::store::connect(url).await.unwrap();
    let sql = "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'votes' ORDER BY indexname";
    let rows = db.query_all_raw(sea_orm::Statement::from_string(db.get_database_backend(), sql)).await.unwrap();
    rows.iter().map(|r| r.try_get::<String>("", "indexdef").unwrap()).collect()
}

// A bulk load with `--defer-indexes` ends with every index of `votes` exactly as the migrations
// made it, serves what a plain load serves, and refuses a table that already holds votes.
#[tokio::test]
async fn synth_defers_vote_indexes_on_postgres() {
    if !crate::helpers::require(Backend::Postgres) {
        return;
    }
    let plain = fresh_database(Backend::Postgres).await;
    let bulk = fresh_database(Backend::Postgres).await;
    let args = ["synth", "--votes", "3000", "--voters", "800", "--proposals", "6"];
    let out = govdata(&plain, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let migrated = vote_index_defs(&plain).await;
    // The natural key, the voter history, the two choice indexes and migration 23's two partial
    // indexes (with their predicate, and the full choice-time index's fillfactor).
    assert_eq!(migrated.len(), 6, "{migrated:#?}");
    assert_eq!(migrated.iter().filter(|d| d.contains(" WHERE ")).count(), 2, "{migrated:#?}");
    assert!(migrated.iter().any(|d| d.contains("fillfactor='100'")), "{migrated:#?}");
    let out = govdata(&bulk, &[&args[..], &["--defer-indexes"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("deferred indexes built"));
    assert_eq!(vote_index_defs(&bulk).await, migrated);

    // The same votes, in the same power order, on both stores.
    let (a, b) = (crate::helpers::spawn_app_on(plain).await, crate::helpers::spawn_app_on(bulk.clone()).await);
    let (_, proposals) = a.get_json("/v2/proposals?daoId=synthetic&limit=1").await;
    let key = proposals["data"]["items"][0]["proposalKey"].as_str().unwrap_or_else(|| panic!("{proposals}")).to_owned();
    let page = format!("/v2/proposals/{key}/votes?limit=50");
    let ((sa, va), (sb, vb)) = (a.get_json(&page).await, b.get_json(&page).await);
    assert_eq!((sa, sb), (200, 200), "{va} {vb}");
    assert_eq!(va["data"]["items"].as_array().unwrap().len(), 50, "{va}");
    assert_eq!(va["data"]["items"], vb["data"]["items"]);

    let again = govdata(&bulk, &["synth", "--votes", "10", "--voters", "10", "--dao", "other", "--defer-indexes"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("needs an empty votes table"), "{again:?}");
    assert_eq!(vote_index_defs(&bulk).await, migrated, "a refused load drops nothing");
}
