//! Each instance's live counters in Redis (`sc:{stats}`, `lua/stats.lua`), so that the admin
//! console charts the sum over every instance whichever one it talks to. Every instance writes
//! its snapshot every second (`Store::spawn_stats_writer`); a read keeps the snapshots of the last
//! [`FRESH_MS`].

use std::collections::BTreeMap;
use std::time::Duration;

use redis::Value;
use serde::{Deserialize, Serialize};

use super::Store;
use crate::error::AppResult;
use crate::{keys, metrics, reply, scripts};

/// How often an instance writes its snapshot.
pub const WRITE_EVERY: Duration = Duration::from_secs(1);

/// A snapshot older than this is left out of reads (its instance stopped or cannot reach Redis).
pub const FRESH_MS: i64 = 5_000;

/// A snapshot older than this is deleted by the next write of any instance.
const DROP_MS: i64 = 60_000;

/// What one instance counted since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counters {
    /// Submissions by outcome (`ok`, `duplicate` or an error code), since the instance started.
    pub submissions: BTreeMap<String, u64>,
    /// WebSocket sessions open now.
    pub ws_connections: i64,
}

impl Counters {
    /// This process's counters, as `/metrics` shows them.
    pub fn of_this_process() -> Counters {
        use prometheus::core::Collector;
        let mut submissions = BTreeMap::new();
        for family in metrics::SUBMISSIONS.collect() {
            for m in family.get_metric() {
                let outcome = m
                    .get_label()
                    .iter()
                    .find(|l| l.name() == "outcome")
                    .map(|l| l.value().to_owned());
                if let Some(o) = outcome {
                    submissions.insert(o, m.get_counter().get_value() as u64);
                }
            }
        }
        Counters {
            submissions,
            ws_connections: metrics::WS_CONNECTIONS.get(),
        }
    }
}

/// One instance's snapshot as read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct InstanceCounters {
    /// A random id the instance picked at start.
    pub instance: String,
    /// When it wrote this snapshot (ms since the epoch, Redis clock).
    pub at_ms: i64,
    #[serde(flatten)]
    pub counters: Counters,
}

impl Store {
    /// Stores this instance's snapshot (and drops those of instances gone for a minute).
    pub async fn put_stats(&self, instance: &str, counters: &Counters) -> AppResult<()> {
        let mut c = self.conn.clone();
        let json = serde_json::to_string(counters).unwrap_or_default();
        let _: Value = scripts::STATS
            .key(keys::STATS)
            .arg("put")
            .arg(instance)
            .arg(json)
            .arg(DROP_MS)
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        Ok(())
    }

    /// Redis's now and the snapshots of every instance written in the last [`FRESH_MS`].
    pub async fn stats(&self) -> AppResult<(i64, Vec<InstanceCounters>)> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::STATS
            .key(keys::STATS)
            .arg("read")
            .arg(FRESH_MS)
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let now = r
            .first()
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("stats now"))?;
        let mut out = Vec::new();
        for f in r[1..].chunks_exact(3) {
            let (Some(instance), Some(at_ms), Some(json)) =
                (reply::text(&f[0]), reply::int(&f[1]), reply::text(&f[2]))
            else {
                return Err(reply::bad("stats entry"));
            };
            // A snapshot this version cannot read (another version's) is left out.
            if let Ok(counters) = serde_json::from_str(&json) {
                out.push(InstanceCounters {
                    instance,
                    at_ms,
                    counters,
                });
            }
        }
        out.sort_by(|a, b| a.instance.cmp(&b.instance));
        Ok((now, out))
    }

    /// Writes this instance's counters under `instance` every [`WRITE_EVERY`], for as long as
    /// the runtime runs. A failed write is logged once per outage.
    pub fn spawn_stats_writer(&self, instance: String) {
        let store = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(WRITE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut failing = false;
            loop {
                tick.tick().await;
                match store
                    .put_stats(&instance, &Counters::of_this_process())
                    .await
                {
                    Ok(()) => failing = false,
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "cannot write this instance's stats");
                    }
                    Err(_) => {}
                }
            }
        });
    }
}
