//! What the spec scenarios under `sim-scenarios/specs/` claim beyond the checkers, read from
//! their full traces over a few seeds each: the assertions of the Akka tests they mirror that no
//! invariant covers (an entity that passivated stays stopped; remembered entities start where
//! a rebalance moved their shard without traffic; the idle strategy passivates, and is off with
//! remember-entities). `sim-scenarios/README.md` lists them.

mod common;

use shardsim::campaign::run_seed;
use shardsim_core::ids::{EntityId, NodeId, SenderId};
use shardsim_core::protocol::StopReason;
use shardsim_core::time::Instant;
use shardsim_harness::scenario::Scenario;
use shardsim_harness::trace::{TraceEvent, TraceMode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const SEEDS: u64 = 20;

fn spec(name: &str) -> Arc<Scenario> {
    let path = common::root().join("sim-scenarios/specs").join(name);
    Arc::new(Scenario::load(&path).unwrap_or_else(|e| panic!("{e}")))
}

/// One incarnation of an entity, as the trace shows it.
struct Incarnation {
    entity: EntityId,
    node: NodeId,
    started: Instant,
    /// The entity's previous incarnation ended by passivation.
    after_passivation: bool,
    /// It was delivered a message sent before it started: that message started it.
    started_by_message: bool,
}

/// What one schedule's trace says about entity starts and stops.
#[derive(Default)]
struct Lifecycle {
    incarnations: BTreeMap<u64, Incarnation>,
    stops: BTreeMap<StopReason, usize>,
    /// (entity, node) → when a Shard on that node loaded it from its store.
    loads: BTreeMap<(EntityId, NodeId), Vec<Instant>>,
    last_send: Instant,
    /// Entities whose last stop was a passivation and that did not start again.
    passivated_at_end: usize,
}

fn lifecycle(sc: &Arc<Scenario>, seed: u64) -> Lifecycle {
    let (r, tracer) = run_seed(sc, seed, TraceMode::Full);
    assert!(
        r.violation.is_none(),
        "{} seed {seed}: {:?}",
        sc.name,
        r.violation
    );
    let mut l = Lifecycle::default();
    let mut sent: BTreeMap<(SenderId, EntityId, u64), Instant> = BTreeMap::new();
    let mut passivated: BTreeSet<EntityId> = BTreeSet::new();
    for (t, ev) in tracer.events() {
        match ev {
            TraceEvent::Send {
                sender,
                entity,
                seq,
                ..
            } => {
                sent.insert((*sender, *entity, *seq), *t);
                l.last_send = *t;
            }
            TraceEvent::Deliver {
                sender,
                entity,
                seq,
                incarnation,
                ..
            } => {
                let at = sent.get(&(*sender, *entity, *seq)).copied();
                if let Some(i) = l.incarnations.get_mut(incarnation) {
                    if at.is_some_and(|s| s <= i.started) {
                        i.started_by_message = true;
                    }
                }
            }
            TraceEvent::StoreRead { node, entities, .. } => {
                for e in entities {
                    l.loads.entry((*e, *node)).or_default().push(*t);
                }
            }
            TraceEvent::EntityStarted {
                entity,
                node,
                incarnation,
                ..
            } => {
                l.incarnations.insert(
                    *incarnation,
                    Incarnation {
                        entity: *entity,
                        node: *node,
                        started: *t,
                        after_passivation: passivated.remove(entity),
                        started_by_message: false,
                    },
                );
            }
            TraceEvent::EntityStopped { entity, reason, .. } => {
                *l.stops.entry(*reason).or_default() += 1;
                if *reason == StopReason::Passivation {
                    passivated.insert(*entity);
                } else {
                    passivated.remove(entity);
                }
            }
            _ => {}
        }
    }
    l.passivated_at_end = passivated.len();
    l
}

impl Lifecycle {
    fn stops(&self, reason: StopReason) -> usize {
        self.stops.get(&reason).copied().unwrap_or(0)
    }

    /// Incarnations started with no message for them (remembered entities started by the
    /// region's starter, or restarted after their back-off).
    fn started_without_message(&self) -> impl Iterator<Item = &Incarnation> {
        self.incarnations.values().filter(|i| !i.started_by_message)
    }

    /// Whether a Shard on `i`'s node loaded `i`'s entity from its store shortly before `i`
    /// started: the starter's `StartEntity` for it was still unacknowledged.
    fn loaded_shortly_before(&self, i: &Incarnation) -> bool {
        self.loads.get(&(i.entity, i.node)).is_some_and(|ts| {
            ts.iter()
                .any(|l| *l <= i.started && i.started.0 - l.0 <= 5_000_000)
        })
    }
}

/// ClusterShardingSpec "permanently stop entities which passivate": an entity that passivated
/// starts again only for a message sent to it. The one exception is Akka's too: a Shard that
/// just loaded the entity has its starter's `StartEntity` in flight, and a `StartEntity` that
/// finds the entity passivated starts it again (Akka buffers it behind the passivation and
/// restarts at once; the model drops it there and the starter's retry restarts it).
#[test]
fn passivated_entities_stay_stopped() {
    let sc = spec("remember-entities-passivate-stops-permanently.toml");
    let (mut passivations, mut stopped_at_end, mut moved) = (0, 0, 0);
    for seed in 0..SEEDS {
        let l = lifecycle(&sc, seed);
        passivations += l.stops(StopReason::Passivation);
        stopped_at_end += l.passivated_at_end;
        for i in l.started_without_message() {
            if i.after_passivation {
                assert!(
                    l.loaded_shortly_before(i),
                    "seed {seed}: {} passivated, then started on node {} at t={} with no message for it",
                    i.entity,
                    i.node,
                    i.started
                );
            }
            if i.node == NodeId(2) && i.started > l.last_send {
                moved += 1;
            }
        }
    }
    assert!(passivations > 0, "no entity passivated");
    assert!(stopped_at_end > 0, "no passivated entity left stopped");
    assert!(
        moved > 0,
        "no remembered entity started on the joining node"
    );
}

/// ClusterShardingSpec "ensure rebalance restarts shards": after traffic stopped, shards move
/// to the node that joins, and their remembered entities start there with no message (the spec
/// wants at least 2 on `fifth`).
#[test]
fn rebalance_starts_remembered_entities_on_the_new_node() {
    let sc = spec("remember-entities-rebalance-restarts-shards.toml");
    for seed in 0..SEEDS {
        let l = lifecycle(&sc, seed);
        let on_new_node = l
            .started_without_message()
            .filter(|i| i.node == NodeId(1) && i.started > l.last_send)
            .count();
        assert!(
            on_new_node >= 2,
            "seed {seed}: {on_new_node} remembered entities started on node 1"
        );
    }
}

/// ClusterShardingSpec "restart entities which stop without passivating": entities that stop
/// themselves or crash come back with no message (entity-restart-backoff), also after traffic
/// has stopped.
#[test]
fn stopped_entities_restart_by_themselves() {
    let sc = spec("remember-entities-stop-without-passivating.toml");
    let (mut stopped, mut restarted_late) = (0, 0);
    for seed in 0..SEEDS {
        let l = lifecycle(&sc, seed);
        stopped += l.stops(StopReason::SelfStop) + l.stops(StopReason::Crashed);
        restarted_late += l
            .started_without_message()
            .filter(|i| i.started > l.last_send)
            .count();
        assert_eq!(l.stops(StopReason::Passivation), 0, "seed {seed}");
    }
    assert!(
        stopped > 0 && restarted_late > 0,
        "{stopped} stops, {restarted_late} restarts"
    );
}

/// IdleSpec: with idle-entity.timeout 1 s and no entity-initiated passivation, entities are
/// passivated; with remember-entities on, the idle strategy is off and none is.
#[test]
fn idle_strategy_passivates_unless_remembering() {
    let idle = spec("passivation-idle.toml");
    let remember = spec("passivation-idle-remember.toml");
    for seed in 0..SEEDS {
        assert!(
            lifecycle(&idle, seed).stops(StopReason::Passivation) > 0,
            "seed {seed}"
        );
        let l = lifecycle(&remember, seed);
        assert_eq!(l.stops(StopReason::Passivation), 0, "seed {seed}");
        assert_eq!(l.stops(StopReason::Forced), 0, "seed {seed}");
    }
}

/// ClusterShardingGracefulShutdownSpec (`graceful-shutdown.toml`, node 2 leaves at 15 s) and
/// the Oldest variant (`graceful-shutdown-oldest.toml`, node 0 with the coordinator): the
/// leaving node's region stops by completing its graceful shutdown before the node goes down,
/// and none of its entities is killed by the stop (they all stopped by hand-off or on their
/// own); with the oldest leaving, the coordinator is handed over (`HandOverDone`) and runs on
/// the next oldest as the old node exits, instead of after its removal.
#[test]
fn graceful_leave_hands_everything_over() {
    use shardsim_core::protocol::Msg;
    for (file, leaver) in [
        ("graceful-shutdown.toml", 2),
        ("graceful-shutdown-oldest.toml", 0),
    ] {
        let sc = spec(file);
        for seed in 0..SEEDS {
            let (r, tracer) = run_seed(&sc, seed, TraceMode::Full);
            assert!(
                r.violation.is_none(),
                "{file} seed {seed}: {:?}",
                r.violation
            );
            let leaver = NodeId(leaver);
            let (mut stopped_region, mut down, mut hand_over_done) = (None, None, None);
            let mut new_coordinator = None;
            for (t, ev) in tracer.events() {
                match ev {
                    TraceEvent::RegionStopped { node, reason } if *node == leaver => {
                        assert_eq!(reason, "graceful shutdown complete", "{file} seed {seed}");
                        stopped_region.get_or_insert(*t);
                    }
                    TraceEvent::NodeDown { node, reason, .. } if *node == leaver => {
                        assert_eq!(reason, "left", "{file} seed {seed}");
                        down.get_or_insert(*t);
                    }
                    TraceEvent::EntityStopped { node, reason, .. }
                        if *node == leaver && down.is_none() =>
                    {
                        assert!(
                            !matches!(reason, StopReason::NodeDown | StopReason::RegionStopped),
                            "{file} seed {seed} at {t:?}: an entity was killed by the leave"
                        );
                    }
                    TraceEvent::Msg {
                        from,
                        msg: Msg::HandOverDone,
                        ..
                    } if *from == leaver => {
                        hand_over_done.get_or_insert(*t);
                    }
                    TraceEvent::CoordinatorStarted { node, .. }
                        if *node != leaver && hand_over_done.is_some() =>
                    {
                        new_coordinator.get_or_insert((*t, *node));
                    }
                    _ => {}
                }
            }
            let (stopped_region, down) = (stopped_region.unwrap(), down.unwrap());
            assert!(stopped_region <= down, "{file} seed {seed}");
            if leaver == NodeId(0) {
                let done = hand_over_done.expect("the coordinator was handed over");
                let (started, on) = new_coordinator.expect("a new coordinator");
                assert_eq!(on, NodeId(1), "{file} seed {seed}: the next oldest");
                // It starts on HandOverDone, within milliseconds of the old node's exit; a
                // take-over would wait for the removal (a gossip round and more).
                assert_eq!(started, done, "{file} seed {seed}");
                assert!(
                    started.0 - down.0 < 100_000,
                    "{file} seed {seed}: {started:?} after {down:?}"
                );
            }
        }
    }
}

/// §12 B17 (`sim-scenarios/hazards/coordinator-stops-before-local-region*.toml`): the
/// coordinator's node leaves by `Cluster.leave` and is handed over while its region still hands
/// off. Akka's `terminate()` (SC:1148-1177) tells the local region `GracefulShutdown` and stops
/// only after that region stopped; the pre-fix coordinator stops first.
#[test]
fn terminate_waits_for_the_local_region_to_stop() {
    use shardsim_core::protocol::Msg;
    for (file, waits) in [
        ("coordinator-stops-before-local-region-fixed.toml", true),
        ("coordinator-stops-before-local-region.toml", false),
    ] {
        let path = common::root().join("sim-scenarios/hazards").join(file);
        let sc = Arc::new(Scenario::load(&path).unwrap_or_else(|e| panic!("{e}")));
        for seed in 0..SEEDS / 4 {
            let (_, tracer) = run_seed(&sc, seed, TraceMode::Full);
            let leaver = NodeId(0);
            let (mut region_stopped, mut coordinator_stopped, mut told) = (None, None, false);
            for (t, ev) in tracer.events() {
                match ev {
                    TraceEvent::RegionStopped { node, .. } if *node == leaver => {
                        region_stopped.get_or_insert(*t);
                    }
                    TraceEvent::CoordinatorStopped { node, .. } if *node == leaver => {
                        coordinator_stopped.get_or_insert(*t);
                    }
                    TraceEvent::Msg {
                        from,
                        to,
                        msg: Msg::GracefulShutdown,
                        ..
                    } if *from == leaver && *to == leaver => told = true,
                    _ => {}
                }
            }
            let (r, c) = (region_stopped.unwrap(), coordinator_stopped.unwrap());
            assert_eq!(told, waits, "{file} seed {seed}");
            assert_eq!(
                r <= c,
                waits,
                "{file} seed {seed}: region {r:?}, coordinator {c:?}"
            );
        }
    }
}
