//! Moderation (`docs/protocol.md`, "Moderation"): bans, board deletion, the audit log paged by
//! cursor. A ban on one board is one script on that board's slot (`lua/ban.lua`,
//! `lua/unban.lua`); a ban on every board is the same script on each board plus the `sc:bans`
//! index (`lua/ban_index.lua`), which boards created later take their bans from. On a board the
//! two are separate layers ([`Layer`]): neither replaces nor lifts the other, and the player is
//! banned there while either stands.

use redis::{AsyncCommands, Value};
use scorecast_shared::{ErrorCode, Id};
use serde::{Deserialize, Serialize};

use super::Store;
use crate::error::AppResult;
use crate::{keys, reply, scripts};

/// A ban, as stored (`lb:{<board>}:bans`, `sc:bans`) and as the admin API returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ban {
    pub player: String,
    /// The board; `null` for a ban on every board.
    pub board: Option<String>,
    pub reason: Option<String>,
    /// When the ban lifts itself (ms since the epoch); `null` = until lifted.
    pub until_ms: Option<i64>,
    /// When it was placed (ms since the epoch).
    pub at_ms: i64,
    /// The name of the key that placed it (absent on bans placed before keys had names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Which of a board's two ban layers a script touches (`lua/ban.lua`, `lua/unban.lua`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// The board's own ban.
    Board,
    /// The board's copy of a ban on every board.
    Everywhere,
    /// Both (lifting only: an admin lifting every ban of the player).
    Both,
}

impl Layer {
    fn arg(self) -> &'static str {
        match self {
            Layer::Board => "",
            Layer::Everywhere => "*",
            Layer::Both => "+",
        }
    }
}

/// Why a ban ends (written to the audit log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lift {
    /// An admin lifted it, with the key named here.
    Lifted { by: String },
    /// The `ban.lift` job at `until_ms`; only the ban with that `until_ms` is lifted, so a ban
    /// renewed meanwhile stays.
    Expired { until_ms: i64 },
}

impl Lift {
    /// Why, the expected `until_ms` (`''` = any), and who (`''` = the expiry job).
    fn args(&self) -> (&'static str, String, &str) {
        match self {
            Lift::Lifted { by } => ("lifted", String::new(), by),
            Lift::Expired { until_ms } => ("expired", until_ms.to_string(), ""),
        }
    }
}

fn decode_bans(raw: Vec<String>) -> Vec<Ban> {
    raw.iter()
        .filter_map(|r| serde_json::from_str(r).ok())
        .collect()
}

