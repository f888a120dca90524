//! The ranks of a board's known standings while a flush applies its moves: a treap keyed by rank
//! with a lazy range add. Pure.
//!
//! A move takes one player out at its old rank, shifts every rank of its span by one and puts the
//! player back at its new rank. Here the three are one pass ([`Treap::relocate`]): three splits
//! cut the tree at the old rank, around it and at the new one, a lazy add shifts the span, and
//! three merges join the pieces again with the mover in place. Each is `O(log W)` for `W`
//! standings, so applying `K` moves costs `O(K log W)` whoever moves: no pass over the other
//! movers, no sort. Nodes live in one buffer kept between flushes and are named by index.

/// No node.
pub const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// The rank, before the `add` of its ancestors.
    rank: u64,
    /// Added to every rank below this node (itself excluded), not yet pushed down.
    add: i64,
    priority: u32,
    left: u32,
    right: u32,
    /// What the caller keeps at this rank (a standing's slot).
    value: u32,
}

/// A move was refused ([`Treap::relocate`]): the tree is as it was before it.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused;

/// A set of ranks (distinct), each holding a value.
#[derive(Default)]
pub struct Treap {
    nodes: Vec<Node>,
    root: u32,
    /// The priorities' generator (xorshift; any sequence keeps the tree correct, a random one
    /// keeps it shallow).
    seed: u64,
}

impl Treap {
    /// Builds the tree over `sorted`, (rank, value) sorted by rank with no rank twice, in
    /// `O(n)`; node `i` holds `sorted[i]`.
    pub fn build(&mut self, sorted: &[(u64, u32)]) {
        self.nodes.clear();
        if self.seed == 0 {
            self.seed = 0x9e37_79b9_7f4a_7c15;
        }
        // The right spine of the tree built so far; a Cartesian tree by priority.
        let mut spine: Vec<u32> = Vec::with_capacity(64);
        for &(rank, value) in sorted {
            let i = self.nodes.len() as u32;
            let priority = self.priority();
            self.nodes.push(Node {
                rank,
                add: 0,
                priority,
                left: NIL,
                right: NIL,
                value,
            });
            let mut last = NIL;
            while let Some(&top) = spine.last() {
                if self.nodes[top as usize].priority >= priority {
                    break;
                }
                last = top;
                spine.pop();
            }
            self.nodes[i as usize].left = last;
            if let Some(&top) = spine.last() {
                self.nodes[top as usize].right = i;
            }
            spine.push(i);
        }
        self.root = spine.first().copied().unwrap_or(NIL);
    }

    fn priority(&mut self) -> u32 {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed = x;
        (x >> 32) as u32
    }

    /// Pushes node `n`'s pending add down to its children.
    fn push(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        if node.add == 0 {
            return;
        }
        for c in [node.left, node.right] {
            if c != NIL {
                let child = &mut self.nodes[c as usize];
                child.rank = (child.rank as i64 + node.add) as u64;
                child.add += node.add;
            }
        }
        self.nodes[n as usize].add = 0;
    }

