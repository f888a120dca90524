//! `loadgen_views`: the live-ranks scenario, run by `cargo xtask bench -- --views`.
//!
//! One process tree: its own `redis-server` (AOF off) and a Scorecast server as a child process
//! (this binary with `--serve`). Two runs of `--seconds` each, each on a fresh board of the same
//! server, with the same `--players` WebSocket players each keeping one submission in flight
//! and `--spectators` clients watching `top 10` (a probe player jumps to rank 1 every 100 ms;
//! each spectator times when it sees that; the spectators and the probe run on a thread and
//! runtime of their own, as other people's browsers would, not queued behind the players' tasks):
//!
//! - `plain`: nobody watches `me`;
//! - `views`: every player also watches its own `me` (push latency: from the submission to the
//!   player's first `rank` push showing the score it produced).
//!
//! Printed per run: submissions/s, ack p99, `top` push p99 to spectators (from the probe's ack at
//! the probe — the proxy for its commit, as for staleness — and, as `probe p99`, from its send:
//! the probe's own submission round trip included), push p99 to `me`, `me` staleness
//! p50/p99 (from the submission's ack reaching its submitter — the proxy for its commit — to the
//! first `rank` push reaching it that shows that score or a later one; 0 when the push came
//! first, or in the same write), `me` pushes/s,
//! the server's CPU (from `/proc/<pid>/stat`) per submission and per push, Redis CPU and
//! `EVALSHA` time (INFO), the `me` standings the hub derived vs read and the `me` updates it
//! deferred because their session was behind (`/metrics`); then the ratio of submissions/s and
//! what Redis spent on view reads: `INFO commandstats` counts both scripts as `EVALSHA`, so the
//! view-read calls are the calls beyond the submission batches (one `seq` bump each), next to
//! the `me` standings the hub read rather than derived.
//!
//! `--rate R`: the players together offer `R` submissions a second, each player on a fixed
//! slot (at most one in flight; one that falls behind skips the slots it missed) and reading its
//! pushes between submissions, instead of submitting again as soon as it is acked. Both runs
//! then do the same submissions, so their server CPU differs by what the views cost: the CPU
//! per push is read without the closed loop's rates, which move with the machine's load. The
//! rounds are ranked by it.
//!
//! `--warmup S`: each run's load starts `S` seconds before its measured `--seconds`; what the
//! warm-up costs and sees is not counted (the server's CPU, Redis's, the acks, pushes and their
//! latencies from then on; the `top` spectators time the whole run). The views' holds and
//! windows start short on each run's fresh board and grow within the first second or two of load;
//! a warm-up measures the steady state alone.
//!
//! `--sizes N,M,...`: the whole scenario once per player count (e.g. `--sizes 1000,10000`),
//! each on a fresh Redis and server, one after the other.
//!
//! `--against OTHER`: OTHER is another build of this program (e.g. one built from an older
//! commit and copied aside). Its server (`OTHER --serve`) runs the same rounds beside this one's,
//! each on its own Redis, the two alternating which goes first in each round; each is reported
//! as above, then both medians side by side: a before/after from one run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use scorecast_server::auth::{Secret, Tokens};
use scorecast_server::config::Settings;
use scorecast_server::embedded::RedisProcess;
use scorecast_server::startup::Application;
use scorecast_shared::{BoardConfig, Id};
use scorecast_tests::load::{
    connect_ws, cpu_seconds, next_json, next_text, percentile, probe_until, send, spectate,
    ChildGuard, Probes, Seen, Ws, WAIT_ANSWER,
};
use serde_json::json;

const TOKEN_SECRET: &str = "loadgen-token-secret-0123456789abcdef012345";
const ADMIN_TOKEN: &str = "loadgen-admin-token-0123456789abcdef0123456";
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// Connections are opened this many at a time.
const CONNECT_BATCH: usize = 200;
/// Time for pushes still on the way after the load stops.
const SETTLE: Duration = Duration::from_millis(500);
/// After its last submission a player reads what arrives within this of the last message.
const DRAIN: Duration = Duration::from_millis(20);

struct Args {
    players: usize,
    spectators: usize,
    seconds: u64,
    /// Run the views run first (the machine's load drifts: swapping shows how much).
    views_first: bool,
    /// Pairs of runs (plain and views, alternating which goes first); the ratio reported is
    /// the median of the pairs'.
    rounds: usize,
    /// The server's `http_workers` (0: its default).
    http_workers: usize,
    /// Another build of this program: its server runs the same rounds beside this one's (each
    /// on its own Redis, alternating which goes first), for a before/after in one run.
    against: Option<std::path::PathBuf>,
    /// Player counts to run the scenario at, one after the other (empty: `players`).
    sizes: Vec<usize>,
    /// Submissions offered per second, all players together (0: each player submits again as
    /// soon as its last submission is acked).
    rate: u64,
    /// Seconds of load before the measured `seconds` (not counted: the views' holds and
    /// windows settle meanwhile).
    warmup: u64,
}

