//! Determinism: same scenario, same seed, same binary → byte-identical trace.

use shardsim::campaign::{run_seed, Campaign};
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::TraceMode;
mod common;
use common::load;
use std::path::Path;
use std::sync::Arc;

#[test]
fn same_seed_same_trace_bytes() {
    let sc = load("scale-out.toml");
    let (a, ta) = run_seed(&sc, 7, TraceMode::Full);
    let (b, tb) = run_seed(&sc, 7, TraceMode::Full);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(ta.to_jsonl(), tb.to_jsonl());
    assert_eq!(a.stats, b.stats);
    assert!(
        a.stats.rebalances > 0,
        "the scale-out scenario should rebalance"
    );
}

#[test]
fn hash_mode_agrees_with_full_mode() {
    let sc = load("two-nodes.toml");
    let (a, _) = run_seed(&sc, 3, TraceMode::Full);
    let (b, _) = run_seed(&sc, 3, TraceMode::Hash);
    assert_eq!(a.trace_hash, b.trace_hash);
}

#[test]
fn different_seeds_differ() {
    let sc = load("scale-out.toml");
    let hashes: Vec<u64> = (0..5)
        .map(|s| run_seed(&sc, s, TraceMode::Hash).0.trace_hash)
        .collect();
    for i in 0..hashes.len() {
        for j in i + 1..hashes.len() {
            assert_ne!(
                hashes[i], hashes[j],
                "seeds {i} and {j} gave the same trace"
            );
        }
    }
}

#[test]
fn tracing_does_not_change_the_schedule() {
    // The checker verdict and counters must not depend on the trace mode.
    let sc = load("hazards/reorder-across-handoff.toml");
    for seed in [137, 128, 1] {
        let (a, _) = run_seed(&sc, seed, TraceMode::Off);
        let (b, _) = run_seed(&sc, seed, TraceMode::Full);
        assert_eq!(a.stats, b.stats);
        assert_eq!(a.violation, b.violation);
    }
}

/// A pinned trace hash: if this changes, recorded seeds no longer replay the same schedule.
/// Update it deliberately when the protocol or the world changes, never by accident.
#[test]
fn pinned_trace_hash() {
    let sc = load("two-nodes.toml");
    let (r, _) = run_seed(&sc, 1, TraceMode::Hash);
    let expected = include_str!("data/two-nodes-seed1.hash").trim();
    assert_eq!(
        format!("{:016x}", r.trace_hash),
        expected,
        "trace hash of two-nodes seed 1 changed"
    );
}

/// Pinned trace hashes of every scenario file (seeds 0, 1, 2), written by the release build
/// (`tests/data/pin-trace-hashes.sh`) and re-computed here in the test profile with debug
/// assertions on: a schedule must not depend on the build. A file missing from the pins fails
/// too, so a new scenario gets its pins in the commit that adds it.
#[test]
fn every_scenario_file_keeps_its_pinned_trace_hashes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = include_str!("data/trace-hashes.txt");
    let mut pinned = std::collections::BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "bad pin line: {line}");
        pinned.insert(
            (f[0].to_string(), f[1].parse::<u64>().unwrap()),
            f[2].to_string(),
        );
    }
    let mut files: Vec<String> = Vec::new();
    let mut stack = vec![root.join("sim-scenarios")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                files.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    let mut changed = Vec::new();
    for f in &files {
        let sc = Arc::new(Scenario::load(&root.join(f)).unwrap());
        for seed in 0..3 {
            let Some(want) = pinned.get(&(f.clone(), seed)) else {
                changed.push(format!("{f} seed {seed}: no pin"));
                continue;
            };
            let (r, _) = run_seed(&sc, seed, TraceMode::Hash);
            let got = format!("{:016x}", r.trace_hash);
            if &got != want {
                changed.push(format!("{f} seed {seed}: {got}, pinned {want}"));
            }
        }
    }
    assert!(
        changed.is_empty(),
        "{} of {} pinned schedules changed (re-pin with tests/data/pin-trace-hashes.sh only if \
         the change is meant):\n{}",
        changed.len(),
        files.len() * 3,
        changed.join("\n")
    );
}

/// A campaign's summary does not depend on how many worker threads ran it.
#[test]
fn campaign_summaries_do_not_depend_on_jobs() {
    for name in [
        "smoke.toml",
        "hazards/reorder-across-handoff.toml",
        "faults/swarm-keep-majority.toml",
    ] {
        let sc = load(name);
        let one = Campaign::new(&sc, 0, 60).jobs(1).run();
        let two = Campaign::new(&sc, 0, 60).jobs(2).run();
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            serde_json::to_string(&two).unwrap(),
            "{name}: 1 and 2 jobs disagree"
        );
    }
}
