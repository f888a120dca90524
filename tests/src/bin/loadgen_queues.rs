//! `loadgen_queues`: Scorecast's job queues beside BullMQ (`cargo xtask bench -- --queues`).
//!
//! `--rounds` rounds (at least 2), alternating which side goes first; each side gets a fresh
//! `redis-server` (the same binary, AOF off) on a free loopback port and the same work:
//!
//! 1. **enqueue**: `--producers` concurrent producers add `--jobs` jobs, one per call
//!    (Scorecast `Queue::enqueue`, BullMQ `Queue.add`);
//! 2. **consume**: `--workers`-way consumption of those jobs until all are done, with an empty
//!    handler. Scorecast: the Rust library, the way a Rust studio runs it — `--workers` tasks,
//!    each claiming up to `--batch` jobs and acking them while claiming the next ones in the
//!    same call (`claim_batch`, then `ack_batch_next`); BullMQ: one `Worker` with
//!    `concurrency: --workers` (its `moveToFinished` completes a job and fetches the next);
//! 3. **bulk enqueue**: the same producers add the jobs in chunks of `--chunk`
//!    (Scorecast `Queue::enqueue_bulk`, BullMQ `Queue.addBulk`).
//!
//! Then the medians per side and the ratios Scorecast / BullMQ. The BullMQ side is
//! `tests/bench/bullmq/queues.mjs`, installed by xtask under `target/bench-bullmq` (`--bullmq`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use scorecast_server::embedded::{free_port, RedisProcess};
use scorecast_server::queue::{NewJob, Queue, Queues};
use scorecast_shared::Id;
use serde_json::json;

const USAGE: &str = "\
usage: loadgen_queues --bullmq DIR [--jobs 20000] [--producers 64] [--workers 8] [--batch 16]
                      [--chunk 100] [--rounds 2] [--current-thread] [--quick]
  DIR holds queues.mjs with bullmq installed (cargo xtask bench -- --queues does it)";

struct Args {
    bullmq: Option<PathBuf>,
    jobs: u64,
    producers: u64,
    workers: u64,
    batch: usize,
    chunk: u64,
    rounds: usize,
    /// Scorecast's side on a current-thread Tokio runtime instead of the multi-thread one.
    current_thread: bool,
}

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            bullmq: None,
            jobs: 20_000,
            producers: 64,
            workers: 8,
            batch: 16,
            chunk: 100,
            rounds: 2,
            current_thread: false,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--queues" => continue,
                "--current-thread" => {
                    a.current_thread = true;
                    continue;
                }
                "--quick" => {
                    a.jobs = 5_000;
                    continue;
                }
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => {}
            }
            let value = it
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
            if flag == "--bullmq" {
                a.bullmq = Some(PathBuf::from(value));
                continue;
            }
            let n: u64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            match flag.as_str() {
                "--jobs" => a.jobs = n.max(1),
                "--producers" => a.producers = n.max(1),
                "--workers" => a.workers = n.max(1),
                "--batch" => {
                    a.batch = (n as usize).clamp(1, scorecast_server::queue::MAX_CLAIM_BATCH)
                }
                "--chunk" => a.chunk = n.clamp(1, scorecast_server::queue::MAX_BULK_JOBS as u64),
                "--rounds" => a.rounds = (n as usize).max(2),
                _ => bail!("unknown flag {flag}\n{USAGE}"),
            }
        }
        Ok(a)
    }
}

