//! Building and running the application. `Application::build` binds the listener itself, so
//! tests pass port 0 and read the real port back.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use scorecast_shared::Id;

use crate::auth::{KeyRing, Tokens};
use crate::broker::Broker;
use crate::clock::Clock;
use crate::config::{LogFormat, Settings};
use crate::conn::{Dialer, Target};
use crate::embedded::RedisProcess;
use crate::hub::Hub;
use crate::limiter::Limiter;
use crate::queue::{Background, Queues};
use crate::revocation::Revocations;
use crate::state::AppState;
use crate::store::Store;

pub struct Application {
    server: Server,
    port: u16,
    /// The address the listener is bound to.
    local: std::net::SocketAddr,
    state: AppState,
    /// The private redis-server when no URL was configured; stopped after the server.
    embedded: Option<RedisProcess>,
    /// Queue promoter, reaper and job workers (when `workers` is on); stopped with the server.
    background: Option<Background>,
}

pub use crate::conn::{connect, redacted};

/// The HTTP/WebSocket worker threads: `configured`, or (0) one per CPU but one, at least one.
/// The thread that built the application keeps the shared Redis connection and the broker's
/// pub/sub feed, through which every submission and push passes: on two CPUs a second worker
/// only adds thread hand-offs (BENCHMARKS.md, "Server CPU per submission").
pub fn http_workers(configured: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    cpus.saturating_sub(1).max(1)
}

impl Application {
    /// Builds with the production clock (Redis TIME).
    pub async fn build(settings: Settings) -> anyhow::Result<Application> {
        Self::build_with_clock(settings, Clock::Redis).await
    }

