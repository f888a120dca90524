//! The TCP connection under a WebSocket (and under every other HTTP request): what bounds a
//! client's kernel buffers and really ends a client that stopped reading.
//!
//! actix owns the socket, and a stalled reader keeps actix's writer waiting forever: closing the
//! WebSocket "politely" would leave the TCP connection ESTABLISHED with its buffers queued. So
//! [`Conn::on_connect`] sets two options while it holds the socket:
//!
//! - a small kernel send buffer (`ws.send_buffer_bytes`; the kernel doubles it for its own
//!   bookkeeping), so a client that stops reading pins at most that much kernel memory and is
//!   noticed after a few tens of KiB;
//! - `TCP_USER_TIMEOUT` = `ws.slow_client_ms`: when sent data stays unacknowledged, or the
//!   client's receive window stays shut, for that long, the kernel ends the connection itself
//!   (actix's next write fails, it drops the connection, the buffers are freed). The session's
//!   own 1008 close for the same client is best effort: it is not reading.
//!
//! Nothing else is kept, so a connection costs one descriptor (not a duplicate kept to shut the
//! socket down after the 1008: two descriptors per connection would make 10 000 WebSockets
//! impossible under a 20 000 open-files limit).
//!
//! The connection's data also holds the per-address admission slot ([`Conn::hold`]), so a
//! client counts against the cap until its socket is gone, not only until its session ended.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the connection's data and its session share.
struct Shared {
    held: Mutex<Vec<Box<dyn Any + Send>>>,
}

impl Drop for Shared {
    /// Releases what is held (the address slot) only in a later task: actix may drop its
    /// connection data just before it closes the socket, and a freed slot must mean a closed
    /// socket.
    fn drop(&mut self) {
        let held = std::mem::take(self.held.get_mut().unwrap_or_else(|p| p.into_inner()));
        if held.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::task::yield_now().await;
                    drop(held);
                });
            }
            Err(_) => drop(held),
        }
    }
}

/// Kept in actix's per-connection data (see [`Conn::on_connect`]); dropped with the connection.
pub struct Conn(Arc<Shared>);

/// The session's handle on its connection: what [`Conn::hold`] kept stays held until both
/// actix and the session let go.
#[derive(Clone, Default)]
pub struct ConnHandle {
    /// Held for its drop only.
    _shared: Option<Arc<Shared>>,
}

/// The socket options every accepted connection gets (from the `[ws]` settings).
#[derive(Clone, Copy, Debug)]
pub struct SocketOptions {
    pub send_buffer_bytes: usize,
    pub user_timeout: Duration,
}

impl Conn {
    /// For `HttpServer::on_connect`: sets `options` on a new TCP connection and gives it the
    /// shared state its session will hold.
    pub fn on_connect(io: &dyn Any, ext: &mut actix_web::dev::Extensions, options: SocketOptions) {
        if let Some(stream) = io.downcast_ref::<actix_web::rt::net::TcpStream>() {
            let sock = socket2::SockRef::from(stream);
            if let Err(e) = sock.set_send_buffer_size(options.send_buffer_bytes) {
                tracing::debug!(error = %e, "could not set SO_SNDBUF");
            }
            #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
            if let Err(e) = sock.set_tcp_user_timeout(Some(options.user_timeout)) {
                tracing::debug!(error = %e, "could not set TCP_USER_TIMEOUT");
            }
        }
        ext.insert(Conn(Arc::new(Shared {
            held: Mutex::new(Vec::new()),
        })));
    }

    /// Keeps `guard` alive until the connection is gone.
    pub fn hold(&self, guard: impl Any + Send) {
        self.0
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Box::new(guard));
    }

    pub fn handle(&self) -> ConnHandle {
        ConnHandle {
            _shared: Some(self.0.clone()),
        }
    }
}
