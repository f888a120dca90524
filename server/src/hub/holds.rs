//! When the holds of a board's `me` views end ([`Board::held`](super::board::Board::held)): the
//! first end exactly, and every hold due by a time. Pure.
//!
//! A hold ends a board-wide duration after the update that went with its player's ack, so holds
//! arrive in about the order they end, and 10 000 players submitting keep about 10 000 of them.
//! A binary heap of that many cost a dozen comparisons on scattered entries for each hold taken
//! out (in a profile at 10 000 watchers, a third of the flush task's own time). Here the holds
//! ending within one millisecond share an entry of an ordered map: adding one is a lookup among
//! about a thousand entries and a push, and taking the due ones out walks from the front.

use std::collections::BTreeMap;
use std::time::Instant;

use super::SessionId;

/// Holds (when each ends, and the session of its view), by the millisecond they end in.
#[derive(Default)]
pub struct Holds {
    /// The millisecond of an end is counted from here (the first hold's end; an earlier end
    /// counts as millisecond 0, still before every later one).
    epoch: Option<Instant>,
    by_ms: BTreeMap<u64, Vec<(Instant, SessionId)>>,
}

impl Holds {
    fn ms(&self, t: Instant) -> u64 {
        self.epoch
            .map_or(0, |e| t.saturating_duration_since(e).as_millis() as u64)
    }

    /// Adds the hold of `sid`'s view, ending at `until`.
    pub fn push(&mut self, until: Instant, sid: SessionId) {
        self.epoch.get_or_insert(until);
        let ms = self.ms(until);
        self.by_ms.entry(ms).or_default().push((until, sid));
    }

    /// When the first hold ends.
    pub fn next(&self) -> Option<Instant> {
        let (_, first) = self.by_ms.first_key_value()?;
        first.iter().map(|h| h.0).min()
    }

    /// Takes out every hold ended by `now`, giving each to `each` (by their milliseconds; in no
    /// particular order within one).
    pub fn take_due(&mut self, now: Instant, mut each: impl FnMut(Instant, SessionId)) {
        let now_ms = self.ms(now);
        while let Some(mut entry) = self.by_ms.first_entry() {
            if *entry.key() > now_ms {
                return;
            }
            entry.get_mut().retain(|&(until, sid)| {
                let due = until <= now;
                if due {
                    each(until, sid);
                }
                !due
            });
            if !entry.get().is_empty() {
                // The rest end later in the same millisecond.
                return;
            }
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Holds come out when due, whatever order they went in; within one millisecond only those
    /// ended by then; `next` is always the first end.
    #[test]
    fn holds_come_out_when_due_whatever_order_they_went_in() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let mut h = Holds::default();
        assert_eq!(h.next(), None);
        // Not in order, two in one millisecond, one before the first added (the epoch).
        for (end, sid) in [(5_000, 1), (2_000, 2), (9_400, 3), (9_100, 4), (1_000, 5)] {
            h.push(us(end + 500), sid);
        }
        assert_eq!(h.next(), Some(us(1_500)));
        let mut out = Vec::new();
        h.take_due(us(1_499), |_, sid| out.push(sid));
        assert!(out.is_empty(), "none due");
        h.take_due(us(5_500), |_, sid| out.push(sid));
        out.sort_unstable();
        assert_eq!(out, [1, 2, 5]);
        assert_eq!(h.next(), Some(us(9_600)));
        h.take_due(us(9_700), |_, sid| out.push(sid));
        assert_eq!(
            out,
            [1, 2, 5, 4],
            "the other one of that millisecond ends later"
        );
        assert_eq!(h.next(), Some(us(9_900)));
        h.take_due(us(9_900), |until, sid| {
            assert_eq!(until, us(9_900));
            out.push(sid)
        });
        assert_eq!(out, [1, 2, 5, 4, 3]);
        assert_eq!(h.next(), None);
    }

    /// Against a list: random ends, taken out at random times, come out exactly when due.
    #[test]
    fn random_holds_match_a_sorted_list() {
        let t0 = Instant::now();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut h = Holds::default();
        let mut model: Vec<(Instant, SessionId)> = Vec::new();
        let mut now = t0;
        for sid in 0..5_000u64 {
            let until = now + Duration::from_micros(rand(900_000));
            h.push(until, sid);
            model.push((until, sid));
            if rand(10) == 0 {
                now += Duration::from_micros(rand(50_000));
                let mut out = Vec::new();
                h.take_due(now, |until, sid| out.push((until, sid)));
                let (mut due, rest): (Vec<_>, Vec<_>) =
                    model.iter().partition(|(until, _)| *until <= now);
                model = rest;
                out.sort();
                due.sort();
                assert_eq!(out, due);
                assert_eq!(h.next(), model.iter().map(|m| m.0).min());
            }
        }
    }
}
