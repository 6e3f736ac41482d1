//! Wiring, and nothing else: binds the listener, assembles the state from the settings, and
//! builds the route tree: the surfaces (`api`) and the paths that are not operations
//! (`contract::paths`, mounted by `edge::paths`) behind the edge (`edge`), served by
//! `connections`. Live refresh reaches the writers here (`Ingestion`, the one adapter from
//! `edge::live::Refresh` to `ingest`), since only the wiring may know both.
use std::{net::SocketAddr, sync::Arc};

use poem::{Endpoint, EndpointExt, Response, Route, endpoint::BoxEndpoint};
use sea_orm::DatabaseConnection;

use crate::api;
use crate::config::Settings;
use crate::connections::{self, Shutdown};
use crate::contract::{cursor::CursorCodec, vocabulary::RunTrigger};
use crate::edge::{self, AppState, paths};
use crate::ingest::{self, Registry, RetryPolicy, RunOptions};
use crate::push;
use crate::x402::PaymentTerms;

/// Builds the whole application. It holds itself weakly: an MCP tool call (`/mcp`) is a request
/// to the application.
pub fn app(state: AppState) -> Arc<BoxEndpoint<'static>> {
    Arc::new_cyclic(|itself| routes(state, itself.clone()).boxed())
}

fn routes(state: AppState, itself: std::sync::Weak<BoxEndpoint<'static>>) -> impl Endpoint<Output = Response> {
    let mcp = edge::mcp::McpEndpoint::new(&state, itself);
    let body_timeout = state.settings.limits.body_read_timeout;
    let mcp_access = Arc::new(state.settings.mcp_access.clone());
    let documents = state.documents.clone();
    let draining = state.shutdown.clone();
    let gated = state.clone();
    let served = state.clone();
    let reread = state.clone();
    let surfaces = Route::new().nest_no_strip("/v1", api::v1_service()).nest_no_strip("/v2", api::v2_service());
    paths::mount(surfaces, api::reference_pages(&documents), mcp)
        .data(state)
        // Innermost: a read a replica failed is handled again from another node.
        .around(move |ep, req| edge::retry::serve(ep, req, reread.clone()))
        // Inside the gate: a cached answer is still authorised or paid for.
        .around(move |ep, req| edge::cache::serve(ep, req, served.clone()))
        // Here and below the gate, the layers above hold a boxed call of the layers below, not the
        // whole nested future inline: in a debug build each layer's poll frame holds room for its
        // inner future, and the nest outgrew a 2 MiB stack (a test thread's, a tokio worker's)
        // once the body and MCP admission layers were added. Two allocations per request.
        .boxed()
        .around(move |ep, req| edge::gate::gate(ep, req, gated.clone()))
        .boxed()
        // Before the gate and every slot: a body that trickles in holds nothing.
        .around(move |ep, req| edge::body::read(ep, req, body_timeout))
        // Before any work, the body's read included: `/mcp`'s Origin and Host checks.
        .around(move |ep, req| edge::mcp::admit(ep, req, mcp_access.clone()))
        .around(move |ep, req| edge::front::edge(ep, req, documents.clone(), draining.clone()))
        // Outermost, so that error responses (made by `edge`) carry the CORS headers too.
        .with(edge::front::cors())
}

/// A bound server, not yet running.
pub struct Listening<F> {
    /// Runs the server until `shutdown` begins and the drain ends.
    pub server: F,
    pub addr: SocketAddr,
    /// What the server serves from (its revision watch), for callers that publish in-process.
    pub serving: Arc<edge::serving::ServingWatch>,
    /// Begins the graceful drain (`govdata serve` on SIGTERM or SIGINT).
    pub shutdown: Shutdown,
}

