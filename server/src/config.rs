//! One typed configuration (README, "Configuration"), layered from lowest to highest: built-in
//! defaults, a TOML file (`--config` / `SCORECAST_CONFIG`), `SCORECAST_<SECTION>__<KEY>`
//! environment variables for nested settings, then the command-line flags (each of which also
//! reads its own `SCORECAST_*` variable).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::builder::TypedValueParser;
use clap::Parser;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use scorecast_shared::{BoardConfig, Id, Op};
use serde::{Deserialize, Serialize};

use crate::client_addr::{ForwardedHeader, ProxyNet, TrustedProxies};

#[derive(Parser, Debug, Default, Serialize)]
#[command(
    name = "scorecast",
    version,
    about = "Live leaderboards, rate limits and job queues on Redis"
)]
pub struct Cli {
    /// TOML configuration file.
    #[arg(long, env = "SCORECAST_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "SCORECAST_LISTEN")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// Redis URL (redis://host:port/db, or redis+cluster://host:port,host:port for a Redis
    /// Cluster); none starts an embedded redis-server.
    #[arg(long, env = "SCORECAST_REDIS_URL", hide_env_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<Secret>,
    /// Bearer token for /admin.
    #[arg(long, env = "SCORECAST_ADMIN_TOKEN", hide_env_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_token: Option<Secret>,
    /// HS256 secret for player tokens.
    #[arg(long, env = "SCORECAST_TOKEN_SECRET", hide_env_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_secret: Option<Secret>,
    /// The token secret being rotated out: player tokens signed with it are still accepted
    /// (new ones are signed with the token secret).
    #[arg(long, env = "SCORECAST_PREVIOUS_TOKEN_SECRET", hide_env_values = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_token_secret: Option<Secret>,
    /// Directory of the web pages.
    #[arg(long, env = "SCORECAST_WEB_DIR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_dir: Option<PathBuf>,
    /// Origins allowed to open WebSockets (comma-separated).
    #[arg(long, env = "SCORECAST_ALLOWED_ORIGINS", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
    /// Reverse proxies (addresses or CIDR networks, comma-separated) whose forwarding header
    /// names the client; from any other peer the header is ignored.
    #[arg(long, env = "SCORECAST_TRUSTED_PROXIES", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted_proxies: Option<Vec<ProxyNet>>,
    /// The header the trusted proxies maintain: x-forwarded-for (default) or forwarded.
    #[arg(long, env = "SCORECAST_FORWARDED_HEADER", value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarded_header: Option<ForwardedHeader>,
    /// Open connections allowed per client address (0 = no cap).
    #[arg(long, env = "SCORECAST_MAX_CONNS_PER_ADDR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_conns_per_addr: Option<u32>,
    /// Log format: `text` (for people) or `json` (one JSON object per line, for collectors).
    #[arg(long, env = "SCORECAST_LOG_FORMAT", value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
    /// Development profile: generated secrets, guest logins, the game-2048 board.
    #[arg(long, env = "SCORECAST_DEV", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dev: bool,
}

impl clap::builder::ValueParserFactory for Secret {
    type Parser =
        clap::builder::MapValueParser<clap::builder::StringValueParser, fn(String) -> Secret>;
    fn value_parser() -> Self::Parser {
        clap::builder::StringValueParser::new().map(Secret::new)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WsSettings {
    pub ping_interval_ms: u64,
    pub client_timeout_ms: u64,
    pub slow_client_ms: u64,
    /// Messages queued per session before it counts as slow.
    pub outbound_queue: usize,
    pub max_views_per_session: usize,
    /// Coalescing window of view pushes.
    pub coalesce_ms: u64,
    /// `me` and `around` messages this instance's view flushes may send per second, over all
    /// boards; beyond, the players' windows stretch (up to 20 × `coalesce_ms`). 0 = no budget.
    pub player_pushes_per_sec: u32,
    pub max_frame_bytes: usize,
    /// SO_SNDBUF of each accepted TCP connection (the kernel doubles it): what a client that
    /// stops reading can pin in kernel memory before it is detected and closed.
    pub send_buffer_bytes: usize,
    /// Messages a connection may send per second, any type (bursts up to twice that); beyond,
    /// they are answered `rate_limited`, and a client that keeps going is closed with 1008.
    /// 0 = no limit (a load test).
    pub max_messages_per_sec: u32,
}

impl Default for WsSettings {
    fn default() -> Self {
        WsSettings {
            ping_interval_ms: 15_000,
            client_timeout_ms: 45_000,
            slow_client_ms: 5_000,
            outbound_queue: 64,
            max_views_per_session: 16,
            coalesce_ms: 50,
            player_pushes_per_sec: 15_000,
            max_frame_bytes: 16 * 1024,
            send_buffer_bytes: 32 * 1024,
            max_messages_per_sec: 50,
        }
    }
}

/// `/metrics` (README, "Metrics").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// The queue gauges are read from Redis at most this often (ms), by one background read a
    /// scrape starts; scrapes themselves cost Redis nothing, whatever the number of queues.
    pub queue_refresh_ms: u64,
    /// When set, `/metrics` answers only requests with `Authorization: Bearer <token>` (or the
    /// admin token, which the admin console uses); 401 otherwise.
    pub token: Option<Secret>,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            queue_refresh_ms: 5_000,
            token: None,
        }
    }
}

