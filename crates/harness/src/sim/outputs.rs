//! What every host does alike with a node's outputs: the own world ([`super::World`]) and the
//! madsim host (`crate::host::madsim`) both call these, so that the same outputs give the same
//! trace events, the same counters and the same draws on either host.

use super::Stats;
use crate::scenario::{Scenario, WorkloadSpec};
use crate::trace::{Place, TraceEvent};
use shardsim_core::ids::{NodeId, NodeInc};
use shardsim_core::node::{Fact, Node};
use shardsim_core::protocol::{DropReason, EntityAct, Envelope, LocalDelay};
use shardsim_core::rng::Rng;

/// How long a node's local message takes, in µs: a message between its actors takes the
/// scenario's `local-delay-us` (a mailbox hop); an entity's stop and a Shard's initialisation
/// take a time drawn from their ranges (ms) on `rng` (the entity stream), plus that hop.
#[inline]
pub fn local_delay_us(sc: &Scenario, delay: LocalDelay, rng: &mut Rng) -> u64 {
    match delay {
        LocalDelay::Message => sc.entities.local_delay_us,
        LocalDelay::EntityStop | LocalDelay::ShardInit => {
            let [lo, hi] = if delay == LocalDelay::EntityStop {
                sc.entities.stop_ms
            } else {
                sc.entities.shard_init_ms
            };
            let ms = if lo == hi { lo } else { rng.range(lo, hi) };
            ms * 1_000 + sc.entities.local_delay_us
        }
    }
}

/// The entity's own decision after a delivered message (an input to its node after this
/// one), drawn on `rng` (the entity stream) from the workload's probabilities: passivate
/// (perhaps ignoring its stop message), stop itself, crash, or fail its Shard.
#[inline]
pub fn entity_act(w: &WorkloadSpec, rng: &mut Rng) -> Option<EntityAct> {
    let (p, q, s) = (
        w.passivate_probability,
        w.ignore_stop_probability,
        w.self_stop_probability,
    );
    if p > 0.0 && rng.chance(p) {
        Some(EntityAct::Passivate {
            ignores_stop: q > 0.0 && rng.chance(q),
        })
    } else if s > 0.0 && rng.chance(s) {
        Some(EntityAct::StopSelf)
    } else if w.crash_probability > 0.0 && rng.chance(w.crash_probability) {
        Some(EntityAct::Crash)
    } else if w.shard_failure_probability > 0.0 && rng.chance(w.shard_failure_probability) {
        Some(EntityAct::FailShard)
    } else {
        None
    }
}

/// The trace event of a fact of `node`'s incarnation `inc`, counting it in `stats`; `None`
/// when it is untraced detail (`traced` false) or an observation, which the hosts check and
/// trace themselves before they call this.
#[inline]
pub fn fact_event(
    node: NodeId,
    inc: NodeInc,
    f: Fact,
    traced: bool,
    stats: &mut Stats,
) -> Option<TraceEvent> {
    match f {
        Fact::StoreWritten {
            shard,
            started,
            stopped,
        } => Some(TraceEvent::StoreWrite {
            node,
            shard,
            started,
            stopped,
        }),
        Fact::StoreRead { shard, entities } => Some(TraceEvent::StoreRead {
            node,
            shard,
            entities,
        }),
        Fact::TimerFired(timer) => traced.then_some(TraceEvent::Timer { node, timer }),
        Fact::View(members) => Some(TraceEvent::MemberView { node, members }),
        Fact::Cluster(event) => traced.then_some(TraceEvent::Cluster { node, event }),
        Fact::JoinAgain(seeds) => traced.then_some(TraceEvent::JoinAgain { node, seeds }),
        Fact::CoordinatorStarted {
            generation,
            replayed,
        } => {
            stats.coordinator_starts += 1;
            Some(TraceEvent::CoordinatorStarted {
                node,
                incarnation: inc.0,
                generation,
                replayed,
            })
        }
        Fact::PersistAcked { gen } => Some(TraceEvent::PersistAcked {
            node,
            incarnation: inc.0,
            generation: gen,
        }),
        Fact::RegionCoordinator(coordinator) => {
            Some(TraceEvent::RegionCoordinator { node, coordinator })
        }
        Fact::RoleBreach(b) => Some(TraceEvent::RoleBreach {
            node,
            role: b.role.to_string(),
            rule: b.rule.to_string(),
            detail: b.detail,
        }),
        Fact::RegionStopped { reason } => Some(TraceEvent::RegionStopped {
            node,
            reason: reason.to_string(),
        }),
        Fact::CoordinatorStopped { reason } => Some(TraceEvent::CoordinatorStopped {
            node,
            reason: reason.to_string(),
        }),
        Fact::RecoveryFailed { reason } => Some(TraceEvent::RecoveryFailed { node, reason }),
        // Checked and traced by the host.
        Fact::Observe { .. } => None,
    }
}

/// The user messages a running node's region and its Shards buffer, each with its place, for
/// the conservation balance at the run's end (the `pending` lines).
pub fn buffered_user_messages(node: NodeId, n: &Node, out: &mut Vec<(Envelope, NodeId, Place)>) {
    if let Some(r) = n.region() {
        let in_region = r.buffered_messages().count();
        for (k, env) in r.all_buffered_messages().enumerate() {
            let place = if k < in_region {
                Place::RegionBuffer
            } else {
                Place::ShardBuffer
            };
            out.push((env, node, place));
        }
    }
}

/// The trace event of a user message dropped at `node` for `reason`, counted in `stats`.
#[inline]
pub fn drop_event(
    node: NodeId,
    env: Envelope,
    reason: DropReason,
    stats: &mut Stats,
) -> TraceEvent {
    stats.drops += 1;
    *stats.drops_by_reason.entry(reason).or_default() += 1;
    TraceEvent::Drop {
        sender: env.sender,
        entity: env.entity,
        seq: env.seq,
        reason,
        node,
    }
}
