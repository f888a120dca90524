//! What a session says: the client messages of protocol v1 (`hello`, `submit`, `start_run`,
//! `proof`, `join`, `subscribe`, `unsubscribe`, `ping`) and their answers. Work that waits for Redis (a
//! submission, a run, a subscription's snapshot) comes back as an [`InFlight`] future the loop
//! polls, so the session goes on serving its client meanwhile. The wire format is in `docs/protocol.md`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_ws::Message;
use scorecast_shared::protocol::{ParseError, ViewKind};
use scorecast_shared::{ClientMsg, ErrorCode, Id, ServerMsg, View, MAX_POINTS, PROTOCOL_VERSION};

use crate::auth::Player;
use crate::error::{AppError, AppResult};
use crate::hub::{Member, ViewKey};
use crate::state::{AppState, Transport};
use crate::store::{Accepted, Submission};

fn text(msg: &ServerMsg) -> Message {
    Message::Text(msg.to_json().into())
}

/// Reads a client frame: [`ClientMsg::parse`], with a shortcut for the frame nearly every
/// message is, a well-formed `submit`, read straight into typed fields instead of through a JSON
/// tree. The shortcut takes a frame only when it is sure of the answer; anything else (another
/// type, a field missing, of the wrong type or out of range, a repeated key, an escaped string)
/// goes to `ClientMsg::parse`, which says exactly what is wrong. Both read an accepted frame
/// alike (`the_submit_shortcut_reads_as_the_parser_does`).
fn parse(frame: &str) -> Result<ClientMsg, ParseError> {
    match submit_shortcut(frame) {
        Some(msg) => Ok(msg),
        None => ClientMsg::parse(frame),
    }
}

fn submit_shortcut(frame: &str) -> Option<ClientMsg> {
    #[derive(serde::Deserialize)]
    struct Submit<'a> {
        #[serde(rename = "type")]
        ty: &'a str,
        id: &'a str,
        board: &'a str,
        points: i64,
    }
    // A derived struct would also accept a JSON array of the fields: a message is an object.
    if !frame.trim_start().starts_with('{') {
        return None;
    }
    let f: Submit = serde_json::from_str(frame).ok()?;
    if f.ty != "submit" || !(-MAX_POINTS..=MAX_POINTS).contains(&f.points) {
        return None;
    }
    Some(ClientMsg::Submit {
        id: Id::parse(f.id).ok()?,
        board: Id::parse(f.board).ok()?,
        points: f.points,
    })
}

/// The run id of a `start_run` whose id is `request` from `player`: 32 hex digits, like the
/// HTTP route's, of SHA-256 over both (the player's own requests cannot collide with another's).
fn ws_run_id(player: &Id, request: &Id) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::new()
        .chain_update(b"scorecast ws run\0")
        .chain_update(player.as_str())
        .chain_update(b"\0")
        .chain_update(request.as_str())
        .finalize();
    hex::encode(&digest[..16])
}

/// The answer to the submission `id`: `ack`, or `rejected` with the error's code.
fn answer(id: Id, result: AppResult<Accepted>) -> ServerMsg {
    match result {
        Ok(a) => ServerMsg::Ack {
            id: id.into_string(),
            board: a.board,
            season: a.season,
            score: a.score,
            rank: a.rank,
            previous_rank: a.previous_rank,
            duplicate: a.duplicate,
        },
        Err(e) => rejected(id, e),
    }
}

fn rejected(id: Id, e: AppError) -> ServerMsg {
    ServerMsg::Rejected {
        id: Some(id.into_string()),
        code: e.code,
        retry_after_ms: e.retry_after_ms(),
        message: e.message,
    }
}

/// Work a frame started that the session does not wait for: a submission (answered by `ack` or
/// `rejected`) or a subscription (its snapshot goes straight to the outbox).
pub(super) type InFlight = Pin<Box<dyn Future<Output = Finished>>>;

