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