impl Store {
    /// Bans `ban.player` from `board` (`lua/ban.lua`). Returns how many season entries are now
    /// held.
    pub async fn ban_on(&self, board: &Id, ban: &Ban) -> AppResult<u64> {
        let record = serde_json::to_string(ban).map_err(|_| reply::bad("ban record"))?;
        let mut c = self.conn.clone();
        let mut inv = scripts::publishing(&c).ban.key(keys::config(board));
        inv.arg(&ban.player)
            .arg(record)
            .arg(ban.reason.as_deref().unwrap_or(""))
            .arg(ban.until_ms.map(|t| t.to_string()).unwrap_or_default())
            .arg(self.clock.arg())
            .arg(match ban.board {
                Some(_) => Layer::Board.arg(),
                None => Layer::Everywhere.arg(),
            })
            .arg(ban.by.as_deref().unwrap_or(""));
        let reply: Value = crate::metrics::script("ban", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        Ok(r.first().and_then(reply::int).unwrap_or(0) as u64)
    }

    /// Lifts `layer` of the ban of `player` on `board` (`lua/unban.lua`); false if there was
    /// none (or, for [`Lift::Expired`], it was renewed). The held entries come back once no
    /// layer is left.
    pub async fn unban_on(
        &self,
        board: &Id,
        player: &Id,
        layer: Layer,
        lift: Lift,
    ) -> AppResult<bool> {
        let (why, until, by) = lift.args();
        let mut c = self.conn.clone();
        let mut inv = scripts::publishing(&c).unban.key(keys::config(board));
        inv.arg(player.as_str())
            .arg(why)
            .arg(until)
            .arg(self.clock.arg())
            .arg(layer.arg())
            .arg(by);
        let reply: Value = crate::metrics::script("unban", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        Ok(r.first().and_then(reply::int) == Some(1))
    }

    /// Bans a player from every board: the index first (so a board created meanwhile takes
    /// it), then each board.
    pub async fn ban_everywhere(&self, ban: &Ban) -> AppResult<()> {
        let record = serde_json::to_string(ban).map_err(|_| reply::bad("ban record"))?;
        let mut c = self.conn.clone();
        let reply: Value = scripts::BAN_INDEX
            .key(keys::BANS)
            .arg("set")
            .arg(&ban.player)
            .arg(record)
            .invoke_async(&mut c)
            .await?;
        reply::ok(reply)?;
        for (board, _) in self.boards().await? {
            match self.ban_on(&board, ban).await {
                // Deleted meanwhile.
                Err(e) if e.code == ErrorCode::UnknownBoard => {}
                r => {
                    r?;
                }
            }
        }
        Ok(())
    }

    /// Lifts the ban of a player on every board (the index, then each board's copy) and, for an
    /// admin's [`Lift::Lifted`], each board's own ban too (`DELETE /admin/bans/{p}` lifts every
    /// ban of the player). True if any was lifted.
    pub async fn unban_everywhere(&self, player: &Id, lift: Lift) -> AppResult<bool> {
        let layer = match lift {
            Lift::Lifted { .. } => Layer::Both,
            Lift::Expired { .. } => Layer::Everywhere,
        };
        let mut c = self.conn.clone();
        let reply: Value = scripts::BAN_INDEX
            .key(keys::BANS)
            .arg("lift")
            .arg(player.as_str())
            .arg(lift.args().1)
            .invoke_async(&mut c)
            .await?;
        let mut any = reply::ok(reply)?.first().and_then(reply::int) == Some(1);
        for (board, _) in self.boards().await? {
            match self.unban_on(&board, player, layer, lift.clone()).await {
                Ok(lifted) => any |= lifted,
                Err(e) if e.code == ErrorCode::UnknownBoard => {}
                Err(e) => return Err(e),
            }
        }
        Ok(any)
    }

    /// A board just created takes the bans on every board.
    pub async fn apply_global_bans(&self, board: &Id) -> AppResult<()> {
        for ban in self.global_bans().await? {
            self.ban_on(board, &ban).await?;
        }
        Ok(())
    }

    /// Bans on every board (`sc:bans`).
    pub async fn global_bans(&self) -> AppResult<Vec<Ban>> {
        let mut c = self.conn.clone();
        let raw: Vec<String> = c.hvals(keys::BANS).await?;
        Ok(decode_bans(raw))
    }

    /// Every ban: those on every board, then each board's own (sorted by board, player).
    pub async fn bans(&self) -> AppResult<Vec<Ban>> {
        let mut out = self.global_bans().await?;
        out.sort_by(|a, b| a.player.cmp(&b.player));
        let boards = self.boards().await?;
        if boards.is_empty() {
            return Ok(out);
        }
        let mut pipe = redis::pipe();
        for (board, _) in &boards {
            pipe.hvals(keys::bans(board));
        }
        let mut c = self.conn.clone();
        let per_board: Vec<Vec<String>> = pipe.query_async(&mut c).await?;
        for raw in per_board {
            let mut bans: Vec<Ban> = decode_bans(raw)
                .into_iter()
                // A ban on every board is listed once, above.
                .filter(|b| b.board.is_some())
                .collect();
            bans.sort_by(|a, b| a.player.cmp(&b.player));
            out.extend(bans);
        }
        Ok(out)
    }

    /// Deletes a board and every key of it (`lua/board_delete.lua`), then its index entry.
    pub async fn delete_board(&self, board: &Id) -> AppResult<u64> {
        let mut c = self.conn.clone();
        let inv = scripts::BOARD_DELETE.key(keys::config(board));
        let reply: Value = crate::metrics::script("board_delete", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        let _: () = c.srem(keys::BOARDS, board.as_str()).await?;
        Ok(r.first().and_then(reply::int).unwrap_or(0) as u64)
    }
}
