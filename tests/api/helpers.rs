//! Test harness: a real server on 127.0.0.1:0 in front of a real store, on SQLite or PostgreSQL.
//!
//! Read-only tests share one database per backend per run, loaded once with the bundled sample.
//! Tests that write get a database of their own: empty (`fresh_database`), or a copy of the
//! sample loaded once (`fresh_sample_database`). PostgreSQL databases are named
//! `govdata_test_<unix seconds>_<pid>_<n>`, dropped when the run ends, and any left behind by an
//! interrupted run over an hour ago are dropped at the next start.
use std::{
    io::Write,
    net::SocketAddr,
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use govdata::config::{ServeArgs, Settings};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    /// PostgreSQL with the served reads on a streaming replica: the primary and the replica of
    /// `scripts/pg-pair` (`GOVDATA_TEST_PG_PRIMARY_URL`, `GOVDATA_TEST_PG_REPLICA_URL`).
    Replica,
}

/// The PostgreSQL server tests use (trust authentication).
pub fn pg_base_url() -> String {
    std::env::var("GOVDATA_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

/// The primary of the replicated pair (`bash scripts/pg-pair start`).
pub fn pair_primary_url() -> String {
    std::env::var("GOVDATA_TEST_PG_PRIMARY_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5433".to_owned())
}

/// The streaming replica of [`pair_primary_url`].
pub fn pair_replica_url() -> String {
    std::env::var("GOVDATA_TEST_PG_REPLICA_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5434".to_owned())
}

/// The server `backend`'s databases are created on.
fn admin_base(backend: Backend) -> String {
    match backend {
        Backend::Replica => pair_primary_url(),
        _ => pg_base_url(),
    }
}

/// (server, database) of every PostgreSQL database this run created.
static CREATED_PG: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
static SEQ: AtomicUsize = AtomicUsize::new(0);

#[ctor::dtor]
fn drop_test_databases() {
    let names = std::mem::take(&mut *CREATED_PG.lock().unwrap_or_else(|e| e.into_inner()));
    if names.is_empty() {
        return;
    }
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
    rt.block_on(async {
        let servers: std::collections::BTreeSet<String> = names.iter().map(|(server, _)| server.clone()).collect();
        for server in servers {
            if let Ok(admin) = Database::connect(format!("{server}/postgres")).await {
                for (_, name) in names.iter().filter(|(s, _)| *s == server) {
                    let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).await;
                }
            }
        }
    });
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A new, empty database URL on `backend`.
pub async fn fresh_database(backend: Backend) -> String {
    create_database(backend, None).await
}

/// A new database URL on `backend` holding the bundled sample as `sample::import_if_empty` left
/// it (migrated, imported, published), for a test that writes to it. It is a copy of a database
/// loaded once per run: a copied file on SQLite, `CREATE DATABASE … TEMPLATE` on PostgreSQL
/// (0.1 s instead of the migrations and the import: about 1.3 s of a debug build's CPU, and the
/// server's on PostgreSQL, for each test that writes to the sample).
pub async fn fresh_sample_database(backend: Backend) -> String {
    let template = sample_template(backend);
    create_database(backend, Some(&template)).await
}

/// A new database on `backend`: empty, or a copy of `template` (a URL of the same backend that no
/// connection holds open).
async fn create_database(backend: Backend, template: Option<&str>) -> String {
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    match backend {
        Backend::Sqlite => {
            let dir = tempdir_for_run();
            let path = dir.join(format!("test_{n}.db"));
            if let Some(template) = template {
                let from = template.strip_prefix("sqlite://").expect("a SQLite template");
                std::fs::copy(from, &path).expect("copy the template");
            }
            format!("sqlite://{}", path.display())
        }
        Backend::Postgres | Backend::Replica => {
            let base = admin_base(backend);
            let admin = Database::connect(format!("{base}/postgres")).await.unwrap_or_else(|e| {
                panic!("PostgreSQL must be running at {base} (GOVDATA_TEST_PG_URL, GOVDATA_TEST_PG_PRIMARY_URL): {e}")
            });
            drop_stale(&admin).await;
            let name = format!("govdata_test_{}_{}_{n}", unix_now(), std::process::id());
            let from = match template {
                Some(t) => format!(" TEMPLATE \"{}\"", t.rsplit('/').next().expect("a database name")),
                None => String::new(),
            };
            admin.execute_unprepared(&format!("CREATE DATABASE \"{name}\"{from}")).await.expect("create test database");
            CREATED_PG.lock().unwrap_or_else(|e| e.into_inner()).push((base.clone(), name.clone()));
            admin.close().await.ok();
            format!("{base}/{name}")
        }
    }
}

/// Drops test databases an interrupted run left behind (over an hour old).
async fn drop_stale(admin: &DatabaseConnection) {
    static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    {
        // Once per server.
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        let server = format!("{admin:?}");
        if done.contains(&server) {
            return;
        }
        done.push(server);
    }
    let rows = admin
        .query_all_raw(sea_orm::Statement::from_string(
            admin.get_database_backend(),
            "SELECT datname FROM pg_database WHERE datname LIKE 'govdata_test_%'",
        ))
        .await
        .unwrap_or_default();
    for row in rows {
        let Ok(name) = row.try_get::<String>("", "datname") else { continue };
        let created: u64 = name.split('_').nth(2).and_then(|t| t.parse().ok()).unwrap_or(u64::MAX);
        if created.saturating_add(3600) < unix_now() {
            let _ = admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).await;
        }
    }
}

fn tempdir_for_run() -> &'static std::path::Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir")).path()
}

