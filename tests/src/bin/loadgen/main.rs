//! `loadgen`: the WebSocket load generator behind `cargo xtask bench` (docs/development.md).
//!
//! One run, one process tree, on one machine:
//!
//! 1. **Side by side**, `--rounds` times, alternating which goes first: Scorecast (this same
//!    binary with `--serve`, a release server as a *child process*) and, with `--peer DIR`, the
//!    plain Node baseline (`node DIR/server.mjs`, `LIMIT=0`). Each gets a fresh `redis-server`
//!    (the same binary, AOF off) and the same load:
//!    - idle connections: the server's RSS before and after opening `--idle` WebSockets →
//!      bytes per idle connection;
//!    - `--players` players, each keeping `--in-flight` submissions of `+1` in flight to one
//!      unlimited board, for `--seconds`; `--spectators` clients watch `top 10`; a probe player
//!      jumps to rank 1 every `--probe-ms` and each spectator times when it sees that (push
//!      latency, submit → every `top` subscriber);
//!    - over the load phase: Redis `INFO commandstats` (EVAL + EVALSHA µs ÷ submissions), CPU
//!      of the server and of redis-server from `/proc/<pid>/stat` (µs ÷ submissions), and Redis
//!      `used_memory` growth per million submissions;
//!    - then the medians over the rounds, and the ratios Scorecast / baseline.
//!
//!    `--against OTHER`: OTHER is another build of this program (e.g. one built from an older
//!    commit and copied aside); its server (`OTHER --serve`) runs as a third contender in the
//!    same alternating rounds, under the same load, and the medians add its column and the
//!    ratios this build / OTHER: a before/after from one run.
//! 2. **Dedup memory**: `--dedup-submissions` submissions by `--dedup-players` players through
//!    the library (group commit, the real script), Redis `used_memory` after them and after as
//!    many again by the same players.
//! 3. The submission script alone on a Redis of its own (batches of 46, pipelined; on the
//!    bench's board and on one of 10 000 players): Redis µs and CPU per submission without the
//!    server and the load generator on the same cores. Then `redis-benchmark` against a Redis
//!    running the script (`EVALSHA`, one submission per call, pipelined, fresh random player
//!    and submission ids through `__rand_int__`).
//! 4. Queues: enqueue and claim + ack through the library, beside `redis-benchmark`.
//! 5. Verified runs ([`verified`]): starts, 1 000-move 2048 proofs and plain HTTP submissions
//!    per second with their CPU, the sandbox alone, and a hostile validator's effect on other
//!    players' acks.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use scorecast_server::auth::{Secret, Tokens};
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::embedded::{free_port, RedisProcess};
use scorecast_server::startup::Application;
use scorecast_server::store::{Store, Submission};
use scorecast_shared::{BoardConfig, Id};
use scorecast_tests::load::{
    connect_ws, cpu_seconds, next_json, percentile, probe_until, rss_bytes, send, spectate,
    ChildGuard, Probes, Ws,
};
use serde_json::json;

mod verified;

const BOARD: &str = "bench";
const TOKEN_SECRET: &str = "loadgen-token-secret-0123456789abcdef012345";
const ADMIN_TOKEN: &str = "loadgen-admin-token-0123456789abcdef0123456";
/// Idle connections are opened this many at a time.
const CONNECT_BATCH: usize = 250;
/// Time for pushes still on the way after the load stops, and for the server to settle.
const SETTLE: Duration = Duration::from_millis(500);
/// A message the load generator waits for (a stuck server fails the run instead of hanging).
const WAIT: Duration = Duration::from_secs(10);
/// Concurrent submitters in the dedup-memory phase.
const DEDUP_TASKS: u64 = 512;

struct Args {
    players: usize,
    in_flight: usize,
    spectators: usize,
    seconds: u64,
    rounds: usize,
    idle: usize,
    probe_ms: u64,
    peer: Option<PathBuf>,
    /// Another build of loadgen whose server runs beside this one's (a before/after).
    against: Option<PathBuf>,
    dedup_players: u64,
    dedup_submissions: u64,
    bench_requests: u64,
    bench_clients: u32,
    bench_pipeline: u32,
    queue_jobs: u64,
    queue_workers: usize,
    queue_producers: usize,
    /// `submit.lua` calls measured by [`script_alone`].
    script_calls: u64,
    /// Only the WebSocket rounds (no dedup-memory, redis-benchmark or queue phases): for
    /// profiling the servers under the submission load.
    load_only: bool,
    /// The verified-runs section: after the rest, alone, or not at all.
    verified: Section,
    verified_clients: usize,
    verified_runs: usize,
    verified_seconds: u64,
    hostile_clients: usize,
    hostile_players: usize,
    hostile_seconds: u64,
    /// The verified section's server: verification threads and their nice value (`None`: the
    /// server's defaults).
    validator_threads: Option<usize>,
    validator_nice: Option<i32>,
}

/// Whether a section runs, and whether only it does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    With,
    Only,
    Without,
}

