//! The admin console (`/admin`, `web/admin.html`) and the one read it needs beyond the rest of
//! the admin API: every queue with its counts.

use actix_web::{get, web, HttpResponse};
use serde::Serialize;

use super::extract::Reader;
use crate::error::AppResult;
use crate::queue::Counts;
use crate::state::AppState;

/// The console page. Public like the other pages: it asks for the admin token and keeps it in
/// `sessionStorage`; every call it makes carries the token.
#[get("/admin")]
pub async fn page(st: web::Data<AppState>) -> HttpResponse {
    match std::fs::read(st.settings.web_dir.join("admin.html")) {
        Ok(body) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(body),
        Err(_) => HttpResponse::NotFound().body("admin.html not found in the web directory"),
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct QueueInfo {
    pub name: String,
    #[serde(flatten)]
    pub counts: Counts,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct QueueList {
    pub queues: Vec<QueueInfo>,
}

/// Every queue that has had a job, with its counts per state.
#[utoipa::path(responses((status = 200, body = QueueList)), tag = "queues", security(("admin" = [])))]
#[get("/admin/queues")]
pub async fn queues(_: Reader, st: web::Data<AppState>) -> AppResult<HttpResponse> {
    let mut out = Vec::new();
    for name in st.queues.names().await? {
        let counts = st.queues.get(&name).counts().await?;
        out.push(QueueInfo {
            name: name.into_string(),
            counts,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(HttpResponse::Ok().json(QueueList { queues: out }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(page).service(queues);
}
