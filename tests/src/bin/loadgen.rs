//! `loadgen`: the WebSocket load generator behind `cargo xtask bench` (DESIGN §10).
//!
//! One run, one process tree, on one machine:
//!
//! 1. starts its own `redis-server` (AOF off) and a Scorecast server as a *child process* (this
//!    same binary with `--serve`), so the server's memory can be read from
//!    `/proc/<child>/status` without the load generator's own sockets in it;
//! 2. idle connections: RSS of the server before and after opening `--idle` WebSockets that
//!    only received their `welcome` → bytes per idle connection;
//! 3. load: `--players` WebSocket players each keep one submission in flight (so that many are
//!    in flight in total) to an unlimited board, as fast as acks come back, for `--seconds` or
//!    `--max-submissions`, whichever ends first; `--spectators` clients watch `top 10`; a probe
//!    player jumps to rank 1 every `--probe-ms` and each spectator times when it sees that:
//!    push latency from submit to every `top` subscriber;
//! 4. `redis-benchmark` against the same Redis, running the submission script itself
//!    (`EVALSHA`, pipelined, fresh random player and submission ids through `__rand_int__`);
//! 5. prints the figures and the ratios against the targets.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::{SinkExt, StreamExt};
use scorecast_server::auth::{Secret, Tokens};
use scorecast_server::config::Settings;
use scorecast_server::embedded::RedisProcess;
use scorecast_server::startup::Application;
use scorecast_shared::{BoardConfig, Id};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const BOARD: &str = "bench";
/// The submission script, to read its argument layout.
const SUBMIT_LUA: &str = include_str!("../../../lua/submit.lua");
const TOKEN_SECRET: &str = "loadgen-token-secret-0123456789abcdef012345";
const ADMIN_TOKEN: &str = "loadgen-admin-token-0123456789abcdef0123456";
/// Each probe adds this much, so the probe is always rank 1 and each probe is a new `top`.
const PROBE_POINTS: i64 = 1_000_000_000;
/// Idle connections are opened this many at a time.
const CONNECT_BATCH: usize = 250;
/// Time for pushes still on the way after the load stops, and for the server to settle.
const SETTLE: Duration = Duration::from_millis(500);
/// A message the load generator waits for (a stuck server fails the run instead of hanging).
const WAIT: Duration = Duration::from_secs(10);

struct Args {
    players: usize,
    spectators: usize,
    seconds: u64,
    max_submissions: u64,
    idle: usize,
    probe_ms: u64,
    bench_requests: u64,
    bench_clients: u32,
    bench_pipeline: u32,
    queue_jobs: u64,
    queue_workers: usize,
    queue_producers: usize,
}

const USAGE: &str = "loadgen [--players N=200] [--spectators K=20] [--seconds S=10] [--max-submissions M=2000000]
        [--idle C=2000] [--probe-ms P=100] [--bench-requests R=200000] [--bench-clients 50] [--bench-pipeline 16]
        [--queue-jobs J=20000] [--queue-workers W=8] [--queue-producers P=64]";

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            players: 200,
            spectators: 20,
            seconds: 10,
            max_submissions: 2_000_000,
            idle: 2_000,
            probe_ms: 100,
            bench_requests: 200_000,
            bench_clients: 50,
            bench_pipeline: 16,
            queue_jobs: 20_000,
            queue_workers: 8,
            queue_producers: 64,
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
            let n: u64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            match flag.as_str() {
                "--players" => a.players = n as usize,
                "--spectators" => a.spectators = n as usize,
                "--seconds" => a.seconds = n,
                "--max-submissions" => a.max_submissions = n,
                "--idle" => a.idle = n as usize,
                "--probe-ms" => a.probe_ms = n.max(1),
                "--bench-requests" => a.bench_requests = n,
                "--bench-clients" => a.bench_clients = n as u32,
                "--bench-pipeline" => a.bench_pipeline = n as u32,
                "--queue-jobs" => a.queue_jobs = n.max(1),
                "--queue-workers" => a.queue_workers = (n as usize).max(1),
                "--queue-producers" => a.queue_producers = (n as usize).max(1),
                _ => bail!("unknown flag {flag}\n{USAGE}"),
            }
        }
        Ok(a)
    }
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--serve") {
        let url = argv.get(1).context("--serve REDIS_URL")?.clone();
        return actix_web::rt::System::new().block_on(serve(url));
    }
    let args = Args::parse(&argv)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(args))
}

