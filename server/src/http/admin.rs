//! Admin endpoints (`/admin`, bearer admin token, no CORS headers, not rate limited).

use actix_web::{delete, get, post, put, web, HttpResponse};
use scorecast_shared::protocol::parse_points;
use scorecast_shared::{BoardConfig, ErrorCode, Id, Op};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::{Admin, GameServer, Object, Reader};
use crate::error::{AppError, AppResult};
use crate::state::{AppState, Transport};
use crate::store::{Accepted, AuditPage, LogCursor, LogPage, Submission};

#[derive(Serialize, utoipa::ToSchema)]
pub struct BoardPut {
    pub id: String,
    #[serde(flatten)]
    pub config: BoardConfig,
    pub created: bool,
}

/// Creates or changes a board. Changing order, tie_break, resolution_ms or time_bits of a board
/// with scores is refused (`conflict`).
#[utoipa::path(params(("board" = String, Path)), request_body = BoardConfig, responses((status = 200, body = BoardPut), (status = 404), (status = 409)), tag = "admin", security(("admin" = [])))]
#[put("/admin/boards/{board}")]
pub async fn put_board(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<BoardConfig>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let body = body.into_inner();
    let created = st.store.put_board(&board, &body).await?;
    tracing::info!(%board, created, key = %key.0, "board configured");
    let config = serde_json::to_string(&body).unwrap_or_default();
    st.store
        .audit(
            key.0.as_str(),
            "board_put",
            &[
                ("board", board.as_str()),
                ("created", if created { "1" } else { "0" }),
                ("config", &config),
            ],
        )
        .await;
    if created {
        // Bans on every board reach boards created later.
        st.store.apply_global_bans(&board).await?;
    }
    // Calendar boards get their season rollover job (idempotent; never fails the request).
    crate::jobs::board_changed(&st, &board, &body).await;
    Ok(HttpResponse::Ok().json(BoardPut {
        id: board.into_string(),
        config: body,
        created,
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoreBody {
    /// Integer points, |points| ≤ 2^53 − 1.
    #[schema(value_type = i64)]
    pub points: Value,
    /// Overrides the board's op.
    pub op: Option<Op>,
    /// Submission id for safe retries (generated when absent).
    pub id: Option<String>,
}

/// Applies points to a player through the submission core (no submit limit).
#[utoipa::path(params(("board" = String, Path), ("player" = String, Path)), request_body = ScoreBody, responses((status = 200, body = Accepted), (status = 403), (status = 404), (status = 409)), tag = "admin", security(("admin" = [])))]
#[post("/admin/boards/{board}/players/{player}/score")]
pub async fn score(
    key: GameServer,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Object<ScoreBody>,
) -> AppResult<HttpResponse> {
    let (board, player) = (AppState::id(&path.0)?, AppState::id(&path.1)?);
    let points =
        parse_points(Some(&body.points)).map_err(|(code, msg)| AppError::new(code, msg))?;
    let id = match &body.id {
        Some(id) => AppState::id(id)?,
        // unwrap: a simple uuid is 32 hex characters, a valid id.
        None => Id::parse(&uuid::Uuid::new_v4().simple().to_string()).unwrap(),
    };
    let s = Submission {
        board,
        player,
        id,
        points,
        op: body.op,
        name: None,
        by: Some(key.0 .0),
        verified: false,
    };
    Ok(HttpResponse::Ok().json(st.submit_via(&s, Transport::Http).await?))
}

/// Removes a player's entry of the board's current season, on the board or held by a ban (a
/// held entry removed does not come back on lift). Audited in the moderation history.
#[utoipa::path(params(("board" = String, Path), ("player" = String, Path)), responses((status = 204), (status = 404)), tag = "admin", security(("admin" = [])))]
#[delete("/admin/boards/{board}/players/{player}")]
pub async fn remove(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> AppResult<HttpResponse> {
    let (board, player) = (AppState::id(&path.0)?, AppState::id(&path.1)?);
    if let Some(season) = st.store.remove(&board, &player, key.0.as_str()).await? {
        tracing::info!(%board, %player, key = %key.0, "player removed");
        st.store
            .audit(
                key.0.as_str(),
                "player_remove",
                &[
                    ("board", board.as_str()),
                    ("player", player.as_str()),
                    ("season", &season),
                ],
            )
            .await;
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(AppError::new(
            ErrorCode::NotFound,
            format!("{player} is not on {board}"),
        ))
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RolloverBody {
    pub season: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct RolloverResponse {
    pub board: String,
    pub season: String,
    pub start_ms: i64,
    pub previous_season: String,
}

/// Starts a named season on a `never` board (calendar boards: `conflict`).
#[utoipa::path(params(("board" = String, Path)), request_body = RolloverBody, responses((status = 200, body = RolloverResponse), (status = 404), (status = 409)), tag = "admin", security(("admin" = [])))]
#[post("/admin/boards/{board}/rollover")]
pub async fn rollover(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<RolloverBody>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let season = AppState::id(&body.season)?;
    let (season, start_ms, previous_season) = st.store.rollover(&board, &season).await?;
    tracing::info!(%board, %season, key = %key.0, "season rolled over");
    st.store
        .audit(
            key.0.as_str(),
            "rollover",
            &[
                ("board", board.as_str()),
                ("season", &season),
                ("previous_season", &previous_season),
            ],
        )
        .await;
    // Rewards of the season that just ended, as for calendar seasons. The new season has
    // started either way; a failure here is logged and the job can be enqueued again.
    if let Err(e) = crate::jobs::season_ended(&st, &board, &previous_season, start_ms).await {
        tracing::warn!(%board, season = %previous_season, error = %e, "could not enqueue the after-season job");
    }
    Ok(HttpResponse::Ok().json(RolloverResponse {
        board: board.into_string(),
        season,
        start_ms,
        previous_season,
    }))
}

/// Most audit-log entries per page.
pub const MAX_LOG_PAGE: usize = 1000;

#[derive(Deserialize, utoipa::IntoParams)]
pub struct LogQuery {
    /// Only this player's entries.
    pub player: Option<String>,
    /// Only entries at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// 1–1000, default 100.
    pub limit: Option<usize>,
    /// The older alias of `limit`.
    pub count: Option<usize>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// The audit log (accepted submissions, bans and lifts), newest first, filtered by player and
/// time and paged by cursor.
#[utoipa::path(params(("board" = String, Path), LogQuery), responses((status = 200, body = LogPage), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}/log")]
pub async fn log(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<LogQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let limit = q.limit.or(q.count).unwrap_or(100);
    if !(1..=MAX_LOG_PAGE).contains(&limit) {
        return Err(AppError::bad_request(format!(
            "limit must be 1..={MAX_LOG_PAGE}"
        )));
    }
    let player = q.player.as_deref().map(AppState::id).transpose()?;
    let cursor = q
        .cursor
        .as_deref()
        .map(|s| {
            LogCursor::parse(s)
                .ok_or_else(|| AppError::bad_request(format!("cursor {s:?} is not a log cursor")))
        })
        .transpose()?;
    let page = st
        .store
        .log_page(&board, player.as_ref(), q.since_ms, limit, cursor)
        .await?;
    Ok(HttpResponse::Ok().json(page))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    pub player: String,
    /// Lifetime in seconds: default 3600, at most `auth.max_token_lifetime_s` (default 30 days).
    pub ttl_s: Option<u64>,
    pub name: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TokenResponse {
    pub token: String,
}

/// Issues a player token.
#[utoipa::path(request_body = TokenRequest, responses((status = 200, body = TokenResponse)), tag = "admin", security(("admin" = [])))]
#[post("/admin/tokens")]
pub async fn tokens(
    _: GameServer,
    st: web::Data<AppState>,
    body: Object<TokenRequest>,
) -> AppResult<HttpResponse> {
    let player = AppState::id(&body.player)?;
    let max = st.tokens.max_lifetime_s();
    let ttl = body.ttl_s.unwrap_or(3600.min(max));
    if !(1..=max).contains(&ttl) {
        return Err(AppError::bad_request(format!("ttl_s must be 1..={max}")));
    }
    let name = body.name.clone().map(crate::auth::clean_name);
    let token = st.tokens.issue(&player, name.as_deref(), ttl);
    Ok(HttpResponse::Ok().json(TokenResponse { token }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Revoked {
    pub player: String,
    /// Tokens of the player issued before this time (ms since the epoch, Redis clock) are
    /// refused from now on, on every instance.
    pub revoked_at_ms: i64,
}

/// Revokes every token of a player issued before now: `hello` with one of them is refused and
/// sessions that authenticated with one get their next submissions rejected `unauthorized`, on
/// every instance within a second. Tokens issued afterwards work. A token without `iat` counts
/// as issued before any revocation (for as long as the revocation is kept: the maximum token
/// lifetime).
#[utoipa::path(params(("player" = String, Path)), responses((status = 200, body = Revoked), (status = 400)), tag = "admin", security(("admin" = [])))]
#[post("/admin/players/{player}/revoke")]
pub async fn revoke(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let player = AppState::id(&path)?;
    let revoked_at_ms = st
        .tokens
        .revocations()
        .revoke(&st.store, &player, st.tokens.revocation_keep_ms())
        .await?;
    tracing::info!(%player, revoked_at_ms, key = %key.0, "tokens revoked");
    st.store
        .audit(
            key.0.as_str(),
            "tokens_revoke",
            &[
                ("player", player.as_str()),
                ("revoked_at_ms", &revoked_at_ms.to_string()),
            ],
        )
        .await;
    Ok(HttpResponse::Ok().json(Revoked {
        player: player.into_string(),
        revoked_at_ms,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// 1–1000, default 100.
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// The admin audit log, newest first: board configuration and deletion, rollovers, removed
/// players, token revocations and dead-letter retries, each with `by`, the name of the key that
/// made it. (Bans, lifts and admin scores are in each board's log.)
#[utoipa::path(params(AuditQuery), responses((status = 200, body = AuditPage), (status = 400)), tag = "admin", security(("admin" = [])))]
#[get("/admin/audit")]
pub async fn audit(
    _: Reader,
    st: web::Data<AppState>,
    q: web::Query<AuditQuery>,
) -> AppResult<HttpResponse> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::bad_request("limit must be 1..=1000"));
    }
    let cursor = q
        .cursor
        .as_deref()
        .map(|s| {
            LogCursor::parse(s)
                .filter(|c| c.is_plain())
                .map(|_| s)
                .ok_or_else(|| {
                    AppError::bad_request(format!("cursor {s:?} is not an audit cursor"))
                })
        })
        .transpose()?;
    Ok(HttpResponse::Ok().json(st.store.audit_page(limit, cursor).await?))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(audit)
        .service(put_board)
        .service(revoke)
        .service(score)
        .service(remove)
        .service(rollover)
        .service(log)
        .service(tokens);
}
