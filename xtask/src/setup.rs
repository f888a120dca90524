//! `cargo xtask setup`: find every tool, install only what is missing, one line per step.
//!
//! System packages come from apt (root only: otherwise we print the command and stop);
//! wasm-bindgen-cli goes into the project-local `.tools/` at exactly the version of the
//! `wasm-bindgen` crate in Cargo.lock, because the CLI and the crate must match.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::util::{self, probe, which, Ctx};

pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Directories searched after `PATH`, for when `/usr/sbin` or similar is not on it.
const SYSTEM_DIRS: &[&str] = &["/usr/local/bin", "/usr/bin", "/usr/sbin", "/bin"];

/// What a command needs beyond redis-server and redis-benchmark (always checked).
#[derive(Clone, Copy)]
pub struct Needs {
    /// The wasm32 target and wasm-bindgen-cli.
    pub wasm: bool,
    /// Chromium, node, npm and `tests/browser/node_modules`.
    pub browser: bool,
    /// nginx and openssl, for the end-to-end test behind a TLS reverse proxy.
    pub proxy: bool,
}

impl Needs {
    pub fn redis_only() -> Self {
        Needs {
            wasm: false,
            browser: false,
            proxy: false,
        }
    }
    pub fn toolchain() -> Self {
        Needs {
            wasm: true,
            browser: false,
            proxy: false,
        }
    }
    pub fn everything() -> Self {
        Needs {
            wasm: true,
            browser: true,
            proxy: true,
        }
    }
}

/// Absolute paths of the tools that setup found or installed.
pub struct Tools {
    pub redis_server: PathBuf,
    pub redis_benchmark: PathBuf,
    /// nginx, when the command needs it (`Needs::proxy`).
    pub nginx: Option<PathBuf>,
    wasm: Option<WasmTools>,
    browser: Option<BrowserTools>,
}

pub struct WasmTools {
    pub wasm_bindgen: PathBuf,
    pub test_runner: PathBuf,
}

pub struct BrowserTools {
    pub chromium: PathBuf,
    pub node: PathBuf,
}

impl Tools {
    pub fn wasm(&self) -> Result<&WasmTools> {
        self.wasm
            .as_ref()
            .context("internal: setup ran without the wasm tools")
    }
    pub fn browser(&self) -> Result<&BrowserTools> {
        self.browser
            .as_ref()
            .context("internal: setup ran without the browser tools")
    }
}

pub fn run(ctx: &Ctx, needs: Needs) -> Result<Tools> {
    install_missing_system_packages(needs)?;

    let redis_server = require("redis-server", |p| {
        // "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 ..."
        probe(Command::new(p).arg("--version"))?
            .split_whitespace()
            .find_map(|w| w.strip_prefix("v="))
            .map(str::to_string)
    })?;
    let redis_benchmark = require("redis-benchmark", |p| {
        // "redis-benchmark 7.0.15"
        last_word(probe(Command::new(p).arg("--version"))?)
    })?;

    let nginx = if needs.proxy {
        require("openssl", |p| probe(Command::new(p).arg("version")))?;
        // "nginx version: nginx/1.22.1" (on stderr, which probe does not read): the package's.
        Some(require("nginx", |_| nginx_package_version())?)
    } else {
        None
    };

    let wasm = if needs.wasm {
        ensure_wasm_target()?;
        Some(ensure_wasm_bindgen(ctx)?)
    } else {
        None
    };

    let browser = if needs.browser {
        let chromium = require_chromium()?;
        let node = require("node", |p| probe(Command::new(p).arg("--version")))?;
        require("npm", |p| probe(Command::new(p).arg("--version")))?;
        ensure_playwright(ctx)?;
        Some(BrowserTools { chromium, node })
    } else {
        None
    };

    Ok(Tools {
        redis_server,
        redis_benchmark,
        nginx,
        wasm,
        browser,
    })
}

// ---- system packages (apt) ----

