//! `chaos`: the repeatable fault run behind `cargo xtask chaos`. It prints figures, it asserts
//! nothing: README's reliability section quotes them.
//!
//! Four scenarios, each with its own `redis-server` and its own Scorecast server child (this same
//! binary with `--serve`, so a SIGKILL hits the server alone):
//!
//! 1. **redis-server SIGKILL + restart** (AOF `everysec`) mid-load: WebSocket players submit `+1`
//!    with unique ids, one in flight each, and retry the same id after a timeout, a dropped
//!    connection or `unavailable` until it is acknowledged. Afterwards every player's score is
//!    compared with what was acknowledged: `lost` (acknowledged but missing: the ≤ 1 s that AOF
//!    `everysec` may lose), `double` (counted more than once: must be 0), seconds of errors.
//! 2. **Scorecast SIGKILL + restart** on the same port, the same load: nothing acknowledged may be
//!    lost (Redis kept it) and nothing counted twice (dedup).
//! 3. **queue workers SIGKILLed at random** while 10 000 jobs are processed: worker processes
//!    claim over HTTP with a short lease, record the job in Redis, then ack it and claim the next
//!    in one request (`ack?next=true`); one is killed and
//!    replaced every `--kill-every-ms`. Jobs lost must be 0; a job done twice is the
//!    at-least-once price of a kill between the work and its ack.
//! 4. **stalled spectators**: `--stalled` clients subscribe to `top 100` over a tiny receive
//!    buffer and never read, beside 10 normal spectators and busy players: push p99 of the normal
//!    ones, the server's RSS, the kernel's TCP memory, and the seconds until every stalled socket
//!    is gone from the server.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::StreamExt;
use scorecast_server::auth::{Secret, Tokens};
use scorecast_server::config::Settings;
use scorecast_server::embedded::{free_port, RedisProcess};
use scorecast_server::startup::Application;
use scorecast_shared::Id;
use scorecast_tests::load::{next_json, percentile, rss_bytes, send, Ws};
use serde_json::{json, Value};

const TOKEN_SECRET: &str = "chaos-token-secret-0123456789abcdef0123456789";
const ADMIN_TOKEN: &str = "chaos-admin-token-0123456789abcdef01234567890";
const BOARD: &str = "chaos";
const QUEUE: &str = "chaos";
/// How long a player waits for the answer to one submission before it retries the same id.
const ANSWER_WAIT: Duration = Duration::from_secs(2);
/// After the load stops, retries still owed get this long to be acknowledged.
const DRAIN: Duration = Duration::from_secs(20);

struct Args {
    players: usize,
    seconds: u64,
    jobs: u64,
    queue_workers: usize,
    kill_every_ms: u64,
    stalled: usize,
    ban_boards: usize,
    /// `ban`: only the crash-mid-ban scenario.
    only_ban: bool,
}

const USAGE: &str = "chaos [--players N=50] [--seconds S=9] [--jobs J=10000] [--queue-workers W=4]
      [--kill-every-ms K=400] [--stalled C=1000] [--ban-boards B=1500] [--only ban]";

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            players: 50,
            seconds: 9,
            jobs: 10_000,
            queue_workers: 4,
            kill_every_ms: 400,
            stalled: 1_000,
            ban_boards: 1_500,
            only_ban: false,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            if flag == "-h" || flag == "--help" {
                println!("{USAGE}");
                std::process::exit(0);
            }
            let value = it
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
            if flag == "--only" {
                anyhow::ensure!(value == "ban", "--only takes `ban`\n{USAGE}");
                a.only_ban = true;
                continue;
            }
            let n: u64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            match flag.as_str() {
                "--players" => a.players = (n as usize).max(1),
                "--seconds" => a.seconds = n.max(3),
                "--jobs" => a.jobs = n.max(1),
                "--queue-workers" => a.queue_workers = (n as usize).max(1),
                "--kill-every-ms" => a.kill_every_ms = n.max(50),
                "--stalled" => a.stalled = n as usize,
                "--ban-boards" => a.ban_boards = (n as usize).max(200),
                _ => bail!("unknown flag {flag}\n{USAGE}"),
            }
        }
        Ok(a)
    }
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("--serve") => {
            let port: u16 = argv.get(1).context("--serve PORT REDIS_URL")?.parse()?;
            let url = argv.get(2).context("--serve PORT REDIS_URL")?.clone();
            actix_web::rt::System::new().block_on(serve(port, url))
        }
        Some("--worker") => {
            let port: u16 = argv.get(1).context("--worker PORT REDIS_URL")?.parse()?;
            let url = argv.get(2).context("--worker PORT REDIS_URL")?.clone();
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(worker(port, url))
        }
        _ => {
            let a = Args::parse(&argv)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(run(a))
        }
    }
}

