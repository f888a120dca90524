//! The admin console (`/admin`, `web/admin.html`) and the reads it needs beyond the rest of
//! the admin API: every queue with its counts, a board's players found by id or name, and the
//! live counters of every instance.

use actix_web::{get, route, web, HttpResponse};
use scorecast_shared::{Entry, Id};
use serde::{Deserialize, Serialize};

use super::extract::Reader;
use crate::error::{AppError, AppResult};
use crate::queue::Counts;
use crate::state::AppState;
use crate::store::{InstanceCounters, Read};

/// Longest search text of [`find_players`] (characters).
pub const MAX_SEARCH_CHARS: usize = 64;

/// Matches after which [`find_players`] stops walking the names (a page may hold a few more).
pub const SEARCH_MATCHES: usize = 20;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct FindQuery {
    /// 1–64 characters: a player id (found exactly, on a board of any size) and/or a part of
    /// the display names and ids of players with a name (case-insensitive).
    pub q: String,
    /// `next_cursor` of the previous answer, to search further.
    pub cursor: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct FoundPlayers {
    pub board: String,
    /// The board's current season, whose rank and score each entry has.
    pub season: String,
    /// The player whose id is `q`, if any, then the players whose name or id contains `q`, by
    /// rank. Players with no score in the current season are left out.
    pub entries: Vec<Entry>,
    /// Players whose name matched but who have no score in the current season (held by a ban,
    /// removed, or only in past seasons), with that name.
    pub unscored: Vec<NamedPlayer>,
    /// Set when not every name was examined: pass it as `cursor` to search further.
    pub next_cursor: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct NamedPlayer {
    pub player: String,
    pub name: String,
}

/// A board's players found by id or name. The id lookup is exact (`ZSCORE`/`ZREVRANK`); the
/// name search walks the board's names with `HSCAN`, at most 5000 names per call (there is no
/// index of names), and answers `next_cursor` where it stopped.
#[utoipa::path(params(("board" = String, Path), FindQuery), responses((status = 200, body = FoundPlayers), (status = 400), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/boards/{board}/players")]
pub async fn find_players(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<FindQuery>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let text = q.q.trim();
    let chars = text.chars().count();
    if !(1..=MAX_SEARCH_CHARS).contains(&chars) {
        return Err(AppError::bad_request(format!(
            "q must be 1..={MAX_SEARCH_CHARS} characters, got {chars}"
        )));
    }
    let cursor =
        match q.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => c.parse::<u64>().ok().filter(|&c| c > 0).ok_or_else(|| {
                AppError::bad_request(format!("cursor {c:?} is not a search cursor"))
            })?,
        };
    // The board must exist even when nothing matches (the read below answers not_found too).
    st.store.board(&board).await?;
    let hits = st
        .store
        .find_names(&board, text, cursor, SEARCH_MATCHES)
        .await?;
    // The exact id first (only on the first call of a search), then the names found.
    let mut ids: Vec<Id> = Vec::new();
    if cursor == 0 {
        if let Ok(id) = Id::parse(text) {
            ids.push(id);
        }
    }
    for (p, _) in &hits.players {
        if !ids.contains(p) {
            ids.push(p.clone());
        }
    }
    let found = st.store.read(&board, None, Read::Players(&ids)).await?;
    let mut entries = found.entries;
    if let Some(pos) = entries.iter().position(|e| e.player == text) {
        let exact = entries.remove(pos);
        entries.insert(0, exact);
    }
    let unscored = hits
        .players
        .into_iter()
        .filter(|(p, _)| !entries.iter().any(|e| e.player == p.as_str()))
        .map(|(p, name)| NamedPlayer {
            player: p.into_string(),
            name,
        })
        .collect();
    Ok(HttpResponse::Ok().json(FoundPlayers {
        board: board.into_string(),
        season: found.season,
        entries,
        unscored,
        next_cursor: hits.next_cursor.map(|c| c.to_string()),
    }))
}

/// The console page. Public like the other pages: it asks for the admin token and keeps it in
/// `sessionStorage`; every call it makes carries the token.
#[route("/admin", method = "GET", method = "HEAD")]
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

#[derive(Serialize, utoipa::ToSchema)]
pub struct Stats {
    /// Redis's clock at the read (ms since the epoch).
    pub now_ms: i64,
    /// Every instance that wrote its counters in the last 5 s (each writes every second), by id.
    pub instances: Vec<InstanceCounters>,
}

/// Every running instance's live counters (submissions by outcome since it started, open
/// WebSocket sessions), as each wrote them to Redis in the last 5 s: the console charts their
/// sum, whichever instance it talks to.
#[utoipa::path(responses((status = 200, body = Stats)), tag = "admin", security(("admin" = [])))]
#[get("/admin/stats")]
pub async fn stats(_: Reader, st: web::Data<AppState>) -> AppResult<HttpResponse> {
    let (now_ms, instances) = st.store.stats().await?;
    Ok(HttpResponse::Ok().json(Stats { now_ms, instances }))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(page)
        .service(queues)
        .service(find_players)
        .service(stats);
}
