//! Verified runs (the `verified` section of `loadgen`, after the WebSocket rounds; alone with
//! `--verified-only`, left out with `--no-verified`). One fresh Redis and one release server
//! (`loadgen --serve`, as in the rounds), on which, in order:
//!
//! 1. **Starts**: `--verified-runs` runs started over HTTP (`POST /v1/boards/verified/runs`,
//!    three per player: the default `max_open_runs`, so as many players as runs ÷ 3) by
//!    `--verified-clients` keep-alive clients: starts/s, timed on their own.
//! 2. Untimed preparation: every run's `started_ms` is moved 60 s into the past in Redis (the
//!    built-in validator allows 25 moves a second, so a 1 000-move proof is only legal 40 s into
//!    its run; the bench measures verification, not waiting), and a real 1 000-move game is
//!    played from each run's seed by the rules crate ([`scorecast_tests::play2048`]). A seed
//!    none of whose games lasts 1 000 moves is left out (counted).
//! 3. **Verified proofs**: the same clients send one 1 000-move proof per run
//!    (`POST /v1/boards/verified/runs/{run}/proof`, one request in flight each) for
//!    `--verified-seconds`: proofs/s, ack p50/p99, server and redis-server CPU per proof. Every
//!    answer must be a fresh acceptance at least the game's score (the board keeps the best).
//! 4. **Plain HTTP submissions**, the like-for-like baseline: the same clients send points
//!    (`POST /admin/boards/bench/players/{p}/score`, the HTTP front door for points) for as long.
//!    The server CPU of a verified proof minus that of a plain submission is what verifying
//!    costs.
//! 5. **Sandbox alone**: the same proofs verified in this process by the server's own
//!    [`Sandbox`] with the built-in module, one at a time: CPU per verification with no HTTP,
//!    Redis or submission core around it.
//! 6. **Hostile validator**: a module that loops until its fuel runs out is uploaded
//!    (`PUT /admin/validators/spin`) and named by the board `hostile`; `--hostile-players`
//!    WebSocket players × `--in-flight` submit points to the plain board for `--hostile-seconds`
//!    (the rounds' load, smaller), first alone, then while `--hostile-clients` HTTP clients send
//!    proofs to the hostile board without pause. Their ack p99 both ways and the ratio; every
//!    hostile proof must be refused with a clear code (counted by code).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use reqwest::StatusCode;
use scorecast_server::validators::{Limits, Sandbox, BUILTIN_2048};
use scorecast_shared::Op;

use super::*;

/// The verified board of the bench child (built-in `2048` validator).
pub const VERIFIED_BOARD: &str = "verified";
/// The board whose validator is the hostile module.
const HOSTILE_BOARD: &str = "hostile";
/// Moves in each proof.
const MOVES: usize = 1000;
/// How far the runs' start is moved into the past (a 1 000-move proof needs ≥ 39.6 s).
const BACKDATE_MS: i64 = 60_000;
/// Proofs the in-process sandbox verifies.
const ALONE_PROOFS: usize = 1000;

/// A validator that spins until its fuel runs out (`out_of_fuel`).
const SPIN_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "alloc") (param i32) (result i32) i32.const 1024)
  (func (export "validate") (param i64 i32 i32 i64) (result i64)
    (loop br 0)
    i64.const 0))"#;

/// The bench child's verified board: the built-in validator, best score kept, no submit limit.
pub fn verified_board() -> BoardConfig {
    BoardConfig {
        op: Op::Best,
        submit_limit: None,
        validator: Some("2048".into()),
        ..BoardConfig::default()
    }
}

/// One run to prove: whose it is, its id and seed, then the game played from that seed.
struct Run {
    token: String,
    id: String,
    seed: u32,
    proof: Vec<u8>,
    score: u64,
}

fn http() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .timeout(WAIT)
        .build()?)
}

/// What a timed phase measured.
struct Phase {
    done: u64,
    secs: f64,
    lat_us: Vec<u64>,
    server_cpu_us: f64,
    redis_cpu_us: f64,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.done as f64 / self.secs
    }
    fn per(&self, x: f64) -> f64 {
        x / self.done.max(1) as f64
    }
    fn p(&self, q: f64) -> f64 {
        percentile(&self.lat_us, q) / 1000.0
    }
}

