//! Public reads (`/v1`): the allowed origins may read (CORS, no credentials), rate-limited per
//! client address.

use actix_web::{get, post, web, HttpResponse};
use scorecast_shared::{protocol, BoardConfig, Entry, ErrorCode, Id};
use serde::{Deserialize, Serialize};

use super::extract::{Object, ReadLimit};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{Page, Read, Scope, SeasonInfo};

// The same bounds and defaults as the WebSocket views (one source: the shared crate).
const MAX_LIMIT: u64 = protocol::MAX_TOP_LIMIT as u64;
const DEFAULT_LIMIT: u64 = protocol::DEFAULT_TOP_LIMIT as u64;
const MAX_RADIUS: u64 = protocol::MAX_RADIUS as u64;
const DEFAULT_RADIUS: u64 = protocol::DEFAULT_RADIUS as u64;
/// The largest `offset` of a top read: a Redis sorted set holds at most 2^32 − 1 members, so
/// any offset past that is empty anyway; beyond it the number would no longer reach the Lua
/// script exactly. Larger offsets are `bad_request`.
pub const MAX_OFFSET: u64 = u32::MAX as u64;

/// A board as `GET /v1/boards` lists it: its id and configuration.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PublicBoard {
    pub id: String,
    #[serde(flatten)]
    pub config: BoardConfig,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BoardList {
    pub boards: Vec<PublicBoard>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TopResponse {
    pub board: String,
    pub season: String,
    /// Players on the ladder read (a bucket's on a bucketed board).
    pub total: u64,
    /// The bucket read, on a bucketed board.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    /// With `bucket`: the season's number of buckets (numbered from 1; a bucket past the last
    /// reads as an empty one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
    pub entries: Vec<Entry>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EntriesResponse {
    pub board: String,
    pub season: String,
    /// The player's bucket, on a bucketed board (`around`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    pub entries: Vec<Entry>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PlayerResponse {
    pub board: String,
    pub season: String,
    pub player: String,
    pub score: i64,
    /// On a bucketed board: the rank within the player's bucket.
    pub rank: u64,
    /// Share of the board (of the bucket, on a bucketed board) at or below this player, 0–100,
    /// one decimal.
    pub percentile: f64,
    /// The player's bucket, on a bucketed board.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached_ms: Option<i64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct SeasonList {
    pub seasons: Vec<SeasonInfo>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct TopQuery {
    /// 1–100, default 10.
    pub limit: Option<u64>,
    /// 0–4294967295 (the most members a Redis sorted set holds), default 0.
    pub offset: Option<u64>,
    /// A past season; default the current one.
    pub season: Option<String>,
    /// A bucketed board: the bucket to read (1, 2, ...). A bucketed board's top names a bucket
    /// or a player.
    pub bucket: Option<u32>,
    /// A bucketed board: read this player's bucket.
    pub player: Option<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SeasonQuery {
    pub season: Option<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AroundQuery {
    /// 1–25, default 5.
    pub radius: Option<u64>,
    pub season: Option<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PlayersQuery {
    /// Comma-separated player ids (at most 100).
    pub ids: String,
    pub season: Option<String>,
}

/// A `season` query parameter: absent or empty means the current season.
pub(super) fn season(s: &Option<String>) -> AppResult<Option<Id>> {
    s.as_deref()
        .filter(|s| !s.is_empty())
        .map(AppState::id)
        .transpose()
}

fn ok<T: Serialize>(body: &T) -> HttpResponse {
    HttpResponse::Ok().json(body)
}

/// A paging or size parameter: `default` when absent, else 1..=`max` (`bad_request`).
pub(super) fn in_range(name: &str, v: Option<u64>, default: u64, max: u64) -> AppResult<u64> {
    match v.unwrap_or(default) {
        n if (1..=max).contains(&n) => Ok(n),
        n => Err(AppError::bad_request(format!(
            "{name} must be 1..={max}, got {n}"
        ))),
    }
}

/// An `offset` query parameter: 0 when absent, at most [`MAX_OFFSET`] (`bad_request`).
pub(super) fn offset(v: Option<u64>) -> AppResult<u64> {
    match v.unwrap_or(0) {
        o if o <= MAX_OFFSET => Ok(o),
        o => Err(AppError::bad_request(format!(
            "offset must be 0..={MAX_OFFSET}, got {o}"
        ))),
    }
}

/// Every board and its configuration.
#[utoipa::path(responses((status = 200, body = BoardList)), tag = "public")]
#[get("/v1/boards")]
pub async fn boards(st: web::Data<AppState>, _limit: ReadLimit) -> AppResult<HttpResponse> {
    let boards = st
        .store
        .boards()
        .await?
        .into_iter()
        .map(|(id, config)| PublicBoard {
            id: id.into_string(),
            config,
        })
        .collect();
    Ok(ok(&BoardList { boards }))
}

/// The top of a board.
#[utoipa::path(params(("board" = String, Path), TopQuery), responses((status = 200, body = TopResponse), (status = 404)), tag = "public")]
#[get("/v1/boards/{board}/top")]
pub async fn top(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<String>,
    q: web::Query<TopQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let n = in_range("limit", q.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let offset = offset(q.offset)?;
    let player = q.player.as_deref().map(AppState::id).transpose()?;
    let scope = match (q.bucket, &player) {
        (Some(_), Some(_)) => {
            return Err(AppError::bad_request("name a bucket or a player, not both"))
        }
        (Some(0), None) => return Err(AppError::bad_request("buckets are numbered from 1")),
        (Some(b), None) => Scope::Bucket(b),
        (None, Some(p)) => Scope::Of(p),
        (None, None) => Scope::Own,
    };
    let (page, bucket, buckets) = st
        .store
        .read_counted(
            &board,
            season(&q.season)?.as_ref(),
            scope,
            Read::Top { offset, limit: n },
        )
        .await?;
    Ok(ok(&TopResponse {
        board: board.into_string(),
        season: page.season,
        total: page.total,
        bucket: (bucket > 0).then_some(bucket),
        buckets: (bucket > 0).then_some(buckets),
        entries: page.entries,
    }))
}

/// One player's score, rank and percentile.
#[utoipa::path(params(("board" = String, Path), ("player" = String, Path), SeasonQuery), responses((status = 200, body = PlayerResponse), (status = 404)), tag = "public")]
#[get("/v1/boards/{board}/players/{player}")]
pub async fn player_get(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<(String, String)>,
    q: web::Query<SeasonQuery>,
) -> AppResult<HttpResponse> {
    let (board, player) = (AppState::id(&path.0)?, AppState::id(&path.1)?);
    let (
        Page {
            season,
            total,
            entries,
            ..
        },
        bucket,
    ) = st
        .store
        .read_in(
            &board,
            season(&q.season)?.as_ref(),
            Scope::Own,
            Read::Player(&player),
        )
        .await?;
    let e = entries.into_iter().next().ok_or_else(|| {
        AppError::new(
            ErrorCode::NotFound,
            format!("{player} has no score on {board} in season {season}"),
        )
    })?;
    let percentile = ((total - e.rank + 1) as f64 / total as f64 * 1000.0).round() / 10.0;
    Ok(ok(&PlayerResponse {
        board: board.into_string(),
        season,
        player: e.player,
        score: e.score,
        rank: e.rank,
        percentile,
        bucket: (bucket > 0).then_some(bucket),
        name: e.name,
        reached_ms: e.reached_ms,
    }))
}

/// The players around one (2·radius+1 rows when the board has them).
#[utoipa::path(params(("board" = String, Path), ("player" = String, Path), AroundQuery), responses((status = 200, body = EntriesResponse), (status = 404)), tag = "public")]
#[get("/v1/boards/{board}/players/{player}/around")]
pub async fn around(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<(String, String)>,
    q: web::Query<AroundQuery>,
) -> AppResult<HttpResponse> {
    let (board, player) = (AppState::id(&path.0)?, AppState::id(&path.1)?);
    let radius = in_range("radius", q.radius, DEFAULT_RADIUS, MAX_RADIUS)?;
    let (page, bucket) = st
        .store
        .read_in(
            &board,
            season(&q.season)?.as_ref(),
            Scope::Own,
            Read::Around {
                player: &player,
                radius,
            },
        )
        .await?;
    Ok(ok(&EntriesResponse {
        board: board.into_string(),
        season: page.season,
        bucket: (bucket > 0).then_some(bucket),
        entries: page.entries,
    }))
}

/// A given list of players (friends); absent ids are left out.
#[utoipa::path(params(("board" = String, Path), PlayersQuery), responses((status = 200, body = EntriesResponse), (status = 404)), tag = "public")]
#[get("/v1/boards/{board}/players")]
pub async fn players(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<String>,
    q: web::Query<PlayersQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let ids = q
        .ids
        .split(',')
        .filter(|s| !s.is_empty())
        .map(AppState::id)
        .collect::<AppResult<Vec<_>>>()?;
    if ids.len() > MAX_LIMIT as usize {
        return Err(AppError::bad_request(format!("at most {MAX_LIMIT} ids")));
    }
    let page = st
        .store
        .read(&board, season(&q.season)?.as_ref(), Read::Players(&ids))
        .await?;
    Ok(ok(&EntriesResponse {
        board: board.into_string(),
        season: page.season,
        bucket: None,
        entries: page.entries,
    }))
}

/// The board's seasons, the current one flagged.
#[utoipa::path(params(("board" = String, Path)), responses((status = 200, body = SeasonList), (status = 404)), tag = "public")]
#[get("/v1/boards/{board}/seasons")]
pub async fn seasons(
    st: web::Data<AppState>,
    _limit: ReadLimit,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let seasons = st.store.seasons(&board).await?;
    Ok(ok(&SeasonList { seasons }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuestRequest {
    pub name: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct GuestResponse {
    pub player: String,
    pub token: String,
}

/// Dev profile only: a player token for `guest-<name>`.
#[utoipa::path(request_body = GuestRequest, responses((status = 200, body = GuestResponse), (status = 404)), tag = "public")]
#[post("/v1/guest")]
pub async fn guest(st: web::Data<AppState>, body: Object<GuestRequest>) -> AppResult<HttpResponse> {
    if !st.settings.dev {
        return Err(AppError::new(
            ErrorCode::NotFound,
            "guest login is only available with --dev",
        ));
    }
    if body.name.is_empty() {
        // `guest-` alone would be one player shared by every nameless guest.
        return Err(AppError::new(
            ErrorCode::InvalidId,
            "a guest needs a name: 1 or more id characters",
        ));
    }
    let player = AppState::id(&format!("guest-{}", body.name))?;
    let ttl = (24 * 3600).min(st.tokens.max_lifetime_s());
    let token = st.tokens.issue(&player, Some(&body.name), ttl);
    Ok(HttpResponse::Ok().json(GuestResponse {
        player: player.into_string(),
        token,
    }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(boards)
        .service(top)
        .service(players)
        .service(around)
        .service(player_get)
        .service(seasons)
        .service(guest);
}