    pub async fn build_with_clock(
        mut settings: Settings,
        clock: Clock,
    ) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(settings.listen)
            .with_context(|| format!("cannot listen on {}", settings.listen))?;
        let local = listener.local_addr()?;
        if settings.allowed_origins.is_empty() && settings.dev {
            // The dev profile: any origin, unless a list was configured.
            settings.allowed_origins = vec!["*".into()];
        } else if settings.allowed_origins.is_empty() {
            // The server's own origins, from the address it really listens on (port 0 in tests).
            settings.allowed_origins = crate::ws::own_origins(local);
            if !settings.dev && !(local.ip().is_loopback()) {
                tracing::warn!(origins = ?settings.allowed_origins, "allowed_origins not set: browsers may open WebSockets only from these origins; set it to the public origin(s) of your pages");
            }
        }
        let (url, embedded) = match &settings.redis_url {
            Some(url) => (url.expose().to_owned(), None),
            None => {
                let p = RedisProcess::start_owned(&settings.data_dir, true)?;
                tracing::info!(port = p.port, dir = %settings.data_dir.display(), "started embedded redis-server (AOF on)");
                (p.url(), Some(p))
            }
        };
        // The one place the URL is read: single node or cluster, for everything below.
        let target = Target::parse(&url)?;
        let conn = connect(&target).await?;
        let store = Store::new(conn.clone(), clock.clone())
            .with_replica_wait(settings.redis.wait_replicas, settings.redis.wait_timeout_ms);
        for (id, cfg) in &settings.boards {
            let id = Id::parse(id)?;
            if let Err(e) = store.put_board(&id, cfg).await {
                anyhow::bail!("configuring board {id}: {e}");
            }
        }
        // Blocking queue waits open dedicated connections from this client (never the shared one).
        let queues = Queues::new(
            conn.clone(),
            Dialer::new(&target)?,
            clock.clone(),
            settings.queues.clone(),
        );
        // Redis pub/sub (dedicated connections on the same target, never the shared one), feeding
        // the hub.
        let hub = Hub::start(
            Broker::new(&target, conn.clone())?,
            store.clone(),
            &settings,
        );
        // Revocations made through any instance: read once now, then polled.
        let revocations = Revocations::default();
        if let Err(e) = revocations.refresh(&store).await {
            anyhow::bail!("cannot read token revocations: {e}");
        }
        revocations.spawn_poller(
            store.clone(),
            Duration::from_millis(settings.auth.revocation_poll_ms),
        );
        // This instance's counters for the console's charts over every instance.
        store.spawn_stats_writer(uuid::Uuid::new_v4().simple().to_string());
        let sandbox = crate::validators::Sandbox::new(settings.validators.limits())
            .context("starting the validator sandbox")?;
        let state = AppState {
            validators: crate::validators::Registry::new(sandbox)?,
            hub: hub.clone(),
            queues,
            store,
            limiter: Limiter::new(conn, clock),
            // Settings::finish ensured both secrets before build; these errors are for misuse.
            tokens: Tokens::new(settings.token_secret.as_ref().context("no token secret")?)
                .with_previous(settings.previous_token_secret.as_ref())
                .with_limits(settings.auth.max_token_lifetime_s, revocations),
            keys: KeyRing::new(
                settings.admin_token.as_ref().context("no admin token")?,
                settings
                    .keys
                    .iter()
                    .map(|(name, k)| (name.as_str(), k.scope, &k.secret)),
            ),
            queue_gauges: Arc::new(crate::queue::QueueGauges::new(Duration::from_millis(
                settings.metrics.queue_refresh_ms,
            ))),
            settings: Arc::new(settings),
        };
        // Scorecast's own jobs: the rollover of each calendar board's current season (idempotent),
        // then the promoter, the reaper and the job workers, whose `notify` jobs go through the
        // WebSocket hub.
        if let Err(e) = crate::jobs::schedule_rollovers(&state).await {
            tracing::warn!(error = %e, "could not schedule season rollovers at start-up");
        }
        let background = state
            .settings
            .workers
            .then(|| crate::jobs::start(&state, Arc::new(hub)));
        let port = local.port();
        let data = web::Data::new(state.clone());
        let web_dir = state.settings.web_dir.clone();
        let socket_options = crate::ws::conn::SocketOptions {
            send_buffer_bytes: state.settings.ws.send_buffer_bytes,
            user_timeout: Duration::from_millis(state.settings.ws.slow_client_ms),
        };
        let cors_settings = state.settings.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .wrap(actix_web::middleware::Compress::default())
                .wrap(crate::http::cors(cors_settings.clone()))
                // Refusals made outside the handlers (no route, a method the path does not
                // take) get the JSON error body too.
                .wrap_fn(|req, srv| {
                    use actix_web::dev::Service;
                    let fut = srv.call(req);
                    async move { crate::http::json_errors(fut.await?).await }
                })
                .wrap_fn(|req, srv| {
                    use actix_web::dev::Service;
                    let fut = srv.call(req);
                    async move {
                        let mut res = fut.await?;
                        crate::http::security_headers(&mut res);
                        crate::http::read_limit_headers(&mut res);
                        Ok(res)
                    }
                })
                // An oversize request head goes no further.
                .wrap_fn(|req, srv| {
                    use actix_web::dev::Service;
                    let fut = match crate::http::check_head(req.head()) {
                        Ok(()) => Ok(srv.call(req)),
                        Err(e) => Err(e),
                    };
                    async move {
                        match fut {
                            Ok(f) => f.await,
                            Err(e) => Err(e.into()),
                        }
                    }
                })
                // Outermost: every answer is counted and timed by route template, refusals of
                // the head check included.
                .wrap_fn(|req, srv| {
                    use actix_web::dev::Service;
                    let started = std::time::Instant::now();
                    let method = req.method().clone();
                    let fut = srv.call(req);
                    async move {
                        let r = fut.await;
                        match &r {
                            Ok(res) => crate::metrics::http_done(
                                method.as_str(),
                                res.request().match_pattern().as_deref(),
                                res.status().as_u16(),
                                started,
                            ),
                            Err(e) => crate::metrics::http_done(
                                method.as_str(),
                                None,
                                e.as_response_error().status_code().as_u16(),
                                started,
                            ),
                        }
                        r
                    }
                })
                .configure(crate::http::routes)
                .configure(crate::ws::routes)
                .service(actix_files::Files::new("/", &web_dir))
        })
        .shutdown_timeout(10)
        .workers(http_workers(state.settings.http_workers))
        // A small send buffer and a TCP user timeout on every connection, so a client that
        // stops reading pins little and is ended by the kernel (`ws/conn.rs`).
        .on_connect(move |io, ext| crate::ws::conn::Conn::on_connect(io, ext, socket_options))
        .listen(listener)?
        .run();
        Ok(Application {
            server,
            port,
            local,
            state,
            embedded,
            background,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local
    }

    /// Where a browser on this machine reaches the server: the bound address, with loopback in
    /// place of an unspecified one (`0.0.0.0`, `::`).
    pub fn base_url(&self) -> String {
        base_url_of(self.local)
    }

    /// Says where the server is, once it listens: its address and the URLs of the pages (the
    /// live leaderboard `/`, the game `/play`, the admin console `/admin`). Printed as lines for
    /// people, or as one log event with the URLs as fields in the JSON log format; with the
    /// admin token the dev profile generated, if any.
    pub fn announce(&self, format: LogFormat, generated_admin_token: Option<&crate::auth::Secret>) {
        let base = self.base_url();
        let pages = [
            ("leaderboard", format!("{base}/")),
            ("play", format!("{base}/play")),
            ("admin", format!("{base}/admin")),
        ];
        match format {
            LogFormat::Text => {
                println!("scorecast listening on {base}");
                for (name, url) in &pages {
                    println!("  {name:<12} {url}");
                }
                if let Some(t) = generated_admin_token {
                    println!("dev admin token: {}", t.expose());
                }
            }
            LogFormat::Json => tracing::info!(
                listen = %self.local,
                leaderboard = %pages[0].1,
                play = %pages[1].1,
                admin = %pages[2].1,
                "scorecast listening on {base}"
            ),
        }
        if let (LogFormat::Json, Some(t)) = (format, generated_admin_token) {
            tracing::info!(admin_token = t.expose(), "dev admin token");
        }
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// A handle to stop the server gracefully.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped (SIGINT/SIGTERM or the handle), then stops the embedded Redis.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let Application {
            server,
            mut embedded,
            background,
            state,
            ..
        } = self;
        // On SIGTERM/SIGINT actix stops accepting and waits for open connections; the hub closes
        // every WebSocket with 1001 once its in-flight submissions are answered, so that wait is
        // short instead of running into the shutdown timeout.
        let hub = state.hub.clone();
        let signals = tokio::spawn(async move {
            crate::ws::shutdown_signal().await;
            hub.shutdown();
        });
        let r = server.await;
        signals.abort();
        if let Some(bg) = background {
            bg.stop().await;
        }
        if let Some(p) = embedded.as_mut() {
            p.shutdown();
        }
        Ok(r?)
    }
}

