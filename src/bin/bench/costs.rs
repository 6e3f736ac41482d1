//! `bench --costs-prepare DIR` and `bench --costs DIR`: instruction counts of the operations
//! whose cost the project guards (issue 49), for Valgrind's Callgrind, which counts executed
//! instructions, not seconds: the same binary on the same data counts the same whatever else the
//! machine does. `scripts/costs` runs both and compares the counts with `scripts/costs-baseline.tsv`.
//!
//! `--costs-prepare` (run natively: it generates the data) makes `DIR/store.db`, a SQLite store
//! holding the real sample and a synthetic DAO of 100,000 votes, and `DIR/fanout.db`, the sample
//! with 1,000 webhook subscriptions and one feed entry not yet fanned out. `--costs` (run under
//! `valgrind --tool=callgrind --instr-atstart=no`) opens copies of them and counts, each between
//! Callgrind's start and stop of instrumentation, then dumps the count under the case's name:
//!
//! - store operations, first, with no server running: the fan-out of one entry to 1,000
//!   subscriptions (enqueue, then render its message and sign it for each), a publication of
//!   1,000 more votes on the 100,000, and the export of the synthetic DAO's votes to Parquet and
//!   to CSV;
//! - then requests over one keep-alive loopback connection to the real server, in this process:
//!   the busiest synthetic proposal's vote page (uncached: a new cursor each time; and cached:
//!   the same page again), the v1 evidence of the sample's largest proposal, a lookup by its
//!   title, an MCP `tools/call`. The server's own tasks (the serving watch looks at the store
//!   every 250 ms; the rate limiter, the webhook dispatcher, the timed entries, the feed hub and
//!   the store's pool keep timers too) run on a runtime and a thread of their own
//!   ([`Background`]), which is held still while a request is counted: their timers would
//!   otherwise fire inside a request's window (under Valgrind a request takes longer than a
//!   tick) and be counted with it. Each case is counted [`REPEAT`] times and `scripts/costs`
//!   keeps the least, against what still happens by chance (a look at the store that was
//!   already under way when the pause began).
//!
//! The counting itself is on one thread (`bench`'s `main`): worker threads stealing each other's
//! tasks made the count depend on scheduling. The fan-out and the publication count the same to
//! 0.1 % from run to run. The exports are counted through `exports::export_here`, which writes
//! each batch on the reading thread before the next is read: the same reading and writing as a
//! served export, without the meeting of its two threads (whose spinning and waking moved the
//! count by more than 3 % when it was counted). `scripts/costs` says which cases it guards and
//! which it only reports, and why.
//!
//! Network time is not counted (Callgrind counts no time, and the kernel's work is not the
//! process's); this process's few lines of HTTP client are, alike in every run.
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use govdata::config::{ServeArgs, Settings};
use govdata::store::{self, entities::proposal};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Statement};

use super::Client;

/// The synthetic DAO of the counted store.
const DAO: &str = "synthetic";
const VOTES: u64 = 100_000;
const SUBSCRIPTIONS: usize = 1_000;
/// Counts of each request case; `scripts/costs` keeps the least.
pub const REPEAT: usize = 9;
/// Uncounted rounds of the request cases before they are counted: three per connection of the
/// store's pool (`store::connect`).
const WARM_ROUNDS: usize = 24;

/// Callgrind's client requests (`valgrind/callgrind.h`): the magic no-op sequence Valgrind
/// recognises on x86-64, a no-op outside Valgrind. Written here because the Rust bindings that
/// expose dumps (`crabgrind`) generate them with bindgen, which needs libclang, and this
/// machine's CI has none; the four requests below are all the harness uses.
mod callgrind {
    /// `VG_USERREQ_TOOL_BASE('C','T')`.
    const BASE: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
    const DUMP_STATS_AT: u64 = BASE + 3;
    const ZERO_STATS: u64 = BASE + 1;
    const START_INSTRUMENTATION: u64 = BASE + 4;
    const STOP_INSTRUMENTATION: u64 = BASE + 5;

