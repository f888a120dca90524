//! `around` windows derived from the change stream, with no Redis read, where that is exact.
//! Pure.
//!
//! A window shows the ranks `[a, a + 2r]` around its player (rank `R`, board total `T`), with
//! `a = max(1, min(R - r, T - 2r))` — the rule of `lua/read.lua`: near the edges it still shows
//! `2r + 1` rows when the board has them. On an *ordinal* board a move from `old` to `new`
//! shifts exactly the players between by one (see `derive.rs`), so after a move every rank of
//! the new window is held either by the mover (its new score is in the event) or by a player
//! who held a known rank before it. Deriving is exact when each rank of the new window maps
//! back into the old one, and fails (the caller reads) when one does not — a player entering
//! the window from outside it, whose name the hub does not know; the window sliding because its
//! own player moved; a mover from outside whose display name the event does not carry.
//! Windows with tie-break times (`earliest` boards: the event does not carry the new time) are
//! never derived.

use scorecast_shared::{Entry, Id};

use super::derive::Move;
use crate::store::Page;

/// A window the hub keeps up to date, and the `seq` it shows.
#[derive(Clone, Debug)]
pub struct Kept {
    pub window: Window,
    pub at: u64,
}

/// One row of a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub rank: u64,
    pub player: Id,
    pub score: i64,
    pub name: Option<String>,
    pub reached_ms: Option<i64>,
}

/// What the hub knows of one `around` view: its player, radius, the board's total and the rows
/// it shows (contiguous ranks; empty when the player is not on the board).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub player: Id,
    pub radius: u64,
    pub total: u64,
    pub rows: Vec<Row>,
}

/// A move could not be applied exactly: the caller reads the window.
#[derive(Debug, PartialEq, Eq)]
pub struct NotExact;

/// The first rank a window of `radius` shows around rank `rank` on a board of `total`.
pub fn first_rank(rank: u64, radius: u64, total: u64) -> u64 {
    rank.saturating_sub(radius)
        .min(total.saturating_sub(2 * radius))
        .max(1)
}

impl Window {
    /// Applies `moves` in order (each with the display name its submission set, if any);
    /// `Ok(true)` when a row may have changed. On `Err` the window is stale: the caller drops
    /// it and reads.
    pub fn apply(&mut self, moves: &[Move]) -> Result<bool, NotExact> {
        let mut changed = false;
        for m in moves {
            changed |= self.apply_one(m)?;
        }
        Ok(changed)
    }

    /// The window as a store page (what a read would have returned) at `seq`.
    pub fn page(&self, season: &str, seq: u64) -> Page {
        Page {
            season: season.to_string(),
            start_ms: 0,
            total: self.total,
            seq,
            entries: self
                .rows
                .iter()
                .map(|r| Entry {
                    rank: r.rank,
                    player: r.player.to_string(),
                    score: r.score,
                    name: r.name.clone(),
                    reached_ms: r.reached_ms,
                })
                .collect(),
        }
    }

    /// What a read of the window returned: `None` where rows cannot be held as ids.
    pub fn from_page(player: &Id, radius: u64, page: &Page) -> Option<Window> {
        let rows = page
            .entries
            .iter()
            .map(|e| {
                Some(Row {
                    rank: e.rank,
                    player: Id::parse(&e.player).ok()?,
                    score: e.score,
                    name: e.name.clone(),
                    reached_ms: e.reached_ms,
                })
            })
            .collect::<Option<Vec<Row>>>()?;
        Some(Window {
            player: player.clone(),
            radius,
            total: page.total,
            rows,
        })
    }

