//! A bucketed board's buckets for operators (`docs/protocol.md`, "Buckets"):
//! `GET /admin/boards/{board}/buckets`, what the console's bucket picker lists.

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;

use super::extract::Reader;
use super::public::{in_range, season};
use crate::error::AppResult;
use crate::state::AppState;

/// Most buckets per page.
pub const MAX_BUCKETS_PAGE: u32 = 1000;
/// Buckets per page when `limit` is not given.
pub const DEFAULT_BUCKETS_PAGE: u32 = 100;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct BucketsQuery {
    /// 1–1000, default 100.
    pub limit: Option<u32>,
    /// Buckets skipped (the page starts at bucket `offset + 1`); default 0.
    pub offset: Option<u32>,
    /// A past season; default the current one.
    pub season: Option<String>,
}

/// How many buckets a season of a bucketed board has and, for a page of them, how many players
/// have a score in each. `not_found` on a board without `bucket_size`.
#[utoipa::path(params(("board" = String, Path), BucketsQuery), responses((status = 200, body = crate::store::BucketsPage), (status = 400), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}/buckets")]
pub async fn list_buckets(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<BucketsQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let limit = in_range(
        "limit",
        q.limit.map(u64::from),
        u64::from(DEFAULT_BUCKETS_PAGE),
        u64::from(MAX_BUCKETS_PAGE),
    )?;
    let season = season(&q.season)?;
    let page = st
        .store
        // `as`: in_range bounded it by MAX_BUCKETS_PAGE, a u32.
        .buckets(&board, season.as_ref(), q.offset.unwrap_or(0), limit as u32)
        .await?;
    Ok(HttpResponse::Ok().json(page))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(list_buckets);
}
