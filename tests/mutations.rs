//! A checker that never fails proves nothing: for every invariant, a deliberately broken
//! protocol variant that the fuzzer catches.

mod common;

use shardsim::campaign::{self, Campaign};
use shardsim_core::protocol::settings::Mutation;
use shardsim_core::protocol::DropReason;
use shardsim_harness::scenario::{Outcome, Scenario};
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::path::Path;
use std::sync::Arc;

fn scenario_with(name: &str, mutation: Mutation) -> Arc<Scenario> {
    let mut sc = common::scenario(name);
    sc.options.mutation = mutation;
    sc.expect.outcome = Outcome::None;
    Arc::new(sc)
}

fn first_violation(sc: &Arc<Scenario>, seeds: u64) -> Option<campaign::Failure> {
    Campaign::new(sc, 0, seeds)
        .jobs(2)
        .run()
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
    let mut sc = common::scenario("faults/journal-blackhole.toml");
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

/// A region that discards a shard's buffer on `HostShard`. It lost
/// 5.4 million messages in 100,000 smoke schedules with no failure when the checker had no
/// end-of-run balance (before message-lost); the balance now names the vanished messages.
#[test]
fn region_discarding_its_buffer_on_host_shard_breaks_message_lost() {
    assert_eq!(
        first_violation(&scenario_with("smoke.toml", Mutation::None), 100),
        None
    );
    let sc = scenario_with("smoke.toml", Mutation::RegionDiscardsBufferOnHostShard);
    let f = first_violation(&sc, 20).expect("the discarded buffers were never caught");
    assert_eq!(f.invariant, Outcome::MessageLost, "{f:?}");
    assert!(
        f.detail.contains("vanished without a reason (c"),
        "{}",
        f.detail
    );
}

#[test]
fn a_filled_buffer_drops_as_buffer_full_and_the_summary_shows_its_high_water_mark() {
    // A slow journal under heavy traffic: every region buffers up to buffer-size (30) for
    // shards without a home and drops the rest with reason buffer_full (SR:1281-1305).
    let sc = scenario_with("buffer-full.toml", Mutation::None);
    let sum = Campaign::new(&sc, 0, 20).jobs(2).run();
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

/// One node's singleton manager orders members by age backwards,
/// so the youngest runs a second coordinator. No region registers with it and it never
/// writes to the journal, so journal-single-writer cannot see it; one-coordinator does.
#[test]
fn a_singleton_ordering_by_age_backwards_breaks_one_coordinator() {
    use shardsim_harness::trace::{TraceEvent, TraceMode};
    let sc = scenario_with("smoke.toml", Mutation::SingletonReversedAgeOrder);
    let f = first_violation(&sc, 20).expect("the second coordinator was never caught");
    assert_eq!(f.invariant, Outcome::OneCoordinator, "{f:?}");
    let (r, tracer) = campaign::run_seed(&sc, f.seed, TraceMode::Full);
    let v = r.violation.expect("the same violation");
    let second = v
        .detail
        .strip_prefix("a coordinator started on node ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok())
        .expect("names the node");
    assert!(
        !tracer
            .events()
            .iter()
            .any(|(_, e)| matches!(e, TraceEvent::Persisted { node, .. } if node.0 == second)),
        "the second coordinator wrote to the journal"
    );
}

/// Each side of a split brain (auto-down) runs its own coordinator; they cannot reach each
/// other, so one-coordinator stays silent and the scenario fails as declared (at-most-one).
#[test]
fn split_brain_coordinators_that_cannot_reach_each_other_are_not_flagged() {
    use shardsim_harness::trace::{TraceEvent, TraceMode};
    let sc = Arc::new(common::scenario("faults/auto-down-split-brain.toml"));
    let mut overlapped = 0;
    for seed in 0..10 {
        let (r, tracer) = campaign::run_seed(&sc, seed, TraceMode::Full);
        if let Some(v) = &r.violation {
            assert_ne!(v.invariant, Outcome::OneCoordinator, "seed {seed}: {v:?}");
        }
        let mut running = std::collections::BTreeSet::new();
        for (_, e) in tracer.events() {
            match e {
                TraceEvent::CoordinatorStarted { node, .. } => {
                    if !running.is_empty() {
                        overlapped += 1;
                    }
                    running.insert(*node);
                }
                TraceEvent::CoordinatorStopped { node, .. } | TraceEvent::NodeDown { node, .. } => {
                    running.remove(node);
                }
                _ => {}
            }
        }
    }
    assert!(overlapped > 0, "no split brain ran two coordinators");
}

/// A region that drops an acknowledged Shard on `BeginHandOff`, before the coordinator's
/// `HandOff`: its entities stop with a reason and nothing is lost or duplicated, so only
/// hosting-ack sees that the region stopped hosting what it acknowledged.
#[test]
fn a_region_forgetting_an_acknowledged_shard_breaks_hosting_ack() {
    let sc = scenario_with("smoke.toml", Mutation::RegionForgetsAcknowledgedShard);
    let f = first_violation(&sc, 20).expect("the forgotten shard was never caught");
    assert_eq!(f.invariant, Outcome::HostingAck, "{f:?}");
    assert!(
        f.detail.contains("stopped hosting it without a HandOff"),
        "{}",
        f.detail
    );
}

#[test]
fn new_allocation_rounding_down_breaks_rebalance_quiescence() {
    // The new algorithm (§10.4) scaling out to 5 nodes with 22 shards: the faithful one settles
    // at 5, 5, 4, 4, 4 and stops; with optimal = ⌊22 / 5⌋ = 4 a region of 5 is always above
    // it, and its shard goes to a region of 4, round after round.
    let faithful = scenario_with("allocation-new.toml", Mutation::None);
    assert_eq!(first_violation(&faithful, 30), None);
    let sc = scenario_with("allocation-new.toml", Mutation::NewAllocationRoundsDown);
    let f = first_violation(&sc, 30).expect("the endless rebalancing was never caught");
    assert_eq!(f.invariant, Outcome::RebalanceQuiescence, "{f:?}");
    assert!(f.detail.contains("the shards keep moving"), "{}", f.detail);
}

#[test]
fn a_variant_raising_the_reorder_rate_is_caught_by_the_rate_band() {
    // hazards/reorder-across-handoff.toml declares the §11.3 reorder's rate band. Akka's
    // behaviour stays inside it; a region that flushes its buffers newest first breaks
    // per-sender order in nearly every schedule, the expected invariant, so only the band
    // tells the two apart.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sim-scenarios/hazards/reorder-across-handoff.toml");
    let sc = Scenario::load(&path).unwrap();
    let band = sc
        .expect
        .rate_band()
        .expect("the hazard declares a rate band");
    let n = 120;
    let rate = |sc: &Scenario| {
        let sum = Campaign::new(&Arc::new(sc.clone()), 0, n).jobs(2).run();
        assert_eq!(sum.unexpected(sc.expect.outcome).count(), 0);
        campaign::rate_check(sum.expected_found, n, band)
    };
    let faithful = rate(&sc);
    assert!(faithful.ok(), "{}", faithful.describe());
    let mut broken = sc.clone();
    broken.options.mutation = Mutation::BufferOutOfOrder;
    let broken = rate(&broken);
    assert!(!broken.ok(), "{}", broken.describe());
    assert!(broken.rate() > 0.8, "{}", broken.describe());
}
