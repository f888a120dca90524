//! The per-connection message-rate limit: a token bucket refilled at `max_messages_per_sec` and
//! holding up to twice that. A message beyond it is answered `rate_limited` with
//! `retry_after_ms` and does nothing else; a client that sends another second's worth of
//! messages while limited is closed with 1008.

use std::time::{Duration, Instant};

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
    at: Instant,
    /// Messages refused since the last one that passed.
    refused: u32,
}

impl Flood {
    /// `None` when the limit is off (0).
    pub fn new(per_sec: u32, now: Instant) -> Option<Flood> {
        (per_sec > 0).then(|| Flood {
            per_sec: f64::from(per_sec),
            tokens: 2.0 * f64::from(per_sec),
            at: now,
            refused: 0,
        })
    }

    pub fn check(&mut self, now: Instant) -> Verdict {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + elapsed * self.per_sec).min(2.0 * self.per_sec);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.refused = 0;
            return Verdict::Pass;
        }
        self.refused += 1;
        if f64::from(self.refused) > self.per_sec {
            return Verdict::Close;
        }
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
}
