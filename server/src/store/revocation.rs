//! Token revocations in Redis (`sc:{revoked}`, player → revoked_at_ms, and its change counter
//! `sc:{revoked}:seq`): written by `lua/revoke.lua`, read by `lua/revoked_read.lua`. The
//! in-memory copy each instance checks tokens against is kept by the top-level `revocation`
//! module.

use std::collections::HashMap;

use redis::Value;
use scorecast_shared::Id;

use super::Store;
use crate::error::AppResult;
use crate::{keys, reply, scripts};

/// The revocations as read after a change.
#[derive(Debug, PartialEq, Eq)]
pub struct Revoked {
    /// `sc:{revoked}:seq` at the read.
    pub seq: i64,
    /// Player → revoked_at_ms.
    pub at: HashMap<Id, i64>,
}

impl Store {
    /// Revokes every token of `player` issued before now (the store's clock). `keep_ms`: how
    /// long the record must outlive the tokens it covers. Returns revoked_at_ms.
    pub async fn revoke_tokens(&self, player: &Id, keep_ms: u64) -> AppResult<i64> {
        let mut c = self.conn.clone();
        let answer: Vec<Value> = scripts::REVOKE
            .key(keys::REVOKED)
            .key(keys::REVOKED_SEQ)
            .arg(player.as_str())
            .arg(keep_ms)
            .arg(self.clock.arg())
            .invoke_async(&mut c)
            .await?;
        answer
            .get(1)
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("revoke.lua"))
    }

    /// Every revocation, if they changed since `seq` (-1: never read); `None` when not. A raw
    /// Redis error, so that a poller can report an outage once rather than on every attempt.
    pub async fn revocations_since(&self, seq: i64) -> redis::RedisResult<Option<Revoked>> {
        let mut c = self.conn.clone();
        let answer: Vec<Value> = scripts::REVOKED_READ
            .key(keys::REVOKED)
            .key(keys::REVOKED_SEQ)
            .arg(seq)
            .invoke_async(&mut c)
            .await?;
        let new_seq = answer.first().and_then(reply::int).unwrap_or(seq);
        if new_seq == seq {
            return Ok(None);
        }
        let mut at = HashMap::new();
        for pair in answer[1..].chunks_exact(2) {
            let player = reply::text(&pair[0]).and_then(|s| Id::parse(&s).ok());
            if let (Some(player), Some(ms)) = (player, reply::int(&pair[1])) {
                at.insert(player, ms);
            }
        }
        Ok(Some(Revoked { seq: new_seq, at }))
    }
}
