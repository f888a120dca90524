//! Moderation (`docs/protocol.md`, "Moderation"): bans, board deletion, the audit log paged by
//! cursor. A ban on one board is one script on that board's slot (`lua/ban.lua`,
//! `lua/unban.lua`); a ban on every board is the same script on each board plus the `sc:bans`
//! index (`lua/ban_index.lua`), which boards created later take their bans from. A ban or lift
//! on every board is recorded first as a versioned [`Intent`] (with the index, in one script),
//! then applied board by board, and resumed after a crash by the job workers
//! (`jobs::worker`). On a board the two are separate layers ([`Layer`]): neither replaces nor
//! lifts the other, and the player is banned there while either stands.

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

/// A ban or lift on every board, recorded before it is applied board by board
/// (`{sc:bans}:intents`, `lua/ban_index.lua`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Intent {
    Ban {
        v: i64,
        /// The ban record (JSON), as stored on each board.
        record: String,
    },
    Lift {
        v: i64,
        /// `*` (the layer on every board) or `+` (both layers).
        layer: String,
        /// `lifted` or `expired`.
        why: String,
        /// The name of the key that lifted it (`''`: the expiry job).
        #[serde(default)]
        by: String,
    },
}

impl Intent {
    pub fn version(&self) -> i64 {
        match self {
            Intent::Ban { v, .. } | Intent::Lift { v, .. } => *v,
        }
    }
}

