//! The ranks of a board's known standings while a flush applies its moves: a treap keyed by rank
//! with a lazy range add. Pure.
//!
//! A move takes one player out at its old rank, shifts every rank of its span by one and puts the
//! player back at its new rank. Here each of those is a split or a merge, `O(log W)` for `W`
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

/// Two nodes held the same rank ([`Treap::take`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Duplicate;

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

    /// Takes out the node at `rank`, if there is one: its index, to put back with
    /// [`Treap::insert`]. `Err` (the tree unchanged) when several nodes hold `rank`: the ranks
    /// it was given were not those of one board.
    pub fn take(&mut self, rank: u64) -> Result<Option<u32>, Duplicate> {
        let (a, b) = self.split(self.root, rank);
        let (x, c) = self.split(b, rank.saturating_add(1));
        if x == NIL {
            self.root = self.merge(a, c);
            return Ok(None);
        }
        let node = self.nodes[x as usize];
        if node.left != NIL || node.right != NIL {
            let xc = self.merge(x, c);
            self.root = self.merge(a, xc);
            return Err(Duplicate);
        }
        self.root = self.merge(a, c);
        self.nodes[x as usize].add = 0;
        Ok(Some(x))
    }

    /// A new node holding `value`, outside the tree until [`Treap::insert`]ed.
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

    /// The value of node `n` (from [`Treap::take`]).
    pub fn value(&self, n: u32) -> u32 {
        self.nodes[n as usize].value
    }

    /// Puts node `n` (from [`Treap::take`] or [`Treap::fresh`]) at `rank`, which no other node holds.
    pub fn insert(&mut self, n: u32, rank: u64) {
        self.nodes[n as usize].rank = rank;
        let (a, b) = self.split(self.root, rank);
        let ab = self.merge(a, n);
        self.root = self.merge(ab, b);
    }

    /// Adds `d` to every rank in `lo..=hi`.
    pub fn add(&mut self, lo: u64, hi: u64, d: i64) {
        if lo > hi {
            return;
        }
        let (a, b) = self.split(self.root, lo);
        let (m, c) = self.split(b, hi.saturating_add(1));
        if m != NIL {
            let node = &mut self.nodes[m as usize];
            node.rank = (node.rank as i64 + d) as u64;
            node.add += d;
        }
        let mc = self.merge(m, c);
        self.root = self.merge(a, mc);
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

    /// Ranks given twice are found out, and the tree keeps every node.
    #[test]
    fn a_rank_held_twice_is_refused_and_nothing_is_lost() {
        let mut t = Treap::default();
        t.build(&[(1, 10), (2, 20), (2, 21), (3, 30)]);
        assert_eq!(t.take(2), Err(Duplicate));
        let mut out = Vec::new();
        t.sorted(&mut out);
        assert_eq!(out, [(1, 10), (2, 20), (2, 21), (3, 30)]);
        assert_eq!(t.take(3).map(|n| n.map(|n| t.value(n))), Ok(Some(30)));
    }

    /// The same operations on a sorted `Vec` (the model) and on the treap give the same ranks.
    #[test]
    fn random_takes_inserts_and_adds_match_a_sorted_vec() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..50 {
            let mut model: Vec<(u64, u32)> = Vec::new();
            let mut rank = 0;
            for v in 0..(next(200) as u32) {
                rank += 1 + next(3);
                model.push((rank, v));
            }
            let mut t = Treap::default();
            t.build(&model);
            for _ in 0..300 {
                match next(3) {
                    0 if !model.is_empty() => {
                        // A move: out at its rank, the ranks between shift, back at a new one.
                        let i = next(model.len() as u64) as usize;
                        let (old, v) = model.remove(i);
                        let n = t
                            .take(old)
                            .expect("distinct ranks")
                            .expect("a node at a held rank");
                        assert_eq!(t.value(n), v);
                        let new = 1 + next(rank + 2);
                        let (lo, hi, d) = if new < old {
                            (new, old - 1, 1)
                        } else {
                            (old + 1, new, -1)
                        };
                        t.add(lo, hi, d);
                        for e in &mut model {
                            if (lo..=hi).contains(&e.0) {
                                e.0 = (e.0 as i64 + d) as u64;
                            }
                        }
                        if model.iter().all(|e| e.0 != new) {
                            t.insert(n, new);
                            model.push((new, v));
                            model.sort_unstable();
                        }
                    }
                    1 => {
                        // A join below `lo`: every rank from `lo` on moves down one.
                        let lo = 1 + next(rank + 2);
                        t.add(lo, u64::MAX - 1, 1);
                        for e in &mut model {
                            if e.0 >= lo {
                                e.0 += 1;
                            }
                        }
                    }
                    _ => {
                        let missing = 1 + next(rank + 2);
                        if model.iter().all(|e| e.0 != missing) {
                            assert_eq!(t.take(missing), Ok(None), "no node at a rank not held");
                        }
                    }
                }
                rank = model.last().map_or(0, |e| e.0);
            }
            let mut out = Vec::new();
            t.sorted(&mut out);
            assert_eq!(out, model, "round {round}");
        }
    }
}
