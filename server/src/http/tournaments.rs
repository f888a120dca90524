//! Tournaments (`docs/protocol.md`, "Tournaments"): `POST /v1/boards/{board}/join`,
//! `GET /v1/boards/{board}/tournament`, `GET /v1/boards/{board}/final` and, for operators,
//! `GET /admin/boards/{board}/tournament/entrants`.

use actix_web::{get, post, web, HttpResponse};
use scorecast_shared::{protocol, ErrorCode};
use serde::{Deserialize, Serialize};

use super::extract::{PlayerAuth, ReadLimit, Reader};
use super::public::{in_range, offset, season, TopResponse};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{EntrantsPage, TournamentInfo};

/// Most entrants per page of `GET /admin/boards/{board}/tournament/entrants`.
pub const MAX_ENTRANTS_PAGE: u64 = 1000;
/// Entrants per page when `limit` is not given.
pub const DEFAULT_ENTRANTS_PAGE: u64 = 100;

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

/// A board's tournament now.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TournamentState {
    pub board: String,
    /// The current occurrence (the board's current season).
    pub season: String,
    /// `upcoming`, `running` or `ended`.
    pub state: &'static str,
    /// When this occurrence opens and closes (ms since the epoch; a recurring tournament's are
    /// its calendar season's).
    pub start_ms: i64,
    pub end_ms: i64,
    /// The server's clock now: `end_ms - server_time_ms` is the time left.
    pub server_time_ms: i64,
    /// Players who entered this occurrence.
    pub entrants: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    pub join_required: bool,
    /// When its final standings were frozen (absent until then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<i64>,
}

/// The board's tournament now: its occurrence, state, dates, the server's clock (for the time
/// left) and how many entered; `not_found` on a board without a tournament.
#[utoipa::path(params(("board" = String, Path)), responses((status = 200, body = TournamentState), (status = 404)), tag = "tournaments")]
#[get("/v1/boards/{board}/tournament")]
pub async fn tournament(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let TournamentInfo {
        now_ms: now,
        season,
        entrants,
        ended_ms,
        config: cfg,
    } = st.store.tournament_info(&board).await?;
    let Some(t) = cfg.tournament else {
        return Err(AppError::new(
            ErrorCode::NotFound,
            format!("board {board} has no tournament"),
        ));
    };
    let (start_ms, end_ms) = match (t.schedule.start_ms, t.schedule.end_ms) {
        (Some(s), Some(e)) if !t.schedule.recurring => (s, e),
        _ => crate::jobs::calendar_season(cfg.reset, now)
            .map(|(_, s, e)| (s, e))
            .unwrap_or((0, 0)),
    };
    let state = if now < start_ms {
        "upcoming"
    } else if now >= end_ms {
        "ended"
    } else {
        "running"
    };
    Ok(HttpResponse::Ok().json(TournamentState {
        board: board.into_string(),
        season,
        state,
        start_ms,
        end_ms,
        server_time_ms: now,
        entrants,
        max_size: t.max_size,
        max_attempts: t.max_attempts,
        join_required: t.join_required,
        ended_ms,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct FinalQuery {
    /// 1–100, default 10.
    pub limit: Option<u64>,
    /// 0–4294967295, default 0.
    pub offset: Option<u64>,
    /// The occurrence (season); default the one that ended last.
    pub season: Option<String>,
}

/// The final standings of the board's tournament, frozen when it ended (`season`: that
/// occurrence; default the one that ended last); `not_found` until it has ended.
#[utoipa::path(params(("board" = String, Path), FinalQuery), responses((status = 200, body = TopResponse), (status = 404)), tag = "tournaments")]
#[get("/v1/boards/{board}/final")]
pub async fn final_standings(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<String>,
    q: web::Query<FinalQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let n = in_range(
        "limit",
        q.limit,
        u64::from(protocol::DEFAULT_TOP_LIMIT),
        u64::from(protocol::MAX_TOP_LIMIT),
    )?;
    let offset = offset(q.offset)?;
    let season = season(&q.season)?;
    let page = st
        .store
        .read_final(&board, season.as_ref(), offset, n)
        .await?;
    Ok(HttpResponse::Ok().json(TopResponse {
        board: board.into_string(),
        season: page.season,
        total: page.total,
        bucket: None,
        buckets: None,
        entries: page.entries,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EntrantsQuery {
    /// 1–1000, default 100.
    pub limit: Option<u64>,
    /// 0–4294967295, default 0.
    pub offset: Option<u64>,
    /// An occurrence (season) of the tournament; default the current one.
    pub season: Option<String>,
}

/// The players who entered an occurrence of the board's tournament, in the order they entered,
/// each with when they entered, the attempts they made and their name; paged by offset.
/// `not_found` on a board without a tournament, `unknown_season` for a season the board never had.
#[utoipa::path(params(("board" = String, Path), EntrantsQuery), responses((status = 200, body = EntrantsPage), (status = 400), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}/tournament/entrants")]
pub async fn list_entrants(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<EntrantsQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let n = in_range("limit", q.limit, DEFAULT_ENTRANTS_PAGE, MAX_ENTRANTS_PAGE)?;
    let offset = offset(q.offset)?;
    let season = season(&q.season)?;
    let page = st
        .store
        .tournament_entrants(&board, season.as_ref(), offset, n)
        .await?;
    Ok(HttpResponse::Ok().json(page))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(join)
        .service(list_entrants)
        .service(tournament)
        .service(final_standings);
}
