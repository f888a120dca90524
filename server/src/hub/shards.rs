//! A map split into shards by the key's hash, each under a lock of its own: work on keys of
//! different shards never waits for each other. The registry (`mod.rs`) keeps its sessions,
//! boards, players and client addresses in four of these, so no lock of the hub spans the
//! instance.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Mutex, MutexGuard};

/// Shards per map: a few times the cores, so that two busy keys rarely share one.
const SHARDS: usize = 16;

pub(super) struct Shards<K, V> {
    shards: Box<[Mutex<HashMap<K, V, foldhash::fast::RandomState>>]>,
    hasher: foldhash::fast::RandomState,
}

impl<K: Hash + Eq, V> Default for Shards<K, V> {
    fn default() -> Self {
        Shards {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl<K: Hash + Eq, V> Shards<K, V> {
    /// The shard that holds `key` (whether or not it is there), locked.
    pub fn lock<Q>(&self, key: &Q) -> MutexGuard<'_, HashMap<K, V, foldhash::fast::RandomState>>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        let i = self.hasher.hash_one(key) as usize % SHARDS;
        crate::sync::lock(&self.shards[i])
    }

    /// Every entry, one shard locked at a time: a shard's entries are seen together, the others
    /// may change meanwhile.
    pub fn each(&self, mut f: impl FnMut(&K, &V)) {
        for shard in &self.shards {
            for (k, v) in crate::sync::lock(shard).iter() {
                f(k, v);
            }
        }
    }

    /// How many entries there are, shard by shard.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| crate::sync::lock(s).len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is always found in the shard it went into; `each` and `len` see every shard.
    #[test]
    fn keys_are_found_where_they_went_and_every_shard_is_seen() {
        let m: Shards<u64, u64> = Shards::default();
        for k in 0..1000 {
            m.lock(&k).insert(k, k * 2);
        }
        assert_eq!(m.len(), 1000);
        for k in 0..1000 {
            assert_eq!(m.lock(&k).get(&k), Some(&(k * 2)));
        }
        let mut sum = 0;
        m.each(|k, v| {
            assert_eq!(*v, k * 2);
            sum += k;
        });
        assert_eq!(sum, 999 * 1000 / 2);
        let used = m
            .shards
            .iter()
            .filter(|s| !s.lock().unwrap().is_empty())
            .count();
        assert_eq!(used, SHARDS, "1 000 keys spread over every shard");
    }
}
