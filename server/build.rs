//! Build information for the `scorecast_build_info` metric: the git commit being built, from
//! `SCORECAST_GIT_COMMIT` if set (a build outside a checkout, e.g. from a source archive), else
//! `git rev-parse`, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SCORECAST_GIT_COMMIT");
    let commit = std::env::var("SCORECAST_GIT_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    // Rebuilt when the checkout moves to another commit: HEAD, and the branch it points to.
    for path in [
        Some("HEAD".to_owned()),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rustc-env=SCORECAST_GIT_COMMIT={commit}");
}