/// Player tokens.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// The longest a player token may live: `exp` further than this from now (or, with `iat`,
    /// from its issue) is refused `unauthorized`; also the bound of `POST /admin/tokens` `ttl_s`.
    pub max_token_lifetime_s: u64,
    /// How often each instance reads revocations made anywhere (a revocation holds on every
    /// instance within this, plus one Redis round trip).
    pub revocation_poll_ms: u64,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            max_token_lifetime_s: DEFAULT_MAX_TOKEN_LIFETIME_S,
            revocation_poll_ms: 250,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueSettings {
    pub default_priority: u8,
    pub default_max_attempts: u32,
    pub default_lease_ms: u64,
    pub max_wait_ms: u64,
    pub promote_batch: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Claims that may wait at once (`claim?wait_ms=`), each on its own dedicated connection.
    pub max_waiters: usize,
    /// Tasks that run Scorecast's own jobs (rollover, rewards, notify) when `workers` is on.
    pub job_workers: usize,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            default_priority: 5,
            default_max_attempts: 5,
            default_lease_ms: 30_000,
            max_wait_ms: 30_000,
            promote_batch: 100,
            backoff_base_ms: 1_000,
            backoff_max_ms: 300_000,
            max_waiters: 256,
            job_workers: 2,
        }
    }
}

/// The validator sandbox (`docs/validators.md`, "Limits").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidatorSettings {
    /// Fuel (about one unit per wasm instruction) per verification.
    pub fuel: u64,
    /// Linear memory per verification, in bytes.
    pub memory_bytes: u64,
    /// The largest proof accepted, in bytes.
    pub proof_bytes: usize,
    /// From queueing a verification to the end of its run.
    pub deadline_ms: u64,
    /// Threads that run verifications (off the socket and HTTP workers).
    pub threads: usize,
    /// How much those threads raise their nice value over the server's (Linux; capped at the
    /// lowest priority, 19): 0 runs them at the server's priority.
    pub nice: i32,
    /// Verifications that may wait for a thread before more are refused as `busy`.
    pub queue: usize,
    /// How long a run lasts after it starts.
    pub run_ttl_ms: u64,
    /// Open runs a player may hold on one board (so seeds cannot be farmed).
    pub max_open_runs: u32,
}

impl Default for ValidatorSettings {
    fn default() -> Self {
        let l = crate::validators::Limits::default();
        ValidatorSettings {
            fuel: l.fuel,
            memory_bytes: l.memory_bytes,
            proof_bytes: l.proof_bytes,
            deadline_ms: l.deadline.as_millis() as u64,
            threads: l.threads,
            nice: l.nice,
            queue: l.queue,
            run_ttl_ms: 3_600_000,
            max_open_runs: 3,
        }
    }
}

impl ValidatorSettings {
    pub fn limits(&self) -> crate::validators::Limits {
        crate::validators::Limits {
            fuel: self.fuel,
            memory_bytes: self.memory_bytes,
            proof_bytes: self.proof_bytes,
            deadline: Duration::from_millis(self.deadline_ms),
            threads: self.threads.max(1),
            nice: self.nice.clamp(0, 19),
            queue: self.queue,
            ..crate::validators::Limits::default()
        }
    }
}