const USAGE: &str =
    "loadgen_views [--players N=1000 | --sizes N,M,...] [--spectators K=10] [--seconds S=8] [--rounds R=3] [--http-workers W=0] [--views-first] [--rate SUBMISSIONS_PER_S] [--warmup S=0] [--against OTHER_LOADGEN_VIEWS]";

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            players: 1000,
            spectators: 10,
            seconds: 8,
            views_first: false,
            rounds: 3,
            http_workers: 0,
            against: None,
            sizes: Vec::new(),
            rate: 0,
            warmup: 0,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let mut value = || -> anyhow::Result<u64> {
                it.next()
                    .with_context(|| format!("{flag} needs a value\n{USAGE}"))?
                    .parse()
                    .with_context(|| format!("{flag}: not a number\n{USAGE}"))
            };
            match flag.as_str() {
                "--views" => {}
                "--views-first" => a.views_first = true,
                "--players" => a.players = value()? as usize,
                "--spectators" => a.spectators = value()? as usize,
                "--seconds" => a.seconds = value()?,
                "--rounds" => a.rounds = (value()? as usize).max(1),
                "--http-workers" => a.http_workers = value()? as usize,
                "--rate" => a.rate = value()?,
                "--warmup" => a.warmup = value()?,
                "--sizes" => {
                    let list = it
                        .next()
                        .with_context(|| format!("--sizes needs a list\n{USAGE}"))?;
                    a.sizes = list
                        .split(',')
                        .map(|n| n.trim().parse())
                        .collect::<Result<_, _>>()
                        .with_context(|| format!("--sizes: not a list of numbers\n{USAGE}"))?;
                }
                "--against" => {
                    let path = it
                        .next()
                        .with_context(|| format!("--against needs a path\n{USAGE}"))?;
                    a.against = Some(path.into());
                }
                other => bail!("unknown argument {other}\n{USAGE}"),
            }
        }
        Ok(a)
    }

    /// Player `i`'s pace in a run that starts at `start`: at a fixed rate, the players' slots
    /// are spread evenly over one interval.
    fn pace(&self, start: Instant, i: usize) -> Pace {
        if self.rate == 0 {
            return Pace::Closed;
        }
        let every = Duration::from_secs_f64(self.players as f64 / self.rate as f64);
        Pace::Every {
            first: start + every.mul_f64(i as f64 / self.players as f64),
            every,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--serve") {
        let url = argv.get(1).context("--serve REDIS_URL WORKERS")?.clone();
        let workers = argv.get(2).context("--serve REDIS_URL WORKERS")?.parse()?;
        return actix_web::rt::System::new().block_on(serve(url, workers));
    }
    let mut args = Args::parse(&argv)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sizes = std::mem::take(&mut args.sizes);
    if sizes.is_empty() {
        return runtime.block_on(bench(&args));
    }
    for n in sizes {
        args.players = n;
        runtime.block_on(bench(&args))?;
    }
    Ok(())
}

/// The child: a release Scorecast server on a free port, printed as `PORT <n>`.
async fn serve(redis_url: String, http_workers: usize) -> anyhow::Result<()> {
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        redis_url: Some(Secret::new(redis_url)),
        admin_token: Some(Secret::new(ADMIN_TOKEN)),
        token_secret: Some(Secret::new(TOKEN_SECRET)),
        max_conns_per_addr: 0,
        workers: false,
        http_workers,
        ..Settings::default()
    };
    // Opening 10 000 players takes longer than the idle timeout (45 s): the players opened first
    // send nothing until the run starts, and must not be closed for it.
    settings.ws.client_timeout_ms = 600_000;
    for board in ["plain", "views"] {
        settings.boards.insert(
            board.into(),
            BoardConfig {
                submit_limit: None,
                ..BoardConfig::default()
            },
        );
    }
    let app = Application::build(settings).await?;
    println!("PORT {}", app.port());
    std::io::stdout().flush()?;
    app.run_until_stopped().await
}

async fn connect(url: &str) -> anyhow::Result<Ws> {
    let mut ws = connect_ws(url).await?;
    let w = next_json(&mut ws, WAIT_ANSWER).await?;
    anyhow::ensure!(w["type"] == "welcome", "expected welcome, got {w}");
    Ok(ws)
}