/// The server child: a real Scorecast on a fixed port (so a restart comes back at the same
/// address), promoter and reaper on, every client from 127.0.0.1 allowed in.
async fn serve(port: u16, redis_url: String) -> anyhow::Result<()> {
    let settings = Settings {
        listen: format!("127.0.0.1:{port}").parse()?,
        redis_url: Some(Secret::new(redis_url)),
        admin_token: Some(Secret::new(ADMIN_TOKEN)),
        token_secret: Some(Secret::new(TOKEN_SECRET)),
        max_conns_per_addr: 0,
        // Players here submit as fast as acks return: no per-connection message limit.
        ws: scorecast_server::config::WsSettings {
            max_messages_per_sec: 0,
            ..Default::default()
        },
        ..Settings::default()
    };
    // A port freed by a SIGKILLed predecessor can take a moment to be bindable again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let app = loop {
        match Application::build(settings.clone()).await {
            Ok(app) => break app,
            Err(e) if Instant::now() < deadline => {
                eprintln!("chaos server: {e:#}; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    };
    println!("PORT {}", app.port());
    std::io::stdout().flush()?;
    app.run_until_stopped().await
}

/// A server child, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    redis_url: String,
}

impl Server {
    fn start(port: u16, redis_url: &str) -> anyhow::Result<Server> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--serve", &port.to_string(), redis_url])
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the server child")?;
        let stdout = child.stdout.take().context("child stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        anyhow::ensure!(line.starts_with("PORT "), "server child said {line:?}");
        Ok(Server {
            child,
            port,
            redis_url: redis_url.to_owned(),
        })
    }

    fn sigkill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn restart(&mut self) -> anyhow::Result<()> {
        self.sigkill();
        let fresh = Server::start(self.port, &self.redis_url)?;
        *self = fresh;
        Ok(())
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn ws(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.sigkill();
    }
}

fn scratch(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("scorecast-chaos-{}-{tag}", std::process::id()))
}

fn admin(http: &reqwest::Client, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
    http.request(method, url).bearer_auth(ADMIN_TOKEN)
}

async fn create_board(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let r = admin(
        http,
        reqwest::Method::PUT,
        format!("{base}/admin/boards/{BOARD}"),
    )
    .json(&json!({"order": "desc", "op": "incr", "submit_limit": null}))
    .send()
    .await?;
    anyhow::ensure!(
        r.status().is_success(),
        "creating the board: {}",
        r.status()
    );
    Ok(())
}

async fn run(a: Args) -> anyhow::Result<()> {
    if a.only_ban {
        return crash_mid_ban(&a).await.map(|f| f.print(a.ban_boards));
    }
    println!(
        "chaos: {} players, {} s of load per fault run",
        a.players, a.seconds
    );
    let redis_kill = submissions_under_fault(&a, Fault::Redis).await?;
    let server_kill = submissions_under_fault(&a, Fault::Server).await?;
    let queue = queue_workers_killed(&a).await?;
    let stalled = stalled_spectators(&a).await?;
    let ban = crash_mid_ban(&a).await?;

    println!();
    println!("| fault | acknowledged | lost (acknowledged, then missing) | counted twice | given up (unknown outcome) | seconds with errors |");
    println!("|---|---|---|---|---|---|");
    for (name, f) in [
        ("redis-server SIGKILL + restart (AOF everysec)", &redis_kill),
        ("Scorecast SIGKILL + restart", &server_kill),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} | {:.1} |",
            f.acked, f.lost, f.double, f.given_up, f.error_seconds
        );
    }
    println!();
    println!(
        "queue: {} jobs, {} worker kills: lost {}, dead-lettered {}, done twice {} (at-least-once), {:.1} s",
        a.jobs, queue.kills, queue.lost, queue.dead, queue.twice, queue.seconds
    );
    println!(
        "stalled spectators: {} stalled beside 10 normal: normal push p50 {:.0} ms, p99 {:.0} ms; server RSS {:.1} MiB (idle {:.1} MiB); kernel TCP memory {:.1} MiB at peak; every stalled socket gone after {}",
        a.stalled,
        stalled.push_p50_ms,
        stalled.push_p99_ms,
        stalled.rss_peak as f64 / 1048576.0,
        stalled.rss_idle as f64 / 1048576.0,
        stalled.tcp_mem_peak as f64 / 1048576.0,
        match stalled.gone_after {
            Some(s) => format!("{s:.1} s"),
            None => format!("NEVER ({} still open)", stalled.still_open),
        }
    );
    ban.print(a.ban_boards);
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    Redis,
    Server,
}

