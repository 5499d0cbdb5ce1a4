//! Rebalance trace snapshots (insta): for pinned scenarios and seeds, the canonical log of
//! which shard moved where, when and why. A change to the protocol or the allocation strategy
//! shows up here as a diff to review with `cargo insta review`.

use shardsim::campaign::run_seed;
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::{rebalance_log, TraceMode};
use std::path::Path;
use std::sync::Arc;

fn log(file: &str, seed: u64) -> String {
    let sc = Arc::new(Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap());
    let (r, tracer) = run_seed(&sc, seed, TraceMode::Full);
    assert!(
        r.violation.is_none(),
        "{file} seed {seed}: {:?}",
        r.violation
    );
    rebalance_log(tracer.events())
}

#[test]
fn scale_out_from_2_to_5() {
    insta::assert_snapshot!(log("sim-scenarios/scale-out.toml", 1));
}

#[test]
fn two_oldest_nodes_leave() {
    insta::assert_snapshot!(log("sim-scenarios/faults/two-oldest-leave.toml", 1));
}

#[test]
fn coordinator_failover_after_crash() {
    insta::assert_snapshot!(log(
        "sim-scenarios/faults/coordinator-crash-recovery.toml",
        1
    ));
}
