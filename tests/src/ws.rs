//! A small WebSocket client for the end-to-end tests (tokio-tungstenite), written from
//! docs/protocol.md only, plus the hostile tokens the protocol must refuse.

use std::time::Duration;

use jsonwebtoken::Algorithm;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::TOKEN_SECRET;

/// How long a test waits for a message it expects: a bound on failure, never a synchronisation
/// sleep, and generous, because a loaded 2-core machine is slow (a passing test never waits it
/// out).
pub const WAIT: Duration = crate::EVENTUALLY;

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What arrived on a socket.
#[derive(Debug)]
pub enum Incoming {
    Json(Value),
    /// A close frame (its code, if any), or the connection ending without one.
    Closed(Option<u16>),
}

pub struct WsClient {
    pub ws: Ws,
}

fn close_code(f: Option<CloseFrame>) -> Option<u16> {
    f.map(|f| u16::from(f.code))
}

impl WsClient {
    /// Connects without an Origin (a non-browser client) and reads the spectator `welcome`.
    pub async fn connect(url: &str) -> WsClient {
        let mut c = Self::try_connect(url, None)
            .await
            .expect("websocket upgrade");
        let w = c.next_json().await;
        assert_eq!(w["type"], "welcome", "{w}");
        assert_eq!(w["protocol"], 1, "{w}");
        assert!(w["player"].is_null(), "{w}");
        c
    }

    /// Attempts an upgrade, with an `Origin` header when given; the `welcome` is left unread.
    pub async fn try_connect(
        url: &str,
        origin: Option<&str>,
    ) -> Result<WsClient, tokio_tungstenite::tungstenite::Error> {
        let mut req = url.into_client_request()?;
        if let Some(o) = origin {
            req.headers_mut()
                .insert("Origin", HeaderValue::from_str(o).expect("origin header"));
        }
        let (ws, _) = tokio_tungstenite::connect_async(req).await?;
        Ok(WsClient { ws })
    }

    /// The client side's TCP port (to find this connection in `/proc/net/tcp`).
    pub fn local_port(&self) -> u16 {
        match self.ws.get_ref() {
            MaybeTlsStream::Plain(s) => s.local_addr().expect("local addr").port(),
            _ => panic!("only plain TCP in tests"),
        }
    }

    /// Connects over a socket with a tiny receive buffer, so that not reading from it quickly
    /// backs up into the server (loopback buffers would otherwise absorb megabytes).
    pub async fn connect_small_buffer(url: &str, port: u16, rcvbuf: u32) -> WsClient {
        let sock = tokio::net::TcpSocket::new_v4().expect("socket");
        sock.set_recv_buffer_size(rcvbuf).expect("SO_RCVBUF");
        let stream = sock
            .connect(([127, 0, 0, 1], port).into())
            .await
            .expect("tcp connect");
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
            .await
            .expect("websocket upgrade");
        let mut c = WsClient { ws };
        assert_eq!(c.next_json().await["type"], "welcome");
        c
    }

    pub async fn send_json(&mut self, v: Value) {
        self.send_text(v.to_string()).await;
    }

    pub async fn send_text(&mut self, s: impl Into<String>) {
        self.ws.send(Message::text(s.into())).await.expect("send");
    }

