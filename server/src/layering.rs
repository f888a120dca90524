//! A test that keeps the module graph of this crate free of cycles: every top-level module
//! (`hub`, `store`, `ws`, ...) may use the ones below it, never one that uses it back. A cycle
//! means two modules must change together; this test names it.

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
        if module == "main" || module == "lib" {
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
