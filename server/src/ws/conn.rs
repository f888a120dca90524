//! The TCP connection under a WebSocket: what the session needs to bound a client's kernel
//! buffers and to really end a client that stopped reading.
//!
//! actix owns the socket, and a stalled reader keeps actix's writer waiting forever: closing the
//! WebSocket "politely" leaves the TCP connection ESTABLISHED with megabytes queued. So
//! `on_connect` keeps a duplicate of the socket's descriptor in the connection's data ([`Conn`]);
//! the session shrinks the send buffer through it and, after a 1008 close, aborts the connection
//! (SO_LINGER 0 + shutdown: actix's next write fails, it drops the connection, the kernel sends
//! RST and frees the buffers). A duplicate is a descriptor of its own for the same socket, so it
//! can never point at a number the kernel reused for another client.
//!
//! The connection's data also holds the per-address admission slot ([`Conn::hold`]), so a
//! client counts against the cap until its socket is gone, not only until its session ended.

use std::any::Any;
use std::net::Shutdown;
#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the connection's data and its session share.
struct Shared {
    #[cfg(unix)]
    fd: Option<OwnedFd>,
    held: Mutex<Vec<Box<dyn Any + Send>>>,
}

impl Drop for Shared {
    /// Closes this descriptor now, but releases what is held (the address slot) only in a later
    /// task: actix may drop its connection data just before its own descriptor of the socket,
    /// and a freed slot must mean a closed socket.
    fn drop(&mut self) {
        #[cfg(unix)]
        drop(self.fd.take());
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

/// The session's handle on its connection. The socket stays open, and what [`Conn::hold`] kept
/// stays held, until both actix and the session let go.
#[derive(Clone, Default)]
pub struct ConnHandle(Option<Arc<Shared>>);

impl Conn {
    /// For `HttpServer::on_connect`: remembers a duplicate of a TCP connection's descriptor.
    pub fn on_connect(io: &dyn Any, ext: &mut actix_web::dev::Extensions) {
        #[cfg(unix)]
        let fd = io
            .downcast_ref::<actix_web::rt::net::TcpStream>()
            .and_then(|s| s.as_fd().try_clone_to_owned().ok());
        #[cfg(not(unix))]
        let _ = io;
        ext.insert(Conn(Arc::new(Shared {
            #[cfg(unix)]
            fd,
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
        ConnHandle(Some(self.0.clone()))
    }
}

impl ConnHandle {
    #[cfg(unix)]
    fn socket(&self) -> Option<socket2::SockRef<'_>> {
        self.0
            .as_ref()
            .and_then(|s| s.fd.as_ref())
            .map(socket2::SockRef::from)
    }

    /// Caps the kernel's send buffer of this socket (the kernel doubles the value for its own
    /// bookkeeping), so a client that stops reading pins at most that much kernel memory.
    pub fn limit_send_buffer(&self, bytes: usize) {
        #[cfg(unix)]
        if let Some(sock) = self.socket() {
            if let Err(e) = sock.set_send_buffer_size(bytes) {
                tracing::debug!(error = %e, "could not set SO_SNDBUF");
            }
        }
        #[cfg(not(unix))]
        let _ = bytes;
    }

    /// Ends the connection now, whatever is queued: SO_LINGER 0 (the last close sends RST and
    /// drops the queued bytes) and shutdown of both directions (actix's pending write fails at
    /// once, so it drops the connection and closes its descriptor).
    pub fn abort(&self) {
        #[cfg(unix)]
        if let Some(sock) = self.socket() {
            let _ = sock.set_linger(Some(Duration::ZERO));
            let _ = sock.shutdown(Shutdown::Both);
        }
    }
}
