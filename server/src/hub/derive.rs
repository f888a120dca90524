//! Ranks derived from the change stream, with no Redis read. Pure.
//!
//! Each change event lists, in the order the script applied them, every player whose score
//! changed with their new rank and the rank they had just before (`None` = not on the board).
//! On a board with *ordinal* ranking (every rank held by one player) a move from `old` to `new`
//! shifts exactly the players between: up by one for `new < old` (`[new, old - 1]`), down by one
//! for `new > old` (`[old + 1, new]`); a join is a move from past the end, a removal a move to
//! past the end. Everyone else keeps their rank, and a player's score changes only in their own
//! move. So applying the moves in order to the standings the hub knows gives the standings
//! Redis holds after them, exactly.
//!
//! Not exact, and therefore read instead (by the caller): boards with *shared* ranking (a tie
//! moves no one and one move can shift a whole group of equals), a standing older than the first
//! event at hand (a `seq` gap, or a snapshot read before events the hub already consumed), a new
//! season. A mover whose derived rank disagrees with the `previous_rank` its event carries makes
//! the standings it was derived with unknown: the caller reads them again.
//!
//! [`Standings`] keeps every known standing of a board between flushes. Those at the board's
//! latest derived `seq` form the *ladder*: kept sorted by rank across flushes, because moves never
//! change the order of the players that do not move themselves. A flush builds a treap over the
//! ladder's ranks (`treap.rs`, `O(W)`) and applies each move to it as a take, a range add and an
//! insert, `O(log W)` each, then reads the ranks back in order: `O(W + K log W)` for `W`
//! standings and `K` moves, however many of the standings move themselves.
//! A standing learned from a read at another `seq` is *loose* until the next flush derives it up to
//! the ladder's `seq` (or finds it too old) and merges it in.

use scorecast_shared::Id;

use super::treap::{Refused, Treap};

/// One player's move, as the change event carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub player: Id,
    /// New points (`None` = removed).
    pub score: Option<i64>,
    pub rank: Option<u64>,
    pub previous_rank: Option<u64>,
    /// The display name the submission recorded (`None`: none given), for `around` rows.
    pub name: Option<String>,
}

/// A player's last known standing on the board.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct MeState {
    /// Points and 1-based rank (`None` = not on the board).
    pub score: Option<i64>,
    pub rank: Option<u64>,
    /// The rank before the last change.
    pub previous_rank: Option<u64>,
    /// The `seq` this standing reflects; `None` = unknown (to be read).
    pub at: Option<u64>,
}

/// Which set a standing belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Group {
    /// At the ladder's `seq`.
    Ladder,
    /// Loose (at a `seq` of its own) or unknown.
    Apart,
    /// Loose, being derived on its own during a flush.
    Catching,
}

struct Slot {
    player: Id,
    /// `at` is the ladder's for a [`Group::Ladder`] slot (kept in [`Standings::at`]).
    st: MeState,
    group: Group,
    /// In [`Standings::loose`].
    loose: bool,
    /// Moves itself in the flush being derived (listed in `movers`); `was` is its standing
    /// before, `ranked_now` whether it is on the board after the moves applied so far.
    moving: bool,
    ranked_now: bool,
    was: (Option<i64>, Option<u64>),
    /// The derivation that last changed its standing (0: none), a count of
    /// [`Standings::derive`] calls: nothing to reset when the next one starts.
    changed_in: u64,
}

/// What a derivation did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Derived {
    /// Standings brought up to date from the events.
    pub derived: u64,
    /// A mover disagreed with its event: the standings derived with it became unknown.
    pub inconsistent: bool,
}

