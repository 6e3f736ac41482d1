//! `soak webhooks`: the feed pushed to many receivers (`POST /v2/webhooks`), all on loopback.
//!
//! - **Fan-out.** One `govdata serve`; receivers on 127.0.0.1, each subscribed once; a
//!   publication (`govdata synth` in another process, as an ingester would) of about 10,000 feed
//!   entries. Measures the publication's time against the same publication before any webhook
//!   existed, the deliveries per second from the publisher's exit until every receiver has every
//!   entry, and the server's peak RSS. With `--kill`, the server is killed (SIGKILL) a third of
//!   the way through and started again on the same store: every entry must still arrive (the
//!   leases of the killed process run out, `CLAIM_LEASE`), duplicates are counted.
//! - **`--day`**: a receiver down for a day, on a simulated clock: the sender runs in this
//!   process with a clock that moves a minute every few milliseconds; the receiver answers 503
//!   for the first 24 simulated hours. Every entry must arrive once it is back (the standard's
//!   schedule reaches past a day), none lost; duplicates and attempts are counted.
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::{EndpointExt, Request, Response};
use tokio::process::Command;

use super::Server;

pub struct Plan {
    pub receivers: usize,
    /// Proposals and votes of the synthetic DAO the publication adds (its feed entries follow).
    pub proposals: u64,
    pub votes: u64,
    pub kill: bool,
}

/// What the receivers got: each message id once, and every delivery.
#[derive(Default)]
struct Tally {
    unique: Mutex<HashSet<u64>>,
    total: AtomicU64,
}

impl Tally {
    fn unique(&self) -> usize {
        self.unique.lock().expect("never poisoned").len()
    }
}

/// A receiver on 127.0.0.1:0 answering 204 (or 503 while `down` says so), counting into `tally`.
async fn receiver(tally: Arc<Tally>, down: Arc<dyn Fn() -> bool + Send + Sync>) -> anyhow::Result<String> {
    let endpoint = poem::endpoint::make(move |req: Request| {
        let (tally, down) = (tally.clone(), down.clone());
        async move {
            if down() {
                return Response::builder().status(poem::http::StatusCode::SERVICE_UNAVAILABLE).body("");
            }
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            req.header("webhook-id").unwrap_or_default().hash(&mut hasher);
            let _ = req.into_body().into_bytes().await;
            tally.total.fetch_add(1, Ordering::Relaxed);
            tally.unique.lock().expect("never poisoned").insert(hasher.finish());
            Response::builder().status(poem::http::StatusCode::NO_CONTENT).body("")
        }
    });
    let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await?;
    let addr = acceptor.local_addr()[0].as_socket_addr().copied().context("a socket address")?;
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(endpoint.map_to_response()));
    Ok(format!("http://{addr}/hook"))
}

/// Runs `govdata synth` for `dao`: its wall time, the feed entries it published, and its own
/// account of its phases (`generate …, write …, publish …`).
async fn synth(govdata: &std::path::Path, url: &str, dao: &str, plan: &Plan) -> anyhow::Result<(f64, i64, String)> {
    let started = Instant::now();
    let out = Command::new(govdata)
        .args(["synth", "--votes", &plan.votes.to_string(), "--voters", &(plan.votes / 2).to_string()])
        .args(["--proposals", &plan.proposals.to_string(), "--dao", dao])
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .output()
        .await?;
    if !out.status.success() {
        bail!("govdata synth failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let took = started.elapsed().as_secs_f64();
    let phases = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("generate"))
        .map(|l| l.trim().to_owned())
        .unwrap_or_default();
    let db = govdata::store::connect(url).await?;
    let entries = feed_entries_of(&db, dao).await?;
    Ok((took, entries, phases))
}

async fn feed_entries_of(db: &sea_orm::DatabaseConnection, dao: &str) -> anyhow::Result<i64> {
    use sea_orm::{ConnectionTrait, Statement};
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT COUNT(*) AS n FROM feed_entries WHERE dao_id = $1",
        [dao.into()],
    );
    let row = db.query_one_raw(stmt).await?.context("a count")?;
    Ok(row.try_get::<i64>("", "n")?)
}