/// Runs `tasks` concurrently between two CPU readings of the server and of redis-server.
async fn timed<F>(pids: (u32, u32), tasks: Vec<F>) -> anyhow::Result<Phase>
where
    F: std::future::Future<Output = anyhow::Result<Vec<u64>>> + Send + 'static,
{
    let (cpu0, rcpu0) = (cpu_us(pids.0)?, cpu_us(pids.1)?);
    let start = Instant::now();
    let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
    let mut lat = Vec::new();
    for h in handles {
        lat.extend(h.await??);
    }
    let secs = start.elapsed().as_secs_f64();
    let (cpu1, rcpu1) = (cpu_us(pids.0)?, cpu_us(pids.1)?);
    lat.sort_unstable();
    Ok(Phase {
        done: lat.len() as u64,
        secs,
        lat_us: lat,
        server_cpu_us: cpu1 - cpu0,
        redis_cpu_us: rcpu1 - rcpu0,
    })
}

/// The error code of a refusal's JSON body (`{"error":{"code",...}}`), and its message.
fn refusal(body: &str) -> (String, String) {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    (
        v["error"]["code"].as_str().unwrap_or("?").to_owned(),
        v["error"]["message"].as_str().unwrap_or(body).to_owned(),
    )
}

pub async fn verified(a: &Args, tokens: &Tokens) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!(
        "scorecast-loadgen-verified-{}-{}",
        std::process::id(),
        free_port()?
    ));
    let redis = RedisProcess::start(&dir, false)?;
    let defaults = scorecast_server::config::ValidatorSettings::default();
    let (threads, nice) = (
        a.validator_threads.unwrap_or(defaults.threads),
        a.validator_nice.unwrap_or(defaults.nice),
    );
    let (server, port) = start_scorecast_with(
        &std::env::current_exe()?,
        &redis.url(),
        &[threads.to_string(), nice.to_string()],
    )?;
    let pids = (server.0.id(), redis.pid());
    let base = format!("http://127.0.0.1:{port}");
    let client = http()?;
    let clients = a.verified_clients.max(1);
    println!(
        "verified runs ({} runs of {MOVES} moves, {clients} HTTP clients, {} s; built-in 2048 validator, {threads} verification threads at nice +{nice})",
        a.verified_runs,
        a.verified_seconds,
    );

    // 1. Starts, three runs per player.
    let n = a.verified_runs;
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let (client, base) = (client.clone(), base.clone());
            let tokens = tokens.clone();
            async move {
                let mut out = Vec::new();
                for j in (i..n).step_by(clients) {
                    let token = tokens.issue(&Id::parse(&format!("v{}", j / 3))?, None, 3600);
                    let t = Instant::now();
                    let r = client
                        .post(format!("{base}/v1/boards/{VERIFIED_BOARD}/runs"))
                        .bearer_auth(&token)
                        .send()
                        .await?;
                    let status = r.status();
                    let body = r.text().await?;
                    anyhow::ensure!(status == StatusCode::OK, "start refused: {status} {body}");
                    let v: serde_json::Value = serde_json::from_str(&body)?;
                    let id = v["run"].as_str().context("run")?.to_owned();
                    let seed = v["seed"].as_u64().context("seed")? as u32;
                    out.push((t.elapsed().as_micros() as u64, token, id, seed));
                }
                anyhow::Ok(out)
            }
        })
        .collect();
    let (cpu0, start) = (cpu_us(pids.0)?, Instant::now());
    let mut runs = Vec::with_capacity(n);
    let mut start_lat = Vec::with_capacity(n);
    for h in tasks.into_iter().map(tokio::spawn).collect::<Vec<_>>() {
        for (lat, token, id, seed) in h.await?? {
            start_lat.push(lat);
            runs.push(Run {
                token,
                id,
                seed,
                proof: Vec::new(),
                score: 0,
            });
        }
    }
    let start_secs = start.elapsed().as_secs_f64();
    let start_cpu = (cpu_us(pids.0)? - cpu0) / n.max(1) as f64;
    start_lat.sort_unstable();
    println!(
        "  starts                       {:>8.0} /s   ack p50 {:>6.2} p99 {:>6.2} ms  server CPU {start_cpu:>6.1} µs/start  ({n} runs by {} players)",
        n as f64 / start_secs,
        percentile(&start_lat, 0.5) / 1000.0,
        percentile(&start_lat, 0.99) / 1000.0,
        n.div_ceil(3),
    );

    // 2. Untimed: backdate the runs, play their games.
    let board = Id::parse(VERIFIED_BOARD)?;
    let mut rconn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    for chunk in runs.chunks(500) {
        let mut get = redis::pipe();
        for r in chunk {
            get.cmd("GET")
                .arg(scorecast_server::keys::run(&board, &r.id));
        }
        let raw: Vec<String> = get.query_async(&mut rconn).await?;
        let mut set = redis::pipe();
        for (r, json) in chunk.iter().zip(raw) {
            let mut v: serde_json::Value = serde_json::from_str(&json)?;
            let started = v["started_ms"].as_i64().context("started_ms")?;
            v["started_ms"] = json!(started - BACKDATE_MS);
            set.cmd("SET")
                .arg(scorecast_server::keys::run(&board, &r.id))
                .arg(v.to_string())
                .arg("KEEPTTL")
                .ignore();
        }
        let _: () = set.query_async(&mut rconn).await?;
    }
    let gen_start = Instant::now();
    let runs = tokio::task::spawn_blocking(move || play_all(runs)).await?;
    let unplayable = n - runs.len();
    println!(
        "  (untimed: {} games of {MOVES} moves played in {:.1} s, {unplayable} seeds left out; runs started {} s earlier in Redis)",
        runs.len(),
        gen_start.elapsed().as_secs_f64(),
        BACKDATE_MS / 1000
    );

    // 3. Verified proofs.
    let runs = Arc::new(runs);
    let deadline = Instant::now() + Duration::from_secs(a.verified_seconds);
    let ran_out = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let (client, base, runs) = (client.clone(), base.clone(), runs.clone());
            let ran_out = ran_out.clone();
            async move {
                let mut lat = Vec::new();
                let mut mine = (i..runs.len()).step_by(clients);
                while Instant::now() < deadline {
                    let Some(j) = mine.next() else {
                        ran_out.fetch_add(1, Ordering::Relaxed);
                        break;
                    };
                    let r = &runs[j];
                    let t = Instant::now();
                    let resp = client
                        .post(format!(
                            "{base}/v1/boards/{VERIFIED_BOARD}/runs/{}/proof",
                            r.id
                        ))
                        .bearer_auth(&r.token)
                        .header("content-type", "application/octet-stream")
                        .body(r.proof.clone())
                        .send()
                        .await?;
                    let status = resp.status();
                    let body = resp.text().await?;
                    lat.push(t.elapsed().as_micros() as u64);
                    anyhow::ensure!(
                        status == StatusCode::OK,
                        "proof of run {} (seed {}) refused: {status} {body}",
                        r.id,
                        r.seed
                    );
                    let v: serde_json::Value = serde_json::from_str(&body)?;
                    anyhow::ensure!(
                        v["duplicate"] == false
                            && v["score"].as_u64().is_some_and(|s| s >= r.score),
                        "proof of run {} scoring {} answered {body}",
                        r.id,
                        r.score
                    );
                }
                anyhow::Ok(lat)
            }
        })
        .collect();
    let proofs = timed(pids, tasks).await?;
    let ran_out = ran_out.load(Ordering::Relaxed);
    let mean_score = runs.iter().map(|r| r.score as f64).sum::<f64>() / runs.len().max(1) as f64;
    println!(
        "  verified proofs              {:>8.0} /s   ack p50 {:>6.2} p99 {:>6.2} ms  CPU server {:>6.1} redis {:>5.1} µs/proof  ({} proofs of {MOVES} moves, mean score {mean_score:.0}{})",
        proofs.rate(),
        proofs.p(0.5),
        proofs.p(0.99),
        proofs.per(proofs.server_cpu_us),
        proofs.per(proofs.redis_cpu_us),
        proofs.done,
        if ran_out > 0 {
            format!("; {ran_out} clients ran out of runs before the end: raise --verified-runs")
        } else {
            String::new()
        }
    );

    // 4. Plain HTTP submissions by the same clients.
    let deadline = Instant::now() + Duration::from_secs(a.verified_seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let (client, base) = (client.clone(), base.clone());
            async move {
                let mut lat = Vec::new();
                let mut k = 0u64;
                while Instant::now() < deadline {
                    k += 1;
                    let t = Instant::now();
                    let resp = client
                        .post(format!("{base}/admin/boards/{BOARD}/players/h{i}/score"))
                        .bearer_auth(ADMIN_TOKEN)
                        .json(&json!({"points": 1, "id": format!("h{i}-{k}")}))
                        .send()
                        .await?;
                    let status = resp.status();
                    let body = resp.text().await?;
                    lat.push(t.elapsed().as_micros() as u64);
                    anyhow::ensure!(status == StatusCode::OK, "submission refused: {body}");
                }
                anyhow::Ok(lat)
            }
        })
        .collect();
    let plain = timed(pids, tasks).await?;
    println!(
        "  plain HTTP submissions       {:>8.0} /s   ack p50 {:>6.2} p99 {:>6.2} ms  CPU server {:>6.1} redis {:>5.1} µs/sub",
        plain.rate(),
        plain.p(0.5),
        plain.p(0.99),
        plain.per(plain.server_cpu_us),
        plain.per(plain.redis_cpu_us),
    );

    // 5. The sandbox alone, in this process.
    let alone = sandbox_alone(&runs).await?;

    let verify_cpu = proofs.per(proofs.server_cpu_us) - plain.per(plain.server_cpu_us);
    println!("  targets");
    println!(
        "    verified runs/s (one 1 000-move proof each; starts counted apart)   {:>8.0}   (≥ 2 000)",
        proofs.rate()
    );
    println!(
        "    verified proofs/s ÷ plain HTTP submissions/s                         {:>8.3}",
        proofs.rate() / plain.rate()
    );
    println!(
        "    server CPU per verified proof, ms                                    {:>8.3}   (≤ 1)",
        proofs.per(proofs.server_cpu_us) / 1000.0
    );
    println!(
        "    … minus a plain HTTP submission's, ms                                {:>8.3}",
        verify_cpu / 1000.0
    );
    println!(
        "    sandbox alone, CPU per verification, ms                              {:>8.3}",
        alone / 1000.0
    );

    // 6. The hostile validator beside the WebSocket load.
    hostile(a, tokens, &client, &base, port).await?;

    drop(server);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Plays every run's game on all cores; runs whose seed yields no 1 000-move game are left out.
