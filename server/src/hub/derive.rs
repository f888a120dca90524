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
//! [`apply`] report [`Inconsistent`]: the caller reads everything again.
//!
//! Cost: `O((W + K) log² W + K·M)` for `W` standings, `K` moves and `M` standings that move
//! themselves; no per-watcher work for a move that does not reach the watcher's rank.

use std::collections::HashMap;

use scorecast_shared::Id;

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

/// A player's standing on the board: points and 1-based rank (`None` = not on the board).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Standing {
    pub score: Option<i64>,
    pub rank: Option<u64>,
}

/// A mover's standing disagreed with its event: what the caller knows is stale.
#[derive(Debug, PartialEq, Eq)]
pub struct Inconsistent;

/// Applies `moves` in order to the `watched` standings (ordinal ranking only).
pub fn apply(watched: &mut [(&Id, &mut Standing)], moves: &[Move]) -> Result<(), Inconsistent> {
    if moves.is_empty() {
        return Ok(());
    }
    let index: HashMap<&Id, usize> = watched
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    let mut moving = vec![false; watched.len()];
    for m in moves {
        if let Some(&i) = index.get(&m.player) {
            moving[i] = true;
        }
    }
    // Watchers that never move keep their order: a sorted array with a Fenwick tree of shifts.
    let mut fixed: Vec<(u64, usize)> = watched
        .iter()
        .enumerate()
        .filter(|(i, _)| !moving[*i])
        .filter_map(|(i, (_, s))| s.rank.map(|r| (r, i)))
        .collect();
    fixed.sort_unstable();
    let mut shifts = Fenwick::new(fixed.len());
    // Watchers that move themselves: few, updated one by one.
    let movers: Vec<usize> = (0..watched.len()).filter(|i| moving[*i]).collect();
    for m in moves {
        let old = m.previous_rank.unwrap_or(u64::MAX);
        let new = m.rank.unwrap_or(u64::MAX);
        let span = match new.cmp(&old) {
            std::cmp::Ordering::Less => Some((new, old - 1, 1)),
            std::cmp::Ordering::Greater => Some((old + 1, new, -1)),
            std::cmp::Ordering::Equal => None,
        };
        let me = index.get(&m.player).copied();
        if let Some(i) = me {
            if watched[i].1.rank != m.previous_rank {
                return Err(Inconsistent);
            }
        }
        if let Some((lo, hi, d)) = span {
            let at = |k: usize| (fixed[k].0 as i64 + shifts.sum(k)) as u64;
            let a = first(fixed.len(), |k| at(k) >= lo);
            let b = first(fixed.len(), |k| at(k) > hi);
            shifts.add(a, d);
            shifts.add(b, -d);
            for &k in &movers {
                if Some(k) == me {
                    continue;
                }
                let s = &mut *watched[k].1;
                if let Some(r) = s.rank.filter(|r| (lo..=hi).contains(r)) {
                    s.rank = Some(r.wrapping_add_signed(d));
                }
            }
        }
        if let Some(i) = me {
            *watched[i].1 = Standing {
                score: m.score,
                rank: m.rank,
            };
        }
    }
    for (k, &(r, i)) in fixed.iter().enumerate() {
        watched[i].1.rank = Some((r as i64 + shifts.sum(k)) as u64);
    }
    Ok(())
}

/// The first `k` in `0..n` for which `pred` holds (`pred` monotone: false then true), or `n`.
fn first(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Range add (as two point adds on the difference array), point query (a prefix sum).
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    /// Adds `d` to every element from `k` on.
    fn add(&mut self, k: usize, d: i64) {
        let mut i = k + 1;
        while i < self.0.len() {
            self.0[i] += d;
            i += i & i.wrapping_neg();
        }
    }

    /// Element `k`'s value.
    fn sum(&self, k: usize) -> i64 {
        let (mut i, mut s) = (k + 1, 0);
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
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

        fn standing(&self, p: &str) -> Standing {
            Standing {
                score: self.0.get(p).copied(),
                rank: self.rank(p),
            }
        }
    }

    fn check(model: &Model, known: &mut [(Id, Standing)], moves: &[Move]) {
        let mut view: Vec<(&Id, &mut Standing)> = known.iter_mut().map(|(p, s)| (&*p, s)).collect();
        apply(&mut view, moves).expect("consistent");
        for (p, s) in known.iter() {
            assert_eq!(*s, model.standing(p.as_str()), "{p} after {moves:?}");
        }
    }

    #[test]
    fn a_climb_shifts_the_ranks_between_and_nobody_else() {
        let mut m = Model::default();
        for (p, s) in [("a", 50), ("b", 40), ("c", 30), ("d", 20), ("e", 10)] {
            m.set(p, Some(s));
        }
        let mut known: Vec<(Id, Standing)> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|p| (id(p), m.standing(p)))
            .collect();
        let mv = m.set("d", Some(45));
        assert_eq!((mv.rank, mv.previous_rank), (Some(2), Some(4)));
        check(&m, &mut known, &[mv]);
        assert_eq!(known[0].1.rank, Some(1), "above the move: unchanged");
        assert_eq!(known[4].1.rank, Some(5), "below the move: unchanged");
    }

    #[test]
    fn joins_falls_removals_and_movers_watching_themselves_in_one_batch() {
        let mut m = Model::default();
        for (p, s) in [("a", 50), ("b", 40), ("c", 30)] {
            m.set(p, Some(s));
        }
        let mut known: Vec<(Id, Standing)> = ["a", "b", "c", "z"]
            .iter()
            .map(|p| (id(p), m.standing(p)))
            .collect();
        let moves = vec![
            m.set("x", Some(45)),
            m.set("a", Some(10)),
            m.set("z", Some(35)),
            m.set("b", None),
            m.set("a", Some(60)),
            m.set("y", Some(1)),
        ];
        check(&m, &mut known, &moves);
    }

    #[test]
    fn a_mover_that_disagrees_with_its_event_is_inconsistent() {
        let a = id("a");
        let mut s = Standing {
            score: Some(5),
            rank: Some(3),
        };
        let mv = Move {
            player: a.clone(),
            score: Some(9),
            rank: Some(1),
            previous_rank: Some(2),
            name: None,
        };
        assert_eq!(apply(&mut [(&a, &mut s)], &[mv]), Err(Inconsistent));
    }

    #[test]
    fn random_batches_match_the_model() {
        // A small deterministic generator: the e2e property test does the same against Redis.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let players: Vec<String> = (0..30).map(|i| format!("p{i}")).collect();
        let mut m = Model::default();
        let mut known: Vec<(Id, Standing)> = players
            .iter()
            .step_by(2)
            .map(|p| (id(p), Standing::default()))
            .collect();
        for _ in 0..300 {
            let moves: Vec<Move> = (0..=next(8))
                .map(|_| {
                    let p = &players[next(30) as usize];
                    let score = (next(10) != 0).then(|| next(40) as i64);
                    m.set(p, score)
                })
                .collect();
            check(&m, &mut known, &moves);
        }
    }
}
