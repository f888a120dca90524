//! `cargo xtask`: set-up and automation for Scorecast (README).
//!
//! ```text
//! cargo xtask setup                  install what is missing (idempotent)
//! cargo xtask wasm                   build the SDK (web/pkg), the 2048 rules (web/game/pkg) and the
//!                                    2048 validator (server/validators/2048.wasm)
//! cargo xtask run [--debug] [-- ARGS] setup, wasm, then `scorecast --dev ARGS` (release build)
//! cargo xtask test [--quick] [-- FILTER...]
//!                                    setup, then fmt, clippy, wasm, its size, every test
//! cargo xtask bench [--quick] [-- ARGS]
//!                                    setup, then Scorecast beside the Node baseline, then
//!                                    verified runs (`-- --verified-only` for those alone)
//! cargo xtask chaos [-- ARGS]        setup, then the fault run (kills Redis, server, workers)
//! cargo xtask fuzz [TARGET] [-- SECS] libFuzzer on the protocol parser and the score codec
//! ```

mod bench;
mod chaos;
mod fuzz;
mod setup;
mod tasks;
mod util;

use std::process::ExitCode;

use anyhow::{bail, Context, Result};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup                      install what is missing: redis-server, redis-benchmark,
                             the wasm32 target, wasm-bindgen-cli (into .tools/)
  setup --browser            the same, plus chromium, node, tests/browser/node_modules,
                             nginx and openssl
  wasm                       build scorecast-shared for wasm32 and bind it into web/pkg,
                             the 2048 rules into web/game/pkg, the 2048 validator
  run [--debug] [-- ARGS]    setup, wasm, then start `scorecast --dev ARGS`, built in the
                             release profile; --debug: the dev profile (faster to rebuild)
  test [--quick] [-- FILTER] setup (nginx and openssl too), then fmt, clippy (native and wasm32), wasm build,
                             wasm size (budget: 40 KiB gzipped), cargo test, wasm tests,
                             browser tests;
                             --quick runs `cargo test` only; FILTER goes to the test runners
  bench [--quick] [-- ARGS]  setup, then build and run the load generator with ARGS:
                             Scorecast and the Node baseline (../shared/bench/peer) side
                             by side, 3 alternating rounds, then verified 2048 runs and a
                             hostile validator; --quick: a run of a few minutes
                             (-- --views [--players N | --sizes 1000,10000] [--rounds R]
                             [--rate S]: live ranks, closed loop or S submissions/s
                             offered; -- --verified-only / --no-verified: only / without
                             verified runs; -- --queues [--jobs N] [--rounds R]: Scorecast's
                             queues beside BullMQ, installed under target/bench-bullmq;
                             -- --leagues [--players N] [--submissions N] [--rounds R]:
                             a bucketed board beside a plain one, and a league's season
                             close of N players on 3 tiers)
  chaos [-- ARGS]            setup, then the fault run: redis-server, server and queue
                             workers SIGKILLed mid-load, stalled spectators; prints figures
  fuzz [TARGET] [-- SECONDS] fuzz client_msg and/or codec (nightly + cargo-fuzz), 60 s each";