/// A player past `hello`, watching its own `me` on `board` when `me` is set.
async fn player(
    url: &str,
    tokens: &Tokens,
    name: String,
    board: &str,
    me: bool,
) -> anyhow::Result<Ws> {
    let mut ws = connect(url).await?;
    let token = tokens.issue(&Id::parse(&name)?, None, 3600);
    send(&mut ws, json!({"type": "hello", "token": token})).await?;
    let w = next_json(&mut ws, WAIT_ANSWER).await?;
    anyhow::ensure!(w["type"] == "welcome", "hello failed: {w}");
    if me {
        send(
            &mut ws,
            json!({"type": "subscribe", "board": board, "view": "me"}),
        )
        .await?;
        let s = next_json(&mut ws, WAIT_ANSWER).await?;
        anyhow::ensure!(s["type"] == "rank", "subscribe failed: {s}");
    }
    Ok(ws)
}

/// `bin --serve` (this program, or another build of it) on `redis_url`.
fn start_server(
    bin: &std::path::Path,
    redis_url: &str,
    http_workers: usize,
) -> anyhow::Result<(ChildGuard, u16)> {
    let mut child = Command::new(bin)
        .arg("--serve")
        .arg(redis_url)
        .arg(http_workers.to_string())
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

/// This process's soft limit of open files (`/proc/self/limits`; `None` if unknown or unlimited).
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Redis's CPU seconds and the `EVALSHA` calls and µs so far (INFO).
async fn redis_stats(
    conn: &mut redis::aio::MultiplexedConnection,
) -> anyhow::Result<(f64, u64, u64)> {
    let info: String = redis::cmd("INFO").arg("all").query_async(conn).await?;
    let field = |line: &str, key: &str| -> Option<f64> {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.parse().ok()))
    };
    let (mut cpu, mut calls, mut usec) = (0.0, 0u64, 0u64);
    for line in info.lines() {
        if let Some(v) = line
            .strip_prefix("used_cpu_sys:")
            .or_else(|| line.strip_prefix("used_cpu_user:"))
        {
            cpu += v.trim().parse::<f64>().unwrap_or(0.0);
        }
        if let Some(rest) = line.strip_prefix("cmdstat_evalsha:") {
            calls = field(rest, "calls=").unwrap_or(0.0) as u64;
            usec = field(rest, "usec=").unwrap_or(0.0) as u64;
        }
    }
    Ok((cpu, calls, usec))
}

/// `scorecast_me_standings_total` by source (derived, read), `scorecast_views_deferred_total`
/// and `scorecast_views_with_ack_total`, from `/metrics`.
async fn hub_counters(port: u16) -> anyhow::Result<[u64; 4]> {
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await?
        .text()
        .await?;
    let get = |series: &str| {
        let prefix = format!("{series} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0) as u64
    };
    Ok([
        get("scorecast_me_standings_total{source=\"derived\"}"),
        get("scorecast_me_standings_total{source=\"read\"}"),
        get("scorecast_views_deferred_total"),
        get("scorecast_views_with_ack_total"),
    ])
}

/// What one run measured.
struct Run {
    name: &'static str,
    seconds: f64,
    submissions: u64,
    ack_p99_ms: f64,
    /// `top` pushes: from the probe's ack (its commit) to a spectator seeing it.
    top_p99_ms: f64,
    /// The same from the probe's send: its submission's own round trip included.
    probe_p99_ms: f64,
    me_p99_ms: f64,
    /// `me` staleness: from the ack at the submitter to the push showing its score (ms).
    stale_p50_ms: f64,
    stale_p99_ms: f64,
    me_pushes: u64,
    server_cpu_s: f64,
    /// This load generator's own CPU (its clients share the machine with the server).
    loadgen_cpu_s: f64,
    redis_cpu_s: f64,
    evalsha_calls: u64,
    evalsha_usec: u64,
    derived: u64,
    read: u64,
    /// `me` updates the hub left for a later flush because their session was behind.
    deferred: u64,
    /// `me` updates queued with their submitter's ack.
    with_ack: u64,
    /// Submission batches (the board's `seq` went up once per batch: every submission adds).
    batches: u64,
}

/// What a player reads of a server message.
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    score: Option<i64>,
}

/// What one player saw: its acks' round trips, its `me` pushes, their latency from the
/// submission, and their staleness from the ack.
#[derive(Default)]
struct Tally {
    acks: Vec<u64>,
    pushes: u64,
    me_lat: Vec<u64>,
    stale: Vec<u64>,
    /// Score -> when the submission that produced it was sent (until its push is seen).
    sent_for: HashMap<i64, Instant>,
    pushed: HashMap<i64, Instant>,
    /// Staleness: the scores acked and not yet shown by a push, with when their ack came.
    acked_at: Vec<(i64, Instant)>,
    /// The highest score a push showed so far.
    shown: i64,
    /// Acks, pushes and their latencies are counted from then on (the warm-up's are not).
    from: Option<Instant>,
}

