//! The `govdata` command: serve (default), migrate, import, tokens.
use anyhow::Context;
use clap::Parser;
use govdata::config::{
    Cli, Command, IngestArgs, LogFormat, ServeArgs, Settings, TokensCommand, WebhooksArgs, WebhooksCommand,
};
use govdata::contract::vocabulary::RunTrigger;
use govdata::contract::vocabulary::SourceKind;
use govdata::contract::{access::Scope, time::now_ms};
use govdata::{ingest, sample, server, store};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _log_writer = init_logs(cli.log_format);
    let url = cli.store.database_url.clone();
    match cli.command.unwrap_or_else(|| Command::Serve(Box::default())) {
        Command::Serve(args) => serve(&url, *args).await,
        Command::Migrate => {
            store::connect(&url).await?;
            eprintln!("migrations applied to {}", redact(&url));
            Ok(())
        }
        Command::Import { path } => {
            let db = store::connect(&url).await?;
            let files = sample::SampleFiles::from_dir(&path)?;
            let report = sample::import(&db, &files, RunTrigger::Manual).await?;
            println!("{report}");
            Ok(())
        }
        Command::Ingest(args) => ingest(&url, args).await,
        Command::Tokens(cmd) => tokens(&url, cmd).await,
        Command::Webhooks(args) => webhooks(&url, args).await,
        Command::Synth { votes, voters, proposals, dao, defer_indexes } => {
            let db = store::connect(&url).await?;
            let spec = sample::synth::SynthSpec { votes, voters, proposals, dao_id: dao, defer_indexes };
            let report = sample::synth::synth(&db, &spec).await?;
            println!("{report}");
            Ok(())
        }
        Command::Repack { check, all } => {
            use store::repack::Scope;
            let db = store::connect(&url).await?;
            let scope = match (check, all) {
                (true, _) => Scope::Survey,
                (false, true) => Scope::All,
                (false, false) => Scope::Due,
            };
            println!("{}", store::repack::run(&db, scope).await?);
            Ok(())
        }
    }
}

async fn serve(url: &str, args: ServeArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let db = store::connect(url).await.with_context(|| format!("opening the store at {}", redact(url)))?;
    if !args.no_sample
        && let Some(report) = sample::import_if_empty(&db).await?
    {
        tracing::info!("empty store: loaded the bundled sample\n{report}");
    }
    let server::Listening { server, addr: bound, shutdown, .. } =
        server::bind(db, args.addr, &|bound| Settings::from_args(&args, bound)).await?;
    tokio::spawn(async move {
        stop_signal().await;
        tracing::info!("shutdown signal: draining");
        shutdown.begin();
    });
    tracing::info!(
        "govdata listening on http://{bound} (store {}, ready in {} ms); docs at http://{bound}/docs",
        redact(url),
        started.elapsed().as_millis()
    );
    server.await?;
    tracing::info!("stopped");
    Ok(())
}

/// Logs to stderr through a writer thread of its own (a request never waits on the terminal or a
/// pipe; lines beyond its buffer are dropped rather than slowing requests down), as
/// human text or JSON lines. The guard flushes what is buffered when `main` returns.
fn init_logs(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking(std::io::stderr());
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sqlx=warn,sea_orm=warn".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    match format {
        LogFormat::Json => logs.json().flatten_event(true).with_current_span(false).init(),
        LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
    }
    guard
}