#[derive(Default)]
struct FaultFigures {
    acked: u64,
    lost: u64,
    double: u64,
    given_up: u64,
    error_seconds: f64,
}

/// What one player saw.
#[derive(Default)]
struct Tally {
    acked: u64,
    given_up: u64,
}

/// Error instants, as ms since the start of the run.
#[derive(Default)]
struct Errors {
    first: Option<u64>,
    last: Option<u64>,
}

impl Errors {
    fn record(&mut self, at_ms: u64) {
        self.first.get_or_insert(at_ms);
        self.last = Some(at_ms);
    }
}

async fn player_session(url: &str, token: &str) -> anyhow::Result<Ws> {
    let (mut ws, _) = tokio::time::timeout(ANSWER_WAIT, tokio_tungstenite::connect_async(url))
        .await
        .context("connect timed out")??;
    next_json(&mut ws, ANSWER_WAIT).await?; // the spectator welcome
    send(&mut ws, json!({"type": "hello", "token": token})).await?;
    let w = next_json(&mut ws, ANSWER_WAIT).await?;
    anyhow::ensure!(w["type"] == "welcome", "hello failed: {w}");
    Ok(ws)
}

/// One player: `+1` with a fresh id as soon as the last one is acknowledged, retrying the same
/// id (new connection when needed, backoff 50 → 800 ms) until it is acknowledged.
async fn play(
    url: String,
    token: String,
    name: String,
    stop: Arc<AtomicBool>,
    start: Instant,
    errors: Arc<Mutex<Errors>>,
) -> Tally {
    let mut tally = Tally::default();
    let mut ws: Option<Ws> = None;
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        k += 1;
        let id = format!("{name}-{k}");
        let mut backoff = Duration::from_millis(50);
        let drain_deadline = Instant::now() + DRAIN;
        let acked = loop {
            if stop.load(Ordering::Relaxed) && Instant::now() > drain_deadline {
                break false;
            }
            let attempt = async {
                if ws.is_none() {
                    ws = Some(player_session(&url, &token).await?);
                }
                let w = ws.as_mut().expect("just connected");
                send(
                    w,
                    json!({"type": "submit", "id": id, "board": BOARD, "points": 1}),
                )
                .await?;
                loop {
                    let m = next_json(w, ANSWER_WAIT).await?;
                    if m["id"] == id.as_str() {
                        return anyhow::Ok(m);
                    }
                }
            };
            match attempt.await {
                Ok(m) if m["type"] == "ack" => break true,
                Ok(m) if m["code"] == "unavailable" => {}
                Ok(m) => {
                    eprintln!("chaos: unexpected answer {m}");
                    break false;
                }
                Err(_) => ws = None,
            }
            errors
                .lock()
                .expect("errors lock")
                .record(start.elapsed().as_millis() as u64);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(800));
        };
        if acked {
            tally.acked += 1;
        } else {
            tally.given_up += 1;
        }
    }
    tally
}