impl Tally {
    /// Adds another player's figures to these.
    fn add(&mut self, other: Tally) {
        self.acks.extend(other.acks);
        self.pushes += other.pushes;
        self.me_lat.extend(other.me_lat);
        self.stale.extend(other.stale);
    }

    /// Takes one server message in; true when it is the ack of `in_flight` (its id, and when
    /// it was sent).
    fn read(&mut self, text: &str, in_flight: Option<(&str, Instant)>) -> anyhow::Result<bool> {
        let now = Instant::now();
        if self.from.is_some_and(|from| now < from) {
            return self.read_uncounted(text, in_flight);
        }
        // Only the fields read here: the load generator shares the machine with the server.
        let v: Answer = serde_json::from_str(text)?;
        if v.kind == "rank" {
            self.pushes += 1;
            if let Some(s) = v.score {
                // Scores only grow: a push showing `s` brings every change up to it.
                self.shown = self.shown.max(s);
                let stale = &mut self.stale;
                self.acked_at.retain(|&(k, at)| {
                    let seen = k <= s;
                    if seen {
                        stale.push(now.duration_since(at).as_micros() as u64);
                    }
                    !seen
                });
                match self.sent_for.remove(&s) {
                    Some(t0) => self.me_lat.push(now.duration_since(t0).as_micros() as u64),
                    None => {
                        self.pushed.insert(s, now);
                    }
                }
                // Scores only grow: older ones were coalesced away.
                self.sent_for.retain(|k, _| *k > s);
            }
            return Ok(false);
        }
        let Some((id, t)) = in_flight.filter(|(id, _)| v.id.as_deref() == Some(*id)) else {
            return Ok(false);
        };
        anyhow::ensure!(v.kind == "ack", "submission {id} refused: {text}");
        self.acks.push(t.elapsed().as_micros() as u64);
        if let Some(s) = v.score {
            if s <= self.shown {
                // Its push came first (or in the same write).
                self.stale.push(0);
            } else {
                self.acked_at.push((s, now));
            }
            match self.pushed.remove(&s) {
                Some(at) => self
                    .me_lat
                    .push(at.saturating_duration_since(t).as_micros() as u64),
                None => {
                    self.sent_for.insert(s, t);
                }
            }
            self.pushed.retain(|k, _| *k > s);
        }
        Ok(true)
    }

    /// [`Tally::read`] during the warm-up: whether it is the ack of `in_flight`, and the
    /// highest score shown, nothing counted.
    fn read_uncounted(
        &mut self,
        text: &str,
        in_flight: Option<(&str, Instant)>,
    ) -> anyhow::Result<bool> {
        let v: Answer = serde_json::from_str(text)?;
        if v.kind == "rank" {
            self.shown = self.shown.max(v.score.unwrap_or(i64::MIN));
            return Ok(false);
        }
        let Some((id, _)) = in_flight.filter(|(id, _)| v.id.as_deref() == Some(*id)) else {
            return Ok(false);
        };
        anyhow::ensure!(v.kind == "ack", "submission {id} refused: {text}");
        Ok(true)
    }
}

/// When a player submits: back to back (one submission in flight), or paced at a fixed
/// offered rate.
#[derive(Clone, Copy)]
enum Pace {
    /// The next submission goes as soon as the last one is acked.
    Closed,
    /// One submission every `every`, the first at `first`; a player whose ack came after its
    /// next slot submits at once, without catching up the slots it missed.
    Every { first: Instant, every: Duration },
}

/// One player submitting until `deadline`, one submission in flight at most; what it sees is
/// counted from `from` (`None`: from the start).
async fn play(
    mut ws: Ws,
    i: usize,
    board: &'static str,
    pace: Pace,
    from: Option<Instant>,
    deadline: Instant,
) -> anyhow::Result<Tally> {
    let mut tally = Tally {
        shown: i64::MIN,
        from,
        ..Tally::default()
    };
    let mut n = 0u64;
    let mut slot = match pace {
        Pace::Closed => None,
        Pace::Every { first, .. } => Some(first),
    };
    loop {
        if let Some(at) = slot {
            // Between submissions the player still reads its pushes, as a browser would, and
            // until the deadline when its next slot is past it.
            let until = tokio::time::Instant::from_std(at.min(deadline));
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => break,
                    text = next_text(&mut ws, WAIT_ANSWER) => {
                        tally.read(&text?, None)?;
                    }
                }
            }
            if at >= deadline {
                break;
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        n += 1;
        let id = format!("p{i}-{n}");
        let t = Instant::now();
        let points = 1 + (i as i64 * 31 + n as i64 * 17) % 10;
        send(
            &mut ws,
            json!({"type": "submit", "id": id, "board": board, "points": points}),
        )
        .await?;
        while !tally.read(&next_text(&mut ws, WAIT_ANSWER).await?, Some((&id, t)))? {}
        if let (Some(at), Pace::Every { every, .. }) = (slot, pace) {
            slot = Some((at + every).max(Instant::now()));
        }
    }
    // The last ack's `rank` may follow it in the same write: what is already on its way is
    // counted (the server's CPU for it is).
    while let Ok(text) = tokio::time::timeout(DRAIN, next_text(&mut ws, WAIT_ANSWER)).await {
        tally.read(&text?, None)?;
    }
    Ok(tally)
}

