//! A board's change events, as `publish_change` in `lua/lib.lua` writes them on `ev:{<board>}`,
//! and what each one makes dirty.
//!
//! Shape (one for every script that changes a board): `{"board", "season", "seq", "changes":
//! [{"player", "score", "rank", "previous_rank"[, "name"]}, ...]}` for score changes (ranks 1-based,
//! `null` = not on the board), `{"board", "season", "seq", "rollover": true}` when a season
//! ended, `{"board", "season", "seq", "tournament": {...}}` for a tournament event (no score
//! changed; pushed as it comes to every session with a view of the board).
//!
//! On a bucketed board each change also names its `bucket`, and its ranks are within that
//! bucket: each bucket's views are kept in a cell of their own (`Id::cell`), which gets the
//! changes of its bucket; an event that names no player (a new season, a tournament's) goes to
//! every bucket cell of the board.

use scorecast_shared::{Entry, Id, ServerMsg};
use serde::Deserialize;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::board::{Board, BoardCell};
use super::derive::Move;
use super::{Inner, SessionId};

/// Moves kept for derivation between two flushes at most; past this the standings are read.
const MAX_PENDING_MOVES: usize = 200_000;

#[derive(Deserialize)]
pub(super) struct Event {
    pub season: String,
    pub seq: u64,
    #[serde(default)]
    pub changes: Vec<Change>,
    #[serde(default)]
    pub rollover: bool,
    #[serde(default)]
    pub tournament: Option<TournamentEvent>,
}

/// A tournament's `started`, `ending_soon` or `ended` (`tournament_publish` in `lua/lib.lua`).
#[derive(Deserialize)]
pub(super) struct TournamentEvent {
    event: String,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    total: Option<u64>,
    standings: Option<Vec<Entry>>,
    /// With `ended`: player -> final rank, for the first 1000.
    #[serde(default)]
    ranks: std::collections::HashMap<String, u64>,
}

/// One player's move.
#[derive(Deserialize, Default)]
pub(super) struct Change {
    #[serde(default)]
    pub player: Option<String>,
    #[serde(default)]
    pub score: Option<i64>,
    #[serde(default)]
    pub rank: Option<u64>,
    #[serde(default)]
    pub previous_rank: Option<u64>,
    /// The display name the submission recorded (absent: none given).
    #[serde(default)]
    pub name: Option<String>,
    /// A bucketed board: the player's bucket (the ranks are within it).
    #[serde(default)]
    pub bucket: Option<u32>,
}

impl Change {
    /// The move this change describes (`None`: it names no valid player).
    pub fn to_move(&self) -> Option<Move> {
        Some(Move {
            player: Id::parse(self.player.as_deref()?).ok()?,
            score: self.score,
            rank: self.rank,
            previous_rank: self.previous_rank,
            name: self.name.clone(),
        })
    }
}

impl Inner {
    /// An event arrived for `board` (the channel's name, unchecked).
    pub(super) fn on_event(&self, board: &str, payload: &[u8]) {
        let Ok(board) = Id::parse(board) else { return };
        let ev = serde_json::from_slice::<Event>(payload);
        // A tournament event names each session's player's final rank: the players are read
        // (one session shard at a time, before any board's lock) only for such a rare event.
        let players = match &ev {
            Ok(Event {
                tournament: Some(_),
                ..
            }) => self.session_players(),
            _ => HashMap::new(),
        };
        if let Some(cell) = self.cell(&board) {
            let mut b = cell.lock();
            match &ev {
                Ok(Event {
                    season,
                    tournament: Some(t),
                    ..
                }) => b.push_tournament(&board, season, t, &players),
                Ok(ev) => b.note_event(&board, ev),
                Err(_) => {
                    tracing::warn!(%board, "unreadable change event; recomputing the board's views");
                    b.mark_all_dirty();
                }
            }
        }
        if let Ok(ev) = &ev {
            self.to_buckets(&board, ev, &players);
        }
    }

    /// The player of each session that said `hello`.
    fn session_players(&self) -> HashMap<SessionId, Id> {
        let mut players = HashMap::new();
        self.sessions.each(|id, s| {
            if let Some(p) = &s.player {
                players.insert(*id, p.clone());
            }
        });
        players
    }

    /// Hands a bucketed board's event to its buckets' cells (see the module's doc).
    fn to_buckets(&self, board: &Id, ev: &Event, players: &HashMap<SessionId, Id>) {
        if ev.changes.is_empty() {
            let mut cells: Vec<Arc<BoardCell>> = Vec::new();
            self.boards.each(|k, c| {
                if k.cell_parts().is_some() && k.board_part() == board.as_str() {
                    cells.push(c.clone());
                }
            });
            for cell in cells {
                let mut b = cell.lock();
                match &ev.tournament {
                    Some(t) => b.push_tournament(board, &ev.season, t, players),
                    None => b.note_event(board, ev),
                }
            }
            return;
        }
        if ev.changes.iter().all(|c| c.bucket.is_none()) {
            return;
        }
        let Ok(season) = Id::parse(&ev.season) else {
            return;
        };
        let mut by_bucket: BTreeMap<u32, Vec<Change>> = BTreeMap::new();
        for c in &ev.changes {
            let Some(n) = c.bucket else { continue };
            by_bucket.entry(n).or_default().push(Change {
                player: c.player.clone(),
                name: c.name.clone(),
                ..*c
            });
        }
        for (n, changes) in by_bucket {
            let Some(cell) = self.cell(&Id::cell(board, &season, n)) else {
                continue;
            };
            let bucket_ev = Event {
                season: ev.season.clone(),
                seq: ev.seq,
                changes,
                rollover: false,
                tournament: None,
            };
            cell.lock().note_event(board, &bucket_ev);
        }
    }
}