async fn submissions_under_fault(a: &Args, fault: Fault) -> anyhow::Result<FaultFigures> {
    let label = match fault {
        Fault::Redis => "redis",
        Fault::Server => "server",
    };
    let mut redis = RedisProcess::start(&scratch(label), true)?;
    let mut server = Server::start(free_port()?, &redis.url())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    create_board(&http, &server.http()).await?;
    let tokens = Tokens::new(&Secret::new(TOKEN_SECRET));

    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(Mutex::new(Errors::default()));
    let start = Instant::now();
    let mut players = Vec::new();
    let names: Vec<String> = (0..a.players).map(|i| format!("p{i}")).collect();
    for name in &names {
        let token = tokens.issue(&Id::parse(name)?, None, 3600);
        players.push(tokio::spawn(play(
            server.ws(),
            token,
            name.clone(),
            stop.clone(),
            start,
            errors.clone(),
        )));
    }

    let third = Duration::from_secs(a.seconds) / 3;
    tokio::time::sleep(third).await;
    match fault {
        Fault::Redis => {
            println!(
                "{label}: SIGKILL redis-server at {:.1} s",
                start.elapsed().as_secs_f64()
            );
            redis.kill();
            tokio::time::sleep(Duration::from_secs(1)).await;
            redis.restart()?;
        }
        Fault::Server => {
            println!(
                "{label}: SIGKILL Scorecast at {:.1} s",
                start.elapsed().as_secs_f64()
            );
            tokio::task::block_in_place(|| server.restart())?;
        }
    }
    tokio::time::sleep(Duration::from_secs(a.seconds).saturating_sub(start.elapsed())).await;
    stop.store(true, Ordering::Relaxed);

    let mut acked = HashMap::new();
    let mut given_up = HashMap::new();
    for (name, p) in names.iter().zip(players) {
        let t = p.await?;
        acked.insert(name.clone(), t.acked);
        given_up.insert(name.clone(), t.given_up);
    }

    let mut f = FaultFigures::default();
    for name in &names {
        let r = http
            .get(format!(
                "{}/v1/boards/{BOARD}/players/{name}",
                server.http()
            ))
            .send()
            .await?;
        let score = if r.status() == reqwest::StatusCode::NOT_FOUND {
            0
        } else {
            let v: Value = r.json().await?;
            v["score"].as_u64().context("score")?
        };
        let (ack, gave) = (acked[name], given_up[name]);
        f.acked += ack;
        f.given_up += gave;
        f.lost += ack.saturating_sub(score);
        f.double += score.saturating_sub(ack + gave);
    }
    let e = errors.lock().expect("errors lock");
    if let (Some(a), Some(b)) = (e.first, e.last) {
        f.error_seconds = (b - a) as f64 / 1000.0;
    }
    println!(
        "{label}: {} acknowledged, {} lost, {} counted twice, {} given up, errors for {:.1} s",
        f.acked, f.lost, f.double, f.given_up, f.error_seconds
    );
    Ok(f)
}

struct QueueFigures {
    kills: u64,
    lost: u64,
    dead: u64,
    twice: u64,
    seconds: f64,
}

/// A queue worker process: claim (short lease) → record the job in Redis → ack and claim the
/// next job in the same request (`ack?next=true`), forever; a claim of its own only when the
/// ack brought no job.
async fn worker(port: u16, redis_url: String) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let mut redis = redis::Client::open(redis_url)?
        .get_multiplexed_async_connection()
        .await?;
    let base = format!("http://127.0.0.1:{port}/admin/queues/{QUEUE}");
    let mut held: Option<Value> = None;
    loop {
        let v = match held.take() {
            Some(v) => v,
            None => {
                let r = admin(
                    &http,
                    reqwest::Method::POST,
                    format!("{base}/claim?wait_ms=1000&lease_ms=1000"),
                )
                .send()
                .await?;
                if r.status() == reqwest::StatusCode::NO_CONTENT {
                    continue;
                }
                anyhow::ensure!(r.status().is_success(), "claim: {}", r.status());
                r.json().await?
            }
        };
        let id = v["job"]["id"].as_str().context("job id")?.to_owned();
        let token = v["lease"]["token"]
            .as_str()
            .context("lease token")?
            .to_owned();
        let _: () = redis::cmd("RPUSH")
            .arg("chaos:done")
            .arg(&id)
            .query_async(&mut redis)
            .await?;
        let r = admin(
            &http,
            reqwest::Method::POST,
            format!("{base}/jobs/{id}/ack?next=true&lease_ms=1000"),
        )
        .json(&json!({"token": token}))
        .send()
        .await?;
        // 200: the next job, under a lease of its own; 204: nothing was ready; 409: the lease
        // had lapsed (the job went to another worker).
        if r.status() == reqwest::StatusCode::OK {
            held = Some(r.json().await?);
        }
    }
}

