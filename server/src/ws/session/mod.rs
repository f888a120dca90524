//! One WebSocket session: a single `tokio::select!` loop over the client's frames, the
//! session's outbound queue (fed by its own answers and by the hub), the heartbeat tick, the
//! slow-client check, the answers of work in flight and the shutdown signal — and one exit path
//! that closes the socket with a reason. What the messages mean is `protocol.rs`; when a client
//! is too slow, `slow.rs`.
//!
//! Nothing in the loop awaits the socket: a message is written only when the socket has room
//! (`poll_ready`), so a client that does not read stalls nobody, not even its own session's
//! bookkeeping, and its queue filling up is what gets it closed with 1008.

mod flood;
mod protocol;
mod slow;

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use actix_ws::{
    AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Message, ProtocolError,
};
use futures_util::stream::FuturesUnordered;
use futures_util::{Sink, SinkExt, StreamExt};
use scorecast_shared::ErrorCode;
use tokio::time::Instant;

use super::conn::ConnHandle;
use crate::hub::{Member, Outbox};
use crate::state::AppState;
use flood::{Flood, Verdict};
use protocol::{InFlight, Session};
use slow::SlowClient;

/// Submissions and subscriptions of one session that may wait for Redis at the same time. Acks
/// carry their id, so they may come back in any order; past this the session stops reading
/// until one returns.
const MAX_INFLIGHT: usize = 64;
/// On shutdown, how long in-flight submissions and their answers may take before the close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long the final close frame may wait for room on the socket; past that the connection
/// is aborted.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// A client closed for not reading: how long its close frame may wait (best effort: it is not
/// reading) before its connection is aborted and its buffers freed.
const ABORT_WAIT: Duration = Duration::from_millis(100);

