//! Leagues (`docs/protocol.md`, "Leagues"): an ordered list of tier boards, each bucketed, whose
//! buckets' top players move up a tier and bottom players down at each season's end. The
//! league's own keys (`keys::league`) live in its slot; each tier board's placements
//! (`keys::placed`) in the board's, written by one script per board (`lua/league_apply.lua`), so
//! every script touches one slot on a cluster.

use redis::{AsyncCommands, Value};
use scorecast_shared::{BoardConfig, ErrorCode, Id, LeagueTier, Reset, BUCKET_SIZES};
use serde::{Deserialize, Serialize};

use super::Store;
use crate::error::{AppError, AppResult};
use crate::{keys, reply, scripts};

/// The most tiers a league has.
pub const MAX_TIERS: usize = 20;

fn default_keep() -> u32 {
    4
}

/// A league as `PUT /admin/leagues/{l}` configures it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeagueConfig {
    /// The tier boards, lowest first (2–20 distinct board ids). New players enter the first.
    pub tiers: Vec<String>,
    /// Rivals per bucket on every tier (2–1000).
    pub bucket_size: u32,
    /// How many of each bucket's top players move up a tier at a season's end (the top tier's
    /// stay).
    pub promote: u32,
    /// How many of each bucket's bottom players move down a tier (the lowest tier's stay).
    pub relegate: u32,
    /// The seasons' calendar: `daily`, `weekly` or `monthly`.
    pub reset: Reset,
    /// Past seasons each tier board keeps (1–1000, default 4): the ended season must still be
    /// readable when its moves are computed.
    #[serde(default = "default_keep")]
    pub keep_seasons: u32,
    /// The configuration a tier board gets when the league creates it (order, op, limits, …);
    /// default the board defaults. A tier board that exists keeps its own, with the league's
    /// settings above applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardConfig>,
}

