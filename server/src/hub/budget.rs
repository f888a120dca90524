//! The instance's push budget: how many `me` and `around` messages the flushes of all its boards
//! may offer per second (`ws.player_pushes_per_sec`). Delivering a message (the writer's
//! wake-up, its encoding, a `send` on the socket) costs about what deriving and rendering it does,
//! and a flush cannot see that cost; counting messages can. A flush that offered `n` messages
//! spends `n / per_sec` seconds of the budget, and its board's next flush of players' views
//! waits until everything spent so far, by every board, is paid back: the windows of the
//! instance's boards follow from the budget, whatever their number and size.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub struct PushBudget {
    /// 0: no budget.
    per_sec: u32,
    /// When everything spent so far is paid back.
    paid_at: Mutex<Option<Instant>>,
}

impl PushBudget {
    pub fn new(per_sec: u32) -> PushBudget {
        PushBudget {
            per_sec,
            paid_at: Mutex::new(None),
        }
    }

    /// A flush that started at `at` offered `n` players' messages: how long after `at` its
    /// board's next flush of players' views must wait to stay within the budget (zero when it
    /// offered none, or when there is no budget).
    pub fn spend(&self, n: u64, at: Instant) -> Duration {
        if self.per_sec == 0 || n == 0 {
            return Duration::ZERO;
        }
        let cost = Duration::from_secs_f64(n as f64 / f64::from(self.per_sec));
        let mut paid_at = crate::sync::lock(&self.paid_at);
        let from = paid_at.map_or(at, |t| t.max(at));
        let until = from + cost;
        *paid_at = Some(until);
        until - at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One board alone waits exactly its own messages' worth; a second board's flush waits for
    /// the first one's too, so together they stay within the budget.
    #[test]
    fn boards_share_the_instance_budget() {
        let budget = PushBudget::new(10_000);
        let t = Instant::now();
        assert_eq!(budget.spend(5_000, t), Duration::from_millis(500));
        assert_eq!(budget.spend(1_000, t), Duration::from_millis(600));
        // Paid back by then: a later flush waits only for its own.
        let later = t + Duration::from_secs(2);
        assert_eq!(budget.spend(100, later), Duration::from_millis(10));
    }

    /// No messages, or no budget: no wait.
    #[test]
    fn nothing_offered_or_no_budget_waits_nothing() {
        let t = Instant::now();
        let budget = PushBudget::new(10_000);
        budget.spend(50_000, t);
        assert_eq!(budget.spend(0, t), Duration::ZERO);
        assert_eq!(PushBudget::new(0).spend(50_000, t), Duration::ZERO);
    }
}
