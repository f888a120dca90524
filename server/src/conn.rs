//! The one connection type of the server: a single Redis (`redis://…`, a reconnecting
//! [`ConnectionManager`]) or a Redis Cluster (`redis+cluster://host1:port1,host2:port2,…`, the
//! `redis` crate's async cluster client, which routes each command and script by the hash slot
//! of its first key and follows MOVED/ASK redirections). The URL is parsed once, into a
//! [`Target`], and that one value decides single node or cluster for everything built on it:
//! the shared [`RedisConn`] (store, queues, limiter, broker), the [`Dialer`] of dedicated
//! connections (blocking queue waits) and the broker's pub/sub connections.

use std::time::Duration;

use anyhow::Context;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// The URL scheme that names a cluster by its seed nodes.
pub const CLUSTER_SCHEME: &str = "redis+cluster://";

/// How long a Redis reply may take before the call fails with `unavailable`.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// What the configured URL names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One Redis: the URL as given.
    Single(String),
    /// A Redis Cluster: one `redis://` URL per seed node (any reachable one is enough; the rest
    /// of the cluster is discovered from it).
    Cluster(Vec<String>),
}

impl Target {
    /// `redis+cluster://[user:password@]host1:port1,host2:port2,…` is a cluster (credentials
    /// apply to every node); anything else is one Redis.
    pub fn parse(url: &str) -> anyhow::Result<Target> {
        let Some(rest) = url.strip_prefix(CLUSTER_SCHEME) else {
            return Ok(Target::Single(url.to_owned()));
        };
        let (auth, hosts) = match rest.rfind('@') {
            Some(at) => (&rest[..=at], &rest[at + 1..]),
            None => ("", rest),
        };
        let hosts = hosts.trim_end_matches('/');
        let seeds: Vec<String> = hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{auth}{h}"))
            .collect();
        if seeds.is_empty() {
            anyhow::bail!("a {CLUSTER_SCHEME} URL needs at least one host:port");
        }
        Ok(Target::Cluster(seeds))
    }

    /// The URL as configured, without its password (for messages): a cluster is named by its
    /// `redis+cluster://` URL, not by the seeds' `redis://` ones.
    pub fn shown(&self) -> String {
        match self {
            Target::Single(url) => redacted(url),
            Target::Cluster(seeds) => {
                let hosts: Vec<&str> = seeds
                    .iter()
                    .map(|s| {
                        let s = s.strip_prefix("redis://").unwrap_or(s);
                        s.rfind('@').map_or(s, |at| &s[at + 1..])
                    })
                    .collect();
                let auth = if seeds[0].contains('@') { "***@" } else { "" };
                format!("{CLUSTER_SCHEME}{auth}{}", hosts.join(","))
            }
        }
    }

    /// The node URLs: the one URL, or every seed.
    pub fn urls(&self) -> &[String] {
        match self {
            Target::Single(u) => std::slice::from_ref(u),
            Target::Cluster(seeds) => seeds,
        }
    }
}

/// The shared multiplexed connection (never for blocking commands). Cheap to clone.
#[derive(Clone)]
pub enum RedisConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConn::Single(c) => c.req_packed_command(cmd),
            RedisConn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            RedisConn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConn::Single(c) => c.get_db(),
            RedisConn::Cluster(c) => c.get_db(),
        }
    }
}

/// A cluster client on `seeds`. `response_timeout`: per reply (`None` for blocking commands);
/// the overall bound of a call, retries across a failover included, is three times that.
fn cluster_client(
    seeds: &[String],
    response_timeout: Option<Duration>,
) -> redis::RedisResult<ClusterClient> {
    let mut b = ClusterClientBuilder::new(seeds.iter().map(String::as_str))
        .connection_timeout(CONNECT_TIMEOUT)
        .retries(8)
        .max_retry_wait(500);
    if let Some(t) = response_timeout {
        b = b.response_timeout(t).overall_response_timeout(Some(t * 3));
    }
    b.build()
}

/// `url` without its password, for messages (secrets never appear in logs): the user
/// information of `redis://user:pass@host`, the `pass` parameter of `unix:///path?pass=…`.
pub fn redacted(url: &str) -> String {
    let (url, query) = match url.split_once('?') {
        Some((url, query)) => (url, Some(query)),
        None => (url, None),
    };
    let mut shown = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("pass") => format!("{k}=***"),
                _ => p.to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&params.join("&"));
    }
    shown
}

