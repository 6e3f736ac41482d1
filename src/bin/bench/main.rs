//! Scale benchmark over a store filled by `govdata synth` (up to tens of millions of votes).
//!
//! 1. **The store**: bytes per vote of the `votes` table and its indexes (SQLite `dbstat`,
//!    PostgreSQL `pg_total_relation_size`).
//! 2. **Publication**: an ingestion run that changes nothing (no revision is published), then a
//!    run that adds 1,000 votes to the busiest proposal (a revision recomputing what it touched),
//!    both through the ingestion path (`store::apply::publish_run`). Each bench run adds another
//!    1,000 votes from new voters.
//! 3. **Requests**: evidence of the busiest proposal and the v2 profile of the busiest voter,
//!    timed like the pages below.
//! 4. **Keyset pagination**: a page deep in a list must cost what the first page costs.
//!
//! Starts the real server in-process on 127.0.0.1:0 over the store named by `DATABASE_URL`
//! (fill it first with `govdata synth`), finds the synthetic DAO's busiest proposal, walks
//! `/v2/proposals/{key}/votes` and `/v2/daos/{dao}/voters` to their last page collecting cursors,
//! then times the first page, the middle page and the last page, interleaved, over one keep-alive
//! loopback connection. Prints a table; exits 1 when a deep page's median exceeds the first
//! page's by more than the allowed ratio.
//!
//! 5. **Governor history** (`--history-events N`, issue 29): the store's delegation changes and
//!    power checkpoints grown to N events (`history`), their bytes per event, an ingestion run
//!    appending 1,000 more, and the same page timings for the busiest delegate's power over time
//!    and delegation changes.
//!
//! 6. **Decoding** (`--decode`, issue 47): proposal actions decoded per second, one call and
//!    batches of 50, as ingestion decodes them (`decode`).
//! 7. **Simulation** (`--simulate`, issue 47): one proposal's simulated execution with revm over
//!    state read from a local anvil, for the governor tests' scenario (`simulate`).
//! 8. **Instruction counts** (`--costs-prepare DIR`, then `--costs DIR` under Callgrind; issue
//!    49): what `scripts/costs` runs and guards in CI (`costs`).
//!
//! ```sh
//! DATABASE_URL=sqlite:///tmp/bench.db cargo run --release -- synth
//! DATABASE_URL=sqlite:///tmp/bench.db cargo run --release --bin bench
//! DATABASE_URL=sqlite:///tmp/bench.db cargo run --release --bin bench -- --history-events 1000000
//! cargo run --release --bin bench -- --decode
//! cargo run --release --bin bench -- --simulate
//! ```
mod costs;
mod decode;
mod export;
mod history;
mod simulate;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use govdata::config::{DEFAULT_DATABASE_URL, ServeArgs, Settings};
use govdata::store::{
    self,
    entities::{proposal, voter_dao_stat},
};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Parser)]
#[command(
    name = "bench",
    about = "Times the first, a middle and the last keyset page of the vote list and the voter ranking"
)]
struct Args {
    /// The store (filled by `govdata synth`).
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    database_url: String,
    /// The DAO whose busiest proposal and voter ranking are paged.
    #[arg(long, default_value = "synthetic")]
    dao: String,
    /// Timed requests per page.
    #[arg(long, default_value_t = 30)]
    repeat: usize,
    /// Page size of the vote list.
    #[arg(long, default_value_t = 500)]
    votes_limit: u32,
    /// Page size of the voter ranking.
    #[arg(long, default_value_t = 100)]
    voters_limit: u32,
    /// A deep page's median may be at most this many times the first page's.
    #[arg(long, default_value_t = 1.2)]
    max_ratio: f64,
    /// Skip the publication runs (they add 1,000 votes to the store).
    #[arg(long)]
    no_publication: bool,
    /// Also measure the governor history, grown to this many delegation and checkpoint events.
    #[arg(long)]
    history_events: Option<u64>,
    /// Measure only the whole-table export of the DAO's votes (Parquet and CSV, against arrow-rs
    /// alone), writing the files in this directory.
    #[arg(long)]
    export: Option<std::path::PathBuf>,
    /// With `--export`: skip the export by keyset pages (the reader the view's own connection
    /// replaced, measured for the difference; on a 10M-vote store the slowest by far).
    #[arg(long, requires = "export")]
    export_without_pages: bool,
    /// Measure only the decoding of proposal actions at ingestion (no store is opened).
    #[arg(long)]
    decode: bool,
    /// Measure only the simulation of proposals on a local anvil (no store is opened; needs
    /// Node.js and `npm ci` in tests/chain).
    #[arg(long)]
    simulate: bool,
    /// Make the stores the instruction counts read, in this directory (run natively).
    #[arg(long)]
    costs_prepare: Option<std::path::PathBuf>,
    /// Count the guarded operations over the stores of `--costs-prepare`, each between
    /// Callgrind's start and stop (run under `valgrind --tool=callgrind --instr-atstart=no`).
    #[arg(long)]
    costs: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    govdata::allocator::no_huge_pages();
    govdata::allocator::purge_freed_soon();
    let args = Args::parse();
    if args.decode {
        return decode::run();
    }
    if args.simulate {
        return simulate::run().await;
    }
    if let Some(dir) = &args.costs_prepare {
        return costs::prepare(dir).await;
    }
    if let Some(dir) = args.costs.clone() {
        // On a runtime of one thread of its own: worker threads stealing each other's tasks
        // would make the count depend on how the threads were scheduled.
        return std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(costs::run(&dir))
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the counting thread panicked"))?;
    }
    let db = store::connect(&args.database_url).await.context("opening the store")?;
    let backend = store::backend_name(&db);
    let busiest = proposal::Entity::find()
        .filter(proposal::Column::DaoId.eq(&args.dao))
        .order_by_desc(proposal::Column::IngestedVoteCount)
        .one(&db)
        .await?
        .with_context(|| format!("DAO `{}` has no proposals: run `govdata synth` on this store first", args.dao))?;

