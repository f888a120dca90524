//! One WebSocket session (DESIGN §4): a single `tokio::select!` loop over the client's frames,
//! the session's outbound queue (fed by its own answers and by the hub), the heartbeat tick,
//! the slow-client deadline, the answers of submissions in flight and the shutdown signal — and
//! one exit path that closes the socket with a reason.
//!
//! Nothing in the loop awaits the socket: a message is written only when the socket has room
//! (`poll_ready`), so a client that does not read stalls nobody, not even its own session's
//! bookkeeping, and its queue filling up is what gets it closed with 1008.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_ws::{
    AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, Message, ProtocolError,
};
use futures_util::stream::FuturesUnordered;
use futures_util::{Sink, StreamExt};
use scorecast_shared::protocol::{ParseError, ViewKind};
use scorecast_shared::{ClientMsg, ErrorCode, Id, ServerMsg, View, PROTOCOL_VERSION};
use tokio::time::Instant;

use super::hub::Member;
use super::outbox::ViewKey;
use crate::auth::Player;
use crate::state::AppState;
use crate::store::Submission;

/// Submissions and subscriptions of one session that may wait for Redis at the same time. Acks
/// carry their id, so they may come back in any order; past this the session stops reading
/// until one returns.
const MAX_INFLIGHT: usize = 64;
/// A slow client is closed between `slow_client_ms` and 1.25 × `slow_client_ms` after it fell
/// behind: the check runs four times per window.
const SLOW_CHECKS_PER_WINDOW: f64 = 4.0;
const MIN_SLOW_CHECK: Duration = Duration::from_millis(10);
/// On shutdown, how long in-flight submissions and their answers may take before the close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long the final close frame may wait for room on the socket (a slow client's socket is
/// full: the frame goes out once it reads again, or the connection is dropped).
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Work a frame started that the session does not wait for: a submission (answered by `ack` or
/// `rejected`) or a subscription (its snapshot goes straight to the outbox).
type Answer = Pin<Box<dyn Future<Output = Done>>>;

/// How such work ended.
enum Done {
    Reply(ServerMsg),
    Subscribed,
    /// The subscription failed: nothing stays subscribed. `attempt` tells whether a later
    /// subscribe of the same view has replaced this one meanwhile.
    SubscribeFailed {
        key: ViewKey,
        attempt: u64,
        error: ServerMsg,
    },
}

/// The session's protocol state (the loop's plumbing lives in [`run`]).
struct Session {
    state: Arc<AppState>,
    member: Member,
    player: Option<Player>,
    /// The session's views (those being set up included), each with the number of the
    /// subscribe that set it up.
    views: HashMap<ViewKey, u64>,
    attempts: u64,
}

fn text(msg: &ServerMsg) -> Message {
    Message::Text(msg.to_json().into())
}

/// How a session ends.
enum Exit {
    /// The connection is gone: nothing left to send.
    Gone,
    /// Send a close frame (with this reason) and end.
    Close(Option<CloseReason>),
}

fn close(code: CloseCode, why: &str) -> Exit {
    Exit::Close(Some(CloseReason {
        code,
        description: Some(why.to_owned()),
    }))
}

fn now_s() -> u64 {
    chrono::Utc::now().timestamp().max(0) as u64
}

impl Session {
    fn push(&self, msg: &ServerMsg) {
        self.member.outbox().push(text(msg));
    }

    fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.push(&ServerMsg::error(code, message));
    }

    fn welcome(&self) {
        self.push(&ServerMsg::Welcome {
            protocol: PROTOCOL_VERSION,
            player: self.player.as_ref().map(|p| p.id.to_string()),
            server_time_ms: self.state.store.clock().now_ms(),
        });
    }

    /// Handles one text frame; a submission comes back as a future answering it.
    fn on_text(&mut self, frame: &str) -> Option<Answer> {
        match ClientMsg::parse(frame) {
            Err(ParseError::Frame { code, message }) => self.error(code, message),
            Err(ParseError::Submit { id, code, message }) => self.push(&ServerMsg::Rejected {
                id,
                code,
                message,
                retry_after_ms: None,
            }),
            Ok(ClientMsg::Hello { token }) => self.hello(&token),
            Ok(ClientMsg::Submit { id, board, points }) => return self.submit(id, board, points),
            Ok(ClientMsg::Subscribe { board, view }) => return self.subscribe(board, view),
            Ok(ClientMsg::Unsubscribe { board, view }) => self.unsubscribe(board, view),
            Ok(ClientMsg::Ping) => self.push(&ServerMsg::Pong),
        }
        None
    }

    fn hello(&mut self, token: &str) {
        match self.state.tokens.verify(token) {
            Err(e) => self.error(ErrorCode::Unauthorized, e.message),
            Ok(p) => match &self.player {
                Some(cur) if cur.id != p.id => self.error(
                    ErrorCode::Forbidden,
                    format!(
                        "this session belongs to {}; open another connection for {}",
                        cur.id, p.id
                    ),
                ),
                _ => {
                    self.member.set_player(&p.id);
                    self.player = Some(p);
                    self.welcome();
                }
            },
        }
    }

    fn submit(&mut self, id: Id, board: Id, points: i64) -> Option<Answer> {
        let rejected = |code, message: &str| ServerMsg::Rejected {
            id: Some(id.to_string()),
            code,
            message: message.to_owned(),
            retry_after_ms: None,
        };
        let player = match &self.player {
            None => {
                self.push(&rejected(
                    ErrorCode::Unauthorized,
                    "spectators cannot submit: send hello with a player token first",
                ));
                return None;
            }
            Some(p) if p.expired(now_s()) => {
                self.push(&rejected(
                    ErrorCode::Unauthorized,
                    "the token has expired: send hello with a fresh one",
                ));
                return None;
            }
            Some(p) => p,
        };
        let sub = Submission {
            board,
            player: player.id.clone(),
            id,
            points,
            op: None,
            name: player.name.clone(),
            skip_limit: false,
        };
        let state = self.state.clone();
        Some(Box::pin(async move {
            Done::Reply(match state.submit(&sub).await {
                Ok(a) => ServerMsg::Ack {
                    id: sub.id.into_string(),
                    board: a.board,
                    season: a.season,
                    score: a.score,
                    rank: a.rank,
                    previous_rank: a.previous_rank,
                    duplicate: a.duplicate,
                },
                Err(e) => ServerMsg::Rejected {
                    id: Some(sub.id.into_string()),
                    code: e.code,
                    retry_after_ms: e.retry_after_ms(),
                    message: e.message,
                },
            })
        }))
    }

    fn subscribe(&mut self, board: Id, view: View) -> Option<Answer> {
        let key = (board.clone(), view.kind());
        if view.kind().needs_player() && self.player.is_none() {
            self.error(
                ErrorCode::Unauthorized,
                "the me and around views need a player: send hello first",
            );
            return None;
        }
        let max = self.state.settings.ws.max_views_per_session;
        if !self.views.contains_key(&key) && self.views.len() >= max {
            self.error(
                ErrorCode::BadRequest,
                format!("at most {max} views per session; unsubscribe one first"),
            );
            return None;
        }
        self.attempts += 1;
        let attempt = self.attempts;
        // Counted at once, so subscribes still being set up count against the limit too.
        self.views.insert(key.clone(), attempt);
        let player = self.player.as_ref().map(|p| p.id.clone());
        let subscribing = self.member.subscribe(board, view, player);
        Some(Box::pin(async move {
            match subscribing.await {
                Ok(()) => Done::Subscribed,
                Err(e) => Done::SubscribeFailed {
                    key,
                    attempt,
                    error: ServerMsg::error(e.code, e.message),
                },
            }
        }))
    }

    /// Takes note of finished work.
    fn done(&mut self, done: Done) {
        match done {
            Done::Reply(msg) => self.push(&msg),
            Done::Subscribed => {}
            Done::SubscribeFailed {
                key,
                attempt,
                error,
            } => {
                if self.views.get(&key) == Some(&attempt) {
                    self.views.remove(&key);
                }
                self.push(&error);
            }
        }
    }

    fn unsubscribe(&mut self, board: Id, kind: ViewKind) {
        self.member.unsubscribe(&board, kind);
        self.views.remove(&(board, kind));
    }
}

