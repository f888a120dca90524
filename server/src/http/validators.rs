//! `/admin/validators`: upload, read, list and delete score validators (`docs/validators.md`);
//! `POST /v1/boards/{board}/runs`: a player starts a run on a verified board.
//! A module is checked and compiled before it is stored, so a stored validator always compiles;
//! the built-in `2048` cannot be replaced or deleted.

use std::sync::Arc;

use actix_web::{delete, get, post, put, web, HttpResponse};
use futures_util::StreamExt;
use scorecast_shared::ErrorCode;
use serde::Serialize;

use super::extract::{Admin, PlayerAuth, Reader};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::validators::registry::{digest, BUILTIN_NAME};
use crate::validators::BUILTIN_2048;

/// The largest module accepted (the built-in one is 7 KB).
pub const MAX_MODULE_BYTES: usize = 4 << 20;

#[derive(Serialize, utoipa::ToSchema)]
pub struct ValidatorInfo {
    pub name: String,
    /// Size of the module in bytes.
    pub bytes: usize,
    /// SHA-256 of the module, hex.
    pub sha256: String,
    /// The built-in validator (cannot be replaced or deleted).
    pub builtin: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ValidatorPut {
    #[serde(flatten)]
    pub info: ValidatorInfo,
    /// Whether a validator of that name was replaced.
    pub replaced: bool,
}

fn info(name: &str, module: &[u8]) -> ValidatorInfo {
    ValidatorInfo {
        name: name.to_owned(),
        bytes: module.len(),
        sha256: hex::encode(digest(module)),
        builtin: name == BUILTIN_NAME,
    }
}

fn builtin_is_fixed() -> AppError {
    AppError::new(
        ErrorCode::Conflict,
        "the built-in validator 2048 cannot be replaced or deleted",
    )
}

/// The request body, refused past `limit` bytes without reading further.
async fn read_body(mut body: web::Payload, limit: usize, what: &str) -> AppResult<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| AppError::bad_request(format!("reading the body: {e}")))?;
        if out.len() + chunk.len() > limit {
            return Err(AppError::new(
                ErrorCode::PayloadTooLarge,
                format!("{what} may be at most {limit} bytes"),
            ));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Checks, compiles and stores a validator module (the body: the module's bytes). Refused with
/// `bad_request` naming the check that failed (`invalid_module`, `forbidden_import`,
/// `wrong_exports`, `memory_limit`), and nothing is stored.
#[utoipa::path(params(("name" = String, Path)), request_body(content = Vec<u8>, content_type = "application/wasm"), responses((status = 200, body = ValidatorPut), (status = 400), (status = 409), (status = 413, description = "`payload_too_large`: a module above 4194304 bytes (4 MiB)")), tag = "admin", security(("admin" = [])))]
#[put("/admin/validators/{name}")]
pub async fn put_validator(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Payload,
) -> AppResult<HttpResponse> {
    let name = AppState::id(&path)?;
    if name.as_str() == BUILTIN_NAME {
        return Err(builtin_is_fixed());
    }
    let module: Arc<[u8]> = read_body(body, MAX_MODULE_BYTES, "a validator module")
        .await?
        .into();
    st.validators
        .compile(Arc::clone(&module))
        .await
        .map_err(|e| {
            AppError::bad_request(format!("{}: the module is not a validator: {e}", e.code()))
        })?;
    let replaced = st
        .store
        .put_validator(&name, &module, &hex::encode(digest(&module)))
        .await?;
    Ok(HttpResponse::Ok().json(ValidatorPut {
        info: info(name.as_str(), &module),
        replaced,
    }))
}

/// The module's bytes (`application/wasm`).
#[utoipa::path(params(("name" = String, Path)), responses((status = 200, content_type = "application/wasm"), (status = 404)), tag = "admin", security(("admin" = [])))]
#[get("/admin/validators/{name}")]
pub async fn get_validator(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let name = AppState::id(&path)?;
    let module = if name.as_str() == BUILTIN_NAME {
        BUILTIN_2048.to_vec()
    } else {
        st.store
            .validator(&name)
            .await?
            .ok_or_else(|| AppError::new(ErrorCode::NotFound, format!("no validator {name}")))?
    };
    Ok(HttpResponse::Ok()
        .content_type("application/wasm")
        .body(module))
}

/// Deletes a validator; refused (`conflict`) while a board names it.
#[utoipa::path(params(("name" = String, Path)), responses((status = 204), (status = 404), (status = 409)), tag = "admin", security(("admin" = [])))]
#[delete("/admin/validators/{name}")]
pub async fn delete_validator(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let name = AppState::id(&path)?;
    if name.as_str() == BUILTIN_NAME {
        return Err(builtin_is_fixed());
    }
    let users: Vec<String> = st
        .store
        .boards()
        .await?
        .into_iter()
        .filter(|(_, cfg)| cfg.validator.as_deref() == Some(name.as_str()))
        .map(|(board, _)| board.into_string())
        .collect();
    if !users.is_empty() {
        return Err(AppError::new(
            ErrorCode::Conflict,
            format!(
                "boards {} name validator {name}; change their validator first",
                users.join(", ")
            ),
        ));
    }
    if !st.store.delete_validator(&name).await? {
        return Err(AppError::new(
            ErrorCode::NotFound,
            format!("no validator {name}"),
        ));
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Every validator: the built-in one first, then the stored ones by name.
#[utoipa::path(responses((status = 200, body = Vec<ValidatorInfo>)), tag = "admin", security(("admin" = [])))]
#[get("/admin/validators")]
pub async fn list_validators(_: Reader, st: web::Data<AppState>) -> AppResult<HttpResponse> {
    let mut out = vec![info(BUILTIN_NAME, BUILTIN_2048)];
    for name in st.store.validator_names().await? {
        let id = AppState::id(&name)?;
        // A validator deleted between the two reads is left out.
        if let Some(module) = st.store.validator(&id).await? {
            out.push(info(&name, &module));
        }
    }
    Ok(HttpResponse::Ok().json(out))
}

/// Starts a run of the token's player on a verified board (`docs/validators.md`, "Runs"): the
/// run id and the seed the game must be played from.
#[utoipa::path(params(("board" = String, Path)), responses((status = 200, body = crate::store::Run), (status = 400), (status = 401), (status = 404), (status = 409)), tag = "runs", security(("player" = [])))]
#[post("/v1/boards/{board}/runs")]
pub async fn start_run(
    PlayerAuth(player): PlayerAuth,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let board = AppState::id(&path)?;
    let v = &st.settings.validators;
    let run = st
        .store
        .start_run(&board, &player.id, v.run_ttl_ms, v.max_open_runs)
        .await?;
    Ok(HttpResponse::Ok().json(run))
}

/// A verified submission: the body is the run's proof so far (for `2048`, its move log); the
/// board's validator replays it and the score it computes is recorded through the submission
/// core, answered as a submission is.
#[utoipa::path(params(("board" = String, Path), ("run" = String, Path)), request_body(content = Vec<u8>, content_type = "application/octet-stream"), responses((status = 200, body = crate::store::Accepted), (status = 400), (status = 401), (status = 403), (status = 404), (status = 409), (status = 429), (status = 413, description = "`payload_too_large`: a proof above `validators.proof_bytes` (65536 bytes by default)")), tag = "runs", security(("player" = [])))]
#[post("/v1/boards/{board}/runs/{run}/proof")]
pub async fn submit_proof(
    PlayerAuth(player): PlayerAuth,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Payload,
) -> AppResult<HttpResponse> {
    let (board, run) = (AppState::id(&path.0)?, AppState::id(&path.1)?);
    let limit = st.settings.validators.proof_bytes;
    let proof = read_body(body, limit, "a proof").await?;
    let accepted = st
        .submit_proof(&board, &player, &run, proof, crate::state::Transport::Http)
        .await?;
    Ok(HttpResponse::Ok().json(accepted))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(start_run)
        .service(submit_proof)
        .service(list_validators)
        .service(put_validator)
        .service(get_validator)
        .service(delete_validator);
}