/// Redis beyond its URL (README, "Redis Cluster").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSettings {
    /// Acknowledge a submission only once this many replicas of its board's master have it
    /// (`WAIT`); 0 (the default) acknowledges once the master applied it.
    pub wait_replicas: u32,
    /// How long a submission waits for those replicas before it is answered `unavailable` (a
    /// retry with the same id is applied once).
    pub wait_timeout_ms: u64,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            wait_replicas: 0,
            wait_timeout_ms: 500,
        }
    }
}

/// How the server writes its log (`log_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields.message`, the event's fields,
    /// `target`, `span` and `spans`).
    Json,
}

/// A named bearer key (`[keys.<name>]`, or `SCORECAST_KEYS__<NAME>__SCOPE` and `__SECRET`):
/// the name is what the audit log records for the actions made with it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySettings {
    pub scope: Scope,
    pub secret: Secret,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub listen: SocketAddr,
    /// May carry a password, so it prints as a secret.
    pub redis_url: Option<Secret>,
    pub redis: RedisSettings,
    /// The key of scope `admin` named `admin`.
    pub admin_token: Option<Secret>,
    pub token_secret: Option<Secret>,
    /// Accepted for verification only, during a rotation.
    pub previous_token_secret: Option<Secret>,
    /// Named bearer keys of scope `admin`, `game_server` or `read`, besides the admin token.
    pub keys: BTreeMap<String, KeySettings>,
    pub web_dir: PathBuf,
    /// Empty: the server's own origin (any origin in dev).
    pub allowed_origins: Vec<String>,
    /// Peers whose forwarding header names the client (`client_addr`); empty: none, the TCP
    /// peer is always the client.
    pub trusted_proxies: Vec<ProxyNet>,
    pub forwarded_header: ForwardedHeader,
    pub max_conns_per_addr: u32,
    pub log_format: LogFormat,
    pub dev: bool,
    /// Where the embedded redis-server keeps its data.
    pub data_dir: PathBuf,
    /// Limiter for public reads, per client address.
    pub public_limit: Policy,
    pub ws: WsSettings,
    pub queues: QueueSettings,
    pub validators: ValidatorSettings,
    pub auth: AuthSettings,
    pub metrics: MetricsSettings,
    pub boards: BTreeMap<String, BoardConfig>,
    /// Run the built-in job workers (rollover, rewards, notify).
    pub workers: bool,
    /// HTTP/WebSocket worker threads; 0 = one per CPU but one, at least one
    /// (`startup::http_workers`).
    pub http_workers: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            // unwrap: a constant, valid socket address.
            listen: "127.0.0.1:8080".parse().unwrap(),
            redis_url: None,
            redis: RedisSettings::default(),
            admin_token: None,
            token_secret: None,
            previous_token_secret: None,
            keys: BTreeMap::new(),
            web_dir: PathBuf::from("web"),
            allowed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            forwarded_header: ForwardedHeader::default(),
            max_conns_per_addr: 1000,
            log_format: LogFormat::Text,
            dev: false,
            data_dir: PathBuf::from("data"),
            public_limit: Policy {
                name: "read".into(),
                algorithm: Algorithm::SlidingLog,
                limit: 100,
                window_ms: 1000,
            },
            ws: WsSettings::default(),
            queues: QueueSettings::default(),
            validators: ValidatorSettings::default(),
            auth: AuthSettings::default(),
            metrics: MetricsSettings::default(),
            boards: BTreeMap::new(),
            workers: true,
            http_workers: 0,
        }
    }
}

/// The dev profile's board (README, "Configuration").
pub const DEV_BOARD: &str = "game-2048";

impl Settings {
    /// The client's address for a request from `peer` with `headers`: the peer, or, when the
    /// peer is a trusted proxy, what the forwarding header says (`client_addr`).
    pub fn client_ip(
        &self,
        peer: Option<std::net::SocketAddr>,
        headers: &actix_web::http::header::HeaderMap,
    ) -> Option<std::net::IpAddr> {
        TrustedProxies::new(&self.trusted_proxies, self.forwarded_header).client(peer, headers)
    }