/// Binds `addr` (port 0 picks a free one): the server future, the bound address and its watch.
pub async fn bind(
    db: DatabaseConnection,
    addr: SocketAddr,
    settings: &dyn Fn(SocketAddr) -> anyhow::Result<Settings>,
) -> anyhow::Result<Listening<impl std::future::Future<Output = std::io::Result<()>> + use<>>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let settings = settings(bound)?;
    let documents = Arc::new(
        api::documents(settings.prices())
            .served_at(settings.public_url_configured.then_some(settings.public_url.as_str())),
    );
    let secret = cursor_secret(&db, &settings).await?;
    let payments = Arc::new(PaymentTerms::from_args(&settings.payments)?);
    let cache = Arc::new(edge::cache::ResponseCache::new(settings.response_cache_bytes));
    let nodes = crate::store::nodes::Nodes::start(
        db.clone(),
        &settings.replicas.read_replica_urls,
        settings.replicas.replica_max_lag,
    )
    .await?;
    let serving = edge::serving::ServingWatch::start(nodes.clone()).await?;
    let shutdown = Shutdown::default();
    let Writers { live, schedule } = start_writers(&db, &settings, &serving, &shutdown)?;
    spawn_timed_entries(db.clone(), serving.clone(), shutdown.clone());
    if let Some(every) = settings.repack_every
        && db.get_database_backend() == sea_orm::DbBackend::Postgres
    {
        spawn_repack(db.clone(), every, shutdown.clone());
    }
    let limits = connection_limits(&settings.limits);
    let queries = edge::bounds::QuerySlots::new(&settings.limits);
    let rates = edge::rate::RateLimiter::start(settings.rates, db.clone());
    let backlog = settings.limits.stream_backlog_batches as usize;
    let feed =
        push::hub::FeedHub::start(nodes.clone(), api::views::feed::stream_frames(), serving.subscribe(), backlog)
            .await?;
    // Webhooks: woken by every new serving revision (this process's publication or another's),
    // and by the handlers when a subscription changes or queues a message.
    let webhook_wake = Arc::new(tokio::sync::Notify::new());
    let webhook_options = push::dispatch::Options {
        reach: push::guard::Reach { allow_private: settings.webhooks.webhook_allow_private },
        resolver: push::guard::resolver(settings.webhooks.webhook_resolver.0.clone()),
        loopback_only: settings.webhooks.webhook_loopback_only,
        poll: settings.webhooks.webhook_poll,
        public_url: settings.public_url.clone(),
        clock: push::dispatch::wall_clock(),
    };
    let draining_webhooks = shutdown.clone();
    push::dispatch::Dispatcher::start(
        db.clone(),
        api::views::feed::webhook_entries(),
        webhook_options,
        webhook_wake.clone(),
        async move { draining_webhooks.begun().await },
    );
    let exports = crate::exports::files::Exports::new(
        nodes.clone(),
        settings.exports.export_dir.clone(),
        settings.exports.export_budget_mb.saturating_mul(1 << 20),
    );
    spawn_publication_followers(serving.subscribe(), webhook_wake.clone(), exports.clone());
    let state = AppState::new(edge::State {
        sqlite_reader: crate::store::sqlite_reader::SqliteReader::of(&db),
        db,
        nodes,
        settings: Arc::new(settings),
        documents,
        cursors: CursorCodec::new(&secret),
        payments,
        cache,
        live,
        serving: serving.clone(),
        shutdown: shutdown.clone(),
        queries,
        rates,
        feed,
        webhook_wake,
        exports,
    });
    let app = app(state);
    let draining = shutdown.clone();
    let server = async move {
        connections::serve(listener, app, limits, draining).await?;
        // A scheduled run in progress finishes (its publication commits or rolls back whole);
        // past the drain timeout the process exits and the open transaction rolls back.
        if let Some(schedule) = schedule
            && tokio::time::timeout(limits.drain_timeout, schedule).await.is_err()
        {
            tracing::warn!("drain timeout: the running ingestion is abandoned; its transaction rolls back");
        }
        Ok(())
    };
    Ok(Listening { server, addr: bound, serving, shutdown })
}

