//! Whole-table exports over HTTP (issue 30): `GET /v2/exports`, `GET /v2/exports/{daoId}/{file}`
//! and `GET /v2/export-tables`, on a store of its own per test (the catalogue is written), with an
//! export directory of its own: files as data tools read them (length, strong ETag from the
//! SHA-256, 304, single ranges, `If-Range`, 416, gzip for text), built once per DAO revision,
//! unchanged bytes keeping their ETag across publications, the files a revision no longer needs
//! removed, the disk budget, and one builder per file whatever races for it.
use std::io::Read;
use std::path::Path;

use govdata::contract::exports::{ExportFile, ExportFormat, TABLES};
use govdata::store::exports::{ExportState, FileKey, claim};
use govdata::store::publish::{Scope, publish};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::helpers::{Backend, TestApp, fresh_sample_database, spawn_app_with};
use crate::on_both_backends;

/// A store of its own with the sample loaded, served with exports under `dir` (budget in MiB).
async fn exporting_app(backend: Backend, dir: &Path, budget_mb: u64) -> TestApp {
    let url = fresh_sample_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    db.close().await.ok();
    let dir = dir.to_owned();
    spawn_app_with(url, move |a| {
        a.exports.export_dir = dir;
        a.exports.export_budget_mb = budget_mb;
    })
    .await
}

async fn list(app: &TestApp, query: &str) -> Vec<Value> {
    let r = app.get(&format!("/v2/exports?{query}")).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    body["data"]["items"].as_array().unwrap().clone()
}

