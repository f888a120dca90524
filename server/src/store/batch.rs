//! Group commit of submissions (`docs/architecture.md`, "The path of a submission"): one task per
//! board with submissions in flight applies every submission that arrived while its previous
//! `lua/submit.lua` call was running in the next call.

use redis::Value;
use scorecast_shared::{ErrorCode, Id, Op};
use tokio::sync::oneshot;

use super::{opt_rank, Accepted, Store, Submission};
use crate::clock::Clock;
use crate::conn::RedisConn;
use crate::error::{AppError, AppResult};
use crate::lanes::Lane;
use crate::{keys, reply, scripts};

/// A board's batcher stops after this long without submissions (the next one starts it again).
pub const BATCHER_IDLE: std::time::Duration = std::time::Duration::from_secs(30);

/// A submission waiting for its batch, and where its result goes.
pub(super) type Pending = (Submission, oneshot::Sender<AppResult<Accepted>>);

/// The most submissions one script call applies.
const MAX_BATCH: usize = 128;

impl Store {
    /// Applies one submission atomically: dedup, limiter, op, tie-break, seq, audit log,
    /// event (`lua/submit.lua`).
    ///
    /// Group commit: submissions to one board queue up while that board's previous script call
    /// is in flight, and go together in the next call — one round trip and one event for the
    /// lot, each with its own result. With no load, a batch is one submission.
    pub async fn submit(&self, s: &Submission) -> AppResult<Accepted> {
        let (tx, rx) = oneshot::channel();
        let gone = || AppError::new(ErrorCode::Unavailable, "the submission queue stopped");
        let store = self.clone();
        let sent = self.batchers.send(&s.board, (s.clone(), tx), |lane| {
            run_batches(store.clone(), lane)
        });
        if sent.is_err() {
            return Err(outcome_unknown(gone()));
        }
        rx.await
            .unwrap_or_else(|_| Err(gone()))
            .map_err(outcome_unknown)
    }
}

/// A submission answered `unavailable` may still have been applied (a timeout does not say
/// whether Redis ran the script, and a paused Redis runs it once it resumes): its outcome is
/// unknown, and the answer says so. A retry with the same id settles it, the dedup record making
/// it safe.
fn outcome_unknown(e: AppError) -> AppError {
    if e.code != ErrorCode::Unavailable {
        return e;
    }
    AppError::new(
        ErrorCode::Unavailable,
        format!(
            "outcome unknown ({}): the submission may or may not have been applied; \
             retry with the same id until answered, the dedup makes it safe",
            e.message
        ),
    )
}

/// Applies a board's queued submissions, as many as are waiting (up to [`MAX_BATCH`]) per
/// script call, until the lane retires.
async fn run_batches(store: Store, mut lane: Lane<Pending>) {
    let Store {
        mut conn,
        clock,
        replica_wait,
        commits,
        ..
    } = store;
    let board = lane.key().clone();
    let mut batch: Vec<Pending> = Vec::with_capacity(MAX_BATCH);
    while lane.next(&mut batch, |b, _| b.len() < MAX_BATCH).await {
        let hook = commits.get().filter(|h| h.wants(&board));
        match apply_batch(
            &mut conn,
            &clock,
            &board,
            &batch,
            replica_wait,
            hook.is_some(),
        )
        .await
        {
            Ok((results, event)) => {
                // The views first, quietly: a session woken by its result finds its `me`
                // update queued behind its ack, and writes both at once.
                let wake = match (event, hook) {
                    (Some(event), Some(hook)) => hook.committed(&board, &event),
                    _ => None,
                };
                for ((_, tx), r) in batch.drain(..).zip(results) {
                    let _ = tx.send(r);
                }
                if let Some(wake) = wake {
                    wake();
                }
            }
            Err(e) => {
                for (_, tx) in batch.drain(..) {
                    let _ = tx.send(Err(e.clone()));
                }
            }
        }
    }
}

async fn apply_batch(
    conn: &mut RedisConn,
    clock: &Clock,
    board: &Id,
    batch: &[Pending],
    replica_wait: Option<(u32, u64)>,
    want_event: bool,
) -> AppResult<(Vec<AppResult<Accepted>>, Option<Vec<u8>>)> {
    let config = keys::config(board);
    let script = &scripts::publishing(conn).submit;
    let mut inv = script.key(&config);
    inv.arg(clock.arg())
        .arg(if want_event { "1" } else { "" })
        .arg(pack_submissions(batch.iter().map(|(s, _)| s)));
    crate::metrics::BATCH_SIZE.observe(batch.len() as f64);
    let reply: Value = crate::metrics::script("submit", inv.invoke_async(conn)).await?;
    if let Some((replicas, timeout_ms)) = replica_wait {
        // The whole batch waits once: WAIT covers every write this connection made on the
        // board's master. Short of replicas, nobody is acknowledged (a retry is applied once).
        let got = conn.wait_replicas(&config, replicas, timeout_ms).await?;
        if got < replicas {
            return Err(AppError::new(
                ErrorCode::Unavailable,
                format!("applied, but {got} of {replicas} replicas confirmed it in time"),
            ));
        }
    }
    // The results, packed: the batch's season, 7 fields per submission; then the change event
    // if asked for (lua/submit.lua).
    let Value::Array(reply) = reply else {
        return Err(reply::bad("submit batch"));
    };
    let [Value::BulkString(packed), Value::BulkString(event)] = &reply[..] else {
        return Err(reply::bad("submit batch"));
    };
    let items = reply::unpack(packed).ok_or_else(|| reply::bad("submit batch packing"))?;
    if items.len() != 1 + RESULT_FIELDS * batch.len() {
        return Err(reply::bad("submit batch length"));
    }
    let event = Some(event).filter(|e| !e.is_empty()).cloned();
    let season = reply::text(&items[0]).ok_or_else(|| reply::bad("season"))?;
    let results = items[1..]
        .chunks_exact(RESULT_FIELDS)
        .map(|r| result(board, &season, r))
        .collect();
    Ok((results, event))
}