/// Connects the shared connection to `target`.
pub async fn connect(target: &Target) -> anyhow::Result<RedisConn> {
    match target {
        Target::Single(url) => {
            let shown = target.shown();
            let client = redis::Client::open(url.as_str())
                .with_context(|| format!("bad redis url {shown}"))?;
            let cfg = ConnectionManagerConfig::new()
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_number_of_retries(2)
                .set_max_delay(Duration::from_millis(500));
            let c = ConnectionManager::new_with_config(client, cfg)
                .await
                .with_context(|| format!("cannot reach redis at {shown}"))?;
            Ok(RedisConn::Single(c))
        }
        Target::Cluster(seeds) => {
            let shown = target.shown();
            let client = cluster_client(seeds, Some(RESPONSE_TIMEOUT))
                .with_context(|| format!("bad redis cluster url {shown}"))?;
            let c = client
                .get_async_connection()
                .await
                .with_context(|| format!("cannot reach the redis cluster at {shown}"))?;
            Ok(RedisConn::Cluster(c))
        }
    }
}

impl RedisConn {
    /// `WAIT replicas timeout_ms` on the node that owns `key` (on a cluster, routed by the key's
    /// slot to its master): blocks until that many replicas have every write this connection
    /// made there, or the timeout passed. Returns how many replicas acknowledged.
    pub async fn wait_replicas(
        &mut self,
        key: &str,
        replicas: u32,
        timeout_ms: u64,
    ) -> redis::RedisResult<u32> {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(timeout_ms);
        match self {
            RedisConn::Single(c) => cmd.query_async(c).await,
            RedisConn::Cluster(c) => {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let route = Route::with_key(key, SlotAddr::Master);
                let v = c
                    .route_command(
                        cmd,
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                    )
                    .await?;
                Ok(redis::from_redis_value(v)?)
            }
        }
    }
}

/// Opens dedicated connections (each one parked by its blocking command) on the target.
#[derive(Clone)]
pub enum Dialer {
    Single(redis::Client),
    Cluster(Box<ClusterClient>),
}

impl From<redis::Client> for Dialer {
    fn from(c: redis::Client) -> Dialer {
        Dialer::Single(c)
    }
}

/// A dedicated connection from a [`Dialer`]: no response timeout (the caller bounds each
/// blocking call itself).
pub enum Dedicated {
    Single(redis::aio::MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl Dialer {
    pub fn new(target: &Target) -> anyhow::Result<Dialer> {
        Ok(match target {
            Target::Single(u) => Dialer::Single(redis::Client::open(u.as_str())?),
            Target::Cluster(seeds) => Dialer::Cluster(Box::new(cluster_client(seeds, None)?)),
        })
    }

    pub async fn dedicated(&self) -> redis::RedisResult<Dedicated> {
        match self {
            Dialer::Single(client) => {
                let cfg = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(None);
                Ok(Dedicated::Single(
                    client
                        .get_multiplexed_async_connection_with_config(&cfg)
                        .await?,
                ))
            }
            Dialer::Cluster(client) => Ok(Dedicated::Cluster(client.get_async_connection().await?)),
        }
    }
}

impl Dedicated {
    pub async fn query<T: redis::FromRedisValue>(&mut self, cmd: &Cmd) -> redis::RedisResult<T> {
        match self {
            Dedicated::Single(c) => cmd.query_async(c).await,
            Dedicated::Cluster(c) => cmd.query_async(c).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_name_every_seed() {
        assert_eq!(
            Target::parse("redis://db:6379/0").unwrap(),
            Target::Single("redis://db:6379/0".into())
        );
        assert_eq!(
            Target::parse("redis+cluster://:pw@a:7000,b:7001/").unwrap(),
            Target::Cluster(vec![
                "redis://:pw@a:7000".into(),
                "redis://:pw@b:7001".into()
            ])
        );
        assert!(Target::parse("redis+cluster://").is_err());
    }

    /// Messages name the URL the operator wrote, password hidden.
    #[test]
    fn a_target_is_shown_as_configured_without_its_password() {
        let shown = |u: &str| Target::parse(u).unwrap().shown();
        assert_eq!(
            shown("redis+cluster://:pw@a:7000,b:7001/"),
            "redis+cluster://***@a:7000,b:7001"
        );
        assert_eq!(
            shown("redis+cluster://a:7000,b:7001"),
            "redis+cluster://a:7000,b:7001"
        );
        assert_eq!(shown("redis://:pw@db:6379/0"), "redis://***@db:6379/0");
    }
}