/// The shared database of `backend`, loaded with the bundled sample once per run (read-only
/// tests share it).
pub fn sample_database(backend: Backend) -> String {
    static CELLS: [OnceLock<String>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    once_per_backend(&CELLS, backend, fresh_sample_database)
}

/// The template of [`fresh_sample_database`] on `backend`: loaded with the bundled sample once
/// per run, then closed, and never served (PostgreSQL copies only a database no one is connected
/// to; a SQLite file is copied whole only once its write-ahead log is folded into it).
fn sample_template(backend: Backend) -> String {
    static CELLS: [OnceLock<String>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    once_per_backend(&CELLS, backend, |backend| async move {
        let url = fresh_database(backend).await;
        let db = govdata::store::connect(&url).await.expect("connect");
        govdata::sample::import_if_empty(&db).await.expect("import the sample");
        if backend == Backend::Sqlite {
            db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)").await.expect("checkpoint");
        }
        db.close().await.expect("close the template");
        url
    })
}

/// The database `load` makes, made once per run and backend (in `cells`, one per backend). It is
/// made on a thread and runtime of its own: each test has its own runtime, and a pool must not
/// outlive the runtime that made it.
fn once_per_backend<F, Fut>(cells: &'static [OnceLock<String>; 3], backend: Backend, load: F) -> String
where
    F: FnOnce(Backend) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = String>,
{
    let cell = &cells[backend as usize];
    cell.get_or_init(|| {
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(load(backend))
        })
        .join()
        .expect("loading the sample")
    })
    .clone()
}

/// The internal first-party token every test server is configured with.
pub const INTERNAL_TOKEN: &str = "internal-token-for-tests";