/// Jobs per second of each phase of one side's run.
#[derive(Clone, Copy, Default)]
struct Rates {
    enqueue: f64,
    consume: f64,
    bulk: f64,
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = Args::parse(&argv)?;
    let dir = a
        .bullmq
        .clone()
        .with_context(|| format!("--bullmq DIR is needed\n{USAGE}"))?;
    anyhow::ensure!(
        dir.join("queues.mjs").is_file() && dir.join("node_modules/bullmq").is_dir(),
        "{} has no queues.mjs with bullmq installed",
        dir.display()
    );
    let runtime = if a.current_thread {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
    };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "queues: Scorecast vs BullMQ {} — {} jobs, {} producers, {}-way consumption, {} rounds, {cpus} CPUs",
        bullmq_version(&dir),
        a.jobs,
        a.producers,
        a.workers,
        a.rounds
    );
    println!(
        "  Scorecast: the Rust library (scorecast_server::queue) on one multiplexed connection, as a Rust studio runs it ({} Tokio runtime);",
        if a.current_thread { "current-thread" } else { "multi-thread" }
    );
    println!(
        "             consumers: {} tasks, claim_batch / ack_batch_next of up to {} jobs (ack and claim in one call)",
        a.workers, a.batch
    );
    println!(
        "  BullMQ:    Queue.add / Queue.addBulk, one Worker with concurrency {} (Node {})",
        a.workers,
        node_version()
    );
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for round in 0..a.rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for scorecast in order {
            let redis = RedisProcess::start(&scratch()?, false)?;
            if scorecast {
                let r = runtime.block_on(scorecast_side(&redis, &a))?;
                print_rates(round, "Scorecast", r);
                ours.push(r);
            } else {
                let r = bullmq_side(&dir, &redis, &a)?;
                print_rates(round, "BullMQ", r);
                theirs.push(r);
            }
        }
    }
    let (o, t) = (medians(&ours), medians(&theirs));
    println!("medians (jobs/s)            Scorecast      BullMQ   Scorecast / BullMQ");
    for (name, x, y) in [
        ("enqueue (one per call)", o.enqueue, t.enqueue),
        ("consume (8-way)", o.consume, t.consume),
        ("bulk enqueue", o.bulk, t.bulk),
    ] {
        println!("  {name:<24} {x:>10.0}  {y:>10.0}   {:>6.2}×", x / y);
    }
    Ok(())
}

fn print_rates(round: usize, side: &str, r: Rates) {
    println!(
        "  round {} {side:<9}  enqueue {:>8.0}/s   consume {:>8.0}/s   bulk {:>8.0}/s",
        round + 1,
        r.enqueue,
        r.consume,
        r.bulk
    );
}

fn medians(all: &[Rates]) -> Rates {
    let median = |f: fn(&Rates) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len().is_multiple_of(2) {
            (v[m - 1] + v[m]) / 2.0
        } else {
            v[m]
        }
    };
    Rates {
        enqueue: median(|r| r.enqueue),
        consume: median(|r| r.consume),
        bulk: median(|r| r.bulk),
    }
}

fn scratch() -> anyhow::Result<PathBuf> {
    Ok(std::env::temp_dir().join(format!(
        "scorecast-loadgen-queues-{}-{}",
        std::process::id(),
        free_port()?
    )))
}