    fn apply_one(&mut self, m: &Move) -> Result<bool, NotExact> {
        if self.rows.iter().any(|r| r.reached_ms.is_some()) {
            return Err(NotExact);
        }
        // The common case: a move that neither starts nor ends in the window, nor passes
        // through it, shifts no row; a join or a removal elsewhere only changes the total, which
        // moves the window only near the bottom of the board.
        if m.previous_rank.is_none() && m.rank.is_none() {
            return Ok(false); // removing a player who was not on the board
        }
        if let (Some(f), Some(l)) = (self.rows.first(), self.rows.last()) {
            let (o, n) = (
                m.previous_rank.unwrap_or(u64::MAX),
                m.rank.unwrap_or(u64::MAX),
            );
            let (lo, hi) = (o.min(n), o.max(n));
            let clear = (hi < f.rank || lo > l.rank) && m.player != self.player;
            if clear && o != u64::MAX && n != u64::MAX {
                return Ok(false);
            }
            if clear && lo > l.rank {
                let own = self
                    .rows
                    .iter()
                    .find(|r| r.player == self.player)
                    .map_or(f.rank, |r| r.rank);
                let total = if o == u64::MAX {
                    self.total + 1
                } else {
                    self.total - 1
                };
                let a = first_rank(own, self.radius, total);
                if a == f.rank && (a + 2 * self.radius).min(total) == l.rank {
                    self.total = total;
                    return Ok(false);
                }
            }
        }
        let at = self.rows.iter().position(|r| r.player == m.player);
        // The event's previous rank must be the one the window shows (or lie outside it).
        match (at, m.previous_rank) {
            (Some(i), Some(o)) if self.rows[i].rank == o => {}
            (Some(_), _) => return Err(NotExact),
            (None, Some(o)) if self.shows(o) => return Err(NotExact),
            (None, _) => {}
        }
        let total = match (m.previous_rank, m.rank) {
            (None, Some(_)) => self.total + 1,
            (Some(_), None) => self.total.checked_sub(1).ok_or(NotExact)?,
            (None, None) => return Ok(false),
            (Some(_), Some(_)) => self.total,
        };
        if m.player == self.player {
            // Its own player: leaving empties the window, joining or moving needs neighbours
            // the hub may not know — exact only if they all map back into the window.
            let Some(new) = m.rank else {
                self.rows.clear();
                self.total = total;
                return Ok(true);
            };
            if self.rows.is_empty() {
                return Err(NotExact);
            }
            return self.rebuild(m, new, total, at);
        }
        if self.rows.is_empty() {
            // The player is not on the board: no rows, whatever others do.
            self.total = total;
            return Ok(false);
        }
        let own = self
            .rows
            .iter()
            .find(|r| r.player == self.player)
            .map(|r| r.rank)
            .ok_or(NotExact)?;
        let own = shift(own, m.previous_rank, m.rank);
        self.rebuild(m, own, total, at)
    }

    /// The window around rank `own` on a board of `total` after move `m`, from the rows known
    /// before it (`at`: the mover's row, if the window showed it).
    fn rebuild(
        &mut self,
        m: &Move,
        own: u64,
        total: u64,
        at: Option<usize>,
    ) -> Result<bool, NotExact> {
        let a = first_rank(own, self.radius, total);
        let z = (a + 2 * self.radius).min(total);
        let mut rows = Vec::with_capacity((z + 1).saturating_sub(a) as usize);
        for q in a..=z {
            if Some(q) == m.rank {
                let (name, known) = match at {
                    Some(i) => (self.rows[i].name.clone(), true),
                    None => (None, false),
                };
                let name = match (&m.name, known) {
                    (Some(n), _) => Some(n.clone()),
                    (None, true) => name,
                    // A newcomer to the window: its stored name is unknown here.
                    (None, false) => return Err(NotExact),
                };
                rows.push(Row {
                    rank: q,
                    player: m.player.clone(),
                    score: m.score.ok_or(NotExact)?,
                    name,
                    reached_ms: None,
                });
                continue;
            }
            let old = unshift(q, m.previous_rank, m.rank);
            let row = self
                .rows
                .iter()
                .find(|r| r.rank == old && r.player != m.player)
                .ok_or(NotExact)?;
            rows.push(Row {
                rank: q,
                ..row.clone()
            });
        }
        self.rows = rows;
        self.total = total;
        Ok(true)
    }

    fn shows(&self, rank: u64) -> bool {
        match (self.rows.first(), self.rows.last()) {
            (Some(f), Some(l)) => (f.rank..=l.rank).contains(&rank),
            _ => false,
        }
    }
}

