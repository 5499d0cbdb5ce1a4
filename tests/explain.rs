//! `shardsim explain`: the story of every committed hazard (the hazards
//! that expect a violation, and the shrunk scenarios) fits in 40 lines and is snapshotted; the
//! failing seed of each is the first one a campaign with `until_failure` finds from seed 0, so
//! it is deterministic. The pictures parse: well-formed XML, with the lanes, arrows and bands
//! one hazard's story has. The committed pictures under `reports/explain/` are exactly what the
//! binary draws now, one pair per committed hazard and nothing else; regenerate them with
//! `SHARDSIM_WRITE_REPORTS=1 cargo test --test explain`.

mod common;
use common::*;
use shardsim::campaign::{self, Campaign};
use shardsim::explain::{self, draw, Explanation, MAX_LINES};
use shardsim_harness::scenario::{Outcome, Scenario};
use std::path::Path;

/// The scenario at `rel`, its first failing seed from 0 (at most 2,000 schedules), and its
/// explanation.
fn explain_first_failure(rel: &str) -> (u64, Explanation) {
    let sc = common::load(rel);
    let s = Campaign::new(&sc, 0, 2_000).until_failure(true).run();
    let seed = s
        .failures
        .first()
        .unwrap_or_else(|| panic!("{rel}: no failing seed in 2,000"))
        .seed;
    let e = explain::explain_text(&explain::rerun(&sc, seed))
        .unwrap_or_else(|e| panic!("{rel} seed {seed}: {e}"));
    assert_eq!(
        e.violation.invariant, sc.expect.outcome,
        "{rel} seed {seed}"
    );
    (seed, e)
}