    #[cfg(target_arch = "x86_64")]
    fn request(code: u64, arg: u64) {
        let args: [u64; 6] = [code, arg, 0, 0, 0, 0];
        // SAFETY: the special instruction preamble of valgrind.h's VALGRIND_DO_CLIENT_REQUEST
        // for amd64: it rotates rdi by 128 bits in all (leaving it unchanged) and exchanges rbx
        // with itself, so natively it changes nothing but rdx, set to the default (0) result.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") 0u64 => _,
                in("rax") args.as_ptr(),
                options(nostack),
            );
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn request(_code: u64, _arg: u64) {}

    pub fn start() {
        request(ZERO_STATS, 0);
        request(START_INSTRUMENTATION, 0);
    }

    /// Stops counting and dumps the count since [`start`] under `name`.
    pub fn stop(name: &str) {
        request(STOP_INSTRUMENTATION, 0);
        let name = std::ffi::CString::new(name).expect("a case name has no NUL");
        request(DUMP_STATS_AT, name.as_ptr() as u64);
    }
}

/// Counts `work` under `name` (`name#n` for a repeated case).
async fn counted<T>(name: &str, work: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    callgrind::start();
    let out = work.await;
    callgrind::stop(name);
    out
}

/// Counts request `path` (a GET, or the MCP call when `mcp` is given) under `name` (makes it
/// uncounted, as a warm-up, without one), with the
/// server's own tasks held still. Held, the serving watch does not look at the store, and a
/// server whose watch has not heard from the store for `edge::serving::STORE_SILENT` answers 503:
/// so the watch looks once, uncounted, just before the count. Should a request still be
/// answered 503 (a slow machine under Valgrind), it is counted under `discarded` and made again.
async fn request(
    client: &mut Client,
    background: &Background,
    name: Option<&str>,
    path: &str,
    mcp: Option<&str>,
) -> anyhow::Result<()> {
    for _ in 0..10 {
        background.serving.refresh().await?;
        // A warm-up lets the background run on: only a count needs it still.
        if name.is_some() {
            background.gate.hold();
            callgrind::start();
        }
        let answer = match mcp {
            Some(body) => client.post_mcp(body).await,
            None => client.get(path).await,
        };
        // A tool's failure is a JSON-RPC result with `isError` in a 200: the store's 503 too.
        let answer = answer.and_then(|body| match mcp.is_some() && body.windows(11).any(|w| w == b"\"isError\":t") {
            true => {
                Err(anyhow::anyhow!("{path}: HTTP 503 inside the tool's answer: {}", String::from_utf8_lossy(&body)))
            }
            false => Ok(body),
        });
        let counted = match answer {
            Ok(_) => Ok(true),
            Err(e) if e.to_string().contains("HTTP 503") => {
                eprintln!("costs: {e:#}; asked again in 1 s (a count of it is named `discarded`)");
                Ok(false)
            }
            Err(e) => Err(e),
        };
        if let Some(name) = name {
            callgrind::stop(match counted {
                Ok(true) => name,
                _ => "discarded",
            });
            background.gate.release();
        }
        match counted? {
            true => return Ok(()),
            false => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
        }
    }
    bail!("{path}: answered 503 ten times")
}

/// The server's own tasks, held still while a request is counted. They run on a current-thread
/// runtime driven by a thread of their own, where one more task passes [`Gate`] every
/// millisecond: while the count holds the gate, that task waits in it, and with it the whole
/// runtime, so none of their timers fires and none of their work is counted. The server's
/// connections (and the requests' own work) run on the counting thread's runtime.
struct Background {
    gate: Arc<Gate>,
    serving: Arc<govdata::edge::serving::ServingWatch>,
    thread: std::thread::JoinHandle<()>,
}

/// How long a held background is given for the statements its tasks had already sent to the
/// store's connection threads (which the gate does not stop) to finish before a count begins:
/// its timers, overdue after a count, fire in the short while between two, and a look at the
/// store they start would otherwise run inside the next count. Under Valgrind such a statement
/// takes tens of milliseconds.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(400);

/// What the counting thread and the background runtime's thread agree on.
#[derive(Default)]
struct Gate {
    state: std::sync::Mutex<GateState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    /// The count asks the background to stop.
    held: bool,
    /// The background has stopped at the gate.
    waiting: bool,
    /// The background is to end: its runtime is dropped, and its tasks with it.
    ended: bool,
}

