//! The end-to-end harness: real `redis-server` processes on free loopback ports (the article's
//! Testcontainers, without Docker) and the real server on port 0 against them. Each test gets
//! its own Redis, so tests never share keys.

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
pub mod ws;

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

/// A private redis-server (AOF on, so a restart keeps the data).
pub fn start_redis() -> RedisProcess {
    RedisProcess::start(&temp_dir("redis"), true).expect("start redis-server")
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
    pub addr: String,
    pub port: u16,
    pub redis: RedisProcess,
    pub state: AppState,
    pub http: reqwest::Client,
    pub clock: Clock,
    pub handle: actix_web::dev::ServerHandle,
}

/// Starts a real Redis and a real server (Redis clock).
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}, Clock::Redis).await
}

/// Starts a real Redis and a real server, after `tweak` adjusts the settings.
pub async fn spawn_app_with(tweak: impl FnOnce(&mut Settings), clock: Clock) -> TestApp {
    let redis = start_redis();
    let mut settings = test_settings(&redis.url());
    tweak(&mut settings);
    spawn_on(redis, settings, clock).await
}

/// Starts a server against an already running Redis.
pub async fn spawn_on(redis: RedisProcess, settings: Settings, clock: Clock) -> TestApp {
    let app = Application::build_with_clock(settings, clock.clone())
        .await
        .expect("build app");
    let port = app.port();
    let state = app.state().clone();
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        addr: format!("http://127.0.0.1:{port}"),
        port,
        redis,
        state,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
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
    /// The `error.code` of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.port)
    }

    /// Sends a request; `admin` adds the admin bearer token.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>, admin: bool) -> Resp {
        let mut req = self.http.request(method, self.url(path));
        if admin {
            req = req.bearer_auth(ADMIN_TOKEN);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.expect("request");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        Resp {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
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

    /// A player token signed with the test secret.
    pub fn token(&self, player: &str, name: Option<&str>) -> String {
        Tokens::new(&Secret::new(TOKEN_SECRET)).issue(&Id::parse(player).unwrap(), name, 3600)
    }

    /// A raw Redis connection to inspect state.
    pub async fn redis_conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.redis.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Every key and its value type/content, to prove that a refused request changed nothing.
    pub async fn dump(&self) -> Vec<(String, String)> {
        let mut c = self.redis_conn().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut c)
            .await
            .unwrap();
        // Public reads count against the per-address limiter; that is not data.
        keys.retain(|k| !k.starts_with("rl:{read:"));
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
