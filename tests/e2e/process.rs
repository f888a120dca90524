//! The real `scorecast` binary as a child process: SIGTERM with submissions in flight, the
//! embedded Redis default, and secrets kept out of its output.

use std::collections::{HashMap, HashSet};

use redis::AsyncCommands;
use scorecast_tests::process::{logged, put_board, ServerProcess};
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::{
    hold_redis_busy, player_token, root, start_test_redis, temp_dir, TestRedis, ADMIN_TOKEN,
    TOKEN_SECRET,
};
use serde_json::{json, Value};

/// The program under test: `server/src/main.rs`, built by cargo for these tests.
fn bin() -> std::path::PathBuf {
    scorecast_tests::process::scorecast_bin(env!("CARGO_BIN_EXE_scorecast-e2e"))
}

/// Secrets and settings for a child server, as a deployment would pass them.
fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("SCORECAST_ADMIN_TOKEN", ADMIN_TOKEN),
        ("SCORECAST_TOKEN_SECRET", TOKEN_SECRET),
        ("RUST_LOG", "debug"),
    ]
}

/// SIGTERM while submissions are in flight (read by the server, waiting on a busy Redis): each
/// one is answered — `ack`, or `rejected` `unavailable` — before its socket closes with 1001,
/// every socket (a spectator's too) closes with 1001, the process exits 0, and what Redis holds
/// matches the answers: every ack applied, nothing applied that was not answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_submissions_in_flight_and_closes_with_1001() {
    const PLAYERS: usize = 3;
    const EACH: usize = 40; // below the session's in-flight bound, so all are read at once
    let redis = start_test_redis();
    let mut server =
        ServerProcess::start_on(&bin(), &temp_dir("sigterm"), &redis.url(), &[], &env());
    put_board(server.port, "b").await;
    let url = format!("ws://127.0.0.1:{}/ws", server.port);
    let mut spectator = WsClient::connect(&url).await;
    spectator.subscribe("b", "top", json!({})).await;
    let mut players = Vec::new();
    for p in 0..PLAYERS {
        let mut c = WsClient::connect(&url).await;
        let w = c.hello(&player_token(&format!("p{p}"), None)).await;
        assert_eq!(w["type"], "welcome", "{w}");
        players.push(c);
    }

    // Redis is busy for 2 s: submissions sent now are read and wait for it.
    let busy = hold_redis_busy(&redis.url(), 2_000).await;
    for (p, c) in players.iter_mut().enumerate() {
        for i in 0..EACH {
            c.send_json(
                json!({"type": "submit", "id": format!("p{p}-{i}"), "board": "b", "points": 1}),
            )
            .await;
        }
        // Frames are read in order: once the pong is back, every submission is in flight.
        c.send_json(json!({"type": "ping"})).await;
        c.recv_until(WAIT, |v| {
            assert!(
                v["type"] != "ack" && v["type"] != "rejected",
                "answered before SIGTERM: {v}"
            );
            v["type"] == "pong"
        })
        .await;
    }
    server.sigterm();

    let mut acked: HashMap<String, HashSet<String>> = HashMap::new();
    let mut unavailable: HashMap<String, HashSet<String>> = HashMap::new();
    for (p, c) in players.iter_mut().enumerate() {
        let mut answers: HashMap<String, Value> = HashMap::new();
        let code = loop {
            match c.next_within(WAIT).await {
                Some(Incoming::Json(v)) if v["type"] == "ack" || v["type"] == "rejected" => {
                    let id = v["id"].as_str().unwrap().to_owned();
                    assert!(
                        answers.insert(id, v.clone()).is_none(),
                        "answered twice: {v}"
                    );
                }
                Some(Incoming::Json(_)) => {}
                Some(Incoming::Closed(code)) => break code,
                None => panic!("p{p}: the socket was never closed"),
            }
        };
        assert_eq!(code, Some(1001), "p{p}");
        for i in 0..EACH {
            let id = format!("p{p}-{i}");
            let a = answers
                .get(&id)
                .unwrap_or_else(|| panic!("{id} was in flight and never answered"));
            assert!(
                a["type"] == "ack" || a["code"] == "unavailable",
                "{id}: {a}"
            );
            let set = if a["type"] == "ack" {
                &mut acked
            } else {
                &mut unavailable
            };
            set.entry(format!("p{p}")).or_default().insert(id);
        }
    }
    assert_eq!(spectator.expect_close(WAIT).await, Some(1001));
    let status = server
        .wait_exit()
        .expect("scorecast did not exit after SIGTERM");
    assert!(status.success(), "{status}");
    busy.await.unwrap();

    // Redis holds exactly what was acked.
    let mut c = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let log: redis::streams::StreamRangeReply = c.xrange_all("lb:{b}:log").await.unwrap();
    let mut logged: HashMap<String, HashSet<String>> = HashMap::new();
    // One stream entry per batch: the submissions (6 fields each: player and id first) and
    // their results (the season, then 7 fields each: 1 first if accepted), packed.
    let unpack = |e: &redis::streams::StreamId, k: &str| {
        let packed: Vec<u8> = e.get(k).unwrap();
        scorecast_server::reply::unpack(&packed).unwrap()
    };
    for e in &log.ids {
        let (subs, results) = (unpack(e, "subs"), unpack(e, "results"));
        for (s, r) in subs.chunks_exact(6).zip(results[1..].chunks_exact(7)) {
            if r[0] != redis::Value::Int(1) {
                continue;
            }
            let text = |v: &redis::Value| redis::from_redis_value::<String>(v.clone()).unwrap();
            logged.entry(text(&s[0])).or_default().insert(text(&s[1]));
        }
    }
    // Every ack was applied; anything else applied was answered `unavailable` (a reply that
    // timed out, applied later: the client's retry with the same id is a duplicate).
    for p in 0..PLAYERS {
        let player = format!("p{p}");
        let (log, ack) = (
            logged.remove(&player).unwrap_or_default(),
            acked.remove(&player).unwrap_or_default(),
        );
        assert!(
            ack.is_subset(&log),
            "{player}: acked but not applied: {:?}",
            ack.difference(&log)
        );
        let extra: HashSet<_> = log.difference(&ack).cloned().collect();
        let unavail = unavailable.remove(&player).unwrap_or_default();
        assert!(
            extra.is_subset(&unavail),
            "{player}: applied, never answered: {extra:?}"
        );
        let score: Option<i64> = c.zscore("lb:{b}:s:all", &player).await.unwrap();
        assert_eq!(score.unwrap_or(0), log.len() as i64, "{player}");
    }
    assert!(logged.is_empty(), "{logged:?}");
}