impl Gate {
    /// Returns once the background waits at the gate, and what it had already asked of the
    /// store's connection threads is done (the counting thread blocks meanwhile: it has nothing
    /// else to do).
    fn hold(&self) {
        let mut state = self.state.lock().expect("the gate's lock");
        state.held = true;
        while !state.waiting {
            state = self.changed.wait(state).expect("the gate's lock");
        }
        drop(state);
        std::thread::sleep(SETTLE);
    }

    fn release(&self) {
        self.state.lock().expect("the gate's lock").held = false;
        self.changed.notify_all();
    }

    fn end(&self) {
        self.state.lock().expect("the gate's lock").ended = true;
    }

    /// The background's side: waits while the gate is held; whether the background goes on.
    fn pass(&self) -> bool {
        let mut state = self.state.lock().expect("the gate's lock");
        if !state.held {
            return !state.ended;
        }
        state.waiting = true;
        self.changed.notify_all();
        while state.held {
            state = self.changed.wait(state).expect("the gate's lock");
        }
        state.waiting = false;
        !state.ended
    }
}

impl Background {
    /// Binds a server over the store at `path` on a background runtime, so that the tasks
    /// `server::bind` starts (and the store's pool) belong to it, and runs the server's
    /// connections on the caller's runtime; the bound address.
    async fn serve(path: &Path, serve: ServeArgs) -> anyhow::Result<(Self, std::net::SocketAddr)> {
        let gate = Arc::new(Gate::default());
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let url = sqlite(path);
        let passing = gate.clone();
        let thread = std::thread::Builder::new().name("costs-background".to_owned()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(e) => return drop(bound_tx.send(Err(anyhow::Error::from(e)))),
            };
            runtime.block_on(async move {
                let listening = async {
                    let db = store::connect(&url).await?;
                    open_whole_pool(&db).await?;
                    let addr = "127.0.0.1:0".parse()?;
                    govdata::server::bind(db, addr, &|bound| Settings::from_args(&serve, bound)).await
                }
                .await;
                let failed = listening.is_err();
                if bound_tx.send(listening).is_err() || failed {
                    return;
                }
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    if !passing.pass() {
                        break;
                    }
                }
            });
        })?;
        let govdata::server::Listening { server, addr, serving, .. } =
            bound_rx.await.map_err(|_| anyhow::anyhow!("the background thread ended"))??;
        tokio::spawn(server);
        Ok((Self { gate, serving, thread }, addr))
    }

    /// Ends the server's own tasks (their runtime is dropped, and what they held with them): a
    /// server merely held would keep what its tasks held when stopped (a connection, a
    /// transaction, SQLite's write lock) through every later count.
    fn end(self) -> anyhow::Result<()> {
        self.gate.end();
        self.thread.join().map_err(|_| anyhow::anyhow!("the background thread panicked"))
    }
}

/// Opens every connection the store's pool may hold, at once, before the server starts: the pool
/// opens one only when none is idle, so it could grow while the cases were counted (a background
/// task meeting a request), and each statement would be prepared again on the new connection
/// inside a later count.
///
/// The whole pool stays open. Holding all but two connections in idle transactions, so that the
/// server read on two (and a few warm-ups prepared every statement on both), was tried on
/// 2026-11-30: the server's node monitor then waited for a connection while the gate held it,
/// its probe timed out (`store::nodes::PROBE_TIMEOUT`) as the gate let it go, and the next
/// request was answered 503 after nearly every count (docs/benchmarks.md).
async fn open_whole_pool(db: &sea_orm::DatabaseConnection) -> anyhow::Result<()> {
    use sea_orm::TransactionTrait;
    let (_, _, max) = store::pool_use(db);
    let held = futures_util::future::try_join_all((0..max).map(|_| db.begin())).await?;
    for txn in held {
        txn.rollback().await?;
    }
    let (open, _, _) = store::pool_use(db);
    if open != max {
        bail!("the store's pool opened {open} of its {max} connections");
    }
    Ok(())
}

