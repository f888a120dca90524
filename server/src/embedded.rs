//! A private `redis-server` child on a free loopback port: the default when no Redis URL is
//! configured, and what the test harness starts (the article's Testcontainers, without Docker).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// Where to find `redis-server`: `SCORECAST_REDIS_SERVER`, else the PATH, else Debian's path.
pub fn redis_server_path() -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::env::var("SCORECAST_REDIS_SERVER") {
        return Ok(PathBuf::from(p));
    }
    let candidates = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("redis-server"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([PathBuf::from("/usr/bin/redis-server")])
        .find(|p| p.is_file())
        .context("redis-server is not installed: run `cargo xtask run` (it installs it), or `apt-get install -y redis-server`, or pass --redis-url")
}

/// A free loopback port (the OS picks it; a race with another process is retried by callers).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A running `redis-server`, stopped when dropped.
#[derive(Debug)]
pub struct RedisProcess {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    aof: bool,
}

impl RedisProcess {
    /// Starts `redis-server` bound to 127.0.0.1 with its files in `dir` (AOF on when `aof`).
    pub fn start(dir: &Path, aof: bool) -> anyhow::Result<RedisProcess> {
        Self::start_any_port(dir, aof, false)
    }

    /// [`RedisProcess::start`] for the server's own data: the child also gets SIGTERM if this
    /// process dies without stopping it (SIGKILL, the OOM killer), so no orphan keeps writing
    /// `dir` beside the next start's redis-server. Call it from a thread that lives as long as
    /// the process (the signal follows the thread that started the child).
    pub fn start_owned(dir: &Path, aof: bool) -> anyhow::Result<RedisProcess> {
        Self::start_any_port(dir, aof, true)
    }

    fn start_any_port(dir: &Path, aof: bool, owned: bool) -> anyhow::Result<RedisProcess> {
        let mut last = None;
        for _ in 0..5 {
            let port = free_port()?;
            match Self::spawn_on(dir, port, aof, owned) {
                Ok(p) => return Ok(p),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("could not start redis-server")))
    }

    /// Starts on a given port (used to bring a killed server back on the same address).
    pub fn start_on(dir: &Path, port: u16, aof: bool) -> anyhow::Result<RedisProcess> {
        Self::spawn_on(dir, port, aof, false)
    }

    fn spawn_on(dir: &Path, port: u16, aof: bool, owned: bool) -> anyhow::Result<RedisProcess> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let bin = redis_server_path()?;
        let mut cmd = Command::new(&bin);
        if owned {
            use std::os::unix::process::CommandExt;
            // SAFETY: between fork and exec only prctl(2), async-signal-safe, runs.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--daemonize",
                "no",
            ])
            .args(["--appendonly", if aof { "yes" } else { "no" }])
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut p = RedisProcess {
            child,
            port,
            dir: dir.to_owned(),
            aof,
        };
        p.wait_ready(Duration::from_secs(10))?;
        Ok(p)
    }

    fn wait_ready(&mut self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "redis-server exited at start ({status}); is port {} taken?",
                    self.port
                );
            }
            if let Ok(client) = redis::Client::open(self.url()) {
                if let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) {
                    if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "redis-server on port {} did not answer within {within:?}",
                    self.port
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server at once (SIGKILL): what a crash looks like to clients.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port and data directory.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::start_on(&self.dir.clone(), self.port, self.aof) {
                Ok(p) => {
                    *self = p;
                    return Ok(());
                }
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Asks the server to save and exit (its AOF is complete), then waits.
    pub fn shutdown(&mut self) {
        if let Ok(client) = redis::Client::open(self.url()) {
            if let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(500)) {
                let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut c);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