impl LeagueConfig {
    /// Checks the fields; the message says what to change.
    pub fn validate(&self) -> Result<Vec<Id>, String> {
        if !(2..=MAX_TIERS).contains(&self.tiers.len()) {
            return Err(format!("a league has 2..={MAX_TIERS} tiers"));
        }
        let tiers = self
            .tiers
            .iter()
            .map(|t| Id::parse(t).map_err(|e| format!("tier {t:?}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let distinct: std::collections::HashSet<&Id> = tiers.iter().collect();
        if distinct.len() != tiers.len() {
            return Err("the tiers must be distinct boards".into());
        }
        if !BUCKET_SIZES.contains(&self.bucket_size) {
            return Err(format!(
                "bucket_size must be {}..={}",
                BUCKET_SIZES.start(),
                BUCKET_SIZES.end()
            ));
        }
        if self.promote == 0 && self.relegate == 0 {
            return Err("promote and relegate are both 0: nobody would ever move".into());
        }
        if self.promote + self.relegate > self.bucket_size {
            return Err(format!(
                "promote + relegate ({}) must be at most bucket_size ({})",
                self.promote + self.relegate,
                self.bucket_size
            ));
        }
        if self.reset == Reset::Never {
            return Err("a league needs a calendar: reset daily, weekly or monthly".into());
        }
        if !(1..=1000).contains(&self.keep_seasons) {
            return Err("keep_seasons must be 1..=1000".into());
        }
        Ok(tiers)
    }

    /// The config of tier `i` of league `league` (`board`: the one it has now, if any).
    fn tier_config(&self, league: &Id, i: usize, board: Option<BoardConfig>) -> BoardConfig {
        let mut cfg = board.unwrap_or_else(|| self.board.clone().unwrap_or_default());
        cfg.bucket_size = Some(self.bucket_size);
        cfg.reset = self.reset;
        cfg.keep_seasons = cfg.keep_seasons.max(self.keep_seasons);
        cfg.league = Some(LeagueTier {
            league: league.to_string(),
            tier: i as u32,
            entry: self.tiers[0].clone(),
        });
        cfg
    }
}

/// One player's move at a season's end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Move {
    pub player: String,
    /// The tier board they played on in the ended season, and its tier (0 = lowest).
    pub from: String,
    pub from_tier: u32,
    /// The tier board they play on from the next season.
    pub to: String,
    pub to_tier: u32,
    /// `up` or `down`.
    pub direction: String,
    /// Their bucket and rank in it in the ended season.
    pub bucket: u32,
    pub rank: u64,
}

/// The record of one season's moves (`keys::league(l, "moves:<season>")`), computed once from
/// the frozen standings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Moves {
    pub league: String,
    pub season: String,
    /// When they were computed (ms).
    pub computed_ms: i64,
    /// When they were applied to every tier (absent: not yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_ms: Option<i64>,
    pub moves: Vec<Move>,
}

impl Store {
    /// Creates or changes league `league`: every tier board is created (from `cfg.board`) or
    /// changed (bucket_size, reset, keep_seasons and its place in the league), then the league
    /// itself is stored. Refused before anything is written: `bad_request` (the config), and
    /// `conflict` (a tier board of another league; other tiers than the league has).
    /// Returns whether the league was created.
    pub async fn put_league(&self, league: &Id, cfg: &LeagueConfig) -> AppResult<bool> {
        let tiers = cfg.validate().map_err(AppError::bad_request)?;
        let existing = self.league(league).await;
        let created = match existing {
            Ok(old) if old.tiers != cfg.tiers => {
                return Err(AppError::new(
                    ErrorCode::Conflict,
                    format!(
                        "league {league} has tiers {:?}: its tiers cannot change",
                        old.tiers
                    ),
                ))
            }
            Ok(_) => false,
            Err(e) if e.code == ErrorCode::NotFound => true,
            Err(e) => return Err(e),
        };
        let mut configs = Vec::with_capacity(tiers.len());
        for (i, id) in tiers.iter().enumerate() {
            let current = match self.board(id).await {
                Ok(c) => Some(c),
                Err(e) if e.code == ErrorCode::UnknownBoard => None,
                Err(e) => return Err(e),
            };
            if let Some(other) = current
                .as_ref()
                .and_then(|c| c.league.as_ref())
                .filter(|t| t.league != league.as_str())
            {
                return Err(AppError::new(
                    ErrorCode::Conflict,
                    format!("board {id} is a tier of league {}", other.league),
                ));
            }
            let tier = cfg.tier_config(league, i, current);
            tier.validate()
                .map_err(|e| AppError::bad_request(format!("tier {id} (board config): {e}")))?;
            configs.push(tier);
        }
        for (id, tier) in tiers.iter().zip(&configs) {
            self.put_board(id, tier).await?;
        }
        let json = serde_json::to_string(cfg).map_err(|e| AppError::bad_request(e.to_string()))?;
        let mut c = self.conn.clone();
        let _: () = c.set(keys::league(league, "config"), json).await?;
        let _: () = c.sadd(keys::LEAGUES, league.as_str()).await?;
        Ok(created)
    }

    /// League `league`'s configuration, or `not_found`.
    pub async fn league(&self, league: &Id) -> AppResult<LeagueConfig> {
        let mut c = self.conn.clone();
        let raw: Option<String> = c.get(keys::league(league, "config")).await?;
        let raw =
            raw.ok_or_else(|| AppError::new(ErrorCode::NotFound, format!("no league {league}")))?;
        serde_json::from_str(&raw).map_err(|_| reply::bad("league config"))
    }