fn start_worker(port: u16, redis_url: &str) -> anyhow::Result<Child> {
    Ok(Command::new(std::env::current_exe()?)
        .args(["--worker", &port.to_string(), redis_url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?)
}

async fn queue_workers_killed(a: &Args) -> anyhow::Result<QueueFigures> {
    let redis = RedisProcess::start(&scratch("queue"), true)?;
    let server = Server::start(free_port()?, &redis.url())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let base = format!("{}/admin/queues/{QUEUE}", server.http());

    // Enqueue, 32 at a time.
    let next = Arc::new(AtomicU64::new(0));
    let mut producers = Vec::new();
    for _ in 0..32 {
        let (http, base, next, jobs) = (http.clone(), base.clone(), next.clone(), a.jobs);
        producers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= jobs {
                    return anyhow::Ok(());
                }
                let r = admin(&http, reqwest::Method::POST, format!("{base}/jobs"))
                    .json(&json!({"id": format!("j{n}"), "kind": "chaos", "payload": {"n": n}, "max_attempts": 50}))
                    .send()
                    .await?;
                anyhow::ensure!(r.status().as_u16() == 201, "enqueue: {}", r.status());
            }
        }));
    }
    for p in producers {
        p.await??;
    }

    let start = Instant::now();
    let mut workers: Vec<Child> = (0..a.queue_workers)
        .map(|_| start_worker(server.port, &redis.url()))
        .collect::<anyhow::Result<_>>()?;
    let mut conn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    let mut kills = 0u64;
    let deadline = start + Duration::from_secs(180);
    let mut victim = 0usize;
    loop {
        tokio::time::sleep(Duration::from_millis(a.kill_every_ms)).await;
        let counts: Value = admin(&http, reqwest::Method::GET, base.clone())
            .send()
            .await?
            .json()
            .await?;
        let open = ["ready", "delayed", "processing"]
            .iter()
            .map(|k| counts[k].as_u64().unwrap_or(0))
            .sum::<u64>();
        if open == 0 || Instant::now() > deadline {
            break;
        }
        // A pseudo-random victim (no rand dependency needed for this).
        victim = (victim * 7 + 3 + kills as usize) % workers.len();
        let _ = workers[victim].kill();
        let _ = workers[victim].wait();
        workers[victim] = start_worker(server.port, &redis.url())?;
        kills += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    for w in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    let done: Vec<String> = redis::cmd("LRANGE")
        .arg("chaos:done")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    let unique: HashSet<&String> = done.iter().collect();
    let counts: Value = admin(&http, reqwest::Method::GET, base.clone())
        .send()
        .await?
        .json()
        .await?;
    let dead = counts["dead"].as_u64().unwrap_or(0);
    Ok(QueueFigures {
        kills,
        lost: a.jobs - unique.len() as u64 - dead,
        dead,
        twice: (done.len() - unique.len()) as u64,
        seconds,
    })
}

struct StalledFigures {
    push_p50_ms: f64,
    push_p99_ms: f64,
    rss_idle: u64,
    rss_peak: u64,
    tcp_mem_peak: u64,
    gone_after: Option<f64>,
    still_open: usize,
}

/// The kernel's TCP memory (all sockets), from `/proc/net/sockstat` (`mem` is in pages).
fn tcp_mem_bytes() -> u64 {
    std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("TCP:"))?;
            let mut it = line.split_whitespace();
            while let Some(w) = it.next() {
                if w == "mem" {
                    return it.next()?.parse::<u64>().ok();
                }
            }
            None
        })
        .map_or(0, |pages| pages * 4096)
}

/// Established TCP connections whose local port is `port` (the server's side of its clients).
fn established_on(port: u16) -> usize {
    let mut n = 0;
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(s) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in s.lines().skip(1) {
            let mut f = line.split_whitespace();
            let local = f.nth(1).unwrap_or("");
            let state = f.nth(1).unwrap_or("");
            let lport = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if lport == Some(port) && state == "01" {
                n += 1;
            }
        }
    }
    n
}

