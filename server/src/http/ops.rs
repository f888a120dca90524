//! Operations: liveness, readiness, metrics, the OpenAPI document, and the web pages (the API
//! page `/docs` among them).

use actix_web::{get, route, web, HttpResponse};
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

/// Prometheus metrics (names and labels: README, "Metrics"). The queue gauges are cached
/// (`queue::QueueGauges`): a scrape costs Redis nothing. With `metrics.token` set, only
/// requests bearing it (or any key: admin, game server or read) are answered.
#[utoipa::path(responses((status = 200), (status = 401)), tag = "ops")]
#[get("/metrics")]
pub async fn metrics(st: web::Data<AppState>, req: actix_web::HttpRequest) -> HttpResponse {
    if let Some(token) = &st.settings.metrics.token {
        let presented = super::extract::bearer(&req);
        // Any key of the ring opens it too: every scope reads (the admin console's charts
        // read it with the console's key).
        let by_key = presented.is_some_and(|p| st.keys.find(p).is_some());
        if !crate::auth::token_ok(presented, token) && !by_key {
            return actix_web::ResponseError::error_response(&crate::error::AppError::new(
                scorecast_shared::ErrorCode::Unauthorized,
                "/metrics needs Authorization: Bearer <metrics token>",
            ));
        }
    }
    crate::metrics::set_subscriptions(&st.hub.views_by_kind());
    let (window, cause) = st.hub.views_window();
    crate::metrics::set_views_window(window, cause);
    crate::metrics::VIEWS_HOLD.set(st.hub.views_hold().as_secs_f64());
    st.queue_gauges.refresh(&st.queues).await;
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
        super::admin::log, super::admin::tokens, super::admin::revoke, super::admin::audit,
        super::moderation::put_ban, super::moderation::delete_ban, super::moderation::list_bans,
        super::moderation::get_board, super::moderation::delete_board, super::console::queues,
        super::console::find_players, super::console::stats,
        super::queues::enqueue, super::queues::enqueue_bulk, super::queues::counts, super::queues::claim, super::queues::ack,
        super::queues::nack, super::queues::extend, super::queues::dead, super::queues::retry,
        super::queues::list_jobs, super::queues::delete_job, super::queues::purge, super::queues::retry_all,
        super::validators::put_validator, super::validators::get_validator,
        super::validators::delete_validator, super::validators::list_validators,
        super::validators::start_run, super::validators::submit_proof,
        super::tournaments::join, super::tournaments::tournament,
        super::tournaments::final_standings, super::tournaments::list_entrants,
        super::leagues::admin_top, super::leagues::put_league, super::leagues::get_league,
        super::leagues::list_leagues, super::leagues::moves, super::leagues::me,
        super::buckets::list_buckets,
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

/// The OpenAPI document, with the error bodies and bounds of [`super::apidoc`].
#[get("/openapi.json")]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(super::apidoc::document())
}

fn page(st: &AppState, file: &str) -> HttpResponse {
    match std::fs::read(st.settings.web_dir.join(file)) {
        Ok(body) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(body),
        Err(_) => HttpResponse::NotFound().body(format!("{file} not found in the web directory")),
    }
}

// The pages answer HEAD as GET (without the body): uptime probes and link checkers use it.
#[route("/", method = "GET", method = "HEAD")]
pub async fn index(st: web::Data<AppState>) -> HttpResponse {
    page(&st, "index.html")
}

#[route("/play", method = "GET", method = "HEAD")]
pub async fn play(st: web::Data<AppState>) -> HttpResponse {
    page(&st, "play.html")
}

/// The browsable API page (`web/docs/`: Swagger UI on `/openapi.json`).
pub async fn docs(st: web::Data<AppState>) -> HttpResponse {
    page(&st, "docs/index.html")
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(healthz)
        .service(readyz)
        .service(metrics)
        .service(openapi_json)
        .service(index)
        .service(play)
        .route("/docs", web::get().to(docs))
        .route("/docs", web::head().to(docs))
        .route("/docs/", web::get().to(docs))
        .route("/docs/", web::head().to(docs));
}