/// SIGTERM (what orchestrators send) or SIGINT (Ctrl-C).
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(err) => {
            tracing::warn!(error = %err, "cannot listen for SIGTERM; only Ctrl-C drains");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

async fn ingest(url: &str, args: IngestArgs) -> anyhow::Result<()> {
    let registry = ingest::load_registry(args.registry.registry.as_ref())?;
    let db = store::connect(url).await.with_context(|| format!("opening the store at {}", redact(url)))?;
    let options = ingest::RunOptions {
        dao: args.dao,
        source: args.source.as_deref().and_then(|s| SourceKind::parse(s).ok()),
        trigger: RunTrigger::Manual,
        policy: ingest::RetryPolicy { timeout: args.upstream_timeout, ..Default::default() },
    };
    let report = ingest::run_once(&db, &registry, &options).await?;
    println!("{report}");
    let failed = report.outcomes.iter().filter(|o| o.result.is_err()).count();
    if failed > 0 {
        anyhow::bail!("{failed} of {} sources failed; the others were published", report.outcomes.len());
    }
    Ok(())
}

async fn tokens(url: &str, cmd: TokensCommand) -> anyhow::Result<()> {
    let db = store::connect(url).await?;
    match cmd {
        TokensCommand::Create { name, scopes, rate } => {
            let mut parsed = Vec::new();
            for s in &scopes {
                let scope = Scope::parse(s.trim()).with_context(|| {
                    let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
                    format!("unknown scope `{s}`; scopes are {}", all.join(", "))
                })?;
                parsed.push(scope.as_str());
            }
            let (row, token) = store::tokens::create(&db, &name, &parsed, rate, now_ms()).await?;
            let limit = rate.map_or_else(|| "the server's partner rate".to_owned(), |r| r.to_string());
            eprintln!(
                "created token {} for {:?} with scopes {} and rate limit {limit}; it is shown once:",
                row.id, row.name, row.scopes
            );
            println!("{token}");
        }
        TokensCommand::List => {
            println!(
                "{:>4}  {:<20} {:<12} {:<40} {:<9} {:<12} last used",
                "id", "name", "prefix", "scopes", "status", "rate"
            );
            for t in store::tokens::list(&db).await? {
                let status = if t.revoked_ms.is_some() { "revoked" } else { "active" };
                let last = t.last_used_ms.map(govdata::contract::time::rfc3339_ms).unwrap_or_else(|| "never".into());
                let (id, name, prefix, scopes) = (t.id, t.name.clone(), t.token_prefix.clone(), t.scopes.clone());
                let rate = govdata::store::tokens::LiveToken::from(t)
                    .rate
                    .map_or_else(|| "default".to_owned(), |r| r.to_string());
                println!("{id:>4}  {name:<20} {prefix:<12} {scopes:<40} {status:<9} {rate:<12} {last}");
            }
        }
        TokensCommand::Revoke { id } => {
            if govdata::edge::serving::revoke_token(&db, id).await? {
                println!("token {id} revoked; every server refuses it from now on");
            } else {
                anyhow::bail!("no token with id {id}");
            }
        }
    }
    Ok(())
}

/// `govdata webhooks`: the operator's view of every partner's subscriptions. Running servers
/// pick the changes up from the store (within `GOVDATA_WEBHOOK_POLL`).
async fn webhooks(url: &str, args: WebhooksArgs) -> anyhow::Result<()> {
    use govdata::contract::{feed::FeedKind, time::rfc3339_ms};
    use govdata::push::guard::{self, Reach};
    use govdata::store::webhooks as subs;
    let db = store::connect(url).await?;
    let reach = Reach { allow_private: args.webhook_allow_private };
    let find = |id: String| {
        let db = db.clone();
        async move { subs::get(&db, None, &id).await?.with_context(|| format!("no webhook `{id}`")) }
    };
    match args.command {
        WebhooksCommand::List { token } => {
            println!("{:<24} {:>5}  {:<9} {:<12} {:<30} url", "id", "token", "status", "through", "filters");
            for s in subs::list(&db, token).await? {
                let status = if s.enabled { "enabled" } else { "disabled" };
                let filters = format!("daos={} kinds={}", or_all(&s.dao_ids), or_all(&s.kinds));
                println!(
                    "{:<24} {:>5}  {status:<9} {:<12} {filters:<30} {}",
                    s.public_id, s.token_id, s.enqueued_through, s.url
                );
                if let Some(reason) = &s.disabled_reason {
                    println!("{:<24} disabled: {reason}", "");
                }
            }
        }
        WebhooksCommand::Create { token, url, dao, kinds, description } => {
            let parsed = guard::check_url_text(reach, &url).map_err(|e| anyhow::anyhow!("the URL {e}"))?;
            guard::check_url(reach, &*guard::resolver(None), &parsed)
                .await
                .map_err(|e| anyhow::anyhow!("the URL {e}"))?;
            let unknown = subs::unknown_daos(&db, &dao).await?;
            anyhow::ensure!(unknown.is_empty(), "no covered DAO has the id {}", unknown.join(", "));
            let kinds = kinds
                .iter()
                .map(|k| {
                    FeedKind::parse(k)
                        .map_err(|_| anyhow::anyhow!("unknown kind `{k}`; kinds are {}", FeedKind::choices()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            anyhow::ensure!(
                store::tokens::list(&db).await?.iter().any(|t| t.id == token && t.revoked_ms.is_none()),
                "no live partner token {token}"
            );
            let target = subs::Target { url: parsed.to_string(), dao_ids: dao, kinds, description };
            let s = match subs::create(&db, token, &target, now_ms()).await {
                Ok(s) => s,
                Err(subs::CreateError::TooMany) => anyhow::bail!("token {token} holds the most webhooks it may"),
                Err(subs::CreateError::Store(e)) => return Err(e.into()),
            };
            eprintln!("created webhook {} for token {token}; its secret is shown once:", s.public_id);
            println!("{}", s.secret);
        }
        WebhooksCommand::Disable { id } => {
            let change = subs::Change { enabled: Some(false), ..Default::default() };
            let s = subs::update(&db, find(id).await?, &change, now_ms()).await?;
            println!("webhook {} disabled", s.public_id);
        }
        WebhooksCommand::Enable { id } => {
            let change = subs::Change { enabled: Some(true), ..Default::default() };
            let s = subs::update(&db, find(id).await?, &change, now_ms()).await?;
            println!("webhook {} enabled", s.public_id);
        }
        WebhooksCommand::Delete { id } => {
            let s = find(id).await?;
            subs::delete(&db, &s).await?;
            println!("webhook {} deleted", s.public_id);
        }
        WebhooksCommand::RotateSecret { id } => {
            let s = subs::rotate(&db, find(id).await?, now_ms()).await?;
            eprintln!("webhook {}: new secret, shown once (the previous one signs beside it for a day):", s.public_id);
            println!("{}", s.secret);
        }
        WebhooksCommand::Test { id } => {
            let s = find(id).await?;
            let note = "A test message from govdata (queued by an operator).";
            let msg_id = subs::queue_test(&db, &s, note, now_ms()).await?;
            println!("queued {msg_id}");
        }
        WebhooksCommand::Replay { id, after } => {
            if let Some(pruned) = store::feed::pruned_past(&db, after).await? {
                anyhow::bail!("entries up to {pruned} were pruned; replay after {pruned} or later");
            }
            let (from, through) = subs::replay(&db, find(id).await?, after, now_ms()).await?;
            println!("entries after {from} up to {through} are queued again");
        }
        WebhooksCommand::Deliveries { id, limit } => {
            let s = find(id).await?;
            println!(
                "{:<25} {:>7} {:<10} {:>6} {:>8}  {:<25} error",
                "attempted", "attempt", "outcome", "status", "ms", "next"
            );
            for a in subs::attempts(&db, s.id, None, limit).await? {
                let status = a.status_code.map_or("-".to_owned(), |c| c.to_string());
                let next = a.next_attempt_ms.map_or("-".to_owned(), rfc3339_ms);
                println!(
                    "{:<25} {:>7} {:<10} {status:>6} {:>8}  {next:<25} {}",
                    rfc3339_ms(a.attempted_ms),
                    a.attempt,
                    a.outcome,
                    a.duration_ms,
                    a.error.unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

fn or_all(list: &str) -> &str {
    if list.is_empty() { "all" } else { list }
}

/// Hides a password in a database URL before it is logged.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