    /// Defaults < file < nested env < flags.
    pub fn load(cli: &Cli) -> anyhow::Result<Settings> {
        let mut fig = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = &cli.config {
            if !path.exists() {
                bail!("config file {} does not exist", path.display());
            }
            fig = fig.merge(Toml::file(path));
        }
        fig = fig
            .merge(
                Env::prefixed("SCORECAST_")
                    .filter(|k| k.as_str().contains("__"))
                    .split("__"),
            )
            .merge(Serialized::defaults(cli));
        let s: Settings = fig.extract().context("invalid configuration")?;
        s.check()?;
        Ok(s)
    }

    /// Fills in what the dev profile generates, and refuses to run without secrets outside it.
    /// Returns the generated admin token, to print.
    pub fn finish(&mut self) -> anyhow::Result<Option<Secret>> {
        let mut generated = None;
        if self.dev {
            if self.token_secret.is_none() {
                self.token_secret = Some(Secret::generate());
            }
            if self.admin_token.is_none() {
                let t = Secret::generate();
                generated = Some(t.clone());
                self.admin_token = Some(t);
            }
            // The demo game is verified: `/play` submits its run's move log, which the built-in
            // `2048` validator replays (so the board keeps each player's best run). It
            // checkpoints often while a player merges tiles: no submit limit.
            self.boards
                .entry(DEV_BOARD.into())
                .or_insert_with(|| BoardConfig {
                    op: Op::Best,
                    validator: Some(crate::validators::registry::BUILTIN_NAME.into()),
                    submit_limit: None,
                    ..BoardConfig::default()
                });
        }
        for (name, s) in [
            ("admin token (SCORECAST_ADMIN_TOKEN)", &self.admin_token),
            ("token secret (SCORECAST_TOKEN_SECRET)", &self.token_secret),
        ] {
            match s {
                None => bail!("no {name}: set it, or run with --dev"),
                Some(s) if s.expose().len() < 32 => bail!("the {name} must be at least 32 bytes"),
                Some(_) => {}
            }
        }
        if let Some(p) = &self.previous_token_secret {
            if p.expose().len() < 32 {
                bail!("the previous token secret (SCORECAST_PREVIOUS_TOKEN_SECRET) must be at least 32 bytes");
            }
        }
        let mut secrets = vec![self.admin_token.as_ref().map(Secret::expose)];
        for (name, key) in &self.keys {
            Id::parse(name).with_context(|| format!("key name {name:?}"))?;
            if name == ADMIN_TOKEN_NAME {
                bail!("the key name {name:?} is the admin token's; choose another");
            }
            if key.secret.expose().len() < 32 {
                bail!("the secret of key {name} must be at least 32 bytes");
            }
            if secrets.contains(&Some(key.secret.expose())) {
                bail!("key {name} has the same secret as another key; each key needs its own");
            }
            secrets.push(Some(key.secret.expose()));
        }
        Ok(generated)
    }

    fn check(&self) -> anyhow::Result<()> {
        for (id, cfg) in &self.boards {
            Id::parse(id).with_context(|| format!("board id {id:?}"))?;
            cfg.validate()
                .map_err(|e| anyhow::anyhow!("board {id}: {e}"))?;
        }
        if self.public_limit.limit == 0 || self.public_limit.window_ms == 0 {
            bail!("public_limit needs limit >= 1 and window_ms >= 1");
        }
        // Up to ten years; the revocation records (kept as long) stay small either way.
        if !(60..=10 * 366 * 86_400).contains(&self.auth.max_token_lifetime_s) {
            bail!("auth.max_token_lifetime_s must be 60..=316224000");
        }
        if !(10..=1000).contains(&self.auth.revocation_poll_ms) {
            bail!("auth.revocation_poll_ms must be 10..=1000 (a revocation must hold within a second)");
        }
        // The WebSocket's timings and sizes: a zero would stop every session (a zero ping
        // interval panics its timer, a zero frame limit closes every client with 1009).
        let ws = &self.ws;
        for (name, v) in [
            ("ws.ping_interval_ms", ws.ping_interval_ms),
            ("ws.slow_client_ms", ws.slow_client_ms),
            ("ws.coalesce_ms", ws.coalesce_ms),
            ("ws.outbound_queue", ws.outbound_queue as u64),
            ("ws.max_views_per_session", ws.max_views_per_session as u64),
            ("metrics.queue_refresh_ms", self.metrics.queue_refresh_ms),
        ] {
            if v == 0 {
                bail!("{name} must be at least 1");
            }
        }
        if ws.client_timeout_ms <= ws.ping_interval_ms {
            bail!(
                "ws.client_timeout_ms ({}) must be above ws.ping_interval_ms ({}): a client idle between pings would be closed",
                ws.client_timeout_ms,
                ws.ping_interval_ms
            );
        }
        if ws.max_frame_bytes < 1024 {
            bail!("ws.max_frame_bytes must be at least 1024 (a hello with its token needs several hundred bytes)");
        }
        // An Origin is `scheme://host[:port]`: an entry without its scheme would never match.
        for o in &self.allowed_origins {
            let o = o.trim();
            let origin = o.split_once("://").is_some_and(|(scheme, host)| {
                !scheme.is_empty() && !host.is_empty() && !host.trim_end_matches('/').contains('/')
            });
            if o != "*" && !origin {
                bail!("allowed_origins: {o:?} is no origin: write scheme://host[:port] (e.g. https://game.example), or *");
            }
            // Origins a browser never sends: each would silently admit nothing.
            if o.contains('@') {
                bail!("allowed_origins: {o:?} has user information, which an Origin never has: write scheme://host[:port]");
            }
            if o != "*" && o.contains('*') {
                bail!("allowed_origins: {o:?}: wildcards within a name are not supported; list each origin, or * for any");
            }
        }
        Ok(())
    }
}

