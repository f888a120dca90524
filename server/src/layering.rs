//! Tests that keep the module graph of this crate in layers: every top-level module (`hub`,
//! `store`, `ws`, ...) may use the ones below it, never one that uses it back (a cycle means two
//! modules must change together; the test names it). And rules on top: only the data layer
//! holds a Redis connection and sends Redis commands, the hub has no Redis at all (pub/sub is the
//! broker's), and `config` is a leaf that imports nothing but leaf modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules each file of `src/` refers to through `crate::`.
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let first = rel.iter().next().and_then(|c| c.to_str()).expect("a name");
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "main" || module == "lib" || module == "layering" {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("readable source");
        let used = graph.entry(module.clone()).or_default();
        for target in referenced(&text) {
            if target != module {
                used.insert(target);
            }
        }
    }
    graph
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable src") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The first segments after each `crate::` (also inside `crate::{a, b::c}`).
fn referenced(text: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find('}').unwrap_or(list.len());
            out.extend(list[..end].split(',').map(ident));
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// A cycle through `node`, if any (depth-first, `path` is the current chain).
fn cycle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|n| n == node) {
        let mut c = path[at..].to_vec();
        c.push(node.to_owned());
        return Some(c);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_owned());
    for next in graph.get(node).into_iter().flatten() {
        if let Some(c) = cycle(graph, next, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.to_owned());
    None
}

#[test]
fn the_module_graph_has_no_cycles() {
    let graph = edges();
    assert!(
        graph.len() > 10,
        "the crate's modules were found: {graph:?}"
    );
    assert!(
        graph["ws"].contains("state") && graph["state"].contains("hub"),
        "the scan sees imports: {graph:?}"
    );
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(c) = cycle(&graph, node, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}", c.join(" -> "));
        }
    }
}

/// The modules that hold a Redis connection and send commands on it: the store layer (`store`,
/// `queue`, `limiter`, each owning its keys and scripts), the `broker` (pub/sub), `scripts` (the
/// Lua texts, picked by connection) and `startup`, which connects.
const DATA_LAYER: [&str; 6] = ["broker", "limiter", "queue", "scripts", "startup", "store"];

/// Every `.rs` file under `src/<dir>`, with its text.
fn files_of(dir: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    collect(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(dir),
        &mut files,
    );
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable source");
            (f, text)
        })
        .collect()
}

/// No module outside the data layer names the connection module, and the store hands out no
/// connection (none of its public functions returns one).
#[test]
fn only_the_data_layer_holds_a_connection() {
    let graph = edges();
    let holders: Vec<&String> = graph
        .iter()
        .filter(|(m, used)| used.contains("conn") && !DATA_LAYER.contains(&m.as_str()))
        .map(|(m, _)| m)
        .collect();
    assert!(
        holders.is_empty(),
        "modules outside the data layer use crate::conn: {holders:?}"
    );
    for (f, text) in files_of("store") {
        for line in text.lines() {
            assert!(
                !(line.contains("pub fn") && line.contains("-> RedisConn")),
                "{} hands out a connection: {line}",
                f.display()
            );
        }
    }
}

/// Redis commands are sent only by the data layer, `conn` (routing `WAIT`) and `embedded` (the
/// private redis-server's PING and SHUTDOWN): no other module builds or sends one.
#[test]
fn only_the_data_layer_sends_redis_commands() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let senders = [
        "redis::cmd",
        "redis::pipe",
        "query_async",
        "invoke_async",
        "AsyncCommands",
    ];
    let mut seen = BTreeSet::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let first = rel.iter().next().and_then(|c| c.to_str()).expect("a name");
        let module = first.trim_end_matches(".rs");
        if DATA_LAYER.contains(&module) || ["conn", "embedded", "layering"].contains(&module) {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("readable source");
        for s in senders {
            if text.contains(s) {
                seen.insert(format!("{} ({s})", rel.display()));
            }
        }
    }
    assert!(
        seen.is_empty(),
        "Redis commands outside the data layer: {seen:?}"
    );
}

/// The hub sends no Redis command and holds no connection: every file under `src/hub` is free
/// of `redis::`, and the broker, which feeds the hub, does not use it back.
#[test]
fn the_hub_leaves_redis_to_the_broker() {
    let hub = files_of("hub");
    assert!(hub.len() > 5, "the hub's files were found");
    for (f, text) in hub {
        assert!(
            !text.contains("redis::") && !text.contains("use redis"),
            "{} talks to Redis itself (pub/sub belongs to crate::broker)",
            f.display()
        );
    }
    let graph = edges();
    assert!(
        graph["hub"].contains("broker"),
        "the scan sees the hub use the broker: {:?}",
        graph["hub"]
    );
    assert!(!graph["hub"].contains("conn"), "{:?}", graph["hub"]);
    assert!(!graph["broker"].contains("hub"), "{:?}", graph["broker"]);
}

/// `config` is a leaf: the modules it uses use nothing of this crate themselves (the types that
/// settings are made of live in `config`, and `auth` and `limiter` import them from it).
#[test]
fn config_imports_only_leaf_modules() {
    let graph = edges();
    for used in &graph["config"] {
        let deps = graph.get(used).cloned().unwrap_or_default();
        assert!(
            deps.is_empty(),
            "config uses {used}, which is not a leaf: it uses {deps:?}"
        );
    }
    assert!(
        graph["auth"].contains("config") && graph["limiter"].contains("config"),
        "auth and limiter take their value types from config"
    );
}

#[test]
fn references_are_read_from_paths_and_lists() {
    let text = "use crate::{keys, reply::bad, scripts};\nlet x = crate::hub::Hub::start;";
    assert_eq!(referenced(text), ["keys", "reply", "scripts", "hub"]);
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    let c = cycle(&g, "a", &mut Vec::new(), &mut BTreeSet::new());
    assert_eq!(c.expect("a cycle"), ["a", "b", "a"]);
}
