//! The `govdata` command: serve (default), migrate, import, tokens.
use anyhow::Context;
use clap::Parser;
use govdata::config::{Cli, Command, IngestArgs, LogFormat, ServeArgs, Settings, TokensCommand};
use govdata::contract::vocabulary::RunTrigger;
use govdata::contract::vocabulary::SourceKind;
use govdata::contract::{access::Scope, time::now_ms};
use govdata::{ingest, sample, server, store};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    govdata::allocator::no_huge_pages();
    govdata::allocator::purge_freed_soon();
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
        Command::Webhooks(args) => govdata::push::commands::webhooks(&url, args).await,
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
    govdata::allocator::release_freed();
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

/// What the log writer thread gathers into one `write` of stderr at most.
const LOG_BUFFER: usize = 64 * 1024;

/// Logs to stderr through a writer thread of its own (a request never waits on the terminal or a
/// pipe; lines beyond its buffer are dropped rather than slowing requests down), as
/// human text or JSON lines. The guard flushes what is buffered when `main` returns.
///
/// The writer thread writes through a buffer of its own: it takes every line waiting in the
/// channel, then flushes (tracing-appender's worker flushes once the channel is empty), so under
/// load one `write` carries many lines instead of one each (an access line per request made a
/// system call per request), and a quiet server's lines still reach stderr at once.
fn init_logs(format: LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) =
        tracing_appender::non_blocking(std::io::BufWriter::with_capacity(LOG_BUFFER, std::io::stderr()));
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
        sourcify: args.sourcify.settings(),
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
