//! A local Redis Cluster for the end-to-end tests: N masters (and R replicas each) as
//! `redis-server --cluster-enabled yes` children on free loopback ports, joined with
//! `redis-cli --cluster create … --cluster-yes`, stopped when dropped. Scorecast instances reach
//! it through a `redis+cluster://` URL ([`Cluster::url`]).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::Value;
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::embedded::{free_port, redis_server_path};
use scorecast_server::startup::Application;
use scorecast_server::state::AppState;

use crate::{temp_dir, test_settings, Api};

/// How long the cluster may take to form (or to fail over) under a loaded machine.
const FORM_WITHIN: Duration = Duration::from_secs(60);

/// One cluster node (a `redis-server` child).
pub struct Node {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    /// Starts a node and waits until it answers as itself. A free port can be taken between
    /// [`free_port`] and the node's bind (by another test, or as some connection's local port):
    /// the node then exits, or another process answers there, and it is started again on
    /// fresh ports.
    async fn start(dir: PathBuf) -> Node {
        for _ in 0..5 {
            let mut node = Node::spawn(dir.clone()).expect("start redis-server");
            if node.answers_as_itself().await {
                return node;
            }
            node.kill();
        }
        panic!(
            "no redis-server cluster node would start in {}",
            dir.display()
        );
    }

