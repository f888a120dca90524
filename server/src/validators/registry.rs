//! The compiled validators of this instance. A module is compiled once per instance whatever
//! name it is stored under and however often it is asked for: the cache is keyed by the SHA-256
//! of its bytes, so every instance that reads the same bytes from Redis compiles the same module
//! once, and a re-upload of unchanged bytes costs nothing. The built-in `2048` validator is
//! compiled at start and is always there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use super::{ModuleError, Sandbox, Validator, BUILTIN_2048};

/// The name of the built-in validator.
pub const BUILTIN_NAME: &str = "2048";

/// Compiled modules kept at most; past it the cache forgets one entry per new module (an
/// operator replaces validators rarely; the ones in use are compiled again on their next use).
const MAX_CACHED: usize = 64;

/// SHA-256 of a module's bytes.
pub type Digest = [u8; 32];

pub fn digest(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// The compiled-module cache and the sandbox they run in. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    sandbox: Sandbox,
    builtin: Validator,
    cache: Mutex<HashMap<Digest, Validator>>,
    compiled: AtomicU64,
}

impl Registry {
    /// Compiles the built-in validator (tens of milliseconds, once, at start).
    pub fn new(sandbox: Sandbox) -> anyhow::Result<Registry> {
        let builtin = sandbox
            .compile(BUILTIN_2048)
            .map_err(|e| anyhow::anyhow!("the built-in 2048 validator: {e}"))?;
        Ok(Registry {
            inner: Arc::new(Inner {
                sandbox,
                builtin,
                cache: Mutex::new(HashMap::new()),
                compiled: AtomicU64::new(0),
            }),
        })
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.inner.sandbox
    }

    /// The built-in `2048` validator.
    pub fn builtin(&self) -> &Validator {
        &self.inner.builtin
    }

    /// How many modules this instance has compiled (the built-in one aside).
    pub fn compiled(&self) -> u64 {
        self.inner.compiled.load(Ordering::Relaxed)
    }

    /// The compiled validator of `bytes`: from the cache, or checked and compiled on a blocking
    /// thread (compiling takes milliseconds and must not hold an async worker). A module that
    /// fails the checks is not cached. Two first requests for the same bytes at once may both
    /// compile; the results are the same and one is kept.
    pub async fn compile(&self, bytes: Arc<[u8]>) -> Result<(Validator, Digest), ModuleError> {
        let key = digest(&bytes);
        if let Some(v) = self.cached(&key) {
            return Ok((v, key));
        }
        let this = self.clone();
        let compiled = tokio::task::spawn_blocking(move || this.inner.sandbox.compile(&bytes))
            .await
            .map_err(|e| ModuleError::Invalid(format!("the compiler stopped: {e}")))??;
        self.inner.compiled.fetch_add(1, Ordering::Relaxed);
        // unwrap: the lock is never held across a panic (only map operations inside).
        let mut cache = self.inner.cache.lock().unwrap();
        if cache.len() >= MAX_CACHED && !cache.contains_key(&key) {
            if let Some(old) = cache.keys().next().copied() {
                cache.remove(&old);
            }
        }
        let v = cache.entry(key).or_insert(compiled).clone();
        Ok((v, key))
    }

    /// The compiled validator whose bytes have this SHA-256 (hex), if this instance has it.
    pub fn cached_hex(&self, sha256: &str) -> Option<Validator> {
        let mut key = [0u8; 32];
        if sha256.len() != 64 {
            return None;
        }
        for (i, b) in key.iter_mut().enumerate() {
            *b = u8::from_str_radix(sha256.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        self.cached(&key)
    }

    fn cached(&self, key: &Digest) -> Option<Validator> {
        // unwrap: as in `compile`.
        self.inner.cache.lock().unwrap().get(key).cloned()
    }
}
