//! `soak latency`: how long a feed entry takes from its publication to a receiver's 2xx, per
//! webhook format, all on loopback.
//!
//! One `govdata serve`; three receivers on 127.0.0.1, one per format, each answering as its
//! service does (Standard Webhooks 204, Slack 200 `ok`, Discord 204), each subscribed once
//! (`POST /v2/webhooks` with its `format`). This program then publishes `--publications` small
//! publications into the same store (a synthetic DAO each, `sample::synth`, as an ingester
//! would), `--every` apart so that each is delivered before the next: latency, not throughput.
//! A delivery's latency is the receiver's clock when the message arrived minus, first, the time
//! the entry's publication committed: the moment this program's poller (a read of the newest
//! revision every 2 ms, on its own connection) first saw the revision, so within a few
//! milliseconds after the commit; and second, the entry's `published_ms` (`publishedAt`, stamped
//! as its publication starts: the publication's own work is in it), what the server's histogram
//! `govdata_webhook_delivery_latency_seconds` measures from. Both clocks are this machine's.
//! Prints p50, p90, p99 and the maximum per format from each, and the server's histogram's count
//! and mean for comparison.
//!
//! On SQLite the server learns of another process's publication at its serving watch's next tick
//! (`edge::serving::WATCH_INTERVAL`); on PostgreSQL by NOTIFY, at once: run both.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::{EndpointExt, Request, Response};

use super::Server;

pub struct Plan {
    pub publications: usize,
    /// Proposals and votes of each publication's synthetic DAO.
    pub proposals: u64,
    pub votes: u64,
    pub every: Duration,
}

/// The formats measured, as `POST /v2/webhooks` names them.
const FORMATS: [&str; 3] = ["standard_webhooks", "slack", "discord"];

/// When each message arrived (wall clock, ms), by feed sequence.
type Arrivals = Arc<Mutex<HashMap<i64, i64>>>;

/// The feed sequence a message of `format` names.
fn sequence(format: &str, body: &str) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let (text, marker) = match format {
        "standard_webhooks" => return v["data"]["sequence"].as_str()?.parse().ok(),
        "slack" => (v["blocks"].as_array()?.last()?["text"]["text"].as_str()?.to_owned(), "Feed entry "),
        _ => (v["embeds"][0]["footer"]["text"].as_str()?.to_owned(), "feed entry "),
    };
    let at = text.find(marker)? + marker.len();
    text[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// A receiver for `format` on 127.0.0.1:0, recording arrivals.
async fn receiver(format: &'static str, arrivals: Arrivals) -> anyhow::Result<String> {
    let endpoint = poem::endpoint::make(move |req: Request| {
        let arrivals = arrivals.clone();
        async move {
            let body = req.into_body().into_string().await.unwrap_or_default();
            let at = govdata::contract::time::now_ms();
            if let Some(seq) = sequence(format, &body) {
                arrivals.lock().expect("never poisoned").entry(seq).or_insert(at);
            }
            match format {
                "slack" => Response::builder().status(poem::http::StatusCode::OK).body("ok"),
                _ => Response::builder().status(poem::http::StatusCode::NO_CONTENT).body(""),
            }
        }
    });
    let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await?;
    let addr = acceptor.local_addr()[0].as_socket_addr().copied().context("a socket address")?;
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(endpoint.map_to_response()));
    Ok(format!("http://{addr}/hook/{format}"))
}