/// The 6th field of a validator's replay of a run's proof in a batch (`lua/submit.lua`): not an
/// id, so never a key's name.
pub const VERIFIED: &str = "#v";

/// A batch's submissions as `lua/submit.lua` takes them (ARGV[3]): one msgpack array of 6
/// strings each — player, id, points in decimal, op override or `''`, display name or `''`,
/// who: the name of the key that submitted for the player (skipping the board's limit),
/// [`VERIFIED`] for a validator's replay, or `''`. Also how the audit entry stores them
/// (`store/log.rs`).
pub fn pack_submissions<'a>(batch: impl ExactSizeIterator<Item = &'a Submission>) -> Vec<u8> {
    use rmp::encode::{write_array_len, write_str};
    use std::fmt::Write;

    // A Vec grows as needed: writing into it cannot fail.
    const INFALLIBLE: &str = "writing msgpack into a Vec";
    let mut out = Vec::with_capacity(5 + 48 * batch.len());
    write_array_len(&mut out, (SUB_FIELDS * batch.len()) as u32).expect(INFALLIBLE);
    let mut points = String::with_capacity(20);
    for s in batch {
        points.clear();
        write!(points, "{}", s.points).expect(INFALLIBLE);
        let op = s.op.map_or("", |op| match op {
            Op::Incr => "incr",
            Op::Best => "best",
            Op::Set => "set",
        });
        for field in [
            s.player.as_str(),
            s.id.as_str(),
            &points,
            op,
            s.name.as_deref().unwrap_or(""),
            // Who: the submitting key's name (an admin or game server: no submit limit, accepted
            // on verified boards), `VERIFIED` for a validator's replay, '' a player's points.
            match (&s.by, s.verified) {
                (Some(by), _) => by.as_str(),
                (None, true) => VERIFIED,
                (None, false) => "",
            },
        ] {
            write_str(&mut out, field).expect(INFALLIBLE);
        }
    }
    out
}

/// Strings per submission in the script's batch argument ([`pack_submissions`]).
pub(super) const SUB_FIELDS: usize = 6;

/// Fields per submission in the script's packed results (after the batch's season).
pub(super) const RESULT_FIELDS: usize = 7;

/// One submission's fields: `1` (accepted) or `2` (a duplicate), season (`''` = the batch's),
/// points, rank, previous_rank (-1 = none), seq, reached_ms (-1 = none); or an error's code,
/// message, retry_after_ms, limit, reset_ms, 0, 0.
fn result(board: &Id, batch_season: &str, r: &[Value]) -> AppResult<Accepted> {
    let tag = match r[0] {
        Value::Int(tag @ (1 | 2)) => tag,
        _ => return Err(reply::error(r)),
    };
    let n = |i: usize| reply::int(&r[i]).ok_or_else(|| reply::bad("submit field"));
    let season = match reply::text(&r[1]).ok_or_else(|| reply::bad("season"))? {
        s if s.is_empty() => batch_season.to_owned(),
        s => s,
    };
    Ok(Accepted {
        board: board.to_string(),
        season,
        score: n(2)?,
        rank: n(3)? as u64,
        previous_rank: opt_rank(n(4)?),
        seq: n(5)? as u64,
        duplicate: tag == 2,
        reached_ms: Some(n(6)?).filter(|t| *t >= 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::tests::bulk;

    #[test]
    fn results_read_from_the_flat_reply() {
        let board = Id::parse("b").expect("an id");
        let fresh = [1, 0, 7, 2, -1, 5, -1].map(Value::Int);
        let mut fresh = fresh.to_vec();
        fresh[1] = bulk("");
        let a = result(&board, "all", &fresh).expect("accepted");
        assert_eq!(
            (a.season.as_str(), a.score, a.rank, a.previous_rank, a.seq),
            ("all", 7, 2, None, 5)
        );
        assert!(!a.duplicate && a.reached_ms.is_none());
        let mut dup = fresh.clone();
        dup[0] = Value::Int(2);
        dup[1] = bulk("s1");
        dup[4] = Value::Int(3);
        dup[6] = Value::Int(1_000);
        let d = result(&board, "all", &dup).expect("a duplicate");
        assert_eq!(
            (
                d.season.as_str(),
                d.previous_rank,
                d.duplicate,
                d.reached_ms
            ),
            ("s1", Some(3), true, Some(1_000))
        );
        let refused = [
            bulk("rate_limited"),
            bulk("slow down"),
            Value::Int(250),
            Value::Int(5),
            Value::Int(1_000),
            Value::Int(0),
            Value::Int(0),
        ];
        let e = result(&board, "all", &refused).expect_err("refused");
        assert_eq!(e.code, ErrorCode::RateLimited);
        assert_eq!(e.rate.map(|r| (r.retry_after_ms, r.limit)), Some((250, 5)));
        assert_eq!(
            result(&board, "all", &[bulk("nonsense"), bulk("")])
                .expect_err("not a code")
                .code,
            ErrorCode::Unavailable
        );
    }
}