/// A running server.
pub struct TestApp {
    pub addr: SocketAddr,
    /// Sends the internal token with every request: data tests read paid endpoints as the
    /// first-party client does. Access tests use `anonymous`.
    pub client: reqwest::Client,
    /// Sends no credentials.
    pub anonymous: reqwest::Client,
    /// The store the server reads, for tests that compare with it directly.
    pub database_url: String,
    /// The server's watch of the serving revision.
    pub serving: std::sync::Arc<govdata::edge::serving::ServingWatch>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// GET as the first-party client. The server first looks at the store (as its watch does
    /// every `WATCH_INTERVAL`), so that what a test published just before is served; tests of
    /// that bound itself use `anonymous` or separate processes.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.sync().await;
        self.client.get(self.url(path)).send().await.expect("request")
    }

    /// Makes the server see what was published, now (a store that cannot be read is left to
    /// the request to report). With a replica, also waits (a few seconds at most) until it has
    /// replayed everything the primary holds now: the serving revision, and what a test wrote
    /// outside publications (run states, watermarks), so that the reads that follow are the
    /// replica's and see it.
    pub async fn sync(&self) {
        use sea_orm::ConnectionTrait;
        // Left to the request to report, but said here too: a test that then reads an older
        // revision shows why in its output.
        if let Err(e) = self.serving.refresh().await {
            eprintln!("sync: the server's watch did not read the store: {e}");
        }
        let nodes = self.serving.nodes();
        if !nodes.has_replicas() {
            return;
        }
        let wanted = self.serving.current().id;
        let primary = nodes.primary();
        let sql = "SELECT pg_current_wal_lsn()::text AS position";
        // Not asked while the primary is down (outage tests), nor waited for long.
        let ask = primary.query_one_raw(sea_orm::Statement::from_string(primary.get_database_backend(), sql));
        let position = match nodes.primary_down() {
            true => None,
            false => match tokio::time::timeout(std::time::Duration::from_secs(1), ask).await {
                Ok(Ok(Some(row))) => {
                    row.try_get::<String>("", "position").ok().and_then(|p| govdata::store::nodes::parse_lsn(&p))
                }
                _ => None,
            },
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            let caught_up = nodes.report().iter().all(|n| {
                n.role == govdata::contract::vocabulary::NodeRole::Primary
                    || (n.state.revision.is_some_and(|r| r >= wanted)
                        && position.is_none_or(|p| n.state.wal_position.is_some_and(|w| w >= p)))
            });
            if caught_up {
                return;
            }
            nodes.probe_soon();
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// GET returning status and JSON body.
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let response = self.get(path).await;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(serde_json::Value::Null);
        (status, body)
    }
}

/// Reads what the server sends on a raw connection until it closes it (or `within` passes:
/// `None`). A reset after some bytes ends the read too.
pub async fn read_to_close(stream: &mut tokio::net::TcpStream, within: std::time::Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let read = async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(within, read).await.ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Starts a server over the shared sample database of `backend`.
pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_on(sample_database(backend)).await
}

/// Starts a server over the database at `url` (migrated, not loaded).
pub async fn spawn_app_on(url: String) -> TestApp {
    spawn_app_with(url, |_| {}).await
}

/// Starts a server over the database at `url` with settings adjusted by `configure`.
pub async fn spawn_app_with(url: String, configure: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let db = govdata::store::connect(&url).await.expect("connect");
    let mut args = ServeArgs { addr: "127.0.0.1:0".parse().expect("addr"), ..ServeArgs::default() };
    args.payments.internal_token = Some(INTERNAL_TOKEN.to_owned());
    // Every test server runs on 127.0.0.1 and many share a store, so they would share one client
    // count: tests of rate limits set their own.
    args.rates.rate_client = "1000000/1s".parse().expect("a rate");
    // Streams end after a second, so that a test reading the whole answer of every operation
    // (`/v2/stream` among them) finishes; tests of streams set their own.
    args.limits.stream_max_duration = Some(std::time::Duration::from_secs(1));
    // Webhooks go to receivers on 127.0.0.1 (tests of the address guard turn this off), and the
    // sender looks at its queue often.
    args.webhooks.webhook_allow_private = true;
    args.webhooks.webhook_loopback_only = true;
    args.webhooks.webhook_poll = std::time::Duration::from_millis(100);
    // Export files of each server in a directory of its own (several may share a store).
    args.exports.export_dir = std::env::temp_dir().join(format!("govdata-test-exports-{}", uuid::Uuid::new_v4()));
    // A database of the replicated pair is read from its replica.
    if let Some(name) = url.strip_prefix(&format!("{}/", pair_primary_url())) {
        args.replicas.read_replica_urls = vec![format!("{}/{name}", pair_replica_url())];
    }
    configure(&mut args);
    let govdata::server::Listening { server, addr, serving, .. } =
        govdata::server::bind(db, args.addr, &|bound| Settings::from_args(&args, bound)).await.expect("bind");
    tokio::spawn(server);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-internal-token", reqwest::header::HeaderValue::from_static(INTERNAL_TOKEN));
    // A connection idle as long as the server's keep-alive allows is closed by the server; one
    // reused at that moment is reset under the request. The clients let theirs go sooner.
    let idle = args.limits.header_read_timeout / 2;
    let client = reqwest::Client::builder().default_headers(headers).pool_idle_timeout(idle).build().expect("client");
    let anonymous = reqwest::Client::builder().pool_idle_timeout(idle).build().expect("client");
    TestApp { addr, client, anonymous, database_url: url, serving }
}

