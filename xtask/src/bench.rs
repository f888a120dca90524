//! `cargo xtask bench`: the hook for the load generator (`scorecast-tests`, bin `loadgen`).
//!
//! The load generator measures Scorecast side by side with the plain Node baseline
//! (`../shared/bench/peer/`, copied under `target/bench-peer` and `npm install`ed there, since
//! the team's kit is read-only) and against `redis-benchmark`, in one process tree
//! (BENCHMARKS.md); it finds both Redis binaries through the environment set here.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::setup::Tools;
use crate::util::{run, Ctx};

/// Whether the `tests` crate has a `loadgen` binary yet
/// (`tests/src/bin/loadgen.rs`, `tests/src/bin/loadgen/main.rs` or a `[[bin]]` named so).
pub fn loadgen_exists(ctx: &Ctx) -> bool {
    let tests = ctx.root.join("tests");
    if tests.join("src/bin/loadgen.rs").is_file() || tests.join("src/bin/loadgen/main.rs").is_file()
    {
        return true;
    }
    std::fs::read_to_string(tests.join("Cargo.toml")).is_ok_and(|manifest| {
        manifest.split("[[bin]]").skip(1).any(|section| {
            section
                .lines()
                .take_while(|l| !l.starts_with('['))
                .any(is_loadgen_name)
        })
    })
}

fn is_loadgen_name(line: &str) -> bool {
    line.split_once('=')
        .is_some_and(|(k, v)| k.trim() == "name" && v.trim().trim_matches('"') == "loadgen")
}

pub fn build_loadgen(ctx: &Ctx) -> Result<()> {
    run(&mut ctx.cargo([
        "build",
        "--release",
        "-p",
        "scorecast-tests",
        "--bin",
        "loadgen",
    ]))
    .context("building the load generator failed")
}

/// The baseline's files (its `node_modules` are installed next to them).
const PEER_FILES: [&str; 4] = [
    "server.mjs",
    "submit.lua",
    "package.json",
    "package-lock.json",
];

/// Where the Node baseline lives: `SCORECAST_BENCH_PEER`, else `shared/bench/peer` beside the
/// checkout or beside one of its parent directories (a worktree sits deeper than the kit).
fn peer_source(ctx: &Ctx) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SCORECAST_BENCH_PEER") {
        return Some(PathBuf::from(dir));
    }
    ctx.root
        .ancestors()
        .skip(1)
        .map(|d| d.join("shared/bench/peer"))
        .find(|d| d.join("server.mjs").is_file())
}

/// Copies the baseline to `target/bench-peer` and installs its dependencies there (once).
/// `None`, with the reason printed, when the baseline or Node is not available: the bench then
/// measures Scorecast alone.
pub fn prepare_peer(ctx: &Ctx) -> Result<Option<PathBuf>> {
    let Some(src) = peer_source(ctx) else {
        eprintln!("bench: no Node baseline found (shared/bench/peer beside the checkout, or SCORECAST_BENCH_PEER): measuring Scorecast alone");
        return Ok(None);
    };
    if crate::util::which("node", &[]).is_none() || crate::util::which("npm", &[]).is_none() {
        eprintln!(
            "bench: node and npm are needed for the Node baseline: measuring Scorecast alone"
        );
        return Ok(None);
    }
    let dst = ctx.target_dir.join("bench-peer");
    std::fs::create_dir_all(&dst).with_context(|| format!("creating {}", dst.display()))?;
    let mut changed = false;
    for f in PEER_FILES {
        let from = src.join(f);
        if !from.is_file() {
            continue;
        }
        let new = std::fs::read(&from).with_context(|| format!("reading {}", from.display()))?;
        if std::fs::read(dst.join(f)).ok().as_deref() != Some(&new[..]) {
            std::fs::write(dst.join(f), &new)?;
            changed = true;
        }
    }
    if changed || !dst.join("node_modules").is_dir() {
        npm_install(&dst)?;
    }
    Ok(Some(dst))
}