/// The child: a release Scorecast server on a free port, printed as `PORT <n>`.
async fn serve(redis_url: String) -> anyhow::Result<()> {
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
    // A load test: no submit limit.
    settings.boards.insert(
        BOARD.into(),
        BoardConfig {
            submit_limit: None,
            ..BoardConfig::default()
        },
    );
    let app = Application::build(settings).await?;
    println!("PORT {}", app.port());
    std::io::stdout().flush()?;
    app.run_until_stopped().await
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str) -> anyhow::Result<Ws> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await?;
    let w = next_json(&mut ws).await?;
    anyhow::ensure!(w["type"] == "welcome", "expected welcome, got {w}");
    Ok(ws)
}

async fn next_json(ws: &mut Ws) -> anyhow::Result<Value> {
    loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .context("no message within the wait")?
        {
            Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(&t)?),
            Some(Ok(Message::Close(f))) => bail!("closed by the server: {f:?}"),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.into()),
            None => bail!("connection ended"),
        }
    }
}

async fn send(ws: &mut Ws, v: Value) -> anyhow::Result<()> {
    Ok(ws.send(Message::text(v.to_string())).await?)
}

async fn player(url: &str, tokens: &Tokens, name: &str) -> anyhow::Result<Ws> {
    let mut ws = connect(url).await?;
    let token = tokens.issue(&Id::parse(name)?, None, 3600);
    send(&mut ws, json!({"type": "hello", "token": token})).await?;
    let w = next_json(&mut ws).await?;
    anyhow::ensure!(w["type"] == "welcome", "hello failed: {w}");
    Ok(ws)
}

/// The server's resident memory, from `/proc/<pid>/status`.
fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .context("VmRSS value")?
        .parse()?;
    Ok(kb * 1024)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64
}

