//! A checker that never fails proves nothing: for every invariant, a deliberately broken
//! protocol variant that the fuzzer catches.

use shardsim::campaign;
use shardsim::protocol::settings::Mutation;
use shardsim::scenario::{Outcome, Scenario};
use std::path::Path;
use std::sync::Arc;

fn scenario_with(name: &str, mutation: Mutation) -> Arc<Scenario> {
    let mut sc = Scenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("sim-scenarios")
            .join(name),
    )
    .unwrap();
    sc.options.mutation = mutation;
    sc.expect.outcome = Outcome::None;
    Arc::new(sc)
}

fn first_violation(sc: &Arc<Scenario>, seeds: u64) -> Option<campaign::Failure> {
    campaign::fuzz(sc, 0, seeds, 2, &|_| {})
        .failures
        .into_iter()
        .next()
}

#[test]
fn faithful_protocol_is_clean_on_the_same_schedules() {
    let sc = scenario_with("hazards/reorder-across-handoff-fixed.toml", Mutation::None);
    assert_eq!(first_violation(&sc, 100), None);
}

#[test]
fn coordinator_not_waiting_for_shard_stopped_breaks_at_most_one() {
    let sc = scenario_with(
        "hazards/reorder-across-handoff-fixed.toml",
        Mutation::CoordinatorSkipsShardStopped,
    );
    let f = first_violation(&sc, 100).expect("the broken coordinator was never caught");
    assert_eq!(f.invariant, Outcome::AtMostOne, "{f:?}");
}

#[test]
fn region_delivering_its_buffer_out_of_order_breaks_per_sender_order() {
    let sc = scenario_with(
        "hazards/reorder-across-handoff-fixed.toml",
        Mutation::BufferOutOfOrder,
    );
    let f = first_violation(&sc, 100).expect("the reordering region was never caught");
    assert_eq!(f.invariant, Outcome::PerSenderOrder, "{f:?}");
}

#[test]
fn region_delivering_a_buffered_message_twice_breaks_no_duplicate() {
    let sc = scenario_with(
        "hazards/reorder-across-handoff-fixed.toml",
        Mutation::BufferDuplicate,
    );
    let f = first_violation(&sc, 100).expect("the duplicating region was never caught");
    assert_eq!(f.invariant, Outcome::NoDuplicate, "{f:?}");
}
