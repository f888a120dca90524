//! Buckets and leagues (`docs/protocol.md`, "Buckets" and "Leagues"): an operator's read of any
//! ladder of a bucketed board (`GET /admin/boards/{board}/top`).

use actix_web::{get, web, HttpResponse};
use serde::Deserialize;

use super::extract::Reader;
use super::public::{TopResponse, MAX_OFFSET};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{Read, Scope};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AdminTopQuery {
    /// 1–1000, default 100.
    pub limit: Option<u64>,
    /// 0–4294967295, default 0.
    pub offset: Option<u64>,
    /// A past season; default the current one.
    pub season: Option<String>,
    /// The bucket to read (1, 2, ...); left out: the whole board.
    pub bucket: Option<u32>,
}

/// The most rows of an operator's top read.
const ADMIN_MAX_LIMIT: u64 = 1000;

/// The top of a board for an operator: the whole board (bucketed or not), or one bucket of a
/// bucketed board (`?bucket=n`).
#[utoipa::path(params(("board" = String, Path), AdminTopQuery), responses((status = 200, body = TopResponse), (status = 400), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}/top")]
pub async fn admin_top(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<AdminTopQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=ADMIN_MAX_LIMIT).contains(&limit) {
        return Err(AppError::bad_request(format!(
            "limit must be 1..={ADMIN_MAX_LIMIT}, got {limit}"
        )));
    }
    let offset = q.offset.unwrap_or(0);
    if offset > MAX_OFFSET {
        return Err(AppError::bad_request(format!(
            "offset must be 0..={MAX_OFFSET}, got {offset}"
        )));
    }
    let scope = match q.bucket {
        None => Scope::Board,
        Some(0) => return Err(AppError::bad_request("buckets are numbered from 1")),
        Some(n) => Scope::Bucket(n),
    };
    let season = q
        .season
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(AppState::id)
        .transpose()?;
    let (page, bucket) = st
        .store
        .read_in(&board, season.as_ref(), scope, Read::Top { offset, limit })
        .await?;
    Ok(HttpResponse::Ok().json(TopResponse {
        board: board.into_string(),
        season: page.season,
        total: page.total,
        bucket: (bucket > 0).then_some(bucket),
        entries: page.entries,
    }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(admin_top);
}