async fn stalled_spectators(a: &Args) -> anyhow::Result<StalledFigures> {
    let redis = RedisProcess::start(&scratch("stalled"), false)?;
    let server = Server::start(free_port()?, &redis.url())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    create_board(&http, &server.http()).await?;
    let tokens = Tokens::new(&Secret::new(TOKEN_SECRET));
    // A full board, so a `top 100` snapshot is a few KiB.
    for i in 0..100 {
        admin(
            &http,
            reqwest::Method::POST,
            format!(
                "{}/admin/boards/{BOARD}/players/filler-{i}/score",
                server.http()
            ),
        )
        .json(&json!({"points": 1000 + i}))
        .send()
        .await?;
    }
    let rss_idle = rss_bytes(server.pid()).unwrap_or(0);

    // The stalled ones: subscribe over a 4 KiB receive buffer, then never read again.
    let mut stalled = Vec::with_capacity(a.stalled);
    for _ in 0..a.stalled {
        let sock = tokio::net::TcpSocket::new_v4()?;
        sock.set_recv_buffer_size(4096)?;
        let stream = sock.connect(([127, 0, 0, 1], server.port).into()).await?;
        let (mut ws, _) = tokio_tungstenite::client_async(
            server.ws(),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        )
        .await?;
        send(
            &mut ws,
            json!({"type": "subscribe", "board": BOARD, "view": "top", "limit": 100}),
        )
        .await?;
        stalled.push(ws);
    }
    let stalled_at = Instant::now();

    // Busy players keep the top changing, a probe jumps to rank 1 every 100 ms and the normal
    // spectators time when they see it.
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(Mutex::new(Errors::default()));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let name = format!("busy{i}");
        let token = tokens.issue(&Id::parse(&name)?, None, 3600);
        tasks.push(tokio::spawn(play(
            server.ws(),
            token,
            name,
            stop.clone(),
            Instant::now(),
            errors.clone(),
        )));
    }
    let sent: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let seen: Arc<Mutex<Vec<u64>>> = Arc::default();
    let mut spectators = Vec::new();
    for _ in 0..10 {
        let (mut ws, _) = tokio_tungstenite::connect_async(server.ws()).await?;
        next_json(&mut ws, ANSWER_WAIT).await?;
        send(
            &mut ws,
            json!({"type": "subscribe", "board": BOARD, "view": "top", "limit": 10}),
        )
        .await?;
        let (sent, seen, stop) = (sent.clone(), seen.clone(), stop.clone());
        spectators.push(tokio::spawn(async move {
            let mut best = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let Ok(m) = next_json(&mut ws, Duration::from_millis(500)).await else {
                    continue;
                };
                let Some(top) = m["entries"][0]["score"].as_u64() else {
                    continue;
                };
                if top > best {
                    best = top;
                    if let Some(t) = sent.lock().expect("sent lock").get(&top) {
                        seen.lock()
                            .expect("seen lock")
                            .push(t.elapsed().as_millis() as u64);
                    }
                }
            }
        }));
    }
    let probe_token = tokens.issue(&Id::parse("probe")?, None, 3600);
    let mut probe = player_session(&server.ws(), &probe_token).await?;
    let mut rss_peak = rss_idle;
    let mut tcp_mem_peak = 0;
    let mut gone_after = None;
    let mut k = 0u64;
    let load_for = Duration::from_secs(a.seconds.max(10));
    let start = Instant::now();
    while start.elapsed() < load_for {
        k += 1;
        let id = format!("probe-{k}");
        // Each probe is 1e9 above the last: the probe's score is rank 1 at once.
        sent.lock()
            .expect("sent lock")
            .insert(k * 1_000_000_000, Instant::now());
        send(
            &mut probe,
            json!({"type": "submit", "id": id, "board": BOARD, "points": 1_000_000_000}),
        )
        .await?;
        loop {
            let m = next_json(&mut probe, ANSWER_WAIT).await?;
            if m["id"] == id.as_str() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        rss_peak = rss_peak.max(rss_bytes(server.pid()).unwrap_or(0));
        tcp_mem_peak = tcp_mem_peak.max(tcp_mem_bytes());
        if gone_after.is_none() && established_on(server.port) <= 10 + 20 + 1 {
            gone_after = Some(stalled_at.elapsed().as_secs_f64());
        }
    }
    // Give the stalled sockets up to 30 s more to disappear.
    let until = Instant::now() + Duration::from_secs(30);
    while gone_after.is_none() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        tcp_mem_peak = tcp_mem_peak.max(tcp_mem_bytes());
        if established_on(server.port) <= 10 + 20 + 1 {
            gone_after = Some(stalled_at.elapsed().as_secs_f64());
        }
    }
    let still_open = established_on(server.port).saturating_sub(31);
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    for s in spectators {
        let _ = s.await;
    }
    drop(stalled);
    let mut lat = seen.lock().expect("seen lock").clone();
    lat.sort_unstable();
    Ok(StalledFigures {
        push_p50_ms: percentile(&lat, 0.5),
        push_p99_ms: percentile(&lat, 0.99),
        rss_idle,
        rss_peak,
        tcp_mem_peak,
        gone_after,
        still_open,
    })
}

