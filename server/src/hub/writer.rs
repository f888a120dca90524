//! The connection's writer: the body of the WebSocket's upgrade response, which actix's
//! connection task writes to the socket. It pulls from the session's outbox (`outbox.rs`):
//! each time actix polls it, it takes everything queued and encodes it as one chunk, so a push
//! crosses one task (actix's, which owns the socket) and the frames queued together go out in
//! one write.
//!
//! actix polls the body only while its write buffer has room, so a client that does not read
//! leaves the messages in the outbox, where view updates replace each other and the slow-client
//! check sees them wait (`ws/session/slow.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_http::ws::{OpCode, Parser};
use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::web::{Bytes, BytesMut};
use actix_ws::Message;

use super::outbox::{Outbox, Take};

/// A close frame's payload may hold 125 bytes: the code (2), and up to 123 of reason.
const MAX_CLOSE_REASON_BYTES: usize = 123;
/// A control frame's payload may hold 125 bytes.
const MAX_CONTROL_PAYLOAD_BYTES: usize = 125;

pub struct Writer {
    outbox: Arc<Outbox>,
    /// actix-ws's own response body, never polled: it is dropped with this one, which tells
    /// actix-ws's frame stream (the session's reading side) that the connection is gone.
    _closed_signal: BoxBody,
}

impl Writer {
    pub fn new(outbox: Arc<Outbox>, closed_signal: BoxBody) -> Writer {
        Writer {
            outbox,
            _closed_signal: closed_signal,
        }
    }
}

/// Appends `msg` as one server frame (unmasked).
fn encode(msg: Message, buf: &mut BytesMut) {
    // A control frame's payload is cut to what the protocol allows (a client's ping may be
    // echoed in a pong).
    let control = |buf: &mut BytesMut, b: &[u8], op| {
        Parser::write_message(
            buf,
            &b[..b.len().min(MAX_CONTROL_PAYLOAD_BYTES)],
            op,
            true,
            false,
        )
    };
    match msg {
        Message::Text(t) => Parser::write_message(buf, t.as_bytes(), OpCode::Text, true, false),
        Message::Binary(b) => Parser::write_message(buf, b, OpCode::Binary, true, false),
        Message::Ping(b) => control(buf, &b, OpCode::Ping),
        Message::Pong(b) => control(buf, &b, OpCode::Pong),
        Message::Close(mut reason) => {
            if let Some(d) = reason.as_mut().and_then(|r| r.description.as_mut()) {
                let mut end = d.len().min(MAX_CLOSE_REASON_BYTES);
                while !d.is_char_boundary(end) {
                    end -= 1;
                }
                d.truncate(end);
            }
            Parser::write_close(buf, reason, false)
        }
        // The server never fragments, and never sends an empty frame.
        Message::Continuation(_) | Message::Nop => {}
    }
}

impl MessageBody for Writer {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        // Allocated by the first frame encoded (a pass that finds nothing allocates nothing).
        let mut buf = BytesMut::new();
        match self.outbox.take(cx.waker(), |msg| encode(msg, &mut buf)) {
            Take::Wait => Poll::Pending,
            Take::Done => Poll::Ready(None),
            Take::Batch => Poll::Ready(Some(Ok(buf.freeze()))),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.outbox.writer_gone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a WebSocket client reads from the writer's chunks.
    fn frames(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let op = rest[0] & 0x0f;
            assert_eq!(rest[0] & 0x80, 0x80, "every frame is final");
            assert_eq!(rest[1] & 0x80, 0, "server frames are not masked");
            let (len, head) = match rest[1] & 0x7f {
                126 => (u16::from_be_bytes([rest[2], rest[3]]) as usize, 4),
                127 => panic!("no frame here is that long"),
                n => (n as usize, 2),
            };
            out.push((op, rest[head..head + len].to_vec()));
            rest = &rest[head + len..];
        }
        out
    }

    fn poll(w: &mut Writer) -> Poll<Option<Bytes>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(w)
            .poll_next(&mut cx)
            .map(|o| o.map(|r| r.unwrap_or_else(|e| match e {})))
    }

    /// Everything queued goes out in one chunk, in the outbox's order; the close frame ends the
    /// body, and a writer that is dropped tells the outbox the connection is gone.
    #[test]
    fn the_writer_takes_everything_queued_in_one_chunk_and_ends_after_the_close() {
        let outbox = Arc::new(Outbox::new(8));
        let mut w = Writer::new(outbox.clone(), BoxBody::new(()));
        assert!(poll(&mut w).is_pending());
        outbox.push(Message::Text("ack".into()));
        outbox.push(Message::Text("x".repeat(300).into()));
        outbox.ping();
        let Poll::Ready(Some(chunk)) = poll(&mut w) else {
            panic!("a chunk")
        };
        let got = frames(&chunk);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (0x9, vec![]), "the ping first");
        assert_eq!(got[1], (0x1, b"ack".to_vec()));
        assert_eq!(got[2].1.len(), 300);
        assert!(poll(&mut w).is_pending());
        outbox.close(Some(actix_ws::CloseReason {
            code: actix_ws::CloseCode::Policy,
            description: Some("é".repeat(100)),
        }));
        let Poll::Ready(Some(chunk)) = poll(&mut w) else {
            panic!("the close frame")
        };
        let got = frames(&chunk);
        assert_eq!(got[0].0, 0x8);
        assert_eq!(&got[0].1[..2], &1008u16.to_be_bytes());
        assert!(got[0].1.len() <= 125, "a control frame's payload fits");
        assert!(
            std::str::from_utf8(&got[0].1[2..]).is_ok(),
            "cut at a character"
        );
        assert!(matches!(poll(&mut w), Poll::Ready(None)));
        assert!(matches!(poll(&mut w), Poll::Ready(None)), "and stays ended");
        assert!(!outbox.status().gone);
        drop(w);
        assert!(outbox.status().gone);
    }
}