/// Every known `me` standing of one board (see the module doc).
#[derive(Default)]
pub struct Standings {
    index: foldhash::HashMap<Id, u32>,
    slots: Vec<Slot>,
    /// The `seq` of every ladder standing.
    at: Option<u64>,
    /// The ladder's standings that are on the board, as (rank, slot), sorted by rank. May hold
    /// slots that left the ladder since (dropped at the next flush).
    order: Vec<(u64, u32)>,
    /// Ladder slots, ranked or not.
    members: u64,
    loose: Vec<u32>,
    changed: Vec<u32>,
    /// [`Standings::derive`] calls so far (the last one's number).
    derivations: u64,
    /// Bumped whenever standings became unknown (forgotten, dropped, stale, a new season);
    /// `known` is the value of `lost` up to which every unknown standing of a watcher was read
    /// again ([`Standings::all_known`]).
    lost: u64,
    known: u64,
    // Buffers kept between flushes.
    movers: Vec<u32>,
    /// The ranks of the standings being derived while a flush applies its moves.
    tree: Treap,
    spare: Vec<(u64, u32)>,
    catching: Vec<(u64, u32)>,
}

impl Standings {
    /// Whether no standing is kept (no `me` view was flushed since the board was watched, or
    /// since a new season).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// `player`'s last known standing.
    pub fn get(&self, player: &Id) -> Option<MeState> {
        self.get_key_value(player).map(|(_, st)| st)
    }

    /// `player`'s last known standing, with the id it is kept under.
    pub fn get_key_value(&self, player: &Id) -> Option<(&Id, MeState)> {
        let slot = &self.slots[*self.index.get(player)? as usize];
        Some((&slot.player, self.state(slot)))
    }

    fn state(&self, slot: &Slot) -> MeState {
        let mut st = slot.st;
        if slot.group == Group::Ladder {
            st.at = self.at;
        }
        st
    }

    /// Whether `player`'s standing changed in the last [`Standings::derive`].
    pub fn changed(&self, player: &Id) -> bool {
        self.get_changed(player).is_some_and(|(_, c)| c)
    }

    /// `player`'s last known standing, and whether the last [`Standings::derive`] changed it.
    pub fn get_changed(&self, player: &Id) -> Option<(MeState, bool)> {
        let slot = &self.slots[*self.index.get(player)? as usize];
        let changed = slot.changed_in != 0 && slot.changed_in == self.derivations;
        Some((self.state(slot), changed))
    }

    /// Records a standing read at `seq` (unless what is known is newer): `previous_rank` becomes
    /// the rank before, if the standing changed. Returns the standing now known.
    pub fn learn(
        &mut self,
        player: &Id,
        score: Option<i64>,
        rank: Option<u64>,
        seq: u64,
    ) -> MeState {
        let s = match self.index.get(player) {
            Some(&s) => s,
            None => {
                let s = self.slots.len() as u32;
                self.index.insert(player.clone(), s);
                self.slots.push(Slot {
                    player: player.clone(),
                    st: MeState::default(),
                    group: Group::Apart,
                    loose: false,
                    moving: false,
                    ranked_now: false,
                    was: (None, None),
                    changed_in: 0,
                });
                s
            }
        };
        let current = self.state(&self.slots[s as usize]);
        if current.at.is_some_and(|at| at > seq) {
            return current;
        }
        let slot = &mut self.slots[s as usize];
        slot.st = current;
        if (current.score, current.rank) != (score, rank) {
            slot.st.previous_rank = current.rank;
            slot.st.score = score;
            slot.st.rank = rank;
        }
        slot.st.at = Some(seq);
        if slot.group == Group::Ladder {
            // Its entry in `order` is dropped at the next flush.
            slot.group = Group::Apart;
            self.members -= 1;
        }
        if !slot.loose {
            slot.loose = true;
            self.loose.push(s);
        }
        slot.st
    }

    /// Whether no watched standing became unknown since the last time every unknown one was
    /// read (`Standings::mark_known` with the [`Standings::lost_gen`] of then): a flush may then
    /// visit only the standings the last derivation changed.
    pub fn all_known(&self) -> bool {
        self.known == self.lost
    }

    /// The count of losses so far (see [`Standings::all_known`]).
    pub fn lost_gen(&self) -> u64 {
        self.lost
    }

    /// Every standing unknown at `lost_gen` was read since.
    pub fn mark_known(&mut self, lost_gen: u64) {
        self.known = self.known.max(lost_gen);
    }

    /// How many standings the last [`Standings::derive`] changed.
    pub fn changed_count(&self) -> usize {
        self.changed.len()
    }

    /// The players whose standing the last [`Standings::derive`] changed.
    pub fn changed_players(&self) -> impl Iterator<Item = &Id> {
        self.changed.iter().map(|&s| &self.slots[s as usize].player)
    }