/// The `top` spectators and the probe player, on a thread and a runtime of their own: they stand
/// for other people's browsers, so their timings must not queue behind the players' tasks on the
/// load generator's runtime (at 10 000 players that queue alone is longer than the 150 ms the
/// `top` push is held to). The CPU they use is still this process's.
struct Watchers {
    /// The run's deadline, once its measurement starts.
    go: tokio::sync::oneshot::Sender<Instant>,
    /// What each spectator saw, once the load stopped and [`SETTLE`] passed.
    thread: std::thread::JoinHandle<anyhow::Result<Vec<Seen>>>,
}

impl Watchers {
    /// Connects `spectators` clients watching `top 10` on `board` and the probe player; the
    /// receiver fires once all of them are in.
    fn start(
        url: String,
        board: &'static str,
        spectators: usize,
        tokens: &Tokens,
    ) -> (Watchers, tokio::sync::oneshot::Receiver<anyhow::Result<()>>) {
        let (go, deadline) = tokio::sync::oneshot::channel::<Instant>();
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let token = tokens.issue(
            &Id::parse(&format!("{board}-probe")).expect("a valid id"),
            None,
            3600,
        );
        let thread = std::thread::spawn(move || -> anyhow::Result<Vec<Seen>> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let connected = async {
                    let mut watching = Vec::with_capacity(spectators);
                    for _ in 0..spectators {
                        let mut ws = connect(&url).await?;
                        send(
                            &mut ws,
                            json!({"type": "subscribe", "board": board, "view": "top", "limit": 10}),
                        )
                        .await?;
                        let snap = next_json(&mut ws, WAIT_ANSWER).await?;
                        anyhow::ensure!(snap["type"] == "top", "subscribe failed: {snap}");
                        watching.push(ws);
                    }
                    let mut probe = connect(&url).await?;
                    send(&mut probe, json!({"type": "hello", "token": token})).await?;
                    let w = next_json(&mut probe, WAIT_ANSWER).await?;
                    anyhow::ensure!(w["type"] == "welcome", "hello failed: {w}");
                    Ok((watching, probe))
                }
                .await;
                let (watching, mut probe) = match connected {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let msg = format!("{e:#}");
                        let _ = ready_tx.send(Err(e));
                        anyhow::bail!("{msg}");
                    }
                };
                let deadline = deadline.await.context("the run never started")?;
                let probes: Probes = Arc::default();
                let stop = Arc::new(tokio::sync::Notify::new());
                let tasks: Vec<_> = watching
                    .into_iter()
                    .map(|ws| spectate(ws, probes.clone(), stop.clone(), format!("{board}-probe")))
                    .collect();
                probe_until(&mut probe, board, &probes, deadline, PROBE_EVERY).await?;
                tokio::time::sleep(SETTLE).await;
                stop.notify_waiters();
                let mut seen = Vec::with_capacity(tasks.len());
                for t in tasks {
                    seen.push(t.await?);
                }
                Ok(seen)
            })
        });
        (Watchers { go, thread }, ready)
    }
}

