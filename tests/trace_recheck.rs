//! Each trace can be re-checked from the file alone, and reaches the live verdict.

use shardsim::campaign::run_seed;
use shardsim::check::recheck;
use shardsim::protocol::settings::Mutation;
use shardsim::scenario::{Outcome, Scenario};
use shardsim::trace::TraceMode;
use std::path::Path;
use std::sync::Arc;

fn load(name: &str) -> Scenario {
    Scenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sim-scenarios")
            .join(name),
    )
    .unwrap()
}

fn live_and_file_agree(sc: Scenario, seeds: std::ops::Range<u64>) -> usize {
    let sc = Arc::new(sc);
    let mut violations = 0;
    for seed in seeds {
        let (r, tracer) = run_seed(&sc, seed, TraceMode::Full);
        let from_file = recheck(&tracer.to_jsonl()).expect("trace parses");
        match (&r.violation, &from_file) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                assert_eq!((a.invariant, a.t), (b.invariant, b.t), "seed {seed}");
                violations += 1;
            }
            _ => panic!(
                "seed {seed}: live {:?} but file {:?}",
                r.violation, from_file
            ),
        }
    }
    violations
}

#[test]
fn clean_traces_recheck_clean() {
    assert_eq!(live_and_file_agree(load("scale-out.toml"), 0..5), 0);
}

#[test]
fn hazard_trace_recheck_finds_the_reordering() {
    let n = live_and_file_agree(load("hazards/reorder-across-handoff.toml"), 120..160);
    assert!(n > 0, "no violation among these seeds");
}

#[test]
fn every_invariant_is_found_in_the_file() {
    for (m, inv) in [
        (Mutation::CoordinatorSkipsShardStopped, Outcome::AtMostOne),
        (Mutation::BufferOutOfOrder, Outcome::PerSenderOrder),
        (Mutation::BufferDuplicate, Outcome::NoDuplicate),
    ] {
        let mut sc = load("hazards/reorder-across-handoff-fixed.toml");
        sc.options.mutation = m;
        let sc = Arc::new(sc);
        let seed = (0..100)
            .find(|s| {
                run_seed(&sc, *s, TraceMode::Off)
                    .0
                    .violation
                    .is_some_and(|v| v.invariant == inv)
            })
            .expect("mutation caught");
        let (_, tracer) = run_seed(&sc, seed, TraceMode::Full);
        let v = recheck(&tracer.to_jsonl())
            .unwrap()
            .expect("file shows the violation");
        assert_eq!(v.invariant, inv);
    }
}