    /// Every standing becomes unknown (to be read).
    pub fn forget(&mut self) {
        self.lost += 1;
        for slot in &mut self.slots {
            slot.st.at = None;
            slot.group = Group::Apart;
            slot.loose = false;
        }
        self.at = None;
        self.order.clear();
        self.loose.clear();
        self.members = 0;
    }

    /// Forgets every player (a new season).
    pub fn clear(&mut self) {
        let (lost, known) = (self.lost + 1, self.known);
        *self = Standings::default();
        (self.lost, self.known) = (lost, known);
    }

    /// Applies the moves of the events at hand (`seqs`: each event's `seq` and the index of its
    /// first move, ascending) to every known standing. Afterwards [`Standings::changed`] tells
    /// which changed, and a standing that cannot be derived (older than the first event at hand,
    /// or derived with a mover that disagreed with its event) is unknown.
    pub fn derive(&mut self, moves: &[Move], seqs: &[(u64, usize)]) -> Derived {
        self.changed.clear();
        self.derivations += 1;
        let mut out = Derived::default();
        let slots = &self.slots;
        self.order
            .retain(|&(_, s)| slots[s as usize].group == Group::Ladder);
        let (Some(&(first, _)), Some(&(last, _))) = (seqs.first(), seqs.last()) else {
            if let Some(at) = self.at {
                self.catch_up(at, first_after(at), moves, seqs, &mut out);
            }
            return out;
        };
        if let Some(at) = self.at {
            if at + 1 < first {
                // Events were consumed without the ladder: it is stale.
                self.drop_group(Group::Ladder);
            } else {
                let i = seqs.partition_point(|e| e.0 <= at);
                if let Some(&(_, start)) = seqs.get(i) {
                    let mut order = std::mem::take(&mut self.order);
                    let ok = self.shift(Group::Ladder, &mut order, &moves[start..]);
                    self.order = order;
                    if ok {
                        out.derived += self.members;
                    } else {
                        out.inconsistent = true;
                        self.drop_group(Group::Ladder);
                    }
                }
            }
        }
        let at = self.at.map_or(last, |a| a.max(last));
        self.at = Some(at);
        self.catch_up(at, first, moves, seqs, &mut out);
        out
    }

    /// Derives the loose standings up to the ladder's `at` (those from `first - 1` on: older ones
    /// missed events and become unknown) and merges them into the ladder.
    fn catch_up(
        &mut self,
        at: u64,
        first: u64,
        moves: &[Move],
        seqs: &[(u64, usize)],
        out: &mut Derived,
    ) {
        if self.loose.is_empty() {
            return;
        }
        let mut waiting = std::mem::take(&mut self.catching);
        waiting.clear();
        for s in std::mem::take(&mut self.loose) {
            let slot = &mut self.slots[s as usize];
            slot.loose = false;
            match slot.st.at {
                // Unknown: read.
                None => {}
                Some(a) if a == at => self.join(s),
                // Newer than the events at hand: derived once they are.
                Some(a) if a > at => {
                    slot.loose = true;
                    self.loose.push(s);
                }
                Some(a) if a + 1 < first => {
                    slot.st.at = None;
                    self.lost += 1;
                }
                Some(a) => waiting.push((a, s)),
            }
        }
        waiting.sort_unstable();
        let mut k = 0;
        while k < waiting.len() {
            let a = waiting[k].0;
            let n = waiting[k..].partition_point(|w| w.0 == a);
            let group = &waiting[k..k + n];
            k += n;
            let mut order: Vec<(u64, u32)> = Vec::with_capacity(group.len());
            for &(_, s) in group {
                let slot = &mut self.slots[s as usize];
                slot.group = Group::Catching;
                if let Some(r) = slot.st.rank {
                    order.push((r, s));
                }
            }
            order.sort_unstable();
            let Some(&(_, start)) = seqs.get(seqs.partition_point(|e| e.0 <= a)) else {
                // The events after it were consumed already: it missed them.
                self.drop_group(Group::Catching);
                continue;
            };
            if self.shift(Group::Catching, &mut order, &moves[start..]) {
                out.derived += group.len() as u64;
                for &(_, s) in group {
                    self.join(s);
                }
            } else {
                out.inconsistent = true;
                self.drop_group(Group::Catching);
            }
        }
        self.catching = waiting;
    }