// The value types settings are made of. They live here so that this module imports nothing
// but leaf modules: `auth` and `limiter` use them (and re-export them), never the other way.

/// The longest a player token may live by default (`auth.max_token_lifetime_s`): 30 days.
pub const DEFAULT_MAX_TOKEN_LIFETIME_S: u64 = 30 * 86_400;

/// A secret string: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// 32 random bytes, hex.
    pub fn generate() -> Secret {
        let bytes: [u8; 32] = rand::random();
        Secret(hex::encode(bytes))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// What a bearer key may do (`docs/protocol.md`, "HTTP API"). Each scope includes the ones
/// below it: `admin` > `game_server` > `read`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Reads of boards, logs, bans and queue counts; nothing that writes.
    Read,
    /// A game's own server: mint player tokens, submit scores for players, and read.
    GameServer,
    /// Everything.
    Admin,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::GameServer => "game_server",
            Scope::Admin => "admin",
        }
    }

    /// Whether a key of this scope may do what needs `needed`.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }
}

/// The name the single admin token (`admin_token`) goes by in the audit log.
pub const ADMIN_TOKEN_NAME: &str = "admin";

/// How a rate limit counts (`docs/protocol.md`, "Rate limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Exact: one ZSET entry per request in the window.
    #[default]
    SlidingLog,
    /// Token bucket (generic cell rate algorithm): O(1) memory per subject.
    Gcra,
}