    if let Some(dir) = &args.export {
        return export::run(&db, &args.dao, dir, !args.export_without_pages).await;
    }
    let (table, indexes, votes) = vote_bytes(&db).await?;
    println!(
        "store: {votes} votes; votes table {:.1} MB + its indexes {:.1} MB = {:.0} bytes per vote",
        table as f64 / 1e6,
        indexes as f64 / 1e6,
        (table + indexes) as f64 / votes.max(1) as f64
    );
    if !args.no_publication {
        publication_runs(&db, &busiest).await?;
    }
    let history = match args.history_events {
        Some(events) => {
            let h = history::ensure(&db, &args.dao, events).await?;
            history::report(&db, &h).await?;
            if !args.no_publication {
                history::publication(&db, &args.dao).await?;
            }
            Some(h)
        }
        None => None,
    };
    let busiest_voter: String = voter_dao_stat::Entity::find()
        .filter(voter_dao_stat::Column::DaoId.eq(&args.dao))
        .order_by_desc(voter_dao_stat::Column::VotesCast)
        .order_by_asc(voter_dao_stat::Column::Voter)
        .one(&db)
        .await?
        .context("the DAO has no voters")?
        .voter;

    let token = format!("bench-{}", uuid::Uuid::new_v4());
    let mut serve = ServeArgs::default();
    serve.payments.internal_token = Some(token.clone());
    // Repeated requests would otherwise be answered from the response cache: this measures the
    // store's keyset pages.
    serve.response_cache_mb = 0;
    let addr = "127.0.0.1:0".parse()?;
    let govdata::server::Listening { server, addr: bound, .. } =
        govdata::server::bind(db, addr, &|bound| Settings::from_args(&serve, bound)).await?;
    tokio::spawn(server);
    let mut client = Client::connect(bound, &token).await?;

