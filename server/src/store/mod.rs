//! Typed access to the leaderboards in Redis. Handlers never build raw commands: every
//! operation here is one script (see `lua/`) or one command, on the shared multiplexed
//! connection. Submissions go through the per-board group commit of `batch.rs`.

mod audit;
mod batch;
mod buckets;
mod league;
mod log;
mod moderation;
mod names;
mod revocation;
mod stats;
mod tournament;

use std::sync::Arc;

use redis::{AsyncCommands, Value};
use scorecast_shared::{BoardConfig, Entry, ErrorCode, Id, Op};
use serde::Serialize;

use crate::clock::Clock;
use crate::conn::RedisConn;
use crate::error::{AppError, AppResult};
use crate::lanes::Lanes;
use crate::{keys, reply, scripts};
pub use audit::AuditPage;
pub use batch::{pack_submissions, BATCHER_IDLE};
pub use buckets::{BucketCount, BucketsPage};
pub use league::{LeagueConfig, Move, Moves, MAX_TIERS};
pub use log::{LogCursor, LogPage};
pub use moderation::{Ban, Intent, Layer, Lift};
pub use names::{NameHits, SCAN_BUDGET};
pub use revocation::Revoked;
pub use stats::{Counters, InstanceCounters, FRESH_MS};
pub use tournament::{Entrant, EntrantsPage, Joined, TournamentInfo};

/// A run a player started on a verified board (`Store::start_run`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Run {
    /// The run id a verified submission names.
    #[serde(rename = "run")]
    pub id: String,
    /// The seed the game is played from (0 ..= 2^32 − 1).
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64)]
    pub seed: u32,
    pub started_ms: i64,
    pub expires_ms: i64,
}

/// A run as `lua/run_start.lua` keeps it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct RunRecord {
    pub player: String,
    pub seed: u32,
    pub started_ms: i64,
    pub expires_ms: i64,
}

#[derive(Clone)]
pub struct Store {
    conn: RedisConn,
    clock: Clock,
    /// One group-commit queue per board (see [`Store::submit`]).
    batchers: Lanes<batch::Pending>,
    /// `(replicas, timeout_ms)`: submissions are acknowledged once that many replicas have them.
    replica_wait: Option<(u32, u64)>,
    /// Told of each batch's change event before its results are handed out (see [`OnCommit`]).
    commits: Commits,
}

/// Told of the change event of every submission batch of this instance, *before* the batch's
/// results are handed out (the hub: it queues the submitters' `me` updates quietly, and wakes
/// their sessions once the results are out, so that each writes its ack and its update
/// together). The same event still reaches every instance by pub/sub.
pub trait OnCommit: Send + Sync {
    /// Whether [`OnCommit::committed`] has a use for the next batch's event on `board` (if not,
    /// Redis does not send it back).
    fn wants(&self, board: &Id) -> bool;

    /// A batch on `board` committed and published `event`; returns what to run once its results
    /// were handed out.
    fn committed(&self, board: &Id, event: &[u8]) -> Option<Wake>;
}

/// What to run once a batch's results were handed out (see [`OnCommit::committed`]).
pub type Wake = Box<dyn FnOnce() + Send>;

/// Shared by every clone of a [`Store`]: set once, by the hub.
type Commits = Arc<std::sync::OnceLock<Box<dyn OnCommit>>>;

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
    /// The name of the key that submitted for the player over HTTP (recorded in the audit
    /// log); such a submission skips the board's `submit_limit`. `None` for the player's own.
    pub by: Option<String>,
    /// The points are a validator's replay of a run's proof (`AppState::submit_proof`): the only
    /// player submissions a board with a `validator` accepts.
    pub verified: bool,
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

/// Which ladder of a bucketed board a read reads (`lua/read.lua`, ARGV[4]; other boards have
/// one ladder and ignore it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Each named player's own bucket (a `top` read is `bad_request`: it names no player).
    Own,
    /// The whole board (operators).
    Board,
    /// Bucket `n`.
    Bucket(u32),
    /// The bucket of this player (`not_found` if they have none).
    Of(&'a Id),
}

impl Scope<'_> {
    fn arg(&self) -> String {
        match self {
            Scope::Own => String::new(),
            Scope::Board => "*".into(),
            Scope::Bucket(n) => n.to_string(),
            Scope::Of(p) => format!("@{p}"),
        }
    }
}

/// The first field of a read's rows (after its head: season, total, seq, start, bucket,
/// buckets).
const ROWS_AT: usize = 6;

