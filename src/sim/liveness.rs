//! The liveness phase: once every fault is healed, a window of sends that must each be delivered
//! or dropped by the end of the run, and no hand-off or shard left without a home.

use super::World;
use crate::ids::{EntityId, NodeId, SenderId, ShardId};
use crate::scenario::Outcome;
use crate::time::Instant;
use crate::trace::TraceEvent;
use std::collections::{BTreeMap, BTreeSet};

/// What the liveness verdict needs to remember.
#[derive(Default)]
pub struct Liveness {
    /// Messages sent in the checked window that are neither delivered nor dropped, with the
    /// time they were sent (µs).
    pub pending: BTreeMap<(SenderId, EntityId, u64), u64>,
    /// The checked window (µs), once the phase began.
    pub window: Option<(u64, u64)>,
    /// Shards that received messages in the window.
    pub window_shards: BTreeSet<ShardId>,
    /// When each hand-off in progress started (µs).
    pub handoff_started: BTreeMap<ShardId, u64>,
}

impl Liveness {
    /// A message left the system (delivered or dropped).
    #[inline]
    pub fn settled(&mut self, sender: SenderId, entity: EntityId, seq: u64) {
        if !self.pending.is_empty() {
            self.pending.remove(&(sender, entity, seq));
        }
    }
}

impl World {
    /// Heal every fault, restart crashed nodes, then watch a window of sends that must each be
    /// delivered or dropped by the end.
    pub(super) fn on_liveness_phase(&mut self) {
        self.emit(TraceEvent::LivenessPhase);
        self.net.heal_nodes();
        self.set_journal_reachable(true);
        self.journal.heal();
        // Pauses are left to end on their own: cutting one short would let newer messages
        // overtake the ones it deferred.
        for i in 0..self.slots.len() as u32 {
            if !self.is_up(NodeId(i)) {
                self.on_join(NodeId(i));
            }
        }
        let quiet = self.sc.liveness.quiet_ms * 1000;
        let lo = self.now.0 + quiet / 2;
        let hi = self.end.0.saturating_sub(quiet / 4);
        self.liveness.window = Some((lo, hi));
    }

    pub(super) fn check_liveness(&mut self) {
        let mut pending: Vec<String> = Vec::new();
        let coordinators: Vec<usize> = (0..self.slots.len())
            .filter(|i| {
                self.slots[*i]
                    .node
                    .as_ref()
                    .is_some_and(|n| n.coordinator().is_some())
            })
            .collect();
        if coordinators.is_empty() {
            pending.push("no coordinator is running".into());
        }
        for (i, s) in self.slots.iter().enumerate() {
            if s.node
                .as_ref()
                .and_then(|n| n.region())
                .is_some_and(|r| r.coordinator().is_none())
            {
                pending.push(format!(
                    "the region on node {i} is not registered with a coordinator"
                ));
            }
        }
        let l = &self.liveness;
        if let Some(c) = coordinators
            .first()
            .and_then(|i| self.slots[*i].node.as_ref())
            .and_then(|n| n.coordinator())
        {
            let homeless: Vec<String> = l
                .window_shards
                .iter()
                .filter(|s| !c.allocations().contains_key(s))
                .map(|s| s.to_string())
                .collect();
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
            let timeout = self.sc.settings.handoff_timeout_ms * 1000;
            for s in c.handoffs().keys() {
                let started = l.handoff_started.get(s).copied().unwrap_or(0);
                if self.end.0.saturating_sub(started) > timeout {
                    pending.push(format!(
                        "the hand-off of shard {s}, started at t={}, is still in progress after handoff-timeout",
                        Instant(started)
                    ));
                }
            }
        }
        for ((sender, entity, seq), t) in l.pending.iter().take(3) {
            pending.push(format!(
                "{sender}→{entity} seq {seq} sent at t={} was neither delivered nor dropped",
                Instant(*t)
            ));
        }
        if l.pending.len() > 3 {
            pending.push(format!("and {} more pending messages", l.pending.len() - 3));
        }
        if !pending.is_empty() {
            self.violate(Outcome::Liveness, pending.join("; "));
        }
    }
}
