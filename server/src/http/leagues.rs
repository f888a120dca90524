//! Buckets and leagues (`docs/protocol.md`, "Buckets" and "Leagues"): an operator's read of any
//! ladder of a bucketed board (`GET /admin/boards/{board}/top`); a league configured in one
//! request (`PUT /admin/leagues/{league}`), read back, its seasons' moves
//! (`GET /admin/leagues/{league}/moves`); a player's place in it (`GET /v1/leagues/{league}/me`).

use actix_web::{get, put, web, HttpResponse};
use scorecast_shared::{ErrorCode, Id};
use serde::{Deserialize, Serialize};

use super::extract::{Admin, Object, PlayerAuth, ReadLimit, Reader};
use super::public::{in_range, offset, season, TopResponse};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{LeagueConfig, Moves, Read, Scope};

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
    let limit = in_range("limit", q.limit, 100, ADMIN_MAX_LIMIT)?;
    let offset = offset(q.offset)?;
    let scope = match q.bucket {
        None => Scope::Board,
        Some(0) => return Err(AppError::bad_request("buckets are numbered from 1")),
        Some(n) => Scope::Bucket(n),
    };
    let season = season(&q.season)?;
    let (page, bucket, buckets) = st
        .store
        .read_counted(&board, season.as_ref(), scope, Read::Top { offset, limit })
        .await?;
    Ok(HttpResponse::Ok().json(TopResponse {
        board: board.into_string(),
        season: page.season,
        total: page.total,
        bucket: (bucket > 0).then_some(bucket),
        buckets: (bucket > 0).then_some(buckets),
        entries: page.entries,
    }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LeagueInfo {
    pub id: String,
    #[serde(flatten)]
    pub config: LeagueConfig,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LeaguePut {
    pub id: String,
    #[serde(flatten)]
    pub config: LeagueConfig,
    pub created: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LeagueList {
    pub leagues: Vec<LeagueInfo>,
}

/// Creates or changes a league in one request: its tier boards (lowest first) are created or
/// changed to be bucketed (`bucket_size`), on the league's calendar (`reset`), each knowing its
/// tier; the season-end job is scheduled. Refused: `bad_request` (the settings), `conflict` (a
/// tier board of another league, other tiers than the league has, a tier board change that
/// would reinterpret its scores).
#[utoipa::path(params(("league" = String, Path)), request_body = LeagueConfig, responses((status = 200, body = LeaguePut), (status = 400), (status = 409)), tag = "leagues", security(("admin" = [])))]
#[put("/admin/leagues/{league}")]
pub async fn put_league(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<LeagueConfig>,
) -> AppResult<HttpResponse> {
    let league = AppState::id(&path)?;
    let body = body.into_inner();
    let created = st.store.put_league(&league, &body).await?;
    tracing::info!(%league, created, key = %key.0, "league configured");
    let config = serde_json::to_string(&body).unwrap_or_default();
    st.store
        .audit(
            key.0.as_str(),
            "league_put",
            &[
                ("league", league.as_str()),
                ("created", if created { "1" } else { "0" }),
                ("config", &config),
            ],
        )
        .await;
    // The tier boards' own jobs (their season rollovers), then the league's season end.
    for tier in &body.tiers {
        let id = AppState::id(tier)?;
        let cfg = st.store.board(&id).await?;
        crate::jobs::board_changed(&st, &id, &cfg).await;
    }
    let now = st.queues.clock().now_ms();
    if let Err(e) = crate::jobs::league::schedule_close(&st, &league, &body, now).await {
        tracing::warn!(%league, error = %e, "could not schedule the league's season end");
    }
    Ok(HttpResponse::Ok().json(LeaguePut {
        id: league.into_string(),
        config: body,
        created,
    }))
}

/// A league's configuration (`not_found` without one).
#[utoipa::path(params(("league" = String, Path)), responses((status = 200, body = LeagueInfo), (status = 404)), tag = "leagues", security(("admin" = [])))]
#[get("/admin/leagues/{league}")]
pub async fn get_league(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let league = AppState::id(&path)?;
    let config = st.store.league(&league).await?;
    Ok(HttpResponse::Ok().json(LeagueInfo {
        id: league.into_string(),
        config,
    }))
}

/// Every league.
#[utoipa::path(responses((status = 200, body = LeagueList)), tag = "leagues", security(("admin" = [])))]
#[get("/admin/leagues")]
pub async fn list_leagues(_: Reader, st: web::Data<AppState>) -> AppResult<HttpResponse> {
    let leagues = st
        .store
        .leagues()
        .await?
        .into_iter()
        .map(|(id, config)| LeagueInfo {
            id: id.into_string(),
            config,
        })
        .collect();
    Ok(HttpResponse::Ok().json(LeagueList { leagues }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct MovesQuery {
    /// The ended season (default: the last one that ended, the season before the current one).
    pub season: Option<String>,
}

/// The moves of one ended season of a league (by default the last that ended), as the
/// `league.close` job computed them from the frozen standings (in tier, bucket and rank order),
/// with `closed_ms` once they were applied to every tier; `not_found` before the job computed
/// them.
#[utoipa::path(params(("league" = String, Path), MovesQuery), responses((status = 200, body = Moves), (status = 404)), tag = "leagues", security(("admin" = [])))]
#[get("/admin/leagues/{league}/moves")]
pub async fn moves(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<MovesQuery>,
) -> AppResult<HttpResponse> {
    let league = AppState::id(&path)?;
    let season = q.season.as_deref().map(AppState::id).transpose()?;
    let cfg = st.store.league(&league).await?;
    let season = match season {
        Some(s) => s.into_string(),
        None => crate::jobs::league::last_ended_season(&cfg, st.queues.clock().now_ms())
            .ok_or_else(|| AppError::bad_request("the league has no calendar"))?,
    };
    let moves = st
        .store
        .moves(&league, season.as_str())
        .await?
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::NotFound,
                format!("no moves of season {season} of league {league} (yet)"),
            )
        })?;
    Ok(HttpResponse::Ok().json(moves))
}

/// A player's place in a league.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LeagueMe {
    pub league: String,
    pub player: String,
    /// Their tier (0 = the lowest) and its board.
    pub tier: u32,
    pub board: String,
    /// The board's current season.
    pub season: String,
    /// Their bucket and rank in it this season (absent until their first score).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// Players in their bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_total: Option<u64>,
}

/// The token's player's place in a league: their tier (a player never moved is on the lowest,
/// where new players enter), its board, and their bucket, rank and score there this season.
#[utoipa::path(params(("league" = String, Path)), responses((status = 200, body = LeagueMe), (status = 401), (status = 404)), tag = "leagues", security(("player" = [])))]
#[get("/v1/leagues/{league}/me")]
pub async fn me(
    PlayerAuth(player): PlayerAuth,
    _limit: ReadLimit,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let league = AppState::id(&path)?;
    let cfg = st.store.league(&league).await?;
    let tiers = cfg
        .tiers
        .iter()
        .map(|t| AppState::id(t))
        .collect::<AppResult<Vec<Id>>>()?;
    // The tier whose board says the player plays on it; none: never moved, the lowest.
    let placed = st.store.placements(&tiers, &player.id).await?;
    let tier = placed
        .iter()
        .zip(&cfg.tiers)
        .position(|(p, t)| p.as_deref() == Some(t.as_str()))
        .unwrap_or(0);
    let board = &tiers[tier];
    let (season, bucket, row) = match st
        .store
        .read_in(board, None, Scope::Own, Read::Player(&player.id))
        .await
    {
        Ok((page, b)) => (page.season.clone(), Some(b), Some(page)),
        // No bucket yet this season: the season from a bucket's head (not the whole board's,
        // which may be merged from every bucket first).
        Err(e) if e.code == ErrorCode::NotFound => {
            let (page, _) = st
                .store
                .read_in(
                    board,
                    None,
                    Scope::Bucket(1),
                    Read::Top {
                        offset: 0,
                        limit: 0,
                    },
                )
                .await?;
            (page.season, None, None)
        }
        Err(e) => return Err(e),
    };
    let entry = row.as_ref().and_then(|p| p.entries.first());
    Ok(HttpResponse::Ok().json(LeagueMe {
        league: league.into_string(),
        player: player.id.into_string(),
        tier: tier as u32,
        board: board.to_string(),
        season,
        bucket,
        rank: entry.map(|e| e.rank),
        score: entry.map(|e| e.score),
        bucket_total: row.as_ref().map(|p| p.total),
    }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(admin_top)
        .service(list_leagues)
        .service(put_league)
        .service(get_league)
        .service(moves)
        .service(me);
}