    /// Puts a standing at the ladder's `seq` into the ladder.
    fn join(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        slot.group = Group::Ladder;
        self.members += 1;
        if let Some(r) = slot.st.rank {
            insert_sorted(&mut self.order, &mut self.spare, &[(r, s)]);
        }
    }

    /// Every standing of `group` becomes unknown.
    fn drop_group(&mut self, group: Group) {
        self.lost += 1;
        for slot in &mut self.slots {
            if slot.group == group {
                slot.group = Group::Apart;
                slot.st.at = None;
                slot.moving = false;
            }
        }
        if group == Group::Ladder {
            self.order.clear();
            self.members = 0;
        }
    }

    /// Applies `moves` in order to the standings of `group`, whose ranked ones `order` lists
    /// sorted by rank. False if a mover disagreed with its event.
    fn shift(&mut self, group: Group, order: &mut Vec<(u64, u32)>, moves: &[Move]) -> bool {
        let Standings {
            index,
            slots,
            changed,
            movers,
            tree,
            derivations,
            ..
        } = self;
        let now = *derivations;
        movers.clear();
        tree.build(order);
        let ok = moves.iter().all(|m| {
            let tracked = index
                .get(&m.player)
                .copied()
                .filter(|&s| slots[s as usize].group == group);
            if let Some(s) = tracked {
                let slot = &mut slots[s as usize];
                if !slot.moving {
                    slot.moving = true;
                    slot.was = (slot.st.score, slot.st.rank);
                    slot.ranked_now = slot.st.rank.is_some();
                    movers.push(s);
                }
            }
            // Out at its old rank (a standing known there must be the mover's own), the ranks
            // between shift by one, and the mover's standing, if tracked, in at its new rank.
            let moved = tree.relocate(m.previous_rank, m.rank, |tree, out| match (tracked, out) {
                (Some(s), Some(n)) if tree.value(n) == s => Ok(Some(n)),
                (Some(s), None) if !slots[s as usize].ranked_now => Ok(Some(tree.fresh(s))),
                (None, None) => Ok(None),
                _ => Err(Refused),
            });
            if moved.is_err() {
                // Two standings at one rank, or one the mover disagreed with: they were not
                // derived from one board.
                return false;
            }
            if let Some(s) = tracked {
                let slot = &mut slots[s as usize];
                slot.st.score = m.score;
                slot.ranked_now = m.rank.is_some();
            }
            true
        });
        if !ok {
            for &s in movers.iter() {
                slots[s as usize].moving = false;
            }
            return false;
        }
        tree.sorted(order);
        for &(r, s) in order.iter() {
            let slot = &mut slots[s as usize];
            if slot.moving {
                slot.st.rank = Some(r);
            } else if slot.st.rank != Some(r) {
                slot.st.previous_rank = slot.st.rank;
                slot.st.rank = Some(r);
                if slot.changed_in != now {
                    slot.changed_in = now;
                    changed.push(s);
                }
            }
        }
        for &s in movers.iter() {
            let slot = &mut slots[s as usize];
            slot.moving = false;
            if !slot.ranked_now {
                slot.st.rank = None;
            }
            if (slot.st.score, slot.st.rank) != slot.was {
                slot.st.previous_rank = slot.was.1;
                if slot.changed_in != now {
                    slot.changed_in = now;
                    changed.push(s);
                }
            }
        }
        true
    }
}

/// A rank standing for "not on the board" in a move's span.
const UNRANKED: u64 = u64::MAX;

/// Where a player that moves in one event stands once the event is applied ([`movers_after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved<'a> {
    pub player: &'a Id,
    pub score: Option<i64>,
    pub rank: Option<u64>,
    /// The rank before its first move in the event.
    pub previous_rank: Option<u64>,
}

