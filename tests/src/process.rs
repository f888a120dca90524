//! The real `scorecast` binary as a child process: for what only a process shows — signals,
//! its log output, the embedded redis-server it starts and stops.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::EVENTUALLY;

/// The `scorecast` program: `server/src/main.rs`, built by cargo as this package's
/// `scorecast-e2e` bin before the end-to-end tests run. Only an integration test knows its
/// path, so the e2e crate passes `env!("CARGO_BIN_EXE_scorecast-e2e")` in.
pub fn scorecast_bin(path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    assert!(p.is_file(), "no scorecast binary at {}", p.display());
    p
}

/// A running `scorecast` process; killed when dropped.
pub struct ServerProcess {
    child: Child,
    pub port: u16,
    /// Everything it printed so far (stdout and stderr).
    output: Arc<Mutex<String>>,
    /// The threads that read its stdout and stderr into `output`, until the pipes close.
    readers: Vec<JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `scorecast ARGS` in `cwd` with exactly the environment `env` (plus PATH), and
    /// waits for the line that gives its port.
    /// `start` with the arguments the tests have in common: a port the server picks
    /// (`--listen 127.0.0.1:0`), `--redis-url redis_url` and the repository's `web/`; then
    /// `extra`.
    pub fn start_on(
        bin: &Path,
        cwd: &Path,
        redis_url: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> ServerProcess {
        let web = crate::root().join("web");
        let mut args = vec!["--listen", "127.0.0.1:0", "--redis-url", redis_url];
        args.extend(["--web-dir", web.to_str().unwrap()]);
        args.extend_from_slice(extra);
        ServerProcess::start(bin, cwd, &args, env)
    }

    pub fn start(bin: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Ok(r) = std::env::var("SCORECAST_REDIS_SERVER") {
            cmd.env("SCORECAST_REDIS_SERVER", r);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawning scorecast");
        let output = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stdout.take().unwrap(), output.clone()),
            collect(child.stderr.take().unwrap(), output.clone()),
        ];
        let mut p = ServerProcess {
            child,
            port: 0,
            output,
            readers,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        p.port = loop {
            if let Some(port) = p
                .output()
                .lines()
                .find_map(|l| l.split("listening on http://127.0.0.1:").nth(1))
                // The port's digits: the text line ends there, the JSON log event goes on.
                .and_then(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().ok()
                })
            {
                break port;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("scorecast exited at start ({status}):\n{}", p.output());
            }
            assert!(
                Instant::now() < deadline,
                "scorecast never said its port:\n{}",
                p.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        p
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn output(&self) -> String {
        // unwrap: the lock is never held across a panic-prone call.
        self.output.lock().unwrap().clone()
    }

    /// Sends SIGTERM, what a service manager sends to stop it.
    pub fn sigterm(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("running kill")
            .success();
        assert!(ok, "kill -TERM {} failed", self.pid());
    }

    /// SIGKILL: the process dies at once, whatever it was doing; waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit (bounded by three times [`EVENTUALLY`]: a graceful stop
    /// may wait out in-flight work and its HTTP connections first), then for its pipes to be
    /// read to the end, so that [`ServerProcess::output`] holds all it printed.
    pub fn wait_exit(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + 3 * EVENTUALLY;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                // The pipes close with the process: nothing else holds them (the embedded
                // redis-server it starts writes to /dev/null).
                for reader in self.readers.drain(..) {
                    let _ = reader.join();
                }
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

fn collect(from: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            // unwrap: the lock is never held across a panic-prone call.
            let mut out = into.lock().unwrap();
            out.push_str(&line);
            out.push('\n');
        }
    })
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits (up to [`EVENTUALLY`]) until one of `procs` has printed a line that `wanted` accepts,
/// and returns that line; `None` if none did. A line a process logs just before it answers
/// reaches the pipe's reader thread a moment later, so a test reads it this way rather than
/// from [`ServerProcess::output`] at once.
pub async fn logged(procs: &[&ServerProcess], wanted: impl Fn(&str) -> bool) -> Option<String> {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        let found = procs
            .iter()
            .find_map(|p| p.output().lines().find(|l| wanted(l)).map(str::to_owned));
        if found.is_some() || Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates board `board` (no submit limit) on the server listening on loopback `port`, with
/// the admin token; panics unless it answers 200.
pub async fn put_board(port: u16, board: &str) {
    let r = reqwest::Client::new()
        .put(format!("http://127.0.0.1:{port}/admin/boards/{board}"))
        .bearer_auth(crate::ADMIN_TOKEN)
        .json(&serde_json::json!({"submit_limit": null}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