/// Runs a test on both backends, as tests `<name>::sqlite` and `<name>::postgres` (so `cargo
/// test --test api postgres` runs the PostgreSQL part of each). Written `replica: <name>`, it also
/// runs as `<name>::postgres_replica`: PostgreSQL with the reads on a streaming replica. That third
/// run is for the tests of routing (writes on the primary, reads on a replica that has replayed
/// the serving revision), consistency (what a write or publication shows next) and failover; a
/// read that is the same SQL on either node is not run a third time (CI time is a budget, issue
/// 49). The body is an async block,
/// and the type written after its parameter (`TestApp` or `Backend`, as written, with no import
/// needed) says what it gets:
///
/// ```ignore
/// // A server over the backend's shared database, loaded with the sample (read-only tests).
/// on_both_backends!(lists_daos, |app: TestApp| async move { app.get("/v1/daos").await; });
/// // The backend itself, for a test that builds its own store (`fresh_database`, a synthetic
/// // store, another process) and starts its own server (`spawn_app_on`, `spawn_app_with`).
/// on_both_backends!(imports_twice, |backend: Backend| async move {
///     let app = spawn_app_on(fresh_database(backend).await).await;
/// });
/// ```
///
/// The PostgreSQL test first checks that PostgreSQL answers (`require`): when it does not, a
/// developer's run skips it loudly and a CI run fails it.
#[macro_export]
macro_rules! on_both_backends {
    (replica: $name:ident, |$app:ident: TestApp| $body:expr) => {
        $crate::on_both_backends!(@tests $name, replica, backend => {
            let $app: $crate::helpers::TestApp = $crate::helpers::spawn_app(backend).await;
            $body.await;
        });
    };
    (replica: $name:ident, |$backend:ident: Backend| $body:expr) => {
        $crate::on_both_backends!(@tests $name, replica, $backend => $body.await);
    };
    ($name:ident, |$app:ident: TestApp| $body:expr) => {
        $crate::on_both_backends!(@tests $name, primary, backend => {
            let $app: $crate::helpers::TestApp = $crate::helpers::spawn_app(backend).await;
            $body.await;
        });
    };
    ($name:ident, |$backend:ident: Backend| $body:expr) => {
        $crate::on_both_backends!(@tests $name, primary, $backend => $body.await);
    };
    (@tests $name:ident, $variant:ident, $backend:ident => $run:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let $backend: $crate::helpers::Backend = $crate::helpers::Backend::Sqlite;
                $run;
            }

            #[tokio::test]
            async fn postgres() {
                let $backend: $crate::helpers::Backend = $crate::helpers::Backend::Postgres;
                if !$crate::helpers::require($backend) {
                    return;
                }
                $run;
            }

            $crate::on_both_backends!(@replica $variant, $backend => $run);
        }
    };
    (@replica primary, $backend:ident => $run:expr) => {};
    (@replica replica, $backend:ident => $run:expr) => {
        #[tokio::test]
        async fn postgres_replica() {
            let $backend: $crate::helpers::Backend = $crate::helpers::Backend::Replica;
            if !$crate::helpers::require($backend) {
                return;
            }
            $run;
        }
    };
}

