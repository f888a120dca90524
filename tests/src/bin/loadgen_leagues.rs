//! `loadgen_leagues`: what buckets and leagues cost (`cargo xtask bench -- --leagues`).
//!
//! One release server in this process, on a fresh `redis-server` (AOF off) on a free loopback
//! port, with a manual clock:
//!
//! 1. **Submissions**: boards `plain` and `bucketed` (`bucket_size` `--bucket`), each seeded with
//!    `--players` players by the submission script itself, in batches of 1000 (one call each:
//!    the seeding is bounded, not one request per player). Then `--rounds` rounds, alternating
//!    which board goes first, of `--submissions` submissions of random players through the
//!    submission core (`AppState::submit`, the group commit every front door uses) from
//!    `--concurrency` tasks. Prints submissions/s of each board, their medians and the ratio
//!    bucketed / plain (the goal: at least 0.9). Then the time of an operator's read of the
//!    bucketed board's whole top 100 (merged from its buckets, as the rounds changed them) and of
//!    the same read again (nothing changed since).
//! 2. **A league's season end**: a league of 3 tiers (`--bucket`, promote and relegate
//!    `--moves`), `--players` players placed evenly on the tiers (the placements written as the
//!    season-end job writes them), each with a score in the season; then the clock passes the
//!    season's end and the `league.close` job runs once, timed: the frozen standings of every
//!    bucket read, the moves stored, applied to each tier, and a `notify` job enqueued per
//!    moved player.

use std::time::Instant;

use anyhow::{bail, Context};
use scorecast_server::clock::Clock;
use scorecast_server::config::{Secret, Settings};
use scorecast_server::embedded::RedisProcess;
use scorecast_server::queue::Job;
use scorecast_server::startup::Application;
use scorecast_server::state::AppState;
use scorecast_server::store::{pack_submissions, LeagueConfig, Read, Scope, Submission};
use scorecast_server::{jobs, keys, scripts};
use scorecast_shared::{BoardConfig, Id, Reset};
use serde_json::json;

const USAGE: &str = "\
usage: loadgen_leagues [--players 100000] [--submissions 200000] [--concurrency 256]
                       [--rounds 7] [--bucket 30] [--moves 3] [--quick]";

/// 2025-03-10T12:00:00Z, a Monday: the weekly season 2025-W11.
const T0: i64 = 1_741_608_000_000;
/// 2025-03-17T00:00:00Z: the end of 2025-W11.
const WEEK_END: i64 = 1_742_169_600_000;
/// Submissions per seeding call.
const SEED_BATCH: usize = 1000;
const TIERS: [&str; 3] = ["tier-0", "tier-1", "tier-2"];

struct Args {
    players: u64,
    submissions: u64,
    concurrency: u64,
    rounds: usize,
    bucket: u32,
    moves: u32,
}

impl Args {
    fn parse(argv: &[String]) -> anyhow::Result<Args> {
        let mut a = Args {
            players: 100_000,
            submissions: 200_000,
            concurrency: 256,
            // Single runs on a 2-core VM spread by a factor of two: a median of three moves the
            // ratio by about 0.05; BENCHMARKS.md's figures are medians of seven.
            rounds: 7,
            bucket: 30,
            moves: 3,
        };
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--leagues" => continue,
                "--quick" => {
                    a.players = 10_000;
                    a.submissions = 20_000;
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
            let n: u64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            match flag.as_str() {
                "--players" => a.players = n.max(3),
                "--submissions" => a.submissions = n.max(1),
                "--concurrency" => a.concurrency = n.clamp(1, 10_000),
                "--rounds" => a.rounds = (n as usize).max(1),
                "--bucket" => a.bucket = (n as u32).clamp(2, 1000),
                "--moves" => a.moves = (n as u32).max(1),
                _ => bail!("unknown flag {flag}\n{USAGE}"),
            }
        }
        anyhow::ensure!(
            2 * a.moves <= a.bucket,
            "--moves {} twice is more than --bucket {}",
            a.moves,
            a.bucket
        );
        Ok(a)
    }
}

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = Args::parse(&argv)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench(&a))
}

