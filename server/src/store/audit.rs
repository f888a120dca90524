//! The admin audit log (`sc:audit`): the admin changes that no board's own log holds — board
//! configuration and deletion, manual rollovers, removed players, token revocations,
//! dead-letter retries — each with the name of the key that made it (never its secret). Bans,
//! lifts and admin scores are in the board's log (`log.rs`), with the key's name too.

use redis::AsyncCommands;
use serde::Serialize;

use super::Store;
use crate::error::AppResult;
use crate::{keys, reply};

/// The audit log keeps about this many entries (`XADD MAXLEN ~`).
const AUDIT_MAXLEN: usize = 10_000;

/// One page of the admin audit log, newest first.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AuditPage {
    /// `{"stream_id", "time_ms", "action", "by", ...the action's fields}`.
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<serde_json::Value>,
    /// Pass as `cursor` for the next (older) page; `null` when there is none.
    pub next_cursor: Option<String>,
}

impl Store {
    /// Records an admin action made with key `by`. The action has already happened: if Redis
    /// refuses the entry it is logged here instead (the request still succeeds).
    pub async fn audit(&self, by: &str, action: &str, fields: &[(&str, &str)]) {
        let time_ms = self.clock.now_ms().to_string();
        let mut items: Vec<(&str, &str)> =
            vec![("action", action), ("by", by), ("time_ms", &time_ms)];
        items.extend_from_slice(fields);
        let mut c = self.conn.clone();
        let r: redis::RedisResult<String> = c
            .xadd_maxlen(
                keys::AUDIT,
                redis::streams::StreamMaxlen::Approx(AUDIT_MAXLEN),
                "*",
                &items,
            )
            .await;
        if let Err(e) = r {
            tracing::warn!(action, key = by, ?fields, error = %e, "could not write the audit log");
        }
    }

    /// A page of the audit log, newest first, before `cursor` (a `stream_id`) if given.
    pub async fn audit_page(&self, limit: usize, cursor: Option<&str>) -> AppResult<AuditPage> {
        let end = cursor.map_or_else(|| "+".to_owned(), |c| format!("({c}"));
        let mut c = self.conn.clone();
        let r: redis::streams::StreamRangeReply =
            c.xrevrange_count(keys::AUDIT, &end, "-", limit).await?;
        let full = r.ids.len() == limit;
        let next_cursor = full.then(|| r.ids.last().map(|e| e.id.clone())).flatten();
        let entries = r
            .ids
            .into_iter()
            .map(|e| {
                let mut obj = serde_json::Map::new();
                obj.insert("stream_id".into(), e.id.clone().into());
                for (k, v) in &e.map {
                    let s = reply::text(v).unwrap_or_default();
                    let v = match (k.as_str(), s.parse::<i64>()) {
                        ("time_ms" | "keys" | "start_ms" | "revoked_at_ms", Ok(n)) => n.into(),
                        // As the configuring request's answer has it.
                        ("created", _) => (s == "1").into(),
                        _ => s.into(),
                    };
                    obj.insert(k.clone(), v);
                }
                serde_json::Value::Object(obj)
            })
            .collect();
        Ok(AuditPage {
            entries,
            next_cursor,
        })
    }
}