/// Where the players that move in one event stand once it is applied, from the event alone, in
/// the order of their first move: exact on an ordinal board, for the reason of the module doc. A
/// mover's last move gives its score and rank, and every later move of another player in the
/// event shifts that rank as it shifts anyone's. `O(K·M)` for `K` moves and `M` movers (a shift
/// of `M` ranks per move; each mover is found again by its id's hash, not by comparing ids).
pub fn movers_after(moves: &[Move]) -> Vec<Moved<'_>> {
    let mut out: Vec<Moved<'_>> = Vec::with_capacity(moves.len());
    let mut index: foldhash::HashMap<&Id, usize> =
        foldhash::HashMap::with_capacity_and_hasher(moves.len(), Default::default());
    // The movers' ranks so far, side by side ([`UNRANKED`]: not on the board).
    let mut ranks: Vec<u64> = Vec::with_capacity(moves.len());
    for m in moves {
        let old = m.previous_rank.unwrap_or(UNRANKED);
        let new = m.rank.unwrap_or(UNRANKED);
        let span = match new.cmp(&old) {
            std::cmp::Ordering::Less => Some((new, old - 1, 1u64)),
            std::cmp::Ordering::Greater => Some((old + 1, new, 1u64.wrapping_neg())),
            std::cmp::Ordering::Equal => None,
        };
        // The mover itself is outside its span; the unranked never shift.
        if let Some((lo, hi, step)) = span {
            if let Some(width) = hi.min(UNRANKED - 1).checked_sub(lo) {
                for r in ranks.iter_mut() {
                    if r.wrapping_sub(lo) <= width {
                        *r = r.wrapping_add(step);
                    }
                }
            }
        }
        match index.entry(&m.player) {
            std::collections::hash_map::Entry::Occupied(i) => {
                out[*i.get()].score = m.score;
                ranks[*i.get()] = new;
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(out.len());
                out.push(Moved {
                    player: &m.player,
                    score: m.score,
                    rank: None,
                    previous_rank: m.previous_rank,
                });
                ranks.push(new);
            }
        }
    }
    for (o, r) in out.iter_mut().zip(ranks) {
        o.rank = ranked(r);
    }
    out
}

fn ranked(r: u64) -> Option<u64> {
    (r != UNRANKED).then_some(r)
}

/// The first `seq` after `at` (no event at hand: nothing is older than the ladder).
fn first_after(at: u64) -> u64 {
    at.saturating_add(1)
}