fn entry<'a>(items: &'a [Value], file: &str) -> &'a Value {
    let (table, format) = file.split_once('.').unwrap();
    items.iter().find(|i| i["table"] == table && i["format"] == format).unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn download(app: &TestApp, file: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    app.sync().await;
    let mut r = app.client.get(app.url(&format!("/v2/exports/uniswap/{file}")));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

on_both_backends!(replica: exports_are_served_as_data_tools_read_files, |backend: Backend| async move {
    let dir = tempfile::tempdir().unwrap();
    let app = exporting_app(backend, dir.path(), 1024).await;

    // The list: every table in every format, none built yet; each with its schema's link.
    let items = list(&app, "daoId=uniswap&limit=100").await;
    assert_eq!(items.len(), TABLES.len() * ExportFormat::ALL.len());
    assert!(items.iter().all(|i| i["status"] == "on_request" && i.get("sha256").is_none()), "{items:?}");
    let votes = entry(&items, "votes.parquet");
    assert_eq!(votes["url"], "/v2/exports/uniswap/votes.parquet");
    assert_eq!(votes["mediaType"], "application/vnd.apache.parquet");
    let schemas: Value = app.get("/v2/export-tables").await.json().await.unwrap();
    let tables = schemas["data"]["tables"].as_array().unwrap();
    assert_eq!(tables.len(), TABLES.len());
    assert!(tables.iter().any(|t| t["table"] == "votes" && t["columns"].as_array().unwrap().len() > 5));

    // The whole file: its length, a strong ETag that is its SHA-256, ranges offered.
    let r = download(&app, "votes.parquet", &[]).await;
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    let whole = r.bytes().await.unwrap();
    assert_eq!(h["content-type"], "application/vnd.apache.parquet");
    assert_eq!(h["content-length"].to_str().unwrap(), whole.len().to_string());
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(h["cache-control"], "no-cache");
    let etag = h["etag"].to_str().unwrap().to_owned();
    assert_eq!(etag, format!("\"{}\"", sha256_hex(&whole)));
    assert!(whole.starts_with(b"PAR1") && whole.ends_with(b"PAR1"));
    // Now listed with what it holds, for the DAO's serving revision.
    let items = list(&app, "daoId=uniswap&limit=100").await;
    let votes = entry(&items, "votes.parquet");
    assert_eq!(votes["status"], "ready");
    assert_eq!(votes["sha256"], sha256_hex(&whole));
    assert_eq!(votes["bytes"], whole.len() as u64);
    assert_eq!(votes["revision"], app.serving.current().revision_of(Some("uniswap")));
    assert!(votes["rows"].as_u64().unwrap() > 1000);
    assert_eq!(files_in(&dir.path().join("uniswap")).len(), 1, "one file, no partial left");

    // Conditional and ranged requests.
    let r = download(&app, "votes.parquet", &[("if-none-match", &etag)]).await;
    assert_eq!(r.status(), 304);
    assert!(r.bytes().await.unwrap().is_empty());
    let r = download(&app, "votes.parquet", &[("range", "bytes=0-3")]).await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-range"].to_str().unwrap(), format!("bytes 0-3/{}", whole.len()));
    assert_eq!(r.headers()["content-length"], "4");
    assert_eq!(&r.bytes().await.unwrap()[..], b"PAR1");
    // The footer first, as a Parquet reader asks for it.
    let r = download(&app, "votes.parquet", &[("range", "bytes=-8")]).await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.bytes().await.unwrap(), whole.slice(whole.len() - 8..));
    // A resumed download of the same file continues; of a changed one, starts over.
    let from = format!("bytes={}-", whole.len() / 2);
    let r = download(&app, "votes.parquet", &[("range", &from), ("if-range", &etag)]).await;
    assert_eq!(r.status(), 206);
    assert_eq!(r.bytes().await.unwrap(), whole.slice(whole.len() / 2..));
    let r = download(&app, "votes.parquet", &[("range", &from), ("if-range", "\"another\"")]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap(), whole);
    // Past the end: 416, with the size.
    let past = format!("bytes={}-", whole.len());
    let r = download(&app, "votes.parquet", &[("range", &past)]).await;
    assert_eq!(r.status(), 416);
    assert_eq!(r.headers()["content-range"].to_str().unwrap(), format!("bytes */{}", whole.len()));
    let problem: Value = r.json().await.unwrap();
    assert_eq!((problem["code"].as_str(), problem["status"].as_u64()), (Some("VALIDATION_ERROR"), Some(416)));

    // Text: gzip-encoded on request, the same bytes once decoded, another ETag.
    let plain = download(&app, "votes.csv", &[]).await;
    assert_eq!(plain.status(), 200);
    assert_eq!(plain.headers()["content-type"], "text/csv; charset=utf-8; header=present");
    assert_eq!(plain.headers()["vary"], "accept-encoding");
    let plain_etag = plain.headers()["etag"].to_str().unwrap().to_owned();
    let plain = plain.bytes().await.unwrap();
    let gz = download(&app, "votes.csv", &[("accept-encoding", "gzip")]).await;
    assert_eq!(gz.status(), 200);
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    let gz_etag = gz.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(gz_etag, format!("\"{}-gzip\"", plain_etag.trim_matches('"')));
    let gz = gz.bytes().await.unwrap();
    assert!(gz.len() < plain.len());
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut decoded).unwrap();
    assert_eq!(decoded, plain);

    // Refusals: a file no table names, a DAO nobody covers, no credentials.
    let r = download(&app, "votes.xlsx", &[]).await;
    assert_eq!(r.status(), 400);
    let problem: Value = r.json().await.unwrap();
    assert_eq!(problem["errors"][0]["name"], "file");
    let r = app.get("/v2/exports/nosuchdao/votes.csv").await;
    assert_eq!(r.status(), 404);
    let r = app.anonymous.get(app.url("/v2/exports/uniswap/votes.csv")).send().await.unwrap();
    assert_eq!(r.status(), 402);
    let r = app.get("/v2/exports?daoId=nosuchdao").await;
    assert_eq!(r.status(), 404);
});