fn play_all(runs: Vec<Run>) -> Vec<Run> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = runs.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<Run>> = Vec::new();
    let mut it = runs.into_iter();
    loop {
        let c: Vec<Run> = it.by_ref().take(per).collect();
        if c.is_empty() {
            break;
        }
        chunks.push(c);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .filter_map(|mut r| {
                            let (proof, score) = scorecast_tests::play2048::play(r.seed, MOVES)?;
                            r.proof = proof;
                            r.score = score;
                            Some(r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a game thread panicked"))
            .collect()
    })
}

/// The server's sandbox (default limits, at this process's priority) verifying the runs' proofs one at a time in this
/// process: this process's CPU µs per verification (each must score its game).
async fn sandbox_alone(runs: &[Run]) -> anyhow::Result<f64> {
    // At the server's priority: this measures the verification, not its share of the cores.
    let sandbox = Sandbox::new(Limits {
        nice: 0,
        ..Limits::default()
    })?;
    let v = sandbox
        .compile(BUILTIN_2048)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let k = runs.len().min(ALONE_PROOFS);
    anyhow::ensure!(k > 0, "no runs to verify");
    // Warm-up.
    for r in &runs[..k.min(20)] {
        sandbox
            .verify(&v, i64::from(r.seed), r.proof.clone(), BACKDATE_MS)
            .await?;
    }
    let me = std::process::id();
    let (cpu0, start) = (cpu_us(me)?, Instant::now());
    for r in &runs[..k] {
        let score = sandbox
            .verify(&v, i64::from(r.seed), r.proof.clone(), BACKDATE_MS)
            .await?;
        anyhow::ensure!(score == r.score, "seed {}: {score} ≠ {}", r.seed, r.score);
    }
    let wall = start.elapsed().as_secs_f64() * 1e6 / k as f64;
    let cpu = (cpu_us(me)? - cpu0) / k as f64;
    println!(
        "  sandbox alone (this process, one at a time)  CPU {cpu:>6.1} µs, wall {wall:>6.1} µs per verification of {MOVES} moves ({k} proofs)"
    );
    Ok(cpu)
}

/// WebSocket players submitting `+1` to the plain board, `in_flight` each, until `deadline`:
/// every ack's latency (µs).
async fn ws_load(
    url: &str,
    tokens: &Tokens,
    players: usize,
    in_flight: usize,
    tag: &str,
    deadline: Instant,
) -> anyhow::Result<Vec<u64>> {
    let mut conns = Vec::with_capacity(players);
    for i in 0..players {
        conns.push(player(url, Target::Scorecast, tokens, &format!("{tag}{i}")).await?);
    }
    let handles: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, ws)| {
            tokio::spawn(keep_submitting(
                ws,
                format!("{tag}{i}-"),
                in_flight,
                deadline,
            ))
        })
        .collect();
    let mut lat = Vec::new();
    for h in handles {
        lat.extend(h.await??);
    }
    lat.sort_unstable();
    Ok(lat)
}