const USAGE: &str =
    "loadgen [--quick] [--peer DIR] [--against OTHER_LOADGEN] [--rounds N=3] [--players N=50] [--in-flight K=4]
        [--spectators S=10] [--seconds T=8] [--idle C=2000] [--probe-ms P=100]
        [--dedup-players N=10000] [--dedup-submissions M=1000000]
        [--bench-requests R=200000] [--bench-clients 50] [--bench-pipeline 16]
        [--queue-jobs J=20000] [--queue-workers W=8] [--queue-producers P=64]
        [--script-calls C=3000] [--load-only]
        [--verified-only | --no-verified] [--verified-clients N=200] [--verified-runs R=12000]
        [--verified-seconds T=3] [--hostile-clients H=4] [--hostile-players N=20]
        [--hostile-seconds T=3] [--validator-threads N] [--validator-nice N]
  --quick: 3 s per round, 500 idle connections, 100 000 + 100 000 dedup submissions by 1 000
  players, 50 000 redis-benchmark calls, 5 000 queue jobs, 1 000 script calls alone, 6 000
  verified runs for 2 s, 2 s per hostile phase (flags after it still apply)
  --verified-only / --no-verified: only the verified-runs section (starts, 1 000-move proofs,
  plain HTTP submissions, the sandbox alone, the hostile validator), or everything but it
  --validator-threads / --validator-nice: the verified section's server runs its verifications
  on N threads / at nice +N (defaults: the server's, [validators] threads and nice)
  --load-only: only the WebSocket rounds (e.g. to profile a server under load: the server is
  this binary's child, `loadgen --serve`)
  --against: another build of loadgen; its server runs in the same rounds (a before/after)";

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            players: 50,
            in_flight: 4,
            spectators: 10,
            seconds: 8,
            rounds: 3,
            idle: 2_000,
            probe_ms: 100,
            peer: None,
            against: None,
            dedup_players: 10_000,
            dedup_submissions: 1_000_000,
            bench_requests: 200_000,
            bench_clients: 50,
            bench_pipeline: 16,
            queue_jobs: 20_000,
            queue_workers: 8,
            queue_producers: 64,
            load_only: false,
            script_calls: 3_000,
            verified: Section::With,
            verified_clients: 200,
            verified_runs: 12_000,
            verified_seconds: 3,
            hostile_clients: 4,
            hostile_players: 20,
            hostile_seconds: 3,
            validator_threads: None,
            validator_nice: None,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                "--quick" => {
                    a.seconds = 3;
                    a.idle = 500;
                    a.dedup_players = 1_000;
                    a.dedup_submissions = 100_000;
                    a.bench_requests = 50_000;
                    a.queue_jobs = 5_000;
                    a.script_calls = 1_000;
                    a.verified_runs = 6_000;
                    a.verified_seconds = 2;
                    a.hostile_seconds = 2;
                    continue;
                }
                "--verified-only" => {
                    a.verified = Section::Only;
                    continue;
                }
                "--no-verified" => {
                    a.verified = Section::Without;
                    continue;
                }
                "--load-only" => {
                    a.load_only = true;
                    continue;
                }
                _ => {}
            }
            let value = it
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
            if flag == "--peer" {
                a.peer = Some(PathBuf::from(value));
                continue;
            }
            if flag == "--against" {
                a.against = Some(PathBuf::from(value));
                continue;
            }
            let n: u64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            match flag.as_str() {
                "--players" => a.players = n as usize,
                "--in-flight" => a.in_flight = (n as usize).max(1),
                "--spectators" => a.spectators = n as usize,
                "--seconds" => a.seconds = n,
                "--rounds" => a.rounds = (n as usize).max(1),
                "--idle" => a.idle = n as usize,
                "--probe-ms" => a.probe_ms = n.max(1),
                "--dedup-players" => a.dedup_players = n.max(1),
                "--dedup-submissions" => a.dedup_submissions = n,
                "--bench-requests" => a.bench_requests = n,
                "--bench-clients" => a.bench_clients = n as u32,
                "--bench-pipeline" => a.bench_pipeline = n as u32,
                "--queue-jobs" => a.queue_jobs = n.max(1),
                "--script-calls" => a.script_calls = n.max(100),
                "--queue-workers" => a.queue_workers = (n as usize).max(1),
                "--queue-producers" => a.queue_producers = (n as usize).max(1),
                "--verified-clients" => a.verified_clients = (n as usize).max(1),
                "--verified-runs" => a.verified_runs = (n as usize).max(1),
                "--verified-seconds" => a.verified_seconds = n.max(1),
                "--hostile-clients" => a.hostile_clients = n as usize,
                "--hostile-players" => a.hostile_players = (n as usize).max(1),
                "--hostile-seconds" => a.hostile_seconds = n.max(1),
                "--validator-threads" => a.validator_threads = Some((n as usize).max(1)),
                "--validator-nice" => a.validator_nice = Some(n.min(19) as i32),
                _ => bail!("unknown flag {flag}\n{USAGE}"),
            }
        }
        Ok(a)
    }
}

/// The bench board: a load test, so no submit limit (boards get one by default).
fn unlimited() -> BoardConfig {
    BoardConfig {
        submit_limit: None,
        ..BoardConfig::default()
    }
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--serve") {
        let url = argv.get(1).context("--serve REDIS_URL")?.clone();
        let mut settings = serve_settings(url)?;
        // `--serve URL THREADS NICE`: the verified section's validator pool.
        if let (Some(threads), Some(nice)) = (argv.get(2), argv.get(3)) {
            settings.validators.threads = threads.parse().context("validator threads")?;
            settings.validators.nice = nice.parse().context("validator nice")?;
        }
        return actix_web::rt::System::new().block_on(serve(settings));
    }
    let args = Args::parse(&argv)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(args))
}

