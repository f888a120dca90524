//! `cargo xtask fuzz [TARGET] [-- SECONDS]`: coverage-guided fuzzing of what strangers send us
//! (WebSocket frames) and of the score packing, with libFuzzer via cargo-fuzz on nightly.
//! Not part of `test` (it needs nightly and minutes, not seconds); run it after touching
//! `shared/src/protocol.rs` or `shared/src/codec.rs`.

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::util::{probe, run, Ctx};

pub const TARGETS: [&str; 2] = ["client_msg", "codec"];

pub fn fuzz(ctx: &Ctx, target: Option<&str>, seconds: u64) -> Result<()> {
    let targets: Vec<&str> = match target {
        Some(t) if TARGETS.contains(&t) => vec![t],
        Some(t) => bail!("unknown fuzz target `{t}`; targets: {}", TARGETS.join(", ")),
        None => TARGETS.to_vec(),
    };
    if probe(Command::new("rustup").args(["run", "nightly", "rustc", "--version"])).is_none() {
        bail!("fuzzing needs the nightly toolchain: rustup toolchain install nightly");
    }
    let cargo_fuzz = ctx.tools_dir().join("bin/cargo-fuzz");
    if !cargo_fuzz.exists() {
        println!("installing cargo-fuzz into .tools/");
        run(ctx
            .cargo(["install", "cargo-fuzz", "--root"])
            .arg(ctx.tools_dir()))
        .context("installing cargo-fuzz failed")?;
    }
    for t in targets {
        println!("==> fuzz {t} for {seconds} s");
        run(Command::new(&cargo_fuzz)
            .args([
                "fuzz",
                "run",
                t,
                "--",
                &format!("-max_total_time={seconds}"),
            ])
            .current_dir(&ctx.root)
            // The nightly cargo, not the stable one that runs xtask.
            .env_remove("CARGO")
            .env("RUSTUP_TOOLCHAIN", "nightly"))
        .with_context(|| {
            format!("fuzz target {t} failed (its crash input is under fuzz/artifacts/{t}/)")
        })?;
    }
    Ok(())
}