    /// Whether the node answers `PING` on its port and is the process started (within
    /// [`FORM_WITHIN`]); false as soon as it exits.
    async fn answers_as_itself(&mut self) -> bool {
        let Some(pid) = self.child.as_ref().map(Child::id) else {
            return false;
        };
        let deadline = Instant::now() + FORM_WITHIN;
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                return false;
            }
            let info = query::<String>(self, redis::cmd("INFO").arg("server")).await;
            if let Ok(info) = info {
                return info
                    .lines()
                    .any(|l| l.strip_prefix("process_id:") == Some(&pid.to_string()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    fn spawn(dir: PathBuf) -> anyhow::Result<Node> {
        let port = free_port()?;
        // The cluster bus port defaults to port + 10000, which may be taken or past 65535.
        let bus = free_port()?;
        std::fs::create_dir_all(&dir)?;
        let child = Command::new(redis_server_path()?)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-port", &bus.to_string()])
            .args(["--cluster-node-timeout", "1000"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Node {
            port,
            dir,
            child: Some(child),
        })
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(format!("redis://{}", self.addr())).unwrap()
    }

    /// A plain connection to this node alone (no redirections followed).
    pub async fn conn(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        self.client().get_multiplexed_async_connection().await
    }

    /// Kills the node (SIGKILL: no goodbye to the cluster).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn alive(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running cluster.
pub struct Cluster {
    pub nodes: Vec<Node>,
}

async fn query<T: redis::FromRedisValue>(node: &Node, cmd: &redis::Cmd) -> redis::RedisResult<T> {
    let mut c = node.conn().await?;
    cmd.query_async(&mut c).await
}

impl Cluster {
    /// Starts `masters` masters with `replicas` replicas each and waits until every node sees
    /// the cluster as `ok` (and every replica has synced).
    pub async fn start(masters: usize, replicas: usize) -> Cluster {
        let base = temp_dir("cluster");
        let mut nodes = Vec::new();
        for i in 0..masters * (1 + replicas) {
            nodes.push(Node::start(base.join(format!("node{i}"))).await);
        }
        let cluster = Cluster { nodes };
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(cluster.nodes.iter().map(Node::addr))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli (package redis-tools) runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_ok().await;
        // Nodes start as masters: wait until every replica has switched role and synced, or
        // a failover could promote a replica that never had the data.
        let want = masters * replicas;
        wait_for(&format!("{want} replicas synced"), || async {
            let mut synced = 0;
            for n in &cluster.nodes {
                let repl: String = query(n, redis::cmd("INFO").arg("replication"))
                    .await
                    .unwrap_or_default();
                if repl.contains("role:slave") && repl.contains("master_link_status:up") {
                    synced += 1;
                }
            }
            synced == want
        })
        .await;
        cluster
    }

    /// Waits until every live node reports `cluster_state:ok` and knows a master for every slot,
    /// and every live replica has finished its sync.
    pub async fn wait_ok(&self) {
        for n in self.nodes.iter().filter(|n| n.alive()) {
            wait_for(&format!("node {} sees the cluster ok", n.port), || async {
                let info: String = match query(n, redis::cmd("CLUSTER").arg("INFO")).await {
                    Ok(i) => i,
                    Err(_) => return false,
                };
                let repl: String = match query(n, redis::cmd("INFO").arg("replication")).await {
                    Ok(i) => i,
                    Err(_) => return false,
                };
                let synced = !repl.contains("role:slave") || repl.contains("master_link_status:up");
                info.contains("cluster_state:ok")
                    && info.contains("cluster_slots_ok:16384")
                    && synced
            })
            .await;
        }
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(Node::addr).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The same with the node on `port` as the first seed (where an instance's pub/sub
    /// connection goes first).
    pub fn url_first(&self, port: u16) -> String {
        let mut hosts: Vec<String> = self.nodes.iter().map(Node::addr).collect();
        hosts.sort_by_key(|h| !h.ends_with(&format!(":{port}")));
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The slot of `key`.
    pub async fn slot(&self, key: &str) -> u16 {
        let n = self.nodes.iter().find(|n| n.alive()).expect("a live node");
        query(n, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .await
            .expect("CLUSTER KEYSLOT")
    }

    /// The port of the master that owns `slot`, as the live nodes see it.
    pub async fn owner(&self, slot: u16) -> u16 {
        let n = self.nodes.iter().find(|n| n.alive()).expect("a live node");
        let ranges: Vec<Value> = query(n, redis::cmd("CLUSTER").arg("SLOTS"))
            .await
            .expect("CLUSTER SLOTS");
        for r in ranges {
            let Value::Array(r) = r else { continue };
            let (Some(Value::Int(lo)), Some(Value::Int(hi)), Some(Value::Array(master))) =
                (r.first(), r.get(1), r.get(2))
            else {
                continue;
            };
            if (*lo..=*hi).contains(&i64::from(slot)) {
                if let Some(Value::Int(port)) = master.get(1) {
                    return *port as u16;
                }
            }
        }
        panic!("no master owns slot {slot}");
    }

    /// The master owning `key`'s slot.
    pub async fn owner_of(&self, key: &str) -> u16 {
        self.owner(self.slot(key).await).await
    }

    /// Ids `<prefix>-<n>`, one per master, whose `key(id)` slots live on different masters.
    pub async fn ids_on_each_master(
        &self,
        prefix: &str,
        key: impl Fn(&str) -> String,
    ) -> Vec<(String, u16)> {
        let mut out: Vec<(String, u16)> = Vec::new();
        let masters = self.masters().await;
        for n in 0..1000 {
            let id = format!("{prefix}-{n}");
            let port = self.owner_of(&key(&id)).await;
            if !out.iter().any(|(_, p)| *p == port) {
                out.push((id, port));
            }
            if out.len() == masters.len() {
                return out;
            }
        }
        panic!("no ids spread over every master");
    }

    /// The port of a replica of the master on `port` (from its `INFO replication`).
    pub async fn replica_of(&self, port: u16) -> u16 {
        let n = self.nodes.iter().find(|n| n.port == port).expect("node");
        let info: String = query(n, redis::cmd("INFO").arg("replication"))
            .await
            .expect("INFO replication");
        info.lines()
            .find_map(|l| l.strip_prefix("slave0:"))
            .and_then(|l| l.split(',').find_map(|kv| kv.strip_prefix("port=")))
            .and_then(|p| p.parse().ok())
            .expect("the master has a replica")
    }

    /// Waits until the replica of the master on `port` holds everything the master had written
    /// when this was called (replication offsets, bounded by [`crate::EVENTUALLY`]).
    pub async fn wait_replica_caught_up(&self, port: u16) {
        let replica = self.replica_of(port).await;
        let offset = |port: u16, field: &'static str| async move {
            let n = self.nodes.iter().find(|n| n.port == port).expect("node");
            let info: String = query(n, redis::cmd("INFO").arg("replication"))
                .await
                .expect("INFO replication");
            info.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let written = offset(port, "master_repl_offset:").await;
        let deadline = std::time::Instant::now() + crate::EVENTUALLY;
        while offset(replica, "slave_repl_offset:").await < written {
            assert!(
                std::time::Instant::now() < deadline,
                "the replica of {port} did not catch up"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Ports of the masters that own slots.
    pub async fn masters(&self) -> Vec<u16> {
        let mut ports = Vec::new();
        for lo in [0u16, 6000, 12000] {
            // Every master of a 3-master cluster owns one of these; more masters are not used.
            let p = self.owner(lo).await;
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        ports
    }

    pub fn node(&mut self, port: u16) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .expect("a node of the cluster")
    }

    /// Total of `INFO commandstats` `cmd=<name>` calls on the node (e.g. `evalsha`).
    pub async fn calls(&self, port: u16, name: &str) -> u64 {
        let n = self.nodes.iter().find(|n| n.port == port).expect("node");
        let info: String = query(n, redis::cmd("INFO").arg("commandstats"))
            .await
            .unwrap_or_default();
        let prefix = format!("cmdstat_{name}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

/// `(calls, usec_per_call)` of command `name` from `INFO commandstats` of the Redis on `port`.
pub async fn command_stats(port: u16, name: &str) -> (u64, f64) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
        return (0, 0.0);
    };
    let Ok(mut c) = client.get_multiplexed_async_connection().await else {
        return (0, 0.0);
    };
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap_or_default();
    let prefix = format!("cmdstat_{name}:");
    let Some(line) = info.lines().find_map(|l| l.strip_prefix(&prefix)) else {
        return (0, 0.0);
    };
    let field = |k: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(k))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (field("calls=") as u64, field("usec_per_call="))
}

/// Polls `check` (every 50 ms: there is no event to await for a cluster's own state) until it
/// holds; panics after [`FORM_WITHIN`].
pub async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + FORM_WITHIN;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A Scorecast instance on a cluster (its HTTP and WebSocket front door through `Deref`).
pub struct ClusterApp {
    pub api: Api,
    pub state: AppState,
    pub handle: actix_web::dev::ServerHandle,
}

impl std::ops::Deref for ClusterApp {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

impl ClusterApp {
    /// Starts an instance on `cluster` (Redis clock), after `tweak` adjusts the settings.
    pub async fn start(cluster: &Cluster, tweak: impl FnOnce(&mut Settings)) -> ClusterApp {
        Self::start_on(&cluster.url(), tweak).await
    }

    /// Starts an instance on the cluster named by `url` (see [`Cluster::url_first`]).
    pub async fn start_on(url: &str, tweak: impl FnOnce(&mut Settings)) -> ClusterApp {
        let mut settings = test_settings(url);
        tweak(&mut settings);
        let app = Application::build_with_clock(settings, Clock::Redis)
            .await
            .expect("build app on the cluster");
        let port = app.port();
        let state = app.state().clone();
        let handle = app.handle();
        tokio::spawn(app.run_until_stopped());
        ClusterApp {
            api: Api::new(port, Duration::from_secs(15)),
            state,
            handle,
        }
    }
}
