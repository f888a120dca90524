//! Every script's keys share one hash slot, checked on what Redis itself saw. The
//! server runs against a one-node cluster (cluster mode, every slot on the node), which refuses
//! a command or script whose *declared* keys span slots (CROSSSLOT). Keys a script builds
//! inside Lua are not declared, so a `MONITOR` records every command — a script's own commands
//! follow its EVALSHA — and Redis names each command's keys (`COMMAND GETKEYS`) and their slot
//! (`CLUSTER KEYSLOT`). Every script in `lua/` is run at least once.

use std::time::Duration;

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::limiter::{Algorithm, Policy};
use scorecast_server::queue::NewJob;
use scorecast_server::startup::Application;
use scorecast_tests::test_redis::ClusterNode;
use scorecast_tests::ws::WsClient;
use scorecast_tests::{id, player_token, root, temp_dir, test_settings, ADMIN_TOKEN};
use serde_json::{json, Value};

/// Every script, run through the server's own paths against a one-node cluster: none is
/// refused for crossing slots, and Redis counts no error at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_keeps_its_keys_in_one_hash_slot() {
    let node = ClusterNode::start(&temp_dir("cluster")).expect("a one-node cluster");
    let monitor = Monitor::start(node.port);
    let app = Application::build_with_clock(test_settings(&node.url()), Clock::Redis)
        .await
        .expect("scorecast on a cluster node");
    let (port, state) = (app.port(), app.state().clone());
    tokio::spawn(app.run_until_stopped());
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let call = |method: Method, path: &str, body: Option<Value>| {
        let mut req = http
            .request(method, format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap_or(Value::Null);
            (status, body)
        }
    };

    // Boards: board_put, submit (HTTP and WebSocket), read, ratelimit (public reads), remove,
    // rollover, season_event; gcra through the limiter; reward_grant by the job workers after
    // the rollover of `b`.
    for (b, cfg) in [
        (
            "b",
            json!({"submit_limit": {"limit": 100, "window_ms": 1000}, "rewards_top": 1}),
        ),
        ("e", json!({"tie_break": "earliest", "ranking": "shared"})),
        ("d", json!({"reset": "daily", "rewards_top": 2})),
    ] {
        assert_eq!(
            call(Method::PUT, &format!("/admin/boards/{b}"), Some(cfg))
                .await
                .0,
            200
        );
        for p in ["alice", "bob"] {
            let (s, body) = call(
                Method::POST,
                &format!("/admin/boards/{b}/players/{p}/score"),
                Some(json!({"points": 5})),
            )
            .await;
            assert_eq!(s, 200, "{b}/{p}: {body}");
        }
        for path in ["top", "players/alice", "players/alice/around", "seasons"] {
            let (s, body) = call(Method::GET, &format!("/v1/boards/{b}/{path}"), None).await;
            assert_eq!(s, 200, "{b}/{path}: {body}");
        }
    }
    let mut ws = WsClient::connect(&format!("ws://127.0.0.1:{port}/ws")).await;
    assert_eq!(
        ws.hello(&player_token("carol", Some("Carol"))).await["type"],
        "welcome"
    );
    assert_eq!(ws.submit("c-1", "b", 3).await["type"], "ack");
    assert_eq!(ws.subscribe("b", "me", json!({})).await["type"], "rank");
    let (s, _) = call(Method::DELETE, "/admin/boards/b/players/bob", None).await;
    assert_eq!(s, 204);
    let (s, body) = call(
        Method::POST,
        "/admin/boards/b/rollover",
        Some(json!({"season": "s2"})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    state.store.announce_season(&id("d")).await.unwrap();
    // Runs: run_start on a verified board, and the read a proof makes (run_read).
    let (s, body) = call(
        Method::PUT,
        "/admin/boards/v",
        Some(json!({"op": "best", "validator": "2048"})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let run = state
        .store
        .start_run(&id("v"), &id("alice"), 60_000, 3)
        .await
        .unwrap();
    let (_, found, _) = state
        .store
        .board_and_run(&id("v"), &id(&run.id))
        .await
        .unwrap();
    assert!(found.is_some());
    // Tournaments: join, a submission counted as an attempt, the state, an event, the end and
    // the final standings read.
    let far = 4_102_444_800_000_i64; // 2100-01-01
    let (s, body) = call(
        Method::PUT,
        "/admin/boards/t",
        Some(json!({"tournament": {"schedule": {"start_ms": 0, "end_ms": far}, "max_size": 5}})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let joined = http
        .post(format!("{base}/v1/boards/t/join"))
        .bearer_auth(player_token("alice", None))
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 200);
    let (s, body) = call(
        Method::POST,
        "/admin/boards/t/players/alice/score",
        Some(json!({"points": 5})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = call(Method::GET, "/v1/boards/t/tournament", None).await;
    assert_eq!(s, 200, "{body}");
    state
        .store
        .tournament_event(&id("t"), "started", 0, far)
        .await
        .unwrap();
    state.store.end_tournament(&id("t"), None).await.unwrap();
    let (s, body) = call(Method::GET, "/v1/boards/t/final", None).await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = call(Method::GET, "/admin/boards/t/tournament/entrants", None).await;
    assert_eq!(s, 200, "{body}");
    // Buckets: placed by submit, read within a bucket, mirrored by remove, kept by a rollover.
    let (s, body) = call(
        Method::PUT,
        "/admin/boards/k",
        Some(json!({"bucket_size": 2, "keep_seasons": 0})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    for p in ["alice", "bob", "carol"] {
        let path = format!("/admin/boards/k/players/{p}/score");
        let (s, body) = call(Method::POST, &path, Some(json!({"points": 5}))).await;
        assert_eq!(s, 200, "{body}");
    }
    for path in [
        "/v1/boards/k/top?bucket=2",
        "/v1/boards/k/top?player=alice",
        "/v1/boards/k/players/alice",
        "/v1/boards/k/players/alice/around",
        "/admin/boards/k/top",
    ] {
        let (s, body) = call(Method::GET, path, None).await;
        assert_eq!(s, 200, "{path}: {body}");
    }
    let (s, body) = call(Method::GET, "/admin/boards/k/buckets", None).await;
    assert_eq!(s, 200, "{body}");
    let (s, _) = call(Method::DELETE, "/admin/boards/k/players/bob", None).await;
    assert_eq!(s, 204);
    for season in ["k2", "k3"] {
        let (s, body) = call(
            Method::POST,
            "/admin/boards/k/rollover",
            Some(json!({ "season": season })),
        )
        .await;
        assert_eq!(s, 200, "{body}");
    }
    // Leagues: the tier boards put by one request, a tier's refusal (submit, join), the
    // standings of its buckets and the moves applied, each on its tier board's slot.
    let (s, body) = call(
        Method::PUT,
        "/admin/leagues/hl",
        Some(
            json!({"tiers": ["h1", "h2"], "bucket_size": 2, "promote": 1, "relegate": 1,
                    "reset": "daily", "board": {"tournament": {"schedule": {"recurring": true}}}}),
        ),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = call(
        Method::POST,
        "/admin/boards/h1/players/alice/score",
        Some(json!({"points": 5})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = call(
        Method::POST,
        "/admin/boards/h2/players/alice/score",
        Some(json!({"points": 5})),
    )
    .await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (403, Some("wrong_tier"))
    );
    let joined = http
        .post(format!("{base}/v1/boards/h2/join"))
        .bearer_auth(player_token("bob", None))
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 403);
    let (_, seasons) = call(Method::GET, "/v1/boards/h1/seasons", None).await;
    let season = seasons["seasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == true)
        .unwrap()["season"]
        .as_str()
        .unwrap()
        .to_owned();
    let standings = state
        .store
        .bucket_standings(&id("h1"), &season)
        .await
        .unwrap();
    assert_eq!(standings, [["alice"]]);
    for t in ["h1", "h2"] {
        let applied = state
            .store
            .apply_moves(&id(t), &season, "next", &[("alice", "h2")])
            .await
            .unwrap();
        assert!(applied);
    }
    let gcra = Policy {
        name: "g".into(),
        algorithm: Algorithm::Gcra,
        limit: 5,
        window_ms: 1000,
    };
    assert!(state.limiter.try_acquire(&gcra, "x").await.unwrap().allowed);

    // Queues: enqueue, claim, extend, ack, nack, poll, take, promote, reap, dead, retry,
    // retry all, delete, purge.
    let q = state.queues.get(&id("q"));
    let job = |n: &str| NewJob::new(&id("k"), &json!({"n": n})).unwrap().id(id(n));
    q.enqueue(job("j1").max_attempts(1)).await.unwrap();
    let c = q.claim(Duration::from_secs(30)).await.unwrap().unwrap();
    q.extend(&id(&c.job.id), &c.lease.token, Duration::from_secs(60))
        .await
        .unwrap();
    q.nack(&id(&c.job.id), &c.lease.token, None).await.unwrap(); // last attempt: dead letter
    assert_eq!(q.dead(0, 10).await.unwrap().0, 1);
    q.retry(&id("j1")).await.unwrap();
    q.retry_all(10).await.unwrap();
    q.enqueue(job("gone")).await.unwrap();
    q.delete(&id("gone")).await.unwrap();
    q.purge(scorecast_server::queue::JobState::Dead, 10)
        .await
        .unwrap();
    q.reap().await.unwrap();
    q.enqueue(job("j2").after(1)).await.unwrap();
    q.promote_due().await.unwrap();
    assert!(q.poll().await.unwrap().is_some());
    q.enqueue(job("j3")).await.unwrap();
    assert!(q.take(Duration::from_secs(1)).await.unwrap().is_some());
    let c = q.claim(Duration::from_secs(30)).await.unwrap().unwrap();
    q.ack(&id(&c.job.id), &c.lease.token).await.unwrap();
    let (s, body) = call(Method::GET, "/admin/queues/q/dead", None).await;
    assert_eq!(s, 200, "{body}");

    // Servers with token revocation run its scripts too (an unknown route is a 404 here).
    let _ = call(Method::POST, "/admin/players/alice/revoke", None).await;

    // Moderation: a ban on one board and on every board, lifted, and a board deleted.
    for (path, body) in [
        (
            "/admin/bans/alice",
            json!({"board": "b", "reason": "cluster"}),
        ),
        ("/admin/bans/bob", json!({"reason": "cluster"})),
    ] {
        let (s, body) = call(Method::PUT, path, Some(body)).await;
        assert_eq!(s, 200, "{path}: {body}");
    }
    let (s, _) = call(Method::DELETE, "/admin/bans/alice?board=b", None).await;
    assert_eq!(s, 204);
    // A lift on every board: its intent, each board's step, then the intent dropped.
    let (s, _) = call(Method::DELETE, "/admin/bans/bob", None).await;
    assert_eq!(s, 204);
    let (s, _) = call(Method::DELETE, "/admin/boards/e", None).await;
    assert_eq!(s, 204);

    // Every script of lua/ has run: each file, as scripts.rs composes it (alone, after
    // base.lua, after base.lua and lib.lua, or after base.lua and q_lib.lua), is loaded in Redis (redis::Script loads on
    // first use). Background steps (a revocation poller) may take a moment.
    let read = |name: &str| std::fs::read_to_string(root().join("lua").join(name)).unwrap();
    let (base, lib, qlib) = (read("base.lua"), read("lib.lua"), read("q_lib.lua"));
    let mut all: Vec<(String, Vec<String>)> = std::fs::read_dir(root().join("lua"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".lua") && !["base.lua", "lib.lua", "q_lib.lua"].contains(&n.as_str())
        })
        .map(|n| {
            let body = read(&n);
            let shas = [
                body.clone(),
                format!("{base}\n{body}"),
                format!("{base}\n{lib}\n{body}"),
                format!("{base}\n{qlib}\n{body}"),
            ]
            .iter()
            .map(|text| redis::Script::new(text).get_hash().to_owned())
            .collect();
            (n, shas)
        })
        .collect();
    all.sort();
    assert!(all.len() >= 19, "{all:?}");
    let mut c = redis::Client::open(node.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + scorecast_tests::EVENTUALLY;
    loop {
        let mut never = Vec::new();
        for (name, shas) in &all {
            let mut exists = redis::cmd("SCRIPT");
            exists.arg("EXISTS").arg(shas);
            let loaded: Vec<bool> = exists.query_async(&mut c).await.unwrap();
            if !loaded.contains(&true) {
                never.push(name.as_str());
            }
        }
        if never.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "scripts never run: {never:?}"
        );
        tokio::time::sleep(scorecast_tests::POLL).await;
    }
    let errors: String = redis::cmd("INFO")
        .arg("errorstats")
        .query_async(&mut c)
        .await
        .unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    let stat = |text: &str, prefix: &str, field: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split([':', ',']).find_map(|kv| kv.strip_prefix(field)))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(
        stat(&errors, "errorstat_CROSSSLOT", "count="),
        0,
        "{errors}"
    );
    // A script that fails at run time (as a cross-slot access would on a real cluster) is a
    // failed EVALSHA; the only expected ones are NOSCRIPT, redis::Script loading on first use.
    assert_eq!(
        stat(&stats, "cmdstat_evalsha:", "failed_calls="),
        stat(&errors, "errorstat_NOSCRIPT", "count="),
        "{stats}\n{errors}"
    );

    // What each command and each script touched, as Redis saw it.
    let lines = monitor.stop();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in &lines {
        let Some((who, args)) = parse_monitor_line(line) else {
            continue;
        };
        let from_lua = who.ends_with(" lua");
        let cmd = args[0].to_ascii_lowercase();
        let mut keys = Vec::new();
        if !from_lua && (cmd == "evalsha" || cmd == "eval") {
            let n: usize = args[2].parse().unwrap();
            keys.extend(args[3..3 + n].iter().cloned());
        } else {
            let mut getkeys = redis::cmd("COMMAND");
            getkeys.arg("GETKEYS");
            for a in &args {
                getkeys.arg(a.as_bytes());
            }
            // Commands without keys (TIME, PING, INFO…) are an error here: no keys.
            keys.extend(
                getkeys
                    .query_async::<Vec<String>>(&mut c)
                    .await
                    .unwrap_or_default(),
            );
        }
        if from_lua {
            let (_, group) = groups
                .last_mut()
                .expect("a script command after its EVALSHA");
            group.extend(keys);
        } else {
            groups.push((line.clone(), keys));
        }
    }
    let scripts_seen = groups
        .iter()
        .filter(|(l, _)| l.to_ascii_lowercase().contains("\"evalsha\""))
        .count();
    assert!(
        scripts_seen >= all.len(),
        "only {scripts_seen} script calls seen"
    );
    for (line, keys) in &groups {
        let mut slots = std::collections::BTreeSet::new();
        for k in keys {
            let slot: i64 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(k.as_bytes())
                .query_async(&mut c)
                .await
                .unwrap();
            slots.insert(slot);
        }
        assert!(slots.len() <= 1, "keys {keys:?} in slots {slots:?}: {line}");
    }
}

/// A `MONITOR` connection recording every line Redis sends, on a thread.
struct Monitor {
    stream: std::net::TcpStream,
    lines: std::thread::JoinHandle<Vec<String>>,
}

impl Monitor {
    fn start(port: u16) -> Monitor {
        use std::io::{BufRead, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut ok = String::new();
        reader.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim(), "+OK");
        let lines = std::thread::spawn(move || {
            reader
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.strip_prefix('+').map(str::to_owned))
                .collect()
        });
        Monitor { stream, lines }
    }

    fn stop(self) -> Vec<String> {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        self.lines.join().unwrap()
    }
}

/// `1700000000.123 [0 127.0.0.1:5000] "cmd" "arg"…` → ("0 127.0.0.1:5000", ["cmd", "arg"…]).
fn parse_monitor_line(line: &str) -> Option<(String, Vec<String>)> {
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let who = line[open + 1..close].to_owned();
    let mut args = Vec::new();
    let mut chars = line[close + 1..].chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next()? {
                    'n' => arg.push('\n'),
                    'r' => arg.push('\r'),
                    't' => arg.push('\t'),
                    'a' => arg.push('\u{7}'),
                    'b' => arg.push('\u{8}'),
                    'x' => {
                        let hex: String = [chars.next()?, chars.next()?].iter().collect();
                        arg.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                    }
                    other => arg.push(other),
                },
                c => arg.push(c),
            }
        }
        args.push(arg);
    }
    (!args.is_empty()).then_some((who, args))
}
