//! One WebSocket session: a single `tokio::select!` loop over the client's frames, the heartbeat
//! tick, the slow-client check, the answers of work in flight, the outbox's signals and the
//! shutdown signal — and one exit path that closes the connection with a reason. What the
//! messages mean is `protocol.rs`; when a client is too slow, `slow.rs`.
//!
//! The session never writes to the socket: its answers, like the hub's pushes, go to its outbox,
//! which the connection's writer empties (`hub/writer.rs`). So a client that does not read stalls
//! nobody, not even its own session's bookkeeping, and its queue filling up, or its messages
//! waiting with nothing taken, is what gets it closed with 1008.

mod flood;
mod protocol;
mod slow;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actix_ws::{
    AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Message, ProtocolError,
};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use scorecast_shared::ErrorCode;
use tokio::time::Instant;

use super::conn::ConnHandle;
use crate::hub::{Member, Outbox};
use crate::state::AppState;
use flood::{Flood, Verdict};
use protocol::{Finished, InFlight, Session};
use slow::SlowClient;

/// Submissions and subscriptions of one session that may wait for Redis at the same time. Acks
/// carry their id, so they may come back in any order; past this the session stops reading
/// until one returns.
const MAX_INFLIGHT: usize = 64;
/// Room in a `proof` message for everything but the proof's base64 (its type, ids and keys).
const PROOF_ENVELOPE_BYTES: usize = 1024;

/// The largest message the socket reads: `ws.max_frame_bytes`, or more if a `proof` of
/// `validators.proof_bytes` (as base64, 4 characters per 3 bytes) needs more, so the sandbox's
/// proof size is the limit a proof meets. Other messages above `max_frame_bytes` are closed
/// with 1009 all the same ([`on_frame`]).
pub fn max_message_bytes(settings: &crate::config::Settings) -> usize {
    let proof = settings.validators.proof_bytes.div_ceil(3) * 4 + PROOF_ENVELOPE_BYTES;
    settings.ws.max_frame_bytes.max(proof)
}

/// Whether a text message is a `proof` (the one message that may be larger than
/// `max_frame_bytes`). Reads the `type` only; the rest is skipped, not kept.
fn is_proof(frame: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        ty: Option<std::borrow::Cow<'a, str>>,
    }
    frame.trim_start().starts_with('{')
        && serde_json::from_str::<Tag>(frame).is_ok_and(|t| t.ty.as_deref() == Some("proof"))
}

/// On shutdown, how long in-flight submissions may take to be answered before the close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How a session ends.
enum Exit {
    /// The connection is gone: nothing left to send.
    Gone(Gone),
    /// Send a close frame (with this reason) and end.
    Close(Option<CloseReason>),
    /// The client closed: echo its close frame and end.
    Echo(Option<CloseReason>),
    /// A client that does not read: queue a close frame (best effort: it is not reading) and
    /// end; the kernel ends the TCP connection once it has taken nothing for `slow_client_ms`
    /// (`ws/conn.rs`), which frees its buffers.
    Unread(CloseReason),
}

/// Why a connection ended without the server closing it (`scorecast_ws_disconnects_total`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Gone {
    /// The connection ended without a close frame: a TCP reset or shutdown, a read or a write
    /// that failed (actix reports a reset and a shutdown alike).
    Abrupt,
    /// The connection was found gone while messages waited for a writer that took nothing
    /// ([`SlowClient::was_stalled`]): a stalled reader the kernel dropped (`TCP_USER_TIMEOUT`,
    /// `ws/conn.rs`) before the session's own slow-client check closed it.
    Stalled,
}

impl Gone {
    fn label(self) -> &'static str {
        match self {
            Gone::Abrupt => "abrupt",
            Gone::Stalled => "stalled",
        }
    }
}

/// Counts a session that ended without the server's close frame, by cause.
fn disconnected(cause: &str) {
    crate::metrics::WS_DISCONNECTS
        .with_label_values(&[cause])
        .inc();
}

