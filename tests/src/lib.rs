//! The end-to-end harness: real `redis-server` processes on loopback (the article's
//! Testcontainers, without Docker), each behind a relay whose port the harness holds (see
//! [`test_redis`]), and the real server on port 0 against them. Each test gets its own Redis, so
//! tests never share keys.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use scorecast_server::auth::{Secret, Tokens};
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::embedded::RedisProcess;
use scorecast_server::startup::Application;
use scorecast_server::state::AppState;
use scorecast_shared::Id;
use serde_json::{json, Value};

pub mod cluster;
pub mod load;
pub mod play2048;
pub mod process;
pub mod test_redis;
pub mod ws;

pub use crate::test_redis::TestRedis;

pub use scorecast_server;
pub use scorecast_shared;

pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789abcdef0123456789";
pub const TOKEN_SECRET: &str = "test-token-secret-0123456789abcdef0123456789";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A fresh directory under `target/test-tmp`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let d = root()
        .join("target")
        .join("test-tmp")
        .join(format!("{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A private redis-server (AOF on), proven to be this test's own (see [`test_redis`]); for
/// tests that never restart it.
pub fn start_redis() -> RedisProcess {
    test_redis::start_ours(&temp_dir("redis"), true).expect("start redis-server")
}

/// A private redis-server (AOF on, so a restart keeps the data) behind a relay whose address
/// survives restarts: what [`spawn_app`] gives each test.
pub fn start_test_redis() -> TestRedis {
    TestRedis::start(&temp_dir("redis"), true).expect("start redis-server")
}

/// Settings for a test server on port 0 against `redis_url`.
pub fn test_settings(redis_url: &str) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        redis_url: Some(Secret::new(redis_url)),
        admin_token: Some(Secret::new(ADMIN_TOKEN)),
        token_secret: Some(Secret::new(TOKEN_SECRET)),
        web_dir: root().join("web"),
        ..Settings::default()
    }
}

pub struct TestApp {
    /// Its HTTP and WebSocket front door (`app.board(..)`, `app.ws_url()`, … through `Deref`).
    pub api: Api,
    pub redis: TestRedis,
    pub state: AppState,
    pub clock: Clock,
    pub handle: actix_web::dev::ServerHandle,
}

impl std::ops::Deref for TestApp {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

/// A running instance as a client sees it: its HTTP API and WebSocket endpoint on loopback
/// (shared by [`TestApp`] and the cluster harness's instances).
pub struct Api {
    pub addr: String,
    pub port: u16,
    pub http: reqwest::Client,
}

/// Starts a real Redis and a real server (Redis clock).
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}, Clock::Redis).await
}

/// Starts a real Redis and a real server, after `tweak` adjusts the settings.
pub async fn spawn_app_with(tweak: impl FnOnce(&mut Settings), clock: Clock) -> TestApp {
    let redis = start_test_redis();
    let mut settings = test_settings(&redis.url());
    tweak(&mut settings);
    spawn_on(redis, settings, clock).await
}

/// Starts a server against an already running Redis.
pub async fn spawn_on(redis: TestRedis, settings: Settings, clock: Clock) -> TestApp {
    let app = Application::build_with_clock(settings, clock.clone())
        .await
        .expect("build app");
    let port = app.port();
    let state = app.state().clone();
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        api: Api::new(port, Duration::from_secs(10)),
        redis,
        state,
        clock,
        handle,
    }
}

