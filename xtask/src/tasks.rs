//! `cargo xtask wasm`, `run` and `test`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::setup::{Tools, WASM_TARGET};
use crate::util::{display, run, Ctx};

/// Builds `scorecast-shared` for wasm32 and generates the JS bindings into `web/pkg`.
pub fn wasm(ctx: &Ctx, tools: &Tools) -> Result<()> {
    let wasm_bindgen = &tools.wasm()?.wasm_bindgen;
    run(&mut ctx.cargo([
        "build",
        "-p",
        "scorecast-shared",
        "--target",
        WASM_TARGET,
        "--release",
        "--lib",
    ]))
    .context("building scorecast-shared for wasm32 failed")?;

    let module = ctx
        .target_dir
        .join(WASM_TARGET)
        .join("release/scorecast_shared.wasm");
    let out_dir = ctx.root.join("web/pkg");
    run(Command::new(wasm_bindgen)
        .args(["--target", "web", "--out-name", "scorecast", "--out-dir"])
        .arg(&out_dir)
        .arg(&module)
        .current_dir(&ctx.root))
    .context("wasm-bindgen failed")?;

    let size = std::fs::metadata(out_dir.join("scorecast_bg.wasm"))
        .map(|m| format!(" ({} KiB)", m.len() / 1024))
        .unwrap_or_default();
    println!("ok wasm web/pkg/scorecast.js, web/pkg/scorecast_bg.wasm{size}");
    Ok(())
}

/// `cargo run -p scorecast-server --bin scorecast -- --dev ARGS`, in place of this process
/// on Unix so that Ctrl-C reaches the server alone and it can stop its redis-server cleanly.
pub fn run_server(ctx: &Ctx, tools: &Tools, extra: &[String]) -> Result<()> {
    let mut cmd = ctx.cargo([
        "run",
        "-p",
        "scorecast-server",
        "--bin",
        "scorecast",
        "--",
        "--dev",
    ]);
    cmd.args(extra)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server);
    println!("running {}", display(&cmd));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = cmd.exec(); // returns only on failure
        Err(err).with_context(|| format!("could not start `{}`", display(&cmd)))
    }
    #[cfg(not(unix))]
    {
        run(&mut cmd)
    }
}

/// Every check, in order, stopping at the first failure with the step's name.
/// `quick` runs only `cargo test`; `filter` goes to the test runners.
pub fn test(ctx: &Ctx, tools: &Tools, quick: bool, filter: &[String]) -> Result<()> {
    let mut steps = Steps::new();

    if quick {
        steps.skip(
            "fmt, clippy, wasm build, wasm tests, browser tests",
            "--quick",
        );
    } else {
        steps.run("fmt", || {
            run(&mut ctx.cargo(["fmt", "--all", "--", "--check"]))
                .context("run `cargo fmt --all` to fix")
        })?;
        steps.run("clippy", || {
            run(&mut ctx.cargo([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]))
        })?;
        steps.run("clippy (wasm32)", || {
            run(&mut ctx.cargo([
                "clippy",
                "-p",
                "scorecast-shared",
                "--target",
                WASM_TARGET,
                "--",
                "-D",
                "warnings",
            ]))
        })?;
        steps.run("wasm build", || wasm(ctx, tools))?;
    }

    steps.run("cargo test", || {
        let mut cmd = ctx.cargo(["test", "--workspace"]);
        with_filter(&mut cmd, filter);
        run(cmd.env("SCORECAST_REDIS_SERVER", &tools.redis_server))
    })?;

    if !quick {
        steps.run("wasm tests", || {
            let runner = &tools.wasm()?.test_runner;
            // `--tests`: unit and integration tests; doc tests already ran natively.
            let mut cmd = ctx.cargo([
                "test",
                "-p",
                "scorecast-shared",
                "--target",
                WASM_TARGET,
                "--tests",
            ]);
            with_filter(&mut cmd, filter);
            run(cmd.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", runner))
        })?;

        let browser_tests = browser_test_files(ctx)?;
        if browser_tests.is_empty() {
            steps.skip("browser tests", "no tests/browser/*.test.mjs yet");
        } else {
            steps.run("browser tests", || {
                browser(ctx, tools, &browser_tests, filter)
            })?;
        }
    }

    steps.summary();
    Ok(())
}

/// Appends `-- FILTER...` for libtest (and wasm-bindgen-test-runner, which takes the same).
fn with_filter(cmd: &mut Command, filter: &[String]) {
    if !filter.is_empty() {
        cmd.arg("--").args(filter);
    }
}

/// `tests/browser/*.test.mjs`, sorted. Listed explicitly because `node --test DIR`
/// means different things in different Node versions.
fn browser_test_files(ctx: &Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.root.join("tests/browser");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        let is_test = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".test.mjs"));
        if is_test && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Builds the server binary and runs the browser tests against it with `node --test`.
fn browser(ctx: &Ctx, tools: &Tools, files: &[PathBuf], filter: &[String]) -> Result<()> {
    let browser = tools.browser()?;
    run(&mut ctx.cargo(["build", "-p", "scorecast-server", "--bin", "scorecast"]))
        .context("building the scorecast binary failed")?;
    let bin = ctx.target_dir.join("debug/scorecast");

    let mut cmd = Command::new(&browser.node);
    cmd.arg("--test");
    for pattern in filter.iter().filter(|f| !f.starts_with('-')) {
        cmd.arg(format!("--test-name-pattern={pattern}"));
    }
    cmd.args(files)
        .current_dir(&ctx.root)
        .env("SCORECAST_BIN", &bin)
        .env("SCORECAST_REDIS_SERVER", &tools.redis_server)
        .env("CHROMIUM", &browser.chromium);
    run(&mut cmd)
}

/// Runs named steps in order and prints what passed, what was skipped and how long it took.
struct Steps {
    start: Instant,
    passed: Vec<(&'static str, Duration)>,
    skipped: Vec<(&'static str, &'static str)>,
}

impl Steps {
    fn new() -> Self {
        Steps {
            start: Instant::now(),
            passed: Vec::new(),
            skipped: Vec::new(),
        }
    }

    fn run(&mut self, name: &'static str, step: impl FnOnce() -> Result<()>) -> Result<()> {
        println!("\n==> {name}");
        let start = Instant::now();
        step().with_context(|| format!("test step `{name}` failed"))?;
        self.passed.push((name, start.elapsed()));
        Ok(())
    }

    fn skip(&mut self, name: &'static str, why: &'static str) {
        println!("\n==> {name}: skipped ({why})");
        self.skipped.push((name, why));
    }

    fn summary(&self) {
        let passed: Vec<String> = self
            .passed
            .iter()
            .map(|(name, took)| format!("{name} {}", secs(*took)))
            .collect();
        let mut line = format!(
            "\ntest: all {} steps passed in {} [{}]",
            self.passed.len(),
            secs(self.start.elapsed()),
            passed.join(", ")
        );
        for (name, why) in &self.skipped {
            line.push_str(&format!("; skipped {name} ({why})"));
        }
        println!("{line}");
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}
