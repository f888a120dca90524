//! The audit log (`lb:{<board>}:log`), read back: one object per accepted submission, ban or
//! lift, newest first, filtered by player and time and paged by cursor.
//!
//! `lua/submit.lua` writes one stream entry per script call carrying the whole batch: `season`,
//! `time_ms`, `op` (the board's), `subs` (the submissions as the script got them) and `results`
//! (their results as it returned them), both msgpack; each accepted submission is one event.
//! Entries of earlier versions are read too: a `batch` field of `player id points op score
//! rank` lines, or one event in the entry's own fields (before batching; the ban
//! scripts' entries are still of that kind). A page can end inside a batch, so a cursor is a
//! stream id plus how many of that entry's submissions were already returned.
//!
//! Past the log's oldest entry a page goes on in the board's moderation history
//! (`lb:{<board>}:modlog`: bans, lifts, removals and admins' score changes, copied there under
//! the log's own ids and trimmed only by their own cap), so moderation the log has dropped is
//! still read, in the same order and with the same cursors.

use redis::streams::StreamId;
use redis::AsyncCommands;
use scorecast_shared::{ErrorCode, Id};
use serde::Serialize;

use super::batch::{RESULT_FIELDS, SUB_FIELDS};
use super::Store;
use crate::error::{AppError, AppResult};
use crate::{keys, reply};

/// One page of a board's audit log, newest first.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct LogPage {
    pub board: String,
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<serde_json::Value>,
    /// Pass as `cursor` for the next (older) page; `null` when there is none.
    pub next_cursor: Option<String>,
}

/// Where a page starts: before stream entry `id`, skipping its first `skip` events (newest
/// first). Written `<ms>-<seq>` or `<ms>-<seq>.<skip>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogCursor {
    id: String,
    skip: usize,
}

impl LogCursor {
    /// Checks the whole format before any Redis call, so a bad cursor is a `bad_request` and
    /// never a Redis error: `<ms>-<seq>` are decimal digits only (no sign, no spaces) within
    /// `u64`, and not `0-0`: no stream entry precedes it (Redis never issues that id), and Redis
    /// refuses it as the exclusive end of `XREVRANGE`.
    pub fn parse(s: &str) -> Option<LogCursor> {
        let number = |t: &str| {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse::<u64>().ok())
                .flatten()
        };
        let (id, skip) = match s.split_once('.') {
            Some((id, skip)) => (id, usize::try_from(number(skip)?).ok()?),
            None => (s, 0),
        };
        let (ms, seq) = id.split_once('-')?;
        let (ms, seq) = (number(ms)?, number(seq)?);
        (ms, seq).ne(&(0, 0)).then(|| LogCursor {
            id: format!("{ms}-{seq}"),
            skip,
        })
    }

    /// A bare stream id (`<ms>-<seq>`), without a count of events to skip.
    pub fn is_plain(&self) -> bool {
        self.skip == 0
    }

    fn render(&self) -> String {
        match self.skip {
            0 => self.id.clone(),
            k => format!("{}.{k}", self.id),
        }
    }
}

/// How many stream entries one log page examines at most (filtering by player skips some).
const LOG_SCAN_MAX: usize = 10_000;