/// The arguments of one lift on one board (`lua/unban.lua`).
struct UnbanStep<'a> {
    /// [`Layer::arg`].
    layer: &'a str,
    /// `lifted` or `expired`.
    why: &'a str,
    /// The expected `until_ms` (`''` = any).
    until: &'a str,
    /// The name of the key that lifted it (`''` = the expiry job).
    by: &'a str,
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
        self.ban_step(board, ban, None).await
    }

    /// [`Store::ban_on`], for a ban on every board: `version` is its intent's.
    async fn ban_step(&self, board: &Id, ban: &Ban, version: Option<i64>) -> AppResult<u64> {
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
            .arg(version.map(|v| v.to_string()).unwrap_or_default())
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
        let step = UnbanStep {
            layer: layer.arg(),
            why,
            until: &until,
            by,
        };
        self.unban_step(board, player.as_str(), step, None).await
    }

    /// [`Store::unban_on`] with the script's arguments; `version` is a lift on every board's.
    async fn unban_step(
        &self,
        board: &Id,
        player: &str,
        UnbanStep {
            layer,
            why,
            until,
            by,
        }: UnbanStep<'_>,
        version: Option<i64>,
    ) -> AppResult<bool> {
        let mut c = self.conn.clone();
        let mut inv = scripts::publishing(&c).unban.key(keys::config(board));
        inv.arg(player)
            .arg(why)
            .arg(until)
            .arg(self.clock.arg())
            .arg(layer)
            .arg(version.map(|v| v.to_string()).unwrap_or_default())
            .arg(by);
        let reply: Value = crate::metrics::script("unban", inv.invoke_async(&mut c)).await?;
        let r = reply::ok(reply)?;
        Ok(r.first().and_then(reply::int) == Some(1))
    }

    /// Bans a player from every board: the index and the intent first, in one script (so a
    /// board created meanwhile takes the ban, and a crash leaves the intent to resume), then
    /// each board ([`Store::apply_intent`]).
    pub async fn ban_everywhere(&self, ban: &Ban) -> AppResult<()> {
        let record = serde_json::to_string(ban).map_err(|_| reply::bad("ban record"))?;
        let mut c = self.conn.clone();
        let reply: Value = scripts::BAN_INDEX
            .key(keys::BANS)
            .key(keys::BAN_INTENTS)
            .arg("set")
            .arg(&ban.player)
            .arg(&record)
            .invoke_async(&mut c)
            .await?;
        let v = reply::ok(reply)?.get(1).and_then(reply::int).unwrap_or(0);
        self.apply_intent(&ban.player, &Intent::Ban { v, record })
            .await
            .map(|_| ())
    }

    /// Lifts the ban of a player on every board (the index, then each board's copy) and, for an
    /// admin's [`Lift::Lifted`], each board's own ban too (`DELETE /admin/bans/{p}` lifts every
    /// ban of the player). The intent is recorded with the index, then applied to each board
    /// ([`Store::apply_intent`]). True if any was lifted.
    pub async fn unban_everywhere(&self, player: &Id, lift: Lift) -> AppResult<bool> {
        let layer = match lift {
            Lift::Lifted { .. } => Layer::Both,
            Lift::Expired { .. } => Layer::Everywhere,
        };
        let (why, until, by) = lift.args();
        let mut c = self.conn.clone();
        let reply: Value = scripts::BAN_INDEX
            .key(keys::BANS)
            .key(keys::BAN_INTENTS)
            .arg("lift")
            .arg(player.as_str())
            .arg(until)
            .arg(layer.arg())
            .arg(why)
            .arg(by)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let v = r.get(1).and_then(reply::int).unwrap_or(0);
        if v == 0 {
            return match lift {
                // An expiry of a ban renewed or lifted meanwhile: nothing to do.
                Lift::Expired { .. } => Ok(false),
                // No ban on every board: each board's own, if any (nothing written where there is
                // none). Not the layer on every board: a ban on every board given meanwhile
                // owns it (its intent has a version; this lift has none).
                Lift::Lifted { .. } => {
                    let mut any = false;
                    for (board, _) in self.boards().await? {
                        match self
                            .unban_on(&board, player, Layer::Board, lift.clone())
                            .await
                        {
                            Ok(lifted) => any |= lifted,
                            Err(e) if e.code == ErrorCode::UnknownBoard => {}
                            Err(e) => return Err(e),
                        }
                    }
                    Ok(any)
                }
            };
        }
        let intent = Intent::Lift {
            v,
            layer: layer.arg().to_owned(),
            why: why.to_owned(),
            by: by.to_owned(),
        };
        self.apply_intent(player.as_str(), &intent).await?;
        Ok(true)
    }

    /// Applies an intent of a ban or lift on every board to each board, in board order, then
    /// drops it (unless a later intent replaced it). Every step is idempotent and a stale one
    /// changes nothing, so this may run again after a crash, or twice at once. True if a board
    /// changed.
    pub async fn apply_intent(&self, player: &str, intent: &Intent) -> AppResult<bool> {
        let ban = match intent {
            Intent::Ban { record, .. } => {
                Some(serde_json::from_str::<Ban>(record).map_err(|_| reply::bad("ban record"))?)
            }
            Intent::Lift { .. } => None,
        };
        let mut any = false;
        for (board, _) in self.boards().await? {
            let step = match (intent, &ban) {
                (Intent::Ban { v, .. }, Some(ban)) => {
                    self.ban_step(&board, ban, Some(*v)).await.map(|n| n > 0)
                }
                (Intent::Lift { v, layer, why, by }, _) => {
                    let step = UnbanStep {
                        layer,
                        why,
                        until: "",
                        by,
                    };
                    self.unban_step(&board, player, step, Some(*v)).await
                }
                _ => Ok(false),
            };
            match step {
                Ok(changed) => any |= changed,
                // Deleted meanwhile.
                Err(e) if e.code == ErrorCode::UnknownBoard => {}
                Err(e) => return Err(e),
            }
        }
        let mut c = self.conn.clone();
        let reply: Value = scripts::BAN_INDEX
            .key(keys::BANS)
            .key(keys::BAN_INTENTS)
            .arg("done")
            .arg(player)
            .arg(intent.version())
            .invoke_async(&mut c)
            .await?;
        reply::ok(reply)?;
        Ok(any)
    }

    /// The intents of bans and lifts on every board not yet applied everywhere (an instance
    /// stopped in the middle, or one applying them now).
    pub async fn pending_intents(&self) -> AppResult<Vec<(String, Intent)>> {
        let mut c = self.conn.clone();
        let raw: Vec<(String, String)> = c.hgetall(keys::BAN_INTENTS).await?;
        Ok(raw
            .into_iter()
            .filter_map(|(p, r)| serde_json::from_str(&r).ok().map(|i| (p, i)))
            .collect())
    }

    /// A board just created takes the bans on every board.
    pub async fn apply_global_bans(&self, board: &Id) -> AppResult<()> {
        for (ban, v) in self.global_bans_versioned().await? {
            self.ban_step(board, &ban, v).await?;
        }
        Ok(())
    }

    /// Bans on every board (`sc:bans`).
    pub async fn global_bans(&self) -> AppResult<Vec<Ban>> {
        Ok(self
            .global_bans_versioned()
            .await?
            .into_iter()
            .map(|(b, _)| b)
            .collect())
    }

    /// Bans on every board with their versions (`#<player>` in `sc:bans`).
    async fn global_bans_versioned(&self) -> AppResult<Vec<(Ban, Option<i64>)>> {
        let mut c = self.conn.clone();
        let raw: std::collections::HashMap<String, String> = c.hgetall(keys::BANS).await?;
        Ok(raw
            .iter()
            .filter(|(f, _)| !f.starts_with('#'))
            .filter_map(|(f, r)| {
                let ban: Ban = serde_json::from_str(r).ok()?;
                let v = raw.get(&format!("#{f}")).and_then(|v| v.parse().ok());
                Some((ban, v))
            })
            .collect())
    }

    /// Every ban: those on every board, then each board's own (sorted by board, player).
    pub async fn bans(&self) -> AppResult<Vec<Ban>> {
        let mut out = self.global_bans().await?;
        out.sort_by(|a, b| a.player.cmp(&b.player));
        let boards = self.boards().await?;
        if boards.is_empty() {
            return Ok(out);
        }
        // Concurrent HVALS, which the multiplexed connection pipelines (not one pipeline: on a
        // cluster each board's key lives in its own slot, each read is routed to its node).
        let c = self.conn.clone();
        let per_board: Vec<Vec<String>> =
            futures_util::future::try_join_all(boards.iter().map(|(board, _)| {
                let mut c = c.clone();
                async move { c.hvals::<_, Vec<String>>(keys::bans(board)).await }
            }))
            .await?;
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