    /// Every league, by id.
    pub async fn leagues(&self) -> AppResult<Vec<(Id, LeagueConfig)>> {
        let mut c = self.conn.clone();
        let mut ids: Vec<String> = c.smembers(keys::LEAGUES).await?;
        ids.sort();
        let mut out = Vec::new();
        for id in ids.iter().filter_map(|i| Id::parse(i).ok()) {
            match self.league(&id).await {
                Ok(cfg) => out.push((id, cfg)),
                Err(e) if e.code == ErrorCode::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The standings of every bucket of `season` on tier board `board`
    /// (`lua/league_standings.lua`): bucket n's players in rank order at index n − 1.
    pub async fn bucket_standings(&self, board: &Id, season: &str) -> AppResult<Vec<Vec<String>>> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::LEAGUE_STANDINGS
            .key(keys::config(board))
            .arg(season)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let bad = || reply::bad("bucket standings");
        let n = r.first().and_then(reply::int).ok_or_else(bad)? as usize;
        let mut at = 1;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let count = r.get(at).and_then(reply::int).ok_or_else(bad)? as usize;
            let players = r
                .get(at + 1..at + 1 + count)
                .ok_or_else(bad)?
                .iter()
                .map(reply::text)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?;
            out.push(players);
            at += 1 + count;
        }
        Ok(out)
    }

    /// The stored moves of `season` of `league` (JSON, as [`Store::record_moves`] stored them).
    pub async fn moves(&self, league: &Id, season: &str) -> AppResult<Option<Moves>> {
        let mut c = self.conn.clone();
        let (raw, closed): (Option<String>, Option<i64>) = redis::cmd("MGET")
            .arg(keys::league(league, &format!("moves:{season}")))
            .arg(keys::league(league, &format!("closed:{season}")))
            .query_async(&mut c)
            .await?;
        let Some(raw) = raw else { return Ok(None) };
        let mut moves: Moves = serde_json::from_str(&raw).map_err(|_| reply::bad("moves"))?;
        moves.closed_ms = closed;
        Ok(Some(moves))
    }

    /// Stores `moves` as the moves of their season unless some are stored already (SET NX);
    /// returns the stored ones (the first computed win: a re-run applies the same).
    pub async fn record_moves(&self, league: &Id, moves: &Moves) -> AppResult<Moves> {
        let json =
            serde_json::to_string(moves).map_err(|e| AppError::bad_request(e.to_string()))?;
        let mut c = self.conn.clone();
        let key = keys::league(league, &format!("moves:{}", moves.season));
        let _: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(json)
            .arg("NX")
            .query_async(&mut c)
            .await?;
        self.moves(league, &moves.season)
            .await?
            .ok_or_else(|| reply::bad("moves"))
    }

    /// Applies `moves` (player, the board they play on now) to tier board `board` for the end of
    /// `season` (`lua/league_apply.lua`), once: whether this call applied them.
    pub async fn apply_moves(
        &self,
        board: &Id,
        season: &str,
        next_season: &str,
        moves: &[(&str, &str)],
    ) -> AppResult<bool> {
        let json =
            serde_json::to_string(moves).map_err(|e| AppError::bad_request(e.to_string()))?;
        let mut c = self.conn.clone();
        let reply: Value = scripts::publishing(&c)
            .league_apply
            .key(keys::config(board))
            .arg(season)
            .arg(next_season)
            .arg(json)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        Ok(r.first().and_then(reply::int) == Some(1))
    }

    /// Marks the moves of `season` applied to every tier (SET NX: the first time stays).
    pub async fn mark_closed(&self, league: &Id, season: &str, now_ms: i64) -> AppResult<()> {
        let mut c = self.conn.clone();
        let _: Option<String> = redis::cmd("SET")
            .arg(keys::league(league, &format!("closed:{season}")))
            .arg(now_ms)
            .arg("NX")
            .query_async(&mut c)
            .await?;
        Ok(())
    }

    /// The tier board each of `tiers` says `player` plays on (`keys::placed`), in order.
    pub async fn placements(&self, tiers: &[Id], player: &Id) -> AppResult<Vec<Option<String>>> {
        let c = self.conn.clone();
        futures_util::future::try_join_all(tiers.iter().map(|t| {
            let mut c = c.clone();
            async move {
                c.hget::<_, _, Option<String>>(keys::placed(t), player.as_str())
                    .await
            }
        }))
        .await
        .map_err(Into::into)
    }
}