    /// The next message or close within `within` (None: nothing arrived in time).
    pub async fn next_within(&mut self, within: Duration) -> Option<Incoming> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let m = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()?;
            return Some(match m {
                Some(Ok(Message::Text(t))) => {
                    Incoming::Json(serde_json::from_str(&t).expect("server sent JSON"))
                }
                Some(Ok(Message::Close(f))) => Incoming::Closed(close_code(f)),
                Some(Ok(_)) => continue, // ping/pong/binary: not protocol messages
                Some(Err(_)) | None => Incoming::Closed(None),
            });
        }
    }

    /// The next JSON message; panics on timeout or close.
    pub async fn next_json(&mut self) -> Value {
        match self.next_within(WAIT).await {
            Some(Incoming::Json(v)) => v,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Skips messages until one satisfies `pred` (within `within`); panics otherwise.
    pub async fn recv_until(
        &mut self,
        within: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        // What was skipped, for the panic message: a timeout alone does not say whether the
        // messages stopped or kept coming without the one awaited.
        let (mut skipped, mut last) = (0usize, None);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Some(Incoming::Json(v)) if pred(&v) => return v,
                Some(Incoming::Json(v)) => (skipped, last) = (skipped + 1, Some(v)),
                other => panic!(
                    "expected a matching message within {within:?}, got {other:?} \
                     ({skipped} others skipped, the last: {last:?})"
                ),
            }
        }
    }

    /// The next message of `type` (others skipped).
    pub async fn recv_type(&mut self, ty: &str) -> Value {
        self.recv_until(WAIT, |v| v["type"] == ty).await
    }

    /// Reads until the close frame; returns its code (None: closed without a code, or `within`
    /// passed).
    pub async fn expect_close(&mut self, within: Duration) -> Option<u16> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Some(Incoming::Json(_)) => {}
                Some(Incoming::Closed(code)) => return code,
                None => return None,
            }
        }
    }

    /// Sends `hello` and returns the answer (`welcome` or `error`).
    pub async fn hello(&mut self, token: &str) -> Value {
        self.send_json(json!({"type": "hello", "token": token}))
            .await;
        self.recv_until(WAIT, |v| v["type"] == "welcome" || v["type"] == "error")
            .await
    }

    /// Sends a submission and returns its answer (`ack` or `rejected` with the same id).
    pub async fn submit(&mut self, id: &str, board: &str, points: i64) -> Value {
        self.send_json(json!({"type": "submit", "id": id, "board": board, "points": points}))
            .await;
        self.answer_to(id).await
    }

    /// The `ack` or `rejected` carrying `id`.
    pub async fn answer_to(&mut self, id: &str) -> Value {
        self.recv_until(WAIT, |v| {
            (v["type"] == "ack" || v["type"] == "rejected") && v["id"] == id
        })
        .await
    }

    /// Subscribes and returns the snapshot (or the `error`).
    pub async fn subscribe(&mut self, board: &str, view: &str, extra: Value) -> Value {
        let mut msg = json!({"type": "subscribe", "board": board, "view": view});
        if let (Some(m), Some(e)) = (msg.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        self.send_json(msg).await;
        let ty = if view == "me" { "rank" } else { view }.to_owned();
        self.recv_until(WAIT, move |v| {
            (v["type"] == ty.as_str() && v["board"] == board) || v["type"] == "error"
        })
        .await
    }
}

fn b64url(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

/// Seconds since the epoch, as token claims count them.
pub fn now_s() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A well-formed token whose header says `alg: none` and which carries no signature.
pub fn none_alg_token(player: &str) -> String {
    let header = b64url(br#"{"alg":"none","typ":"JWT"}"#);
    let claims = b64url(
        json!({"sub": player, "exp": now_s() + 3600})
            .to_string()
            .as_bytes(),
    );
    format!("{header}.{claims}.")
}

/// A token with exactly these claims, signed with `alg` and `secret`.
pub fn signed(alg: Algorithm, secret: &str, claims: Value) -> String {
    let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes());
    jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), &claims, &key).expect("sign")
}

fn hs256(secret: &str, claims: Value) -> String {
    signed(Algorithm::HS256, secret, claims)
}

/// A token signed with the test secret carrying exactly `claims`.
pub fn token_with(claims: Value) -> String {
    hs256(TOKEN_SECRET, claims)
}

/// A valid HS256 token signed with a secret the server does not know.
pub fn foreign_token(player: &str) -> String {
    hs256(
        "another-secret-0123456789abcdef0123456789abcdef",
        json!({"sub": player, "exp": now_s() + 3600}),
    )
}

/// A token signed with the test secret that expired an hour ago (beyond any leeway).
pub fn expired_token(player: &str) -> String {
    hs256(TOKEN_SECRET, json!({"sub": player, "exp": now_s() - 3600}))
}

#[cfg(test)]
mod tests {
    use super::b64url;

    #[test]
    fn base64url_without_padding() {
        assert_eq!(b64url(b"f"), "Zg");
        assert_eq!(b64url(b"fo"), "Zm8");
        assert_eq!(b64url(b"foo"), "Zm9v");
        assert_eq!(b64url(b"\xfb\xff"), "-_8");
    }
}