/// `http://<addr>`, with loopback in place of an unspecified address.
pub fn base_url_of(mut a: std::net::SocketAddr) -> String {
    if a.ip().is_unspecified() {
        a.set_ip(match a.ip() {
            std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    format!("http://{a}")
}

/// Installs the log subscriber: `RUST_LOG` filters (default `info`), `format` shapes the lines.
pub fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => fmt.init(),
        LogFormat::Json => fmt.json().with_current_span(false).init(),
    }
}

#[cfg(test)]
mod tests {
    /// The printed URLs use the bound address, with loopback for an unspecified one (a browser
    /// cannot open `http://0.0.0.0:8080`).
    #[test]
    fn base_urls_use_the_bound_address() {
        let url = |a: &str| super::base_url_of(a.parse().unwrap());
        assert_eq!(url("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(url("[::]:8080"), "http://[::1]:8080");
        assert_eq!(url("10.1.2.3:80"), "http://10.1.2.3:80");
        assert_eq!(url("127.0.0.1:43211"), "http://127.0.0.1:43211");
    }

    #[test]
    fn redis_passwords_are_redacted() {
        assert_eq!(
            super::redacted("redis://:hunter2@db:6379/0"),
            "redis://***@db:6379/0"
        );
        assert_eq!(super::redacted("redis://db:6379/"), "redis://db:6379/");
        assert_eq!(
            super::redacted("redis+unix:///run/redis.sock?db=2&pass=hunter2"),
            "redis+unix:///run/redis.sock?db=2&pass=***"
        );
        assert_eq!(
            super::redacted("unix:///run/redis.sock?db=2"),
            "unix:///run/redis.sock?db=2"
        );
    }
}