async fn run(
    name: &'static str,
    round: usize,
    a: &Args,
    url: &str,
    port: u16,
    pid: u32,
    conn: &mut redis::aio::MultiplexedConnection,
) -> anyhow::Result<Run> {
    let tokens = Tokens::new(&Secret::new(TOKEN_SECRET));
    let me = name == "views";
    // A fresh board and fresh players each run: a board kept from an earlier run would start
    // with every player (and the probe, at its earlier scores) already on it. Leaked: a few
    // bytes per run, for the players' tasks.
    let board: &'static str = Box::leak(format!("{name}{}", round + 1).into_boxed_str());
    let res = reqwest::Client::new()
        .put(format!("http://127.0.0.1:{port}/admin/boards/{board}"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&BoardConfig {
            submit_limit: None,
            ..BoardConfig::default()
        })
        .send()
        .await?;
    anyhow::ensure!(
        res.status().is_success(),
        "creating board {board}: {}",
        res.status()
    );
    let ramp = Instant::now();
    let mut players = Vec::with_capacity(a.players);
    while players.len() < a.players {
        let first = players.len();
        let n = CONNECT_BATCH.min(a.players - first);
        let batch = futures_util::future::try_join_all(
            (first..first + n).map(|i| player(url, &tokens, format!("{board}-p{i}"), board, me)),
        )
        .await?;
        players.extend(batch);
    }
    eprintln!(
        "{name}: {} players connected in {:.1} s",
        a.players,
        ramp.elapsed().as_secs_f64()
    );
    let (watchers, ready) = Watchers::start(url.to_string(), board, a.spectators, &tokens);
    ready.await.context("the spectators' thread ended")??;

    let seq_key = format!("lb:{{{board}}}:seq");
    // The load starts now; it is measured from `from`, after the warm-up.
    let start = Instant::now();
    let from = start + Duration::from_secs(a.warmup);
    let deadline = from + Duration::from_secs(a.seconds);
    let _ = watchers.go.send(deadline);
    let counted = (a.warmup > 0).then_some(from);
    let player_tasks: Vec<_> = players
        .into_iter()
        .enumerate()
        .map(|(i, ws)| tokio::spawn(play(ws, i, board, a.pace(start, i), counted, deadline)))
        .collect();
    tokio::time::sleep_until(from.into()).await;
    let seq0: Option<u64> = redis::cmd("GET").arg(&seq_key).query_async(conn).await?;
    let cpu0 = cpu_seconds(pid)?;
    let own0 = cpu_seconds(std::process::id())?;
    let (rcpu0, calls0, usec0) = redis_stats(conn).await?;
    let [der0, read0, def0, ack0] = hub_counters(port).await?;
    let mut all = Tally::default();
    for (i, t) in player_tasks.into_iter().enumerate() {
        all.add(t.await?.with_context(|| format!("{name} player {i}"))?);
    }
    let Tally {
        mut acks,
        pushes,
        mut me_lat,
        mut stale,
        ..
    } = all;
    let seconds = from.elapsed().as_secs_f64();
    let cpu1 = cpu_seconds(pid)?;
    let own1 = cpu_seconds(std::process::id())?;
    let (rcpu1, calls1, usec1) = redis_stats(conn).await?;
    let [der1, read1, def1, ack1] = hub_counters(port).await?;
    let seq1: Option<u64> = redis::cmd("GET").arg(&seq_key).query_async(conn).await?;
    let (mut top, mut probe_rt) = (Vec::new(), Vec::new());
    let thread = watchers.thread;
    for seen in tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the spectators' thread panicked"))??
    {
        top.extend(seen.from_ack);
        probe_rt.extend(seen.from_send);
    }
    acks.sort_unstable();
    top.sort_unstable();
    probe_rt.sort_unstable();
    me_lat.sort_unstable();
    stale.sort_unstable();
    Ok(Run {
        name,
        seconds,
        submissions: acks.len() as u64,
        ack_p99_ms: percentile(&acks, 0.99) / 1000.0,
        top_p99_ms: percentile(&top, 0.99) / 1000.0,
        probe_p99_ms: percentile(&probe_rt, 0.99) / 1000.0,
        me_p99_ms: percentile(&me_lat, 0.99) / 1000.0,
        stale_p50_ms: percentile(&stale, 0.50) / 1000.0,
        stale_p99_ms: percentile(&stale, 0.99) / 1000.0,
        me_pushes: pushes,
        server_cpu_s: cpu1 - cpu0,
        loadgen_cpu_s: own1 - own0,
        redis_cpu_s: rcpu1 - rcpu0,
        evalsha_calls: calls1 - calls0,
        evalsha_usec: usec1 - usec0,
        derived: der1 - der0,
        read: read1 - read0,
        deferred: def1 - def0,
        with_ack: ack1 - ack0,
        batches: seq1.unwrap_or(0) - seq0.unwrap_or(0),
    })
}

async fn bench(a: &Args) -> anyhow::Result<()> {
    // Each player is one descriptor here and one in the server (a process of its own, with the
    // same limit). Past the limit the server's accepts fail and back off: the ramp-up crawls.
    let need = a.players as u64 + 64;
    let limit = open_files_limit();
    anyhow::ensure!(
        limit.is_none_or(|l| l >= need),
        "{} players need at least {need} open files per process; the limit is {limit:?} (raise it with `ulimit -n`)",
        a.players,
    );
    let dir = std::env::temp_dir().join(format!("scorecast-loadgen-views-{}", std::process::id()));
    let mut sides = vec![Side::start("this build", &std::env::current_exe()?, &dir, a).await?];
    if let Some(other) = &a.against {
        sides.push(Side::start(&other.display().to_string(), other, &dir, a).await?);
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let pace = match a.rate {
        0 => "1 submission in flight each".to_owned(),
        r => format!("{r} submissions/s offered, at most 1 in flight each"),
    };
    println!(
        "live ranks: {} players ({pace}), {} top-10 spectators, {} s per run; {cores} cores, loadavg {}",
        a.players,
        a.spectators,
        a.seconds,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    // The machine's speed drifts by ±20 % between two 8 s runs here: pairs alternate which run
    // goes first, and the median pair's ratio is the figure; with `--against`, the two builds
    // also alternate which goes first in each round.
    let mut pairs: Vec<Vec<(Run, Run)>> = sides.iter().map(|_| Vec::new()).collect();
    for round in 0..a.rounds {
        for k in 0..sides.len() {
            let i = (k + round) % sides.len();
            let side = &mut sides[i];
            let (url, port, pid) = (side.url.clone(), side.port, side.pid);
            let conn = &mut side.conn;
            let pair = if a.views_first == (round % 2 == 0) {
                let views = run("views", round, a, &url, port, pid, conn).await?;
                (run("plain", round, a, &url, port, pid, conn).await?, views)
            } else {
                let plain = run("plain", round, a, &url, port, pid, conn).await?;
                (plain, run("views", round, a, &url, port, pid, conn).await?)
            };
            pairs[i].push(pair);
        }
    }
    let mut summary = Vec::new();
    for (side, pairs) in sides.iter().zip(&pairs) {
        if sides.len() > 1 {
            println!("== {}", side.label);
        }
        summary.push(report(a, pairs));
    }
    if sides.len() > 1 {
        println!("side by side, the same rounds alternated (medians over rounds):");
        for (side, (ratio, views_rate, me_p99)) in sides.iter().zip(summary) {
            println!(
                "  {:<40} views/plain {ratio:.2}   submissions/s with views {views_rate:>8.0}   me p99 {me_p99:>7.1} ms",
                side.label
            );
        }
    }
    for side in sides {
        drop(side.server);
        drop(side.redis);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// One server under test: its own Redis, the server child, and a connection to that Redis.
struct Side {
    label: String,
    redis: RedisProcess,
    server: ChildGuard,
    url: String,
    port: u16,
    pid: u32,
    conn: redis::aio::MultiplexedConnection,
}

impl Side {
    async fn start(
        label: &str,
        bin: &std::path::Path,
        dir: &std::path::Path,
        a: &Args,
    ) -> anyhow::Result<Side> {
        let n = dir.read_dir().map(|d| d.count()).unwrap_or(0);
        let redis = RedisProcess::start(&dir.join(format!("redis-{n}")), false)?;
        let (server, port) = start_server(bin, &redis.url(), a.http_workers)?;
        let pid = server.0.id();
        let client = redis::Client::open(redis.url())?;
        let conn = client.get_multiplexed_async_connection().await?;
        Ok(Side {
            label: label.to_owned(),
            redis,
            server,
            url: format!("ws://127.0.0.1:{port}/ws"),
            port,
            pid,
            conn,
        })
    }
}

/// Prints the rounds of one server and their median; returns (median views/plain ratio, median
/// submissions/s with views, median `me` p99 in ms).
fn report(a: &Args, pairs: &[(Run, Run)]) -> (f64, f64, f64) {
    let rate = |r: &Run| r.submissions as f64 / r.seconds;
    // Server CPU per submission, and what the views run spent beyond it per delivered `me`
    // push: the views run's CPU less what its submissions cost in the plain run (delivery,
    // derivation, rendering), less sensitive to the machine's load than the rates.
    let per_sub = |r: &Run| r.server_cpu_s * 1e6 / r.submissions.max(1) as f64;
    let per_push = |(p, v): &(Run, Run)| {
        (per_sub(v) - per_sub(p)) * v.submissions as f64 / v.me_pushes.max(1) as f64
    };
    // Closed loop: the median round by the ratio of rates. At a fixed offered rate both runs
    // submit at that rate, so the rounds are ranked by the CPU per push instead.
    let mut ranked: Vec<(f64, f64, usize)> = pairs
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let key = if a.rate == 0 {
                rate(&pair.1) / rate(&pair.0)
            } else {
                per_push(pair)
            };
            (key, rate(&pair.1) / rate(&pair.0), i)
        })
        .collect();
    ranked.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (_, ratio, median) = ranked[ranked.len() / 2];
    println!(
        "{:<6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8}",
        "run",
        "subs/s",
        "ack p99",
        "top p99",
        "probe p99",
        "me p99",
        "stale p50",
        "stale p99",
        "me push/s",
        "srv cpu",
        "µs/push",
        "redis",
        "evalsha",
        "derived",
        "read",
        "lg cpu"
    );
    for (i, r) in pairs.iter().flat_map(|(p, v)| [p, v]).enumerate() {
        if i % 2 == 0 && a.rounds > 1 {
            println!("round {}", i / 2 + 1);
        }
        let rate = rate(r);
        let us_per_push = if r.me_pushes > 0 {
            r.server_cpu_s * 1e6 / r.me_pushes as f64
        } else {
            f64::NAN
        };
        println!(
            "{:<6} {:>9.0} {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>10.0} {:>8.2}s {:>9.1} {:>7.2}s {:>8.2}s {:>9} {:>9} {:>7.2}s",
            r.name,
            rate,
            r.ack_p99_ms,
            r.top_p99_ms,
            r.probe_p99_ms,
            r.me_p99_ms,
            r.stale_p50_ms,
            r.stale_p99_ms,
            r.me_pushes as f64 / r.seconds,
            r.server_cpu_s,
            us_per_push,
            r.redis_cpu_s,
            r.evalsha_usec as f64 / 1e6,
            r.derived,
            r.read,
            r.loadgen_cpu_s,
        );
    }
    let each: Vec<String> = pairs
        .iter()
        .map(|(p, v)| format!("{:.2}", rate(v) / rate(p)))
        .collect();
    // The targets of this machine (2 cores shared): at 10 000 players a ratio of 0.8 and a
    // staleness p99 of 1 s, below it 0.9 and 100 ms.
    let big = a.players >= 10_000;
    let target = if big { "0.80" } else { "0.90" };
    if a.rate == 0 {
        println!(
            "submissions/s with me views / without: {ratio:.2}, the median of {} rounds ({}) (target ≥ {target}); the figures below are the median round's ({})",
            a.rounds,
            each.join(", "),
            median + 1
        );
    } else {
        let each: Vec<String> = pairs
            .iter()
            .map(|pair| format!("{:.1}", per_push(pair)))
            .collect();
        println!(
            "offered {} submissions/s in both runs: server µs per me push {:.1}, the median of {} rounds ({}); the figures below are that round's ({})",
            a.rate,
            per_push(&pairs[median]),
            a.rounds,
            each.join(", "),
            median + 1
        );
    }
    let pair = &pairs[median];
    let (plain, views) = pair;
    for r in [&plain, &views] {
        // INFO commandstats cannot tell the scripts apart (both are EVALSHA): the calls beyond
        // the submission batches are view reads (top reads, and `me` bulk reads if any).
        let reads = r.evalsha_calls.saturating_sub(r.batches);
        println!(
            "{}: Redis script time {:.0} µs/s over {} EVALSHA calls; {} submission batches, {} view-read calls ({:.1}/s); `me` standings read {}, derived {}; `me` updates deferred (session behind) {}, sent with the submitter's ack {}",
            r.name,
            r.evalsha_usec as f64 / r.seconds,
            r.evalsha_calls,
            r.batches,
            reads,
            reads as f64 / r.seconds,
            r.read,
            r.derived,
            r.deferred,
            r.with_ack,
        );
    }
    println!(
        "server CPU per delivered me push (views run, all server work included): {:.1} µs",
        views.server_cpu_s * 1e6 / views.me_pushes.max(1) as f64
    );
    let per_push = per_push(pair);
    println!(
        "server CPU per submission: plain run {:.1} µs, views run {:.1} µs (plain / views {:.2}); beyond the plain run's, per delivered me push (views run): {per_push:.1} µs",
        per_sub(plain),
        per_sub(views),
        per_sub(plain) / per_sub(views),
    );
    let offered = if a.rate == 0 {
        String::new()
    } else {
        format!(" at {} submissions/s offered", a.rate)
    };
    // The figures the targets are stated in.
    println!(
        "SUMMARY {} players{offered}: submissions/s with views {:.0}, without {:.0}, ratio {ratio:.2} (target ≥ {target}); ack p99 {:.1} ms (without views {:.1} ms); top push p99 from the probe's commit {:.1} ms (target ≤ 150 ms; from its send, its own round trip included: {:.1} ms); me pushes/s {:.0}; server µs per me push {per_push:.1} (target ≤ 8); me staleness from the ack p50 {:.1} ms, p99 {:.1} ms (target ≤ {} ms)",
        a.players,
        rate(views),
        rate(plain),
        views.ack_p99_ms,
        plain.ack_p99_ms,
        views.top_p99_ms,
        views.probe_p99_ms,
        views.me_pushes as f64 / views.seconds,
        views.stale_p50_ms,
        views.stale_p99_ms,
        if big { 1000 } else { 100 },
    );
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (
        ratio,
        median(pairs.iter().map(|(_, v)| rate(v)).collect()),
        median(pairs.iter().map(|(_, v)| v.me_p99_ms).collect()),
    )
}