/// The child's settings: a release Scorecast server on a free port.
fn serve_settings(redis_url: String) -> anyhow::Result<Settings> {
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        redis_url: Some(Secret::new(redis_url)),
        admin_token: Some(Secret::new(ADMIN_TOKEN)),
        token_secret: Some(Secret::new(TOKEN_SECRET)),
        // Every client of the bench comes from 127.0.0.1.
        max_conns_per_addr: 0,
        workers: false,
        // Players here submit as fast as acks return: no per-connection message limit.
        ws: scorecast_server::config::WsSettings {
            max_messages_per_sec: 0,
            ..Default::default()
        },
        ..Settings::default()
    };
    settings.boards.insert(BOARD.into(), unlimited());
    settings
        .boards
        .insert(verified::VERIFIED_BOARD.into(), verified::verified_board());
    Ok(settings)
}

/// The child: the server, its port printed as `PORT <n>`.
async fn serve(settings: Settings) -> anyhow::Result<()> {
    let app = Application::build(settings).await?;
    println!("PORT {}", app.port());
    std::io::stdout().flush()?;
    app.run_until_stopped().await
}

/// Which server a round measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Scorecast,
    /// Scorecast as built by another loadgen (`--against`).
    Other,
    Peer,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Scorecast => "Scorecast",
            Target::Other => "other build",
            Target::Peer => "Node baseline",
        }
    }
}

/// Opens a WebSocket; Scorecast greets every connection with `welcome`, the baseline does not.
async fn connect(url: &str, target: Target) -> anyhow::Result<Ws> {
    let mut ws = connect_ws(url).await?;
    if target != Target::Peer {
        let w = next_json(&mut ws, WAIT).await?;
        anyhow::ensure!(w["type"] == "welcome", "expected welcome, got {w}");
    }
    Ok(ws)
}

async fn player(url: &str, target: Target, tokens: &Tokens, name: &str) -> anyhow::Result<Ws> {
    let mut ws = connect(url, target).await?;
    let token = tokens.issue(&Id::parse(name)?, None, 3600);
    send(&mut ws, json!({"type": "hello", "token": token})).await?;
    let w = next_json(&mut ws, WAIT).await?;
    anyhow::ensure!(w["type"] == "welcome", "hello failed: {w}");
    Ok(ws)
}