/// The committed hazards: every hazard scenario that expects a violation, and every shrunk one.
fn committed_hazards() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["sim-scenarios/hazards", "sim-scenarios/shrunk"] {
        for p in toml_files(&root().join(dir)) {
            let sc = Scenario::load(&p).unwrap();
            if sc.expect.outcome != Outcome::None {
                let rel = p.strip_prefix(root()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn every_committed_hazard_has_a_story_of_at_most_40_lines() {
    let hazards = committed_hazards();
    assert!(hazards.len() >= 20, "{hazards:?}");
    let pictures = root().join("reports/explain");
    let write = std::env::var_os("SHARDSIM_WRITE_REPORTS").is_some();
    let mut drawn = Vec::new();
    let mut stale = Vec::new();
    for rel in hazards {
        let (seed, e) = explain_first_failure(&rel);
        let story = explain::story(&e);
        assert!(
            e.lines.len() <= MAX_LINES,
            "{rel} seed {seed}: {} lines\n{story}",
            e.lines.len()
        );
        assert!(
            e.lines
                .last()
                .unwrap()
                .contains(e.violation.invariant.name()),
            "{rel}: the story ends with the conflict\n{story}"
        );
        let name = Path::new(&rel).file_stem().unwrap().to_string_lossy();
        insta::with_settings!({ snapshot_suffix => name.to_string(), prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("story", format!("{rel} seed {seed}\n{story}"));
        });
        // Both pictures of every story are well-formed.
        let svg = draw::svg(&e, &name);
        roxmltree::Document::parse(&svg).unwrap_or_else(|x| panic!("{rel}: {x}\n{svg}"));
        let md = draw::mermaid(&e, &name);
        assert!(md.contains("```mermaid\nsequenceDiagram\n"), "{rel}");
        // What `shardsim explain <file> --seed <seed> --pictures reports/explain` writes.
        let base = format!("{}-seed{seed}", common::load(&rel).name);
        for (ext, body) in [
            ("md", draw::mermaid(&e, &base)),
            ("svg", draw::svg(&e, &base)),
        ] {
            let file = format!("{base}.{ext}");
            let path = pictures.join(&file);
            if write {
                shardsim::campaign::write_atomic(&path, body.as_bytes()).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(body.as_str()) {
                stale.push(format!("reports/explain/{file} ({rel} seed {seed})"));
            }
            drawn.push(file);
        }
    }
    let mut extra = Vec::new();
    for entry in std::fs::read_dir(&pictures).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !drawn.contains(&file) {
            if write {
                std::fs::remove_file(pictures.join(&file)).unwrap();
            } else {
                extra.push(format!("reports/explain/{file}"));
            }
        }
    }
    stale.sort();
    extra.sort();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "the committed pictures differ from what the binary draws now (regenerate them with \
         `SHARDSIM_WRITE_REPORTS=1 cargo test --test explain`):\nstale or missing:\n{}\nof no \
         committed hazard:\n{}",
        stale.join("\n"),
        extra.join("\n")
    );
}

#[test]
fn stale_host_shard_resend_story_and_pictures() {
    let (seed, e) = explain_first_failure("sim-scenarios/hazards/stale-host-shard-resend.toml");
    assert_eq!(seed, 0);
    let story = explain::story(&e);
    // The cause, as the hazard's description tells it: the ShardStarted lost to the one-way
    // cut, the ResendShardHost during the hand-off, the old owner hosting again.
    for needle in [
        "FAULT OneWay 1 -> 0",
        "✗ ShardStarted(shard 0) from node 1 LOST",
        "ResendShardHost(shard 0)",
        "HandOff(shard 0) from node 0",
        "hosts shard 0  ◀ conflict",
    ] {
        assert!(story.contains(needle), "no `{needle}` in\n{story}");
    }
    let svg = draw::svg(&e, "stale-host-shard-resend-seed0");
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let with_class = |c: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(c))
            .collect::<Vec<_>>()
    };
    let lanes: Vec<&str> = with_class("lane")
        .iter()
        .filter_map(|n| n.attribute("data-lane"))
        .collect();
    for l in ["node 0 coordinator", "node 1 region", "node 2 region"] {
        assert!(lanes.contains(&l), "no lane {l} in {lanes:?}");
    }
    // Shard 0 is owned by node 1, then (again) by node 1 and by node 2.
    let owners: Vec<(&str, &str)> = with_class("ownership")
        .iter()
        .map(|n| {
            (
                n.attribute("data-shard").unwrap(),
                n.attribute("data-node").unwrap(),
            )
        })
        .collect();
    assert!(owners.contains(&("0", "1")), "{owners:?}");
    assert!(owners.contains(&("0", "2")), "{owners:?}");
    // The one-way cut is a band; the lost ShardStarted a dashed arrow; the rest arrows.
    let bands: Vec<&str> = with_class("fault")
        .iter()
        .filter_map(|n| n.attribute("data-fault"))
        .collect();
    assert_eq!(bands, ["OneWay"], "{svg}");
    assert!(!with_class("arrow lost").is_empty(), "{svg}");
    assert!(with_class("arrow").len() >= 5, "{svg}");
    let md = draw::mermaid(&e, "stale-host-shard-resend-seed0");
    assert!(md.contains("n1_region--xn0_coordinator"), "{md}");
    assert!(md.contains("n0_coordinator->>n1_region"), "{md}");
}

#[test]
fn a_trace_written_by_run_explains_as_the_rerun_does() {
    let rel = "sim-scenarios/hazards/stale-host-shard-resend.toml";
    let sc = common::load(rel);
    let (r, tracer, causal) = explain::run_recorded(&sc, 0);
    // The recorder changes nothing in the trace.
    let (plain, plain_tracer) =
        campaign::run_seed(&sc, 0, shardsim_harness::trace::TraceMode::Full);
    assert_eq!(r.trace_hash, plain.trace_hash);
    assert_eq!(tracer.to_jsonl(), plain_tracer.to_jsonl());
    let text = explain::jsonl_with_steps(&tracer, &causal);
    // check-trace ignores the step lines.
    let v = shardsim_harness::check::recheck(&text).unwrap().unwrap();
    assert_eq!(Some(v), r.violation);
    let a = explain::explain_text(&text).unwrap();
    let b = explain::explain_text(&explain::rerun(&sc, 0)).unwrap();
    assert_eq!(a.lines, b.lines);
}

/// A liveness failure where restarted regions never registered (the convergence stall of
/// `scale-50.toml`, seed 574 of the sweep; `[[expect.known]] convergence-stalled-by-dead-members`)
/// is told by the coordinator's node seeing the old incarnation Removed and the new one Up
/// too late, and the many nodes that detect the partition and learn of the Down fold into a
/// line each. If a model change moves the hazard off seed 574, take the file's first liveness
/// seed from `shardsim sweep` or `fuzz`.
#[test]
fn a_region_that_never_registered_is_told_by_the_coordinator_nodes_view() {
    let sc = common::load("sim-scenarios/scale-50.toml");
    let e = explain::explain_text(&explain::rerun(&sc, 574)).unwrap();
    let story = explain::story(&e);
    assert_eq!(e.violation.invariant, Outcome::Liveness, "{story}");
    assert!(e.lines.len() <= MAX_LINES, "{story}");
    let conflict = |needle: &str| {
        e.lines
            .iter()
            .any(|l| l.contains(needle) && l.contains("◀ conflict"))
    };
    assert!(
        conflict("node 0  membership  GossipTick: sees node 35 Removed"),
        "{story}"
    );
    assert!(
        conflict("node 0  membership  GossipTick: sees node 35 Up"),
        "{story}"
    );
    assert!(conflict("node 35 up (incarnation 51)"), "{story}");
    // Forty nodes detecting the partition in the same heartbeat round: one line.
    assert!(
        e.lines.iter().any(|l| l.contains("HeartbeatTick ×40")),
        "{story}"
    );
}