/// One half (ban or lift) of the crash-mid-ban scenario.
struct BanStep {
    at_kill: usize,
    after: usize,
    /// From the restarted server listening to every board agreeing and no intent pending.
    converged: Option<Duration>,
}

struct BanFigures {
    ban: BanStep,
    lift: BanStep,
}

impl BanFigures {
    fn print(&self, boards: usize) {
        for (what, s, want) in [("ban", &self.ban, boards), ("lift", &self.lift, 0)] {
            println!(
                "crash mid-{what} on every board: {} of {boards} boards enforced the ban at the kill, {} after the restart (want {want}); converged {}",
                s.at_kill,
                s.after,
                match s.converged {
                    Some(d) => format!("{:.2} s after the restart", d.as_secs_f64()),
                    None => "NEVER (within 60 s)".to_owned(),
                }
            );
        }
    }
}

/// How many of `boards` hold the ban on every board of `player`.
async fn boards_enforcing(
    c: &mut redis::aio::MultiplexedConnection,
    boards: &[String],
    player: &str,
) -> anyhow::Result<usize> {
    let mut pipe = redis::pipe();
    for b in boards {
        pipe.hexists(format!("lb:{{{b}}}:bans"), format!("*{player}"));
    }
    let on: Vec<bool> = pipe.query_async(c).await?;
    Ok(on.iter().filter(|&&x| x).count())
}

/// Scenario 5: SIGKILL in the middle of a ban on every board, and of its lift.
async fn crash_mid_ban(a: &Args) -> anyhow::Result<BanFigures> {
    const PLAYER: &str = "villain";
    let redis = RedisProcess::start(&scratch("ban"), true)?;
    let mut server = Server::start(free_port()?, &redis.url())?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    let boards: Vec<String> = (0..a.ban_boards).map(|i| format!("b{i:05}")).collect();
    let base = server.http();
    let results: Vec<anyhow::Result<()>> = futures_util::stream::iter(boards.iter().map(|b| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let r = admin(
                &http,
                reqwest::Method::PUT,
                format!("{base}/admin/boards/{b}"),
            )
            .json(&json!({}))
            .send()
            .await?;
            anyhow::ensure!(r.status().is_success(), "creating {b}: {}", r.status());
            Ok(())
        }
    }))
    .buffer_unordered(16)
    .collect()
    .await;
    results.into_iter().collect::<anyhow::Result<()>>()?;
    let mut c = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    let marker = format!("lb:{{{}}}:bans", boards[99]);

    let mut steps = Vec::new();
    for (method, body, want_at_marker, want) in [
        (
            reqwest::Method::PUT,
            json!({"reason": "chaos"}),
            true,
            boards.len(),
        ),
        (reqwest::Method::DELETE, Value::Null, false, 0),
    ] {
        let req = admin(
            &http,
            method,
            format!("{}/admin/bans/{PLAYER}", server.http()),
        )
        .json(&body)
        .send();
        let request = tokio::spawn(req);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let on: bool =
                redis::AsyncCommands::hexists(&mut c, &marker, format!("*{PLAYER}")).await?;
            if on == want_at_marker {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the request never reached the 100th board"
            );
        }
        server.sigkill();
        let _ = request.await;
        let at_kill = boards_enforcing(&mut c, &boards, PLAYER).await?;
        server = Server::start(server.port, &redis.url())?;
        let restarted = Instant::now();
        let mut converged = None;
        let mut after = at_kill;
        while restarted.elapsed() < Duration::from_secs(60) {
            after = boards_enforcing(&mut c, &boards, PLAYER).await?;
            let pending: usize = redis::AsyncCommands::hlen(&mut c, "{sc:bans}:intents").await?;
            if after == want && pending == 0 {
                converged = Some(restarted.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        steps.push(BanStep {
            at_kill,
            after,
            converged,
        });
    }
    let lift = steps.pop().context("lift figures")?;
    let ban = steps.pop().context("ban figures")?;
    Ok(BanFigures { ban, lift })
}
