//! A checker that never fails proves nothing: for every invariant, a deliberately broken
//! protocol variant that the fuzzer catches.

mod common;

use shardsim::campaign;
use shardsim::protocol::settings::Mutation;
use shardsim::protocol::DropReason;
use shardsim::scenario::{Outcome, Scenario};
use shardsim::trace::{TraceEvent, TraceMode};
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

#[test]
fn coordinator_allocating_to_a_removed_region_breaks_allocation_to_downed() {
    // Node 2 joins late (few shards), crashes, is downed; during the long down-removal-margin
    // the coordinator must not allocate new shards to it.
    let mut sc = common::data_scenario("allocate-to-downed.toml");
    let faithful = Arc::new(sc.clone());
    assert_eq!(
        first_violation(&faithful, 30),
        None,
        "the faithful coordinator never allocates to a downed region"
    );
    sc.options.mutation = Mutation::AllocateToDowned;
    let f = first_violation(&Arc::new(sc), 30).expect("the broken coordinator was never caught");
    assert_eq!(f.invariant, Outcome::AllocationToDowned, "{f:?}");
}

#[test]
fn region_that_never_reasks_for_a_shard_home_breaks_liveness() {
    let mut sc = Scenario::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("sim-scenarios/faults/journal-blackhole.toml"),
    )
    .unwrap();
    sc.options.mutation = Mutation::RegionNeverReasks;
    let f = first_violation(&Arc::new(sc), 20).expect("the stranded buffer was never caught");
    assert_eq!(f.invariant, Outcome::Liveness, "{f:?}");
}

#[test]
fn region_buffering_past_buffer_size_breaks_its_own_invariant() {
    // The journal is unavailable from the start: no region can register (the coordinator's
    // write of ShardRegionRegistered never completes), so every message buffers and a small
    // buffer-size fills. The faithful region drops the overflow as buffer_full; the broken one
    // keeps buffering, which no delivery checker sees, but the region's own rule does.
    let mut sc = common::data_scenario("buffer-overflow.toml");
    let faithful = Arc::new(sc.clone());
    assert_eq!(
        first_violation(&faithful, 10),
        None,
        "the faithful region drops past buffer-size"
    );
    sc.options.mutation = Mutation::RegionIgnoresBufferSize;
    let f = first_violation(&Arc::new(sc), 10).expect("the unbounded buffer was never caught");
    assert_eq!(f.invariant, Outcome::RoleInvariant, "{f:?}");
    assert!(
        f.detail.starts_with("region on node ")
            && f.detail
                .contains(": buffered-total-within-buffer-size: 51 buffered, buffer-size 50"),
        "{}",
        f.detail
    );
}

#[test]
fn shard_forgetting_a_passivation_buffer_breaks_message_lost() {
    let sc = scenario_with(
        "handoff-while-passivating.toml",
        Mutation::ShardForgetsPassivationBuffer,
    );
    let f = first_violation(&sc, 50).expect("the forgetful Shard was never caught");
    assert_eq!(f.invariant, Outcome::MessageLost, "{f:?}");
}

#[test]
fn the_faithful_shard_layer_loses_nothing_on_the_same_schedules() {
    let sc = scenario_with("handoff-while-passivating.toml", Mutation::None);
    assert_eq!(first_violation(&sc, 50), None);
}

#[test]
fn a_starter_that_never_starts_breaks_remembered_entity_liveness() {
    for store in ["ddata", "eventsourced"] {
        let sc = scenario_with(
            &format!("specs/remember-entities-node-crash-{store}.toml"),
            Mutation::StarterNeverStarts,
        );
        let f = first_violation(&sc, 20).expect("the idle starter was never caught");
        assert_eq!(f.invariant, Outcome::Liveness, "{store}: {f:?}");
        assert!(f.detail.starts_with("remembered entity "), "{store}: {f:?}");
    }
}

#[test]
fn coordinator_ignoring_graceful_shutdown_requests_breaks_graceful_shutdown_timeout() {
    // The fixed twin of §12 B17: the coordinator's node leaves by `Cluster.leave` and its
    // region hands off its shards under load, clean with Akka's fix. A coordinator that never
    // starts those hand-offs leaves the region to give up at GracefulShutdownTimeout.
    let name = "hazards/coordinator-stops-before-local-region-fixed.toml";
    assert_eq!(
        first_violation(&scenario_with(name, Mutation::None), 20),
        None
    );
    let sc = scenario_with(name, Mutation::CoordinatorIgnoresGracefulShutdownReq);
    let f = first_violation(&sc, 20).expect("the deaf coordinator was never caught");
    assert_eq!(f.invariant, Outcome::GracefulShutdownTimeout, "{f:?}");
}