/// How such work ended.
pub(super) enum Finished {
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

/// The session's protocol state (the loop's plumbing lives in [`super::run`]).
pub(super) struct Session {
    state: Arc<AppState>,
    member: Member,
    player: Option<Player>,
    /// The session's views (those being set up included), each with the number of the
    /// subscribe that set it up.
    views: HashMap<ViewKey, u64>,
    attempts: u64,
}

fn now_s() -> u64 {
    chrono::Utc::now().timestamp().max(0) as u64
}

impl Session {
    pub fn new(state: Arc<AppState>, member: Member) -> Session {
        Session {
            state,
            member,
            player: None,
            views: HashMap::new(),
            attempts: 0,
        }
    }

    pub fn member(&self) -> &Member {
        &self.member
    }

    pub fn push(&self, msg: &ServerMsg) {
        self.member.outbox().push(text(msg));
    }

    pub fn error(&self, code: ErrorCode, message: impl Into<String>) {
        self.push(&ServerMsg::error(code, message));
    }

    pub fn welcome(&self) {
        self.push(&ServerMsg::Welcome {
            protocol: PROTOCOL_VERSION,
            player: self.player.as_ref().map(|p| p.id.to_string()),
            server_time_ms: self.state.store.clock().now_ms(),
        });
    }

    /// Handles one text frame; a submission comes back as a future answering it.
    pub fn on_text(&mut self, frame: &str) -> Option<InFlight> {
        match parse(frame) {
            Err(ParseError::Frame { code, message }) => self.error(code, message),
            Err(ParseError::Submit { id, code, message }) => self.push(&ServerMsg::Rejected {
                id,
                code,
                message,
                retry_after_ms: None,
            }),
            Ok(ClientMsg::Hello { token }) => self.hello(&token),
            Ok(ClientMsg::Submit { id, board, points }) => return self.submit(id, board, points),
            Ok(ClientMsg::StartRun { id, board }) => return self.start_run(id, board),
            Ok(ClientMsg::Join { id, board }) => return self.join(id, board),
            Ok(ClientMsg::Proof {
                id,
                board,
                run,
                proof,
            }) => return self.proof(id, board, run, proof),
            Ok(ClientMsg::Subscribe { board, view }) => return self.subscribe(board, view),
            Ok(ClientMsg::Unsubscribe { board, view }) => self.unsubscribe(board, view),
            Ok(ClientMsg::Ping) => self.push(&ServerMsg::Pong),
        }
        None
    }