/// A response: status, headers and JSON body (Null when empty or not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Resp {
    /// Reads a response: its status, headers and JSON body (`null` when the body is not JSON).
    pub async fn read(res: reqwest::Response) -> Resp {
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        Resp {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    /// The `error.code` of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

impl Api {
    /// The front door of an instance listening on loopback `port`; requests time out after
    /// `timeout`.
    pub fn new(port: u16, timeout: Duration) -> Api {
        Api {
            addr: format!("http://127.0.0.1:{port}"),
            port,
            http: reqwest::Client::builder().timeout(timeout).build().unwrap(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.port)
    }

    /// Sends a request; `admin` adds the admin bearer token.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>, admin: bool) -> Resp {
        let bearer = admin.then_some(ADMIN_TOKEN);
        self.call_as(bearer, method, path, body.as_ref()).await
    }

    /// Sends a request with this bearer token (none: anonymous) and this JSON body (none: no
    /// body).
    pub async fn call_as(
        &self,
        bearer: Option<&str>,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Resp {
        let mut req = self.http.request(method, self.url(path));
        if let Some(token) = bearer {
            req = req.bearer_auth(token);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        Resp::read(req.send().await.expect("request")).await
    }

    /// The text of `GET /metrics` (no token); panics unless it answers 200.
    pub async fn metrics(&self) -> String {
        let res = self.http.get(self.url("/metrics")).send().await;
        let res = res.expect("GET /metrics");
        assert_eq!(res.status(), 200, "GET /metrics");
        res.text().await.expect("the /metrics body")
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None, false).await
    }

    pub async fn admin(&self, method: Method, path: &str, body: Value) -> Resp {
        self.call(method, path, Some(body), true).await
    }

    /// Creates a board with the given §3 fields; panics unless it worked.
    pub async fn board(&self, id: &str, cfg: Value) -> Resp {
        let r = self
            .admin(Method::PUT, &format!("/admin/boards/{id}"), cfg)
            .await;
        assert_eq!(r.status, 200, "PUT board {id}: {:?}", r.body);
        r
    }

    /// Admin score endpoint: adds `points` (board's op) and returns the body.
    pub async fn score(&self, board: &str, player: &str, points: i64) -> Value {
        let r = self
            .admin(
                Method::POST,
                &format!("/admin/boards/{board}/players/{player}/score"),
                json!({ "points": points }),
            )
            .await;
        assert_eq!(r.status, 200, "score {board}/{player}: {:?}", r.body);
        r.body
    }

    /// Deletes the board (`DELETE /admin/boards/{id}`) and returns the answer, whatever it is.
    pub async fn delete_board(&self, id: &str) -> Resp {
        let path = format!("/admin/boards/{id}");
        self.call(Method::DELETE, &path, None, true).await
    }

    /// Starts season `season` of the board by hand (`POST /admin/boards/{board}/rollover`) and
    /// returns the answer, whatever it is.
    pub async fn rollover(&self, board: &str, season: &str) -> Resp {
        let path = format!("/admin/boards/{board}/rollover");
        self.admin(Method::POST, &path, json!({ "season": season }))
            .await
    }

    /// A player token signed with the test secret.
    pub fn token(&self, player: &str, name: Option<&str>) -> String {
        Tokens::new(&Secret::new(TOKEN_SECRET)).issue(&Id::parse(player).unwrap(), name, 3600)
    }
}

impl TestApp {
    /// A raw Redis connection to inspect state.
    pub async fn redis_conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// A raw connection to redis-server itself, past the relay (it works while the relay
    /// refuses new connections).
    pub async fn redis_conn_direct(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.redis.direct_url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// From now on Redis's slow log records every command (`true`; the log is emptied first,
    /// and holds up to 10 000 entries), or only those above 10 ms again (`false`, the default).
    pub async fn log_every_command(&self, on: bool) {
        let mut c = self.redis_conn_direct().await;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(if on { 0 } else { 10_000 })
            .arg("slowlog-max-len")
            .arg(10_000)
            .query_async(&mut c)
            .await
            .unwrap();
        if on {
            let _: () = redis::cmd("SLOWLOG")
                .arg("RESET")
                .query_async(&mut c)
                .await
                .unwrap();
        }
    }

    /// The arguments of each command in Redis's slow log, newest first (past 32 arguments the
    /// 32nd says `... (N more arguments)`; an argument past 128 bytes is cut).
    pub async fn slow_log(&self) -> Vec<Vec<String>> {
        let mut c = self.redis_conn_direct().await;
        let log: Vec<redis::Value> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(-1)
            .query_async(&mut c)
            .await
            .unwrap();
        log.into_iter()
            .map(|entry| {
                let redis::Value::Array(fields) = entry else {
                    panic!("a slow log entry: {entry:?}")
                };
                redis::from_redis_value(fields[3].clone()).unwrap()
            })
            .collect()
    }

    /// Every key and its value type/content, to prove that a refused request changed nothing.
    pub async fn dump(&self) -> Vec<(String, String)> {
        let mut c = self.redis_conn().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut c)
            .await
            .unwrap();
        // Public reads count against the per-address limiter, and every instance writes its live
        // counters each second (`sc:{stats}`); neither is data.
        keys.retain(|k| !k.starts_with("rl:{read:") && k != "sc:{stats}");
        keys.sort();
        let mut out = Vec::new();
        for k in keys {
            let v: Vec<u8> = redis::cmd("DUMP")
                .arg(&k)
                .query_async(&mut c)
                .await
                .unwrap();
            out.push((k, format!("{v:?}")));
        }
        out
    }
}

/// Another server instance on the same Redis as a [`TestApp`] (several instances may share one
/// Redis).
pub struct Instance {
    pub port: u16,
    pub state: AppState,
    pub handle: actix_web::dev::ServerHandle,
}

impl Instance {
    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl TestApp {
    /// A second server instance on this app's Redis, with the same settings tweaks applied.
    pub async fn second_instance_with(&self, tweak: impl FnOnce(&mut Settings)) -> Instance {
        let mut settings = test_settings(&self.redis.url());
        tweak(&mut settings);
        let app = Application::build_with_clock(settings, self.clock.clone())
            .await
            .expect("second instance");
        let (port, state, handle) = (app.port(), app.state().clone(), app.handle());
        tokio::spawn(app.run_until_stopped());
        Instance {
            port,
            state,
            handle,
        }
    }

    pub async fn second_instance(&self) -> Instance {
        self.second_instance_with(|_| {}).await
    }

    /// Whether Redis holds this key.
    pub async fn key_exists(&self, key: &str) -> bool {
        let mut c = self.redis_conn().await;
        redis::cmd("EXISTS")
            .arg(key)
            .query_async(&mut c)
            .await
            .unwrap()
    }

    /// The run record kept in Redis for `run` of `board` (`lb:{<board>}:run:<run>`, JSON).
    pub async fn stored_run(&self, board: &str, run: &str) -> serde_json::Value {
        let mut c = self.redis_conn().await;
        let kept: String = redis::cmd("GET")
            .arg(format!("lb:{{{board}}}:run:{run}"))
            .query_async(&mut c)
            .await
            .unwrap();
        serde_json::from_str(&kept).unwrap()
    }

    /// One field of Redis `INFO` (e.g. `blocked_clients`), as a number.
    pub async fn redis_info(&self, field: &str) -> i64 {
        let mut c = self.redis_conn().await;
        let info: String = redis::cmd("INFO").query_async(&mut c).await.unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in INFO"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits (bounded) until Redis has written every acknowledged write to its AOF file. Under
    /// `appendfsync everysec` Redis may hold writes back while an earlier fsync is slow (a busy
    /// disk), and a kill then loses them: the documented "about a second" of loss. A test of
    /// what survives a crash waits for this first, so it tests what reached the file.
    pub async fn wait_aof_written(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.redis_info("aof_buffer_length").await != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the AOF buffer never drained"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// How many times Redis has run `command` (lower case), from `INFO commandstats`.
    pub async fn redis_command_calls(&self, command: &str) -> u64 {
        let counts = self.redis_command_counts().await;
        counts.get(command).copied().unwrap_or(0)
    }

    /// How many times Redis has run each command (lower case) so far, from `INFO commandstats`.
    pub async fn redis_command_counts(&self) -> std::collections::BTreeMap<String, u64> {
        let mut c = self.redis_conn().await;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut c)
            .await
            .unwrap();
        info.lines()
            .filter_map(|l| {
                let (command, rest) = l.strip_prefix("cmdstat_")?.split_once(":calls=")?;
                let calls = rest.split(',').next()?.parse().ok()?;
                Some((command.to_owned(), calls))
            })
            .collect()
    }

    /// Waits (bounded) until at least `n` clients are blocked in Redis (BZPOPMIN, BLPOP…):
    /// the event a test about blocking waits must see before it acts.
    pub async fn wait_blocked_clients(&self, n: i64) {
        let deadline = std::time::Instant::now() + EVENTUALLY;
        loop {
            let blocked = self.redis_info("blocked_clients").await;
            if blocked >= n {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "only {blocked} of {n} clients blocked in Redis after {EVENTUALLY:?}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// A public-read request from another loopback address (Linux routes all of 127/8 to lo).
    pub async fn get_from(&self, ip: [u8; 4], path: &str) -> Resp {
        self.request_from(ip, Method::GET, path, &[]).await
    }

    /// A request without a body from loopback address `ip`, with extra `headers` (an `Origin`,
    /// a forwarding header, …).
    pub async fn request_from(
        &self,
        ip: [u8; 4],
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Resp {
        let http = reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(ip))
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let mut req = http.request(method, self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Resp::read(req.send().await.expect("request")).await
    }
}

/// The TCP connections of the server listening on loopback port `port`, as the kernel holds
/// them (`/proc/net/tcp` and `tcp6`), in any state but TIME_WAIT/CLOSE: each one's client
/// (peer) port and its send queue (bytes the client has not taken).
pub fn server_tcp_sockets(port: u16) -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(table) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in table.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port_of = |a: &str| {
                a.rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
            };
            let (local, remote, state) = (port_of(f[1]), port_of(f[2]), f[3]);
            // 06 TIME_WAIT, 07 CLOSE: nothing queued, no descriptor.
            if let (Some(local), Some(remote)) = (local, remote) {
                if local == port && state != "06" && state != "07" {
                    let tx = f[4].split(':').next().unwrap_or("0");
                    out.push((remote, u64::from_str_radix(tx, 16).unwrap_or(0)));
                }
            }
        }
    }
    out
}

/// The (player, score) pairs of a view's `entries`, in order.
pub fn players(v: &Value) -> Vec<(String, i64)> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["player"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A job notifier that delivers nothing (and says so: 0 connections), for tests that run jobs
/// by hand with `jobs::run_next`.
pub struct NoNotify;

impl scorecast_server::jobs::Notifier for NoNotify {
    fn notify<'a>(
        &'a self,
        _: &'a Id,
        _: &'a str,
        _: &'a Value,
    ) -> futures_util::future::BoxFuture<'a, scorecast_server::error::AppResult<usize>> {
        Box::pin(futures_util::future::ready(Ok(0)))
    }
}

/// How long a test waits for something that should happen: a bound on failure only, generous
/// because two shared cores under four builds are slow; a passing test never waits it out.
pub const EVENTUALLY: Duration = Duration::from_secs(10);
/// How often a bounded wait re-checks its condition.
pub const POLL: Duration = Duration::from_millis(10);

/// Re-checks `cond` until it holds; panics with `what` after [`EVENTUALLY`].
pub async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + EVENTUALLY;
    while !cond().await {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {EVENTUALLY:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// A player token signed with the test secret, valid for an hour.
pub fn player_token(player: &str, name: Option<&str>) -> String {
    Tokens::new(&Secret::new(TOKEN_SECRET)).issue(&Id::parse(player).unwrap(), name, 3600)
}

/// Keeps the redis-server at `url` busy for `ms` with a script that spins (scripts run one at a
/// time), and returns once it is busy: a PING on another connection no longer answers within
/// 100 ms. The handle ends when the script does.
pub async fn hold_redis_busy(url: &str, ms: u64) -> tokio::task::JoinHandle<()> {
    let client = redis::Client::open(url).unwrap();
    // Its own connection without a response timeout (redis-rs gives async connections 500 ms).
    let mut blocker = client
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .unwrap();
    let mut probe = client.get_multiplexed_async_connection().await.unwrap();
    let busy = tokio::spawn(async move {
        let _: () = redis::cmd("EVAL")
            .arg("local t = redis.call('TIME'); local stop = t[1] * 1000000 + t[2] + ARGV[1] * 1000; repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop")
            .arg(0)
            .arg(ms)
            .query_async(&mut blocker)
            .await
            .unwrap();
    });
    let deadline = std::time::Instant::now() + Duration::from_millis(ms);
    loop {
        let cmd = redis::cmd("PING");
        let ping = cmd.query_async::<String>(&mut probe);
        if tokio::time::timeout(Duration::from_millis(100), ping)
            .await
            .is_err()
        {
            return busy;
        }
        assert!(std::time::Instant::now() < deadline, "Redis never got busy");
    }
}

/// An id the test knows is valid.
pub fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// A player's submission through the core, with the board's own op and limits.
pub fn submission(
    board: &str,
    player: &str,
    sid: &str,
    points: i64,
) -> scorecast_server::store::Submission {
    scorecast_server::store::Submission {
        board: id(board),
        player: id(player),
        id: id(sid),
        points,
        op: None,
        name: None,
        by: None,
        verified: false,
    }
}

/// The score of `player` among a view's or a read's `entries`, if listed.
pub fn score_of(v: &Value, player: &str) -> Option<i64> {
    v["entries"]
        .as_array()?
        .iter()
        .find(|e| e["player"] == player)
        .and_then(|e| e["score"].as_i64())
}