/// Whether the test may run on `backend`. SQLite is built in. PostgreSQL must answer at
/// `pg_base_url()`; when it does not, the test is skipped with a loud `SKIPPED` on stderr (and
/// in the summary at exit), or, when `CI=true`, fails: CI never skips. Call it first in a test
/// that uses PostgreSQL outside `on_both_backends!`: `if !require(Backend::Postgres) { return; }`.
pub fn require(backend: Backend) -> bool {
    static POSTGRES: OnceLock<Result<(), String>> = OnceLock::new();
    static REPLICA: OnceLock<Result<(), String>> = OnceLock::new();
    let (cell, base) = match backend {
        Backend::Sqlite => return true,
        Backend::Postgres => (&POSTGRES, pg_base_url()),
        Backend::Replica => (&REPLICA, pair_replica_url()),
    };
    let answer = cell.get_or_init(|| {
        let admin = format!("{base}/postgres");
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async {
                match tokio::time::timeout(std::time::Duration::from_secs(5), Database::connect(&admin)).await {
                    Ok(Ok(db)) => {
                        // The replica must be one: a standby, replaying the pair's primary.
                        let standby = db
                            .query_one_raw(sea_orm::Statement::from_string(
                                db.get_database_backend(),
                                "SELECT pg_is_in_recovery() AS standby",
                            ))
                            .await
                            .ok()
                            .flatten()
                            .and_then(|row| row.try_get::<bool>("", "standby").ok());
                        db.close().await.ok();
                        match (backend, standby) {
                            (Backend::Replica, Some(false)) => Err("it is not a standby".to_owned()),
                            _ => Ok(()),
                        }
                    }
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("no answer within 5 s".to_owned()),
                }
            })
        })
        .join()
        .expect("checking PostgreSQL")
    });
    match (answer, backend) {
        (Ok(()), _) => true,
        (Err(e), Backend::Replica) => skip(
            &format!("the PostgreSQL replica does not answer at {base} ({e})"),
            "start the primary and its streaming replica with `bash scripts/pg-pair start` (ports 5433 and \
             5434; `.ci/run` does), or set GOVDATA_TEST_PG_PRIMARY_URL and GOVDATA_TEST_PG_REPLICA_URL",
        ),
        (Err(e), _) => skip(
            &format!("PostgreSQL does not answer at {base} ({e})"),
            "start a PostgreSQL server on 127.0.0.1:5432 with trust authentication (`.ci/run` starts the \
             machine's cluster with pg_ctlcluster; or `docker run -d -p 5432:5432 -e \
             POSTGRES_HOST_AUTH_METHOD=trust postgres`), or set GOVDATA_TEST_PG_URL to a server the tests may \
             create and drop databases on",
        ),
    }
}

/// Whether this run is CI's: `CI=true` (or `1`), as `.ci/run` and CI services set it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Tests skipped in this run: (what is missing, how to get it, the tests).
static SKIPPED: Mutex<Vec<(String, String, Vec<String>)>> = Mutex::new(Vec::new());

/// A test cannot run here because `missing`; `remedy` says how to get it. In CI (`in_ci`) that
/// fails the test. Elsewhere the test is skipped: this says so on stderr at once (past the test
/// harness's capture; the remedy the first time), again in a summary when the run ends, and
/// returns `false` so the test can `return`.
pub fn skip(missing: &str, remedy: &str) -> bool {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    assert!(!in_ci(), "{test}: {missing}. CI=true, so this fails instead of skipping. To run it: {remedy}.");
    let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let line = match skipped.iter_mut().find(|(m, _, _)| m == missing) {
        Some((_, _, tests)) => {
            tests.push(test.clone());
            format!("SKIPPED {test}: {missing} (see above)")
        }
        None => {
            skipped.push((missing.to_owned(), remedy.to_owned(), vec![test.clone()]));
            format!("SKIPPED {test}: {missing}. To run it: {remedy}.")
        }
    };
    let _ = writeln!(std::io::stderr(), "*** {line}");
    false
}