impl Store {
    /// A page of the audit log, newest first: events before `cursor`, not older than
    /// `since_ms`, of `player` only if given. Examines at most [`LOG_SCAN_MAX`] stream entries
    /// per page; `next_cursor` continues where it stopped.
    pub async fn log_page(
        &self,
        board: &Id,
        player: Option<&Id>,
        since_ms: Option<i64>,
        limit: usize,
        cursor: Option<LogCursor>,
    ) -> AppResult<LogPage> {
        self.board(board).await.map_err(|e| match e.code {
            ErrorCode::UnknownBoard => {
                AppError::new(ErrorCode::UnknownBoard, format!("no board {board}"))
            }
            _ => e,
        })?;
        let mut c = self.conn.clone();
        let key = keys::log(board);
        let filtered = player.is_some() || since_ms.is_some();
        let chunk = if filtered { 500 } else { limit.max(1) };
        let mut page = LogPage {
            board: board.to_string(),
            entries: Vec::new(),
            next_cursor: None,
        };
        let modlog = keys::modlog(board);
        let cursor_at = cursor.clone();
        // A cursor inside an entry: that entry first, past what was returned of it.
        let (mut end, mut pending) = match cursor {
            None => ("+".to_owned(), None),
            Some(cur) if cur.skip == 0 => (format!("({}", cur.id), None),
            Some(cur) => {
                let r: redis::streams::StreamRangeReply =
                    c.xrange_count(&key, &cur.id, &cur.id, 1).await?;
                (
                    format!("({}", cur.id),
                    r.ids.into_iter().next().map(|e| (e, cur.skip)),
                )
            }
        };
        let mut scanned = 0;
        let mut complete = false;
        'scan: loop {
            let batch: Vec<(StreamId, usize)> = match pending.take() {
                Some(first) => vec![first],
                None => {
                    let r: redis::streams::StreamRangeReply =
                        c.xrevrange_count(&key, &end, "-", chunk).await?;
                    scanned += r.ids.len();
                    if r.ids.is_empty() {
                        break;
                    }
                    let full = r.ids.len() == chunk;
                    if let Some(last) = r.ids.last() {
                        end = format!("({}", last.id);
                    }
                    let ids: Vec<_> = r.ids.into_iter().map(|e| (e, 0)).collect();
                    if !full {
                        // The start of the stream is in this chunk.
                        for (e, skip) in ids {
                            if take_events(&e, skip, player, since_ms, limit, &mut page)? {
                                complete = true;
                                break 'scan;
                            }
                        }
                        break;
                    }
                    ids
                }
            };
            for (e, skip) in batch {
                if take_events(&e, skip, player, since_ms, limit, &mut page)? {
                    complete = true;
                    break 'scan;
                }
            }
            if scanned >= LOG_SCAN_MAX {
                page.next_cursor = Some(end.trim_start_matches('(').to_owned());
                complete = true;
                break;
            }
        }
        if !complete {
            // Past the oldest entry of the log: the moderation history older than it.
            let first: redis::streams::StreamRangeReply = c.xrange_count(&key, "-", "+", 1).await?;
            let mut bound = first.ids.first().map(|e| e.id.clone());
            let mut pending = None;
            if let Some(cur) = &cursor_at {
                if bound.as_deref().is_none_or(|b| older(&cur.id, b)) {
                    bound = Some(cur.id.clone());
                    if cur.skip > 0 {
                        let r: redis::streams::StreamRangeReply =
                            c.xrange_count(&modlog, &cur.id, &cur.id, 1).await?;
                        pending = r.ids.into_iter().next().map(|e| (e, cur.skip));
                    }
                }
            }
            let mut end = bound.map_or("+".to_owned(), |b| format!("({b}"));
            loop {
                let batch: Vec<(StreamId, usize)> = match pending.take() {
                    Some(first) => vec![first],
                    None => {
                        let r: redis::streams::StreamRangeReply =
                            c.xrevrange_count(&modlog, &end, "-", chunk).await?;
                        scanned += r.ids.len();
                        let Some(last) = r.ids.last() else { break };
                        end = format!("({}", last.id);
                        r.ids.into_iter().map(|e| (e, 0)).collect()
                    }
                };
                let n = batch.len();
                for (e, skip) in batch {
                    if take_events(&e, skip, player, since_ms, limit, &mut page)? {
                        return Ok(page);
                    }
                }
                if n < chunk {
                    break;
                }
                if scanned >= LOG_SCAN_MAX {
                    page.next_cursor = Some(end.trim_start_matches('(').to_owned());
                    break;
                }
            }
        }
        Ok(page)
    }
}

/// Whether stream id `a` is older than `b` (both `<ms>-<seq>`).
fn older(a: &str, b: &str) -> bool {
    let parse = |s: &str| {
        let (ms, seq) = s.split_once('-').unwrap_or((s, "0"));
        (
            ms.parse::<u64>().unwrap_or(0),
            seq.parse::<u64>().unwrap_or(0),
        )
    };
    parse(a) < parse(b)
}

/// Adds the events of entry `e` (newest first, past the first `skip`) that pass the filters.
/// Returns true when the page is complete: full (its `next_cursor` set) or past `since_ms`.
fn take_events(
    e: &StreamId,
    skip: usize,
    player: Option<&Id>,
    since_ms: Option<i64>,
    limit: usize,
    page: &mut LogPage,
) -> AppResult<bool> {
    let events = events_of(e)?;
    let n = events.len();
    for (i, ev) in events.into_iter().enumerate().skip(skip) {
        if since_ms.is_some_and(|s| ev["time_ms"].as_i64().is_some_and(|t| t < s)) {
            return Ok(true);
        }
        if player.is_some_and(|p| ev["player"].as_str() != Some(p.as_str())) {
            continue;
        }
        page.entries.push(ev);
        if page.entries.len() == limit {
            let cur = LogCursor {
                id: e.id.clone(),
                skip: if i + 1 < n { i + 1 } else { 0 },
            };
            page.next_cursor = Some(cur.render());
            return Ok(true);
        }
    }
    Ok(false)
}

/// The events of one stream entry, newest first.
fn events_of(e: &StreamId) -> AppResult<Vec<serde_json::Value>> {
    let field = |k: &str| e.map.get(k).and_then(reply::text).unwrap_or_default();
    let packed = e.map.contains_key("subs");
    if !packed && !e.map.contains_key("batch") {
        return Ok(vec![plain_entry(e)]);
    }
    let season = field("season");
    let time_ms = field("time_ms")
        .parse::<i64>()
        .map_err(|_| reply::bad("log time"))?;
    if packed {
        let mut events = packed_batch(e, &season, time_ms, &field("op"))?;
        events.reverse();
        return Ok(events);
    }
    field("batch")
        .lines()
        .rev()
        .map(|line| audit_line(&e.id, &season, time_ms, line))
        .collect()
}

