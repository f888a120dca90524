//! `cargo xtask chaos`: builds and runs the fault run (`scorecast-tests`, bin `chaos`), which
//! kills redis-server, the server and queue workers mid-load and the server mid-ban, and prints
//! what was lost (`cargo xtask chaos --only ban` runs the crash-mid-ban scenario alone).

use std::process::Command;

use anyhow::{Context, Result};

use crate::setup::Tools;
use crate::util::{run, Ctx};

/// `cargo build --release --bin chaos`, then `target/release/chaos ARGS`.
pub fn chaos(ctx: &Ctx, tools: &Tools, args: &[String]) -> Result<()> {
    run(&mut ctx.cargo([
        "build",
        "--release",
        "-p",
        "scorecast-tests",
        "--bin",
        "chaos",
    ]))
    .context("building the fault run failed")?;
    run(Command::new(ctx.target_dir.join("release/chaos"))
        .args(args)
        .current_dir(&ctx.root)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server))
    .context("the fault run failed")
}
