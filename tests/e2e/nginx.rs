//! A real reverse proxy in front: Debian's nginx, running `deploy/nginx.conf` (the file the
//! README shows) with its own prefix in a temporary directory, terminating TLS with a
//! certificate made here by `openssl`, in front of two `scorecast` processes on one Redis.
//! Players connect with `wss://` from several loopback addresses.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use scorecast_tests::process::{logged, put_board, ServerProcess};
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::{
    player_token, root, start_test_redis, temp_dir, ADMIN_TOKEN, EVENTUALLY, TOKEN_SECRET,
};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::Connector;

/// nginx: `SCORECAST_NGINX`, else Debian's (`cargo xtask setup` installs the `nginx` package).
fn nginx_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SCORECAST_NGINX") {
        return PathBuf::from(p);
    }
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("nginx is not installed: `cargo xtask setup` (or apt-get install nginx)")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn openssl(args: &[&str], dir: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running openssl");
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
}

/// A certificate for `127.0.0.1` (and `localhost`) signed by a throw-away CA made here (a
/// verifier refuses a CA certificate used as the server's own): (CA, certificate, key) paths.
fn make_certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=Scorecast test CA",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(&ca, dir);
    let mut csr = vec!["req", "-new", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "key.pem", "-out", "server.csr"]);
    openssl(&csr, dir);
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "cert.pem",
        ],
        dir,
    );
    (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    )
}

/// `deploy/nginx.conf` with this test's port, upstreams and certificate in place of the
/// production values; every replaced line must be there, so the file and the test move together.
fn render_site(listen: u16, upstreams: [u16; 2], cert: &Path, key: &Path) -> String {
    let mut conf = std::fs::read_to_string(root().join("deploy/nginx.conf")).unwrap();
    let swaps = [
        (
            "listen 443 ssl;".to_owned(),
            format!("listen 127.0.0.1:{listen} ssl;"),
        ),
        (
            "server 127.0.0.1:8081 ".to_owned(),
            format!("server 127.0.0.1:{} ", upstreams[0]),
        ),
        (
            "server 127.0.0.1:8082 ".to_owned(),
            format!("server 127.0.0.1:{} ", upstreams[1]),
        ),
        (
            "/etc/ssl/scorecast/fullchain.pem".to_owned(),
            cert.display().to_string(),
        ),
        (
            "/etc/ssl/scorecast/privkey.pem".to_owned(),
            key.display().to_string(),
        ),
    ];
    for (from, to) in swaps {
        assert_eq!(conf.matches(&from).count(), 1, "deploy/nginx.conf: {from}");
        conf = conf.replace(&from, &to);
    }
    conf
}