/// An entry that holds one event in its own fields: numbers as numbers, plus `stream_id`.
fn plain_entry(e: &StreamId) -> serde_json::Value {
    let mut obj = serde_json::Map::new();
    obj.insert("stream_id".into(), e.id.clone().into());
    for (k, v) in &e.map {
        let s = reply::text(v).unwrap_or_default();
        if k == "by" && s.is_empty() {
            // Not placed with a key (the expiry job).
            continue;
        }
        if matches!(k.as_str(), "reason" | "until_ms") && s.is_empty() {
            // A ban given without a reason, or until lifted: as its record says it.
            obj.insert(k.clone(), serde_json::Value::Null);
            continue;
        }
        let v = match s.parse::<i64>() {
            Ok(n) if !matches!(k.as_str(), "player" | "id" | "season" | "reason") => n.into(),
            _ => s.into(),
        };
        obj.insert(k.clone(), v);
    }
    serde_json::Value::Object(obj)
}

/// The accepted submissions of a batch entry, in the batch's order: `subs` holds 6 strings per
/// submission (player, id, points, op override or `''`, name, who: the submitting key's name,
/// `#v` for a validator's replay or `''`; `'1'` in entries written before keys had names), `results` the
/// batch's season and 7 fields per submission, led by `1` for one accepted (not a duplicate).
fn packed_batch(
    e: &StreamId,
    season: &str,
    time_ms: i64,
    board_op: &str,
) -> AppResult<Vec<serde_json::Value>> {
    let unpack = |k: &str| match e.map.get(k) {
        Some(redis::Value::BulkString(b)) => reply::unpack(b),
        _ => None,
    };
    let (Some(subs), Some(results)) = (unpack("subs"), unpack("results")) else {
        return Err(reply::bad("log batch"));
    };
    if subs.len() % SUB_FIELDS != 0 || results.len() != 1 + subs.len() / SUB_FIELDS * RESULT_FIELDS
    {
        return Err(reply::bad("log batch length"));
    }
    let text = |v: &redis::Value| reply::text(v).ok_or_else(|| reply::bad("log field"));
    let int = |v: &redis::Value| reply::int(v).ok_or_else(|| reply::bad("log number"));
    subs.chunks_exact(SUB_FIELDS)
        .zip(results[1..].chunks_exact(RESULT_FIELDS))
        .filter(|(_, r)| r[0] == redis::Value::Int(1))
        .map(|(s, r)| {
            let op = match text(&s[3])? {
                own if own.is_empty() => board_op.to_owned(),
                own => own,
            };
            let mut ev = serde_json::json!({
                "stream_id": e.id,
                "player": text(&s[0])?,
                "id": text(&s[1])?,
                "points": int(&s[2])?,
                "op": op,
                "score": int(&r[2])?,
                "rank": int(&r[3])?,
                "season": season,
                "time_ms": time_ms,
            });
            match text(&s[5])?.as_str() {
                "" | "1" | super::batch::VERIFIED => {}
                by => ev["by"] = by.into(),
            }
            Ok(ev)
        })
        .collect()
}

/// One submission of a batch entry of rounds 3 to 5: `player id points op score rank`.
fn audit_line(
    stream_id: &str,
    season: &str,
    time_ms: i64,
    line: &str,
) -> AppResult<serde_json::Value> {
    let f: Vec<&str> = line.split(' ').collect();
    let [player, id, points, op, score, rank] = f[..] else {
        return Err(reply::bad("log line"));
    };
    let n = |s: &str| s.parse::<i64>().map_err(|_| reply::bad("log number"));
    Ok(serde_json::json!({
        "stream_id": stream_id,
        "player": player,
        "id": id,
        "points": n(points)?,
        "op": op,
        "score": n(score)?,
        "rank": n(rank)?,
        "season": season,
        "time_ms": time_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::LogCursor;

    #[test]
    fn cursors_round_trip_and_refuse_junk() {
        for s in [
            "1-0",
            "0-1",
            "1700000000000-3",
            "1700000000000-3.4",
            "18446744073709551615-18446744073709551615",
        ] {
            assert_eq!(LogCursor::parse(s).map(|c| c.render()).as_deref(), Some(s));
        }
        assert_eq!(
            LogCursor::parse("1-0.0").map(|c| c.render()).as_deref(),
            Some("1-0")
        );
        // Leading zeros are read as Redis reads them.
        assert_eq!(
            LogCursor::parse("007-01").map(|c| c.render()).as_deref(),
            Some("7-1")
        );
        for s in [
            "",
            "x",
            "1",
            "1-",
            "-1",
            "1-0.",
            "1-0.x",
            "1-0.-1",
            "a-b",
            "0-0",
            "0-0.3",
            "00-000",
            "+1-0",
            "1-+0",
            "1-0.+2",
            " 1-0",
            "1-0 ",
            "1--1",
            "1-2-3",
            "18446744073709551616-0",
            "1-18446744073709551616",
            "1-0.99999999999999999999",
            "１-0",
        ] {
            assert!(LogCursor::parse(s).is_none(), "{s}");
        }
    }
}