/// A non-mover's rank after a move from `old` to `new` (`None` = past the end).
fn shift(rank: u64, old: Option<u64>, new: Option<u64>) -> u64 {
    let (o, n) = (old.unwrap_or(u64::MAX), new.unwrap_or(u64::MAX));
    if n < o && (n..o).contains(&rank) {
        rank + 1
    } else if o < n && (o + 1..=n).contains(&rank) {
        rank - 1
    } else {
        rank
    }
}

/// The rank a non-mover held before a move from `old` to `new`, given the one it holds after.
fn unshift(rank: u64, old: Option<u64>, new: Option<u64>) -> u64 {
    let (o, n) = (old.unwrap_or(u64::MAX), new.unwrap_or(u64::MAX));
    if n < o && (n + 1..=o).contains(&rank) {
        rank - 1
    } else if o < n && (o..n).contains(&rank) {
        rank + 1
    } else {
        rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Id {
        Id::parse(s).expect("a valid id")
    }

    /// A board as a list of (player, score), best first; the truth the window is checked
    /// against, moved like Redis moves it.
    #[derive(Clone)]
    struct Board(Vec<(String, i64)>);

    impl Board {
        fn rank(&self, p: &str) -> Option<u64> {
            self.0
                .iter()
                .position(|(q, _)| q == p)
                .map(|i| i as u64 + 1)
        }

        /// Sets `p`'s score (`None` removes it); ties go below the players already there, an
        /// ordinal order like a sorted set's with increasing member names would not be — the
        /// move's ranks come from this order, which is all derivation relies on.
        fn set(&mut self, p: &str, score: Option<i64>, name: Option<&str>) -> Move {
            let previous_rank = self.rank(p);
            self.0.retain(|(q, _)| q != p);
            if let Some(s) = score {
                let at = self
                    .0
                    .iter()
                    .position(|(_, t)| *t < s)
                    .unwrap_or(self.0.len());
                self.0.insert(at, (p.to_string(), s));
            }
            Move {
                player: id(p),
                score,
                rank: self.rank(p),
                previous_rank,
                name: name.map(str::to_string),
            }
        }

        fn window(&self, p: &str, radius: u64, names: &dyn Fn(&str) -> Option<String>) -> Window {
            let total = self.0.len() as u64;
            let rows = match self.rank(p) {
                None => vec![],
                Some(r) => {
                    let a = first_rank(r, radius, total);
                    let z = (a + 2 * radius).min(total);
                    (a..=z)
                        .map(|q| {
                            let (player, score) = &self.0[q as usize - 1];
                            Row {
                                rank: q,
                                player: id(player),
                                score: *score,
                                name: names(player),
                                reached_ms: None,
                            }
                        })
                        .collect()
                }
            };
            Window {
                player: id(p),
                radius,
                total,
                rows,
            }
        }
    }

    fn board(n: usize) -> Board {
        Board(
            (0..n)
                .map(|i| (format!("p{i}"), 1000 - 10 * i as i64))
                .collect(),
        )
    }

    fn no_names(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_first_rank_follows_read_lua() {
        assert_eq!(first_rank(1, 2, 100), 1);
        assert_eq!(first_rank(3, 2, 100), 1);
        assert_eq!(first_rank(10, 2, 100), 8);
        assert_eq!(first_rank(100, 2, 100), 96);
        assert_eq!(first_rank(99, 2, 100), 96);
        assert_eq!(first_rank(2, 5, 4), 1);
    }

    #[test]
    fn a_move_inside_the_window_is_derived() {
        let mut b = board(50);
        let mut w = b.window("p20", 3, &no_names);
        // p22 passes p21 (both below p20, the window's player stays at 21).
        let m = b.set("p22", Some(1000 - 10 * 21 + 5), None);
        w.apply(&[m]).expect("exact");
        assert_eq!(w, b.window("p20", 3, &no_names));
    }

    #[test]
    fn a_mover_passing_the_windows_player_needs_a_read() {
        let mut b = board(50);
        let mut w = b.window("p20", 3, &no_names);
        // p22 passes p20: the window slides by one and shows a row it never saw.
        let m = b.set("p22", Some(1000 - 10 * 20 + 5), None);
        assert_eq!(w.apply(&[m]), Err(NotExact));
    }

    #[test]
    fn moves_far_away_change_nothing_but_a_join_or_removal_below_shifts_no_row() {
        let mut b = board(50);
        let mut w = b.window("p20", 3, &no_names);
        let moves = vec![
            b.set("p40", Some(1000 - 10 * 35 + 5), None),
            b.set("p49", None, None),
            b.set("new", Some(1), None),
        ];
        w.apply(&moves).expect("exact");
        assert_eq!(w, b.window("p20", 3, &no_names));
    }

    #[test]
    fn a_newcomer_from_outside_needs_its_name_from_the_event() {
        let mut b = board(50);
        let names = |p: &str| (p == "p40").then(|| "Forty".to_string());
        let mut w = b.window("p20", 3, &names);
        // p40 jumps from rank 41 to right below p20 (rank 22; p20 stays at 21): the window's
        // rows below it shift down and its last row drops out.
        let mut probe = w.clone();
        let m = b.clone().set("p40", Some(1000 - 10 * 20 - 5), None);
        assert_eq!(probe.apply(&[m]), Err(NotExact), "no name in the event");
        let m = b.set("p40", Some(1000 - 10 * 20 - 5), Some("Forty"));
        w.apply(&[m]).expect("exact with the name");
        assert_eq!(w, b.window("p20", 3, &names));
    }

    #[test]
    fn at_the_top_and_bottom_the_window_keeps_its_rows() {
        let mut b = board(10);
        let mut top = b.window("p0", 2, &no_names);
        let mut bottom = b.window("p9", 2, &no_names);
        let moves = vec![
            b.set("p2", Some(995), None), // p2 passes p1: inside the top window
            b.set("p8", Some(1000 - 10 * 7 + 5), None), // p8 passes p7: inside the bottom one
        ];
        top.apply(&moves).expect("exact");
        bottom.apply(&moves).expect("exact");
        assert_eq!(top, b.window("p0", 2, &no_names));
        assert_eq!(bottom, b.window("p9", 2, &no_names));
    }

    #[test]
    fn the_windows_player_leaving_empties_it_and_an_absent_player_stays_empty() {
        let mut b = board(10);
        let mut w = b.window("p5", 2, &no_names);
        w.apply(&[b.set("p5", None, None)]).expect("exact");
        assert!(w.rows.is_empty());
        w.apply(&[b.set("p1", Some(2000), None)]).expect("exact");
        assert_eq!(w, b.window("p5", 2, &no_names));
        let m = b.set("p5", Some(5), None);
        assert_eq!(w.apply(&[m]), Err(NotExact), "a join needs its neighbours");
    }

    #[test]
    fn a_stale_previous_rank_is_caught() {
        let b = board(50);
        let mut w = b.window("p20", 3, &no_names);
        let m = Move {
            player: id("p21"),
            score: Some(5000),
            rank: Some(1),
            previous_rank: Some(30),
            name: None,
        };
        assert_eq!(w.apply(&[m]), Err(NotExact));
    }

    #[test]
    fn tie_break_times_are_never_derived() {
        let mut b = board(50);
        let mut w = b.window("p20", 3, &no_names);
        for r in &mut w.rows {
            r.reached_ms = Some(1);
        }
        let m = b.set("p40", Some(1), None);
        assert_eq!(w.apply(&[m]), Err(NotExact));
    }

    /// Random moves on a small board: whenever derivation claims exactness, the window equals
    /// the one read from the board; and it is exact for every move that stays clear of the
    /// window's edges and player.
    #[test]
    fn derived_windows_equal_the_board_whenever_exact() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut b = board(30);
        let names = |p: &str| Some(format!("N{p}"));
        let mut exact = 0;
        for _ in 0..5000 {
            let radius = 1 + next(4);
            let me = format!("p{}", next(32));
            let mut w = b.window(&me, radius, &names);
            let p = format!("p{}", next(32));
            let score = (next(12) != 0).then(|| next(1200) as i64);
            let named = next(2) == 0;
            let m = b.set(&p, score, named.then(|| format!("N{p}")).as_deref());
            if w.apply(&[m]).is_ok() {
                exact += 1;
                assert_eq!(w, b.window(&me, radius, &names), "{p} -> {score:?}");
            }
        }
        assert!(exact > 1000, "only {exact} of 5000 moves derived");
    }
}
