//! The security headers of every answer, from outside (the browser test in
//! `tests/browser/headers.test.mjs` proves the pages still work under them and cannot be framed).

use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_server::http::{OTHER_CSP, PAGE_CSP};
use scorecast_tests::spawn_app_with;
use serde_json::json;

/// Every HTML page carries the page policy and every other answer (JSON, an error, the SDK's
/// script and WebAssembly, a missing file) the closed one; all carry X-Frame-Options DENY,
/// nosniff and the referrer policy. Static files keep their real types, which nosniff needs.
#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(1_741_608_000_000)).await;
    app.board("h", json!({})).await;
    let cases = [
        ("/", 200, "text/html", PAGE_CSP),
        ("/play", 200, "text/html", PAGE_CSP),
        ("/admin", 200, "text/html", PAGE_CSP),
        ("/index.html", 200, "text/html", PAGE_CSP),
        ("/play.html", 200, "text/html", PAGE_CSP),
        ("/admin.html", 200, "text/html", PAGE_CSP),
        ("/queues.html", 200, "text/html", PAGE_CSP),
        ("/v1/boards/h/top", 200, "application/json", OTHER_CSP),
        ("/v1/boards/nope/top", 404, "application/json", OTHER_CSP),
        ("/admin/queues", 401, "application/json", OTHER_CSP),
        ("/sdk/scorecast.js", 200, "text/javascript", OTHER_CSP),
        ("/pkg/scorecast_bg.wasm", 200, "application/wasm", OTHER_CSP),
        ("/app/style.css", 200, "text/css", OTHER_CSP),
        ("/healthz", 200, "", OTHER_CSP),
    ];
    for (path, status, kind, csp) in cases {
        let res = app.http.get(app.url(path)).send().await.expect(path);
        let h = res.headers();
        let get = |n: &str| {
            h.get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        assert_eq!(res.status().as_u16(), status, "{path}");
        let content_type = get("content-type");
        assert!(
            content_type.starts_with(kind)
                || (kind == "text/javascript"
                    && content_type.starts_with("application/javascript")),
            "{path}: {content_type}"
        );
        assert_eq!(get("content-security-policy"), csp, "{path}");
        assert_eq!(get("x-frame-options"), "DENY", "{path}");
        assert_eq!(get("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(get("referrer-policy"), "no-referrer", "{path}");
    }
}

/// A refusal made outside Scorecast's handlers is the JSON error body all the same: a path
/// nothing serves (404 `not_found`, a missing file included), a method a path does not take
/// (405, `bad_request`), also to a client that accepts gzip; a HEAD of a missing path gets the
/// status and no body, a HEAD of a page 200 and no body. Nothing changes.
#[tokio::test]
async fn refusals_outside_the_handlers_are_json_errors() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(1_741_608_000_000)).await;
    app.board("h", json!({})).await;
    let before = app.dump().await;
    let cases = [
        (reqwest::Method::GET, "/v1/nope", 404, "not_found"),
        (reqwest::Method::GET, "/no-such-file.js", 404, "not_found"),
        (reqwest::Method::DELETE, "/v1/boards", 405, "bad_request"),
        (
            reqwest::Method::PATCH,
            "/admin/boards/h",
            405,
            "bad_request",
        ),
        (reqwest::Method::PUT, "/v1/boards/h/top", 405, "bad_request"),
    ];
    for (method, path, status, code) in cases {
        let res = app
            .http
            .request(method.clone(), app.url(path))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .expect(path);
        assert_eq!(res.status().as_u16(), status, "{method} {path}");
        // The JSON body replaces the one the compression middleware encoded: it is sent as
        // it is, not under the encoded body's Content-Encoding.
        assert_eq!(
            res.headers().get("content-encoding"),
            None,
            "{method} {path}"
        );
        assert_eq!(res.headers()["x-content-type-options"], "nosniff", "{path}");
        let body: serde_json::Value = res.json().await.expect("a JSON body");
        assert_eq!(body["error"]["code"], code, "{method} {path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    let head = app.http.head(app.url("/v1/nope")).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 404);
    assert!(head.bytes().await.unwrap().is_empty());
    // The pages answer HEAD as GET, without the body (probes and link checkers use it).
    for page in ["/", "/play", "/admin", "/docs/", "/queues.html"] {
        let head = app.http.head(app.url(page)).send().await.unwrap();
        assert_eq!(head.status().as_u16(), 200, "HEAD {page}");
        assert!(
            head.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "HEAD {page}"
        );
        assert!(head.bytes().await.unwrap().is_empty(), "HEAD {page}");
    }
    assert_eq!(app.dump().await, before, "a refusal changed a key");
}
