//! The per-connection message-rate limit: a token bucket refilled at `max_messages_per_sec` and
//! holding up to twice that. A message beyond it is answered `rate_limited` with
//! `retry_after_ms` and does nothing else.
//!
//! Answering costs the server too, so refusals have a budget of their own (the grace): up to
//! `max_messages_per_sec` refusals, refilled at a third of that per second
//! ([`REFUSALS_REFILL_DIVISOR`]). A client that exhausts it — a burst of one more second's worth
//! while limited, or any rate sustained far enough above the limit — is closed with 1008, so a
//! flood costs at most a third of the limit in answers per second on average, and a client at or
//! under the limit is never refused, so never closed.

use std::time::{Duration, Instant};

/// The refusal budget refills at `max_messages_per_sec / REFUSALS_REFILL_DIVISOR` per second.
pub(crate) const REFUSALS_REFILL_DIVISOR: f64 = 3.0;

/// What to do with one message.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    Pass,
    Refuse { retry_after_ms: u64 },
    Close,
}

pub(super) struct Flood {
    per_sec: f64,
    tokens: f64,
    /// Refusals the client may still be answered before it is closed.
    refusals: f64,
    at: Instant,
}

impl Flood {
    /// `None` when the limit is off (0).
    pub fn new(per_sec: u32, now: Instant) -> Option<Flood> {
        (per_sec > 0).then(|| Flood {
            per_sec: f64::from(per_sec),
            tokens: 2.0 * f64::from(per_sec),
            refusals: f64::from(per_sec),
            at: now,
        })
    }

    pub fn check(&mut self, now: Instant) -> Verdict {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + elapsed * self.per_sec).min(2.0 * self.per_sec);
        self.refusals =
            (self.refusals + elapsed * self.per_sec / REFUSALS_REFILL_DIVISOR).min(self.per_sec);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Verdict::Pass;
        }
        if self.refusals < 1.0 {
            return Verdict::Close;
        }
        self.refusals -= 1.0;
        let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.per_sec);
        Verdict::Refuse {
            retry_after_ms: (wait.as_millis() as u64).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_at_zero() {
        assert!(Flood::new(0, Instant::now()).is_none());
    }

    /// A burst of twice the rate passes, the next is refused with the time until one more
    /// token, a second's worth of refusals more closes, and waiting refills the bucket.
    #[test]
    fn bursts_pass_then_refuse_then_close() {
        let t0 = Instant::now();
        let mut f = Flood::new(10, t0).unwrap();
        for i in 0..20 {
            assert_eq!(f.check(t0), Verdict::Pass, "message {i} of the burst");
        }
        assert_eq!(
            f.check(t0),
            Verdict::Refuse {
                retry_after_ms: 100
            }
        );
        for _ in 1..10 {
            assert!(matches!(f.check(t0), Verdict::Refuse { .. }));
        }
        assert_eq!(
            f.check(t0),
            Verdict::Close,
            "an 11th refusal in a row at 10/s"
        );

        let mut f = Flood::new(10, t0).unwrap();
        for _ in 0..21 {
            f.check(t0);
        }
        // 100 ms later one token is back; 1 s later, ten.
        assert_eq!(f.check(t0 + Duration::from_millis(100)), Verdict::Pass);
        let later = t0 + Duration::from_millis(1100);
        for i in 0..10 {
            assert_eq!(f.check(later), Verdict::Pass, "refilled message {i}");
        }
        assert!(matches!(f.check(later), Verdict::Refuse { .. }));
    }

    /// A steady rate at the limit never gets refused.
    #[test]
    fn the_rate_itself_passes_forever() {
        let t0 = Instant::now();
        let mut f = Flood::new(50, t0).unwrap();
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_millis(20 * i);
            assert_eq!(f.check(now), Verdict::Pass, "message {i}");
        }
    }

    /// When a client sending one message every `every` from `t0` is first closed, if within `for_`.
    fn closed_after(per_sec: u32, every: Duration, for_: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        let mut f = Flood::new(per_sec, t0).unwrap();
        let mut at = Duration::ZERO;
        while at <= for_ {
            if f.check(t0 + at) == Verdict::Close {
                return Some(at);
            }
            at += every;
        }
        None
    }

    /// A paced flood at 30x the limit is closed within its first second (the refusal budget of
    /// one second's worth is spent in about 35 ms at 1 500/s); 1.5x (after its burst allowance of 4 s) within 15 s; 0.95x
    /// never is, over a minute.
    #[test]
    fn sustained_floods_are_closed_and_the_limit_itself_is_not() {
        let at_30x = closed_after(50, Duration::from_micros(667), Duration::from_secs(6));
        assert!(
            at_30x.is_some_and(|t| t < Duration::from_secs(1)),
            "30x: {at_30x:?}"
        );
        let at_1_5x = closed_after(50, Duration::from_micros(13_333), Duration::from_secs(30));
        assert!(
            at_1_5x.is_some_and(|t| t > Duration::from_secs(2) && t < Duration::from_secs(15)),
            "1.5x: {at_1_5x:?}"
        );
        let at_0_95x = closed_after(50, Duration::from_micros(21_053), Duration::from_secs(60));
        assert_eq!(at_0_95x, None, "0.95x");
    }
}
