//! Tournaments (`docs/protocol.md`, "Tournaments"): joining (`lua/join.lua`), freezing an
//! occurrence's final standings (`lua/tournament_end.lua`) and reading them (`lua/read.lua`,
//! mode `final`), each one script on the board's slot. The refusals of submissions and runs live in the scripts that make them
//! (`lua/submit.lua`, `lua/run_start.lua`), so each check and its write are one atomic step.

use redis::Value;
use scorecast_shared::{BoardConfig, Id};
use serde::Serialize;

use super::{entries, page_head, Page, Store, ROWS_AT};
use crate::error::AppResult;
use crate::{keys, reply, scripts};

/// A board's tournament now ([`Store::tournament_info`]).
pub struct TournamentInfo {
    /// Redis's clock.
    pub now_ms: i64,
    /// The current occurrence.
    pub season: String,
    /// Players who entered it.
    pub entrants: u64,
    /// When its final standings were frozen (`None`: not yet).
    pub ended_ms: Option<i64>,
    pub config: BoardConfig,
}

/// A player's entry in one occurrence (season) of a board's tournament.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Joined {
    pub board: String,
    pub season: String,
    pub player: String,
    /// When the player entered (ms since the epoch): the same on every join again.
    pub joined_ms: i64,
}

/// One entrant of a tournament's occurrence ([`Store::tournament_entrants`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Entrant {
    pub player: String,
    /// When the player entered (ms since the epoch).
    pub joined_ms: i64,
    /// Attempts made (accepted submissions; on a verified board, started runs).
    pub attempts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A page of a tournament occurrence's entrants, in the order they entered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EntrantsPage {
    pub board: String,
    pub season: String,
    /// Players who entered this occurrence.
    pub total: u64,
    pub entries: Vec<Entrant>,
}

impl Store {
    /// Enters `player` in the current occurrence of the board's tournament; a player who
    /// entered already gets the same answer and nothing changes. Refused: `unknown_board`,
    /// `bad_request` (no tournament), `ended`, `full`.
    pub async fn join(&self, board: &Id, player: &Id) -> AppResult<Joined> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::JOIN
            .key(keys::config(board))
            .arg(player.as_str())
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        Ok(Joined {
            board: board.to_string(),
            season: r
                .first()
                .and_then(reply::text)
                .ok_or_else(|| reply::bad("join"))?,
            player: player.to_string(),
            joined_ms: r
                .get(1)
                .and_then(reply::int)
                .ok_or_else(|| reply::bad("join"))?,
        })
    }

    /// Freezes the final standings of season `season` of the board's tournament (`None`: the
    /// current season), once: returns the season and whether this call froze them (`false`:
    /// they already were, and nothing changed).
    pub async fn end_tournament(
        &self,
        board: &Id,
        season: Option<&str>,
    ) -> AppResult<(String, bool)> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::publishing(&c)
            .tournament_end
            .key(keys::config(board))
            .arg(season.unwrap_or(""))
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let season = r
            .first()
            .and_then(reply::text)
            .ok_or_else(|| reply::bad("tournament end"))?;
        Ok((season, r.get(1).and_then(reply::int) == Some(1)))
    }

    /// Tells the board's subscribers that its tournament's occurrence `(start_ms, end_ms)`
    /// `started` or is `ending_soon` (`lua/tournament_event.lua`); returns the season.
    pub async fn tournament_event(
        &self,
        board: &Id,
        event: &str,
        start_ms: i64,
        end_ms: i64,
    ) -> AppResult<String> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::publishing(&c)
            .tournament_event
            .key(keys::config(board))
            .arg(event)
            .arg(self.clock.arg())
            .arg(start_ms)
            .arg(end_ms)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        r.first()
            .and_then(reply::text)
            .ok_or_else(|| reply::bad("tournament event"))
    }

    /// The board's tournament now, with the board's configuration, in one script call
    /// (`unknown_board`; `not_found` on a board without a tournament).
    pub async fn tournament_info(&self, board: &Id) -> AppResult<TournamentInfo> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::TOURNAMENT_INFO
            .key(keys::config(board))
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let bad = || reply::bad("tournament");
        let int = |i: usize| r.get(i).and_then(reply::int).ok_or_else(bad);
        let text = |i: usize| r.get(i).and_then(reply::text).ok_or_else(bad);
        let ended = int(3)?;
        Ok(TournamentInfo {
            now_ms: int(0)?,
            season: text(1)?,
            entrants: int(2)? as u64,
            ended_ms: (ended >= 0).then_some(ended),
            config: serde_json::from_str(&text(4)?).map_err(|_| reply::bad("board config"))?,
        })
    }

    /// A page of the entrants of season `season` of the board's tournament (`None`: the current
    /// occurrence), in the order they entered, with their attempts and names, in one script call
    /// (`unknown_board`; `not_found` without a tournament; `unknown_season`).
    pub async fn tournament_entrants(
        &self,
        board: &Id,
        season: Option<&Id>,
        offset: u64,
        limit: u64,
    ) -> AppResult<EntrantsPage> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::TOURNAMENT_ENTRANTS
            .key(keys::config(board))
            .arg(season.map(Id::as_str).unwrap_or(""))
            .arg(self.clock.arg())
            .arg(offset)
            .arg(limit)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let bad = || reply::bad("tournament entrants");
        let season = r.first().and_then(reply::text).ok_or_else(bad)?;
        let total = r.get(1).and_then(reply::int).ok_or_else(bad)?;
        let rows = r.get(2..).unwrap_or_default();
        if rows.len() % 4 != 0 {
            return Err(bad());
        }
        let entries = rows
            .chunks(4)
            .map(|e| {
                Ok(Entrant {
                    player: reply::text(&e[0]).ok_or_else(bad)?,
                    joined_ms: reply::int(&e[1]).ok_or_else(bad)?,
                    attempts: reply::int(&e[2]).ok_or_else(bad)?.max(0) as u64,
                    name: reply::text(&e[3]).filter(|n| !n.is_empty()),
                })
            })
            .collect::<AppResult<Vec<_>>>()?;
        Ok(EntrantsPage {
            board: board.to_string(),
            season,
            total: total.max(0) as u64,
            entries,
        })
    }

    /// A page of the frozen final standings of season `season` (`None`: the last frozen);
    /// `not_found` until that tournament has ended.
    pub async fn read_final(
        &self,
        board: &Id,
        season: Option<&Id>,
        offset: u64,
        limit: u64,
    ) -> AppResult<Page> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::READ
            .key(keys::config(board))
            .arg("final")
            .arg(season.map(Id::as_str).unwrap_or(""))
            .arg(self.clock.arg())
            .arg("")
            .arg(offset)
            .arg(limit)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let mut page = page_head(&r)?;
        page.entries = entries(&r[ROWS_AT..])?;
        Ok(page)
    }
}
