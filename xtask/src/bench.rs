//! `cargo xtask bench`: the hook for the load generator (`scorecast-tests`, bin `loadgen`).
//!
//! The load generator measures Scorecast against `redis-benchmark` in the same process tree
//! (BENCHMARKS.md); it finds both Redis binaries through the environment set here.

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

/// `cargo xtask bench -- --views [ARGS]`: the live-ranks scenario of issue 11
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
