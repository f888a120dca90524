//! WebSocket protocol v1 at `GET /ws` (the wire format: `docs/protocol.md`).
//!
//! The route only checks the upgrade (Origin allow-list, connections per client address), does
//! the handshake and spawns the session; `session` is the per-connection select loop. The
//! per-instance owner of subscriptions and of the Redis pub/sub feed is [`crate::hub`], whose
//! bounded per-session outbox sits between the two.

pub mod session;

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

fn normalise(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Whether a browser page from `origin` may open a WebSocket (`docs/protocol.md`,
/// "Connecting"): requests without an Origin (non-browser clients) pass; `--dev` allows any;
/// otherwise the configured list, which defaults to the server's own origin
/// (`http(s)://<Host>`). `*` in the list allows any.
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>, settings: &Settings) -> bool {
    let Some(origin) = origin else { return true };
    if settings.dev {
        return true;
    }
    let origin = normalise(origin);
    if settings.allowed_origins.is_empty() {
        let Some(host) = host.map(normalise) else {
            return false;
        };
        return origin == format!("http://{host}") || origin == format!("https://{host}");
    }
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
    let header_str = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    // The Host header itself, not ConnectionInfo: that one believes X-Forwarded-Host.
    if !origin_allowed(
        header_str(header::ORIGIN),
        header_str(header::HOST),
        &st.settings,
    ) {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this Origin may not open a WebSocket here",
        )
        .into());
    }
    let member = st.hub.admit(req.peer_addr().map(|a| a.ip()))?;
    let (res, socket, frames) = actix_ws::handle(&req, body)?;
    let max = st.settings.ws.max_frame_bytes;
    let frames = frames
        .max_frame_size(max)
        .aggregate_continuations()
        .max_continuation_size(max);
    actix_web::rt::spawn(session::run(st.into_inner(), member, socket, frames));
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
        let s = Settings::default();
        let host = Some("127.0.0.1:8080");
        assert!(origin_allowed(None, host, &s), "non-browser clients pass");
        assert!(origin_allowed(Some("http://127.0.0.1:8080"), host, &s));
        assert!(origin_allowed(Some("https://127.0.0.1:8080/"), host, &s));
        assert!(!origin_allowed(Some("http://evil.example"), host, &s));
        assert!(!origin_allowed(Some("http://127.0.0.1:8081"), host, &s));
        let dev = Settings {
            dev: true,
            ..Settings::default()
        };
        assert!(origin_allowed(Some("http://evil.example"), host, &dev));
        let listed = Settings {
            allowed_origins: vec!["https://game.example".into()],
            ..Settings::default()
        };
        assert!(origin_allowed(Some("https://GAME.example"), host, &listed));
        assert!(!origin_allowed(
            Some("http://127.0.0.1:8080"),
            host,
            &listed
        ));
    }
}
