//! Tournaments (`docs/protocol.md`, "Tournaments"): `POST /v1/boards/{board}/join` and
//! `GET /v1/boards/{board}/final`.

use actix_web::{get, post, web, HttpResponse};
use scorecast_shared::protocol;

use super::extract::{PlayerAuth, ReadLimit};
use super::public::{TopQuery, TopResponse, MAX_OFFSET};
use crate::error::{rate_headers, AppError, AppResult};
use crate::state::AppState;

/// Enters the token's player in the current occurrence of the board's tournament; joining again
/// is answered the same and changes nothing. Refused: `bad_request` (the board has no
/// tournament), `ended`, `full`.
#[utoipa::path(params(("board" = String, Path)), responses((status = 200, body = crate::store::Joined), (status = 400), (status = 401), (status = 404), (status = 409)), tag = "tournaments", security(("player" = [])))]
#[post("/v1/boards/{board}/join")]
pub async fn join(
    PlayerAuth(player): PlayerAuth,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    Ok(HttpResponse::Ok().json(st.store.join(&board, &player.id).await?))
}

/// The final standings of the board's tournament, frozen when it ended (`season`: that
/// occurrence; default the one that ended last); `not_found` until it has ended.
#[utoipa::path(params(("board" = String, Path), TopQuery), responses((status = 200, body = TopResponse), (status = 404)), tag = "tournaments")]
#[get("/v1/boards/{board}/final")]
pub async fn final_standings(
    st: web::Data<AppState>,
    limit: ReadLimit,
    path: web::Path<String>,
    q: web::Query<TopQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let n = q.limit.unwrap_or(u64::from(protocol::DEFAULT_TOP_LIMIT));
    if !(1..=u64::from(protocol::MAX_TOP_LIMIT)).contains(&n) {
        return Err(AppError::bad_request(format!(
            "limit must be 1..={}, got {n}",
            protocol::MAX_TOP_LIMIT
        )));
    }
    let offset = q.offset.unwrap_or(0);
    if offset > MAX_OFFSET {
        return Err(AppError::bad_request(format!(
            "offset must be 0..={MAX_OFFSET}, got {offset}"
        )));
    }
    let season = q
        .season
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(AppState::id)
        .transpose()?;
    let page = st
        .store
        .read_final(&board, season.as_ref(), offset, n)
        .await?;
    let mut res = HttpResponse::Ok();
    rate_headers(&mut res, &limit.0);
    Ok(res.json(TopResponse {
        board: board.into_string(),
        season: page.season,
        total: page.total,
        entries: page.entries,
    }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(join).service(final_standings);
}
