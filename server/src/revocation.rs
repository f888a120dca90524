//! Token revocation: `POST /admin/players/{player}/revoke` makes every token of that player
//! issued before now invalid, on every instance.
//!
//! The truth is in Redis (`sc:{revoked}`, player → revoked_at_ms, written by `lua/revoke.lua`
//! through [`Store::revoke_tokens`]). Each instance keeps a copy in memory, so checking a token
//! (at `hello` and before every submission) costs no round trip: a poller reads
//! [`Store::revocations_since`] (`lua/revoked_read.lua`) every
//! `auth.revocation_poll_ms` (default 250) — one GET while nothing changed, the whole set after
//! a revocation — so a revocation made through any instance holds on all of them well within a
//! second. Polling rather than pub/sub: a missed message could never be noticed, a missed poll is
//! made up by the next one.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use scorecast_shared::Id;

use crate::error::AppResult;
use crate::metrics;
use crate::store::{Revoked, Store};

/// What this instance knows of revocations.
#[derive(Default)]
struct Known {
    /// `sc:{revoked}:seq` when last read (-1: never read).
    seq: i64,
    /// Player → revoked_at_ms.
    at: HashMap<Id, i64>,
}

/// A cloneable handle on this instance's copy of the revocations.
#[derive(Clone)]
pub struct Revocations {
    known: Arc<RwLock<Known>>,
}

impl Default for Revocations {
    fn default() -> Self {
        Revocations {
            known: Arc::new(RwLock::new(Known {
                seq: -1,
                at: HashMap::new(),
            })),
        }
    }
}

impl std::fmt::Debug for Revocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // unwrap: the lock is never held across a panic-prone call.
        let n = self.known.read().unwrap().at.len();
        write!(f, "Revocations({n} players)")
    }
}

/// Two handles are equal when they share one copy (what `Player`'s `PartialEq` needs).
impl PartialEq for Revocations {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.known, &other.known)
    }
}

impl Eq for Revocations {}

impl Revocations {
    /// Whether a token of `player` issued at `issued_at_ms` has been revoked.
    pub fn revoked(&self, player: &Id, issued_at_ms: i64) -> bool {
        // unwrap: the lock is never held across a panic-prone call.
        let known = self.known.read().unwrap();
        known.at.get(player).is_some_and(|&at| issued_at_ms < at)
    }

    /// Records a revocation this instance just made (the poller would learn of it too).
    fn note(&self, player: &Id, at_ms: i64) {
        // unwrap: the lock is never held across a panic-prone call.
        let mut known = self.known.write().unwrap();
        let e = known.at.entry(player.clone()).or_insert(at_ms);
        *e = (*e).max(at_ms);
    }

    /// Reads the revocations from Redis if they changed since the last read.
    pub async fn refresh(&self, store: &Store) -> redis::RedisResult<()> {
        // unwrap: the lock is never held across a panic-prone call.
        let seq = self.known.read().unwrap().seq;
        let Some(Revoked {
            seq: new_seq,
            mut at,
        }) = store.revocations_since(seq).await?
        else {
            return Ok(());
        };
        // unwrap: the lock is never held across a panic-prone call.
        let mut known = self.known.write().unwrap();
        // Keep what this instance noted meanwhile and the read did not see yet.
        for (p, ms) in known.at.drain() {
            let e = at.entry(p).or_insert(ms);
            *e = (*e).max(ms);
        }
        *known = Known { seq: new_seq, at };
        Ok(())
    }

    /// Polls Redis every `every` until every other handle is gone (the application stopped).
    pub fn spawn_poller(&self, store: Store, every: Duration) {
        let weak: Weak<RwLock<Known>> = Arc::downgrade(&self.known);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Logged and counted once per outage, not on every tick of it.
            let mut failing = false;
            loop {
                tick.tick().await;
                let Some(known) = weak.upgrade() else { return };
                let handle = Revocations { known };
                match handle.refresh(&store).await {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("revocations readable again");
                    }
                    Ok(()) => {}
                    Err(e) if !failing => {
                        failing = true;
                        metrics::REDIS_ERRORS.inc();
                        tracing::warn!(error = %e, "cannot read revocations; keeping the last known");
                    }
                    Err(_) => {}
                }
            }
        });
    }

    /// Revokes every token of `player` issued before now (Redis time, or the test clock) and
    /// notes it here at once. `keep_ms`: how long the record must outlive the tokens it
    /// covers. Returns revoked_at_ms.
    pub async fn revoke(&self, store: &Store, player: &Id, keep_ms: u64) -> AppResult<i64> {
        let at = store.revoke_tokens(player, keep_ms).await?;
        self.note(player, at);
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_issued_before_the_revocation_are_revoked() {
        let r = Revocations::default();
        let alice = Id::parse("alice").unwrap();
        assert!(!r.revoked(&alice, 0));
        r.note(&alice, 1_000);
        assert!(r.revoked(&alice, 999));
        assert!(!r.revoked(&alice, 1_000), "issued at the revocation: valid");
        assert!(!r.revoked(&Id::parse("bob").unwrap(), 0));
        r.note(&alice, 500);
        assert!(
            r.revoked(&alice, 999),
            "an older revocation never moves the time back"
        );
    }
}