/// Field `i` of a script reply, an integer.
fn int_at(r: &[Value], i: usize) -> AppResult<i64> {
    r.get(i)
        .and_then(reply::int)
        .ok_or_else(|| reply::bad("read field"))
}

/// The head every `lua/read.lua` reply starts with — season, total, seq, the season's start —
/// as a page with no entries yet.
fn page_head(r: &[Value]) -> AppResult<Page> {
    let season = r
        .first()
        .and_then(reply::text)
        .ok_or_else(|| reply::bad("season"))?;
    Ok(Page {
        season,
        total: int_at(r, 1)? as u64,
        seq: int_at(r, 2)? as u64,
        start_ms: int_at(r, 3)?,
        entries: Vec::new(),
    })
}

fn entries(fields: &[Value]) -> AppResult<Vec<Entry>> {
    fields
        .chunks_exact(5)
        .map(|e| {
            Some(Entry {
                player: reply::text(&e[0])?,
                score: reply::int(&e[1])?,
                rank: reply::int(&e[2])? as u64,
                name: reply::text(&e[3]).filter(|n| !n.is_empty()),
                reached_ms: reply::int(&e[4]).filter(|t| *t >= 0),
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| reply::bad("entry"))
}

fn opt_rank(v: i64) -> Option<u64> {
    (v > 0).then_some(v as u64)
}

impl Store {
    pub fn new(conn: RedisConn, clock: Clock) -> Store {
        Store {
            conn,
            clock,
            batchers: Lanes::new(BATCHER_IDLE),
            replica_wait: None,
            commits: Arc::default(),
        }
    }

    /// Sets where committed batches' events go (once; a second call is ignored).
    pub fn on_commit(&self, hook: Box<dyn OnCommit>) {
        let _ = self.commits.set(hook);
    }

    /// How long a board's batcher waits for submissions before it stops (tests shorten it).
    pub fn with_batcher_idle(mut self, idle: std::time::Duration) -> Store {
        self.batchers = self.batchers.with_idle(idle);
        self
    }

    /// Acknowledge submissions only once `replicas` replicas have them (`WAIT`, at most
    /// `timeout_ms`; fewer replicas in time answers `unavailable`). 0 turns it off.
    pub fn with_replica_wait(mut self, replicas: u32, timeout_ms: u64) -> Store {
        self.replica_wait = (replicas > 0).then_some((replicas, timeout_ms));
        self
    }

    /// Boards with a running batcher.
    pub fn batching_boards(&self) -> usize {
        self.batchers.running()
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
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
        // Used only if this call creates the board (see `keys::generation`).
        let generation = format!("{:016x}", rand::random::<u64>());
        // The validator must exist when the board names it. (Another slot than the board's on a
        // cluster, so checked before the script, not inside it; deleting a validator a board
        // names is refused the other way round.)
        if let Some(v) = cfg.validator.as_deref() {
            if v != crate::validators::registry::BUILTIN_NAME {
                let exists: bool = c.hexists(keys::VALIDATORS, v).await?;
                if !exists {
                    return Err(AppError::new(
                        ErrorCode::NotFound,
                        format!("no validator {v}: upload it first (PUT /admin/validators/{v})"),
                    ));
                }
            }
        }
        let reply: Value = scripts::BOARD_PUT
            .key(keys::config(board))
            .arg(json)
            .arg(self.clock.arg())
            .arg(generation)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        // The index lives outside the board's slot, so it is written separately; it is only an
        // index (the config key is the truth).
        let _: () = c.sadd(keys::BOARDS, board.as_str()).await?;
        Ok(r.first().and_then(reply::int) == Some(1))
    }

    /// Starts a run of `player` on the verified `board`: a fresh run id and seed, kept in Redis
    /// beside the board for `ttl_ms`; refused (`conflict`) past `max_open` open runs of the
    /// player, (`bad_request`) on a board without a validator.
    pub async fn start_run(
        &self,
        board: &Id,
        player: &Id,
        ttl_ms: u64,
        max_open: u32,
    ) -> AppResult<Run> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.start_run_as(board, player, id, ttl_ms, max_open).await
    }

    /// [`Store::start_run`] with the run id chosen by the caller: when `id` already names an
    /// open run of `player`, that run is returned as it is (the same request again) and
    /// nothing changes; another player's run, or an expired one, is `conflict`.
    pub async fn start_run_as(
        &self,
        board: &Id,
        player: &Id,
        id: String,
        ttl_ms: u64,
        max_open: u32,
    ) -> AppResult<Run> {
        let seed: u32 = rand::random();
        let mut c = self.conn.clone();
        let reply: Value = scripts::RUN_START
            .key(keys::config(board))
            .key(keys::run(board, &id))
            .key(keys::runs_of(board, player))
            .arg(player.as_str())
            .arg(&id)
            .arg(seed)
            .arg(ttl_ms)
            .arg(max_open)
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let field = |i: usize| {
            r.get(i)
                .and_then(reply::int)
                .ok_or_else(|| reply::bad("run"))
        };
        Ok(Run {
            id,
            seed: u32::try_from(field(2)?).map_err(|_| reply::bad("run"))?,
            started_ms: field(0)?,
            expires_ms: field(1)?,
        })
    }

    /// The board's configuration (or `unknown_board`), its run `run` unless that never existed or
    /// its record is gone, and the time of the read on the clock runs are started on (Redis
    /// `TIME`, or the injected clock): one script call (both keys are in the board's slot), the
    /// one read a verified submission makes before its validator runs.
    pub async fn board_and_run(
        &self,
        board: &Id,
        run: &Id,
    ) -> AppResult<(BoardConfig, Option<RunRecord>, i64)> {
        let mut c = self.conn.clone();
        let (cfg, raw, now): (Option<String>, Option<String>, i64) = scripts::RUN_READ
            .key(keys::config(board))
            .key(keys::run(board, run.as_str()))
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let cfg =
            cfg.ok_or_else(|| AppError::new(ErrorCode::UnknownBoard, format!("no board {board}")))?;
        let cfg = serde_json::from_str(&cfg).map_err(|_| reply::bad("board config"))?;
        let run = raw
            .map(|r| serde_json::from_str(&r).map_err(|_| reply::bad("run")))
            .transpose()?;
        Ok((cfg, run, now))
    }

    /// Stores a validator's module under `name` (checked by the caller), with its SHA-256 under
    /// `name#sha256` (one HSET: both or neither); whether it replaced one.
    pub async fn put_validator(&self, name: &Id, module: &[u8], sha256: &str) -> AppResult<bool> {
        let mut c = self.conn.clone();
        let added: i64 = redis::cmd("HSET")
            .arg(keys::VALIDATORS)
            .arg(name.as_str())
            .arg(module)
            .arg(keys::validator_digest_field(name))
            .arg(sha256)
            .query_async(&mut c)
            .await?;
        Ok(added == 0)
    }

    /// The module stored under `name`.
    pub async fn validator(&self, name: &Id) -> AppResult<Option<Vec<u8>>> {
        let mut c = self.conn.clone();
        Ok(c.hget(keys::VALIDATORS, name.as_str()).await?)
    }

    /// The SHA-256 (hex) of the module stored under `name`: 64 bytes to read, so a verification
    /// finds its compiled module without reading the module.
    pub async fn validator_digest(&self, name: &Id) -> AppResult<Option<String>> {
        let mut c = self.conn.clone();
        Ok(c.hget(keys::VALIDATORS, keys::validator_digest_field(name))
            .await?)
    }

    /// Deletes the validator `name`; whether there was one.
    pub async fn delete_validator(&self, name: &Id) -> AppResult<bool> {
        let mut c = self.conn.clone();
        let removed: i64 = redis::cmd("HDEL")
            .arg(keys::VALIDATORS)
            .arg(name.as_str())
            .arg(keys::validator_digest_field(name))
            .query_async(&mut c)
            .await?;
        Ok(removed > 0)
    }

    /// The stored validators' names, sorted.
    pub async fn validator_names(&self) -> AppResult<Vec<String>> {
        let mut c = self.conn.clone();
        let mut names: Vec<String> = c.hkeys(keys::VALIDATORS).await?;
        names.retain(|n| !n.contains('#'));
        names.sort();
        Ok(names)
    }

    /// A board's config (`board` may be an [`Id::cell`] key: its board's).
    pub async fn board(&self, board: &Id) -> AppResult<BoardConfig> {
        let board = &match board.cell_parts() {
            Some((b, _, _)) => b,
            None => board.clone(),
        };
        let mut c = self.conn.clone();
        let raw: Option<String> = c.get(keys::config(board)).await?;
        let raw =
            raw.ok_or_else(|| AppError::new(ErrorCode::UnknownBoard, format!("no board {board}")))?;
        serde_json::from_str(&raw).map_err(|_| reply::bad("board config"))
    }

    /// The board's generation (`keys::generation`; `""` for a board created before
    /// generations), or `unknown_board`. One MGET: both keys are in the board's slot.
    pub async fn board_generation(&self, board: &Id) -> AppResult<String> {
        let mut c = self.conn.clone();
        let (cfg, generation): (Option<String>, Option<String>) = redis::cmd("MGET")
            .arg(keys::config(board))
            .arg(keys::generation(board))
            .query_async(&mut c)
            .await?;
        match cfg {
            Some(_) => Ok(generation.unwrap_or_default()),
            None => Err(AppError::new(
                ErrorCode::UnknownBoard,
                format!("no board {board}"),
            )),
        }
    }

    /// Records a reward grant (`lua/reward_grant.lua`) if the board still is generation
    /// `generation`: `Some(true)` granted now, `Some(false)` granted before, `None` the board
    /// is gone or another board of the same id (nothing written).
    pub async fn grant_reward(
        &self,
        board: &Id,
        generation: &str,
        field: &str,
        record: &str,
    ) -> AppResult<Option<bool>> {
        let mut c = self.conn.clone();
        let r: i64 = scripts::REWARD_GRANT
            .key(keys::config(board))
            .key(keys::generation(board))
            .key(keys::rewards(board))
            .arg(generation)
            .arg(field)
            .arg(record)
            .invoke_async(&mut c)
            .await?;
        Ok((r >= 0).then_some(r == 1))
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
        if ids.is_empty() {
            // A fresh store: an empty pipeline would be an "empty command" error from redis-rs.
            return Ok(Vec::new());
        }
        // Every config at once: concurrent GETs, which the multiplexed connection pipelines (not
        // MGET or one pipeline: on a cluster the keys live in different slots, each GET is routed
        // to its own node).
        let raw: Vec<Option<String>> = futures_util::future::try_join_all(ids.iter().map(|id| {
            let mut c = c.clone();
            async move { c.get::<_, Option<String>>(keys::config(id)).await }
        }))
        .await?;
        ids.into_iter()
            .zip(raw)
            // An index entry without a config (a board being removed) is no board.
            .filter_map(|(id, raw)| raw.map(|r| (id, r)))
            .map(|(id, r)| {
                Ok((
                    id,
                    serde_json::from_str(&r).map_err(|_| reply::bad("board config"))?,
                ))
            })
            .collect()
    }

    /// Reads a board (`season`: `None` = current) through `lua/read.lua`; on a bucketed board
    /// each named player within their own bucket ([`Scope::Own`]). `board` may be the hub's key
    /// of one bucket's views ([`Id::cell`]): that bucket of that season is read.
    pub async fn read(&self, board: &Id, season: Option<&Id>, what: Read<'_>) -> AppResult<Page> {
        if let Some((board, season, n)) = board.cell_parts() {
            let scope = Scope::Bucket(n);
            return Ok(self.read_in(&board, Some(&season), scope, what).await?.0);
        }
        Ok(self.read_in(board, season, Scope::Own, what).await?.0)
    }

    /// Where the live views of `player` (`None`: a spectator) on `board` are kept: the board
    /// itself, or on a bucketed board the player's bucket in the current season
    /// ([`Id::cell`]). A player without a bucket there is `not_found`, a spectator of a
    /// bucketed board `bad_request` (from `lua/read.lua`).
    pub async fn view_cell(&self, board: &Id, player: Option<&Id>) -> AppResult<Id> {
        let (page, bucket) = match player {
            Some(p) => {
                self.read_in(board, None, Scope::Own, Read::Player(p))
                    .await?
            }
            None => {
                let head = Read::Top {
                    offset: 0,
                    limit: 0,
                };
                self.read_in(board, None, Scope::Own, head).await?
            }
        };
        if bucket == 0 {
            return Ok(board.clone());
        }
        let season = Id::parse(&page.season).map_err(|_| reply::bad("season"))?;
        Ok(Id::cell(board, &season, bucket))
    }

    /// [`Store::read`] of the ladder `scope` names; with the bucket read (0: the whole board,
    /// or each player's own).
    pub async fn read_in(
        &self,
        board: &Id,
        season: Option<&Id>,
        scope: Scope<'_>,
        what: Read<'_>,
    ) -> AppResult<(Page, u32)> {
        let (page, bucket, _) = self.read_counted(board, season, scope, what).await?;
        Ok((page, bucket))
    }

    /// [`Store::read_in`], with the season's number of buckets when `scope` names one bucket
    /// ([`Scope::Bucket`], [`Scope::Of`]; else 0): buckets are numbered 1 to it.
    pub async fn read_counted(
        &self,
        board: &Id,
        season: Option<&Id>,
        scope: Scope<'_>,
        what: Read<'_>,
    ) -> AppResult<(Page, u32, u32)> {
        let mut c = self.conn.clone();
        let mut inv = scripts::READ.key(keys::config(board));
        inv.arg(match what {
            Read::Top { .. } => "top",
            Read::Player(_) => "player",
            Read::Around { .. } => "around",
            Read::Players(_) => "players",
        });
        inv.arg(season.map(Id::as_str).unwrap_or(""))
            .arg(self.clock.arg())
            .arg(scope.arg());
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
        let reply: Value = crate::metrics::script("read", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        let mut page = page_head(&r)?;
        let bucket = u32::try_from(int_at(&r, 4)?).map_err(|_| reply::bad("bucket"))?;
        let buckets = u32::try_from(int_at(&r, 5)?).map_err(|_| reply::bad("buckets"))?;
        page.entries = entries(&r[ROWS_AT..])?;
        if matches!(what, Read::Players(_)) {
            // Friends are shown as a small leaderboard of their own.
            page.entries.sort_by_key(|e| e.rank);
        }
        Ok((page, bucket, buckets))
    }

    /// Every `around` view of a flush in one `lua/read.lua` call (mode `arounds`): one page per
    /// (player, radius), in order, all at the same `seq`.
    /// `board` may be an [`Id::cell`] key: the windows are read within that bucket and season.
    pub async fn read_arounds(&self, board: &Id, views: &[(&Id, u64)]) -> AppResult<Vec<Page>> {
        let mut c = self.conn.clone();
        let (season, scope, board) = match board.cell_parts() {
            Some((b, season, n)) => (season.into_string(), n.to_string(), b),
            None => (String::new(), String::new(), board.clone()),
        };
        let mut inv = scripts::READ.key(keys::config(&board));
        inv.arg("arounds")
            .arg(season)
            .arg(self.clock.arg())
            .arg(scope);
        for (p, r) in views {
            inv.arg(p.as_str()).arg(*r);
        }
        let reply: Value = crate::metrics::script("read", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        let head = page_head(&r)?;
        let mut at = ROWS_AT;
        let mut pages = Vec::with_capacity(views.len());
        for _ in views {
            let rows = int_at(&r, at)? as usize;
            let end = at + 1 + rows * 5;
            let fields = r
                .get(at + 1..end)
                .ok_or_else(|| reply::bad("around rows"))?;
            pages.push(Page {
                entries: entries(fields)?,
                ..head.clone()
            });
            at = end;
        }
        Ok(pages)
    }

    pub async fn seasons(&self, board: &Id) -> AppResult<Vec<SeasonInfo>> {
        // The current season comes from the same rules as every read (a bucket's head: on a
        // bucketed board the whole board's may be merged from every bucket first).
        let (current, _) = self
            .read_in(
                board,
                None,
                Scope::Bucket(1),
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
        let reply: Value = scripts::publishing(&c)
            .rollover
            .key(keys::config(board))
            .arg(season.as_str())
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let s = |i: usize| {
            r.get(i)
                .and_then(reply::text)
                .ok_or_else(|| reply::bad("rollover"))
        };
        Ok((s(0)?, r.get(1).and_then(reply::int).unwrap_or(0), s(2)?))
    }

    /// Announces the board's current season to every instance (a calendar boundary passed):
    /// bumps `seq` and publishes a rollover event, so open views switch seasons.
    pub async fn announce_season(&self, board: &Id) -> AppResult<String> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::publishing(&c)
            .season_event
            .key(keys::config(board))
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        r.first()
            .and_then(reply::text)
            .ok_or_else(|| reply::bad("season event"))
    }

    /// Removes a player from the current season (the key `by` did it: the log's `by`); the
    /// season they were removed from, or `None` if they were not on it.
    pub async fn remove(&self, board: &Id, player: &Id, by: &str) -> AppResult<Option<String>> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::publishing(&c)
            .remove
            .key(keys::config(board))
            .arg(player.as_str())
            .arg(self.clock.arg())
            .arg(by)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        if r.first().and_then(reply::int) != Some(1) {
            return Ok(None);
        }
        Ok(Some(
            r.get(1)
                .and_then(reply::text)
                .ok_or_else(|| reply::bad("season"))?,
        ))
    }
}