impl Board {
    /// Pushes a tournament event to each session with a view of the board, once, with the
    /// session's player's final rank when the event has it: the player the session said `hello`
    /// as (`players`), whenever its views were subscribed.
    fn push_tournament(
        &self,
        board: &Id,
        season: &str,
        t: &TournamentEvent,
        players: &HashMap<SessionId, Id>,
    ) {
        let mut sent = std::collections::HashSet::new();
        for ((session, _), sub) in &self.subs {
            if !sent.insert(*session) {
                continue;
            }
            let rank = players
                .get(session)
                .or(sub.player.as_ref())
                .and_then(|p| t.ranks.get(p.as_str()));
            let msg = ServerMsg::Tournament {
                board: board.to_string(),
                season: season.to_owned(),
                event: t.event.clone(),
                start_ms: t.start_ms,
                end_ms: t.end_ms,
                total: t.total,
                standings: t.standings.clone(),
                rank: rank.copied(),
            };
            sub.outbox
                .offer(actix_ws::Message::Text(msg.to_json().into()));
        }
    }

    /// Records what `ev` changed and wakes the board's worker.
    pub(super) fn note_event(&mut self, board: &Id, ev: &Event) {
        if ev.seq < self.last_event_seq {
            tracing::warn!(%board, seq = ev.seq, last = self.last_event_seq, "seq went backwards: Redis lost its data; resyncing");
            self.mark_resync();
            self.last_event_seq = ev.seq;
            return;
        }
        if self.last_event_seq != 0 && ev.seq > self.last_event_seq + 1 {
            // An event was lost (pub/sub is at-most-once): derived standings are stale.
            self.forget_standings();
        }
        self.last_event_seq = ev.seq;
        self.high_seq = self.high_seq.max(ev.seq);
        self.dirty.any = true;
        // A calendar board's new season starts with its first submission, without a rollover
        // event: every view's `season` changes, so everything is recomputed.
        let new_season = self.season.as_deref().is_some_and(|s| s != ev.season);
        if ev.rollover || new_season {
            self.dirty.full = true;
            self.me.clear();
            self.pending.clear();
            self.pending_seqs.clear();
        } else {
            if self.pending.len() > MAX_PENDING_MOVES {
                // The worker is not keeping up (or Redis is down): read instead of deriving.
                self.forget_standings();
            }
            self.pending_seqs.push((ev.seq, self.pending.len()));
            let mut known = 0;
            let d = &mut self.dirty;
            for c in &ev.changes {
                let Some(m) = c.to_move() else {
                    continue;
                };
                // Ranks between the old and the new place moved by one; `None` is past the end
                // (joined, or removed). Within a batch, the first change that moves a player
                // starts from the rank the hub knows, so the union of ranges is enough.
                let (new, old) = (
                    c.rank.unwrap_or(u64::MAX),
                    c.previous_rank.unwrap_or(u64::MAX),
                );
                d.ranges.push((new.min(old), new.max(old)));
                d.total_changed |= c.rank.is_none() || c.previous_rank.is_none();
                d.players.insert(m.player.clone());
                self.pending.push(m);
                known += 1;
            }
            // An event that names nobody: recompute everything rather than guess.
            d.full |= known == 0;
        }
        self.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::Notify;

    use super::*;

    fn event(json: &str) -> Event {
        serde_json::from_str(json).expect("a test fixture")
    }

    #[test]
    fn batched_and_rollover_events_parse() {
        let batch = event(
            r#"{"board":"b","season":"all","seq":5,"changes":[{"player":"a","score":1,"rank":2,"previous_rank":null}]}"#,
        );
        assert_eq!(batch.seq, 5);
        assert_eq!(batch.changes[0].player.as_deref(), Some("a"));
        assert_eq!(batch.changes[0].previous_rank, None);
        let roll = event(r#"{"board":"b","season":"s2","seq":6,"rollover":true}"#);
        assert!(roll.rollover && roll.changes.is_empty());
    }

    #[test]
    fn a_move_marks_the_ranks_between_and_a_removal_the_total() {
        let id = Id::parse("b").expect("a valid id");
        let mut b = Board::new(Arc::new(Notify::new()));
        b.note_event(
            &id,
            &event(r#"{"board":"b","season":"all","seq":3,"changes":[{"player":"a","score":9,"rank":2,"previous_rank":7}]}"#),
        );
        assert_eq!(b.dirty.ranges, vec![(2, 7)]);
        assert!(!b.dirty.total_changed && !b.dirty.full);
        b.note_event(
            &id,
            &event(r#"{"board":"b","season":"all","seq":4,"changes":[{"player":"c","score":null,"rank":null,"previous_rank":5}]}"#),
        );
        assert_eq!(b.dirty.ranges[1], (5, u64::MAX));
        assert!(b.dirty.total_changed);
        assert_eq!((b.high_seq, b.last_event_seq), (4, 4));
    }

    #[test]
    fn seq_going_backwards_resyncs() {
        let id = Id::parse("b").expect("a valid id");
        let mut b = Board::new(Arc::new(Notify::new()));
        b.note_event(
            &id,
            &event(r#"{"board":"b","season":"all","seq":9,"rollover":true}"#),
        );
        b.dirty = Default::default();
        b.note_event(
            &id,
            &event(r#"{"board":"b","season":"all","seq":2,"rollover":true}"#),
        );
        assert!(b.dirty.resync && b.dirty.full);
        assert_eq!((b.high_seq, b.last_event_seq), (0, 2));
    }
}