/// How a session ends.
enum Exit {
    /// The connection is gone: nothing left to send.
    Gone,
    /// Send a close frame (with this reason) and end.
    Close(Option<CloseReason>),
    /// A client that does not read: queue a close frame, then abort the TCP connection.
    Abort(CloseReason),
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
pub async fn run(
    state: Arc<AppState>,
    member: Member,
    conn: ConnHandle,
    mut socket: actix_ws::Session,
    mut frames: AggregatedMessageStream,
) {
    let ws = state.settings.ws.clone();
    let ping_every = Duration::from_millis(ws.ping_interval_ms);
    let client_timeout = Duration::from_millis(ws.client_timeout_ms);
    let outbox = member.outbox().clone();
    let mut shutdown = member.hub().shutdown_signal();
    let mut s = Session::new(state, member);
    s.welcome();
    let mut heartbeat = tokio::time::interval_at(Instant::now() + ping_every, ping_every);
    let mut last_heard = Instant::now();
    let mut inflight: FuturesUnordered<InFlight> = FuturesUnordered::new();
    let mut shutting_down = *shutdown.borrow();
    let mut slow = SlowClient::new(Duration::from_millis(ws.slow_client_ms));
    let mut flood = Flood::new(ws.max_messages_per_sec, std::time::Instant::now());

    let exit = loop {
        if shutting_down {
            break close(CloseCode::Away, "server shutting down");
        }
        let pending = slow.observe(&outbox);
        let suspect = slow.suspect(&outbox);
        // Reading is paused while the queue is full (each frame may owe an answer) and while
        // too many submissions are in flight.
        let can_read = !outbox.is_full() && inflight.len() < MAX_INFLIGHT;
        tokio::select! {
            biased;
            _ = shutdown.changed() => shutting_down = true,
            _ = slow.tick(), if suspect => {
                if let Some(exit) = slow.verdict(&outbox, s.member().id()) {
                    break exit;
                }
            }
            Some(done) = inflight.next(), if !inflight.is_empty() => s.finished(done),
            ready = poll_fn(|cx| Pin::new(&mut socket).poll_ready(cx)), if pending => {
                if ready.is_err() {
                    break Exit::Gone;
                }
                if let Some(m) = outbox.pop() {
                    if Pin::new(&mut socket).start_send(m).is_err() {
                        break Exit::Gone;
                    }
                    slow.progressed();
                }
            }
            _ = outbox.notified() => {}
            frame = frames.recv(), if can_read => {
                last_heard = Instant::now();
                match on_frame(&mut s, &outbox, flood.as_mut(), frame, ws.max_frame_bytes) {
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
            }
        }
    };

    if shutting_down {
        finish_in_flight(&mut s, &mut inflight, &outbox, &mut socket).await;
    }
    // Leave the hub before the last await, so nothing more is offered to this session.
    drop(s);
    match exit {
        Exit::Gone => {}
        Exit::Close(reason) => {
            if tokio::time::timeout(CLOSE_WAIT, socket.close(reason))
                .await
                .is_err()
            {
                conn.abort();
            }
        }
        Exit::Abort(reason) => {
            let _ = tokio::time::timeout(ABORT_WAIT, socket.close(Some(reason))).await;
            conn.abort();
        }
    }
}

/// Handles one frame from the client: work it started, or how the session ends.
fn on_frame(
    s: &mut Session,
    outbox: &Outbox,
    flood: Option<&mut Flood>,
    frame: Option<Result<AggregatedMessage, ProtocolError>>,
    max_frame_bytes: usize,
) -> Result<Option<InFlight>, Exit> {
    let oversize = || {
        close(
            CloseCode::Size,
            &format!("messages above {max_frame_bytes} bytes are refused"),
        )
    };
    match frame {
        None => return Err(Exit::Gone),
        Some(Ok(AggregatedMessage::Text(t))) => {
            match flood.map_or(Verdict::Pass, |f| f.check(std::time::Instant::now())) {
                Verdict::Pass => return Ok(s.on_text(&t)),
                Verdict::Refuse { retry_after_ms } => s.refuse(&t, retry_after_ms),
                Verdict::Close => {
                    tracing::info!(
                        session = s.member().id(),
                        "closing a client that floods (1008)"
                    );
                    return Err(close(CloseCode::Policy, "too many messages"));
                }
            }
        }
        Some(Ok(AggregatedMessage::Binary(_))) => {
            s.error(ErrorCode::BadRequest, "protocol v1 uses JSON text frames")
        }
        Some(Ok(AggregatedMessage::Ping(b))) => outbox.push(Message::Pong(b)),
        Some(Ok(AggregatedMessage::Pong(_))) => {}
        // Echo the client's close (RFC 6455 §5.5.1).
        Some(Ok(AggregatedMessage::Close(r))) => return Err(Exit::Close(r)),
        Some(Err(ProtocolError::Overflow)) => return Err(oversize()),
        // actix-ws reports a message of many fragments that outgrows the limit as this I/O error.
        Some(Err(ProtocolError::Io(e))) if e.to_string().contains("maximum continuation size") => {
            return Err(oversize());
        }
        Some(Err(e)) => {
            tracing::debug!(session = s.member().id(), error = %e, "websocket protocol error");
            return Err(close(CloseCode::Protocol, "websocket protocol error"));
        }
    }
    Ok(None)
}

/// On shutdown: submissions in flight were taken from the client, so their answers are owed.
/// Lets them finish and go out before the close frame (bounded, so shutdown cannot hang).
async fn finish_in_flight(
    s: &mut Session,
    inflight: &mut FuturesUnordered<InFlight>,
    outbox: &Outbox,
    socket: &mut actix_ws::Session,
) {
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    while let Ok(Some(done)) = tokio::time::timeout_at(deadline, inflight.next()).await {
        s.finished(done);
    }
    let flush = tokio::time::timeout_at(deadline, async {
        while let Some(m) = outbox.pop() {
            if SinkExt::send(socket, m).await.is_err() {
                break;
            }
        }
    });
    let _ = flush.await;
}