fn sqlite(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

pub async fn prepare(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in ["store.db", "fanout.db"] {
        for suffix in ["", "-wal", "-shm"] {
            std::fs::remove_file(dir.join(format!("{name}{suffix}"))).ok();
        }
    }
    let db = store::connect(&sqlite(&dir.join("store.db"))).await?;
    govdata::sample::import_if_empty(&db).await?;
    let spec = govdata::sample::synth::SynthSpec {
        votes: VOTES,
        voters: VOTES / 10,
        proposals: 40,
        dao_id: DAO.to_owned(),
        ..Default::default()
    };
    // `synth` ends with a checkpoint of its own.
    govdata::sample::synth::synth(&db, &spec).await?;
    db.close().await?;

    let db = store::connect(&sqlite(&dir.join("fanout.db"))).await?;
    govdata::sample::import_if_empty(&db).await?;
    let mut token = 0;
    for i in 0..SUBSCRIPTIONS {
        if i % govdata::contract::webhooks::MAX_SUBSCRIPTIONS_PER_TOKEN as usize == 0 {
            token = store::tokens::create(&db, &format!("costs {i}"), &["v2:paid:standard"], None, 0).await?.0.id;
        }
        // Never sent: the counted fan-out only enqueues and renders.
        let target = store::webhooks::Target { url: format!("http://127.0.0.1:9/{i}"), ..Default::default() };
        store::webhooks::create(&db, token, &target, 0).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    // The newest entry is the one to fan out: the shared fan-out stands just before it.
    db.execute_unprepared("UPDATE webhook_fanout SET through = (SELECT MAX(seq) - 1 FROM feed_entries)").await?;
    db.execute_unprepared("UPDATE webhook_subscriptions SET enqueued_through = 0, follows_fanout = TRUE").await?;
    db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)").await?;
    db.close().await?;
    println!("costs: prepared {} (store.db: the sample and {VOTES} synthetic votes; fanout.db)", dir.display());
    Ok(())
}

pub async fn run(dir: &Path) -> anyhow::Result<()> {
    // Work on copies: the publication adds votes, the fan-out deliveries.
    // A fresh directory: a write-ahead log left by an earlier run beside a copied store would be
    // replayed into it.
    let work = dir.join("run");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    for name in ["store.db", "fanout.db"] {
        std::fs::copy(dir.join(name), work.join(name)).with_context(|| format!("{name}: run --costs-prepare first"))?;
    }
    // The store cases first, while no server runs in this process: nothing but the operation
    // runs while it is counted. (A server's timers, once started, run until the process ends.)
    fanout(&work.join("fanout.db")).await?;
    let db = store::connect(&sqlite(&work.join("store.db"))).await?;
    publication(&db).await?;
    exports(&db, &work).await?;
    db.close().await?;
    requests(&work.join("store.db")).await?;
    println!("costs: counted");
    Ok(())
}

/// The request cases, against a server in this process over the store at `path`.
async fn requests(path: &Path) -> anyhow::Result<()> {
    let db = store::connect(&sqlite(path)).await?;
    let busiest = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .order_by_desc(proposal::Column::IngestedVoteCount)
        .one(&db)
        .await?
        .context("no synthetic proposal")?;
    let largest = proposal::Entity::find()
        .filter(proposal::Column::DaoId.ne(DAO))
        .order_by_desc(proposal::Column::IngestedVoteCount)
        .order_by_asc(proposal::Column::Id)
        .one(&db)
        .await?
        .context("no sample proposal")?;
    db.close().await?;
    let token = "costs-internal-token";
    let mut serve = ServeArgs::default();
    serve.payments.internal_token = Some(token.to_owned());
    serve.rates.rate_client = "1000000/1s".parse().map_err(|e: String| anyhow::anyhow!(e))?;
    let (background, bound) = Background::serve(path, serve.clone()).await?;
    let mut client = Client::connect(bound, token).await?;

    let votes = format!("/v2/proposals/{}/votes?limit=100", busiest.proposal_key);
    let mut cursors = client.walk(&votes).await;
    for _ in 0..5 {
        match &cursors {
            Err(e) if e.to_string().contains("HTTP 503") => {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                cursors = client.walk(&votes).await;
            }
            _ => break,
        }
    }
    let cursors = cursors?;
    if cursors.len() < REPEAT + 2 {
        bail!("the busiest proposal has {} pages of votes; the store is too small", cursors.len());
    }
    // The first page was answered during the walk: it is in the response cache.
    for n in 0..REPEAT {
        request(&mut client, &background, Some(&format!("votes_page_cached#{n}")), &votes, None).await?;
    }
    // The walk put every page in the cache, and each case below is answered once from the store
    // and then from the cache: they are counted under a server without the cache, so that every
    // repetition does the same work (a cursor is the store's, so the walk's serve it too).
    drop(client);
    // The first server's own tasks would otherwise run on through the counts below (its serving
    // watch looks at the store on every tick; docs/benchmarks.md, "The first server ran on").
    background.end()?;
    serve.response_cache_mb = 0;
    let (background, bound) = Background::serve(path, serve).await?;
    let mut client = Client::connect(bound, token).await?;
    let evidence = format!("/v1/daos/{}/proposals/{}/{}/evidence", largest.dao_id, largest.source, largest.external_id);
    let title: String = serde_urlencoded::to_string([("title", largest.title.as_str())])?;
    let lookup = format!("/v1/proposals/lookup?{title}");
    let call = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "v1_daos_list", "arguments": {} },
    })
    .to_string();
    // Warm: each statement is prepared once per connection of the store's pool, on its first use
    // there, and the pool hands its idle connections out in turn, so which request finds a
    // statement not yet prepared where it runs depends on how many connections every earlier
    // request took. With one round of each case, SQLite's `sqlite3_prepare_v3` ran inside 31 of
    // the 36 counts of these cases (up to 942,875 instructions of one); after 24 rounds of every
    // case, in the order they are counted, and with the whole pool open, inside 2 and 4 of 36
    // (2026-11-29, docs/benchmarks.md): the least of [`REPEAT`] counts leaves those out. The
    // votes page is warmed at a cursor (the walk's last, not one of those counted): its
    // statement is not the first page's.
    let deep = super::page_url(&votes, cursors.last().and_then(|c| c.as_deref()));
    for _ in 0..WARM_ROUNDS {
        request(&mut client, &background, None, &deep, None).await?;
        request(&mut client, &background, None, &evidence, None).await?;
        request(&mut client, &background, None, &lookup, None).await?;
        request(&mut client, &background, None, "/mcp", Some(&call)).await?;
    }
    for (n, cursor) in cursors.iter().skip(1).take(REPEAT).enumerate() {
        let url = super::page_url(&votes, cursor.as_deref());
        request(&mut client, &background, Some(&format!("votes_page_uncached#{n}")), &url, None).await?;
    }
    for n in 0..REPEAT {
        request(&mut client, &background, Some(&format!("evidence_largest#{n}")), &evidence, None).await?;
        request(&mut client, &background, Some(&format!("lookup_by_title#{n}")), &lookup, None).await?;
        request(&mut client, &background, Some(&format!("mcp_tools_call#{n}")), "/mcp", Some(&call)).await?;
    }
    Ok(())
}