/// A rate limit, enforced by `limiter`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Names the limiter's keys: `rl:{<name>:<subject>}`.
    pub name: String,
    pub algorithm: Algorithm,
    pub limit: u32,
    pub window_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::sync::{Mutex, MutexGuard};

    /// Configuration tests read the process environment (`Settings::load`, clap's `env`): each
    /// holds this guard, which makes them take turns and hides every `SCORECAST_*` variable of
    /// the surrounding environment until the test ends (then restores them), so nothing around
    /// a test leaks in and the variables one test sets never reach another.
    struct CleanEnv {
        saved: Vec<(OsString, OsString)>,
        _turn: MutexGuard<'static, ()>,
    }

    static ENV_TURN: Mutex<()> = Mutex::new(());

    impl CleanEnv {
        fn new() -> CleanEnv {
            let turn = ENV_TURN.lock().unwrap_or_else(|p| p.into_inner());
            let saved: Vec<_> = std::env::vars_os()
                .filter(|(k, _)| {
                    k.to_str().is_some_and(|k| {
                        k.starts_with("SCORECAST_") && k != "SCORECAST_REDIS_SERVER"
                    })
                })
                .collect();
            for (k, _) in &saved {
                std::env::remove_var(k);
            }
            CleanEnv { saved, _turn: turn }
        }

        fn set(&self, k: &str, v: &str) {
            std::env::set_var(k, v);
        }
    }

    impl Drop for CleanEnv {
        fn drop(&mut self) {
            let set: Vec<OsString> = std::env::vars_os()
                .map(|(k, _)| k)
                .filter(|k| {
                    k.to_str().is_some_and(|k| {
                        k.starts_with("SCORECAST_") && k != "SCORECAST_REDIS_SERVER"
                    })
                })
                .collect();
            for k in set {
                std::env::remove_var(k);
            }
            for (k, v) in &self.saved {
                std::env::set_var(k, v);
            }
        }
    }

    /// The layers in order: defaults < file < `SCORECAST_<SECTION>__<KEY>` variables < flags,
    /// each flag also read from its own variable (and the command line beating that); secrets
    /// given through the environment never show in `Debug`.
    #[test]
    fn the_environment_layer_sits_between_the_file_and_the_flags() {
        let env = CleanEnv::new();
        let dir = std::env::temp_dir().join(format!("sc-cfg-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\n[ws]\nping_interval_ms = 1000\nslow_client_ms = 700\n\
             [validators]\nfuel = 1000\n",
        )
        .unwrap();
        env.set("SCORECAST_CONFIG", file.to_str().unwrap());
        env.set("SCORECAST_WS__PING_INTERVAL_MS", "2000");
        env.set("SCORECAST_PUBLIC_LIMIT__LIMIT", "7");
        env.set("SCORECAST_VALIDATORS__DEADLINE_MS", "250");
        env.set("SCORECAST_LISTEN", "127.0.0.1:9002");
        let admin = "admin-token-from-the-environment-0123456789";
        env.set("SCORECAST_ADMIN_TOKEN", admin);

        let s = Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).unwrap();
        assert_eq!(s.ws.ping_interval_ms, 2000, "env beats the file");
        assert_eq!(s.ws.slow_client_ms, 700, "the file beats the defaults");
        assert_eq!(s.ws.client_timeout_ms, 45_000, "defaults fill the rest");
        assert_eq!(s.public_limit.limit, 7);
        let sandbox = s.validators.limits();
        assert_eq!(
            sandbox.fuel, 1000,
            "the sandbox's limits come from the file"
        );
        assert_eq!(
            sandbox.deadline,
            Duration::from_millis(250),
            "and the environment"
        );
        assert_eq!(sandbox.proof_bytes, 64 << 10, "defaults fill the rest");
        assert_eq!(s.listen.port(), 9002, "SCORECAST_LISTEN beats the file");
        assert_eq!(s.admin_token.as_ref().map(Secret::expose), Some(admin));
        assert!(
            !format!("{s:?}").contains(admin),
            "secrets stay out of Debug"
        );

        let flags = Cli::try_parse_from(["scorecast", "--listen", "127.0.0.1:9003"]).unwrap();
        assert_eq!(
            Settings::load(&flags).unwrap().listen.port(),
            9003,
            "a flag beats its variable"
        );

        env.set("SCORECAST_WS__PING_INTERVAL_MS", "often");
        assert!(
            Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).is_err(),
            "a bad value is refused, not ignored"
        );
    }

    /// Without any configuration: the built-in defaults, and no Redis URL (the embedded one).
    #[test]
    fn with_nothing_configured_the_defaults_apply() {
        let _env = CleanEnv::new();
        let s = Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).unwrap();
        assert_eq!(s.listen, "127.0.0.1:8080".parse().unwrap());
        assert!(s.redis_url.is_none());
        assert_eq!(s.max_conns_per_addr, 1000);
        assert_eq!(
            (s.public_limit.limit, s.public_limit.window_ms),
            (100, 1000)
        );
        assert!(!s.dev);
    }

    #[test]
    fn flags_override_the_file_and_secrets_are_required() {
        let _env = CleanEnv::new();
        let dir = std::env::temp_dir().join(format!("sc-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\n[boards.speedrun]\norder = \"asc\"\nop = \"best\"\n\
             [boards.free]\nsubmit_limit = \"unlimited\"\n[auth]\nmax_token_lifetime_s = 86400\n\
             [redis]\nwait_replicas = 1\n\
             [boards.cup.tournament]\njoin_required = true\nmax_size = 8\n\
             [boards.cup.tournament.schedule]\nstart_ms = 10\nend_ms = 20\n",
        )
        .unwrap();
        let cli = Cli {
            config: Some(file),
            listen: Some("127.0.0.1:9001".parse().unwrap()),
            ..Default::default()
        };
        let mut s = Settings::load(&cli).unwrap();
        assert_eq!(s.listen.port(), 9001);
        assert_eq!(s.boards["speedrun"].order, scorecast_shared::Order::Asc);
        assert_eq!(
            s.boards["speedrun"].submit_limit,
            Some(scorecast_shared::DEFAULT_SUBMIT_LIMIT)
        );
        assert_eq!(
            s.boards["free"].submit_limit, None,
            "TOML's way to say null"
        );
        let cup = s.boards["cup"]
            .tournament
            .expect("a tournament from the file");
        assert_eq!(
            (cup.schedule.start_ms, cup.schedule.end_ms, cup.max_size),
            (Some(10), Some(20), Some(8))
        );
        assert!(cup.join_required && s.boards["cup"].validate().is_ok());
        assert_eq!(s.auth.max_token_lifetime_s, 86_400);
        assert_eq!(
            (s.redis.wait_replicas, s.redis.wait_timeout_ms),
            (1, 500),
            "[redis] with the timeout's default"
        );
        assert!(s.finish().is_err(), "no secrets outside dev");
        s.admin_token = Some(Secret::new("short"));
        s.token_secret = Some(Secret::generate());
        assert!(s.finish().is_err(), "secrets of at least 32 bytes");
        assert!(!format!("{s:?}").contains("short"));
    }

    /// WebSocket timings and sizes that would stop every session are refused at start-up.
    #[test]
    fn websocket_settings_that_stop_every_session_are_refused() {
        let _env = CleanEnv::new();
        let s = Settings::load(&Cli::try_parse_from(["scorecast", "--dev"]).unwrap()).unwrap();
        assert!(s.check().is_ok());
        type Spoil = fn(&mut Settings);
        let cases: [(&str, Spoil); 6] = [
            ("ping_interval_ms", |s| s.ws.ping_interval_ms = 0),
            ("max_frame_bytes", |s| s.ws.max_frame_bytes = 0),
            ("client_timeout_ms", |s| {
                s.ws.client_timeout_ms = s.ws.ping_interval_ms
            }),
            ("slow_client_ms", |s| s.ws.slow_client_ms = 0),
            ("max_views_per_session", |s| s.ws.max_views_per_session = 0),
            ("queue_refresh_ms", |s| s.metrics.queue_refresh_ms = 0),
        ];
        for (name, bad) in cases {
            let mut t = s.clone();
            bad(&mut t);
            let e = t.check().unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
        }
    }

    /// Allowed origins are `scheme://host[:port]` (a trailing slash is fine) or `*`; an entry
    /// that would never match a browser's Origin (no scheme, a path, user information, a
    /// wildcard within a name) is refused at start-up.
    #[test]
    fn allowed_origins_must_be_origins() {
        let _env = CleanEnv::new();
        let mut s = Settings::load(&Cli::try_parse_from(["scorecast", "--dev"]).unwrap()).unwrap();
        for good in ["https://game.example", "http://127.0.0.1:8080/", "*"] {
            s.allowed_origins = vec![good.into()];
            assert!(s.check().is_ok(), "{good}");
        }
        for bad in [
            "game.example",
            "https://",
            "https://game.example/play",
            "://x",
        ] {
            s.allowed_origins = vec!["https://ok.example".into(), bad.into()];
            let e = s.check().unwrap_err().to_string();
            assert!(e.contains("is no origin"), "{bad}: {e}");
        }
        for (bad, says) in [
            ("https://user@game.example", "user information"),
            ("https://*.example", "wildcards"),
            ("https://game*.example", "wildcards"),
        ] {
            s.allowed_origins = vec![bad.into()];
            let e = s.check().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// Trusted proxies come as addresses or networks, from a variable or the file; a bad one
    /// is refused, not ignored.
    #[test]
    fn trusted_proxies_are_networks() {
        let env = CleanEnv::new();
        env.set("SCORECAST_TRUSTED_PROXIES", "127.0.0.1,10.0.0.0/8");
        env.set("SCORECAST_FORWARDED_HEADER", "forwarded");
        let s = Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).unwrap();
        assert_eq!(s.trusted_proxies.len(), 2);
        assert_eq!(s.forwarded_header, ForwardedHeader::Forwarded);
        assert_eq!(
            s.trusted_proxies[0].0.to_string(),
            "127.0.0.1/32",
            "an address"
        );
        assert!(s.trusted_proxies[1]
            .0
            .contains(&"10.2.3.4".parse::<std::net::IpAddr>().unwrap()));
        env.set("SCORECAST_TRUSTED_PROXIES", "proxy.example");
        assert!(Cli::try_parse_from(["scorecast"]).is_err());

        drop(env);
        let _env = CleanEnv::new();
        let dir = std::env::temp_dir().join(format!("sc-cfg-proxies-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "trusted_proxies = [\"::1\", \"192.0.2.0/24\"]\nforwarded_header = \"x-forwarded-for\"\n",
        )
        .unwrap();
        let cli = Cli {
            config: Some(file.clone()),
            ..Default::default()
        };
        let s = Settings::load(&cli).unwrap();
        assert_eq!(s.trusted_proxies[0].0.to_string(), "::1/128");
        assert_eq!(s.forwarded_header, ForwardedHeader::XForwardedFor);
        std::fs::write(&file, "trusted_proxies = [\"10.0.0.300\"]\n").unwrap();
        assert!(Settings::load(&cli).is_err(), "a bad address in the file");
    }

    /// Named keys come from the file or the environment with their scope; a short, shared or
    /// misnamed key is refused at start-up, and their secrets never show in `Debug`.
    #[test]
    fn named_keys_are_read_and_checked() {
        let env = CleanEnv::new();
        let dir = std::env::temp_dir().join(format!("sc-cfg-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        let dash = "d".repeat(40);
        std::fs::write(
            &file,
            format!("[keys.dashboard]\nscope = \"read\"\nsecret = \"{dash}\"\n"),
        )
        .unwrap();
        env.set("SCORECAST_CONFIG", file.to_str().unwrap());
        let game = "g".repeat(40);
        env.set("SCORECAST_KEYS__STUDIO__SCOPE", "game_server");
        env.set("SCORECAST_KEYS__STUDIO__SECRET", &game);
        env.set("SCORECAST_PREVIOUS_TOKEN_SECRET", &"p".repeat(32));
        let mut s = Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).unwrap();
        assert_eq!(s.keys["dashboard"].scope, Scope::Read);
        assert_eq!(s.keys["studio"].scope, Scope::GameServer);
        assert_eq!(s.keys["studio"].secret.expose(), game);
        assert!(s.previous_token_secret.is_some());
        let printed = format!("{s:?}");
        assert!(!printed.contains(&dash) && !printed.contains(&game));
        s.admin_token = Some(Secret::generate());
        s.token_secret = Some(Secret::generate());
        assert!(s.clone().finish().is_ok());

        let mut shared = s.clone();
        shared.keys.get_mut("dashboard").unwrap().secret = Secret::new(game.clone());
        assert!(shared.finish().is_err(), "two keys, one secret");
        let mut short = s.clone();
        short.keys.get_mut("dashboard").unwrap().secret = Secret::new("short");
        assert!(short.finish().is_err(), "a short key");
        let mut named_admin = s.clone();
        let k = named_admin.keys.remove("dashboard").unwrap();
        named_admin.keys.insert("admin".into(), k);
        assert!(named_admin.finish().is_err(), "the admin token's name");
        env.set("SCORECAST_KEYS__STUDIO__SCOPE", "root");
        assert!(
            Settings::load(&Cli::try_parse_from(["scorecast"]).unwrap()).is_err(),
            "an unknown scope"
        );
    }

    #[test]
    fn dev_generates_secrets_and_the_demo_board() {
        let _env = CleanEnv::new();
        let mut s = Settings {
            dev: true,
            ..Default::default()
        };
        let printed = s.finish().unwrap();
        assert!(printed.is_some());
        assert_eq!(
            s.boards[DEV_BOARD].submit_limit, None,
            "the demo board is unlimited"
        );
        let demo = &s.boards[DEV_BOARD];
        assert_eq!(
            (demo.op, demo.validator.as_deref()),
            (Op::Best, Some("2048")),
            "the demo board is verified by the built-in 2048 validator"
        );
        assert_eq!(demo.validate(), Ok(()));
    }
}