/// A close frame's reason; every close the server starts is counted by its code.
fn reason(code: CloseCode, why: &str) -> CloseReason {
    crate::metrics::WS_CLOSES
        .with_label_values(&[&u16::from(code).to_string()])
        .inc();
    CloseReason {
        code,
        description: Some(why.to_owned()),
    }
}

fn close(code: CloseCode, why: &str) -> Exit {
    Exit::Close(Some(reason(code, why)))
}

/// Runs a session until the client leaves, times out, is too slow, breaks the protocol, or the
/// server shuts down.
///
/// Every open WebSocket holds this future for its whole life, so it is kept small
/// (`session_future_stays_small`): the session and the client's frame stream live in this
/// `async` block once (an `async fn` stores its arguments twice, as captures and as locals, and
/// once more where they are moved to), the loop borrows them, the shutdown phase is boxed
/// (allocated only when reached), and what only busy sessions need is allocated on first
/// use.
pub fn run(
    state: Arc<AppState>,
    member: Member,
    conn: ConnHandle,
    mut frames: AggregatedMessageStream,
) -> impl Future<Output = ()> {
    let settings = state.clone();
    let mut s = Session::new(state, member);
    async move {
        let exit = serve(
            &settings.settings.ws,
            max_message_bytes(&settings.settings),
            &mut s,
            &mut frames,
        )
        .await;
        // The writer sends the answers still queued, then the close frame, and ends; a
        // connection that is gone gets no close frame. Its output ends as the session leaves
        // the hub (`Member`'s drop): actix then ends the connection.
        let outbox = s.member().outbox();
        match exit {
            Exit::Gone(cause) => disconnected(cause.label()),
            Exit::Close(reason) => outbox.close(reason),
            Exit::Echo(reason) => {
                disconnected("client_close");
                outbox.close(reason);
            }
            Exit::Unread(reason) => outbox.close(Some(reason)),
        }
        drop(s);
        // The address slot is held until the connection is gone as well.
        drop(conn);
    }
}

/// The session's loop, up to how it ends (in-flight work finished first on shutdown).
async fn serve(
    ws: &crate::config::WsSettings,
    max_message_bytes: usize,
    s: &mut Session,
    frames: &mut AggregatedMessageStream,
) -> Exit {
    let limits = (ws.max_frame_bytes, max_message_bytes);
    let mut slow = SlowClient::new(Duration::from_millis(ws.slow_client_ms));
    let mut flood = Flood::new(ws.max_messages_per_sec, std::time::Instant::now());
    let ping_every = Duration::from_millis(ws.ping_interval_ms);
    let client_timeout = Duration::from_millis(ws.client_timeout_ms);
    let outbox = s.member().outbox().clone();
    let mut shutdown = s.member().hub().shutdown_signal();
    s.welcome();
    let mut heartbeat = tokio::time::interval_at(Instant::now() + ping_every, ping_every);
    let mut last_heard = Instant::now();
    let mut inflight = InFlightSet::default();
    let mut shutting_down = *shutdown.borrow();
    // Set by the heartbeat: once the queue has drained, give back what a burst made the
    // session allocate (so an idle session holds its bare minimum).
    let mut trim = false;

    // Both wait futures live across passes of the loop (re-creating them on every pass costs a
    // lock on their `Notify` each time); a permit of the outbox's `Notify` is never lost.
    let shutdown_changed = shutdown.changed();
    tokio::pin!(shutdown_changed);
    let signalled = outbox.notified();
    tokio::pin!(signalled);

    let exit = loop {
        if shutting_down {
            break close(CloseCode::Away, "server shutting down");
        }
        let status = outbox.status();
        if status.gone {
            break Exit::Gone(Gone::Abrupt);
        }
        if trim && status.empty {
            trim = false;
            outbox.trim();
            slow.release();
            inflight.release();
        }
        let suspect = SlowClient::suspect(&status);
        // Reading is paused while the queue is full (each frame may owe an answer) and while
        // too many submissions are in flight.
        let can_read = status.full_since.is_none() && inflight.len() < MAX_INFLIGHT;
        tokio::select! {
            biased;
            _ = &mut shutdown_changed, if !shutting_down => shutting_down = true,
            _ = slow.tick(), if suspect => {
                if let Some(exit) = slow.verdict(&outbox.status(), s.member().id()) {
                    break exit;
                }
            }
            Some(done) = inflight.next(), if !inflight.is_empty() => s.finished(done),
            // The queue became full or not full, messages started to wait, or the writer is
            // gone: the next pass looks.
            _ = &mut signalled => signalled.set(outbox.notified()),
            frame = frames.recv(), if can_read => {
                last_heard = Instant::now();
                match on_frame(s, &outbox, flood.as_mut(), frame, limits) {
                    Ok(Some(work)) => inflight.push(work),
                    Ok(None) => {}
                    Err(exit) => break exit,
                }
            }
            _ = heartbeat.tick() => {
                if last_heard.elapsed() > client_timeout {
                    break close(CloseCode::Normal, "no frame from the client within the timeout");
                }
                outbox.ping();
                trim = true;
            }
        }
    };

    // A connection found gone while a stalled reader's messages waited: the kernel dropped it.
    let exit = match exit {
        Exit::Gone(_) if SlowClient::was_stalled(&outbox.status()) => Exit::Gone(Gone::Stalled),
        exit => exit,
    };
    if shutting_down {
        Box::pin(finish_in_flight(s, &mut inflight)).await;
    }
    exit
}

