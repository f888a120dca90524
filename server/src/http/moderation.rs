//! Moderation endpoints (`docs/protocol.md`, "Moderation"): bans, a board's summary, deleting a
//! board. Admin token, like the rest of `/admin`.

use actix_web::{delete, get, put, web, HttpResponse};
use scorecast_shared::{BoardConfig, ErrorCode};
use serde::{Deserialize, Serialize};

use super::extract::{Admin, Object, Reader};
use crate::error::{AppError, AppResult};
use crate::queue::MAX_SCHEDULE_AHEAD_MS;
use crate::state::AppState;
use crate::store::{Ban, Layer, Lift, Read, Scope};

/// The longest ban reason, in characters.
pub const MAX_REASON: usize = 200;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BanBody {
    /// The board; absent = every board (those that exist and those created later).
    pub board: Option<String>,
    pub reason: Option<String>,
    /// When the ban lifts itself (ms since the epoch, in the future); absent = until lifted.
    pub until_ms: Option<i64>,
}

/// The one check of a ban's `until_ms`, made before anything is written: in the future and at
/// most [`MAX_SCHEDULE_AHEAD_MS`] (366 days) ahead, the furthest a `ban.lift` job can be
/// scheduled.
pub fn check_until(until_ms: i64, now_ms: i64) -> AppResult<()> {
    if until_ms <= now_ms {
        return Err(AppError::bad_request(format!(
            "until_ms must be in the future (now is {now_ms})"
        )));
    }
    if until_ms > now_ms.saturating_add(MAX_SCHEDULE_AHEAD_MS) {
        return Err(AppError::bad_request(format!(
            "until_ms may be at most {MAX_SCHEDULE_AHEAD_MS} ms (366 days) from now (now is {now_ms})"
        )));
    }
    Ok(())
}

/// Bans a player: their submissions are rejected `forbidden` (a retried submission id
/// included) and their entries are hidden from reads and views until the ban is lifted or
/// expires, when they come back. Banning again replaces the ban. Audited in the board's log.
#[utoipa::path(params(("player" = String, Path)), request_body = BanBody, responses((status = 200, body = Ban), (status = 400), (status = 404)), tag = "admin", security(("admin" = [])))]
#[put("/admin/bans/{player}")]
pub async fn put_ban(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<BanBody>,
) -> AppResult<HttpResponse> {
    let player = AppState::id(&path)?;
    let board = body.board.as_deref().map(AppState::id).transpose()?;
    let now = st.store.clock().now_ms();
    if let Some(until) = body.until_ms {
        check_until(until, now)?;
    }
    if let Some(r) = &body.reason {
        if r.chars().count() > MAX_REASON {
            return Err(AppError::bad_request(format!(
                "reason above {MAX_REASON} characters"
            )));
        }
    }
    let ban = Ban {
        player: player.to_string(),
        board: board.as_ref().map(ToString::to_string),
        reason: body.reason.clone(),
        until_ms: body.until_ms,
        at_ms: now,
        by: Some(key.0 .0),
    };
    // Every check is above and the board must exist: a refused ban writes nothing. The lift
    // job comes first, so a ban is never left without it (a job whose ban never came, or was
    // replaced, finds nothing to lift and does nothing).
    if let Some(b) = &board {
        st.store.board(b).await?;
    }
    crate::jobs::schedule_ban_lift(&st, &ban).await?;
    match &board {
        Some(b) => {
            st.store.ban_on(b, &ban).await?;
        }
        None => st.store.ban_everywhere(&ban).await?,
    }
    tracing::info!(%player, board = ?ban.board, until_ms = ?ban.until_ms, key = ?ban.by, "banned");
    Ok(HttpResponse::Ok().json(ban))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct LiftQuery {
    /// Lift this board's own ban only (a ban on every board stays); absent = every ban of the
    /// player.
    pub board: Option<String>,
}

/// Lifts a player's ban (`?board=` one board's; otherwise every ban of the player): their held
/// entries come back. 404 `not_found` if there was none.
#[utoipa::path(params(("player" = String, Path), LiftQuery), responses((status = 204), (status = 404)), tag = "admin", security(("admin" = [])))]
#[delete("/admin/bans/{player}")]
pub async fn delete_ban(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<LiftQuery>,
) -> AppResult<HttpResponse> {
    let player = AppState::id(&path)?;
    let lift = Lift::Lifted {
        by: key.0.to_string(),
    };
    let lifted = match q.board.as_deref().map(AppState::id).transpose()? {
        Some(b) => st.store.unban_on(&b, &player, Layer::Board, lift).await?,
        None => st.store.unban_everywhere(&player, lift).await?,
    };
    if !lifted {
        // A ban on every board is lifted as a whole, not board by board.
        let everywhere = q.board.is_some()
            && st
                .store
                .global_bans()
                .await?
                .iter()
                .any(|b| b.player == player.as_str());
        let message = if everywhere {
            format!("{player} has no ban of this board's own; their ban on every board is lifted without ?board=")
        } else {
            format!("{player} is not banned there")
        };
        return Err(AppError::new(ErrorCode::NotFound, message));
    }
    tracing::info!(%player, board = ?q.board, key = %key.0, "ban lifted");
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BanList {
    pub bans: Vec<Ban>,
}

/// Every ban: those on every board (`board: null`), then each board's own.
#[utoipa::path(responses((status = 200, body = BanList)), tag = "admin", security(("admin" = [])))]
#[get("/admin/bans")]
pub async fn list_bans(_: Reader, st: web::Data<AppState>) -> AppResult<HttpResponse> {
    Ok(HttpResponse::Ok().json(BanList {
        bans: st.store.bans().await?,
    }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BoardInfo {
    pub id: String,
    #[serde(flatten)]
    pub config: BoardConfig,
    /// The current season.
    pub season: String,
    /// Players on the current season (banned players' entries are held, not counted).
    pub size: u64,
    /// The board's change counter.
    pub seq: u64,
    /// Seasons the board keeps.
    pub seasons: usize,
}

/// A board's config and size.
#[utoipa::path(params(("board" = String, Path)), responses((status = 200, body = BoardInfo), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}")]
pub async fn get_board(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let config = st.store.board(&board).await?;
    let head = Read::Top {
        offset: 0,
        limit: 0,
    };
    // The whole board, bucketed or not.
    let (page, _) = st.store.read_in(&board, None, Scope::Board, head).await?;
    let seasons = st.store.seasons(&board).await?.len();
    Ok(HttpResponse::Ok().json(BoardInfo {
        id: board.into_string(),
        config,
        season: page.season,
        size: page.total,
        seq: page.seq,
        seasons,
    }))
}

/// Deletes a board and every key of it (scores, seasons, names, log, limiter state, dedup
/// records, bans); its reads are then 404. Jobs already scheduled for it find no board and do
/// nothing. A league's tier board is refused `conflict`.
#[utoipa::path(params(("board" = String, Path)), responses((status = 204), (status = 404), (status = 409)), tag = "admin", security(("admin" = [])))]
#[delete("/admin/boards/{board}")]
pub async fn delete_board(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let keys = st.store.delete_board(&board).await?;
    tracing::info!(%board, keys, key = %key.0, "board deleted");
    st.store
        .audit(
            key.0.as_str(),
            "board_delete",
            &[("board", board.as_str()), ("keys", &keys.to_string())],
        )
        .await;
    Ok(HttpResponse::NoContent().finish())
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(put_ban)
        .service(delete_ban)
        .service(list_bans)
        .service(get_board)
        .service(delete_board);
}