/// CPU time (user + system, every thread) of a process so far, in µs.
fn cpu_us(pid: u32) -> anyhow::Result<f64> {
    Ok(cpu_seconds(pid)? * 1e6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Reads the child's stdout until a line for which `port` answers, within the wait.
fn read_port(child: &mut Child, port: impl Fn(&str) -> Option<u16>) -> anyhow::Result<u16> {
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut found = None;
    for line in lines.by_ref() {
        if let Some(p) = port(line?.trim()) {
            found = Some(p);
            break;
        }
    }
    let p = found.context("the server child ended before saying its port")?;
    // Keep draining the child's output so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Ok(p)
}

/// A Scorecast server: `loadgen --serve`, of this build or of `exe`.
fn start_scorecast(exe: &Path, redis_url: &str) -> anyhow::Result<(ChildGuard, u16)> {
    start_scorecast_with(exe, redis_url, &[])
}

/// [`start_scorecast`] with more arguments after the Redis URL.
fn start_scorecast_with(
    exe: &Path,
    redis_url: &str,
    extra: &[String],
) -> anyhow::Result<(ChildGuard, u16)> {
    let child = Command::new(exe)
        .arg("--serve")
        .arg(redis_url)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the server child")?;
    let mut guard = ChildGuard(child);
    let port = read_port(&mut guard.0, |l| l.strip_prefix("PORT ")?.parse().ok())?;
    Ok((guard, port))
}

/// The Node baseline (`node server.mjs` in `dir`, its dependencies installed), unlimited.
fn start_peer(dir: &Path, redis_url: &str) -> anyhow::Result<(ChildGuard, u16)> {
    let port = free_port()?;
    let child = Command::new("node")
        .arg("server.mjs")
        .current_dir(dir)
        .env("PORT", port.to_string())
        .env("REDIS_URL", redis_url)
        .env("SECRET", TOKEN_SECRET)
        .env("LIMIT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting `node server.mjs` in {}", dir.display()))?;
    let mut guard = ChildGuard(child);
    read_port(&mut guard.0, |l| l.contains("listening").then_some(port))?;
    // It says so before `listen` has run (the ws server listens on the next tick): wait until
    // the port takes connections, bounded.
    let until = Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(
            Instant::now() < until,
            "the baseline never listened on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((guard, port))
}

/// What one round measured.
#[derive(Clone, Debug, Default)]
struct Round {
    rate: f64,
    acked: u64,
    ack_p50_ms: f64,
    ack_p99_ms: f64,
    push_p99_ms: f64,
    pushes: usize,
    script_calls: u64,
    redis_us: f64,
    server_cpu_us: f64,
    redis_cpu_us: f64,
    idle_bytes: f64,
    mem_per_million: f64,
}

/// `INFO` of a section as key → value.
async fn info(
    conn: &mut redis::aio::MultiplexedConnection,
    section: &str,
) -> anyhow::Result<HashMap<String, String>> {
    let text: String = redis::cmd("INFO").arg(section).query_async(conn).await?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect())
}

/// Script calls and their µs (EVAL + EVALSHA) from `INFO commandstats`.
async fn script_stats(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<(u64, u64)> {
    let stats = info(conn, "commandstats").await?;
    let mut calls = 0;
    let mut usec = 0;
    for k in ["cmdstat_eval", "cmdstat_evalsha"] {
        if let Some(v) = stats.get(k) {
            for part in v.split(',') {
                match part.split_once('=') {
                    Some(("calls", n)) => calls += n.parse::<u64>()?,
                    Some(("usec", n)) => usec += n.parse::<u64>()?,
                    _ => {}
                }
            }
        }
    }
    Ok((calls, usec))
}

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<u64> {
    info(conn, "memory")
        .await?
        .get("used_memory")
        .context("used_memory")?
        .parse()
        .context("used_memory value")
}

/// One round against one server: fresh Redis, fresh server, idle connections, then the load.
async fn round(a: &Args, target: Target, tokens: &Tokens) -> anyhow::Result<Round> {
    let dir = std::env::temp_dir().join(format!(
        "scorecast-loadgen-{}-{}",
        std::process::id(),
        free_port()?
    ));
    let redis = RedisProcess::start(&dir, false)?;
    let (server, port) = match target {
        Target::Scorecast => start_scorecast(&std::env::current_exe()?, &redis.url())?,
        Target::Other => {
            start_scorecast(a.against.as_deref().context("no --against")?, &redis.url())?
        }
        Target::Peer => start_peer(a.peer.as_deref().context("no --peer")?, &redis.url())?,
    };
    let pid = server.0.id();
    let url = format!("ws://127.0.0.1:{port}/ws");
    let mut rconn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;

    // 1. Memory per idle connection, on a fresh server.
    let rss0 = rss_bytes(pid)?;
    let mut idle = Vec::with_capacity(a.idle);
    while idle.len() < a.idle {
        let n = CONNECT_BATCH.min(a.idle - idle.len());
        let batch =
            futures_util::future::try_join_all((0..n).map(|_| connect(&url, target))).await?;
        idle.extend(batch);
    }
    tokio::time::sleep(SETTLE).await;
    let rss1 = rss_bytes(pid)?;
    let idle_bytes = if a.idle > 0 {
        rss1.saturating_sub(rss0) as f64 / a.idle as f64
    } else {
        f64::NAN
    };
    drop(idle);

    // 2. Load.
    let mut players = Vec::with_capacity(a.players);
    for i in 0..a.players {
        players.push(player(&url, target, tokens, &format!("p{i}")).await?);
    }
    let mut spectators = Vec::with_capacity(a.spectators);
    for _ in 0..a.spectators {
        let mut ws = connect(&url, target).await?;
        send(
            &mut ws,
            json!({"type": "subscribe", "board": BOARD, "view": "top", "limit": 10}),
        )
        .await?;
        let snap = next_json(&mut ws, WAIT).await?;
        anyhow::ensure!(snap["type"] == "top", "subscribe failed: {snap}");
        spectators.push(ws);
    }
    let mut probe = player(&url, target, tokens, "probe").await?;
    // A first submission, so both servers have loaded their script before the counters start.
    send(
        &mut probe,
        json!({"type": "submit", "id": "probe-0", "board": BOARD, "points": 0}),
    )
    .await?;
    next_json(&mut probe, WAIT).await?;

    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut rconn)
        .await?;
    let mem0 = used_memory(&mut rconn).await?;
    let (server_cpu0, redis_cpu0) = (cpu_us(pid)?, cpu_us(redis.pid())?);
    let probes: Probes = Arc::default();
    let stop = Arc::new(tokio::sync::Notify::new());
    let start = Instant::now();
    let deadline = start + Duration::from_secs(a.seconds);

    let spectator_tasks: Vec<_> = spectators
        .into_iter()
        .map(|ws| spectate(ws, probes.clone(), stop.clone(), "probe".to_string()))
        .collect();

    let in_flight = a.in_flight;
    let player_tasks: Vec<_> = players
        .into_iter()
        .enumerate()
        .map(|(i, ws)| tokio::spawn(keep_submitting(ws, format!("p{i}-"), in_flight, deadline)))
        .collect();

    let k = probe_until(
        &mut probe,
        BOARD,
        &probes,
        deadline,
        Duration::from_millis(a.probe_ms),
    )
    .await?;
    let mut acks = Vec::new();
    for t in player_tasks {
        acks.extend(t.await??);
    }
    let elapsed = start.elapsed();
    let (server_cpu1, redis_cpu1) = (cpu_us(pid)?, cpu_us(redis.pid())?);
    let (script_calls, script_usec) = script_stats(&mut rconn).await?;
    let mem1 = used_memory(&mut rconn).await?;
    tokio::time::sleep(SETTLE).await;
    stop.notify_waiters();
    let mut pushes = Vec::new();
    for t in spectator_tasks {
        pushes.extend(t.await?.from_send);
    }
    acks.sort_unstable();
    pushes.sort_unstable();
    // The probe's submissions count too (they are few: one per --probe-ms).
    let acked = acks.len() as u64 + k;
    let per = |x: f64| x / acked as f64;
    drop(server);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Round {
        rate: acks.len() as f64 / elapsed.as_secs_f64(),
        acked,
        ack_p50_ms: percentile(&acks, 0.5) / 1000.0,
        ack_p99_ms: percentile(&acks, 0.99) / 1000.0,
        push_p99_ms: percentile(&pushes, 0.99) / 1000.0,
        pushes: pushes.len(),
        script_calls,
        redis_us: per(script_usec as f64),
        server_cpu_us: per(server_cpu1 - server_cpu0),
        redis_cpu_us: per(redis_cpu1 - redis_cpu0),
        idle_bytes,
        mem_per_million: per(mem1.saturating_sub(mem0) as f64) * 1e6,
    })
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cpus} CPUs ({model}), load average {}", load.join(" "))
}

