//! The membership gates read from full traces: `min-nr-of-members`
//! (ClusterShardingMinMembersSpec), sharding on a role, and the rebalance gate during a rolling
//! update (§12 B38), which no invariant sees: with Akka's `isAGoodTimeToRebalance` no rebalance
//! starts while the coordinator's regions run two app versions; with the pre-fix coordinator
//! some do. `sim-scenarios/README.md` and `sim-scenarios/hazards/README.md` list them.

mod common;
use common::load;

use shardsim::campaign::run_seed;
use shardsim_core::ids::{NodeId, RegionRef, SenderId};
use shardsim_core::membership::MembershipEvent;
use shardsim_core::protocol::{CoordinatorEvent, Member, MemberStatus};
use shardsim_core::time::Instant;
use shardsim_harness::fault::Fault;
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const SEEDS: u64 = 20;

fn events(sc: &Arc<Scenario>, seed: u64) -> Vec<(Instant, TraceEvent)> {
    let (r, tracer) = run_seed(sc, seed, TraceMode::Full);
    assert!(
        r.violation.is_none(),
        "{} seed {seed}: {:?}",
        sc.name,
        r.violation
    );
    tracer.events().to_vec()
}

/// ClusterShardingMinMembersSpec: with min-nr-of-members 3 nobody is Up, and no coordinator
/// runs, before the third node joined; no shard is allocated before the third region
/// registered; everything sent before is buffered and delivered; the shards go to all three.
#[test]
fn min_members_spec() {
    let sc = load("specs/min-members.toml");
    for seed in 0..SEEDS {
        let ev = events(&sc, seed);
        let third = ev
            .iter()
            .find_map(|(t, e)| {
                matches!(e, TraceEvent::NodeUp { node, .. } if node.0 == 2).then_some(*t)
            })
            .expect("the third node joins");
        let mut registered = Vec::new();
        let mut sent_before: BTreeSet<(SenderId, u32, u64)> = BTreeSet::new();
        let mut hosts: BTreeSet<NodeId> = BTreeSet::new();
        for (t, e) in &ev {
            match e {
                TraceEvent::MemberView { members, .. } if *t < third => {
                    assert!(
                        members.iter().all(|m| m.status == MemberStatus::Joining),
                        "seed {seed}: a member is Up at {t:?}, before the third joined"
                    );
                }
                TraceEvent::CoordinatorStarted { .. } => {
                    assert!(*t > third, "seed {seed}: a coordinator at {t:?}");
                }
                TraceEvent::Persisted {
                    event: CoordinatorEvent::ShardRegionRegistered { .. },
                    ..
                } => registered.push(*t),
                TraceEvent::AllocationDecided { region, .. } => {
                    assert!(
                        registered.len() >= 3,
                        "seed {seed}: a shard allocated at {t:?} with {} regions registered",
                        registered.len()
                    );
                    hosts.insert(region.node);
                }
                TraceEvent::Send {
                    sender,
                    entity,
                    seq,
                    ..
                } if *t < third => {
                    sent_before.insert((*sender, entity.0, *seq));
                }
                TraceEvent::Deliver {
                    sender,
                    entity,
                    seq,
                    ..
                } => {
                    sent_before.remove(&(*sender, entity.0, *seq));
                }
                _ => {}
            }
        }
        assert!(
            sent_before.is_empty(),
            "seed {seed}: {} messages sent before the third joined were never delivered",
            sent_before.len()
        );
        assert_eq!(hosts.len(), 3, "seed {seed}: shards on {hosts:?}");
    }
}

/// Sharding on the role "shard": the frontend (node 0, the oldest member) never runs the
/// coordinator and never hosts a shard, but what it sends is delivered; the coordinator runs on
/// node 1, the oldest with the role, and when node 1 leaves it is handed over to node 2, not
/// to the older frontend.
#[test]
fn sharding_role_scenario() {
    let sc = load("sharding-role.toml");
    for seed in 0..SEEDS {
        let ev = events(&sc, seed);
        let mut coordinators: Vec<NodeId> = Vec::new();
        let mut frontend_senders: BTreeSet<SenderId> = BTreeSet::new();
        let mut frontend_delivered = 0;
        for (_, e) in &ev {
            match e {
                TraceEvent::CoordinatorStarted { node, .. } => coordinators.push(*node),
                TraceEvent::ShardHosted { node, .. } => {
                    assert_ne!(node.0, 0, "seed {seed}: the frontend hosts a shard");
                }
                TraceEvent::AllocationDecided { region, .. } => {
                    assert_ne!(
                        region.node.0, 0,
                        "seed {seed}: a shard allocated to the frontend"
                    );
                }
                TraceEvent::Send { sender, node, .. } if node.0 == 0 => {
                    frontend_senders.insert(*sender);
                }
                TraceEvent::Deliver { sender, .. } if frontend_senders.contains(sender) => {
                    frontend_delivered += 1;
                }
                _ => {}
            }
        }
        assert_eq!(
            coordinators.first(),
            Some(&NodeId(1)),
            "seed {seed}: {coordinators:?}"
        );
        assert!(
            coordinators.contains(&NodeId(2)) && !coordinators.contains(&NodeId(0)),
            "seed {seed}: {coordinators:?}"
        );
        assert!(
            frontend_delivered > 100,
            "seed {seed}: {frontend_delivered}"
        );
    }
}

