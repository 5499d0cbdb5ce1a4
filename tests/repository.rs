//! What the repository's shape promises. The crates are the layers (model, harness, tools) and
//! the compiler enforces that; inside each crate, the top-level modules import one another
//! without a circle, so each can be read, tested and moved on its own. This test reads every
//! `crate::` path of each crate's source (comments aside), builds the graph of its top-level
//! modules with petgraph and fails on a circle, naming it.
//!
//! And `reports/` holds summaries, not raw results, so a clone stays small: every file under it
//! is at most [`MAX_FILE`] bytes and the folder at most [`MAX_TOTAL`] in all. A campaign's raw
//! results stay where the campaign wrote them, outside the tracked tree.

mod common;

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest file allowed under `reports/`.
const MAX_FILE: u64 = 1024 * 1024;
/// The most `reports/` may hold in all.
const MAX_TOTAL: u64 = 5 * 1024 * 1024;

/// Every file under `dir`, recursively, in sorted path order.
fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn reports_hold_summaries_not_raw_results() {
    let reports = common::root().join("reports");
    let mut files = Vec::new();
    all_files(&reports, &mut files);
    let mut total = 0;
    let mut too_big = Vec::new();
    for p in &files {
        let len = std::fs::metadata(p).unwrap().len();
        total += len;
        if len > MAX_FILE {
            let rel = p.strip_prefix(&reports).unwrap().display();
            too_big.push(format!("reports/{rel} ({len} bytes)"));
        }
    }
    assert!(
        too_big.is_empty(),
        "files under reports/ over {MAX_FILE} bytes (keep summaries there, not raw results):\n{}",
        too_big.join("\n")
    );
    assert!(
        total <= MAX_TOTAL,
        "reports/ holds {total} bytes in {} files, over {MAX_TOTAL}",
        files.len()
    );
    assert!(
        files.len() > 10,
        "read {} files under reports/",
        files.len()
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut all = Vec::new();
    all_files(dir, &mut all);
    out.extend(
        all.into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "rs")),
    );
}

/// The top-level module of a file under `src` (`sim/net.rs` and `sim.rs` are both `sim`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// Each top-level module → the top-level modules it names through `crate::`.
fn imports(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files {
        let from = module_of(src, &f);
        if from == "bin" || from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let to = out.entry(from.clone()).or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                // `shardsim_core::` and friends end in `crate::` too: only a path that starts here.
                let before = line[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != from && !to.contains(&name) {
                    to.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let root = common::root();
    for src in ["crates/core/src", "crates/harness/src", "src"] {
        let deps = imports(&root.join(src));
        let mut g: DiGraph<&str, ()> = DiGraph::new();
        let mut ix = BTreeMap::new();
        for (m, to) in &deps {
            for name in std::iter::once(m).chain(to) {
                ix.entry(name.as_str())
                    .or_insert_with(|| g.add_node(name.as_str()));
            }
        }
        for (m, to) in &deps {
            for t in to {
                g.add_edge(ix[m.as_str()], ix[t.as_str()], ());
            }
        }
        let circles: Vec<Vec<&str>> = tarjan_scc(&g)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| c.into_iter().map(|n| g[n]).collect())
            .collect();
        assert!(
            circles.is_empty(),
            "{src}: these modules import one another in a circle: {circles:?}"
        );
        assert!(deps.len() > 3, "{src}: read {} modules", deps.len());
    }
}