pub async fn run(govdata: &std::path::Path, url: &str, plan: Plan) -> anyhow::Result<()> {
    let internal = format!("soak-internal-{}", std::process::id());
    let env = super::webhook_env(&internal);
    let mut server = Server::start(govdata, url, &env).await?;
    // The same publication before any webhook exists: the baseline of its time.
    // Twice: each publication adds a DAO to a growing store, so the second is the fair baseline of
    // the third (and the two show the run-to-run spread).
    let mut baseline = 0.0;
    for run in 1..=2 {
        let (took, base_entries, base_phases) =
            synth(govdata, url, &format!("whbase{run}x{}", std::process::id()), &plan).await?;
        println!(
            "publication {run} without webhooks: {base_entries} feed entries in {took:.2} s (govdata synth: {base_phases})"
        );
        baseline = took;
    }

    let tally = Arc::new(Tally::default());
    let client = server.client();
    let mut ids = Vec::with_capacity(plan.receivers);
    for i in 0..plan.receivers {
        let hook = receiver(tally.clone(), Arc::new(|| false)).await?;
        let answer = client
            .post(format!("{}/v2/webhooks", server.base))
            .json(&serde_json::json!({ "url": hook, "description": format!("soak receiver {i}") }))
            .send()
            .await?;
        if answer.status() != 201 {
            bail!("subscribing receiver {i}: {} {}", answer.status(), answer.text().await.unwrap_or_default());
        }
        let created: serde_json::Value = answer.json().await?;
        ids.push(created["data"]["id"].as_str().context("the webhook's id")?.to_owned());
    }
    let idle = server.rss_mib().context("the server's RSS")?;
    println!("{} receivers subscribed; server RSS {idle:.1} MiB", plan.receivers);

    let dao = format!("whrun{}", std::process::id());
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (peak, pid) = (peak.clone(), server.child.id().context("a pid")?);
        tokio::spawn(async move { sample_rss(pid, peak).await })
    };
    let (took, entries, phases) = synth(govdata, url, &dao, &plan).await?;
    let exited = Instant::now();
    let expected = entries as usize * plan.receivers;
    println!(
        "publication with {} webhooks: {entries} feed entries in {took:.2} s ({:+.1} % against {baseline:.2} s; \
         govdata synth: {phases})",
        plan.receivers,
        (took / baseline - 1.0) * 100.0
    );
    let mut killed = false;
    let mut last_report = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(1_800);
    while tally.unique() < expected {
        if Instant::now() > deadline {
            bail!("{} of {expected} deliveries after 30 minutes", tally.unique());
        }
        if plan.kill && !killed && tally.unique() >= expected / 3 {
            killed = true;
            let pid = server.child.id().context("a pid")?;
            // SIGKILL: no drain, no recording of the attempts in flight.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let _ = server.child.wait().await;
            println!("killed the server (SIGKILL) at {} of {expected} deliveries; starting it again", tally.unique());
            sampler.abort();
            server = Server::start(govdata, url, &env).await?;
            let (peak, pid) = (peak.clone(), server.child.id().context("a pid")?);
            tokio::spawn(async move { sample_rss(pid, peak).await });
        }
        if last_report.elapsed() >= Duration::from_secs(5) {
            last_report = Instant::now();
            println!("  {:>9} of {expected} after {:.1} s", tally.unique(), exited.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = exited.elapsed().as_secs_f64();
    let total = tally.total.load(Ordering::Relaxed);
    println!(
        "all {expected} deliveries ({entries} entries × {} receivers) arrived {elapsed:.1} s after the publisher exited: \
         {:.0} deliveries/s; {} duplicates; peak server RSS {:.1} MiB",
        plan.receivers,
        expected as f64 / elapsed,
        total as usize - expected,
        peak.load(Ordering::Relaxed) as f64 / 1024.0
    );
    if !plan.kill {
        // The same publication once more, the webhooks deleted and their deliveries done: each
        // publication adds a DAO to a growing store (and `govdata synth` publishes it whole), so
        // the publication with webhooks is compared with the mean of the ones around it.
        for id in &ids {
            let answer = client.delete(format!("{}/v2/webhooks/{id}", server.base)).send().await?;
            if !answer.status().is_success() {
                bail!("deleting webhook {id}: {}", answer.status());
            }
        }
        let (after, after_entries, after_phases) =
            synth(govdata, url, &format!("whafter{}", std::process::id()), &plan).await?;
        let around = (baseline + after) / 2.0;
        println!(
            "publication after the webhooks were deleted: {after_entries} feed entries in {after:.2} s (govdata synth: \
             {after_phases}); the publication with webhooks took {:+.1} % against the mean of the two around it \
             ({around:.2} s)",
            (took / around - 1.0) * 100.0
        );
    }
    Ok(())
}

/// Keeps the highest RSS (KiB) of process `pid` in `peak`, sampled every 100 ms.
async fn sample_rss(pid: u32, peak: Arc<AtomicU64>) {
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            && let Some(kib) = status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok())
        {
            peak.fetch_max(kib, Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A receiver down for a simulated day, then back.
pub async fn day(url: &str, plan: Plan) -> anyhow::Result<()> {
    use govdata::store::{tokens, webhooks as subscriptions};
    const MINUTE: i64 = 60_000;
    let db = govdata::store::connect(url).await?;
    let start = govdata::contract::time::now_ms();
    let clock = Arc::new(AtomicI64::new(start));
    let back_at = start + 24 * 60 * MINUTE;
    let tally = Arc::new(Tally::default());
    let refused = Arc::new(AtomicU64::new(0));
    let down = {
        let (clock, refused) = (clock.clone(), refused.clone());
        Arc::new(move || {
            let down = clock.load(Ordering::Relaxed) < back_at;
            if down {
                refused.fetch_add(1, Ordering::Relaxed);
            }
            down
        })
    };
    let hook = receiver(tally.clone(), down).await?;
    let (token, _) = tokens::create(&db, "day", &["v2:paid:standard"], None, start).await?;
    subscriptions::create(&db, token.id, &subscriptions::Target { url: hook, ..Default::default() }, start)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let dao = format!("whday{}", std::process::id());
    let spec = govdata::sample::synth::SynthSpec {
        votes: plan.votes,
        voters: plan.votes / 2,
        proposals: plan.proposals,
        dao_id: dao.clone(),
        ..Default::default()
    };
    govdata::sample::synth::synth(&db, &spec).await?;
    let entries = feed_entries_of(&db, &dao).await? as usize;
    let wake = Arc::new(tokio::sync::Notify::new());
    let sim = clock.clone();
    let options = govdata::push::dispatch::Options {
        reach: govdata::push::guard::Reach { allow_private: true },
        resolver: govdata::push::guard::resolver(None),
        loopback_only: true,
        poll: Duration::from_millis(2),
        public_url: "http://127.0.0.1".to_owned(),
        clock: Arc::new(move || sim.load(Ordering::Relaxed)),
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    govdata::push::dispatch::Dispatcher::start(
        db.clone(),
        govdata::api::views::feed::webhook_entries(),
        options,
        wake.clone(),
        async {
            let _ = stop_rx.await;
        },
    );
    println!("{entries} feed entries published at simulated 0 h; the receiver answers 503 until 24 h");
    let real = Instant::now();
    // The clock moves a simulated minute at a time, and only once no attempt due by then is
    // still waiting to be made or recorded: each scheduled retry is made in its minute, however
    // long the sender takes in real time.
    while tally.unique() < entries {
        let now = clock.load(Ordering::Relaxed);
        if due(&db, now).await? > 0 {
            wake.notify_one();
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        }
        clock.store(now + MINUTE, Ordering::Relaxed);
        wake.notify_one();
        if now - start > 5 * 24 * 60 * MINUTE {
            bail!("{} of {entries} entries arrived in five simulated days", tally.unique());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let at_h = (clock.load(Ordering::Relaxed) - start) as f64 / (60.0 * MINUTE as f64);
    let _ = stop_tx.send(());
    let total = tally.total.load(Ordering::Relaxed) as usize;
    let s = &subscriptions::list(&db, None).await?[0];
    println!(
        "all {entries} entries arrived by simulated {at_h:.1} h ({:.1} s real): none lost, {} duplicates; {} attempts \
         refused while down ({:.1} per entry); the webhook stayed {}",
        real.elapsed().as_secs_f64(),
        total - entries,
        refused.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed) as f64 / entries as f64,
        if s.enabled { "enabled" } else { "disabled" }
    );
    if total < entries {
        bail!("entries lost");
    }
    Ok(())
}

/// Deliveries due at `now_ms` not yet made, or made and not yet recorded.
async fn due(db: &sea_orm::DatabaseConnection, now_ms: i64) -> anyhow::Result<i64> {
    use sea_orm::{ConnectionTrait, Statement};
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_ms <= $1",
        [now_ms.into()],
    );
    let row = db.query_one_raw(stmt).await?.context("a count")?;
    Ok(row.try_get::<i64>("", "n")?)
}

/// The scraped value of counter `name` (without labels) on `server`'s `/metrics`.
async fn counter(server: &Server, internal: &str, name: &str) -> anyhow::Result<f64> {
    let text = server.metrics(internal).await?;
    let prefix = format!("{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .with_context(|| format!("{name} on /metrics"))
}

/// `--targeted N`: N webhook subscriptions that target (issue 48), for one publication of the
/// plan's size: N − 100 each watching one voter of the DAO about to be published (voter k for
/// k < N − 100: the first `votes / 2` of them vote in it, the others never do), 90 watching its
/// `proposal_created` entries, 10 watching everything; spread over 10 receivers. Every delivery
/// the filters want must arrive (the expected count is computed here from the entries' kinds and
/// voters, independently of the server); it prints deliveries per second from the publisher's
/// exit, and the subscriptions the fan-out read per entry (the server's counters), against N.
pub async fn targeted(govdata: &std::path::Path, url: &str, plan: Plan, subscriptions: usize) -> anyhow::Result<()> {
    use govdata::contract::{feed::FeedKind, vocabulary::DaoId, webhooks::MAX_SUBSCRIPTIONS_PER_TOKEN};
    use govdata::store::{tokens, webhooks as subs};
    use sea_orm::{ConnectionTrait, Statement};

    const BY_KIND: usize = 90;
    const EVERYTHING: usize = 10;
    const RECEIVERS: usize = 10;
    anyhow::ensure!(subscriptions > BY_KIND + EVERYTHING, "--targeted takes more than {}", BY_KIND + EVERYTHING);
    let internal = format!("soak-internal-{}", std::process::id());
    let server = Server::start(govdata, url, &super::webhook_env(&internal)).await?;
    let db = govdata::store::connect(url).await?;
    let tally = Arc::new(Tally::default());
    let mut hooks = Vec::new();
    for _ in 0..RECEIVERS {
        hooks.push(receiver(tally.clone(), Arc::new(|| false)).await?);
    }
    let dao = format!("whtarget{}", std::process::id());
    let dao_id = DaoId::parse(&dao).context("a DAO id")?;
    let by_voter = subscriptions - BY_KIND - EVERYTHING;
    let watched: HashSet<String> = (0..by_voter as u64).map(|k| govdata::sample::synth::hex_address(&dao, k)).collect();
    let made = Instant::now();
    let mut token = None;
    for i in 0..subscriptions {
        if i % MAX_SUBSCRIPTIONS_PER_TOKEN as usize == 0 {
            token = Some(tokens::create(&db, &format!("targeted {i}"), &["v2:paid:standard"], None, 0).await?.0.id);
        }
        let filters = if i < by_voter {
            subs::Filters::default().with_voters(vec![govdata::sample::synth::hex_address(&dao, i as u64)])
        } else if i < by_voter + BY_KIND {
            subs::Filters::new(vec![dao_id.clone()], vec![FeedKind::ProposalCreated])
        } else {
            subs::Filters::default()
        };
        let target = subs::Target { url: hooks[i % RECEIVERS].clone(), filters, ..Default::default() };
        subs::create(&db, token.context("a token")?, &target, govdata::contract::time::now_ms())
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    println!(
        "{subscriptions} subscriptions ({by_voter} by one voter, {BY_KIND} by DAO and kind, {EVERYTHING} unfiltered) \
         made in {:.1} s, over {RECEIVERS} receivers",
        made.elapsed().as_secs_f64()
    );
    let fanout = |name: &'static str| counter(&server, &internal, name);
    let (entries_before, touched_before, enqueued_before) = (
        fanout("govdata_webhook_fanout_entries_total").await?,
        fanout("govdata_webhook_fanout_subscriptions_touched_total").await?,
        fanout("govdata_webhook_deliveries_enqueued_total").await?,
    );

    let (took, entries, phases) = synth(govdata, url, &dao, &plan).await?;
    let exited = Instant::now();
    println!("publication: {entries} feed entries in {took:.2} s (govdata synth: {phases})");
    // What the filters want, from the entries themselves.
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT e.seq, e.kind, v.voter FROM feed_entries e LEFT JOIN feed_entry_voters v ON v.seq = e.seq \
         WHERE e.dao_id = $1 ORDER BY e.seq",
        [dao.as_str().into()],
    );
    let mut kinds: std::collections::BTreeMap<i64, String> = std::collections::BTreeMap::new();
    let mut voter_matches = 0usize;
    for row in db.query_all_raw(stmt).await? {
        let seq: i64 = row.try_get("", "seq")?;
        kinds.insert(seq, row.try_get("", "kind")?);
        if let Some(voter) = row.try_get::<Option<String>>("", "voter")?
            && watched.contains(&voter)
        {
            voter_matches += 1;
        }
    }
    let created = kinds.values().filter(|k| k.as_str() == FeedKind::ProposalCreated.as_str()).count();
    let expected = voter_matches + BY_KIND * created + EVERYTHING * kinds.len();
    let deadline = Instant::now() + Duration::from_secs(1_800);
    let mut last_report = Instant::now();
    while tally.unique() < expected {
        if Instant::now() > deadline {
            bail!("{} of {expected} deliveries after 30 minutes", tally.unique());
        }
        if last_report.elapsed() >= Duration::from_secs(5) {
            last_report = Instant::now();
            println!("  {:>9} of {expected} after {:.1} s", tally.unique(), exited.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = exited.elapsed().as_secs_f64();
    // Whatever else would come has come by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let total = tally.total.load(Ordering::Relaxed) as usize;
    let fanned = fanout("govdata_webhook_fanout_entries_total").await? - entries_before;
    let touched = fanout("govdata_webhook_fanout_subscriptions_touched_total").await? - touched_before;
    let enqueued = fanout("govdata_webhook_deliveries_enqueued_total").await? - enqueued_before;
    println!(
        "all {expected} wanted deliveries ({voter_matches} to voter watchers, {} by kind, {} unfiltered) arrived \
         {elapsed:.1} s after the publisher exited: {:.0} deliveries/s; {} more than wanted",
        BY_KIND * created,
        EVERYTHING * kinds.len(),
        expected as f64 / elapsed,
        total as i64 - expected as i64
    );
    println!(
        "fan-out: {fanned} entries, {touched} subscriptions read ({:.1} per entry, of {subscriptions}), {enqueued} \
         deliveries enqueued ({:.1} per entry)",
        touched / fanned.max(1.0),
        enqueued / fanned.max(1.0)
    );
    if total != expected || enqueued as usize != expected {
        bail!("{total} deliveries arrived and {enqueued} were enqueued; the filters want {expected}");
    }
    Ok(())
}