/// Merges the sorted `add` into the sorted `order` (`spare`: a buffer kept between calls).
fn insert_sorted(order: &mut Vec<(u64, u32)>, spare: &mut Vec<(u64, u32)>, add: &[(u64, u32)]) {
    match add {
        [] => {}
        [one] => {
            let i = order.partition_point(|e| e < one);
            order.insert(i, *one);
        }
        _ => {
            spare.clear();
            spare.reserve(order.len() + add.len());
            let (mut i, mut j) = (0, 0);
            while i < order.len() && j < add.len() {
                if order[i] < add[j] {
                    spare.push(order[i]);
                    i += 1;
                } else {
                    spare.push(add[j]);
                    j += 1;
                }
            }
            spare.extend_from_slice(&order[i..]);
            spare.extend_from_slice(&add[j..]);
            std::mem::swap(order, spare);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn id(s: &str) -> Id {
        Id::parse(s).expect("a valid id")
    }

    /// A model board (descending, ordinal ranks by points then name) that plays moves and
    /// reports them as `submit.lua` does.
    #[derive(Default)]
    struct Model(BTreeMap<String, i64>);

    impl Model {
        fn rank(&self, p: &str) -> Option<u64> {
            let s = *self.0.get(p)?;
            let ahead = self
                .0
                .iter()
                .filter(|(q, t)| **t > s || (**t == s && q.as_str() < p))
                .count();
            Some(ahead as u64 + 1)
        }

        fn set(&mut self, p: &str, score: Option<i64>) -> Move {
            let previous_rank = self.rank(p);
            match score {
                Some(s) => self.0.insert(p.to_string(), s),
                None => self.0.remove(p),
            };
            Move {
                player: id(p),
                score,
                rank: self.rank(p),
                previous_rank,
                name: None,
            }
        }

        fn standing(&self, p: &str) -> (Option<i64>, Option<u64>) {
            (self.0.get(p).copied(), self.rank(p))
        }
    }

    fn known(st: &Standings, p: &str) -> (Option<i64>, Option<u64>) {
        let s = st.get(&id(p)).expect("a known player");
        (s.score, s.rank)
    }

    /// Standings that know `players` as the model has them at `seq`.
    fn learned(m: &Model, players: &[&str], seq: u64) -> Standings {
        let mut st = Standings::default();
        for p in players {
            let (score, rank) = m.standing(p);
            st.learn(&id(p), score, rank, seq);
        }
        st
    }

    #[test]
    fn a_climb_shifts_the_ranks_between_and_nobody_else() {
        let mut m = Model::default();
        for (p, s) in [("a", 50), ("b", 40), ("c", 30), ("d", 20), ("e", 10)] {
            m.set(p, Some(s));
        }
        let players = ["a", "b", "c", "d", "e"];
        let mut st = learned(&m, &players, 1);
        assert_eq!(st.derive(&[], &[]).derived, 0, "no event: nothing derived");
        let mv = m.set("d", Some(45));
        assert_eq!((mv.rank, mv.previous_rank), (Some(2), Some(4)));
        let d = st.derive(&[mv], &[(2, 0)]);
        assert_eq!(
            d,
            Derived {
                derived: 5,
                inconsistent: false
            }
        );
        for p in players {
            assert_eq!(known(&st, p), m.standing(p), "{p}");
            assert_eq!(st.get(&id(p)).and_then(|s| s.at), Some(2));
        }
        let changed: Vec<&str> = players.into_iter().filter(|p| st.changed(&id(p))).collect();
        assert_eq!(
            changed,
            ["b", "c", "d"],
            "above and below the move: unchanged"
        );
        let c = st.get(&id("c")).expect("known");
        assert_eq!((c.rank, c.previous_rank), (Some(4), Some(3)));
    }

    #[test]
    fn joins_falls_removals_and_movers_watching_themselves_in_one_batch() {
        let mut m = Model::default();
        for (p, s) in [("a", 50), ("b", 40), ("c", 30)] {
            m.set(p, Some(s));
        }
        let players = ["a", "b", "c", "z"];
        let mut st = learned(&m, &players, 3);
        let moves = vec![
            m.set("x", Some(45)),
            m.set("a", Some(10)),
            m.set("z", Some(35)),
            m.set("b", None),
            m.set("a", Some(60)),
            m.set("y", Some(1)),
        ];
        let d = st.derive(&moves, &[(4, 0), (5, 3)]);
        assert!(!d.inconsistent);
        for p in players {
            assert_eq!(known(&st, p), m.standing(p), "{p}");
        }
    }

    #[test]
    fn a_mover_that_disagrees_with_its_event_makes_its_group_unknown() {
        let mut st = Standings::default();
        st.learn(&id("a"), Some(5), Some(3), 1);
        st.learn(&id("b"), Some(9), Some(1), 1);
        let mv = Move {
            player: id("a"),
            score: Some(9),
            rank: Some(1),
            previous_rank: Some(2),
            name: None,
        };
        assert!(st.derive(&[mv], &[(2, 0)]).inconsistent);
        assert_eq!(st.get(&id("a")).and_then(|s| s.at), None);
        assert_eq!(st.get(&id("b")).and_then(|s| s.at), None);
    }

    #[test]
    fn a_standing_older_than_the_events_at_hand_becomes_unknown() {
        let mut m = Model::default();
        m.set("a", Some(5));
        let mut st = learned(&m, &["a"], 1);
        let mv = m.set("b", Some(9));
        // Seqs 2..=4 were consumed without `a`.
        st.derive(&[mv], &[(5, 0)]);
        assert_eq!(st.get(&id("a")).and_then(|s| s.at), None);
        // Read again, it joins at the next flush.
        let (score, rank) = m.standing("a");
        st.learn(&id("a"), score, rank, 5);
        let mv = m.set("c", Some(7));
        assert_eq!(st.derive(&[mv], &[(6, 0)]).derived, 1);
        assert_eq!(known(&st, "a"), (Some(5), Some(3)));
    }

    #[test]
    fn a_read_newer_than_the_ladder_waits_for_its_events() {
        let mut m = Model::default();
        m.set("a", Some(5));
        let mut st = learned(&m, &["a"], 1);
        let e2 = m.set("b", Some(9));
        // `b` is read at seq 2 before event 2 reached the hub.
        let (score, rank) = m.standing("b");
        st.learn(&id("b"), score, rank, 2);
        // `a` is derived; `b`, read at the event's seq, joins as it is.
        assert_eq!(st.derive(&[e2], &[(2, 0)]).derived, 1);
        let e3 = m.set("c", Some(7));
        st.derive(&[e3], &[(3, 0)]);
        for p in ["a", "b"] {
            assert_eq!(known(&st, p), m.standing(p), "{p}");
        }
    }

    /// A small deterministic generator (xorshift): `next(n)` is in `0..n`.
    fn numbers(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// Each mover's standing at the end of an event, from the event alone, equals the model's;
    /// its previous rank is the one before its first move in the event.
    #[test]
    fn movers_after_an_event_match_the_model() {
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        let players: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
        let mut m = Model::default();
        for _ in 0..300 {
            let moves: Vec<Move> = (0..=next(8))
                .map(|_| {
                    let p = &players[next(12) as usize];
                    let score = (next(8) != 0).then(|| next(30) as i64);
                    m.set(p, score)
                })
                .collect();
            let moved = movers_after(&moves);
            for o in &moved {
                let p = o.player.as_str();
                assert_eq!((o.score, o.rank), m.standing(p), "{p} after {moves:?}");
                let first = moves.iter().find(|mv| mv.player == *o.player);
                assert_eq!(
                    Some(o.previous_rank),
                    first.map(|mv| mv.previous_rank),
                    "{p}: the rank before its first move"
                );
            }
            let mut movers: Vec<&str> = moved.iter().map(|o| o.player.as_str()).collect();
            movers.sort_unstable();
            let mut want: Vec<&str> = moves.iter().map(|mv| mv.player.as_str()).collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(movers, want, "every mover, once");
        }
    }

    #[test]
    fn random_flushes_match_the_model() {
        // The e2e property test does the same against Redis.
        let mut next = numbers(0x9e37_79b9_7f4a_7c15);
        let players: Vec<String> = (0..40).map(|i| format!("p{i}")).collect();
        let mut m = Model::default();
        let mut st = Standings::default();
        let mut seq = 0u64;
        // Every other player watched from the start (absent at seq 0).
        for p in players.iter().step_by(2) {
            st.learn(&id(p), None, None, 0);
        }
        for _ in 0..400 {
            let before: Vec<_> = players.iter().map(|p| m.standing(p)).collect();
            let (mut moves, mut seqs) = (Vec::new(), Vec::new());
            let mut learned_now = Vec::new();
            for _ in 0..=next(4) {
                seq += 1;
                seqs.push((seq, moves.len()));
                for _ in 0..=next(6) {
                    let p = &players[next(40) as usize];
                    let score = (next(10) != 0).then(|| next(60) as i64);
                    moves.push(m.set(p, score));
                }
                if next(3) == 0 {
                    // A snapshot read at this seq, before the flush.
                    let p = &players[next(40) as usize];
                    let (score, rank) = m.standing(p);
                    st.learn(&id(p), score, rank, seq);
                    learned_now.push(p.clone());
                }
            }
            let d = st.derive(&moves, &seqs);
            assert!(!d.inconsistent);
            for (i, p) in players.iter().enumerate() {
                let Some(s) = st.get(&id(p)) else { continue };
                let Some(at) = s.at else { continue };
                assert_eq!(at, seq, "{p} brought up to the last seq");
                assert_eq!((s.score, s.rank), m.standing(p), "{p} after {moves:?}");
                if !learned_now.contains(p) {
                    assert_eq!(
                        st.changed(&id(p)),
                        before[i] != m.standing(p),
                        "{p} changed"
                    );
                }
            }
        }
        assert!(
            players
                .iter()
                .all(|p| st.get(&id(p)).is_some_and(|s| s.at.is_some()) || {
                    !players.iter().step_by(2).any(|q| q == p)
                }),
            "the standings watched from the start are all still derived"
        );
    }
}
