//! Operations: liveness, readiness, metrics, the OpenAPI document, and the web pages.

use actix_web::{get, web, HttpResponse};
use utoipa::OpenApi;

use crate::state::AppState;

/// The process is up.
#[utoipa::path(responses((status = 200)), tag = "ops")]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Redis is reachable.
#[utoipa::path(responses((status = 200), (status = 503)), tag = "ops")]
#[get("/readyz")]
pub async fn readyz(st: web::Data<AppState>) -> HttpResponse {
    match st.store.ping().await {
        Ok(()) => HttpResponse::Ok().json(serde_json::json!({"status": "ready"})),
        Err(_) => HttpResponse::ServiceUnavailable()
            .json(serde_json::json!({"status": "redis unreachable"})),
    }
}

/// Prometheus metrics (names and labels: README, "Metrics").
#[utoipa::path(responses((status = 200)), tag = "ops")]
#[get("/metrics")]
pub async fn metrics(st: web::Data<AppState>) -> HttpResponse {
    crate::metrics::set_subscriptions(&st.hub.views_by_kind());
    // Queue gauges are read now; with Redis away they keep their last values (and
    // scorecast_redis_errors_total says why).
    if let Ok(names) = st.queues.names().await {
        let now = st.queues.clock().now_ms();
        for name in names {
            let q = st.queues.get(&name);
            if let (Ok(c), Ok(lag)) = (q.counts().await, q.lag_ms(now).await) {
                crate::metrics::set_queue(
                    name.as_str(),
                    [
                        ("ready", c.ready),
                        ("delayed", c.delayed),
                        ("processing", c.processing),
                        ("dead", c.dead),
                    ],
                    lag,
                );
            }
        }
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(crate::metrics::render())
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Scorecast", description = "Live leaderboards, rate limits and job queues on Redis sorted sets. WebSocket protocol v1 at /ws."),
    paths(
        healthz, readyz, metrics,
        super::public::boards, super::public::top, super::public::player_get, super::public::around,
        super::public::players, super::public::seasons, super::public::guest,
        super::admin::put_board, super::admin::score, super::admin::remove, super::admin::rollover,
        super::admin::log, super::admin::tokens, super::admin::revoke,
        super::moderation::put_ban, super::moderation::delete_ban, super::moderation::list_bans,
        super::moderation::get_board, super::moderation::delete_board, super::console::queues,
        super::queues::enqueue, super::queues::counts, super::queues::claim, super::queues::ack,
        super::queues::nack, super::queues::extend, super::queues::dead, super::queues::retry,
        super::validators::put_validator, super::validators::get_validator,
        super::validators::delete_validator, super::validators::list_validators,
        super::validators::start_run, super::validators::submit_proof,
    ),
    modifiers(&AdminAuth)
)]
pub struct ApiDoc;

struct AdminAuth;

impl utoipa::Modify for AdminAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "player",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[get("/openapi.json")]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

fn page(st: &AppState, file: &str) -> HttpResponse {
    match std::fs::read(st.settings.web_dir.join(file)) {
        Ok(body) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(body),
        Err(_) => HttpResponse::NotFound().body(format!("{file} not found in the web directory")),
    }
}

#[get("/")]
pub async fn index(st: web::Data<AppState>) -> HttpResponse {
    page(&st, "index.html")
}

#[get("/play")]
pub async fn play(st: web::Data<AppState>) -> HttpResponse {
    page(&st, "play.html")
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(healthz)
        .service(readyz)
        .service(metrics)
        .service(openapi_json)
        .service(index)
        .service(play);
}
