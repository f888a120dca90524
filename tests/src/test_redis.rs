//! A test's private redis-server behind a loopback TCP relay the harness owns.
//!
//! The relay's listening port is bound once (port 0, the OS picks it) and held until the test
//! ends, so the address the server under test knows can never be taken by another process —
//! not even while redis-server is down. A restart starts a new redis-server on a fresh port,
//! with the same data directory, and points the relay at it: nothing checks a port and then
//! hopes it is still free. Each start also proves that the server answering is our child (its
//! `process_id`), not another test's redis-server that won a race for the port.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scorecast_server::embedded::RedisProcess;

/// A redis-server child, reached through a relay whose address never changes.
pub struct TestRedis {
    process: RedisProcess,
    dir: PathBuf,
    aof: bool,
    relay: Relay,
}

impl TestRedis {
    /// Starts redis-server in `dir` and the relay in front of it.
    pub fn start(dir: &Path, aof: bool) -> anyhow::Result<TestRedis> {
        let process = start_ours(dir, aof)?;
        let relay = Relay::start(process.port)?;
        Ok(TestRedis {
            process,
            dir: dir.to_owned(),
            aof,
            relay,
        })
    }

    /// The URL the server under test uses: the relay's, stable across restarts.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.relay.port)
    }

    /// The relay's port (what clients connect to).
    pub fn port(&self) -> u16 {
        self.relay.port
    }

    /// redis-server's own URL, bypassing the relay.
    pub fn direct_url(&self) -> String {
        self.process.url()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Stops redis-server (SIGSTOP) until the returned guard is dropped (SIGCONT): a Redis that
    /// takes commands and answers none, so a failed assertion never leaves it stopped.
    pub fn pause(&self) -> Paused {
        signal(self.pid(), "-STOP");
        Paused(self.pid())
    }

    /// While `refuse` holds, new connections are closed at once (as if redis-server were
    /// unreachable) and open ones go on: an outage of whatever reconnects, on demand.
    pub fn refuse_new_connections(&self, refuse: bool) {
        self.relay
            .set_backend((!refuse).then_some(self.process.port));
    }

    /// Kills redis-server at once (SIGKILL) and cuts every relayed connection: a crash, as
    /// clients see it. New connections are accepted and closed until `restart`.
    pub fn kill(&mut self) {
        self.relay.set_backend(None);
        self.process.kill();
        self.relay.cut_all();
    }

    /// Starts redis-server again with the same data directory (on a fresh port of its own)
    /// and points the relay at it.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.process = start_ours(&self.dir, self.aof)?;
        self.relay.set_backend(Some(self.process.port));
        Ok(())
    }
}

/// Starts a redis-server and checks that the one answering on its port is this child.
pub fn start_ours(dir: &Path, aof: bool) -> anyhow::Result<RedisProcess> {
    let mut last = None;
    for _ in 0..5 {
        match RedisProcess::start(dir, aof) {
            Ok(p) => match answering_pid(&p.url()) {
                Ok(pid) if pid == p.pid() => return Ok(p),
                Ok(pid) => {
                    last = Some(anyhow::anyhow!(
                        "port {} is answered by redis-server pid {pid}, not ours ({})",
                        p.port,
                        p.pid()
                    ))
                }
                Err(e) => last = Some(e),
            },
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("could not start redis-server")))
}

fn answering_pid(url: &str) -> anyhow::Result<u32> {
    let mut c = redis::Client::open(url)?.get_connection_with_timeout(Duration::from_secs(2))?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut c)?;
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no process_id in INFO server"))
}

/// A loopback TCP relay: one accept thread, two copy threads per connection.
struct Relay {
    port: u16,
    /// The backend port; 0 while redis-server is down.
    backend: Arc<AtomicU16>,
    /// Both ends of every open relayed connection, to cut them on a kill.
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start(backend_port: u16) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let backend = Arc::new(AtomicU16::new(backend_port));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (b, o, s) = (backend.clone(), open.clone(), stop.clone());
        std::thread::Builder::new()
            .name(format!("redis-relay-{port}"))
            .spawn(move || {
                for client in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let target = b.load(Ordering::SeqCst);
                    let server = (target != 0)
                        .then(|| TcpStream::connect(("127.0.0.1", target)).ok())
                        .flatten();
                    let Some(server) = server else {
                        // redis-server is down: what a client sees is a refused connection.
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                        // unwrap: the lock is never held across a panic-prone call.
                        let mut open = o.lock().unwrap();
                        open.retain(|s| s.peer_addr().is_ok());
                        open.push(c2);
                        open.push(s2);
                    }
                    pipe(&client, &server);
                    pipe(&server, &client);
                }
            })?;
        Ok(Relay {
            port,
            backend,
            open,
            stop,
        })
    }

    fn set_backend(&self, port: Option<u16>) {
        self.backend.store(port.unwrap_or(0), Ordering::SeqCst);
    }

    fn cut_all(&self) {
        // unwrap: the lock is never held across a panic-prone call.
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` → `to` on a thread until either side ends, then ends both.
fn pipe(from: &TcpStream, to: &TcpStream) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut_all();
        // Wake the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A redis-server in cluster mode that owns all 16384 slots: a one-node cluster. A plain
/// client can use it, and Redis itself then refuses any command or script whose keys are not
/// all in one hash slot (CROSSSLOT) — the check a real cluster makes.
pub struct ClusterNode {
    child: std::process::Child,
    pub port: u16,
}

impl ClusterNode {
    pub fn start(dir: &Path) -> anyhow::Result<ClusterNode> {
        std::fs::create_dir_all(dir)?;
        let bin = scorecast_server::embedded::redis_server_path()?;
        let mut last = None;
        for _ in 0..5 {
            let port = scorecast_server::embedded::free_port()?;
            let child = std::process::Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-config-file"])
                .arg(dir.join(format!("nodes-{port}.conf")))
                .arg("--dir")
                .arg(dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()?;
            let mut node = ClusterNode { child, port };
            match node.wait_ours() {
                Ok(()) => {
                    node.own_every_slot()?;
                    return Ok(node);
                }
                Err(e) => last = Some(e), // dropped: killed
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("could not start a cluster node")))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn wait_ours(&mut self) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                anyhow::bail!("redis-server exited at start ({status})");
            }
            if let Ok(pid) = answering_pid(&self.url()) {
                anyhow::ensure!(pid == self.child.id(), "port {} is not ours", self.port);
                return Ok(());
            }
            anyhow::ensure!(std::time::Instant::now() < deadline, "no answer");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn own_every_slot(&self) -> anyhow::Result<()> {
        let mut c = redis::Client::open(self.url())?.get_connection()?;
        let _: () = redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(0)
            .arg(16383)
            .query(&mut c)?;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c)?;
            if info.contains("cluster_state:ok") {
                return Ok(());
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "cluster state never ok: {info}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stopped redis-server, resumed when dropped ([`TestRedis::pause`]).
pub struct Paused(u32);

impl Drop for Paused {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
}

/// Sends `sig` (`-STOP`, `-CONT`) to a process.
fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}
