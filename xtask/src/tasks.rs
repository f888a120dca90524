//! `cargo xtask wasm`, `run` and `test`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::setup::{Tools, WASM_TARGET};
use crate::util::{display, run, Ctx};

/// The most the browser module may weigh: `web/pkg/scorecast_bg.wasm` plus its glue
/// `web/pkg/scorecast.js`, each gzipped at the best level (`gzip -9`), together.
pub const WASM_BUDGET: u64 = 40 * 1024;

/// The cargo profile of the wasm build (root `Cargo.toml`): size-optimised, so the server's
/// `[profile.release]` can be tuned for speed independently.
const WASM_PROFILE: &str = "wasm-release";

/// Where the built-in `2048` validator is kept: committed, so the server (which embeds it)
/// builds from a fresh clone without a wasm toolchain; `cargo xtask wasm` rebuilds it.
pub const VALIDATOR_2048: &str = "server/validators/2048.wasm";

/// Builds the 2048 rules as the built-in validator (`scorecast-validator-2048`, no imports) into
/// [`VALIDATOR_2048`].
pub fn validator(ctx: &Ctx) -> Result<()> {
    run(&mut ctx.cargo([
        "build",
        "-p",
        "scorecast-validator-2048",
        "--target",
        WASM_TARGET,
        // Built for speed, not size: every verified submission runs it (`--release` halves the
        // instructions a 1 000-move replay executes compared with the size profile).
        "--release",
        "--lib",
    ]))
    .context("building scorecast-validator-2048 for wasm32 failed")?;
    let built = ctx
        .target_dir
        .join(WASM_TARGET)
        .join("release")
        .join("scorecast_validator_2048.wasm");
    let dest = ctx.root.join(VALIDATOR_2048);
    std::fs::copy(&built, &dest)
        .with_context(|| format!("copying {} to {}", built.display(), dest.display()))?;
    println!(
        "ok wasm {VALIDATOR_2048} ({} B)",
        std::fs::metadata(&dest)?.len()
    );
    Ok(())
}

/// Where the browser build of the 2048 rules goes (git-ignored, served at `/game/pkg/`).
pub const GAME_PKG: &str = "web/game/pkg";

/// Builds `package` for wasm32 with the size profile and generates its JS bindings into
/// `out_dir` as `<out_name>.js` and `<out_name>_bg.wasm`, without JSDoc in the glue.
fn bindgen(
    ctx: &Ctx,
    tools: &Tools,
    package: &str,
    out_dir: &str,
    out_name: &str,
) -> Result<Payload> {
    let wasm_bindgen = &tools.wasm()?.wasm_bindgen;
    run(&mut ctx.cargo([
        "build",
        "-p",
        package,
        "--target",
        WASM_TARGET,
        "--profile",
        WASM_PROFILE,
        "--lib",
    ]))
    .with_context(|| format!("building {package} for wasm32 failed"))?;

    let module = ctx
        .target_dir
        .join(WASM_TARGET)
        .join(WASM_PROFILE)
        .join(format!("{}.wasm", package.replace('-', "_")));
    let out = ctx.root.join(out_dir);
    // The name section only serves debuggers; it would be a quarter of the gzipped module.
    run(Command::new(wasm_bindgen)
        .args(["--target", "web", "--out-name", out_name])
        .args(["--remove-name-section", "--remove-producers-section"])
        .arg("--out-dir")
        .arg(&out)
        .arg(&module)
        .current_dir(&ctx.root))
    .with_context(|| format!("wasm-bindgen failed for {package}"))?;

    // The doc comments wasm-bindgen copies from the Rust source stay in the `.d.ts` (for
    // editors); in the glue every browser downloads they were a fifth of its gzipped size.
    let glue = out.join(format!("{out_name}.js"));
    let js =
        std::fs::read_to_string(&glue).with_context(|| format!("reading {}", glue.display()))?;
    std::fs::write(&glue, strip_doc_comments(&js))
        .with_context(|| format!("writing {}", glue.display()))?;
    println!("ok wasm {out_dir}/{out_name}.js, {out_dir}/{out_name}_bg.wasm");
    Payload::measure(&out, out_name)
}