/// nginx with its own prefix, configuration, logs and temporary files under `dir`, in the
/// foreground; stopped (SIGQUIT, then SIGKILL) when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Nginx {
    fn start(dir: &Path, site: &str, port: u16) -> Nginx {
        std::fs::write(dir.join("scorecast.conf"), site).unwrap();
        let main = "worker_processes 1;\npid nginx.pid;\nerror_log error.log info;\n\
                    events { worker_connections 512; }\n\
                    http {\n  access_log access.log;\n  client_body_temp_path tmp/body;\n  \
                    proxy_temp_path tmp/proxy;\n  fastcgi_temp_path tmp/fastcgi;\n  \
                    uwsgi_temp_path tmp/uwsgi;\n  scgi_temp_path tmp/scgi;\n  \
                    include scorecast.conf;\n}\n";
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning nginx");
        let mut n = Nginx {
            child,
            dir: dir.to_owned(),
        };
        let deadline = Instant::now() + EVENTUALLY;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = n.child.try_wait() {
                panic!("nginx exited ({status}):\n{}", n.log());
            }
            assert!(
                Instant::now() < deadline,
                "nginx never listened:\n{}",
                n.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGQUIT: the master stops its workers too (SIGKILL would orphan them).
        let _ = Command::new("kill")
            .args(["-QUIT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + EVENTUALLY;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TLS connector that trusts only the test's CA.
fn connector(ca: &Path) -> Connector {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    Connector::Rustls(Arc::new(cfg))
}

/// `wss://127.0.0.1:port/ws` from source address `from`; a refused upgrade as its HTTP status.
async fn wss(port: u16, from: Ipv4Addr, tls: &Connector) -> Result<WsClient, u16> {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((from, 0))).unwrap();
    let stream = sock
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .map_err(|_| 0u16)?;
    let req = format!("wss://127.0.0.1:{port}/ws")
        .into_client_request()
        .unwrap();
    match tokio_tungstenite::client_async_tls_with_config(req, stream, None, Some(tls.clone()))
        .await
    {
        Ok((ws, _)) => Ok(WsClient { ws }),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => Err(res.status().as_u16()),
        Err(_) => Err(0),
    }
}

/// Connects through nginx and says hello, retrying (bounded) while an instance is going away.
async fn join(port: u16, from: Ipv4Addr, tls: &Connector, token: &str) -> WsClient {
    let deadline = Instant::now() + 3 * EVENTUALLY;
    let mut last = None;
    loop {
        let attempt = wss(port, from, tls).await;
        if let Err(status) = attempt {
            last = Some(status);
        }
        if let Ok(mut c) = attempt {
            if let Some(Incoming::Json(w)) = c.next_within(WAIT).await {
                assert_eq!(w["type"], "welcome", "{w}");
                c.send_json(json!({"type": "hello", "token": token})).await;
                if let Some(Incoming::Json(w)) = c.next_within(WAIT).await {
                    if w["type"] == "welcome" && !w["player"].is_null() {
                        return c;
                    }
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "{from} could not join (last refusal: HTTP {last:?}; 0 = no connection)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What one player saw: the points the server acknowledged, and how often it reconnected.
struct Played {
    acked_points: i64,
    reconnects: u32,
}

/// A client that behaves like the SDK: `n` submissions one after another, each retried with
/// the SAME id after a reconnect until it is acknowledged (a `duplicate` ack counts once).
async fn play(
    port: u16,
    from: Ipv4Addr,
    tls: Connector,
    player: String,
    n: usize,
    acked: Arc<AtomicUsize>,
) -> Played {
    let token = player_token(&player, None);
    let mut c = join(port, from, &tls, &token).await;
    let mut out = Played {
        acked_points: 0,
        reconnects: 0,
    };
    let deadline = Instant::now() + 6 * EVENTUALLY;
    let mut i = 0;
    while i < n {
        assert!(
            Instant::now() < deadline,
            "{player} stuck at submission {i}"
        );
        let id = format!("{player}-{i}");
        let points = (i % 5 + 1) as i64;
        let frame = json!({"type": "submit", "id": id, "board": "b", "points": points});
        let mut answered = c.ws.send(Message::text(frame.to_string())).await.is_ok();
        if answered {
            answered = loop {
                match c.next_within(WAIT).await {
                    Some(Incoming::Json(v)) if v["id"] == id.as_str() => {
                        if v["type"] == "ack" {
                            out.acked_points += points;
                            acked.fetch_add(1, Ordering::SeqCst);
                            i += 1;
                            break true;
                        }
                        // `unavailable` while an instance stops: retried like the SDK does.
                        assert_eq!(v["code"], "unavailable", "{v}");
                        break false;
                    }
                    Some(Incoming::Json(_)) => {}
                    Some(Incoming::Closed(_)) | None => break false,
                }
            };
        }
        if !answered {
            c = join(port, from, &tls, &token).await;
            out.reconnects += 1;
        }
    }
    out
}

/// The README's production section shows deploy/nginx.conf as it is, the file this test runs.
#[test]
fn the_readme_shows_the_tested_nginx_configuration() {
    let conf = std::fs::read_to_string(root().join("deploy/nginx.conf")).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("```nginx\n{conf}```")),
        "README.md must show deploy/nginx.conf verbatim in a ```nginx block"
    );
}

/// Through nginx with TLS: `wss://` works; a submission through the proxy is pushed to
/// subscribers of BOTH instances; the per-address cap counts real client addresses (one client
/// gets one connection per instance, another client still gets its own); SIGTERM of one
/// instance while players submit moves them to the other, and each player's stored score
/// equals the sum of the points acknowledged to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_behind_nginx_with_tls() {
    let dir = temp_dir("nginx");
    let redis = start_test_redis();
    let (ca, cert, key) = make_certificate(&dir);
    let tls = connector(&ca);
    let listen = free_port();
    let origin = format!("https://127.0.0.1:{listen}");
    let start = |tag: &str| {
        ServerProcess::start_on(
            &scorecast_tests::process::scorecast_bin(env!("CARGO_BIN_EXE_scorecast-e2e")),
            &temp_dir(tag),
            &redis.url(),
            &[
                "--trusted-proxies",
                "127.0.0.1",
                "--max-conns-per-addr",
                "1",
                "--allowed-origins",
                &origin,
            ],
            &[
                ("SCORECAST_ADMIN_TOKEN", ADMIN_TOKEN),
                ("SCORECAST_TOKEN_SECRET", TOKEN_SECRET),
                ("RUST_LOG", "info"),
                ("NO_COLOR", "1"),
            ],
        )
    };
    let mut a = start("nginx-a");
    let b = start("nginx-b");
    let nginx = Nginx::start(
        &dir,
        &render_site(listen, [a.port, b.port], &cert, &key),
        listen,
    );
    put_board(a.port, "b").await;

    // Pushes cross instances: a subscriber on each instance (directly) sees a submission
    // made through nginx, whichever instance took it.
    let mut subs = Vec::new();
    for port in [a.port, b.port] {
        let mut s = WsClient::connect(&format!("ws://127.0.0.1:{port}/ws")).await;
        s.subscribe("b", "top", json!({})).await;
        subs.push(s);
    }
    let from = Ipv4Addr::new(127, 0, 0, 20);
    let mut cross = join(listen, from, &tls, &player_token("crosser", None)).await;
    let ack = cross.submit("x-1", "b", 7).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    for s in &mut subs {
        s.recv_until(WAIT, |v: &Value| {
            v["type"] == "top"
                && v["entries"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|e| e["player"] == "crosser"))
        })
        .await;
    }
    drop(cross);
    drop(subs);

    // The cap (1 per address per instance) counts the players nginx forwards, not nginx:
    // one client address gets exactly one connection on each instance, and another client
    // address still gets its own.
    let (one, two) = (Ipv4Addr::new(127, 0, 0, 30), Ipv4Addr::new(127, 0, 0, 31));
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..4 {
        match wss(listen, one, &tls).await {
            Ok(c) => held.push(c),
            Err(429) => refused += 1,
            Err(e) => panic!("unexpected refusal {e}"),
        }
    }
    assert_eq!((held.len(), refused), (2, 2), "one per instance for {one}");
    // The refusals are logged with the player's address, not nginx's.
    let refusal = logged(&[&a, &b], |l| {
        l.contains("WebSocket refused") && l.contains(&one.to_string())
    })
    .await;
    assert!(
        refusal.is_some(),
        "no refusal logged for {one}:\n{}{}",
        a.output(),
        b.output()
    );
    for _ in 0..2 {
        held.push(
            wss(listen, two, &tls)
                .await
                .expect("another client's own slots"),
        );
    }
    drop(held);

    // SIGTERM of instance A while four players submit through nginx.
    const PLAYERS: u8 = 4;
    const EACH: usize = 30;
    let acked = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for p in 0..PLAYERS {
        tasks.push(tokio::spawn(play(
            listen,
            Ipv4Addr::new(127, 0, 0, 40 + p),
            tls.clone(),
            format!("p{p}"),
            EACH,
            acked.clone(),
        )));
    }
    let deadline = Instant::now() + 3 * EVENTUALLY;
    while acked.load(Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "players never got going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    a.sigterm();
    let status = a
        .wait_exit()
        .expect("instance A did not stop after SIGTERM");
    assert!(status.success(), "{status}:\n{}", a.output());
    let mut reconnects = 0;
    for (p, t) in tasks.into_iter().enumerate() {
        let played = t.await.unwrap();
        reconnects += played.reconnects;
        let r: Value = reqwest::get(format!(
            "http://127.0.0.1:{}/v1/boards/b/players/p{p}",
            b.port
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        assert_eq!(
            r["score"].as_i64(),
            Some(played.acked_points),
            "p{p}: stored vs acknowledged ({} reconnects)",
            played.reconnects
        );
    }
    assert!(
        reconnects >= 1,
        "no player was on the stopped instance:\n{}",
        nginx.log()
    );
}