fn npm_install(dir: &Path) -> Result<()> {
    let verb = if dir.join("package-lock.json").is_file() {
        "ci"
    } else {
        "install"
    };
    run(Command::new("npm")
        .args([verb, "--no-audit", "--no-fund"])
        .current_dir(dir))
    .with_context(|| {
        format!(
            "installing the Node baseline's dependencies in {}",
            dir.display()
        )
    })
}

/// Runs `target/release/loadgen ARGS` with `SCORECAST_REDIS_SERVER` and `REDIS_BENCHMARK`
/// pointing at the binaries setup found.
pub fn run_loadgen(ctx: &Ctx, tools: &Tools, args: &[String]) -> Result<()> {
    let bin = ctx.target_dir.join("release/loadgen");
    run(Command::new(&bin)
        .args(args)
        .current_dir(&ctx.root)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server)
        .env("REDIS_BENCHMARK", &tools.redis_benchmark))
    .context("the load generator failed")
}

/// `cargo xtask bench -- --views [ARGS]`: the live-ranks scenario
/// (`tests/src/bin/loadgen_views.rs`), built and run like the load generator.
pub fn views(ctx: &Ctx, tools: &Tools, args: &[String]) -> Result<()> {
    run(&mut ctx.cargo([
        "build",
        "--release",
        "-p",
        "scorecast-tests",
        "--bin",
        "loadgen_views",
    ]))
    .context("building loadgen_views failed")?;
    run(Command::new(ctx.target_dir.join("release/loadgen_views"))
        .args(args)
        .current_dir(&ctx.root)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server))
    .context("loadgen_views failed")
}

/// `cargo xtask bench -- --leagues [ARGS]`: submissions on a bucketed board beside a plain one,
/// and the time to close a league's season (`tests/src/bin/loadgen_leagues.rs`).
pub fn leagues(ctx: &Ctx, tools: &Tools, args: &[String]) -> Result<()> {
    run(&mut ctx.cargo([
        "build",
        "--release",
        "-p",
        "scorecast-tests",
        "--bin",
        "loadgen_leagues",
    ]))
    .context("building loadgen_leagues failed")?;
    run(Command::new(ctx.target_dir.join("release/loadgen_leagues"))
        .args(args)
        .current_dir(&ctx.root)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server))
    .context("loadgen_leagues failed")
}

/// The BullMQ side of `--queues` (`tests/bench/bullmq`: its script and pinned package).
const BULLMQ_FILES: [&str; 3] = ["queues.mjs", "package.json", "package-lock.json"];

/// `cargo xtask bench -- --queues [ARGS]`: Scorecast's queues beside BullMQ
/// (`tests/src/bin/loadgen_queues.rs`). BullMQ is copied with its script to
/// `target/bench-bullmq` and `npm ci`ed there (never globally), then both are run.
pub fn queues(ctx: &Ctx, tools: &Tools, args: &[String]) -> Result<()> {
    if crate::util::which("node", &[]).is_none() || crate::util::which("npm", &[]).is_none() {
        anyhow::bail!("node and npm are needed for the BullMQ side of --queues");
    }
    let src = ctx.root.join("tests/bench/bullmq");
    let dst = ctx.target_dir.join("bench-bullmq");
    std::fs::create_dir_all(&dst).with_context(|| format!("creating {}", dst.display()))?;
    let mut changed = false;
    for f in BULLMQ_FILES {
        let from = src.join(f);
        let new = std::fs::read(&from).with_context(|| format!("reading {}", from.display()))?;
        if std::fs::read(dst.join(f)).ok().as_deref() != Some(&new[..]) {
            std::fs::write(dst.join(f), &new)?;
            changed = true;
        }
    }
    if changed || !dst.join("node_modules/bullmq").is_dir() {
        npm_install(&dst)?;
    }
    run(&mut ctx.cargo([
        "build",
        "--release",
        "-p",
        "scorecast-tests",
        "--bin",
        "loadgen_queues",
    ]))
    .context("building loadgen_queues failed")?;
    run(Command::new(ctx.target_dir.join("release/loadgen_queues"))
        .args(args)
        .arg("--bullmq")
        .arg(&dst)
        .current_dir(&ctx.root)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server))
    .context("loadgen_queues failed")
}