/// The secret that signs cursors: the configured one, else the store's own (made once, kept in
/// the database so that every process serving it reads the same cursors).
async fn cursor_secret(db: &DatabaseConnection, settings: &Settings) -> anyhow::Result<Vec<u8>> {
    Ok(match &settings.payments.cursor_secret {
        Some(configured) => configured.as_bytes().to_vec(),
        None => crate::store::settings::cursor_secret(db).await?,
    })
}

/// The writers a server may run in-process: live refresh of a stale DAO on request, and a
/// schedule of ingestion runs. The registry is read only when one of them is asked for.
struct Writers {
    live: Option<Arc<edge::live::LiveRefresh>>,
    /// The scheduled runs' task, which the drain waits for.
    schedule: Option<tokio::task::JoinHandle<()>>,
}

/// Starts the writers the settings ask for (`--live`, `--ingest-every`).
fn start_writers(
    db: &DatabaseConnection,
    settings: &Settings,
    serving: &Arc<edge::serving::ServingWatch>,
    shutdown: &Shutdown,
) -> anyhow::Result<Writers> {
    let registry = match (settings.live, settings.ingest_every) {
        (None, None) => None,
        _ => Some(Arc::new(ingest::load_registry(settings.registry.as_ref())?)),
    };
    let live = match (settings.live, &registry) {
        (Some(live), Some(registry)) => {
            let ingestion = Arc::new(Ingestion { db: db.clone(), registry: registry.clone() });
            Some(Arc::new(edge::live::LiveRefresh::new(ingestion, live)))
        }
        _ => None,
    };
    let schedule = match (settings.ingest_every, &registry) {
        (Some(every), Some(registry)) => {
            tracing::info!("ingesting {} DAOs every {}", registry.daos.len(), humantime::format_duration(every));
            let watch = serving.clone();
            let registry = Registry::clone(registry);
            let stop = shutdown.clone();
            let options = RunOptions { sourcify: settings.sourcify.clone(), ..RunOptions::default() };
            Some(ingest::schedule::spawn(db.clone(), registry, every, options, stop, move || watch.poke()))
        }
        _ => None,
    };
    Ok(Writers { live, schedule })
}

/// How many connections the server holds, from one address and in all, and how long it waits
/// on each and on the drain, as the settings say.
fn connection_limits(limits: &crate::config::LimitArgs) -> connections::ConnectionLimits {
    connections::ConnectionLimits {
        max_connections: connections::fit_connection_cap(limits.max_connections),
        max_per_address: limits.max_connections_per_address,
        header_read_timeout: limits.header_read_timeout,
        write_timeout: limits.write_timeout,
        drain_delay: limits.drain_delay,
        drain_timeout: limits.drain_timeout,
    }
}

/// Follows every new serving revision (this process's publication or another's): wakes the
/// webhook dispatcher and refreshes the export files.
fn spawn_publication_followers(
    mut revisions: tokio::sync::watch::Receiver<Arc<edge::serving::Serving>>,
    wake: Arc<tokio::sync::Notify>,
    rebuild: Arc<crate::exports::files::Exports>,
) {
    tokio::spawn(async move {
        while revisions.changed().await.is_ok() {
            wake.notify_one();
            // Export files already asked for are built again for the DAOs a publication changed.
            let dao_revisions = revisions.borrow_and_update().dao_revisions.clone();
            if let Err(e) = rebuild.refresh(&dao_revisions).await {
                tracing::warn!(error = %e, "export files not rebuilt after a publication; they are built on request");
            }
        }
    });
}

/// Live refresh over ingestion: the one place the API's needs meet the writers.
struct Ingestion {
    db: DatabaseConnection,
    registry: Arc<Registry>,
}

impl edge::live::Refresh for Ingestion {
    fn covers(&self, dao: &str) -> bool {
        self.registry.dao(dao).is_some()
    }