fn node_version() -> String {
    Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn bullmq_version(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("node_modules/bullmq/package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// The BullMQ side: `node queues.mjs` against `redis`, its JSON line parsed.
fn bullmq_side(dir: &std::path::Path, redis: &RedisProcess, a: &Args) -> anyhow::Result<Rates> {
    let out = Command::new("node")
        .arg("queues.mjs")
        .current_dir(dir)
        .env("REDIS_PORT", redis.port.to_string())
        .env("JOBS", a.jobs.to_string())
        .env("PRODUCERS", a.producers.to_string())
        .env("CONCURRENCY", a.workers.to_string())
        .env("CHUNK", a.chunk.to_string())
        .output()
        .context("running node queues.mjs")?;
    anyhow::ensure!(
        out.status.success(),
        "queues.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim().lines().last().unwrap_or(""))
        .with_context(|| format!("queues.mjs printed {line:?}"))?;
    anyhow::ensure!(
        v["done"] == json!(a.jobs),
        "BullMQ completed {} of {} jobs",
        v["done"],
        a.jobs
    );
    let rate = |k: &str| v[k].as_f64().with_context(|| format!("no {k} in {line}"));
    Ok(Rates {
        enqueue: rate("enqueue")?,
        consume: rate("consume")?,
        bulk: rate("bulk")?,
    })
}

/// The Scorecast side, through the library on one multiplexed connection.
async fn scorecast_side(redis: &RedisProcess, a: &Args) -> anyhow::Result<Rates> {
    let conn =
        scorecast_server::startup::connect(&scorecast_server::conn::Target::Single(redis.url()))
            .await?;
    let queues = Queues::new(
        conn,
        redis::Client::open(redis.url())?,
        scorecast_server::clock::Clock::Redis,
        Default::default(),
    );
    let q = queues.get(&Id::parse("bench")?);
    let kind = Id::parse("work")?;

    // 1. One job per call.
    let next = std::sync::Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let producers: Vec<_> = (0..a.producers)
        .map(|_| {
            let (q, kind, next, n) = (q.clone(), kind.clone(), next.clone(), a.jobs);
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<_, anyhow::Error>(());
                    }
                    q.enqueue(NewJob::new(&kind, &json!({"n": i}))?).await?;
                }
            })
        })
        .collect();
    for p in producers {
        p.await??;
    }
    let enqueue = a.jobs as f64 / start.elapsed().as_secs_f64();

    // 2. Consumption: ack what was done and claim the next ones, one call per batch.
    let done = std::sync::Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..a.workers)
        .map(|_| {
            let (q, done, batch) = (q.clone(), done.clone(), a.batch);
            tokio::spawn(consume(q, done, batch))
        })
        .collect();
    for w in workers {
        w.await??;
    }
    let consume = a.jobs as f64 / start.elapsed().as_secs_f64();
    let done = done.load(Ordering::Relaxed);
    anyhow::ensure!(
        done == a.jobs,
        "Scorecast completed {done} of {} jobs",
        a.jobs
    );
    let left = q.counts().await?;
    anyhow::ensure!(
        left == Default::default(),
        "jobs left after consuming: {left:?}"
    );

    // 3. Bulk, in chunks.
    let bq = queues.get(&Id::parse("bulk")?);
    let next = std::sync::Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let producers: Vec<_> = (0..a.producers)
        .map(|_| {
            let (q, kind, next, n, chunk) =
                (bq.clone(), kind.clone(), next.clone(), a.jobs, a.chunk);
            tokio::spawn(async move {
                loop {
                    let from = next.fetch_add(1, Ordering::Relaxed) * chunk;
                    if from >= n {
                        return Ok::<_, anyhow::Error>(());
                    }
                    let jobs = (from..(from + chunk).min(n))
                        .map(|i| NewJob::new(&kind, &json!({"n": i})))
                        .collect::<Result<Vec<_>, _>>()?;
                    q.enqueue_bulk(jobs).await?;
                }
            })
        })
        .collect();
    for p in producers {
        p.await??;
    }
    let bulk = a.jobs as f64 / start.elapsed().as_secs_f64();
    let stored = bq.counts().await?.ready;
    anyhow::ensure!(stored == a.jobs, "bulk stored {stored} of {} jobs", a.jobs);
    Ok(Rates {
        enqueue,
        consume,
        bulk,
    })
}

/// One consumer: claims up to `batch`, then acks the batch and claims the next in one call,
/// until nothing is left.
async fn consume(q: Queue, done: std::sync::Arc<AtomicU64>, batch: usize) -> anyhow::Result<()> {
    let lease = Duration::from_secs(30);
    let mut held = q.claim_batch(lease, batch).await?;
    while !held.is_empty() {
        // The handler: nothing (as BullMQ's empty processor).
        done.fetch_add(held.len() as u64, Ordering::Relaxed);
        let ids = held
            .iter()
            .map(|c| Id::parse(&c.job.id))
            .collect::<Result<Vec<_>, _>>()?;
        let acks: Vec<(&Id, &str)> = ids
            .iter()
            .zip(&held)
            .map(|(id, c)| (id, c.lease.token.as_str()))
            .collect();
        held = q.ack_batch_next(&acks, lease, batch).await?;
    }
    Ok(())
}