    println!(
        "store: {backend}; dao `{}`; busiest proposal {} with {} votes; {} timed requests per page",
        args.dao, busiest.proposal_key, busiest.ingested_vote_count, args.repeat
    );
    let mut lists = vec![
        ("proposal votes", format!("/v2/proposals/{}/votes?limit={}", busiest.proposal_key, args.votes_limit)),
        ("voter ranking", format!("/v2/daos/{}/voters?limit={}", args.dao, args.voters_limit)),
    ];
    if let Some(h) = &history {
        lists.push(("power over time", format!("/v2/voters/{}/power?daoId={}&limit=100", h.busiest, args.dao)));
        lists.push(("delegations", format!("/v2/voters/{}/delegations?side=delegate&limit=100", h.busiest)));
    }
    let single = [
        (
            "evidence (busiest proposal)",
            format!("/v1/daos/{}/proposals/{}/{}/evidence", args.dao, busiest.source, busiest.external_id),
        ),
        ("voter profile (busiest voter)", format!("/v2/voters/{busiest_voter}")),
    ];
    for (name, url) in &single {
        time_request(&mut client, name, url, args.repeat).await?;
    }
    let mut rows = Vec::new();
    for (name, base) in &lists {
        rows.extend(time_pages(&mut client, name, base, args.repeat).await?);
    }
    if print_rows(&lists, &rows, args.max_ratio) {
        eprintln!("a deep page's median exceeds the first page's by more than {:.0} %", (args.max_ratio - 1.0) * 100.0);
        std::process::exit(1);
    }
    println!("ok: every deep page is within {:.0} % of the first page", (args.max_ratio - 1.0) * 100.0);
    Ok(())
}

/// Times `repeat` requests of one page and prints their median and 90th percentile.
async fn time_request(client: &mut Client, name: &str, url: &str, repeat: usize) -> anyhow::Result<()> {
    let mut s = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let started = Instant::now();
        std::hint::black_box(client.get(url).await?);
        s.push(started.elapsed());
    }
    s.sort();
    println!("{name}: median {:.3} ms, p90 {:.3} ms", ms(pct(&s, 50)), ms(pct(&s, 90)));
    Ok(())
}

/// Walks the list at `base` to its last page, then times its first, middle and last pages,
/// interleaved so that a drift of the machine weighs on all three alike.
async fn time_pages(client: &mut Client, name: &'static str, base: &str, repeat: usize) -> anyhow::Result<Vec<Row>> {
    let walk = Instant::now();
    let cursors = client.walk(base).await?;
    let pages = cursors.len();
    println!("{name}: walked {pages} pages in {:.1} s", walk.elapsed().as_secs_f64());
    // Page n (1-based) is requested with the cursor returned by page n - 1.
    let picks = [("first", 1), ("middle", pages.div_ceil(2)), ("last", pages)];
    let urls: Vec<String> = picks.iter().map(|&(_, n)| page_url(base, cursors[n - 1].as_deref())).collect();
    let mut samples = vec![Vec::with_capacity(repeat); urls.len()];
    for _ in 0..repeat {
        for (i, url) in urls.iter().enumerate() {
            let started = Instant::now();
            let body = client.get(url).await?;
            samples[i].push(started.elapsed());
            std::hint::black_box(body);
        }
    }
    let mut rows = Vec::new();
    for ((label, n), mut s) in picks.into_iter().zip(samples) {
        s.sort();
        rows.push(Row { list: name, label, page: n, pages, median: pct(&s, 50), p90: pct(&s, 90) });
    }
    Ok(rows)
}

/// Prints the page timings as a table, each page against its list's first; whether a deep page's
/// median exceeds the first page's by more than `max_ratio`.
fn print_rows(lists: &[(&str, String)], rows: &[Row], max_ratio: f64) -> bool {
    println!();
    println!("{:<16} {:<7} {:>12} {:>11} {:>9} {:>8}", "list", "page", "n / pages", "median ms", "p90 ms", "vs p1");
    let mut failed = false;
    for (name, _) in lists {
        let first = rows.iter().find(|r| r.list == *name && r.page == 1).map(|r| r.median).unwrap_or_default();
        for r in rows.iter().filter(|r| r.list == *name) {
            let ratio = r.median.as_secs_f64() / first.as_secs_f64().max(1e-9);
            let over = r.page > 1 && ratio > max_ratio;
            failed |= over;
            println!(
                "{:<16} {:<7} {:>12} {:>11.3} {:>9.3} {:>7.2}x{}",
                r.list,
                r.label,
                format!("{} / {}", r.page, r.pages),
                ms(r.median),
                ms(r.p90),
                ratio,
                if over { "  OVER" } else { "" }
            );
        }
    }
    failed
}