    fn refresh(
        &self,
        dao: &str,
        deadline: std::time::Duration,
    ) -> futures_util::future::BoxFuture<'static, anyhow::Result<bool>> {
        let options = RunOptions {
            dao: Some(dao.to_owned()),
            trigger: RunTrigger::Live,
            policy: RetryPolicy { attempts: 2, timeout: deadline, ..RetryPolicy::default() },
            ..RunOptions::default()
        };
        let (db, registry) = (self.db.clone(), self.registry.clone());
        Box::pin(async move {
            let report = ingest::run_once(&db, &registry, &options).await?;
            let complete = report.outcomes.iter().all(|o| o.result.is_ok());
            if !complete {
                tracing::warn!("live refresh: some sources failed\n{report}");
            }
            Ok(complete)
        })
    }
}

/// Checks `votes`' indexes every `every` and rebuilds the loose ones (`store::repack`), until the
/// server drains. A rebuild in progress is abandoned with the task: its connection closes, the
/// server ends the build within a second, and the next check drops the half-built copy.
/// The timed entries' scheduler (issue 48): every serving process looks for the moments that
/// time alone made due (a voting start, a deadline near or passed, an ETA passed) and publishes
/// them, at most `TIMED_ENTRY_TICK` after each, sooner when it knows the next moment is nearer.
/// Publications take turns and each moment is keyed (`store::moments`): any number of processes
/// feed each moment once, and one that was down catches up on its first look.
///
/// A new revision (an ingestion may have brought a nearer moment: a proposal starting or ending
/// soon) wakes it for a look before its wait is over.
fn spawn_timed_entries(db: DatabaseConnection, serving: Arc<edge::serving::ServingWatch>, shutdown: Shutdown) {
    use crate::store::timed;
    let mut revisions = serving.subscribe();
    tokio::spawn(async move {
        loop {
            let now = crate::contract::time::now_ms();
            let look = async {
                if let Some(published) = timed::publish_due(&db, now).await? {
                    tracing::info!(revision = published.revision_id, "timed entries published");
                    serving.poke();
                }
                timed::wait_ms(&db, crate::contract::time::now_ms()).await
            };
            let wait = tokio::select! {
                waited = look => match waited {
                    Ok(ms) => ms,
                    Err(e) => {
                        tracing::warn!("timed entries: {e}; looking again in a tick");
                        crate::contract::feed::TIMED_ENTRY_TICK.as_millis() as i64
                    }
                },
                () = shutdown.begun() => return,
            };
            // A moment due now is published on the next look; never spin faster than 100 ms.
            let wait = std::time::Duration::from_millis(u64::try_from(wait).unwrap_or(0).max(100));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                changed = revisions.changed() => if changed.is_err() { return },
                () = shutdown.begun() => return,
            }
        }
    });
}

fn spawn_repack(db: DatabaseConnection, every: std::time::Duration, shutdown: Shutdown) {
    use crate::store::repack;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = shutdown.begun() => return,
            }
            tokio::select! {
                outcome = repack::run(&db, repack::Scope::Due) => match outcome {
                    Ok(outcome) => {
                        observe_repack(&outcome);
                        if outcome.changed() {
                            tracing::info!("index check:\n{outcome}");
                        } else {
                            tracing::debug!("index check:\n{outcome}");
                        }
                    }
                    Err(e) => tracing::warn!("index check failed: {e:#}"),
                },
                () = shutdown.begun() => return,
            }
        }
    });
}

/// The index check's findings in `/metrics`: each index's size and excess over packed as the
/// check left them (a rebuilt index at its new size, packed), and the rebuilds.
fn observe_repack(outcome: &crate::store::repack::Outcome) {
    let crate::store::repack::Outcome::Done { surveyed, repacked, .. } = outcome else { return };
    let m = &*crate::metrics::METRICS;
    for state in surveyed {
        m.index_bytes.with_label_values(&[&state.name]).set(state.bytes);
        match state.excess() {
            Some(excess) => m.index_excess.with_label_values(&[&state.name]).set(excess),
            None => _ = m.index_excess.remove_label_values(&[&state.name]),
        }
    }
    for r in repacked {
        m.index_bytes.with_label_values(&[&r.name]).set(r.bytes_after);
        m.index_excess.with_label_values(&[&r.name]).set(0.0);
        m.index_repacks.with_label_values(&[&r.name]).inc();
    }
}
