//! WebSocket protocol v1 at `GET /ws` (the wire format: `docs/protocol.md`).
//!
//! The route only checks the upgrade (Origin allow-list, connections per client address), does
//! the handshake, bounds the socket's kernel buffer (`conn`) and spawns the session; `session` is
//! the per-connection select loop over the client's frames. The per-instance owner of
//! subscriptions and of the live feed is [`crate::hub`]: its per-session outbox takes the
//! session's answers and the hub's pushes, and its writer (the upgrade response's body) sends
//! them.

pub mod conn;
pub mod session;

use std::net::SocketAddr;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use scorecast_shared::ErrorCode;

use crate::config::Settings;
use crate::error::AppError;
use crate::state::AppState;

/// Registers `GET /ws`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/ws", web::get().to(upgrade));
}

/// An origin as compared: lower case, without a trailing slash or its scheme's default port (a
/// browser never sends `:443` with `https`, nor `:80` with `http`).
fn normalise(origin: &str) -> String {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    for (scheme, port) in [("http://", ":80"), ("https://", ":443")] {
        if let Some(bare) = o.strip_suffix(port).filter(|_| o.starts_with(scheme)) {
            return bare.to_owned();
        }
    }
    o
}

/// The server's own origins when it listens on `addr`, the default of `allowed_origins`
/// (`docs/protocol.md`, "Connecting"). Known from the configuration alone, never from a request: a `Host` header is
/// whatever the client says (Origin and Host both `evil.example` would otherwise pass). On a
/// loopback or unspecified address these are the loopback names; a server reached under a public
/// name needs that name in `allowed_origins`.
pub fn own_origins(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let own = match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    };
    let mut hosts = Vec::new();
    if !addr.ip().is_unspecified() {
        hosts.push(own);
    }
    if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        for h in ["127.0.0.1", "localhost", "[::1]"] {
            if !hosts.iter().any(|o| o == h) {
                hosts.push(h.into());
            }
        }
    }
    hosts
        .into_iter()
        .map(|h| format!("http://{h}:{port}"))
        .collect()
}

/// Whether a browser page from `origin` may open a WebSocket or use the SDK and `/v1` across
/// origins (`docs/protocol.md`, "Connecting"): requests without an Origin (non-browser clients)
/// pass; otherwise `allowed_origins`, filled at start-up when not configured with `*` under
/// `--dev` and with [`own_origins`] otherwise. `*` in the list allows any.
pub fn origin_allowed(origin: Option<&str>, settings: &Settings) -> bool {
    let Some(origin) = origin else { return true };
    let origin = normalise(origin);
    settings
        .allowed_origins
        .iter()
        .any(|a| a.trim() == "*" || normalise(a) == origin)
}

async fn upgrade(
    req: HttpRequest,
    body: web::Payload,
    st: web::Data<AppState>,
) -> actix_web::Result<HttpResponse> {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok());
    if !origin_allowed(origin, &st.settings) {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this Origin may not open a WebSocket here",
        )
        .into());
    }
    let client = st.settings.client_ip(req.peer_addr(), req.headers());
    let shown = client.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
    let mut member = st.hub.admit(client).inspect_err(|_| {
        tracing::info!(client = %shown, "WebSocket refused: connections per address at the cap");
    })?;
    tracing::debug!(session = member.id(), client = %shown, "WebSocket connected");
    let (res, _, frames) = actix_ws::handle(&req, body)?;
    // The response's body is the connection's writer, which pulls from the session's outbox;
    // actix-ws's own body (and its `Session` handle) is not used.
    let (res, actix_ws_body) = res.into_parts();
    let res = res
        .set_body(crate::hub::Writer::new(
            member.outbox().clone(),
            actix_ws_body,
        ))
        .map_into_boxed_body();
    // The address slot lives as long as the TCP connection, not only the session: a client
    // closed for being slow counts against the cap until its socket is really gone.
    let conn = match req.conn_data::<conn::Conn>() {
        Some(c) => {
            if let Some(slot) = member.take_slot() {
                c.hold(slot);
            }
            c.handle()
        }
        None => conn::ConnHandle::default(),
    };
    // The socket takes messages as large as a proof needs; every other message is held to
    // `max_frame_bytes` by the session once it has seen its type.
    let max = session::max_message_bytes(&st.settings);
    let frames = frames
        .max_frame_size(max)
        .aggregate_continuations()
        .max_continuation_size(max);
    actix_web::rt::spawn(session::run(st.into_inner(), member, conn, frames));
    Ok(res)
}

/// Resolves on SIGTERM or SIGINT (the signals that stop the server).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_default_to_the_servers_own() {
        let s = Settings {
            allowed_origins: own_origins("127.0.0.1:8080".parse().unwrap()),
            ..Settings::default()
        };
        assert!(origin_allowed(None, &s), "non-browser clients pass");
        assert!(origin_allowed(Some("http://127.0.0.1:8080"), &s));
        assert!(origin_allowed(Some("http://localhost:8080/"), &s));
        assert!(!origin_allowed(Some("http://evil.example"), &s));
        assert!(!origin_allowed(Some("http://127.0.0.1:8081"), &s));
        let any = Settings {
            allowed_origins: vec!["*".into()],
            ..Settings::default()
        };
        assert!(origin_allowed(Some("http://evil.example"), &any));
        let listed = Settings {
            allowed_origins: vec!["https://game.example".into()],
            ..Settings::default()
        };
        assert!(origin_allowed(Some("https://GAME.example"), &listed));
        assert!(!origin_allowed(Some("http://127.0.0.1:8080"), &listed));
        assert!(
            !origin_allowed(Some("http://evil.example"), &Settings::default()),
            "an empty list admits no browser origin"
        );
    }

    #[test]
    fn own_origins_come_from_the_listen_address() {
        assert_eq!(
            own_origins("10.0.0.5:80".parse().unwrap()),
            ["http://10.0.0.5:80"]
        );
        assert!(own_origins("0.0.0.0:8080".parse().unwrap())
            .contains(&"http://localhost:8080".to_string()));
        // Any loopback address is its own origin too, beside the loopback names.
        assert_eq!(
            own_origins("127.0.0.2:7000".parse().unwrap()),
            [
                "http://127.0.0.2:7000",
                "http://127.0.0.1:7000",
                "http://localhost:7000",
                "http://[::1]:7000"
            ]
        );
        let on_80 = Settings {
            allowed_origins: own_origins("10.0.0.5:80".parse().unwrap()),
            ..Settings::default()
        };
        assert!(origin_allowed(Some("http://10.0.0.5"), &on_80));
    }

    /// A scheme's default port is no part of an origin: `https://game.example:443` listed
    /// admits the page `https://game.example` (what browsers send), and the other way round.
    #[test]
    fn default_ports_are_the_same_origin() {
        let with_port = Settings {
            allowed_origins: vec!["https://game.example:443".into()],
            ..Settings::default()
        };
        assert!(origin_allowed(Some("https://game.example"), &with_port));
        assert!(!origin_allowed(Some("http://game.example"), &with_port));
        let without = Settings {
            allowed_origins: vec!["http://game.example".into()],
            ..Settings::default()
        };
        assert!(origin_allowed(Some("http://game.example:80"), &without));
        assert!(!origin_allowed(Some("http://game.example:8080"), &without));
        assert!(!origin_allowed(Some("https://game.example:80"), &without));
    }
}