fn id(s: &str) -> Id {
    // The bench's own constants and generated names are ids.
    Id::parse(s).expect("an id")
}

fn player(i: u64) -> String {
    format!("p{i}")
}

async fn bench(a: &Args) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("scorecast-leagues-{}", std::process::id()));
    let redis = RedisProcess::start(&dir, false)?;
    let settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        redis_url: Some(Secret::new(redis.url())),
        admin_token: Some(Secret::new("bench-admin-token-0123456789abcdef".to_owned())),
        token_secret: Some(Secret::new(
            "bench-token-secret-0123456789abcdef".to_owned(),
        )),
        workers: false,
        ..Settings::default()
    };
    let clock = Clock::manual(T0);
    let app = Application::build_with_clock(settings, clock.clone()).await?;
    let st = app.state().clone();
    tokio::spawn(app.run_until_stopped());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "leagues: {} players, buckets of {}, {} submissions x {} rounds from {} tasks, {cpus} CPUs",
        a.players, a.bucket, a.submissions, a.rounds, a.concurrency
    );

    // 1. Submissions on a bucketed board beside a plain one.
    let plain = BoardConfig {
        submit_limit: None,
        ..BoardConfig::default()
    };
    let bucketed = BoardConfig {
        bucket_size: Some(a.bucket),
        ..plain.clone()
    };
    for (b, cfg) in [("plain", &plain), ("bucketed", &bucketed)] {
        st.store.put_board(&id(b), cfg).await?;
        let t = Instant::now();
        seed(&redis.url(), b, (0..a.players).map(player), "seed").await?;
        println!(
            "  seeded {b}: {} players in {:.2} s",
            a.players,
            t.elapsed().as_secs_f64()
        );
    }
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..a.rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let board = ["plain", "bucketed"][side];
            let rate = submit_load(&st, a, board, round).await?;
            println!(
                "  round {} {board:>8}: {rate:>9.0} submissions/s",
                round + 1
            );
            rates[side].push(rate);
        }
    }
    let (p, b) = (median(&mut rates[0]), median(&mut rates[1]));
    println!(
        "submissions/s (median): plain {p:.0}, bucketed {b:.0}; bucketed / plain = {:.3} (goal >= 0.9)",
        b / p
    );
    // An operator's read of the whole bucketed board: merged from the buckets the rounds changed,
    // then read again unchanged.
    let top = Read::Top {
        offset: 0,
        limit: 100,
    };
    let mut took = [0.0; 2];
    for t in &mut took {
        let at = Instant::now();
        let (page, _) = st
            .store
            .read_in(&id("bucketed"), None, Scope::Board, top)
            .await?;
        *t = at.elapsed().as_secs_f64() * 1e3;
        if page.total != a.players {
            bail!(
                "the whole board counts {} players, not {}",
                page.total,
                a.players
            );
        }
    }
    println!(
        "whole bucketed board, top 100: {:.1} ms merged after the rounds, {:.2} ms unchanged",
        took[0], took[1]
    );

    // 2. A league's season end.
    let league = id("bench");
    let cfg = LeagueConfig {
        tiers: TIERS.iter().map(|t| t.to_string()).collect(),
        bucket_size: a.bucket,
        promote: a.moves,
        relegate: a.moves,
        reset: Reset::Weekly,
        keep_seasons: 1,
        board: Some(plain.clone()),
    };
    st.store.put_league(&league, &cfg).await?;
    let t = Instant::now();
    let client = redis::Client::open(redis.url())?;
    let mut c = client.get_multiplexed_async_connection().await?;
    for (i, tier) in TIERS.iter().enumerate() {
        let players: Vec<String> = (0..a.players)
            .filter(|p| p % 3 == i as u64)
            .map(player)
            .collect();
        if i > 0 {
            // Placed on this tier as the season-end job places a moved player.
            for chunk in players.chunks(SEED_BATCH) {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(keys::placed(&id(tier)));
                for p in chunk {
                    cmd.arg(p).arg(*tier);
                }
                let _: () = cmd.query_async(&mut c).await?;
            }
        }
        seed(&redis.url(), tier, players.into_iter(), "league").await?;
    }
    println!(
        "  seeded the league: {} players on {} tiers in {:.2} s",
        a.players,
        TIERS.len(),
        t.elapsed().as_secs_f64()
    );
    clock.set(WEEK_END);
    let payload = jobs::league::LeagueClosePayload {
        league: league.to_string(),
        season: "2025-W11".into(),
        end_ms: WEEK_END,
    };
    let text = json!({"id": "league.close.bench.2025-W11", "kind": "league.close",
                      "payload": payload, "priority": 0, "attempts": 1, "max_attempts": 5})
    .to_string();
    let job: Job = serde_json::from_str(&text)?;
    let t = Instant::now();
    jobs::handle(&st, &scorecast_tests::NoNotify, &job)
        .await
        .map_err(|e| anyhow::anyhow!("league.close: {e}"))?;
    let took = t.elapsed();
    let moves = st
        .store
        .moves(&league, "2025-W11")
        .await?
        .context("the job stored no moves")?;
    anyhow::ensure!(moves.closed_ms.is_some(), "the season was not closed");
    println!(
        "league season close: {} players on 3 tiers, {} moves (each notified) in {:.2} s",
        a.players,
        moves.moves.len(),
        took.as_secs_f64()
    );
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Gives each of `players` a first score on `board` through the submission script, 1000 per
/// call.
async fn seed(
    url: &str,
    board: &str,
    players: impl Iterator<Item = String>,
    sid: &str,
) -> anyhow::Result<()> {
    let client = redis::Client::open(url)?;
    let mut c = client.get_multiplexed_async_connection().await?;
    let mut rng = Xorshift::new(0x5eed);
    let subs: Vec<Submission> = players
        .map(|p| Submission {
            board: id(board),
            player: id(&p),
            id: id(sid),
            points: rng.below(1_000_000) as i64 + 1,
            op: None,
            name: None,
            by: Some("bench".into()),
            verified: false,
        })
        .collect();
    for chunk in subs.chunks(SEED_BATCH) {
        let packed = pack_submissions(chunk.iter());
        let _: redis::Value = scripts::PLAIN
            .submit
            .key(keys::config(&id(board)))
            .arg(T0)
            .arg("")
            .arg(packed)
            .invoke_async(&mut c)
            .await?;
    }
    Ok(())
}

/// `--submissions` submissions of random players on `board` from `--concurrency` tasks through
/// the submission core; submissions per second.
async fn submit_load(st: &AppState, a: &Args, board: &str, round: usize) -> anyhow::Result<f64> {
    let per_task = a.submissions.div_ceil(a.concurrency);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..a.concurrency {
        let st = st.clone();
        let board = id(board);
        let players = a.players;
        tasks.push(tokio::spawn(async move {
            let mut rng = Xorshift::new(((round as u64) << 32) ^ (task + 1));
            for n in 0..per_task {
                let s = Submission {
                    board: board.clone(),
                    player: id(&player(rng.below(players))),
                    id: id(&format!("r{round}-{task}-{n}")),
                    points: rng.below(99) as i64 + 1,
                    op: None,
                    name: None,
                    by: None,
                    verified: false,
                };
                st.submit(&s)
                    .await
                    .map_err(|e| anyhow::anyhow!("submit: {e}"))?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok((per_task * a.concurrency) as f64 / t.elapsed().as_secs_f64())
}

/// A small deterministic generator (xorshift64*): which player submits, and their points.
struct Xorshift(u64);

impl Xorshift {
    fn new(seed: u64) -> Xorshift {
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in 0..n.
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