    /// Answers a frame refused by the message-rate limit: `rejected` for a submission (with its
    /// id), `error` otherwise, both `rate_limited` with `retry_after_ms`. Nothing else happens.
    pub fn refuse(&self, frame: &str, retry_after_ms: u64) {
        let message = "too many messages on this connection".to_owned();
        let id = match ClientMsg::parse(frame) {
            Ok(
                ClientMsg::Submit { id, .. }
                | ClientMsg::StartRun { id, .. }
                | ClientMsg::Proof { id, .. }
                | ClientMsg::Join { id, .. },
            ) => Some(Some(id.to_string())),
            Err(ParseError::Submit { id, .. }) => Some(id),
            _ => None,
        };
        self.push(&match id {
            Some(id) => ServerMsg::Rejected {
                id,
                code: ErrorCode::RateLimited,
                message,
                retry_after_ms: Some(retry_after_ms),
            },
            None => ServerMsg::Error {
                code: ErrorCode::RateLimited,
                message,
                retry_after_ms: Some(retry_after_ms),
            },
        });
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

    /// The session's player, for a message that needs one; otherwise answers the message `id`
    /// with `rejected` `unauthorized` (`what` says what a spectator cannot do).
    fn player_for(&self, id: &Id, what: &str) -> Option<&Player> {
        let refuse = |message: String| {
            self.push(&ServerMsg::Rejected {
                id: Some(id.to_string()),
                code: ErrorCode::Unauthorized,
                message,
                retry_after_ms: None,
            });
            None
        };
        match &self.player {
            None => refuse(format!(
                "spectators cannot {what}: send hello with a player token first"
            )),
            Some(p) if p.revoked() => refuse(format!(
                "the tokens of {} issued before their revocation are no longer valid: send hello with a fresh one",
                p.id
            )),
            Some(p) if p.expired(now_s()) => {
                refuse("the token has expired: send hello with a fresh one".into())
            }
            Some(p) => Some(p),
        }
    }

    fn submit(&mut self, id: Id, board: Id, points: i64) -> Option<InFlight> {
        let player = self.player_for(&id, "submit")?;
        let sub = Submission {
            board,
            player: player.id.clone(),
            id,
            points,
            op: None,
            name: player.name.clone(),
            by: None,
            verified: false,
        };
        let state = self.state.clone();
        let submitting = self.member.outbox().submitting();
        Some(Box::pin(async move {
            let result = state.submit_via(&sub, Transport::Ws).await;
            drop(submitting);
            Finished::Reply(answer(sub.id, result))
        }))
    }

    /// Starts a run of the session's player: `POST /v1/boards/{board}/runs` over the socket.
    /// The run id is derived from the player and the request's id, so a `start_run` sent again
    /// (a client that lost the answer to a disconnect) is answered with the same run instead of
    /// starting another.
    fn start_run(&mut self, id: Id, board: Id) -> Option<InFlight> {
        let player = self.player_for(&id, "start runs")?.id.clone();
        let state = self.state.clone();
        Some(Box::pin(async move {
            let v = &state.settings.validators;
            let run = ws_run_id(&player, &id);
            let result = state
                .store
                .start_run_as(&board, &player, run, v.run_ttl_ms, v.max_open_runs)
                .await;
            Finished::Reply(match result {
                Ok(r) => ServerMsg::Run {
                    id: id.into_string(),
                    board: board.into_string(),
                    run: r.id,
                    seed: r.seed,
                    started_ms: r.started_ms,
                    expires_ms: r.expires_ms,
                },
                Err(e) => rejected(id, e),
            })
        }))
    }

    /// Joins the board's tournament: `POST /v1/boards/{board}/join` over the socket (joining
    /// again is answered the same).
    fn join(&mut self, id: Id, board: Id) -> Option<InFlight> {
        let player = self.player_for(&id, "join")?.id.clone();
        let state = self.state.clone();
        Some(Box::pin(async move {
            Finished::Reply(match state.store.join(&board, &player).await {
                Ok(j) => ServerMsg::Joined {
                    id: id.into_string(),
                    board: j.board,
                    season: j.season,
                    player: j.player,
                    joined_ms: j.joined_ms,
                },
                Err(e) => rejected(id, e),
            })
        }))
    }

    /// A verified submission: `POST /v1/boards/{board}/runs/{run}/proof` over the socket,
    /// answered as a `submit` is (and, like one, holding the player's `me` push for its ack).
    fn proof(&mut self, id: Id, board: Id, run: Id, proof: String) -> Option<InFlight> {
        let player = self.player_for(&id, "submit")?.clone();
        let Some(proof) = decode_proof(&proof) else {
            self.push(&ServerMsg::Rejected {
                id: Some(id.to_string()),
                code: ErrorCode::BadRequest,
                message: "`proof` must be standard base64 (A-Z a-z 0-9 + /, padded with =)".into(),
                retry_after_ms: None,
            });
            return None;
        };
        let state = self.state.clone();
        let submitting = self.member.outbox().submitting();
        Some(Box::pin(async move {
            let result = state
                .submit_proof(&board, &player, &run, proof, Transport::Ws)
                .await;
            drop(submitting);
            Finished::Reply(answer(id, result))
        }))
    }

    fn subscribe(&mut self, board: Id, view: View) -> Option<InFlight> {
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
                Ok(()) => Finished::Subscribed,
                Err(e) => Finished::SubscribeFailed {
                    key,
                    attempt,
                    error: ServerMsg::error(e.code, e.message),
                },
            }
        }))
    }

    /// Takes note of finished work.
    pub fn finished(&mut self, done: Finished) {
        match done {
            Finished::Reply(msg) => self.push(&msg),
            Finished::Subscribed => {}
            Finished::SubscribeFailed {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_submit_shortcut_reads_as_the_parser_does() {
        let max = MAX_POINTS;
        let taken = [
            r#"{"type":"submit","id":"s-1","board":"b","points":5}"#.to_owned(),
            r#" {"points":-7,"board":"b","id":"s.2","type":"submit","extra":[1,{"x":null}]}"#
                .to_owned(),
            format!(r#"{{"type":"submit","id":"a","board":"b","points":{max}}}"#),
            format!(r#"{{"type":"submit","id":"a","board":"b","points":-{max}}}"#),
        ];
        for f in &taken {
            let fast = submit_shortcut(f);
            assert!(fast.is_some(), "the shortcut takes {f}");
            assert_eq!(fast.map(Ok), Some(ClientMsg::parse(f)), "{f}");
        }
        let left = [
            r#"["submit","s-1","b",5]"#.to_owned(),
            r#"{"type":"submit","id":"s-1","board":"b","points":5.0}"#.to_owned(),
            r#"{"type":"submit","id":"s-1","board":"b","points":"5"}"#.to_owned(),
            r#"{"type":"submit","id":"s-1","board":"b"}"#.to_owned(),
            r#"{"type":"submit","id":null,"board":"b","points":5}"#.to_owned(),
            r#"{"type":"submit","id":"bad id","board":"b","points":5}"#.to_owned(),
            r#"{"type":"submit","id":"s-1","board":"b","points":5,"id":"s-2"}"#.to_owned(),
            r#"{"type":"submit","id":"s\u002d1","board":"b","points":5}"#.to_owned(),
            r#"{"type":"ping","id":"s-1","board":"b","points":5}"#.to_owned(),
            format!(
                r#"{{"type":"submit","id":"a","board":"b","points":{}}}"#,
                max + 1
            ),
            format!(
                r#"{{"type":"submit","id":"a","board":"b","points":{}}}"#,
                i64::MIN
            ),
            r#"{"type":"submit","id":"s-1","board":"b","points":5} x"#.to_owned(),
        ];
        for f in &left {
            assert!(submit_shortcut(f).is_none(), "the shortcut leaves {f}");
            // What the session answers is the parser's, as before.
            assert_eq!(parse(f), ClientMsg::parse(f), "{f}");
        }
    }
}

/// A `proof`'s bytes from its text: standard base64 (RFC 4648 §4) with canonical padding and no
/// stray trailing bits; anything else (unpadded, URL-safe, whitespace) is `None`.
fn decode_proof(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod proof_tests {
    use super::decode_proof;

    /// The proof field takes exactly padded standard base64: every byte value round-trips, and
    /// unpadded, URL-safe, whitespace, foreign characters and stray trailing bits are refused.
    #[test]
    fn proofs_decode_from_padded_standard_base64_only() {
        assert_eq!(decode_proof("dWRscg==").as_deref(), Some(&b"udlr"[..]));
        assert_eq!(decode_proof("").as_deref(), Some(&b""[..]));
        assert_eq!(
            decode_proof("AAECAw==").as_deref(),
            Some(&[0u8, 1, 2, 3][..])
        );
        assert_eq!(decode_proof("+/8=").as_deref(), Some(&[0xfbu8, 0xff][..]));
        for bad in ["d*==", "dQ", "-_8=", "dWRs cg==", "AB==", "dQ===", "=dQ="] {
            assert_eq!(decode_proof(bad), None, "{bad:?}");
        }
    }
}
