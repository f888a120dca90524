//! CORS for the SDK (`/sdk`, `/pkg`) and the public API (`/v1`), governed by `allowed_origins`:
//! preflights answered, allowed origins echoed, everything else left without CORS headers.

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_tests::ws::WsClient;
use scorecast_tests::*;
use serde_json::json;

const GAME: &str = "http://game.example:8000";
const EVIL: &str = "http://evil.example";

fn acao(r: &Resp) -> Option<&str> {
    r.headers
        .get("access-control-allow-origin")
        .and_then(|v| v.to_str().ok())
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> Resp {
    app.request_from(
        [127, 0, 0, 1],
        Method::OPTIONS,
        path,
        &[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type"),
        ],
    )
    .await
}

/// A listed origin gets its preflight answered (200, not 405) and `Access-Control-Allow-Origin`
/// on the SDK, the wasm glue and `/v1` (errors included); an unlisted origin's preflight is
/// refused and its requests carry no CORS header (the browser withholds them); `/admin` never
/// answers CORS, even to a listed origin.
#[tokio::test]
async fn cors_follows_the_allowed_origins() {
    let app = spawn_app_with(|s| s.allowed_origins = vec![GAME.into()], Clock::Redis).await;
    app.board("b", json!({})).await;

    let ok = preflight(&app, "/v1/guest", GAME).await;
    assert_eq!(ok.status, 200, "{:?}", ok.headers);
    assert_eq!(acao(&ok), Some(GAME));
    let methods = ok.headers["access-control-allow-methods"].to_str().unwrap();
    assert!(methods.contains("POST"), "{methods}");
    assert!(ok.headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .contains("content-type"));

    let refused = preflight(&app, "/v1/guest", EVIL).await;
    assert_eq!(refused.status, 400, "an unlisted origin's preflight");
    assert_eq!(
        refused.code(),
        "bad_request",
        "the JSON error body: {:?}",
        refused.body
    );
    assert_eq!(acao(&refused), None);

    for path in ["/sdk/scorecast.js", "/pkg/scorecast.js", "/v1/boards"] {
        let r = app
            .request_from([127, 0, 0, 1], Method::GET, path, &[("origin", GAME)])
            .await;
        assert_eq!(acao(&r), Some(GAME), "{path}: {:?}", r.headers);
        assert!(
            r.headers["vary"].to_str().unwrap().contains("Origin"),
            "{path}: caches keep answers per origin"
        );
        let other = app
            .request_from([127, 0, 0, 1], Method::GET, path, &[("origin", EVIL)])
            .await;
        assert_eq!(acao(&other), None, "{path} for an unlisted origin");
    }
    let sdk = app
        .request_from(
            [127, 0, 0, 1],
            Method::GET,
            "/sdk/scorecast.js",
            &[("origin", GAME)],
        )
        .await;
    assert_eq!(sdk.status, 200);

    // Errors too: a 404 from /v1 is readable by the listed origin.
    let missing = app
        .request_from(
            [127, 0, 0, 2],
            Method::GET,
            "/v1/boards/nope/top",
            &[("origin", GAME)],
        )
        .await;
    assert_eq!(
        (missing.status.as_u16(), missing.code()),
        (404, "unknown_board")
    );
    assert_eq!(acao(&missing), Some(GAME));

    // /admin: no CORS for anyone.
    assert_eq!(preflight(&app, "/admin/boards/b", GAME).await.status, 400);
    let admin = app
        .http
        .get(app.url("/admin/bans"))
        .bearer_auth(ADMIN_TOKEN)
        .header("origin", GAME)
        .send()
        .await
        .unwrap();
    assert_eq!(admin.status(), 200);
    assert!(!admin.headers().contains_key("access-control-allow-origin"));
}

/// `*` in the list admits any origin (echoed, never a literal `*`); the dev profile fills an
/// empty list with `*`, but a list configured with `--dev` still governs, WebSockets included.
#[tokio::test]
async fn a_star_admits_any_origin_and_dev_keeps_a_configured_list() {
    let any = spawn_app_with(|s| s.allowed_origins = vec!["*".into()], Clock::Redis).await;
    let r = any
        .request_from(
            [127, 0, 0, 1],
            Method::GET,
            "/v1/boards",
            &[("origin", EVIL)],
        )
        .await;
    assert_eq!(acao(&r), Some(EVIL));

    let dev = spawn_app_with(|s| s.dev = true, Clock::Redis).await;
    assert_eq!(preflight(&dev, "/v1/guest", EVIL).await.status, 200);

    let listed = spawn_app_with(
        |s| {
            s.dev = true;
            s.allowed_origins = vec![GAME.into()];
        },
        Clock::Redis,
    )
    .await;
    assert_eq!(preflight(&listed, "/v1/guest", EVIL).await.status, 400);
    assert_eq!(preflight(&listed, "/v1/guest", GAME).await.status, 200);
    let url = listed.ws_url();
    assert!(WsClient::try_connect(&url, Some(EVIL)).await.is_err());
    let mut ok = WsClient::try_connect(&url, Some(GAME)).await.unwrap();
    assert_eq!(ok.next_json().await["type"], "welcome");
}

/// A page on another allowed origin may use the runs endpoints as the browser sends them: the
/// preflight of `POST /v1/boards/{b}/runs` and `.../runs/{run}/proof` with `Authorization` and
/// `Content-Type: application/octet-stream` (not a CORS-safelisted type) is answered with both
/// headers allowed, and the requests themselves carry `Access-Control-Allow-Origin`.
#[tokio::test]
async fn the_runs_endpoints_admit_an_allowed_origins_preflight() {
    let app = spawn_app_with(|s| s.allowed_origins = vec![GAME.into()], Clock::Redis).await;
    app.board("game-2048", json!({"op": "best", "validator": "2048"}))
        .await;
    let token = app.token("alice", None);
    let post = |path: String, body: Vec<u8>| {
        let req = app
            .http
            .post(app.url(&path))
            .bearer_auth(&token)
            .header("origin", GAME)
            .header("content-type", "application/octet-stream")
            .body(body);
        async move { Resp::read(req.send().await.unwrap()).await }
    };

    let run = post("/v1/boards/game-2048/runs".into(), vec![]).await;
    assert_eq!(run.status, 200, "{:?}", run.body);
    assert_eq!(acao(&run), Some(GAME));
    let run_id = run.body["run"].as_str().unwrap().to_owned();
    let proof_path = format!("/v1/boards/game-2048/runs/{run_id}/proof");

    for path in ["/v1/boards/game-2048/runs".to_owned(), proof_path.clone()] {
        for origin in [GAME, EVIL] {
            let r = app
                .request_from(
                    [127, 0, 0, 1],
                    Method::OPTIONS,
                    &path,
                    &[
                        ("origin", origin),
                        ("access-control-request-method", "POST"),
                        (
                            "access-control-request-headers",
                            "authorization,content-type",
                        ),
                    ],
                )
                .await;
            if origin == EVIL {
                assert_eq!((r.status.as_u16(), acao(&r)), (400, None), "{path}");
                continue;
            }
            assert_eq!((r.status.as_u16(), acao(&r)), (200, Some(GAME)), "{path}");
            let allowed = |h: &str| {
                r.headers[h]
                    .to_str()
                    .unwrap()
                    .to_ascii_lowercase()
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .collect::<Vec<_>>()
            };
            let headers = allowed("access-control-allow-headers");
            for h in ["authorization", "content-type"] {
                assert!(headers.iter().any(|x| x == h), "{path}: {headers:?}");
            }
            assert!(
                allowed("access-control-allow-methods").contains(&"post".to_owned()),
                "{path}"
            );
        }
    }

    // The proof itself: one legal move (within the 10 a run may start with), scored.
    let (moves, score) = crate::validators::play_2048(run.body["seed"].as_u64().unwrap() as u32, 1);
    let answer = post(proof_path, moves).await;
    assert_eq!(
        (answer.status.as_u16(), &answer.body["score"]),
        (200, &json!(score)),
        "{:?}",
        answer.body
    );
    assert_eq!(acao(&answer), Some(GAME));
}