/// Collects the Debian packages behind every missing system tool and installs them in one
/// `apt-get install`, so `apt-get update` runs at most once.
fn install_missing_system_packages(needs: Needs) -> Result<()> {
    let mut packages: Vec<&str> = Vec::new();
    if find("redis-server").is_none() || find("redis-benchmark").is_none() {
        packages.extend(["redis-server", "redis-tools"]);
    }
    // The server's allocator (jemalloc, built from C by `tikv-jemalloc-sys`) is built with make;
    // the C compiler is the one Rust already links with.
    if find("make").is_none() {
        packages.push("make");
    }
    if needs.proxy {
        if find("nginx").is_none() {
            packages.push("nginx");
        }
        if find("openssl").is_none() {
            packages.push("openssl");
        }
    }
    if needs.browser {
        if chromium_path().is_none() {
            packages.extend(["chromium", "chromium-driver"]);
        }
        if find("node").is_none() {
            packages.push("nodejs");
        }
        if find("npm").is_none() {
            packages.push("npm");
        }
    }
    if packages.is_empty() {
        return Ok(());
    }

    let list = packages.join(" ");
    if !util::is_root() {
        bail!(
            "missing Debian packages: {list}\n\
             install them with:\n    \
             sudo apt-get update && sudo apt-get install -y {list}\n\
             then run this command again"
        );
    }
    println!("installing {list} (apt-get)");
    util::run(
        Command::new("apt-get")
            .arg("update")
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .context("apt-get update failed")?;
    util::run(
        Command::new("apt-get")
            .args(["install", "-y"])
            .args(&packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .with_context(|| format!("could not install {list}"))?;
    Ok(())
}

/// The installed nginx package's version (dpkg), since `nginx -v` prints to stderr.
fn nginx_package_version() -> Option<String> {
    probe(Command::new("dpkg-query").args(["-W", "-f", "${Version}", "nginx"]))
        .or_else(|| Some("(not from a Debian package)".into()))
}

fn find(name: &str) -> Option<PathBuf> {
    which(name, SYSTEM_DIRS)
}

/// Finds `name` (after any apt install), prints "ok NAME VERSION", returns its path.
fn require(name: &str, version: impl Fn(&Path) -> Option<String>) -> Result<PathBuf> {
    let path = find(name).with_context(|| format!("`{name}` not found on PATH"))?;
    let version =
        version(&path).with_context(|| format!("`{} --version` failed", path.display()))?;
    println!("ok {name} {version}");
    Ok(path)
}

/// `$CHROMIUM` if set, else `chromium` on PATH (Debian: /usr/bin/chromium).
fn chromium_path() -> Option<PathBuf> {
    match std::env::var_os("CHROMIUM") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        _ => find("chromium"),
    }
}

fn require_chromium() -> Result<PathBuf> {
    let path = chromium_path().context("chromium not found (set CHROMIUM or install it)")?;
    // "Chromium 156.0.8078.108 built on Debian GNU/Linux 12 (bookworm)"
    let version = probe(Command::new(&path).arg("--version"))
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .with_context(|| format!("`{} --version` failed", path.display()))?;
    println!("ok chromium {version}");
    Ok(path)
}

fn last_word(s: String) -> Option<String> {
    s.split_whitespace().last().map(str::to_string)
}

// ---- Rust toolchain ----

fn ensure_wasm_target() -> Result<()> {
    let Some(rustup) = which("rustup", &[]) else {
        // No rustup (a distro toolchain): the target is there if its std is in the sysroot.
        let sysroot = probe(Command::new("rustc").args(["--print", "sysroot"]))
            .context("neither rustup nor rustc found on PATH")?;
        if Path::new(&sysroot)
            .join("lib/rustlib")
            .join(WASM_TARGET)
            .is_dir()
        {
            println!("ok target {WASM_TARGET}");
            return Ok(());
        }
        bail!("the Rust target {WASM_TARGET} is missing and rustup is not available to add it");
    };
    let installed = probe(Command::new(&rustup).args(["target", "list", "--installed"]))
        .context("`rustup target list --installed` failed")?;
    if installed.lines().any(|l| l.trim() == WASM_TARGET) {
        println!("ok target {WASM_TARGET}");
        return Ok(());
    }
    println!("installing target {WASM_TARGET} (rustup)");
    util::run(Command::new(&rustup).args(["target", "add", WASM_TARGET]))
}

/// wasm-bindgen-cli in `.tools/bin`, at the version of the `wasm-bindgen` crate in Cargo.lock.
fn ensure_wasm_bindgen(ctx: &Ctx) -> Result<WasmTools> {
    let version = locked_version(ctx, "wasm-bindgen")?;
    let bin = ctx.tools_dir().join("bin");
    let tools = WasmTools {
        wasm_bindgen: bin.join("wasm-bindgen"),
        test_runner: bin.join("wasm-bindgen-test-runner"),
    };
    let installed = || {
        // "wasm-bindgen 0.2.130"
        let v = probe(Command::new(&tools.wasm_bindgen).arg("--version")).and_then(last_word);
        v.as_deref() == Some(version.as_str()) && tools.test_runner.is_file()
    };
    if installed() {
        println!("ok wasm-bindgen-cli {version}");
        return Ok(tools);
    }

    println!("installing wasm-bindgen-cli {version} into .tools/ (takes a few minutes)");
    // Not `--locked`: one of the CLI's locked dependencies is missing from our registry mirror.
    util::run(
        ctx.cargo([
            "install",
            "wasm-bindgen-cli",
            "--version",
            &version,
            "--root",
        ])
        .arg(ctx.tools_dir()),
    )
    .with_context(|| format!("could not install wasm-bindgen-cli {version}"))?;
    if !installed() {
        bail!(
            "installed wasm-bindgen-cli {version}, but {} does not report that version",
            tools.wasm_bindgen.display()
        );
    }
    println!("ok wasm-bindgen-cli {version}");
    Ok(tools)
}

/// The version of package `name` recorded in Cargo.lock (created first if missing).
fn locked_version(ctx: &Ctx, name: &str) -> Result<String> {
    let lock_path = ctx.root.join("Cargo.lock");
    if !lock_path.is_file() {
        util::run(&mut ctx.cargo(["generate-lockfile"])).context("could not create Cargo.lock")?;
    }
    let lock = std::fs::read_to_string(&lock_path)
        .with_context(|| format!("could not read {}", lock_path.display()))?;

    let mut versions: Vec<&str> = lock
        .split("[[package]]")
        .filter(|block| toml_string(block, "name") == Some(name))
        .filter_map(|block| toml_string(block, "version"))
        .collect();
    versions.sort_unstable();
    versions.dedup();
    match versions.as_slice() {
        [one] => Ok(one.to_string()),
        [] => bail!("no `{name}` package in {}", lock_path.display()),
        many => bail!(
            "{} holds several versions of `{name}` ({}); the CLI must match exactly one",
            lock_path.display(),
            many.join(", ")
        ),
    }
}

/// The value of a top-level `key = "value"` line in a Cargo.lock package block.
fn toml_string<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

// ---- browser tests (npm) ----

/// `npm ci` in tests/browser (exactly what its package-lock.json records) when one of the
/// packages its package.json pins is missing or at another version: playwright-core for the
/// browser tests, @asyncapi/parser and @apidevtools/swagger-parser to validate the AsyncAPI and
/// OpenAPI documents, swagger-ui-dist to check the copy of it in web/docs/vendor.
fn ensure_playwright(ctx: &Ctx) -> Result<()> {
    let dir = ctx.root.join("tests/browser");
    let manifest = dir.join("package.json");
    let manifest_text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("could not read {}", manifest.display()))?;
    let pinned = dependencies(&manifest_text);
    if !pinned.iter().any(|(name, _)| *name == "playwright-core") {
        bail!("{} does not list playwright-core", manifest.display());
    }

    let installed = |name: &str| {
        let path = dir.join("node_modules").join(name).join("package.json");
        let text = std::fs::read_to_string(path).ok()?;
        json_string(&text, "version").map(str::to_string)
    };
    // Only an exact pin ("1.65.1") can be compared; a range is satisfied by any install.
    let is_exact = |v: &str| v.chars().all(|c| c.is_ascii_digit() || c == '.');
    let stale: Vec<&str> = pinned
        .iter()
        .filter(|(name, want)| match installed(name) {
            Some(v) => is_exact(want) && v != *want,
            None => true,
        })
        .map(|(name, _)| *name)
        .collect();
    if stale.is_empty() {
        for (name, v) in &pinned {
            println!("ok {name} {v}");
        }
        return Ok(());
    }

    println!("installing {} (npm ci in tests/browser)", stale.join(", "));
    util::run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            // playwright-core never downloads browsers, but make sure: we use Debian's chromium.
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"),
    )
    .context("npm ci in tests/browser failed")?;
    for (name, _) in &pinned {
        let v = installed(name).with_context(|| {
            format!("npm ci finished but tests/browser/node_modules/{name} is missing")
        })?;
        println!("ok {name} {v}");
    }
    Ok(())
}

