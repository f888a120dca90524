//! What the load tools (`loadgen`, `loadgen_views`, `chaos`) share: a WebSocket client's
//! basics, process figures from `/proc`, and percentiles.

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next JSON message within `within` (pings and pongs skipped); an error on a close, the
/// end of the connection or the time running out.
pub async fn next_json(ws: &mut Ws, within: Duration) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(&next_text(ws, within).await?)?)
}

/// The next text message, within `within` (for a caller that parses only what it needs).
pub async fn next_text(
    ws: &mut Ws,
    within: Duration,
) -> anyhow::Result<tokio_tungstenite::tungstenite::Utf8Bytes> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, ws.next())
            .await
            .context("no message within the wait")?
        {
            Some(Ok(Message::Text(t))) => return Ok(t),
            Some(Ok(Message::Close(f))) => bail!("closed by the server: {f:?}"),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.into()),
            None => bail!("connection ended"),
        }
    }
}

/// tungstenite's read buffer: it zero-fills the buffer's spare capacity before every `read`
/// (`FrameCodec::read_in`), so its default 128 KiB costs a 128 KiB `memset` per read — measured
/// as 12 % of a 2-core machine in the live-ranks bench, CPU taken from the servers under test.
/// Frames here are a few hundred bytes; the buffer still grows for a larger one.
pub const READ_BUFFER_BYTES: usize = 4096;

/// Opens a WebSocket with the load tools' client settings ([`READ_BUFFER_BYTES`]).
pub async fn connect_ws(url: &str) -> anyhow::Result<Ws> {
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES);
    let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), false).await?;
    Ok(ws)
}

pub async fn send(ws: &mut Ws, v: Value) -> anyhow::Result<()> {
    Ok(ws.send(Message::text(v.to_string())).await?)
}

/// A process's resident memory, from `/proc/<pid>/status`.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .context("VmRSS value")?
        .parse()?;
    Ok(kb * 1024)
}

/// `sysconf(_SC_CLK_TCK)`: USER_HZ, 100 on every Linux architecture Scorecast targets.
const CLK_TCK: f64 = 100.0;

/// CPU seconds (user + system, every thread) of a process so far, from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: the fields that follow start after its last ')';
    // utime and stime are then the 12th and 13th.
    let rest = stat.rsplit_once(')').context("/proc stat")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        f.get(11).context("utime")?.parse::<u64>()? + f.get(12).context("stime")?.parse::<u64>()?;
    Ok(ticks as f64 / CLK_TCK)
}

/// The `p` quantile (0..=1) of sorted samples, NaN when there are none.
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64
}

/// Kills a child process when dropped, however the run ends.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Points of each probe submission: far above every player's, so each probe jumps to rank 1.
pub const PROBE_POINTS: i64 = 1_000_000_000;

/// One probe submission: its score, when it was sent, and when its ack came back (the proxy for
/// its commit).
pub struct Probe {
    pub score: i64,
    pub sent: Instant,
    pub acked: Option<Instant>,
}

/// Every probe submission so far, in order.
pub type Probes = Arc<Mutex<Vec<Probe>>>;

/// What a spectator saw: for every probe submission it saw `probe` reach, the latency (µs) from
/// its send (the submission's own round trip included) and from its ack (the push's own
/// latency: 0 when the push came first).
#[derive(Default)]
pub struct Seen {
    pub from_send: Vec<u64>,
    pub from_ack: Vec<u64>,
}

/// A `top` spectator until `stop` fires, timing each probe submission it sees ([`Seen`]).
pub fn spectate(
    mut ws: Ws,
    probes: Probes,
    stop: Arc<tokio::sync::Notify>,
    probe: String,
) -> tokio::task::JoinHandle<Seen> {
    tokio::spawn(async move {
        let mut seen = 0i64;
        let mut lat = Seen::default();
        let stopped = stop.notified();
        tokio::pin!(stopped);
        loop {
            let msg = tokio::select! {
                _ = &mut stopped => break,
                m = ws.next() => m,
            };
            let Some(Ok(Message::Text(t))) = msg else {
                if matches!(msg, Some(Ok(_))) {
                    continue;
                }
                break;
            };
            let now = Instant::now();
            let Ok(v) = serde_json::from_str::<Value>(&t) else {
                continue;
            };
            let probe_score = v["entries"]
                .as_array()
                .and_then(|es| es.iter().find(|e| e["player"] == probe.as_str()))
                .and_then(|e| e["score"].as_i64());
            if let Some(s) = probe_score.filter(|s| *s > seen) {
                // unwrap: the lock is never held across a panic.
                let sent = probes.lock().unwrap();
                for p in sent.iter().filter(|p| p.score > seen && p.score <= s) {
                    let since = |t: Instant| now.saturating_duration_since(t).as_micros() as u64;
                    lat.from_send.push(since(p.sent));
                    lat.from_ack.push(p.acked.map_or(0, since));
                }
                seen = s;
            }
        }
        lat
    })
}

/// Until `deadline`, the probe player submits [`PROBE_POINTS`] to `board` every `every`,
/// recording each send in `probes` and waiting for its answer; returns how many it sent.
pub async fn probe_until(
    probe: &mut Ws,
    board: &str,
    probes: &Probes,
    deadline: Instant,
    every: Duration,
) -> anyhow::Result<u64> {
    let mut k = 0i64;
    while Instant::now() < deadline {
        k += 1;
        let id = format!("probe-{k}");
        // unwrap: the lock is never held across a panic.
        probes.lock().unwrap().push(Probe {
            score: k * PROBE_POINTS,
            sent: Instant::now(),
            acked: None,
        });
        send(
            probe,
            serde_json::json!({"type": "submit", "id": id, "board": board, "points": PROBE_POINTS}),
        )
        .await?;
        loop {
            let v = next_json(probe, WAIT_ANSWER).await?;
            if v["id"] == id.as_str() {
                break;
            }
        }
        // unwrap: the lock is never held across a panic.
        if let Some(p) = probes.lock().unwrap().last_mut() {
            p.acked = Some(Instant::now());
        }
        tokio::time::sleep(every).await;
    }
    Ok(k as u64)
}

/// How long a load tool waits for an answer before failing the run (a stuck server must not hang it).
pub const WAIT_ANSWER: Duration = Duration::from_secs(20);