/// Bytes of the `votes` table and of its indexes, and its row count.
async fn vote_bytes(db: &sea_orm::DatabaseConnection) -> anyhow::Result<(i64, i64, i64)> {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    let backend = db.get_database_backend();
    let one = |sql: &str| Statement::from_string(backend, sql.to_owned());
    let (table_sql, all_sql) = match backend {
        DbBackend::Sqlite => (
            "SELECT SUM(pgsize) AS n FROM dbstat WHERE name = 'votes'",
            "SELECT SUM(pgsize) AS n FROM dbstat WHERE name = 'votes'
               OR name IN (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'votes')",
        ),
        _ => ("SELECT pg_table_size('votes') AS n", "SELECT pg_total_relation_size('votes') AS n"),
    };
    let get = |row: Option<sea_orm::QueryResult>| -> anyhow::Result<i64> {
        Ok(row.context("no row")?.try_get::<Option<i64>>("", "n")?.unwrap_or(0))
    };
    let table = get(db.query_one_raw(one(table_sql)).await?)?;
    let all = get(db.query_one_raw(one(all_sql)).await?)?;
    let votes = get(db.query_one_raw(one("SELECT COUNT(*) AS n FROM votes")).await?)?;
    Ok((table, all - table, votes))
}

/// Two ingestion runs through the publication path: one that changes nothing, one that adds
/// 1,000 votes from new voters to `busiest`.
async fn publication_runs(db: &sea_orm::DatabaseConnection, busiest: &proposal::Model) -> anyhow::Result<()> {
    use govdata::store::apply::{SourceOutcome, Watermark, publish_run};
    use govdata::store::staging::{self, ProposalRef, Record, VoteRecord};
    let now = govdata::contract::time::now_ms();
    let outcome = || SourceOutcome {
        dao_id: busiest.dao_id.clone(),
        source: busiest.source.source(),
        result: Ok(Watermark { data_as_of_ms: govdata::contract::time::now_ms(), position: None }),
        skipped: Vec::new(),
    };
    let new_run = || manual_run(db, &busiest.dao_id);

    let run = new_run().await?;
    let started = Instant::now();
    let report = publish_run(db, run.id, &[outcome()], None).await?;
    println!(
        "publication, nothing changed: {:.3} s ({})",
        started.elapsed().as_secs_f64(),
        match report.revision_id {
            Some(r) => format!("published revision {r}"),
            None => "no revision published".to_owned(),
        }
    );

    let run = new_run().await?;
    // The votes are flagged as every writer flags votes of the proposal's source.
    let from_float = busiest.source.power_from_float();
    let records: Vec<Record> = (0..1000u64)
        .map(|i| {
            Record::Vote(VoteRecord {
                dao_id: busiest.dao_id.clone(),
                proposal: ProposalRef { source: busiest.source, external_id: busiest.external_id.clone() },
                voter: format!("0x{:024x}{:016x}", now, i),
                choice: (1 + i % 3).to_string(),
                voting_power: quantile_power(i),
                vp_from_float: from_float,
                reason: None,
                created_ms: busiest.start_ms.unwrap_or(busiest.created_ms) + 1,
                ipfs: None,
                tx_hash: None,
                block_number: None,
            })
        })
        .collect();
    staging::append(db, run.id, busiest.source.source(), &records).await?;
    let started = Instant::now();
    let report = publish_run(db, run.id, &[outcome()], None).await?;
    println!(
        "publication, 1000 new votes on the busiest proposal: {:.3} s (revision {:?}, {} votes inserted)",
        started.elapsed().as_secs_f64(),
        report.revision_id,
        report.votes.inserted
    );
    Ok(())
}