/// The session's work in flight; the set is allocated by the first submission or subscription
/// (most sessions of a spectator-heavy game never submit) and given back once idle.
#[derive(Default)]
struct InFlightSet {
    set: Option<FuturesUnordered<InFlight>>,
}
impl InFlightSet {
    fn len(&self) -> usize {
        self.set.as_ref().map_or(0, FuturesUnordered::len)
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, work: InFlight) {
        self.set
            .get_or_insert_with(FuturesUnordered::new)
            .push(work);
    }

    async fn next(&mut self) -> Option<Finished> {
        match self.set.as_mut() {
            Some(set) => set.next().await,
            None => None,
        }
    }

    /// Frees the set when nothing is in flight.
    fn release(&mut self) {
        if self.is_empty() {
            self.set = None;
        }
    }
}

/// Handles one frame from the client: work it started, or how the session ends.
fn on_frame(
    s: &mut Session,
    outbox: &Outbox,
    flood: Option<&mut Flood>,
    frame: Option<Result<AggregatedMessage, ProtocolError>>,
    (max_frame_bytes, max_message_bytes): (usize, usize),
) -> Result<Option<InFlight>, Exit> {
    // The close reason names a proof's own limit too where it is larger.
    let oversize = || {
        let reason = if max_message_bytes > max_frame_bytes {
            format!(
                "messages above {max_frame_bytes} bytes are refused ({max_message_bytes} for a proof)"
            )
        } else {
            format!("messages above {max_frame_bytes} bytes are refused")
        };
        close(CloseCode::Size, &reason)
    };
    // Every message counts against the rate limit, control frames included (a ping costs a
    // pong); a refused text message is answered `rate_limited`, a refused ping or binary frame
    // gets no answer at all.
    let verdict = match &frame {
        Some(Ok(
            AggregatedMessage::Text(_)
            | AggregatedMessage::Binary(_)
            | AggregatedMessage::Ping(_)
            | AggregatedMessage::Pong(_),
        )) => flood.map_or(Verdict::Pass, |f| f.check(std::time::Instant::now())),
        _ => Verdict::Pass,
    };
    if verdict == Verdict::Close {
        tracing::info!(
            session = s.member().id(),
            "closing a client that floods (1008)"
        );
        return Err(close(CloseCode::Policy, "too many messages"));
    }
    let refused = matches!(verdict, Verdict::Refuse { .. });
    match frame {
        None => return Err(Exit::Gone(Gone::Abrupt)),
        // The socket let it through for a proof's sake (`max_message_bytes`): anything else
        // above the frame limit is closed as the socket would have closed it.
        Some(Ok(AggregatedMessage::Text(t))) if t.len() > max_frame_bytes && !is_proof(&t) => {
            return Err(oversize());
        }
        Some(Ok(AggregatedMessage::Binary(b))) if b.len() > max_frame_bytes => {
            return Err(oversize());
        }
        Some(Ok(AggregatedMessage::Text(t))) => match verdict {
            Verdict::Refuse { retry_after_ms } => s.refuse(&t, retry_after_ms),
            _ => return Ok(s.on_text(&t)),
        },
        Some(Ok(_)) if refused => {}
        Some(Ok(AggregatedMessage::Binary(_))) => {
            s.error(ErrorCode::BadRequest, "protocol v1 uses JSON text frames")
        }
        Some(Ok(AggregatedMessage::Ping(b))) => outbox.push(Message::Pong(b)),
        Some(Ok(AggregatedMessage::Pong(_))) => {}
        // Echo the client's close (RFC 6455 §5.5.1).
        Some(Ok(AggregatedMessage::Close(r))) => return Err(Exit::Echo(r)),
        Some(Err(ProtocolError::Overflow)) => return Err(oversize()),
        // actix-ws reports a message of many fragments that outgrows the limit as this I/O error.
        Some(Err(ProtocolError::Io(e))) if e.to_string().contains("maximum continuation size") => {
            return Err(oversize());
        }
        // A text message that is not UTF-8 (one frame, or its fragments together): actix-ws
        // reports it as invalid data, RFC 6455 §7.4.1 closes it with 1007.
        Some(Err(ProtocolError::Io(e))) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(close(CloseCode::Invalid, "text messages must be UTF-8"));
        }
        // The transport failed (a reset, or the connection ended mid-frame): an abrupt
        // disconnect, not a protocol error of the client's.
        Some(Err(ProtocolError::Io(e))) => {
            tracing::debug!(session = s.member().id(), error = %e, "websocket connection broke");
            return Err(Exit::Gone(Gone::Abrupt));
        }
        Some(Err(e)) => {
            tracing::debug!(session = s.member().id(), error = %e, "websocket protocol error");
            return Err(close(CloseCode::Protocol, "websocket protocol error"));
        }
    }
    Ok(None)
}