fn main() -> ExitCode {
    match try_main() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn try_main() -> Result<ExitCode> {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("{USAGE}");
        return Ok(ExitCode::FAILURE);
    };
    let rest: Vec<String> = args.collect();
    let ctx = util::Ctx::new()?;

    match command.as_str() {
        "setup" => {
            let (flags, extra) = split_flags(&rest, &["--browser"])?;
            no_extra(&command, &extra)?;
            let needs = if flags.contains(&"--browser") {
                setup::Needs::everything()
            } else {
                setup::Needs::toolchain()
            };
            setup::run(&ctx, needs)?;
        }
        "wasm" => {
            let (_, extra) = split_flags(&rest, &[])?;
            no_extra(&command, &extra)?;
            let tools = setup::run(&ctx, setup::Needs::toolchain())?;
            tasks::wasm(&ctx, &tools)?;
        }
        "run" => {
            let (flags, extra) = split_flags(&rest, &["--debug"])?;
            let tools = setup::run(&ctx, setup::Needs::toolchain())?;
            tasks::wasm(&ctx, &tools)?;
            // Only returns if the server could not be started.
            tasks::run_server(&ctx, &tools, flags.contains(&"--debug"), &extra)?;
        }
        "test" => {
            let (flags, filter) = split_flags(&rest, &["--quick"])?;
            let quick = flags.contains(&"--quick");
            let mut needs = if quick {
                setup::Needs::redis_only()
            } else {
                setup::Needs::everything()
            };
            // The end-to-end tests put nginx in front of the server, quick or not.
            needs.proxy = true;
            let tools = setup::run(&ctx, needs)?;
            tasks::test(&ctx, &tools, quick, &filter)?;
        }
        "bench" => {
            let (flags, mut extra) = split_flags(&rest, &["--quick"])?;
            if flags.contains(&"--quick") {
                extra.insert(0, "--quick".into());
            }
            let tools = setup::run(&ctx, setup::Needs::redis_only())?;
            if extra.iter().any(|a| a == "--views") {
                bench::views(&ctx, &tools, &extra)?;
                return Ok(ExitCode::SUCCESS);
            }
            if extra.iter().any(|a| a == "--queues") {
                bench::queues(&ctx, &tools, &extra)?;
                return Ok(ExitCode::SUCCESS);
            }
            if extra.iter().any(|a| a == "--leagues") {
                bench::leagues(&ctx, &tools, &extra)?;
                return Ok(ExitCode::SUCCESS);
            }
            if !bench::loadgen_exists(&ctx) {
                eprintln!("bench: load generator not built yet");
                return Ok(ExitCode::FAILURE);
            }
            // The verified-runs section alone measures Scorecast only: no baseline to install.
            if !extra
                .iter()
                .any(|a| a == "--peer" || a == "--verified-only")
            {
                if let Some(peer) = bench::prepare_peer(&ctx)? {
                    extra.push("--peer".into());
                    extra.push(peer.display().to_string());
                }
            }
            bench::build_loadgen(&ctx)?;
            bench::run_loadgen(&ctx, &tools, &extra)?;
        }
        "chaos" => {
            let (_, extra) = split_flags(&rest, &[])?;
            let tools = setup::run(&ctx, setup::Needs::redis_only())?;
            chaos::chaos(&ctx, &tools, &extra)?;
        }
        "fuzz" => {
            let (target, seconds) = match rest.iter().position(|a| a == "--") {
                Some(i) => (rest[..i].first(), rest.get(i + 1)),
                None => (rest.first(), None),
            };
            let seconds = match seconds {
                Some(s) => s
                    .parse()
                    .with_context(|| format!("`{s}` is not a number of seconds"))?,
                None => 60,
            };
            fuzz::fuzz(&ctx, target.map(String::as_str), seconds)?;
        }
        "help" | "-h" | "--help" => println!("{USAGE}"),
        other => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Splits `args` into known flags (before `--`) and the pass-through arguments after `--`.
/// Anything else before `--` is an error, so a typo never silently becomes a filter.
fn split_flags<'a>(args: &[String], known: &[&'a str]) -> Result<(Vec<&'a str>, Vec<String>)> {
    let mut flags = Vec::new();
    let mut iter = args.iter();
    for arg in iter.by_ref() {
        if arg == "--" {
            break;
        }
        match known.iter().find(|k| **k == arg) {
            Some(k) => flags.push(*k),
            None => bail!(
                "unexpected argument `{arg}` (pass-through arguments go after `--`)\n\n{USAGE}"
            ),
        }
    }
    Ok((flags, iter.cloned().collect()))
}

fn no_extra(command: &str, extra: &[String]) -> Result<()> {
    if !extra.is_empty() {
        bail!("`{command}` takes no extra arguments, got {extra:?}");
    }
    Ok(())
}