/// Kills the server child when the run ends, however it ends.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(redis_url: &str) -> anyhow::Result<(ChildGuard, u16)> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve")
        .arg(redis_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the server child")?;
    let stdout = child.stdout.take().context("child stdout")?;
    let guard = ChildGuard(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .with_context(|| format!("server said {line:?}"))?
        .parse()?;
    Ok((guard, port))
}

async fn bench(a: Args) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("scorecast-loadgen-{}", std::process::id()));
    let redis = RedisProcess::start(&dir, false)?;
    let (server, port) = start_server(&redis.url())?;
    let pid = server.0.id();
    let url = format!("ws://127.0.0.1:{port}/ws");
    let tokens = Tokens::new(&Secret::new(TOKEN_SECRET));

    // 1. Memory per idle connection, on a fresh server.
    let rss0 = rss_bytes(pid)?;
    let mut idle = Vec::with_capacity(a.idle);
    while idle.len() < a.idle {
        let n = CONNECT_BATCH.min(a.idle - idle.len());
        let batch = futures_util::future::try_join_all((0..n).map(|_| connect(&url))).await?;
        idle.extend(batch);
    }
    tokio::time::sleep(SETTLE).await;
    let rss1 = rss_bytes(pid)?;
    let per_conn = if a.idle > 0 {
        rss1.saturating_sub(rss0) as f64 / a.idle as f64
    } else {
        f64::NAN
    };
    drop(idle);

    // 2. Load.
    let mut players = Vec::with_capacity(a.players);
    for i in 0..a.players {
        players.push(player(&url, &tokens, &format!("p{i}")).await?);
    }
    let mut spectators = Vec::with_capacity(a.spectators);
    for _ in 0..a.spectators {
        let mut ws = connect(&url).await?;
        send(
            &mut ws,
            json!({"type": "subscribe", "board": BOARD, "view": "top", "limit": 10}),
        )
        .await?;
        let snap = next_json(&mut ws).await?;
        anyhow::ensure!(snap["type"] == "top", "subscribe failed: {snap}");
        spectators.push(ws);
    }
    let mut probe = player(&url, &tokens, "probe").await?;

    let probes: Arc<Mutex<Vec<(i64, Instant)>>> = Arc::default();
    let stop = Arc::new(tokio::sync::Notify::new());
    let budget = Arc::new(AtomicU64::new(a.max_submissions));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(a.seconds);

    let spectator_tasks: Vec<_> = spectators
        .into_iter()
        .map(|mut ws| {
            let (probes, stop) = (probes.clone(), stop.clone());
            tokio::spawn(async move {
                let mut seen = 0i64;
                let mut lat = Vec::new();
                let stopped = stop.notified();
                tokio::pin!(stopped);
                loop {
                    let msg = tokio::select! {
                        _ = &mut stopped => break,
                        m = ws.next() => m,
                    };
                    let Some(Ok(Message::Text(t))) = msg else {
                        if matches!(msg, Some(Ok(_))) {
                            continue;
                        }
                        break;
                    };
                    let now = Instant::now();
                    let Ok(v) = serde_json::from_str::<Value>(&t) else {
                        continue;
                    };
                    let probe_score = v["entries"]
                        .as_array()
                        .and_then(|es| es.iter().find(|e| e["player"] == "probe"))
                        .and_then(|e| e["score"].as_i64());
                    if let Some(s) = probe_score.filter(|s| *s > seen) {
                        // unwrap: the lock is never held across a panic.
                        let sent = probes.lock().unwrap();
                        lat.extend(
                            sent.iter()
                                .filter(|(score, _)| *score > seen && *score <= s)
                                .map(|(_, t)| now.duration_since(*t).as_micros() as u64),
                        );
                        seen = s;
                    }
                }
                lat
            })
        })
        .collect();

    let player_tasks: Vec<_> = players
        .into_iter()
        .enumerate()
        .map(|(i, mut ws)| {
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut n = 0u64;
                while Instant::now() < deadline
                    && budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                        .is_ok()
                {
                    n += 1;
                    let id = format!("p{i}-{n}");
                    let t = Instant::now();
                    send(
                        &mut ws,
                        json!({"type": "submit", "id": id, "board": BOARD, "points": 1}),
                    )
                    .await?;
                    loop {
                        let v = next_json(&mut ws).await?;
                        if v["id"] == id.as_str() {
                            anyhow::ensure!(v["type"] == "ack", "submission refused: {v}");
                            break;
                        }
                    }
                    lat.push(t.elapsed().as_micros() as u64);
                }
                Ok::<_, anyhow::Error>(lat)
            })
        })
        .collect();

    let probe_every = Duration::from_millis(a.probe_ms);
    let mut k = 0i64;
    while Instant::now() < deadline && budget.load(Ordering::Relaxed) > 0 {
        k += 1;
        let id = format!("probe-{k}");
        // unwrap: the lock is never held across a panic.
        probes
            .lock()
            .unwrap()
            .push((k * PROBE_POINTS, Instant::now()));
        send(
            &mut probe,
            json!({"type": "submit", "id": id, "board": BOARD, "points": PROBE_POINTS}),
        )
        .await?;
        loop {
            let v = next_json(&mut probe).await?;
            if v["id"] == id.as_str() {
                break;
            }
        }
        tokio::time::sleep(probe_every).await;
    }
    let mut acks = Vec::new();
    for t in player_tasks {
        acks.extend(t.await??);
    }
    let elapsed = start.elapsed();
    tokio::time::sleep(SETTLE).await;
    stop.notify_waiters();
    let mut pushes = Vec::new();
    for t in spectator_tasks {
        pushes.extend(t.await?);
    }
    acks.sort_unstable();
    pushes.sort_unstable();
    let submitted = acks.len() as f64;
    let rate = submitted / elapsed.as_secs_f64();

    // 3. redis-benchmark on the same Redis, running the submission script directly.
    let client = redis::Client::open(redis.url())?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let sha: String = scorecast_server::scripts::SUBMIT
        .prepare_invoke()
        .load_async(&mut conn)
        .await?;
    let rb_bin = std::env::var("REDIS_BENCHMARK").unwrap_or_else(|_| "redis-benchmark".into());
    let config_key = format!("lb:{{{BOARD}}}:config");
    // The script's argument layout, from its own header: the batched (group commit) form takes
    // the clock first and then 7 fields per submission; the single form takes 8 fields.
    let batched = SUBMIT_LUA.contains("then 7 per submission");
    let argv: &[&str] = if batched {
        // now, then: player, submission id, points, op, name, limiter member, skip limit
        &["", "rb-__rand_int__", "__rand_int__", "1", "", "", "m", ""]
    } else {
        // player, submission id, points, op, name, now, limiter member, skip limit
        &["rb-__rand_int__", "__rand_int__", "1", "", "", "", "m", ""]
    };
    let rb = RedisBenchmark {
        bin: &rb_bin,
        port: redis.port,
        clients: a.bench_clients,
        pipeline: a.bench_pipeline,
    };
    let mut call = vec!["EVALSHA", sha.as_str(), "1", config_key.as_str()];
    call.extend_from_slice(argv);
    let rb_rps = rb.run(a.bench_requests, &call)?;
    // A refused script call would make redis-benchmark fast and meaningless: check it counted.
    let total: u64 = redis::cmd("ZCARD")
        .arg(format!("lb:{{{BOARD}}}:s:all"))
        .query_async(&mut conn)
        .await?;

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
    let ms = |us: f64| us / 1000.0;
    println!("scorecast loadgen — {cpus} CPUs ({model})");
    println!(
        "  load: {} players (1 submission in flight each), {} top spectators, {:.1} s, server = child pid {pid}, {} build",
        a.players,
        a.spectators,
        elapsed.as_secs_f64(),
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    println!("  submissions over WebSocket   {rate:>10.0} /s   ({submitted} acked)");
    println!(
        "  ack latency                  p50 {:>7.2} ms   p99 {:>7.2} ms   (target p99 <= 5 ms)",
        ms(percentile(&acks, 0.5)),
        ms(percentile(&acks, 0.99))
    );
    println!(
        "  push latency submit->top     p50 {:>7.2} ms   p99 {:>7.2} ms   (target p99 <= 80 ms; {} samples)",
        ms(percentile(&pushes, 0.5)),
        ms(percentile(&pushes, 0.99)),
        pushes.len()
    );
    println!("  server RSS per idle conn     {per_conn:>10.0} B   ({} connections; {} -> {} KiB; target <= 4096 B)", a.idle, rss0 / 1024, rss1 / 1024);
    println!(
        "  redis-benchmark EVALSHA submit.lua  {rb_rps:>10.0} /s   (-c {} -P {} -n {}; board now holds {total} players)",
        a.bench_clients, a.bench_pipeline, a.bench_requests
    );
    println!("ratios");
    println!(
        "  WS submissions / redis-benchmark   {:.3}   (target >= 0.8)",
        rate / rb_rps
    );
    println!(
        "  ack p99 / 5 ms                     {:.3}   (target <= 1)",
        ms(percentile(&acks, 0.99)) / 5.0
    );
    println!(
        "  push p99 / 80 ms                   {:.3}   (target <= 1)",
        ms(percentile(&pushes, 0.99)) / 80.0
    );
    println!(
        "  RSS per idle conn / 4 KiB          {:.3}   (target <= 1)",
        per_conn / 4096.0
    );
    drop(server);
    queue_bench(&redis, &a, &rb).await?;
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
    fn run(&self, requests: u64, command: &[&str]) -> anyhow::Result<f64> {
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

/// Queues (issue 5): enqueue/s from `--queue-producers` concurrent producers, then claim+ack/s
/// with as many workers, through the library on the shared connection; and `redis-benchmark`
/// running the same enqueue and claim scripts on the same Redis.
async fn queue_bench(
    redis: &RedisProcess,
    a: &Args,
    rb: &RedisBenchmark<'_>,
) -> anyhow::Result<()> {
    use scorecast_server::queue::{NewJob, Queues};

    let conn = scorecast_server::startup::connect(&redis.url()).await?;
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
    enqueue.extend_from_slice(&["rb-__rand_int__", body, "5", "5", "", "", ""]);
    let rb_enqueue = rb.run(n, &enqueue)?;
    let ready: u64 = redis::cmd("ZCARD").arg(keys[0]).query_async(&mut c).await?;
    let mut claim = vec!["EVALSHA", claim_sha.as_str(), "8"];
    claim.extend_from_slice(&keys);
    claim.extend_from_slice(&["token-from-the-server", "30000", "", "16"]);
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