on_both_backends!(
    replica: an_unchanged_table_keeps_its_etag_and_a_changed_one_replaces_its_file,
    |backend: Backend| async move {
        let dir = tempfile::tempdir().unwrap();
        let app = exporting_app(backend, dir.path(), 1024).await;
        let db = govdata::store::connect(&app.database_url).await.unwrap();
        let before = download(&app, "votes.csv", &[]).await;
        assert_eq!(before.status(), 200);
        let etag = before.headers()["etag"].to_str().unwrap().to_owned();
        let first_revision = app.serving.current().revision_of(Some("uniswap"));

        // A publication that changes nothing of the votes: the file is built again for the new
        // revision (after the publication, as it was asked for before) into the same bytes.
        let revision = publish(&db, 0, "test: republish", &Scope::All).await.unwrap();
        assert!(revision.id > first_revision);
        let again = download(&app, "votes.csv", &[]).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.headers()["etag"].to_str().unwrap(), etag, "unchanged bytes keep their ETag");
        let items = list(&app, "daoId=uniswap&limit=100").await;
        let votes = entry(&items, "votes.csv");
        assert_eq!(votes["revision"], revision.id);
        assert_eq!(votes["changedInRevision"], first_revision, "the bytes last changed before");

        // A publication that changes a vote: new bytes, a new ETag, and the old file removed.
        let backend_sql = "UPDATE votes SET reason = 'changed for the export test' WHERE id = \
                       (SELECT MIN(id) FROM votes WHERE dao_id = 'uniswap')";
        use sea_orm::ConnectionTrait;
        db.execute_unprepared(backend_sql).await.unwrap();
        let changed = publish(&db, 0, "test: a vote changed", &Scope::All).await.unwrap();
        let after = download(&app, "votes.csv", &[]).await;
        assert_eq!(after.status(), 200);
        assert_ne!(after.headers()["etag"].to_str().unwrap(), etag);
        let body = after.text().await.unwrap();
        assert!(body.contains("changed for the export test"));
        let items = list(&app, "daoId=uniswap&limit=100").await;
        assert_eq!(entry(&items, "votes.csv")["changedInRevision"], changed.id);
        let names = files_in(&dir.path().join("uniswap"));
        let csvs: Vec<&String> = names.iter().filter(|n| n.starts_with("votes-") && n.ends_with(".csv")).collect();
        assert_eq!(csvs.len(), 1, "the file no revision needs is removed: {names:?}");
    }
);

on_both_backends!(replica: one_builder_per_file_and_the_disk_budget, |backend: Backend| async move {
    let dir = tempfile::tempdir().unwrap();
    // A budget of 0 MiB keeps only the file just built.
    let app = exporting_app(backend, dir.path(), 0).await;
    let db = govdata::store::connect(&app.database_url).await.unwrap();

    // Racing claims of one file: exactly one wins, on either backend.
    let key = FileKey { dao_id: "uniswap", table: "daos", format: "csv" };
    let mut racers = Vec::new();
    for i in 0..8 {
        let db = db.clone();
        racers.push(tokio::spawn(async move {
            let key = FileKey { dao_id: "uniswap", table: "daos", format: "csv" };
            claim(&db, key, &format!("racer-{i}"), 1, 0).await.unwrap()
        }));
    }
    let mut won = 0;
    for r in racers {
        won += usize::from(r.await.unwrap());
    }
    assert_eq!(won, 1, "one claim wins");
    let row = govdata::store::exports::get(&db, key).await.unwrap().unwrap();
    assert_eq!(row.state, ExportState::Building);

    // Many requests for one file at once: one build, the same bytes for all.
    let mut gets = Vec::new();
    for _ in 0..6 {
        let (client, url) = (app.client.clone(), app.url("/v2/exports/uniswap/votes.ndjson"));
        gets.push(tokio::spawn(async move {
            let r = client.get(url).send().await.unwrap();
            (r.status().as_u16(), r.headers().get("etag").map(|e| e.to_str().unwrap().to_owned()))
        }));
    }
    let mut etags = std::collections::BTreeSet::new();
    for g in gets {
        let (status, etag) = g.await.unwrap();
        assert_eq!(status, 200);
        etags.insert(etag.unwrap());
    }
    assert_eq!(etags.len(), 1);
    let ndjson: Vec<String> = files_in(&dir.path().join("uniswap"));
    assert_eq!(ndjson.iter().filter(|n| n.ends_with(".ndjson")).count(), 1, "{ndjson:?}");

    // Over the budget: building another file removes the least recently served one.
    assert_eq!(download(&app, "votes.csv", &[]).await.status(), 200);
    // The builder makes room right after it publishes the new file, while the download is served.
    crate::helpers::eventually("the least recently served file is removed", || async {
        !files_in(&dir.path().join("uniswap")).iter().any(|n| n.ends_with(".ndjson"))
    })
    .await;
    let items = list(&app, "daoId=uniswap&limit=100").await;
    assert_eq!(entry(&items, "votes.ndjson")["status"], "on_request");
    assert_eq!(entry(&items, "votes.csv")["status"], "ready");
    // And asked for again, it is built again.
    assert_eq!(download(&app, "votes.ndjson", &[]).await.status(), 200);
});