/// With no Redis URL, `scorecast` starts its own redis-server (data under `./data`, AOF on),
/// serves from it, and stops it when it exits — also when it is killed outright; a restart
/// finds the data again.
#[tokio::test]
async fn without_a_redis_url_an_embedded_redis_is_started_and_stopped() {
    let cwd = temp_dir("embedded");
    let web = root().join("web");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--web-dir",
        web.to_str().unwrap(),
    ];
    let mut server = ServerProcess::start(&bin(), &cwd, &args, &env());
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{}", server.port);
    assert_eq!(
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    put_board(server.port, "b").await;
    let r = http
        .post(format!("{base}/admin/boards/b/players/alice/score"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"points": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let redis_pid = children_named(server.pid(), "redis-server");
    assert_eq!(redis_pid.len(), 1, "one redis-server child: {redis_pid:?}");
    assert!(cwd.join("data").is_dir(), "data under ./data");

    server.sigterm();
    assert!(server.wait_exit().expect("exit after SIGTERM").success());
    assert!(
        !running(redis_pid[0]),
        "the embedded redis-server was stopped"
    );
    let aof = std::fs::read_dir(cwd.join("data"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("appendonly"));
    assert!(aof, "AOF on");

    let mut server = ServerProcess::start(&bin(), &cwd, &args, &env());
    assert_eq!(alice_score(server.port).await, 42, "found the data again");
    // Stopped as an operator would (dropping it would SIGKILL it and orphan its redis-server).
    let redis_pid = children_named(server.pid(), "redis-server");
    server.sigterm();
    assert!(server.wait_exit().expect("exit after SIGTERM").success());
    assert!(
        redis_pid.iter().all(|p| !running(*p)),
        "the restarted server's embedded redis-server was stopped"
    );

    // Killed outright (SIGKILL, the OOM killer), the server cannot stop its redis-server: the
    // child stops itself (SIGTERM on its parent's death), so no orphan keeps writing ./data
    // beside the next start's.
    let mut server = ServerProcess::start(&bin(), &cwd, &args, &env());
    let redis_pid = children_named(server.pid(), "redis-server");
    assert_eq!(redis_pid.len(), 1, "{redis_pid:?}");
    server.kill();
    scorecast_tests::eventually("the orphaned redis-server stops", || {
        let gone = !running(redis_pid[0]);
        async move { gone }
    })
    .await;
    let mut server = ServerProcess::start(&bin(), &cwd, &args, &env());
    assert_eq!(alice_score(server.port).await, 42, "the data survived");
    server.sigterm();
    assert!(server.wait_exit().expect("exit after SIGTERM").success());
}

/// alice's score on board `b` of the server on `port`.
async fn alice_score(port: u16) -> Value {
    let url = format!("http://127.0.0.1:{port}/v1/boards/b/players/alice");
    let body: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    body["score"].clone()
}

/// Whether process `pid` runs (exists and is not a zombie waiting to be reaped).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1.to_owned();
            after.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// The pids of `parent`'s children whose command is `name` (from /proc).
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            ppid == Some(parent) && stat.contains(&format!("({name}"))
        })
        .collect()
}