/// One feed entry fanned out to 1,000 subscriptions: enqueued, then its message rendered and
/// signed for each, as the sender would before posting (nothing is sent).
async fn fanout(path: &Path) -> anyhow::Result<()> {
    use govdata::push::{queue, sign};
    let db = store::connect(&sqlite(path)).await?;
    let now = 1_800_000_000_000;
    let (deliveries, signed) = counted("fanout_1000", async {
        let mut deliveries = 0;
        loop {
            let done = queue::enqueue(&db, now).await?;
            deliveries += done.deliveries;
            if !done.more {
                break;
            }
        }
        let newest = store::feed::newest(&db).await?;
        let records = queue::entries(&db, &[newest]).await?;
        let render = govdata::api::views::feed::webhook_entries();
        let rendered = render.render(db.clone(), records).await.map_err(|p| anyhow::anyhow!("{}", p.detail))?;
        let body = rendered.first().context("the entry renders")?;
        let stmt = Statement::from_string(
            db.get_database_backend(),
            "SELECT s.secret, d.msg_id FROM webhook_deliveries d JOIN webhook_subscriptions s \
             ON s.id = d.subscription_id ORDER BY d.id",
        );
        let mut signed = 0;
        for row in db.query_all_raw(stmt).await? {
            let (secret, msg_id): (String, String) = (row.try_get("", "secret")?, row.try_get("", "msg_id")?);
            std::hint::black_box(sign::signature(&[&secret], &msg_id, now / 1000, body.as_bytes()));
            signed += 1;
        }
        Ok((deliveries, signed))
    })
    .await?;
    if deliveries != SUBSCRIPTIONS as u64 || signed != SUBSCRIPTIONS {
        bail!("the fan-out enqueued {deliveries} and signed {signed}; {SUBSCRIPTIONS} subscriptions want the entry");
    }
    Ok(())
}