/// The power of the bench's vote `i` of 1,000: the `(i + 0.5) / 1000` quantile of the heavy tail
/// `govdata synth` draws voters' power from. The added votes then spread over the power order as
/// the stored ones do; with powers above almost every stored vote they made up the first page of
/// the busiest proposal by themselves (rows written together, read from a few cached heap
/// pages), and timed that page, not the store's.
fn quantile_power(i: u64) -> String {
    use govdata::sample::synth::{micro_text, power_micro};
    micro_text(u128::from(power_micro((i as f64 + 0.5) / 1000.0)))
}

/// A manual ingestion run of `dao`, running: what a bench run stages its records under.
async fn manual_run(
    db: &sea_orm::DatabaseConnection,
    dao: &str,
) -> anyhow::Result<govdata::store::entities::ingestion_run::Model> {
    let options = govdata::ingest::RunOptions { dao: Some(dao.to_owned()), ..Default::default() };
    govdata::ingest::start_run(db, &options).await
}

struct Row {
    list: &'static str,
    label: &'static str,
    page: usize,
    pages: usize,
    median: Duration,
    p90: Duration,
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    let i = ((sorted.len() * p).div_ceil(100)).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn page_url(base: &str, cursor: Option<&str>) -> String {
    match cursor {
        Some(c) => format!("{base}&{}", serde_urlencoded::to_string([("cursor", c)]).expect("a string encodes")),
        None => base.to_owned(),
    }
}

/// A minimal HTTP/1.1 keep-alive client: one connection, GET only, so the timings hold only the
/// server's work and the loopback round trip.
struct Client {
    stream: BufReader<TcpStream>,
    host: String,
    token: String,
}

impl Client {
    async fn connect(addr: std::net::SocketAddr, token: &str) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream: BufReader::new(stream), host: addr.to_string(), token: token.to_owned() })
    }

    /// Every page of a list: entry n is the cursor that requests page n + 1 (`None` for page 1).
    async fn walk(&mut self, base: &str) -> anyhow::Result<Vec<Option<String>>> {
        let mut cursors = vec![None];
        loop {
            let body = self.get(&page_url(base, cursors.last().expect("not empty").as_deref())).await?;
            let page: serde_json::Value = serde_json::from_slice(&body)?;
            match page.pointer("/meta/page/nextCursor").and_then(|c| c.as_str()) {
                Some(next) => cursors.push(Some(next.to_owned())),
                None => return Ok(cursors),
            }
        }
    }

    async fn get(&mut self, path: &str) -> anyhow::Result<Vec<u8>> {
        let request = format!(
            "GET {path} HTTP/1.1\r\nhost: {}\r\naccept: application/json\r\nx-internal-token: {}\r\n\r\n",
            self.host, self.token
        );
        self.send(path, &request).await
    }

    /// A JSON-RPC request to `/mcp` (protocol 2025-11-25, no session).
    async fn post_mcp(&mut self, body: &str) -> anyhow::Result<Vec<u8>> {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, \
             text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\nx-internal-token: {}\r\ncontent-length: {}\r\n\r\n{body}",
            self.host,
            self.token,
            body.len()
        );
        self.send("/mcp", &request).await
    }

    async fn send(&mut self, path: &str, request: &str) -> anyhow::Result<Vec<u8>> {
        self.stream.get_mut().write_all(request.as_bytes()).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).context("no HTTP status line")?;
        let (mut length, mut chunked) = (None, false);
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.parse::<usize>()?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim_end().split(';').next().unwrap_or(""), 16)?;
                let start = body.len();
                body.resize(start + size + 2, 0);
                self.stream.read_exact(&mut body[start..]).await?;
                body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        } else {
            body.resize(length.context("response without content-length")?, 0);
            self.stream.read_exact(&mut body).await?;
        }
        if status != 200 {
            bail!("{path}: HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(body)
    }
}
