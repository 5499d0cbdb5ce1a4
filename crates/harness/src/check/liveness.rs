//! The **liveness** rule (when `liveness.enabled`): after every fault healed, at the end of the
//! run ([`TraceEvent::RunEnd`]) nothing may be pending: a coordinator runs, every region is
//! registered with one, every shard that received messages in the checked window has a home in
//! the first running coordinator's allocations, none of its hand-offs has outlived
//! handoff-timeout, and every message sent in the window was delivered or dropped.
//!
//! The coordinator's allocations are its durable state: the checker keeps a copy of the
//! journal, replays it when a coordinator starts (as recovery does), and applies each write
//! when its acknowledgement reaches the coordinator (as `persist` does).

use super::{Invariant, Violation};
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::{EntityId, NodeId, RegionRef, SenderId, ShardId};
use shardsim_core::protocol::coordinator::CoordinatorState;
use shardsim_core::protocol::CoordinatorEvent;
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// One running coordinator, as far as liveness needs it.
#[derive(Debug)]
struct Coord {
    incarnation: u32,
    generation: u32,
    /// Its durable state (allocations).
    state: CoordinatorState,
    /// The write appended by the journal and not yet acknowledged.
    in_flight: Option<CoordinatorEvent>,
    /// Shards it is handing off.
    handoffs: BTreeSet<ShardId>,
}

/// The state of the liveness rule.
#[derive(Debug, Default)]
pub(super) struct Liveness {
    /// Whether the rule is on.
    pub(super) on: bool,
    /// handoff-timeout, µs.
    pub(super) handoff_timeout_us: u64,
    /// The checked window (µs, inclusive).
    window: Option<(u64, u64)>,
    /// Messages sent in the window that are neither delivered nor dropped → when sent.
    pending: BTreeMap<(SenderId, EntityId, u64), u64>,
    /// The shards of the messages sent in the window.
    window_shards: BTreeSet<ShardId>,
    /// When each hand-off in progress started (µs), over all coordinators.
    handoff_started: BTreeMap<ShardId, u64>,
    /// shard → when its last hand-off started: a shard between its hand-off and its next
    /// allocation at the end of the run is in a rebalance, not stuck.
    last_handoff: BTreeMap<ShardId, u64>,
    /// The journal (only while the rule is on).
    journal: Vec<CoordinatorEvent>,
    /// node → the coordinator running there; the first is the one checked.
    coordinators: BTreeMap<NodeId, Coord>,
    /// node → `None`: no region; `Some(c)`: a region, registered with coordinator `c`.
    regions: Vec<Option<Option<RegionRef>>>,
}