/// Builds `scorecast-shared` for wasm32 and generates the JS bindings into `web/pkg` (the SDK),
/// the 2048 rules for the browser (`scorecast-game2048-web`) into [`GAME_PKG`], and the built-in
/// validator (see [`validator`]). Prints the gzipped size of both browser modules.
pub fn wasm(ctx: &Ctx, tools: &Tools) -> Result<()> {
    validator(ctx)?;
    let sdk = bindgen(ctx, tools, "scorecast-shared", "web/pkg", "scorecast")?;
    let game = bindgen(ctx, tools, "scorecast-game2048-web", GAME_PKG, "game2048")?;
    // Figures only: the SDK's budget fails `cargo xtask test`, not a build.
    match sdk.check(WASM_BUDGET) {
        Ok(line) => println!("{line}"),
        Err(over) => println!("{over:#}"),
    }
    println!("game module ({GAME_PKG}): {}", game.figures());
    Ok(())
}

/// `js` without its `/** ... */` blocks that start a line (wasm-bindgen's JSDoc, one per export).
fn strip_doc_comments(js: &str) -> String {
    let mut out = String::with_capacity(js.len());
    let mut in_doc = false;
    for line in js.split_inclusive('\n') {
        let trimmed = line.trim();
        if !in_doc && trimmed.starts_with("/**") {
            in_doc = true;
        }
        if in_doc {
            in_doc = !trimmed.ends_with("*/");
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Sizes of a browser module as built by wasm-bindgen: `<name>_bg.wasm` and its glue `<name>.js`.
struct Payload {
    wasm: u64,
    js: u64,
    wasm_gz: u64,
    js_gz: u64,
    /// Both files gzipped at the fast level, as the server's `Compress` middleware sends them.
    served_gz: u64,
}

impl Payload {
    fn measure(dir: &Path, name: &str) -> Result<Payload> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).with_context(|| {
                format!("reading {} (run `cargo xtask wasm` first)", path.display())
            })
        };
        let wasm = read(&format!("{name}_bg.wasm"))?;
        let js = read(&format!("{name}.js"))?;
        Ok(Payload {
            wasm: wasm.len() as u64,
            js: js.len() as u64,
            wasm_gz: gzip_len(&wasm, Compression::best())?,
            js_gz: gzip_len(&js, Compression::best())?,
            served_gz: gzip_len(&wasm, Compression::fast())? + gzip_len(&js, Compression::fast())?,
        })
    }

    fn total(&self) -> u64 {
        self.wasm_gz + self.js_gz
    }

    /// The sizes, raw and gzipped, on one line.
    fn figures(&self) -> String {
        format!(
            "wasm {} B ({} B gzipped) + glue JS {} B ({} B gzipped) = {} B = {:.1} KiB gzipped; \
             as served (gzip level 1): {} B",
            self.wasm,
            self.wasm_gz,
            self.js,
            self.js_gz,
            self.total(),
            self.total() as f64 / 1024.0,
            self.served_gz,
        )
    }

    /// One line of figures; an error when the gzipped total is above `budget` bytes.
    fn check(&self, budget: u64) -> Result<String> {
        let line = format!(
            "browser payload (web/pkg, the SDK): {}; budget {:.1} KiB",
            self.figures(),
            budget as f64 / 1024.0,
        );
        if self.total() > budget {
            bail!(
                "{line}\nthe browser module is over its budget by {} B: see what grew with \
                 BENCHMARKS.md's \"browser payload\" notes",
                self.total() - budget
            );
        }
        Ok(line)
    }
}

fn gzip_len(bytes: &[u8], level: Compression) -> Result<u64> {
    let mut gz = GzEncoder::new(Vec::new(), level);
    gz.write_all(bytes)?;
    Ok(gz.finish()?.len() as u64)
}