/// Rebalance hand-offs (not a graceful shutdown's) that start while the regions the
/// coordinator knows run more than one app version in its node's view.
fn rebalances_during_update(sc: &Arc<Scenario>, seed: u64) -> (usize, usize) {
    let ev = events(sc, seed);
    let mut regions: BTreeSet<RegionRef> = BTreeSet::new();
    let mut views: BTreeMap<NodeId, Vec<Member>> = BTreeMap::new();
    // Node incarnations told to leave (their hand-offs are the graceful shutdown's).
    let mut incarnation: BTreeMap<NodeId, u32> = BTreeMap::new();
    let mut leaving: BTreeSet<(NodeId, u32)> = BTreeSet::new();
    let (mut during, mut all) = (0, 0);
    for (_, e) in &ev {
        match e {
            TraceEvent::NodeUp {
                node,
                incarnation: i,
            } => {
                incarnation.insert(*node, *i);
            }
            TraceEvent::Fault {
                fault: Fault::Leave { node, .. },
            } => {
                leaving.insert((*node, incarnation[node]));
            }
            TraceEvent::MemberView { node, members } => {
                views.insert(*node, members.clone());
            }
            TraceEvent::Persisted { event, .. } => match event {
                CoordinatorEvent::ShardRegionRegistered { region } => {
                    regions.insert(*region);
                }
                CoordinatorEvent::ShardRegionTerminated { region } => {
                    regions.remove(region);
                }
                _ => {}
            },
            TraceEvent::RebalanceStarted {
                from, coordinator, ..
            } => {
                if leaving.contains(&(*from, incarnation[from])) {
                    continue;
                }
                all += 1;
                let view = &views[coordinator];
                let versions: BTreeSet<u32> = view
                    .iter()
                    .filter(|m| regions.contains(&m.region()))
                    .map(|m| m.app_version)
                    .collect();
                if versions.len() > 1 {
                    during += 1;
                }
            }
            _ => {}
        }
    }
    (during, all)
}

/// §12 B38: with Akka's gate (2.6.10+) no rebalance starts while the regions run two app
/// versions; with the pre-fix coordinator (`rebalance-during-rolling-update`) rebalances do.
#[test]
fn no_rebalance_during_a_rolling_update() {
    let fixed = load("hazards/rebalance-during-rolling-update-fixed.toml");
    let pre = load("hazards/rebalance-during-rolling-update.toml");
    let (mut pre_during, mut fixed_all) = (0, 0);
    for seed in 0..10 {
        let (during, all) = rebalances_during_update(&fixed, seed);
        assert_eq!(
            during, 0,
            "fixed seed {seed}: {during} of {all} during the update"
        );
        fixed_all += all;
        pre_during += rebalances_during_update(&pre, seed).0;
    }
    assert!(
        pre_during >= 10,
        "pre-fix: {pre_during} rebalances during the update over 10 seeds"
    );
    // The fixed coordinator still rebalances, once the update is over.
    assert!(fixed_all > 0);
}

/// §12 B7: with the pre-fix singleton manager (`singleton-prefers-newest-app-version`) node 0's
/// new incarnation, the youngest member but on the newer version, starts the coordinator while
/// older members are Up, while node 1's coordinator still runs (it hands over with `Terminate`
/// and waits for its local region's hand-offs, §4.5): two coordinators at once. With the fix
/// (age ordering) the coordinator only ever moves by hand-over, to the oldest member, and never
/// starts while another runs. The one-coordinator oracle stops the pre-fix run there (its
/// trace ends with that start).
#[test]
fn singleton_placement_by_age_or_by_app_version() {
    let fixed = load("hazards/singleton-prefers-newest-app-version-fixed.toml");
    let mut pre = (*load("hazards/singleton-prefers-newest-app-version.toml")).clone();
    pre.journal.check_single_writer = false; // the overlap, not the stray write
    let pre = Arc::new(pre);
    for seed in 0..SEEDS {
        for (sc, prefix) in [(&fixed, false), (&pre, true)] {
            let ev = if prefix {
                let (r, tracer) = run_seed(sc, seed, TraceMode::Full);
                assert_eq!(
                    r.violation.map(|v| v.invariant),
                    Some(shardsim_harness::scenario::Outcome::OneCoordinator),
                    "pre-fix seed {seed}"
                );
                tracer.events().to_vec()
            } else {
                events(sc, seed)
            };
            let mut views: BTreeMap<NodeId, Vec<Member>> = BTreeMap::new();
            let (mut younger_started, mut overlapping) = (0, 0);
            let mut running: BTreeSet<NodeId> = BTreeSet::new();
            for (_, e) in &ev {
                match e {
                    TraceEvent::MemberView { node, members } => {
                        views.insert(*node, members.clone());
                    }
                    TraceEvent::CoordinatorStarted {
                        node, incarnation, ..
                    } => {
                        let view = &views[node];
                        let me = view
                            .iter()
                            .find(|m| m.node == *node && m.inc.0 == *incarnation)
                            .expect("a member");
                        let older_up = view.iter().any(|m| {
                            m.hosting && m.up_number < me.up_number && m.status == MemberStatus::Up
                        });
                        if older_up {
                            younger_started += 1;
                        }
                        if !running.is_empty() {
                            overlapping += 1;
                        }
                        running.insert(*node);
                    }
                    TraceEvent::CoordinatorStopped { node, .. }
                    | TraceEvent::NodeDown { node, .. } => {
                        running.remove(node);
                    }
                    _ => {}
                }
            }
            if prefix {
                assert!(
                    younger_started > 0 && overlapping > 0,
                    "pre-fix seed {seed}"
                );
            } else {
                assert_eq!((younger_started, overlapping), (0, 0), "fixed seed {seed}");
            }
        }
    }
}