impl Liveness {
    fn coordinator(
        &mut self,
        node: NodeId,
        incarnation: u32,
        generation: u32,
    ) -> Option<&mut Coord> {
        self.coordinators
            .get_mut(&node)
            .filter(|c| c.incarnation == incarnation && c.generation == generation)
    }

    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::NodeUp { node, .. } => {
                // A node comes up with a region that has no coordinator yet.
                *super::safety::slot(&mut self.regions, node.0 as usize) = Some(None);
            }
            TraceEvent::NodeDown { node, .. } => {
                *super::safety::slot(&mut self.regions, node.0 as usize) = None;
                self.coordinators.remove(node);
            }
            TraceEvent::RegionStopped { node, .. } => {
                *super::safety::slot(&mut self.regions, node.0 as usize) = None;
            }
            TraceEvent::RegionCoordinator { node, coordinator } => {
                if let Some(r) = self
                    .regions
                    .get_mut(node.0 as usize)
                    .and_then(|r| r.as_mut())
                {
                    *r = *coordinator;
                }
            }
            TraceEvent::CoordinatorStarted {
                node,
                incarnation,
                generation,
                ..
            } => {
                // Recovery replays the journal; it succeeded, or the coordinator would not run.
                let mut state = CoordinatorState::default();
                for e in &self.journal {
                    if state.updated(e).is_err() {
                        break;
                    }
                }
                self.coordinators.insert(
                    *node,
                    Coord {
                        incarnation: *incarnation,
                        generation: *generation,
                        state,
                        in_flight: None,
                        handoffs: BTreeSet::new(),
                    },
                );
            }
            TraceEvent::CoordinatorStopped { node, .. } => {
                self.coordinators.remove(node);
            }
            // ddata mode (§3.3): the state read replaces the (empty) journal replay, and each
            // successful update is applied as the coordinator applies it.
            TraceEvent::CoordinatorStateLoaded { node, events } => {
                if let Some(c) = self.coordinators.get_mut(node) {
                    let mut state = CoordinatorState::default();
                    for e in events {
                        if state.updated(e).is_err() {
                            break;
                        }
                    }
                    c.state = state;
                }
            }
            TraceEvent::CoordinatorStateUpdated { node, event } => {
                if let Some(c) = self.coordinators.get_mut(node) {
                    let _ = c.state.updated(event);
                }
            }
            TraceEvent::Persisted {
                node,
                incarnation,
                generation,
                event,
            } => {
                if self.on {
                    self.journal.push(*event);
                }
                if let Some(c) = self.coordinator(*node, *incarnation, *generation) {
                    c.in_flight = Some(*event);
                }
            }
            TraceEvent::PersistAcked {
                node,
                incarnation,
                generation,
            } => {
                if let Some(c) = self.coordinator(*node, *incarnation, *generation) {
                    if let Some(e) = c.in_flight.take() {
                        // As the coordinator does: an event its state rejects is not applied.
                        let _ = c.state.updated(&e);
                    }
                }
            }
            TraceEvent::RebalanceStarted {
                shard, coordinator, ..
            } => {
                self.handoff_started.insert(*shard, t.0);
                self.last_handoff.insert(*shard, t.0);
                if let Some(c) = self.coordinators.get_mut(coordinator) {
                    c.handoffs.insert(*shard);
                }
            }
            TraceEvent::RebalanceDone {
                shard, coordinator, ..
            } => {
                self.handoff_started.remove(shard);
                if let Some(c) = self.coordinators.get_mut(coordinator) {
                    c.handoffs.remove(shard);
                }
            }
            TraceEvent::LivenessPhase { from, to } => self.window = Some((from.0, to.0)),
            TraceEvent::Drop {
                sender,
                entity,
                seq,
                ..
            } => self.settled(*sender, *entity, *seq),
            TraceEvent::RunEnd { .. } if self.on => return self.verdict(t),
            _ => {}
        }
        None
    }

    /// A send: watched when it falls in the window.
    #[inline]
    pub(super) fn on_send(
        &mut self,
        t: Instant,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        shard: ShardId,
    ) {
        if let Some((lo, hi)) = self.window {
            if t.0 >= lo && t.0 <= hi {
                self.pending.insert((sender, entity, seq), t.0);
                self.window_shards.insert(shard);
            }
        }
    }

    /// A message was delivered or dropped: no longer pending.
    #[inline]
    pub(super) fn settled(&mut self, sender: SenderId, entity: EntityId, seq: u64) {
        if !self.pending.is_empty() {
            self.pending.remove(&(sender, entity, seq));
        }
    }

    /// The end-of-run verdict at `end`.
    fn verdict(&self, end: Instant) -> Option<Violation> {
        let mut pending: Vec<String> = Vec::new();
        let mut about: Vec<Subject> = Vec::new();
        if self.coordinators.is_empty() {
            pending.push("no coordinator is running".into());
            about.push(Subject::NoCoordinator);
        }
        for (i, r) in self.regions.iter().enumerate() {
            if *r == Some(None) {
                pending.push(format!(
                    "the region on node {i} is not registered with a coordinator"
                ));
                about.push(Subject::Unregistered {
                    node: NodeId(i as u32),
                });
            }
        }
        if let Some(c) = self.coordinators.values().next() {
            let homeless_ids: Vec<ShardId> = self
                .window_shards
                .iter()
                .filter(|s| !c.state.shards.contains_key(s))
                // A rebalance that started within handoff-timeout of the end may still be
                // between its ShardStopped and the new allocation (I4 allows it that long).
                .filter(|s| {
                    self.last_handoff
                        .get(s)
                        .is_none_or(|t0| end.0.saturating_sub(*t0) > self.handoff_timeout_us)
                })
                .copied()
                .collect();
            about.extend(
                homeless_ids
                    .iter()
                    .take(3)
                    .map(|&shard| Subject::Shard { shard }),
            );
            let homeless: Vec<String> = homeless_ids.iter().map(|s| s.to_string()).collect();
            match homeless.len() {
                0 => {}
                1 => pending.push(format!(
                    "shard {} received messages but has no home",
                    homeless[0]
                )),
                n if n <= 3 => pending.push(format!(
                    "shards {} received messages but have no home",
                    homeless.join(", ")
                )),
                n => pending.push(format!(
                    "shards {} and {} more received messages but have no home",
                    homeless[..3].join(", "),
                    n - 3
                )),
            }
            // I4: every hand-off ends within handoff-timeout; one that started just before the
            // end is not pending.
            for s in &c.handoffs {
                let started = self.handoff_started.get(s).copied().unwrap_or(0);
                if end.0.saturating_sub(started) > self.handoff_timeout_us {
                    about.push(Subject::HandOff { shard: *s });
                    pending.push(format!(
                        "the hand-off of shard {s}, started at t={}, is still in progress after handoff-timeout",
                        Instant(started)
                    ));
                }
            }
        }
        for ((sender, entity, seq), t) in self.pending.iter().take(3) {
            about.push(Subject::Message {
                sender: *sender,
                entity: *entity,
                seq: *seq,
            });
            pending.push(format!(
                "{sender}→{entity} seq {seq} sent at t={} was neither delivered nor dropped",
                Instant(*t)
            ));
        }
        if self.pending.len() > 3 {
            pending.push(format!(
                "and {} more pending messages",
                self.pending.len() - 3
            ));
        }
        if pending.is_empty() {
            return None;
        }
        Some(Violation {
            invariant: Invariant::Liveness,
            t: end,
            detail: pending.join("; "),
            about,
        })
    }
}