async fn bench(a: Args) -> anyhow::Result<()> {
    let tokens = Tokens::new(&Secret::new(TOKEN_SECRET));
    println!("scorecast loadgen — {}", machine());
    if a.verified == Section::Only {
        return verified::verified(&a, &tokens).await;
    }
    println!(
        "  load: {} players × {} in flight, {} top spectators, {} s per round, {} idle connections, {} rounds{}",
        a.players,
        a.in_flight,
        a.spectators,
        a.seconds,
        a.idle,
        a.rounds,
        if a.peer.is_some() {
            ", alternating with the Node baseline"
        } else {
            " (no --peer: Scorecast alone)"
        }
    );
    let mut targets = vec![Target::Scorecast];
    if a.against.is_some() {
        targets.push(Target::Other);
    }
    if a.peer.is_some() {
        targets.push(Target::Peer);
    }
    let mut rounds: HashMap<&str, Vec<Round>> = HashMap::new();
    for r in 0..a.rounds {
        let mut order = targets.clone();
        if r % 2 == 1 {
            order.reverse();
        }
        for t in order {
            let m = round(&a, t, &tokens)
                .await
                .with_context(|| format!("round {} against {}", r + 1, t.name()))?;
            println!(
                "  round {} {:<13} {:>8.0} /s  ack p50 {:>6.2} p99 {:>6.2} ms  push p99 {:>6.1} ms ({} samples)  redis {:>5.1} µs/sub ({:.1} per script call)  CPU server {:>5.1} redis {:>5.1} µs/sub  idle {:>6.0} B/conn  redis mem {:>5.1} MB per 1M",
                r + 1,
                t.name(),
                m.rate,
                m.ack_p50_ms,
                m.ack_p99_ms,
                m.push_p99_ms,
                m.pushes,
                m.redis_us,
                m.acked as f64 / m.script_calls.max(1) as f64,
                m.server_cpu_us,
                m.redis_cpu_us,
                m.idle_bytes,
                m.mem_per_million / 1e6,
            );
            rounds.entry(t.name()).or_default().push(m);
        }
    }
    let med = |t: Target, f: fn(&Round) -> f64| {
        median(
            rounds
                .get(t.name())
                .map(|rs| rs.iter().map(f).collect())
                .unwrap_or_default(),
        )
    };
    println!("medians of {} rounds", a.rounds);
    let other = a.against.is_some();
    print!("  {:<44} {:>12}", "", "Scorecast");
    if other {
        print!(" {:>12}", Target::Other.name());
    }
    if a.peer.is_some() {
        print!(" {:>14}", Target::Peer.name());
    }
    println!();
    type Figure = (&'static str, fn(&Round) -> f64);
    let figures: [Figure; 10] = [
        ("submissions/s over WebSocket", |r| r.rate),
        ("ack p50, ms", |r| r.ack_p50_ms),
        ("ack p99, ms", |r| r.ack_p99_ms),
        ("push p99 to top spectators, ms", |r| r.push_p99_ms),
        ("Redis µs per submission (EVAL/EVALSHA)", |r| r.redis_us),
        ("server CPU µs per submission", |r| r.server_cpu_us),
        ("redis-server CPU µs per submission", |r| r.redis_cpu_us),
        ("server + redis CPU µs per submission", |r| {
            r.server_cpu_us + r.redis_cpu_us
        }),
        ("bytes per idle WebSocket (server RSS)", |r| r.idle_bytes),
        ("Redis MB per 1M submissions (load run)", |r| {
            r.mem_per_million / 1e6
        }),
    ];
    for (name, f) in figures {
        let s = med(Target::Scorecast, f);
        print!("  {name:<44} {s:>12.1}");
        let o = med(Target::Other, f);
        if other {
            print!(" {o:>12.1}");
        }
        if a.peer.is_some() {
            let p = med(Target::Peer, f);
            print!(" {p:>14.1}   ratio {:.3}", s / p);
        }
        if other {
            print!("   this / other {:.3}", s / o);
        }
        println!();
    }
    if a.peer.is_some() {
        let cpu = |r: &Round| r.server_cpu_us + r.redis_cpu_us;
        println!("targets");
        println!(
            "  submissions/s ratio Scorecast / baseline      {:.3}   (≥ 2 where the load generator has its own cores)",
            med(Target::Scorecast, |r| r.rate) / med(Target::Peer, |r| r.rate)
        );
        println!(
            "  server + redis CPU per submission ratio       {:.3}   (≤ 0.5 on a shared 2-core machine)",
            med(Target::Scorecast, cpu) / med(Target::Peer, cpu)
        );
        println!(
            "  ack p99 Scorecast / baseline                  {:.3}   (≤ 1)",
            med(Target::Scorecast, |r| r.ack_p99_ms) / med(Target::Peer, |r| r.ack_p99_ms)
        );
    }
    let redis_us = med(Target::Scorecast, |r| r.redis_us);
    println!(
        "  Redis µs per submission                       {redis_us:.2}   (≤ 8; one hot board's ceiling ≈ {:.0} submissions/s per Redis core)",
        1e6 / redis_us
    );
    println!(
        "  server CPU µs per submission                  {:.2}   (≤ 8)",
        med(Target::Scorecast, |r| r.server_cpu_us)
    );
    println!(
        "  bytes per idle WebSocket                      {:.0}   (≤ 8192)",
        med(Target::Scorecast, |r| r.idle_bytes)
    );

    if !a.load_only {
        dedup_memory(&a).await?;
        script_alone(&a).await?;
        redis_benchmark(&a).await?;
        if a.verified == Section::With {
            verified::verified(&a, &tokens).await?;
        }
    }
    Ok(())
}

/// A fresh Redis for one phase (`phase` names its directory, removed by the caller) holding the
/// bench's board, the library's store on it, and a plain connection.
async fn phase_redis(
    phase: &str,
) -> anyhow::Result<(
    RedisProcess,
    PathBuf,
    Store,
    redis::aio::MultiplexedConnection,
)> {
    let dir =
        std::env::temp_dir().join(format!("scorecast-loadgen-{phase}-{}", std::process::id()));
    let redis = RedisProcess::start(&dir, false)?;
    let store = Store::new(
        scorecast_server::startup::connect(&scorecast_server::conn::Target::Single(redis.url()))
            .await?,
        Clock::Redis,
    );
    store.put_board(&Id::parse(BOARD)?, &unlimited()).await?;
    let conn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    Ok((redis, dir, store, conn))
}

/// Redis `used_memory` after `--dedup-submissions` submissions by `--dedup-players` players,
/// and after as many again by the same players (dedup must not grow with submissions).
async fn dedup_memory(a: &Args) -> anyhow::Result<()> {
    let (redis, dir, store, mut conn) = phase_redis("dedup").await?;
    let board = Id::parse(BOARD)?;
    let (n, players) = (a.dedup_submissions, a.dedup_players);
    let base = used_memory(&mut conn).await?;
    let mut after = Vec::new();
    for phase in 0..2u64 {
        let start = Instant::now();
        let tasks: Vec<_> = (0..DEDUP_TASKS)
            .map(|task| {
                let (store, board) = (store.clone(), board.clone());
                tokio::spawn(async move {
                    let mut i = phase * n + task;
                    while i < (phase + 1) * n {
                        let s = Submission {
                            board: board.clone(),
                            player: Id::parse(&format!("d{}", i % players))?,
                            id: Id::parse(&format!("s{i}"))?,
                            points: 1,
                            op: None,
                            name: None,
                            by: None,
                            verified: false,
                        };
                        store.submit(&s).await?;
                        i += DEDUP_TASKS;
                    }
                    Ok::<_, anyhow::Error>(())
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        let used = used_memory(&mut conn).await?;
        let keys: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await?;
        println!(
            "  dedup memory: after {:>9} submissions by {players} players: used_memory {:>7.1} MB ({:.1} MB above the empty board), {keys} keys, {:.0} submissions/s through the library",
            (phase + 1) * n,
            used as f64 / 1e6,
            used.saturating_sub(base) as f64 / 1e6,
            n as f64 / start.elapsed().as_secs_f64()
        );
        after.push(used.saturating_sub(base) as f64);
    }
    println!(
        "  dedup memory: second / first                {:.3}   (≈ 1: bounded by players, not submissions)",
        after[1] / after[0]
    );
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Submissions per call in [`script_alone`]: the mean batch of the WebSocket rounds (~46 per
/// script call at 50 players × 4 in flight).
const ALONE_BATCH: usize = 46;

/// `lua/submit.lua` alone on a Redis of its own: `--script-calls` calls of [`ALONE_BATCH`]
/// submissions of `+1` by `--players` players drawn at random (as group commit sends them
/// under the rounds' load), fresh ids, pipelined on one connection after a warm-up, first on
/// the bench's board (only those players: a listpack of 50) and then with 10 000 more players
/// on it (a skiplist, as a live global board). Redis µs per submission (`EVALSHA` `usec`) and
/// redis-server CPU per submission, without the server and the load generator taking turns on
/// the same cores: the script's own cost and one hot board's ceiling, measured apart from them.
async fn script_alone(a: &Args) -> anyhow::Result<()> {
    let (redis, dir, _store, mut conn) = phase_redis("alone").await?;
    let board = Id::parse(BOARD)?;
    let script = &scorecast_server::scripts::PLAIN.submit;
    let sha: String = script.prepare_invoke().load_async(&mut conn).await?;
    let config_key = format!("lb:{{{BOARD}}}:config");
    let players = a.players.max(1) as u64;
    let mut next = 0u64;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut calls = |conn: &mut redis::aio::MultiplexedConnection, n: u64| {
        let mut pipe = redis::pipe();
        for _ in 0..n {
            let batch: Vec<Submission> = (0..ALONE_BATCH)
                .map(|_| {
                    // xorshift: players drawn at random, the same draw on every run.
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    next += 1;
                    Submission {
                        board: board.clone(),
                        player: Id::parse(&format!("p{}", seed % players)).expect("an id"),
                        id: Id::parse(&format!("s{next}")).expect("an id"),
                        points: 1,
                        op: None,
                        name: None,
                        by: None,
                        verified: false,
                    }
                })
                .collect();
            pipe.cmd("EVALSHA")
                .arg(&sha)
                .arg(1)
                .arg(&config_key)
                .arg("")
                .arg("")
                .arg(scorecast_server::store::pack_submissions(batch.iter()));
        }
        let conn = conn.clone();
        async move {
            let mut conn = conn;
            let _: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
            anyhow::Ok(())
        }
    };
    for extra in [0u64, 10_000] {
        if extra > 0 {
            for chunk in (0..extra).collect::<Vec<_>>().chunks(1_000) {
                let mut zadd = redis::cmd("ZADD");
                zadd.arg(format!("lb:{{{BOARD}}}:s:all"));
                for i in chunk {
                    zadd.arg(i * 7 % 100_000).arg(format!("seed{i}"));
                }
                let _: u64 = zadd.query_async(&mut conn).await?;
            }
        }
        // Warm-up: the players' dedup hashes fill up to their steady size.
        for _ in 0..10 {
            calls(&mut conn, 100).await?;
        }
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await?;
        let cpu0 = cpu_us(redis.pid())?;
        for _ in 0..a.script_calls.div_ceil(100) {
            calls(&mut conn, 100).await?;
        }
        let cpu = cpu_us(redis.pid())? - cpu0;
        let (n, usec) = script_stats(&mut conn).await?;
        let subs = (n * ALONE_BATCH as u64).max(1) as f64;
        let size: u64 = redis::cmd("ZCARD")
            .arg(format!("lb:{{{BOARD}}}:s:all"))
            .query_async(&mut conn)
            .await?;
        let us = usec as f64 / subs;
        println!(
            "  submit.lua alone, {n} calls of {ALONE_BATCH} by {players} players, board of {size:>5}: Redis {us:>5.2} µs (EVALSHA), redis-server CPU {:>5.2} µs per submission (≤ 8; ceiling ≈ {:.0} submissions/s per Redis core)",
            cpu / subs,
            1e6 / us
        );
    }
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `redis-benchmark` running the submission script itself (one submission per call), and the
/// queue bench, on a fresh Redis.
async fn redis_benchmark(a: &Args) -> anyhow::Result<()> {
    let (redis, dir, _store, mut conn) = phase_redis("rb").await?;
    let sha: String = scorecast_server::scripts::PLAIN
        .submit
        .prepare_invoke()
        .load_async(&mut conn)
        .await?;
    let rb_bin = std::env::var("REDIS_BENCHMARK").unwrap_or_else(|_| "redis-benchmark".into());
    let config_key = format!("lb:{{{BOARD}}}:config");
    let rb = RedisBenchmark {
        bin: &rb_bin,
        port: redis.port,
        clients: a.bench_clients,
        pipeline: a.bench_pipeline,
    };
    // now, no event back, then the batch of one, packed as the server packs it: redis-benchmark
    // replaces each `__rand_int__` with 12 digits, so the msgpack stays well-formed (and holds no
    // NUL byte, which a command-line argument could not carry).
    let one = Submission {
        board: Id::parse(BOARD)?,
        player: Id::parse("rb-__rand_int__")?,
        id: Id::parse("__rand_int__")?,
        points: 1,
        op: None,
        name: None,
        by: None,
        verified: false,
    };
    let subs = scorecast_server::store::pack_submissions(std::iter::once(&one));
    anyhow::ensure!(!subs.contains(&0), "a NUL byte in the packed submission");
    let head = ["EVALSHA", sha.as_str(), "1", config_key.as_str(), "", ""];
    let mut call: Vec<&OsStr> = head.iter().map(OsStr::new).collect();
    call.push(OsStr::from_bytes(&subs));
    let rb_rps = rb.run(a.bench_requests, &call)?;
    // A refused script call would make redis-benchmark fast and meaningless: check it counted.
    let total: u64 = redis::cmd("ZCARD")
        .arg(format!("lb:{{{BOARD}}}:s:all"))
        .query_async(&mut conn)
        .await?;
    println!(
        "  redis-benchmark EVALSHA submit.lua, one submission per call  {rb_rps:>10.0} /s   (-c {} -P {} -n {}; board now holds {total} players)",
        a.bench_clients, a.bench_pipeline, a.bench_requests
    );
    queue_bench(&redis, a, &rb).await?;
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `redis-benchmark` against the bench's Redis, pipelined, with `-r` so `__rand_int__` gives
/// fresh ids.
struct RedisBenchmark<'a> {
    bin: &'a str,
    port: u16,
    clients: u32,
    pipeline: u32,
}

impl RedisBenchmark<'_> {
    /// Runs `command` `requests` times; returns requests per second.
    fn run(&self, requests: u64, command: &[impl AsRef<OsStr>]) -> anyhow::Result<f64> {
        let out = Command::new(self.bin)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-c", &self.clients.to_string(), "-n", &requests.to_string()])
            .args(["-P", &self.pipeline.to_string(), "-r", "1000000000", "-q"])
            .args(command)
            .output()
            .with_context(|| format!("running {}", self.bin))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // `-q` prints progress lines separated by \r, then "<name>: <rps> requests per second, ...".
        text.rsplit('\r')
            .find_map(|chunk| {
                let before = chunk
                    .split(" requests per second")
                    .next()
                    .filter(|_| chunk.contains(" requests per second"))?;
                before.split_whitespace().last()?.parse().ok()
            })
            .with_context(|| {
                format!(
                    "could not read redis-benchmark's result from {text:?} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    }
}

/// Queues: enqueue/s from `--queue-producers` concurrent producers, then claim+ack/s
/// with as many workers, through the library on the shared connection; and `redis-benchmark`
/// running the same enqueue and claim scripts on the same Redis.
async fn queue_bench(
    redis: &RedisProcess,
    a: &Args,
    rb: &RedisBenchmark<'_>,
) -> anyhow::Result<()> {
    use scorecast_server::queue::{NewJob, Queues};

    let conn =
        scorecast_server::startup::connect(&scorecast_server::conn::Target::Single(redis.url()))
            .await?;
    let queues = Queues::new(
        conn.clone(),
        redis::Client::open(redis.url())?,
        scorecast_server::clock::Clock::Redis,
        Default::default(),
    );
    let q = queues.get(&Id::parse("bench-q")?);
    let kind = Id::parse("bench")?;
    let (n, w, p) = (
        a.queue_jobs,
        a.queue_workers as u64,
        a.queue_producers as u64,
    );

    let start = Instant::now();
    let producers: Vec<_> = (0..p)
        .map(|first| {
            let (q, kind) = (q.clone(), kind.clone());
            tokio::spawn(async move {
                for i in (first..n).step_by(p as usize) {
                    let job =
                        NewJob::new(&kind, &json!({"n": i}))?.id(Id::parse(&format!("j{i}"))?);
                    q.enqueue(job).await?;
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for t in producers {
        t.await??;
    }
    let enqueue_rate = n as f64 / start.elapsed().as_secs_f64();

    let processed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..w)
        .map(|_| {
            let (q, processed) = (q.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(c) = q.claim(Duration::from_secs(30)).await? {
                    q.ack(&Id::parse(&c.job.id)?, &c.lease.token).await?;
                    processed.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for t in workers {
        t.await??;
    }
    let pair_rate = n as f64 / start.elapsed().as_secs_f64();
    let done = processed.load(Ordering::Relaxed);
    anyhow::ensure!(done == n, "processed {done} of {n} jobs");

    // The same scripts under redis-benchmark, on another queue of the same Redis.
    let mut c = conn.clone();
    let enqueue_sha: String = scorecast_server::scripts::Q_ENQUEUE
        .prepare_invoke()
        .load_async(&mut c)
        .await?;
    let claim_sha: String = scorecast_server::scripts::Q_CLAIM
        .prepare_invoke()
        .load_async(&mut c)
        .await?;
    let keys = scorecast_server::keys::queue(&Id::parse("rb-q")?);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let body = r#"{"id":"x","kind":"bench","payload":{"n":1}}"#;
    let mut enqueue = vec!["EVALSHA", enqueue_sha.as_str(), "8"];
    enqueue.extend_from_slice(&keys);
    // q_enqueue.lua: the clock, then one job (id, body, priority, max_attempts, when, at).
    enqueue.extend_from_slice(&["", "rb-__rand_int__", body, "5", "5", "", ""]);
    let rb_enqueue = rb.run(n, &enqueue)?;
    let ready: u64 = redis::cmd("ZCARD").arg(keys[0]).query_async(&mut c).await?;
    let mut claim = vec!["EVALSHA", claim_sha.as_str(), "8"];
    claim.extend_from_slice(&keys);
    // q_claim.lua: lease_ms, the clock, the inline bound, no acks, one token.
    claim.extend_from_slice(&["30000", "", "16", "0", "token-from-the-server"]);
    let rb_claim = rb.run(ready, &claim)?;
    let left: u64 = redis::cmd("ZCARD").arg(keys[0]).query_async(&mut c).await?;

    println!("queues ({n} jobs, {p} producers / {w} workers, library on the shared connection)");
    println!("  enqueue                      {enqueue_rate:>10.0} /s");
    println!("  claim + ack (pairs)          {pair_rate:>10.0} /s   (every job exactly once: {done}/{n})");
    println!("  redis-benchmark q_enqueue    {rb_enqueue:>10.0} /s");
    println!(
        "  redis-benchmark q_claim      {rb_claim:>10.0} /s   ({ready} jobs claimed, {left} left)"
    );
    println!("ratios");
    println!(
        "  enqueue / redis-benchmark enqueue   {:.3}",
        enqueue_rate / rb_enqueue
    );
    println!(
        "  claim+ack / redis-benchmark claim   {:.3}   (a pair is two script calls: 0.5 = Redis-bound)",
        pair_rate / rb_claim
    );
    Ok(())
}

/// One WebSocket player keeping `in_flight` submissions of `+1` to [`BOARD`] on the way until
/// `deadline` (ids `<prefix><n>`), then draining them: every ack's latency (µs). A refusal
/// ends the run with an error.
async fn keep_submitting(
    mut ws: Ws,
    prefix: String,
    in_flight: usize,
    deadline: Instant,
) -> anyhow::Result<Vec<u64>> {
    let mut lat = Vec::new();
    let mut sent: HashMap<String, Instant> = HashMap::with_capacity(in_flight);
    let mut n = 0u64;
    loop {
        while sent.len() < in_flight && Instant::now() < deadline {
            n += 1;
            let id = format!("{prefix}{n}");
            send(
                &mut ws,
                json!({"type": "submit", "id": id, "board": BOARD, "points": 1}),
            )
            .await?;
            sent.insert(id, Instant::now());
        }
        if sent.is_empty() {
            return Ok(lat);
        }
        let v = next_json(&mut ws, WAIT).await?;
        let Some(t) = v["id"].as_str().and_then(|id| sent.remove(id)) else {
            continue;
        };
        anyhow::ensure!(v["type"] == "ack", "submission refused: {v}");
        lat.push(t.elapsed().as_micros() as u64);
    }
}