/// Runs a session until the client leaves, times out, is too slow, breaks the protocol, or the
/// server shuts down.
pub async fn run(
    state: Arc<AppState>,
    member: Member,
    mut socket: actix_ws::Session,
    mut frames: AggregatedMessageStream,
) {
    let ws = state.settings.ws.clone();
    let ping_every = Duration::from_millis(ws.ping_interval_ms);
    let client_timeout = Duration::from_millis(ws.client_timeout_ms);
    let slow = Duration::from_millis(ws.slow_client_ms);
    let outbox = member.outbox().clone();
    let mut shutdown = member.hub().shutdown_signal();
    let mut s = Session {
        state,
        member,
        player: None,
        views: HashMap::new(),
        attempts: 0,
    };
    s.welcome();
    let mut heartbeat = tokio::time::interval_at(Instant::now() + ping_every, ping_every);
    let mut last_heard = Instant::now();
    let mut inflight: FuturesUnordered<Answer> = FuturesUnordered::new();
    let mut shutting_down = *shutdown.borrow();
    // Since when messages have been waiting with nothing written to the socket: a client that
    // stops reading stalls the socket long before its queue fills, because view updates
    // replace each other. Either way it is too slow (1008).
    let mut stalled_since: Option<Instant> = None;
    let mut slow_check =
        tokio::time::interval(slow.div_f64(SLOW_CHECKS_PER_WINDOW).max(MIN_SLOW_CHECK));
    slow_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let exit = loop {
        if shutting_down {
            break close(CloseCode::Away, "server shutting down");
        }
        let pending = !outbox.is_empty();
        if !pending {
            stalled_since = None;
        } else if stalled_since.is_none() {
            stalled_since = Some(Instant::now());
        }
        let slow_suspect = stalled_since.is_some() || outbox.full_since().is_some();
        // Reading is paused while the queue is full (each frame may owe an answer) and while
        // too many submissions are in flight.
        let can_read = !outbox.is_full() && inflight.len() < MAX_INFLIGHT;
        tokio::select! {
            biased;
            _ = shutdown.changed() => shutting_down = true,
            // Checked on a coarse tick, and only while there is something to suspect: a timer
            // re-armed on every pass of a busy loop would cost more than the check.
            _ = slow_check.tick(), if slow_suspect => {
                if outbox.full_since().is_some_and(|t| t.elapsed() >= slow) {
                    tracing::info!(session = s.member.id(), "closing a client that cannot keep up (1008)");
                    break close(CloseCode::Policy, "too slow: the outbound queue stayed full");
                }
                if stalled_since.is_some_and(|t| t.elapsed() >= slow) && !outbox.is_empty() {
                    tracing::info!(session = s.member.id(), "closing a client that stopped reading (1008)");
                    break close(CloseCode::Policy, "too slow: the socket took nothing for slow_client_ms");
                }
            }
            Some(done) = inflight.next(), if !inflight.is_empty() => s.done(done),
            ready = poll_fn(|cx| Pin::new(&mut socket).poll_ready(cx)), if pending => {
                if ready.is_err() {
                    break Exit::Gone;
                }
                if let Some(m) = outbox.pop() {
                    if Pin::new(&mut socket).start_send(m).is_err() {
                        break Exit::Gone;
                    }
                    // Progress: whatever still waits, waits from now.
                    stalled_since = None;
                }
            }
            _ = outbox.notified() => {}
            frame = frames.recv(), if can_read => {
                last_heard = Instant::now();
                match frame {
                    None => break Exit::Gone,
                    Some(Ok(AggregatedMessage::Text(t))) => {
                        if let Some(work) = s.on_text(&t) {
                            inflight.push(work);
                        }
                    }
                    Some(Ok(AggregatedMessage::Binary(_))) => s.error(ErrorCode::BadRequest, "protocol v1 uses JSON text frames"),
                    Some(Ok(AggregatedMessage::Ping(b))) => outbox.push(Message::Pong(b)),
                    Some(Ok(AggregatedMessage::Pong(_))) => {}
                    // Echo the client's close (RFC 6455 §5.5.1).
                    Some(Ok(AggregatedMessage::Close(r))) => break Exit::Close(r),
                    Some(Err(ProtocolError::Overflow)) => {
                        break close(CloseCode::Size, &format!("frames above {} bytes are refused", ws.max_frame_bytes));
                    }
                    Some(Err(e)) => {
                        tracing::debug!(session = s.member.id(), error = %e, "websocket protocol error");
                        break close(CloseCode::Protocol, "websocket protocol error");
                    }
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
        // Submissions in flight were taken from the client: their answers are owed. Let them
        // finish and go out before the close frame (bounded, so shutdown cannot hang).
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        while let Ok(Some(done)) = tokio::time::timeout_at(deadline, inflight.next()).await {
            s.done(done);
        }
        let flush = tokio::time::timeout_at(deadline, async {
            while let Some(m) = outbox.pop() {
                if futures_util::SinkExt::send(&mut socket, m).await.is_err() {
                    break;
                }
            }
        });
        let _ = flush.await;
    }
    // Leave the hub before the last await, so nothing more is offered to this session.
    drop(s);
    if let Exit::Close(reason) = exit {
        let _ = tokio::time::timeout(CLOSE_WAIT, socket.close(reason)).await;
    }
}