#[ctor::dtor]
fn report_skipped() {
    let skipped = std::mem::take(&mut *SKIPPED.lock().unwrap_or_else(|e| e.into_inner()));
    let mut err = std::io::stderr();
    for (missing, remedy, tests) in skipped {
        let _ = writeln!(
            err,
            "\n*** {} test(s) SKIPPED (passed without running; CI=true fails them instead):",
            tests.len()
        );
        let _ = writeln!(err, "*** {missing}.\n*** To run them: {remedy}.");
        for test in tests {
            let _ = writeln!(err, "***   {test}");
        }
    }
}

/// insta settings: snapshots in the top-level `snapshots/`, volatile values redacted. A response
/// snapshot is named `<surface>_<operationId>_<case>` (`v1_items_get_proposal_rfc`), a published
/// document `documents_<surface>_<format>` (`documents_v2_json`); `v2_snapshots` checks the names
/// and that every v2 operation has one.
pub fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_redaction(".request.requestId", "[requestId]");
    s.add_redaction(".freshness.generatedAt", "[generatedAt]");
    s.add_redaction(".meta.freshness.generatedAt", "[generatedAt]");
    s
}

/// Polls `check` until it holds, failing with `what` after 10 s: for effects that land in the
/// background (a token use written, another process's publication seen). A test whose point is a
/// time bound says it with `tokio::time::timeout(bound, ...)` instead.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_within(std::time::Duration::from_secs(10), what, check).await;
}

/// `eventually`, with a deadline of `within` (for work that takes longer, such as a run).
pub async fn eventually_within<F, Fut>(within: std::time::Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The Python of `target/<name>-venv`, holding the packages pinned in `tests/<name>/requirements.txt`
/// (made on first use; `.ci/run` makes it before the tests), checked by importing `probe`; or
/// `None` when Python or PyPI is missing (skipped loudly, or failed in CI). `cell` keeps the
/// answer for the run.
pub async fn pinned_python(
    cell: &'static tokio::sync::OnceCell<Result<std::path::PathBuf, String>>,
    name: &str,
    probe: &str,
) -> Option<std::path::PathBuf> {
    use tokio::process::Command;
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let ready = cell
        .get_or_init(|| async {
            let venv = root.join(format!("target/{name}-venv"));
            let python = venv.join("bin/python");
            let have = Command::new(&python).args(["-c", &format!("import {probe}")]).output().await;
            if have.is_ok_and(|o| o.status.success()) {
                return Ok(python);
            }
            let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).output().await;
            if !made.as_ref().is_ok_and(|o| o.status.success()) {
                return Err(format!("python3 could not make a venv: {made:?}"));
            }
            let requirements = root.join(format!("tests/{name}/requirements.txt"));
            let installed = Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "--no-deps", "-r"])
                .arg(requirements)
                .output()
                .await;
            match installed {
                Ok(o) if o.status.success() => Ok(python),
                other => Err(format!("pip could not install tests/{name}/requirements.txt: {other:?}")),
            }
        })
        .await;
    match ready {
        Ok(python) => Some(python.clone()),
        Err(missing) => {
            skip(
                missing,
                &format!(
                    "install Python 3 with venv and pip, with access to PyPI once (`.ci/run` makes target/{name}-venv)"
                ),
            );
            None
        }
    }
}

/// `govdata_refusals_total{cause}` as `app`'s `/metrics` shows it now (the counters are the
/// process's: servers in one test binary share them, so tests compare before and after).
pub async fn refusals_counted(app: &TestApp, cause: &str) -> f64 {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == "govdata_refusals_total" && s.labels.get("cause") == Some(cause))
        .unwrap_or_else(|| panic!("a refusals_total series for {cause}"));
    match sample.value {
        prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
        _ => f64::NAN,
    }
}