/// 1,000 more votes on the busiest synthetic proposal, published through the ingestion path.
async fn publication(db: &sea_orm::DatabaseConnection) -> anyhow::Result<()> {
    use govdata::store::apply::{SourceOutcome, Watermark, publish_run};
    use govdata::store::staging::{self, ProposalRef, Record, VoteRecord};
    let busiest = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(DAO))
        .order_by_desc(proposal::Column::IngestedVoteCount)
        .one(db)
        .await?
        .context("no synthetic proposal")?;
    let run = super::manual_run(db, DAO).await?;
    // Under Valgrind staging and publishing take minutes: the run beats, as an ingestion's does,
    // so that it is not taken for abandoned (`ingestion_run::STALE_AFTER`).
    let _beating =
        govdata::ingest::Heartbeat::start(db.clone(), run.id, govdata::store::entities::ingestion_run::HEARTBEAT);
    let records: Vec<Record> = (0..1000u64)
        .map(|i| {
            Record::Vote(VoteRecord {
                dao_id: DAO.to_owned(),
                proposal: ProposalRef { source: busiest.source, external_id: busiest.external_id.clone() },
                voter: format!("0x{:040x}", 0x000c_0575_0000_u64 + i),
                choice: (1 + i % 3).to_string(),
                voting_power: super::quantile_power(i),
                vp_from_float: busiest.source.power_from_float(),
                reason: None,
                created_ms: busiest.start_ms.unwrap_or(busiest.created_ms) + 1,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            })
        })
        .collect();
    staging::append(db, run.id, busiest.source.source(), &records).await?;
    let outcome = SourceOutcome {
        dao_id: DAO.to_owned(),
        source: busiest.source.source(),
        result: Ok(Watermark { data_as_of_ms: busiest.created_ms, position: None }),
        skipped: Vec::new(),
    };
    let report =
        counted("publication_1000_votes", async { Ok(publish_run(db, run.id, &[outcome], None).await?) }).await?;
    if report.votes.inserted != 1000 {
        bail!("the publication inserted {} votes, not 1,000", report.votes.inserted);
    }
    Ok(())
}

/// The synthetic DAO's votes exported whole, to Parquet and to CSV, as a build reads them: in a
/// view (opened uncounted) whose own connection reads the votes on one thread.
async fn exports(db: &sea_orm::DatabaseConnection, dir: &Path) -> anyhow::Result<()> {
    use govdata::contract::exports::{ExportFormat, VOTES as TABLE};
    use govdata::exports::{export_here, view::View, votes};
    for format in [ExportFormat::Parquet, ExportFormat::Csv] {
        let path = dir.join(format!("votes.{}", format.as_str()));
        let name = format!("export_votes_{}", format.as_str());
        let view = View::begin(db, true).await?;
        let snapshot = view.snapshot();
        if snapshot.is_none() {
            bail!("{name}: the view has no connection of its own for the votes");
        }
        let read = |out| votes::read(&view.txn, snapshot, DAO, out);
        let written = counted(&name, async { export_here(&path, &TABLE, format, read).await }).await;
        view.end().await?;
        let written = written?;
        if written.rows < VOTES {
            bail!("{name} wrote {} rows", written.rows);
        }
        std::fs::remove_file(&path).ok();
    }
    Ok(())
}