/// A scale-out from 3 to 4 nodes (Akka's default allocation algorithm, the deprecated one: up to
/// 3 hand-offs at once, every 2 s)
/// with node 1 crashed at `crash_ms` and downed by keep-majority later.
fn scale_out_with_a_crash(crash_ms: u64, pre_fix: bool) -> Arc<Scenario> {
    let text = format!(
        r#"name = "scale-out-with-a-crash"
description = "tests/gates.rs: no rebalance while a member is unreachable"

[options]
rebalance-during-rolling-update = {pre_fix}

[cluster]
nodes = 4
join-at-ms = [0, 0, 0, 15000]

[entities]
count = 120
shards = 24

[workload]
senders-per-node = 2
interval-ms = [10, 40]
stop-ms = 70000

[membership.downing]
provider = "split-brain-resolver"
strategy = "keep-majority"

[settings]
rebalance-interval-ms = 2000

[[faults]]
at-ms = {crash_ms}
kind = "crash"
node = 1

[run]
duration-ms = 80000
"#
    );
    let path = common::root().join("sim-scenarios/scale-out-with-a-crash.toml");
    Arc::new(Scenario::parse(&text, &path).unwrap_or_else(|e| panic!("{e}")))
}

/// Rebalances the coordinator on node 0 starts while node 0 observes node 1 unreachable (from
/// its own failure detector's observation to node 1's removal from its view), and in all.
fn rebalances_while_unreachable(sc: &Arc<Scenario>, seed: u64) -> (usize, usize) {
    let (mut unreachable, mut during, mut all) = (false, 0, 0);
    for (_, e) in events(sc, seed) {
        match e {
            TraceEvent::Cluster {
                node: NodeId(0),
                event: MembershipEvent::Unreachable { subject, .. },
            } if subject.node == NodeId(1) => {
                unreachable = true;
            }
            TraceEvent::MemberView {
                node: NodeId(0),
                members,
            } if !members.iter().any(|m| m.node == NodeId(1)) => {
                unreachable = false;
            }
            TraceEvent::RebalanceStarted {
                coordinator: NodeId(0),
                ..
            } => {
                all += 1;
                during += usize::from(unreachable);
            }
            _ => {}
        }
    }
    (during, all)
}

/// §12 B38, the reachability part of `isAGoodTimeToRebalance`: node 1 crashes while the
/// scale-out to node 3 is rebalancing; with Akka's gate the coordinator starts no rebalance
/// while its node observes node 1 unreachable, and goes on once node 1 is removed. The
/// pre-fix coordinator (no gate) does rebalance in that window, so the window is one where
/// the strategy wants to move shards. This covers the node's wiring of its unreachable set
/// to the coordinator (a survivor of cargo-mutants never told it: `content_rev` as 0).
#[test]
fn no_rebalance_while_a_member_is_unreachable() {
    let (mut pre_during, mut fixed_all) = (0, 0);
    for seed in 0..6 {
        let crash_ms = 16_000 + 500 * seed;
        let (during, all) =
            rebalances_while_unreachable(&scale_out_with_a_crash(crash_ms, false), seed);
        assert_eq!(
            during, 0,
            "seed {seed}: {during} of {all} while node 1 is unreachable"
        );
        fixed_all += all;
        pre_during += rebalances_while_unreachable(&scale_out_with_a_crash(crash_ms, true), seed).0;
    }
    assert!(
        pre_during > 0,
        "pre-fix: no rebalance while node 1 is unreachable"
    );
    assert!(fixed_all > 0);
}