/// The hostile validator's effect on other players' WebSocket acks.
async fn hostile(
    a: &Args,
    tokens: &Tokens,
    client: &reqwest::Client,
    base: &str,
    port: u16,
) -> anyhow::Result<()> {
    let wasm = wat::parse_str(SPIN_WAT)?;
    let r = client
        .put(format!("{base}/admin/validators/spin"))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/wasm")
        .body(wasm)
        .send()
        .await?;
    anyhow::ensure!(r.status() == StatusCode::OK, "upload: {}", r.text().await?);
    let r = client
        .put(format!("{base}/admin/boards/{HOSTILE_BOARD}"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"op": "best", "submit_limit": null, "validator": "spin"}))
        .send()
        .await?;
    anyhow::ensure!(r.status() == StatusCode::OK, "board: {}", r.text().await?);
    let mut hostile_runs = Vec::new();
    for i in 0..a.hostile_clients {
        let token = tokens.issue(&Id::parse(&format!("x{i}"))?, None, 3600);
        let r = client
            .post(format!("{base}/v1/boards/{HOSTILE_BOARD}/runs"))
            .bearer_auth(&token)
            .send()
            .await?;
        anyhow::ensure!(r.status() == StatusCode::OK, "start: {}", r.text().await?);
        let v: serde_json::Value = r.json().await?;
        hostile_runs.push((token, v["run"].as_str().context("run")?.to_owned()));
    }
    let url = format!("ws://127.0.0.1:{port}/ws");
    let secs = Duration::from_secs(a.hostile_seconds);
    let (players, in_flight) = (a.hostile_players, a.in_flight);

    let quiet = ws_load(&url, tokens, players, in_flight, "q", Instant::now() + secs).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = hostile_runs
        .into_iter()
        .map(|(token, run)| {
            let (client, base, stop) = (client.clone(), base.to_owned(), stop.clone());
            tokio::spawn(async move {
                let mut codes: BTreeMap<String, u64> = BTreeMap::new();
                while !stop.load(Ordering::Relaxed) {
                    let r = client
                        .post(format!("{base}/v1/boards/{HOSTILE_BOARD}/runs/{run}/proof"))
                        .bearer_auth(&token)
                        .header("content-type", "application/octet-stream")
                        .body(b"spin".to_vec())
                        .send()
                        .await?;
                    let status = r.status();
                    let (code, message) = refusal(&r.text().await?);
                    anyhow::ensure!(
                        status != StatusCode::OK,
                        "a hostile proof was accepted: {message}"
                    );
                    // The sandbox's reason leads the message of a `bad_request`.
                    let reason = message.split(':').next().unwrap_or("").to_owned();
                    *codes
                        .entry(format!("{} {code} {reason}", status.as_u16()))
                        .or_default() += 1;
                }
                anyhow::Ok(codes)
            })
        })
        .collect();
    let loaded = ws_load(&url, tokens, players, in_flight, "l", Instant::now() + secs).await?;
    stop.store(true, Ordering::Relaxed);
    let mut codes: BTreeMap<String, u64> = BTreeMap::new();
    for s in spinners {
        for (k, v) in s.await?? {
            *codes.entry(k).or_default() += v;
        }
    }
    let refused: u64 = codes.values().sum();
    let (q99, l99) = (
        percentile(&quiet, 0.99) / 1000.0,
        percentile(&loaded, 0.99) / 1000.0,
    );
    println!(
        "hostile validator ({players} WebSocket players × {in_flight} in flight on {BOARD}, {} s each; {} HTTP clients sending proofs to a module that spins until out of fuel)",
        a.hostile_seconds, a.hostile_clients
    );
    println!(
        "  quiet                        {:>8.0} acks/s   ack p50 {:>6.2} p99 {q99:>6.2} ms",
        quiet.len() as f64 / secs.as_secs_f64(),
        percentile(&quiet, 0.5) / 1000.0
    );
    println!(
        "  beside the hostile validator {:>8.0} acks/s   ack p50 {:>6.2} p99 {l99:>6.2} ms   ({refused} hostile proofs refused: {})",
        loaded.len() as f64 / secs.as_secs_f64(),
        percentile(&loaded, 0.5) / 1000.0,
        codes
            .iter()
            .map(|(k, v)| format!("{v} × {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("  ack p99 beside / quiet       {:>8.3}", l99 / q99);
    anyhow::ensure!(refused > 0, "no hostile proof was answered");
    Ok(())
}
