//! Paths and process helpers shared by every command.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Where things are: the repository root, the cargo that started us, the target directory.
pub struct Ctx {
    pub root: PathBuf,
    /// The `cargo` that runs `cargo xtask`, so nested builds use the same toolchain.
    pub cargo: PathBuf,
    pub target_dir: PathBuf,
}

impl Ctx {
    pub fn new() -> Result<Self> {
        let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest_dir
            .parent()
            .with_context(|| format!("{} has no parent directory", manifest_dir.display()))?
            .to_path_buf();
        let cargo = std::env::var_os("CARGO")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("cargo"));
        let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => root.join(dir), // `join` keeps an absolute path as it is
            None => root.join("target"),
        };
        Ok(Ctx {
            root,
            cargo,
            target_dir,
        })
    }

    /// `cargo <args>`, run from the repository root.
    pub fn cargo<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(&self.cargo);
        cmd.args(args).current_dir(&self.root);
        cmd
    }

    /// `.tools/`: project-local binaries (wasm-bindgen-cli), git-ignored.
    pub fn tools_dir(&self) -> PathBuf {
        self.root.join(".tools")
    }
}

/// `cmd` as a shell-like string, for messages.
pub fn display(cmd: &Command) -> String {
    let mut out = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    for arg in cmd.get_args() {
        let arg = arg.to_string_lossy();
        out.push(' ');
        if arg.is_empty() || arg.contains(char::is_whitespace) {
            out.push_str(&format!("'{arg}'"));
        } else {
            out.push_str(&arg);
        }
    }
    out
}

/// Runs `cmd` with inherited stdio; fails unless it exits successfully.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = display(cmd);
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs `cmd` and returns its trimmed stdout; `None` if it cannot start or fails.
/// For probes ("is it installed, which version?"), where failure just means "missing".
pub fn probe(cmd: &mut Command) -> Option<String> {
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The first executable called `name` on `PATH`, or in `extra_dirs`.
pub fn which(name: &str, extra_dirs: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra_dirs.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Whether we run as root (so we may call apt-get ourselves).
pub fn is_root() -> bool {
    // /proc/self/status has "Uid:\t<real>\t<effective>\t..."; no libc needed.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(line) = status.lines().find(|l| l.starts_with("Uid:")) {
            return line.split_whitespace().nth(2) == Some("0");
        }
    }
    probe(Command::new("id").arg("-u")).as_deref() == Some("0")
}