#[test]
fn every_file_name_parses_back() {
    for f in ExportFile::all() {
        assert_eq!(ExportFile::parse(&f.name()), Some(f));
    }
}

/// The Python with the pinned readers (tests/exports/requirements.txt).
async fn readers() -> Option<std::path::PathBuf> {
    static READY: tokio::sync::OnceCell<Result<std::path::PathBuf, String>> = tokio::sync::OnceCell::const_new();
    crate::helpers::pinned_python(&READY, "exports", "pyarrow, polars, duckdb, fsspec, aiohttp").await
}

on_both_backends!(replica: real_readers_find_exactly_what_the_api_serves, |backend: Backend| async move {
    let Some(python) = readers().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = exporting_app(backend, dir.path(), 1024).await;
    let downloads = tempfile::tempdir().unwrap();
    let mut files = serde_json::Map::new();
    for format in ["parquet", "csv", "ndjson"] {
        let r = download(&app, &format!("votes.{format}"), &[]).await;
        assert_eq!(r.status(), 200);
        let path = downloads.path().join(format!("votes.{format}"));
        std::fs::write(&path, r.bytes().await.unwrap()).unwrap();
        files.insert(format.to_owned(), path.to_str().unwrap().into());
    }
    // What the API serves: the DAO's ingested votes, and every vote of its three largest proposals.
    let dao: Value = app.get("/v2/daos/uniswap").await.json().await.unwrap();
    let rows: u64 = dao["data"]["counts"]["ingestedVotes"].as_str().unwrap().parse().unwrap();
    let proposals: Value = app.get("/v2/proposals?daoId=uniswap&limit=100").await.json().await.unwrap();
    let mut keys: Vec<(u64, String)> = proposals["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let held: u64 = p["votes"]["ingested"].as_str().unwrap().parse().unwrap();
            (held, p["proposalKey"].as_str().unwrap().to_owned())
        })
        .collect();
    keys.sort();
    let keys: Vec<String> = keys.into_iter().rev().take(3).map(|(_, k)| k).collect();
    let mut votes = serde_json::Map::new();
    for key in &keys {
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v2/proposals/{key}/votes?limit=500");
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let page: Value = app.get(&path).await.json().await.unwrap();
            for v in page["data"]["items"].as_array().unwrap() {
                let voter = v["voterIdentity"].as_str().unwrap();
                votes.insert(format!("{key}|{voter}"), v["votingPower"].clone());
            }
            match page["meta"]["page"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
    }
    assert!(votes.len() > 100, "the largest proposals' votes: {}", votes.len());
    let spec = serde_json::json!({
        "files": files,
        "url": app.url("/v2/exports/uniswap/votes.parquet"),
        "headers": { "x-internal-token": crate::helpers::INTERNAL_TOKEN },
        "expected": { "rows": rows, "proposals": keys, "votes": votes },
    });
    let spec_path = downloads.path().join("expectations.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/exports/read.py");
    let out = tokio::process::Command::new(python).arg(script).arg(&spec_path).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["failures"], serde_json::json!([]));
    assert_eq!(report["duckdb_parquet"], rows);
    assert!(report["http"]["fetched_bytes"].as_u64() < report["http"]["size"].as_u64(), "{report}");
});