/// Secrets never appear in the output, at debug level, across start-up, requests with right
/// and wrong credentials, WebSocket traffic and shutdown — neither the admin token, nor the
/// token secret, nor the Redis password in the URL.
#[tokio::test]
async fn secrets_never_appear_in_the_logs() {
    const REDIS_PASSWORD: &str = "redis-password-6f1d2c3b4a";
    let redis = start_test_redis();
    let mut c = redis::Client::open(redis.direct_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(REDIS_PASSWORD)
        .query_async(&mut c)
        .await
        .unwrap();
    let url = format!("redis://:{REDIS_PASSWORD}@127.0.0.1:{}/", redis.port());
    let mut server = ServerProcess::start_on(&bin(), &temp_dir("secrets"), &url, &[], &env());
    put_board(server.port, "b").await;
    let http = reqwest::Client::new();
    let wrong = http
        .put(format!("http://127.0.0.1:{}/admin/boards/c", server.port))
        .bearer_auth(format!("{ADMIN_TOKEN}x"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let mut ws = WsClient::connect(&format!("ws://127.0.0.1:{}/ws", server.port)).await;
    let bad = ws.hello("not.a.token").await;
    assert_eq!(bad["code"], "unauthorized");
    let w = ws.hello(&player_token("alice", None)).await;
    assert_eq!(w["player"], "alice");
    assert_eq!(ws.submit("1", "b", 5).await["type"], "ack");
    server.sigterm();
    assert!(server.wait_exit().is_some());

    let out = server.output();
    assert!(
        out.contains("listening on"),
        "the output was captured: {out}"
    );
    for secret in [ADMIN_TOKEN, TOKEN_SECRET, REDIS_PASSWORD] {
        assert!(!out.contains(secret), "{secret} printed:\n{out}");
    }
}

/// A Redis Cluster that cannot be reached stops the start-up with a message naming the URL as
/// configured (`redis+cluster://`, every seed), its password hidden.
#[test]
fn an_unreachable_cluster_is_named_as_configured_without_its_password() {
    const PASSWORD: &str = "cluster-password-9e8d7c";
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis+cluster://:{PASSWORD}@127.0.0.1:{port},127.0.0.1:{port}");
    let web = root().join("web");
    let out = std::process::Command::new(bin())
        .args(["--listen", "127.0.0.1:0", "--redis-url", &url])
        .args(["--web-dir", web.to_str().unwrap()])
        .envs(env())
        .current_dir(temp_dir("unreachable-cluster"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "started without its Redis");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = format!("redis+cluster://***@127.0.0.1:{port},127.0.0.1:{port}");
    assert!(text.contains(&shown), "{shown} not named:\n{text}");
    assert!(!text.contains(PASSWORD), "the password printed:\n{text}");
}

/// Starts the binary on a fresh Redis with `extra` environment; returns it with its Redis.
fn start_with(tag: &str, extra: &[(&'static str, &'static str)]) -> (ServerProcess, TestRedis) {
    let redis = start_test_redis();
    let mut vars = env();
    vars.extend_from_slice(extra);
    let server = ServerProcess::start_on(&bin(), &temp_dir(tag), &redis.url(), &[], &vars);
    (server, redis)
}

/// At start-up the server says where its pages are, from the address it really bound (port 0
/// here): the live leaderboard `/`, the game `/play` and the console `/admin`, each of which
/// then answers 200.
#[tokio::test]
async fn start_up_prints_the_urls_of_the_pages() {
    let (server, _redis) = start_with("urls", &[]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let http = reqwest::Client::new();
    for page in ["/", "/play", "/admin"] {
        let url = format!("{base}{page}");
        let line = logged(&[&server], |l| l.trim_end().ends_with(&format!(" {url}"))).await;
        assert!(line.is_some(), "{url} is printed:\n{}", server.output());
        assert_eq!(http.get(&url).send().await.unwrap().status(), 200, "{url}");
    }
}

/// With `SCORECAST_LOG_FORMAT=json` every line the process writes — start-up, requests at debug
/// level, shutdown — is one JSON object with a timestamp, a level and a message; the start-up
/// event carries the pages' URLs as fields.
#[tokio::test]
async fn the_json_log_format_writes_one_json_object_per_line() {
    let (mut server, _redis) = start_with("json-log", &[("SCORECAST_LOG_FORMAT", "json")]);
    put_board(server.port, "b").await;
    let mut ws = WsClient::connect(&format!("ws://127.0.0.1:{}/ws", server.port)).await;
    ws.hello(&player_token("alice", None)).await;
    assert_eq!(ws.submit("1", "b", 5).await["type"], "ack");
    server.sigterm();
    assert!(server.wait_exit().is_some());

    let out = server.output();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() >= 3, "some log lines:\n{out}");
    let mut events = Vec::new();
    for line in &lines {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\nall:\n{out}"));
        assert!(
            v["timestamp"].is_string()
                && v["level"].is_string()
                && v["fields"]["message"].is_string(),
            "timestamp, level and message: {line}"
        );
        events.push(v);
    }
    let base = format!("http://127.0.0.1:{}", server.port);
    let start = events
        .iter()
        .find(|v| v["fields"]["admin"].is_string())
        .unwrap_or_else(|| panic!("the start-up event:\n{out}"));
    assert_eq!(start["fields"]["leaderboard"], format!("{base}/"));
    assert_eq!(start["fields"]["play"], format!("{base}/play"));
    assert_eq!(start["fields"]["admin"], format!("{base}/admin"));
}

/// One sample of a `/metrics` text (`name{labels}` exactly as exposed), 0 when absent.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Every WebSocket session's end is counted once, under its real cause, in a server of its own
/// (the counters are per process): 3 clients that reset their TCP connection and 3 that shut it
/// down without a close frame are counted as abrupt disconnects, not as 1002 protocol
/// errors (`abrupt`); 2 that close politely as `client_close`; 3 stalled readers of a busy `top 100` as
/// slow closes (1008) or, when the kernel dropped them first, `stalled` disconnects. All 11 in
/// all, none missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_websocket_end_is_counted_under_its_cause() {
    let redis = start_test_redis();
    let mut env = env();
    env.push(("SCORECAST_WS__SLOW_CLIENT_MS", "500"));
    env.push(("SCORECAST_WS__COALESCE_MS", "5"));
    let server =
        ServerProcess::start_on(&bin(), &temp_dir("close-causes"), &redis.url(), &[], &env);
    let port = server.port;
    let base = format!("http://127.0.0.1:{port}");
    let url = format!("ws://127.0.0.1:{port}/ws");
    let http = reqwest::Client::new();
    let score = |player: String, points: i64| {
        let req = http
            .post(format!("{base}/admin/boards/stall/players/{player}/score"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({ "points": points }));
        async move { assert_eq!(req.send().await.unwrap().status(), 200) }
    };
    put_board(port, "stall").await;
    for i in 0..100 {
        score(format!("filler-with-a-long-name-{i:03}"), 1000 + i).await;
    }
    let metrics = || async {
        http.get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };

    // Abrupt ends: a reset (SO_LINGER 0), and a TCP shutdown without a close frame.
    for _ in 0..3 {
        let c = WsClient::connect(&url).await;
        let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = c.ws.get_ref() else {
            panic!("plain TCP")
        };
        socket2::SockRef::from(tcp)
            .set_linger(Some(std::time::Duration::ZERO))
            .unwrap();
        drop(c);
    }
    for _ in 0..3 {
        let mut c = WsClient::connect(&url).await;
        let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = c.ws.get_mut() else {
            panic!("plain TCP")
        };
        tokio::io::AsyncWriteExt::shutdown(tcp).await.unwrap();
        // The server ends the session at the EOF; its side closing is all that comes back.
        assert!(!matches!(
            c.next_within(WAIT).await,
            Some(Incoming::Json(_))
        ));
    }
    for _ in 0..2 {
        let mut c = WsClient::connect(&url).await;
        futures_util::SinkExt::close(&mut c.ws).await.unwrap();
        assert!(matches!(
            c.next_within(WAIT).await,
            Some(Incoming::Closed(_)) | None
        ));
    }
    // Stalled readers: subscribe to the busy top, never read again, keep the top changing.
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let mut c = WsClient::connect_small_buffer(&url, port, 4096).await;
        assert_eq!(
            c.subscribe("stall", "top", json!({"limit": 100})).await["type"],
            "top"
        );
        stalled.push(c);
    }
    let deadline = std::time::Instant::now() + 4 * WAIT;
    let mut points = 10_000;
    loop {
        let text = metrics().await;
        if sample(&text, "scorecast_ws_connections") == 0.0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sessions still open:\n{text}"
        );
        for _ in 0..20 {
            points += 1;
            score("mover".into(), points).await;
        }
    }

    let text = metrics().await;
    let closes = |code: &str| {
        sample(
            &text,
            &format!("scorecast_ws_closes_total{{code=\"{code}\"}}"),
        )
    };
    let gone = |cause: &str| {
        sample(
            &text,
            &format!("scorecast_ws_disconnects_total{{cause=\"{cause}\"}}"),
        )
    };
    let counted: Vec<(&str, f64)> = vec![
        ("1002", closes("1002")),
        ("1008", closes("1008")),
        ("abrupt", gone("abrupt")),
        ("client_close", gone("client_close")),
        ("stalled", gone("stalled")),
    ];
    println!("session ends counted: {counted:?}");
    assert_eq!(
        closes("1002"),
        0.0,
        "abrupt ends counted as protocol errors: {counted:?}"
    );
    assert_eq!(gone("abrupt"), 6.0, "{counted:?}");
    assert_eq!(gone("client_close"), 2.0, "{counted:?}");
    assert_eq!(closes("1008") + gone("stalled"), 3.0, "{counted:?}");
    let all: f64 = ["1000", "1001", "1002", "1008", "1009"]
        .iter()
        .map(|c| closes(c))
        .sum::<f64>()
        + ["abrupt", "client_close", "stalled"]
            .iter()
            .map(|c| gone(c))
            .sum::<f64>();
    assert_eq!(all, 11.0, "every session counted once: {counted:?}");
    drop(stalled);
}