/// On shutdown: submissions in flight were taken from the client, so their answers are owed.
/// Lets them finish (bounded, so shutdown cannot hang); their answers go out before the close
/// frame.
async fn finish_in_flight(s: &mut Session, inflight: &mut InFlightSet) {
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    while let Ok(Some(done)) = tokio::time::timeout_at(deadline, inflight.next()).await {
        s.finished(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future a function of four arguments returns, from the fn item alone.
    fn future_size<A, B, C, D, F: Future>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A `proof` of the largest size the sandbox takes fits in a message the socket reads
    /// (default: 64 KiB of proof, 87 382 characters of base64), while only a `proof` may be
    /// above `max_frame_bytes`.
    #[test]
    fn only_proofs_outgrow_the_frame_limit() {
        let settings = crate::config::Settings::default();
        let proof_b64 = settings.validators.proof_bytes.div_ceil(3) * 4;
        let longest = format!(
            r#"{{"type":"proof","id":"{0}","board":"{0}","run":"{0}","proof":"{1}"}}"#,
            "i".repeat(64),
            "A".repeat(proof_b64)
        );
        assert!(longest.len() <= max_message_bytes(&settings));
        assert!(settings.ws.max_frame_bytes < longest.len());
        assert!(is_proof(&longest));
        assert!(is_proof(r#" {"id":"a","type":"proof"}"#));
        for other in [
            r#"{"type":"submit","id":"a","board":"b","points":1,"pad":"proof"}"#,
            r#"{"type":"pro\u006ff","type":"proof"}"#,
            r#"["proof"]"#,
            r#"{"kind":"proof"}"#,
            "proof",
        ] {
            assert!(!is_proof(other), "{other}");
        }
    }

    /// Every open WebSocket holds one session future (inside its Tokio task) for its whole life:
    /// about 1 040 bytes (debug build). A field or a `select!` branch that adds to every idle
    /// connection should be boxed or made on first use.
    #[test]
    fn session_future_stays_small() {
        let size = future_size(run);
        assert!(size <= 1_100, "the session future grew to {size} bytes");
    }
}