/// Fails when `web/pkg` (as last built) is over [`WASM_BUDGET`]; prints the figures either way,
/// and those of the game module (which has no budget of its own: only `/play` loads it).
pub fn wasm_budget(ctx: &Ctx) -> Result<()> {
    let line = Payload::measure(&ctx.root.join("web/pkg"), "scorecast")?.check(WASM_BUDGET)?;
    println!("{line}");
    let game = Payload::measure(&ctx.root.join(GAME_PKG), "game2048")?;
    println!("game module ({GAME_PKG}): {}", game.figures());
    Ok(())
}

/// `cargo run -p scorecast-server --release --bin scorecast -- --dev ARGS` (without `--release`
/// when `debug`), in place of this process on Unix so that Ctrl-C reaches the server alone and
/// it can stop its redis-server cleanly.
pub fn run_server(ctx: &Ctx, tools: &Tools, debug: bool, extra: &[String]) -> Result<()> {
    let mut cmd = ctx.cargo(["run", "-p", "scorecast-server"]);
    if !debug {
        cmd.arg("--release");
    }
    cmd.args(["--bin", "scorecast", "--", "--dev"]);
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
            "fmt, clippy, wasm build, wasm size, wasm tests, browser tests",
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
                "-p",
                "scorecast-game2048",
                "-p",
                "scorecast-validator-2048",
                "-p",
                "scorecast-game2048-web",
                "--target",
                WASM_TARGET,
                "--",
                "-D",
                "warnings",
            ]))
        })?;
        steps.run("wasm build", || wasm(ctx, tools))?;
        steps.run("wasm size", || wasm_budget(ctx))?;
    }

    steps.run("cargo test", || {
        let mut cmd = ctx.cargo(["test", "--workspace"]);
        with_filter(&mut cmd, filter);
        if std::env::var_os("CI").is_some() {
            // A CI log is read from its end: a failure's message must not be pushed out of it
            // by the backtraces of a CI environment's RUST_BACKTRACE.
            cmd.env("RUST_BACKTRACE", "0");
        }
        if let Some(nginx) = &tools.nginx {
            cmd.env("SCORECAST_NGINX", nginx);
        }
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
                "-p",
                "scorecast-game2048-web",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(wasm_gz: u64, js_gz: u64) -> Payload {
        Payload {
            wasm: 3 * wasm_gz,
            js: 3 * js_gz,
            wasm_gz,
            js_gz,
            served_gz: wasm_gz + js_gz,
        }
    }

    #[test]
    fn the_budget_counts_wasm_and_glue_together() {
        let line = payload(30_000, 5_000).check(WASM_BUDGET).unwrap();
        assert!(
            line.contains(
                "= 35000 B = 34.2 KiB gzipped; as served (gzip level 1): 35000 B; budget 40.0 KiB"
            ),
            "{line}"
        );
        assert!(payload(40_960, 0).check(WASM_BUDGET).is_ok());
        let err = payload(36_000, 5_000).check(WASM_BUDGET).unwrap_err();
        assert!(err.to_string().contains("over its budget by 40 B"), "{err}");
    }

    #[test]
    fn doc_comments_leave_the_glue_and_code_stays() {
        let js = "/* @ts-self-types=\"./scorecast.d.ts\" */\n\n/**\n * Parses.\n * @returns {any}\n */\nexport function parse(text) {\n    /** inline */\n    return f(\"/** not a comment */\", text); // */\n}\n";
        assert_eq!(
            strip_doc_comments(js),
            "/* @ts-self-types=\"./scorecast.d.ts\" */\n\nexport function parse(text) {\n    return f(\"/** not a comment */\", text); // */\n}\n"
        );
    }

    #[test]
    fn gzip_sizes_are_of_the_compressed_stream() {
        let text = b"scorecast ".repeat(1000);
        let best = gzip_len(&text, Compression::best()).unwrap();
        assert!(best > 18 && best < 200, "{best}"); // 18 B of gzip header and trailer
        let mut x = 2_463_534_242u32; // xorshift32: bytes gzip cannot shrink
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        assert!(gzip_len(&noise, Compression::best()).unwrap() > 4000);
    }
}