#[test]
fn a_region_stopping_without_hand_off_on_a_graceful_leave_breaks_graceful_leave_loss() {
    // Akka's graceful-shutdown spec: the youngest node leaves under load. The broken region
    // stops at once on GracefulShutdown, as a crash would: messages forwarded to it meanwhile
    // are dead letters, what it buffered is lost.
    let faithful = scenario_with("specs/graceful-shutdown.toml", Mutation::None);
    assert_eq!(first_violation(&faithful, 30), None);
    let sc = scenario_with(
        "specs/graceful-shutdown.toml",
        Mutation::GracefulShutdownWithoutHandOff,
    );
    let f = first_violation(&sc, 30).expect("the region that stops at once was never caught");
    assert_eq!(f.invariant, Outcome::GracefulLeaveLoss, "{f:?}");
    assert!(
        f.detail.contains("which began a graceful leave"),
        "{}",
        f.detail
    );
}

#[test]
fn a_filled_buffer_drops_as_buffer_full_and_the_summary_shows_its_high_water_mark() {
    // A slow journal under heavy traffic: every region buffers up to buffer-size (30) for
    // shards without a home and drops the rest with reason buffer_full (SR:1281-1305).
    let sc = scenario_with("buffer-full.toml", Mutation::None);
    let sum = campaign::fuzz(&sc, 0, 20, 2, &|_| {});
    assert_eq!(
        sum.failures.first(),
        None,
        "the faithful region drops past buffer-size"
    );
    assert_eq!(sum.totals.buffer_high_water, 30, "{:?}", sum.totals);
    let (r, tracer) = campaign::run_seed(&sc, 0, TraceMode::Full);
    assert_eq!(r.stats.buffer_high_water, 30);
    let full = tracer
        .events()
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                TraceEvent::Drop {
                    reason: DropReason::BufferFull,
                    ..
                }
            )
        })
        .count() as u64;
    assert!(
        full > 0 && full == r.stats.drops,
        "{full} of {} drops",
        r.stats.drops
    );
    // The broken region keeps buffering: its own rule sees it.
    let sc = scenario_with("buffer-full.toml", Mutation::RegionIgnoresBufferSize);
    let f = first_violation(&sc, 10).expect("the unbounded buffer was never caught");
    assert_eq!(f.invariant, Outcome::RoleInvariant, "{f:?}");
    assert!(
        f.detail
            .contains(": buffered-total-within-buffer-size: 31 buffered, buffer-size 30"),
        "{}",
        f.detail
    );
}

#[test]
fn coordinator_answering_before_its_write_is_acknowledged_breaks_at_most_one() {
    // New shards are first addressed during a journal outage (a growing key space): the
    // faithful coordinator answers only once ShardHomeAllocated is durable; the broken one
    // answers at once, the write times out, and the recovered coordinator allocates the shard
    // a second time while the requester hosts it.
    let name = "faults/journal-outage-new-shards.toml";
    assert_eq!(
        first_violation(&scenario_with(name, Mutation::None), 20),
        None
    );
    let sc = scenario_with(name, Mutation::CoordinatorAnswersBeforeWrite);
    let f = first_violation(&sc, 20).expect("the early answer was never caught");
    assert_eq!(f.invariant, Outcome::AtMostOne, "{f:?}");
}

#[test]
fn region_reviving_stale_entities_when_a_shard_returns_breaks_no_duplicate() {
    // Shards move to a joining node and back to the regions they came from when it leaves;
    // a region that revives the entity actors its Shard had at the hand-off delivers to
    // incarnations that terminated then.
    let name = "shard-returns.toml";
    assert_eq!(
        first_violation(&scenario_with(name, Mutation::None), 20),
        None
    );
    let sc = scenario_with(name, Mutation::RegionKeepsStaleEntities);
    let f = first_violation(&sc, 20).expect("the stale entities were never caught");
    assert_eq!(f.invariant, Outcome::NoDuplicate, "{f:?}");
    assert!(
        f.detail.contains("which is not a live incarnation"),
        "{}",
        f.detail
    );
}