/// The `"name": "version"` pairs of the `"dependencies"` object of a package.json.
/// Enough for our own package.json files; not a JSON parser.
fn dependencies(text: &str) -> Vec<(&str, &str)> {
    let Some(start) = text.find("\"dependencies\"") else {
        return Vec::new();
    };
    let rest = &text[start..];
    let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) else {
        return Vec::new();
    };
    rest[open + 1..close]
        .split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once(':')?;
            Some((k.trim().trim_matches('"'), v.trim().trim_matches('"')))
        })
        .collect()
}

/// The string value of the first `"key": "value"` pair in a JSON text.
/// Enough for package.json files; not a JSON parser.
fn json_string<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let quoted_key = format!("\"{key}\"");
    let mut rest = text;
    while let Some(i) = rest.find(&quoted_key) {
        rest = &rest[i + quoted_key.len()..];
        if let Some(after_colon) = rest.trim_start().strip_prefix(':') {
            let value = after_colon.trim_start().strip_prefix('"')?;
            return value.split_once('"').map(|(v, _)| v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_package_version_in_a_lock_block() {
        let block = "\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\nsource = \"registry\"\n";
        assert_eq!(toml_string(block, "name"), Some("wasm-bindgen"));
        assert_eq!(toml_string(block, "version"), Some("0.2.130"));
        assert_eq!(toml_string(block, "checksum"), None);
    }

    #[test]
    fn reads_string_values_from_package_json() {
        let text =
            r#"{"name": "x", "dependencies": {"playwright-core" : "1.65.1"}, "version":"2.0.0"}"#;
        assert_eq!(json_string(text, "playwright-core"), Some("1.65.1"));
        assert_eq!(json_string(text, "version"), Some("2.0.0"));
        assert_eq!(json_string(text, "missing"), None);
    }

    #[test]
    fn lists_the_dependencies_of_a_package_json() {
        let text = r#"{"private": true, "dependencies": {
            "@asyncapi/parser": "3.6.6", "playwright-core" : "1.65.1"
        }, "devDependencies": {"x": "1"}}"#;
        assert_eq!(
            dependencies(text),
            vec![("@asyncapi/parser", "3.6.6"), ("playwright-core", "1.65.1")]
        );
        assert!(dependencies("{}").is_empty());
    }
}