    /// Splits `t` into the ranks below `rank` and those at or above it.
    fn split(&mut self, t: u32, rank: u64) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        self.push(t);
        if self.nodes[t as usize].rank < rank {
            let (l, r) = self.split(self.nodes[t as usize].right, rank);
            self.nodes[t as usize].right = l;
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, rank);
            self.nodes[t as usize].left = r;
            (l, t)
        }
    }

    /// Joins `a` and `b`, every rank of `a` below every rank of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            self.push(a);
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            a
        } else {
            self.push(b);
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            b
        }
    }

    /// One move, in one pass of three splits and three merges: takes out the node at `old`
    /// (`None`: the mover was not ranked), shifts by one every rank between `old` and `new`
    /// (`None`, not ranked, counts as past the last rank), and puts a node at `new`. `put` is given the node taken out (`None`: no node held `old`) and
    /// answers the node to put at `new` (that one, one from [`Treap::fresh`], or `None`), or
    /// refuses the move. Also refused when several nodes hold `old`: the ranks the tree was
    /// given were not those of one board.
    pub fn relocate(
        &mut self,
        old: Option<u64>,
        new: Option<u64>,
        put: impl FnOnce(&mut Treap, Option<u32>) -> Result<Option<u32>, Refused>,
    ) -> Result<(), Refused> {
        // Below `o`, the node at `o`, above `o`.
        let (a, x, c) = match old {
            Some(o) => {
                let (a, b) = self.split(self.root, o);
                let (x, c) = self.split(b, o.saturating_add(1));
                (a, x, c)
            }
            None => (self.root, NIL, NIL),
        };
        let restore = |t: &mut Treap| {
            let xc = t.merge(x, c);
            t.root = t.merge(a, xc);
        };
        if x != NIL && (self.nodes[x as usize].left != NIL || self.nodes[x as usize].right != NIL) {
            restore(self);
            return Err(Refused);
        }
        let Ok(n) = put(self, (x != NIL).then_some(x)) else {
            restore(self);
            return Err(Refused);
        };
        let n = n.filter(|_| new.is_some());
        let n = match n {
            Some(n) => {
                let node = &mut self.nodes[n as usize];
                node.rank = new.unwrap_or(u64::MAX);
                node.add = 0;
                node.left = NIL;
                node.right = NIL;
                n
            }
            None => NIL,
        };
        let o = old.unwrap_or(u64::MAX);
        let w = new.unwrap_or(u64::MAX);
        self.root = if w < o {
            // Climbing to `w`: the ranks from `w` to just before `o` each grow by one.
            let (a1, a2) = self.split(a, w);
            self.shift(a2, 1);
            let left = self.merge(a1, n);
            let right = self.merge(a2, c);
            self.merge(left, right)
        } else if w > o {
            // Falling to `w`: the ranks just after `o` up to `w` each shrink by one.
            let (c1, c2) = self.split(c, w.saturating_add(1));
            self.shift(c1, -1);
            let left = self.merge(a, c1);
            let right = self.merge(n, c2);
            self.merge(left, right)
        } else {
            let left = self.merge(a, n);
            self.merge(left, c)
        };
        Ok(())
    }

    /// Adds `d` to every rank of the tree `t` (lazily).
    fn shift(&mut self, t: u32, d: i64) {
        if t != NIL {
            let node = &mut self.nodes[t as usize];
            node.rank = (node.rank as i64 + d) as u64;
            node.add += d;
        }
    }

    /// A new node holding `value`, outside the tree until [`Treap::relocate`] puts it in.
    pub fn fresh(&mut self, value: u32) -> u32 {
        let priority = self.priority();
        self.nodes.push(Node {
            rank: 0,
            add: 0,
            priority,
            left: NIL,
            right: NIL,
            value,
        });
        (self.nodes.len() - 1) as u32
    }

    /// The value of node `n`.
    pub fn value(&self, n: u32) -> u32 {
        self.nodes[n as usize].value
    }

    /// Every (rank, value) in rank order, into `out` (cleared first).
    pub fn sorted(&mut self, out: &mut Vec<(u64, u32)>) {
        out.clear();
        let mut stack: Vec<u32> = Vec::with_capacity(64);
        let mut t = self.root;
        while t != NIL || !stack.is_empty() {
            while t != NIL {
                self.push(t);
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            // unwrap-free: the loop condition keeps the stack non-empty here.
            let Some(n) = stack.pop() else { break };
            let node = &self.nodes[n as usize];
            out.push((node.rank, node.value));
            t = node.right;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(t: &mut Treap) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        t.sorted(&mut out);
        out
    }

    /// Ranks given twice are found out, a refused `put` changes nothing, and the tree keeps
    /// every node.
    #[test]
    fn a_rank_held_twice_or_a_refused_put_leaves_the_tree_as_it_was() {
        let held = [(1, 10), (2, 20), (2, 21), (3, 30)];
        let mut t = Treap::default();
        t.build(&held);
        let never = |_: &mut Treap, _| -> Result<Option<u32>, Refused> { panic!("not asked") };
        assert_eq!(t.relocate(Some(2), Some(1), never), Err(Refused));
        assert_eq!(ranks(&mut t), held);
        let refused = t.relocate(Some(3), Some(1), |t, out| {
            assert_eq!(out.map(|n| t.value(n)), Some(30));
            Err(Refused)
        });
        assert_eq!(refused, Err(Refused));
        assert_eq!(ranks(&mut t), held);
    }

    /// The same moves on a sorted `Vec` (the model) and on the treap give the same ranks: a
    /// ranked player moving, one joining (a node put, or none: not tracked), one leaving, and
    /// a rank nobody holds.
    #[test]
    fn random_moves_match_a_sorted_vec() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        // The model's move: out at `old`, the ranks between shift, `put` in at `new`.
        fn model_move(
            m: &mut Vec<(u64, u32)>,
            old: Option<u64>,
            new: Option<u64>,
            put: Option<u32>,
        ) {
            let (o, w) = (old.unwrap_or(u64::MAX), new.unwrap_or(u64::MAX));
            m.retain(|e| Some(e.0) != old);
            for e in m.iter_mut() {
                if w < o && e.0 >= w && e.0 < o {
                    e.0 += 1;
                } else if w > o && e.0 > o && e.0 <= w {
                    e.0 -= 1;
                }
            }
            if let (Some(w), Some(v)) = (new, put) {
                m.push((w, v));
            }
            m.sort_unstable();
        }
        for round in 0..50 {
            let mut model: Vec<(u64, u32)> = Vec::new();
            let mut rank = 0;
            for v in 0..(next(200) as u32) {
                rank += 1 + next(3);
                model.push((rank, v));
            }
            let mut t = Treap::default();
            t.build(&model);
            let mut fresh = 1000;
            for _ in 0..300 {
                let top = rank + 2;
                let new = (next(5) > 0).then(|| 1 + next(top));
                let (old, put) = match next(3) {
                    // A ranked player moves (or leaves).
                    0 if !model.is_empty() => {
                        let (old, v) = model[next(model.len() as u64) as usize];
                        (Some(old), Some(v))
                    }
                    // One joins: tracked (a node put) or not.
                    1 => {
                        fresh += 1;
                        (None, (next(2) == 0).then_some(fresh))
                    }
                    // A rank nobody holds: nothing is taken out there.
                    _ => {
                        let missing = 1 + next(top);
                        if model.iter().any(|e| e.0 == missing) {
                            continue;
                        }
                        (Some(missing), None)
                    }
                };
                // No move lands on a rank that stays held (one board's ranks are distinct).
                let mut after = model.clone();
                model_move(&mut after, old, new, None);
                if new.is_some_and(|w| put.is_some() && after.iter().any(|e| e.0 == w)) {
                    continue;
                }
                t.relocate(old, new, |t, out| {
                    assert_eq!(out.map(|n| t.value(n)), put.filter(|_| old.is_some()));
                    Ok(match (out, put) {
                        (Some(n), _) => Some(n),
                        (None, Some(v)) => Some(t.fresh(v)),
                        (None, None) => None,
                    })
                })
                .expect("distinct ranks");
                model_move(&mut model, old, new, put);
                rank = model.last().map_or(0, |e| e.0);
            }
            assert_eq!(ranks(&mut t), model, "round {round}");
        }
    }
}
