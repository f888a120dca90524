//! Typed access to the leaderboards in Redis. Handlers never build raw commands: every
//! operation here is one script (see `lua/`) or one command, on the shared multiplexed
//! connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Value};
use scorecast_shared::{BoardConfig, Entry, ErrorCode, Id, Op};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;
use crate::error::{AppError, AppResult, RateInfo};
use crate::{keys, scripts};

#[derive(Clone)]
pub struct Store {
    conn: ConnectionManager,
    clock: Clock,
    /// One group-commit queue per board (see [`Store::submit`]).
    batchers: Batchers,
    batcher_idle: std::time::Duration,
}

type Batchers = Arc<Mutex<HashMap<Id, mpsc::UnboundedSender<Pending>>>>;

/// A board's batcher stops after this long without submissions (the next one starts it again).
pub const BATCHER_IDLE: std::time::Duration = std::time::Duration::from_secs(30);

/// A submission waiting for its batch, and where its result goes.
type Pending = (Submission, oneshot::Sender<AppResult<Accepted>>);

/// The most submissions one script call applies.
const MAX_BATCH: usize = 128;

/// One score submission, from any front door (WebSocket, HTTP admin, jobs).
#[derive(Clone, Debug)]
pub struct Submission {
    pub board: Id,
    pub player: Id,
    /// The client's id for this submission: a retry with the same id is applied once.
    pub id: Id,
    pub points: i64,
    /// Overrides the board's op (admin only).
    pub op: Option<Op>,
    /// Display name to record (from the token's `name` claim).
    pub name: Option<String>,
    /// Skip the board's `submit_limit` (admin).
    pub skip_limit: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Accepted {
    pub board: String,
    pub season: String,
    /// The player's points after the submission.
    pub score: i64,
    pub rank: u64,
    pub previous_rank: Option<u64>,
    pub seq: u64,
    pub duplicate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached_ms: Option<i64>,
}

/// A slice of one season of a board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub season: String,
    /// When the season started, ms since the epoch.
    pub start_ms: i64,
    pub total: u64,
    pub seq: u64,
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SeasonInfo {
    pub season: String,
    pub start_ms: i64,
    pub current: bool,
}

#[derive(Clone, Copy, Debug)]
pub enum Read<'a> {
    Top { offset: u64, limit: u64 },
    Player(&'a Id),
    Around { player: &'a Id, radius: u64 },
    Players(&'a [Id]),
}

fn bad_reply(what: &str) -> AppError {
    tracing::error!(what, "unexpected script reply");
    AppError::new(ErrorCode::Unavailable, "unexpected reply from the store")
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Splits a script reply into `Ok(fields after 'ok')` or the error it carries
/// (`{'err', code, message, retry_after_ms?, limit?, reset_ms?}`).
fn split_reply(v: Value) -> AppResult<Vec<Value>> {
    let Value::Array(items) = v else {
        return Err(bad_reply("not an array"));
    };
    let tag = items
        .first()
        .and_then(as_string)
        .ok_or_else(|| bad_reply("no tag"))?;
    if tag == "ok" {
        return Ok(items.into_iter().skip(1).collect());
    }
    let code = items
        .get(1)
        .and_then(as_string)
        .and_then(|c| ErrorCode::parse(&c))
        .ok_or_else(|| bad_reply("error code"))?;
    let message = items.get(2).and_then(as_string).unwrap_or_default();
    let mut err = AppError::new(code, message);
    if code == ErrorCode::RateLimited {
        let n = |i: usize| items.get(i).and_then(as_i64).unwrap_or(0).max(0) as u64;
        err.rate = Some(RateInfo {
            allowed: false,
            limit: n(4),
            remaining: 0,
            retry_after_ms: n(3).max(1),
            reset_ms: n(5),
        });
    }
    Err(err)
}

fn opt_rank(v: i64) -> Option<u64> {
    (v > 0).then_some(v as u64)
}

impl Store {
    pub fn new(conn: ConnectionManager, clock: Clock) -> Store {
        Store {
            conn,
            clock,
            batchers: Arc::default(),
            batcher_idle: BATCHER_IDLE,
        }
    }

    /// How long a board's batcher waits for submissions before it stops (tests shorten it).
    pub fn with_batcher_idle(mut self, idle: std::time::Duration) -> Store {
        self.batcher_idle = idle;
        self
    }

    /// Boards with a running batcher.
    pub fn batching_boards(&self) -> usize {
        // unwrap: the lock is never held across a panic-prone call.
        self.batchers.lock().unwrap().len()
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The shared multiplexed connection (never for blocking commands).
    pub fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    pub async fn ping(&self) -> AppResult<()> {
        let mut c = self.conn.clone();
        let _: String = redis::cmd("PING").query_async(&mut c).await?;
        Ok(())
    }

    /// Creates or changes a board (refused with `conflict` if it would reinterpret scores).
    /// Returns whether it was created.
    pub async fn put_board(&self, board: &Id, cfg: &BoardConfig) -> AppResult<bool> {
        cfg.validate().map_err(AppError::bad_request)?;
        let json = serde_json::to_string(cfg).map_err(|e| AppError::bad_request(e.to_string()))?;
        let mut c = self.conn.clone();
        let reply: Value = scripts::BOARD_PUT
            .key(keys::config(board))
            .arg(json)
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = split_reply(reply)?;
        // The index lives outside the board's slot, so it is written separately; it is only an
        // index (the config key is the truth).
        let _: () = c.sadd(keys::BOARDS, board.as_str()).await?;
        Ok(r.first().and_then(as_i64) == Some(1))
    }

    pub async fn board(&self, board: &Id) -> AppResult<BoardConfig> {
        let mut c = self.conn.clone();
        let raw: Option<String> = c.get(keys::config(board)).await?;
        let raw =
            raw.ok_or_else(|| AppError::new(ErrorCode::UnknownBoard, format!("no board {board}")))?;
        serde_json::from_str(&raw).map_err(|_| bad_reply("board config"))
    }

    pub async fn boards(&self) -> AppResult<Vec<(Id, BoardConfig)>> {
        let mut c = self.conn.clone();
        let mut ids: Vec<Id> = c
            .smembers::<_, Vec<String>>(keys::BOARDS)
            .await?
            .iter()
            .filter_map(|id| Id::parse(id).ok())
            .collect();
        ids.sort();
        // One round trip for every config (a pipeline, not MGET: on a cluster the keys live in
        // different slots).
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.get(keys::config(id));
        }
        let raw: Vec<Option<String>> = pipe.query_async(&mut c).await?;
        ids.into_iter()
            .zip(raw)
            // An index entry without a config (a board being removed) is no board.
            .filter_map(|(id, raw)| raw.map(|r| (id, r)))
            .map(|(id, r)| {
                Ok((
                    id,
                    serde_json::from_str(&r).map_err(|_| bad_reply("board config"))?,
                ))
            })
            .collect()
    }

    /// Applies one submission atomically: dedup, limiter, op, tie-break, seq, audit log,
    /// event (`lua/submit.lua`).
    ///
    /// Group commit (DESIGN §10): submissions to one board queue up while that board's previous
    /// script call is in flight, and go together in the next call — one round trip and one
    /// event for the lot, each with its own result. With no load, a batch is one submission.
    pub async fn submit(&self, s: &Submission) -> AppResult<Accepted> {
        let (tx, rx) = oneshot::channel();
        let gone = || {
            AppError::new(
                ErrorCode::Unavailable,
                "the submission queue stopped; retry with the same id",
            )
        };
        let mut pending = (s.clone(), tx);
        // A batcher that has just retired (idle) refuses the send: the second try starts a
        // fresh one.
        for _ in 0..2 {
            match self.batcher(&s.board).send(pending) {
                Ok(()) => return rx.await.map_err(|_| gone())?,
                Err(mpsc::error::SendError(p)) => pending = p,
            }
        }
        Err(gone())
    }

    fn batcher(&self, board: &Id) -> mpsc::UnboundedSender<Pending> {
        // unwrap: the lock is never held across a panic-prone call.
        let mut map = self.batchers.lock().unwrap();
        if let Some(tx) = map.get(board).filter(|tx| !tx.is_closed()) {
            return tx.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run_batches(
            self.conn.clone(),
            self.clock.clone(),
            board.clone(),
            rx,
            self.batchers.clone(),
            self.batcher_idle,
        ));
        map.insert(board.clone(), tx.clone());
        tx
    }

    /// Reads a board (`season`: `None` = current) through `lua/read.lua`.
    pub async fn read(&self, board: &Id, season: Option<&Id>, what: Read<'_>) -> AppResult<Page> {
        let mut c = self.conn.clone();
        let mut inv = scripts::READ.key(keys::config(board));
        inv.arg(match what {
            Read::Top { .. } => "top",
            Read::Player(_) => "player",
            Read::Around { .. } => "around",
            Read::Players(_) => "players",
        });
        inv.arg(season.map(Id::as_str).unwrap_or(""))
            .arg(self.clock.arg());
        match what {
            Read::Top { offset, limit } => {
                inv.arg(offset).arg(limit);
            }
            Read::Player(p) => {
                inv.arg(p.as_str());
            }
            Read::Around { player, radius } => {
                inv.arg(player.as_str()).arg(radius);
            }
            Read::Players(ps) => {
                for p in ps {
                    inv.arg(p.as_str());
                }
            }
        }
        let reply: Value = inv.invoke_async(&mut c).await?;
        let r = split_reply(reply)?;
        let n = |i: usize| {
            r.get(i)
                .and_then(as_i64)
                .ok_or_else(|| bad_reply("read field"))
        };
        let season = r
            .first()
            .and_then(as_string)
            .ok_or_else(|| bad_reply("season"))?;
        let (total, seq, start_ms) = (n(1)? as u64, n(2)? as u64, n(3)?);
        let mut entries = r[4..]
            .chunks_exact(5)
            .map(|e| {
                Some(Entry {
                    player: as_string(&e[0])?,
                    score: as_i64(&e[1])?,
                    rank: as_i64(&e[2])? as u64,
                    name: as_string(&e[3]).filter(|n| !n.is_empty()),
                    reached_ms: as_i64(&e[4]).filter(|t| *t >= 0),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad_reply("entry"))?;
        if matches!(what, Read::Players(_)) {
            // Friends are shown as a small leaderboard of their own.
            entries.sort_by_key(|e| e.rank);
        }
        Ok(Page {
            season,
            start_ms,
            total,
            seq,
            entries,
        })
    }

    pub async fn seasons(&self, board: &Id) -> AppResult<Vec<SeasonInfo>> {
        // The current season comes from the same rules as every read.
        let current = self
            .read(
                board,
                None,
                Read::Top {
                    offset: 0,
                    limit: 0,
                },
            )
            .await?;
        let mut c = self.conn.clone();
        let listed: Vec<(String, f64)> = c.zrange_withscores(keys::seasons(board), 0, -1).await?;
        let mut out: Vec<SeasonInfo> = listed
            .into_iter()
            .map(|(season, start)| SeasonInfo {
                current: season == current.season,
                season,
                start_ms: start as i64,
            })
            .collect();
        if !out.iter().any(|s| s.current) {
            // A calendar season nobody has scored in yet.
            out.push(SeasonInfo {
                season: current.season,
                start_ms: current.start_ms,
                current: true,
            });
        }
        Ok(out)
    }

    /// Starts a named season on a `never` board. Returns (season, start_ms, previous season).
    pub async fn rollover(&self, board: &Id, season: &Id) -> AppResult<(String, i64, String)> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::ROLLOVER
            .key(keys::config(board))
            .arg(season.as_str())
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = split_reply(reply)?;
        let s = |i: usize| {
            r.get(i)
                .and_then(as_string)
                .ok_or_else(|| bad_reply("rollover"))
        };
        Ok((s(0)?, r.get(1).and_then(as_i64).unwrap_or(0), s(2)?))
    }

    /// Announces the board's current season to every instance (a calendar boundary passed):
    /// bumps `seq` and publishes a rollover event, so open views switch seasons.
    pub async fn announce_season(&self, board: &Id) -> AppResult<String> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::SEASON_EVENT
            .key(keys::config(board))
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = split_reply(reply)?;
        r.first()
            .and_then(as_string)
            .ok_or_else(|| bad_reply("season event"))
    }

    /// Removes a player from the current season; false if they were not on it.
    pub async fn remove(&self, board: &Id, player: &Id) -> AppResult<bool> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::REMOVE
            .key(keys::config(board))
            .arg(player.as_str())
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = split_reply(reply)?;
        Ok(r.first().and_then(as_i64) == Some(1))
    }

    /// The audit stream, newest first, one object per accepted submission.
    ///
    /// `lua/submit.lua` appends one stream entry per script call, carrying the whole batch
    /// (`season`, `time_ms`, and `batch`: one `player id points op score rank` line per
    /// submission, in the order applied); this spreads them out again. Every submission of a
    /// batch shares the entry's `stream_id`, `season` and `time_ms`.
    pub async fn log(&self, board: &Id, count: usize) -> AppResult<Vec<serde_json::Value>> {
        self.board(board).await?;
        let mut c = self.conn.clone();
        // Each entry holds at least one submission, so `count` entries are always enough.
        let reply: redis::streams::StreamRangeReply =
            c.xrevrange_count(keys::log(board), "+", "-", count).await?;
        let mut out = Vec::with_capacity(count);
        for e in reply.ids {
            let field = |k: &str| e.map.get(k).and_then(as_string).unwrap_or_default();
            let (season, time_ms) = (field("season"), field("time_ms"));
            let time_ms = time_ms.parse::<i64>().map_err(|_| bad_reply("log time"))?;
            // An entry written before batched entries holds one submission in its own fields.
            let batch = match e.map.contains_key("batch") {
                true => field("batch"),
                false => ["player", "id", "points", "op", "score", "rank"]
                    .map(field)
                    .join(" "),
            };
            for line in batch.lines().rev() {
                if out.len() == count {
                    return Ok(out);
                }
                out.push(audit_line(&e.id, &season, time_ms, line)?);
            }
        }
        Ok(out)
    }
}

/// One submission of an audit entry's batch: `player id points op score rank`.
fn audit_line(
    stream_id: &str,
    season: &str,
    time_ms: i64,
    line: &str,
) -> AppResult<serde_json::Value> {
    let f: Vec<&str> = line.split(' ').collect();
    let [player, id, points, op, score, rank] = f[..] else {
        return Err(bad_reply("log line"));
    };
    let n = |s: &str| s.parse::<i64>().map_err(|_| bad_reply("log number"));
    Ok(serde_json::json!({
        "stream_id": stream_id,
        "player": player,
        "id": id,
        "points": n(points)?,
        "op": op,
        "score": n(score)?,
        "rank": n(rank)?,
        "season": season,
        "time_ms": time_ms,
    }))
}

/// Applies a board's queued submissions, as many as are waiting (up to [`MAX_BATCH`]) per
/// script call, until every sender is gone.
async fn run_batches(
    mut conn: ConnectionManager,
    clock: Clock,
    board: Id,
    mut rx: mpsc::UnboundedReceiver<Pending>,
    batchers: Batchers,
    idle: std::time::Duration,
) {
    let mut batch: Vec<Pending> = Vec::with_capacity(MAX_BATCH);
    let mut retiring = false;
    loop {
        let first = if retiring {
            // Closed: apply what was sent before the close, then stop.
            match rx.try_recv() {
                Ok(p) => p,
                Err(_) => return,
            }
        } else {
            match tokio::time::timeout(idle, rx.recv()).await {
                Ok(Some(p)) => p,
                Ok(None) => return,
                Err(_) => {
                    // Idle: retire, so that boards nobody submits to (or that do not exist)
                    // hold no task and no map entry.
                    // unwrap: the lock is never held across a panic-prone call.
                    let mut map = batchers.lock().unwrap();
                    rx.close();
                    if map.get(&board).is_some_and(|tx| tx.is_closed()) {
                        map.remove(&board);
                    }
                    retiring = true;
                    continue;
                }
            }
        };
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        match apply_batch(&mut conn, &clock, &board, &batch).await {
            Ok(results) => {
                for ((_, tx), r) in batch.drain(..).zip(results) {
                    let _ = tx.send(r);
                }
            }
            Err(e) => {
                for (_, tx) in batch.drain(..) {
                    let _ = tx.send(Err(e.clone()));
                }
            }
        }
    }
}

async fn apply_batch(
    conn: &mut ConnectionManager,
    clock: &Clock,
    board: &Id,
    batch: &[Pending],
) -> AppResult<Vec<AppResult<Accepted>>> {
    let mut inv = scripts::SUBMIT.key(keys::config(board));
    inv.arg(clock.arg());
    for (s, _) in batch {
        let op = s.op.map(|op| match op {
            Op::Incr => "incr",
            Op::Best => "best",
            Op::Set => "set",
        });
        inv.arg(s.player.as_str())
            .arg(s.id.as_str())
            .arg(s.points)
            .arg(op.unwrap_or(""))
            .arg(s.name.as_deref().unwrap_or(""))
            .arg(if s.skip_limit { "1" } else { "" });
    }
    let reply: Value = inv.invoke_async(conn).await?;
    let Value::Array(items) = reply else {
        return Err(bad_reply("submit batch"));
    };
    if items.len() != batch.len() {
        return Err(bad_reply("submit batch length"));
    }
    Ok(items
        .into_iter()
        .map(|item| {
            let r = split_reply(item)?;
            let n = |i: usize| {
                r.get(i)
                    .and_then(as_i64)
                    .ok_or_else(|| bad_reply("submit field"))
            };
            Ok(Accepted {
                board: board.to_string(),
                season: r
                    .first()
                    .and_then(as_string)
                    .ok_or_else(|| bad_reply("season"))?,
                score: n(1)?,
                rank: n(2)? as u64,
                previous_rank: opt_rank(n(3)?),
                seq: n(4)? as u64,
                duplicate: n(5)? == 1,
                reached_ms: Some(n(6)?).filter(|t| *t >= 0),
            })
        })
        .collect())
}