/// The `q` quantile of sorted `values` (nearest rank).
fn quantile(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// An entry as published: its sequence, `published_ms` and revision.
struct Entry {
    seq: i64,
    published_ms: i64,
    revision: i64,
}

/// Entries published by DAO `dao`.
async fn published(db: &sea_orm::DatabaseConnection, dao: &str) -> anyhow::Result<Vec<Entry>> {
    use sea_orm::{ConnectionTrait, Statement};
    let stmt = Statement::from_sql_and_values(
        db.get_database_backend(),
        "SELECT seq, published_ms, revision_id FROM feed_entries WHERE dao_id = $1 ORDER BY seq",
        [dao.into()],
    );
    db.query_all_raw(stmt)
        .await?
        .iter()
        .map(|r| {
            Ok(Entry {
                seq: r.try_get::<i64>("", "seq")?,
                published_ms: r.try_get::<i64>("", "published_ms")?,
                revision: r.try_get::<i64>("", "revision_id")?,
            })
        })
        .collect()
}

/// When each revision was first seen committed (wall clock, ms): the newest revision read every
/// 2 ms on a connection of its own.
type Commits = Arc<Mutex<HashMap<i64, i64>>>;

async fn watch_commits(url: &str) -> anyhow::Result<(Commits, tokio::task::JoinHandle<()>)> {
    use sea_orm::{ConnectionTrait, Statement};
    let db = govdata::store::connect(url).await?;
    let seen: Commits = Arc::default();
    let kept = seen.clone();
    let task = tokio::spawn(async move {
        let sql = "SELECT MAX(id) AS id FROM data_revisions";
        loop {
            let stmt = Statement::from_string(db.get_database_backend(), sql);
            if let Ok(Some(row)) = db.query_one_raw(stmt).await
                && let Ok(Some(id)) = row.try_get::<Option<i64>>("", "id")
            {
                kept.lock().expect("never poisoned").entry(id).or_insert_with(govdata::contract::time::now_ms);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    Ok((seen, task))
}

/// p50, p90, p99 and the maximum of `latency` (ms), as a table's cells.
fn cells(mut latency: Vec<i64>) -> String {
    latency.sort_unstable();
    format!(
        "{:>7} {:>7} {:>7} {:>7}",
        quantile(&latency, 0.50),
        quantile(&latency, 0.90),
        quantile(&latency, 0.99),
        latency[latency.len() - 1]
    )
}

/// The server's own histogram of `format`: (count, sum in seconds).
async fn measured_by_server(server: &Server, internal: &str, format: &str) -> anyhow::Result<(f64, f64)> {
    let text = server.metrics(internal).await?;
    let series = |what: &str| {
        let name = format!("govdata_webhook_delivery_latency_seconds_{what}{{format=\"{format}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&name)).and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(0.0)
    };
    Ok((series("count"), series("sum")))
}

pub async fn run(govdata: &std::path::Path, url: &str, plan: Plan) -> anyhow::Result<()> {
    let internal = format!("soak-internal-{}", std::process::id());
    let server = Server::start(govdata, url, &super::webhook_env(&internal)).await?;
    let client = server.client();
    let mut arrivals: Vec<(&str, Arrivals)> = Vec::new();
    for format in FORMATS {
        let got: Arrivals = Arc::default();
        let hook = receiver(format, got.clone()).await?;
        let answer = client
            .post(format!("{}/v2/webhooks", server.base))
            .json(&serde_json::json!({ "url": hook, "format": format, "description": "soak latency" }))
            .send()
            .await?;
        if answer.status() != 201 {
            bail!("subscribing the {format} receiver: {} {}", answer.status(), answer.text().await.unwrap_or_default());
        }
        arrivals.push((format, got));
    }
    let db = govdata::store::connect(url).await?;
    let (commits, watcher) = watch_commits(url).await?;
    println!(
        "{} publications of {} proposals and {} votes each, {:?} apart, to one receiver per format ({})",
        plan.publications,
        plan.proposals,
        plan.votes,
        plan.every,
        match db.get_database_backend() {
            sea_orm::DbBackend::Postgres => "PostgreSQL",
            _ => "SQLite",
        }
    );
    let mut entries: Vec<Entry> = Vec::new();
    for i in 0..plan.publications {
        let dao = format!("lat{}x{i}", std::process::id());
        let spec = govdata::sample::synth::SynthSpec {
            votes: plan.votes,
            voters: (plan.votes / 2).max(1),
            proposals: plan.proposals,
            dao_id: dao.clone(),
            ..Default::default()
        };
        govdata::sample::synth::synth(&db, &spec).await?;
        entries.extend(published(&db, &dao).await?);
        tokio::time::sleep(plan.every).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while arrivals.iter().any(|(_, got)| {
        let got = got.lock().expect("never poisoned");
        entries.iter().any(|e| !got.contains_key(&e.seq))
    }) {
        if tokio::time::Instant::now() > deadline {
            bail!("not every entry arrived at every receiver within 2 minutes");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watcher.abort();
    let commits = commits.lock().expect("never poisoned").clone();
    let missed = entries.iter().filter(|e| !commits.contains_key(&e.revision)).count();
    if missed > 0 {
        bail!("{missed} entries' revisions were never seen committed by the poller");
    }
    println!("{} feed entries, each delivered once to each receiver", entries.len());
    println!(
        "{:<18} {:>6}   {:^31}   {:^31}   server's histogram",
        "format", "n", "from the commit (ms)", "from publishedAt (ms)"
    );
    let head = format!("{:>7} {:>7} {:>7} {:>7}", "p50", "p90", "p99", "max");
    println!("{:<18} {:>6}   {head}   {head}", "", "");
    for (format, got) in &arrivals {
        let got = got.lock().expect("never poisoned").clone();
        let from_commit: Vec<i64> = entries.iter().map(|e| got[&e.seq] - commits[&e.revision]).collect();
        let from_published: Vec<i64> = entries.iter().map(|e| got[&e.seq] - e.published_ms).collect();
        let (count, sum) = measured_by_server(&server, &internal, format).await?;
        println!(
            "{format:<18} {:>6}   {}   {}   {count:.0} measured, mean {:.1} ms",
            entries.len(),
            cells(from_commit),
            cells(from_published),
            if count > 0.0 { 1_000.0 * sum / count } else { f64::NAN }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantiles_are_nearest_ranks() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(super::quantile(&v, 0.5), 50);
        assert_eq!(super::quantile(&v, 0.99), 99);
        assert_eq!(super::quantile(&[7], 0.99), 7);
    }

    #[test]
    fn each_format_names_its_sequence() {
        assert_eq!(super::sequence("standard_webhooks", r#"{"data":{"sequence":"12"}}"#), Some(12));
        let slack = r#"{"blocks":[{"text":{"text":"x"}},{"text":{"text":"a\nFeed entry 34 · published 2026"}}]}"#;
        assert_eq!(super::sequence("slack", slack), Some(34));
        let discord = r#"{"embeds":[{"footer":{"text":"govdata · d · feed entry 56"}}]}"#;
        assert_eq!(super::sequence("discord", discord), Some(56));
    }
}
