//! The fault injector: applies one planned fault to the world, and heals them all for the
//! liveness phase.

use super::{Ev, World};
use crate::fault::Fault;
use crate::ids::NodeId;
use crate::node::NodeInput;
use crate::scenario::Scenario;
use crate::time::Instant;
use crate::trace::TraceEvent;

/// The window of sends the liveness phase starting at `now` watches (each must be delivered or
/// dropped by the run's `end`), for every host.
pub fn liveness_window(sc: &Scenario, now: Instant, end: Instant) -> (Instant, Instant) {
    let quiet = sc.liveness.quiet_ms * 1000;
    let from = Instant(now.0 + quiet / 2);
    // A message may wait, legitimately, for an entity that is passivating: up to the
    // passivation stop-timeout (an entity that ignores its stop message), its stop and
    // its restart. The window closes early enough for that.
    let stop_timeout = sc.settings.passivation_stop_timeout_ms;
    let slack = if stop_timeout > 0 {
        (stop_timeout + sc.entities.stop_ms[1] + 1_000) * 1000
    } else {
        0
    };
    let to = Instant(end.0.saturating_sub((quiet / 4).max(slack)).max(from.0));
    (from, to)
}

impl World {
    /// Cut or heal every link to the journal; it is available exactly while reachable.
    pub(super) fn set_journal_reachable(&mut self, reachable: bool) {
        self.net.set_journal_links(reachable);
        self.journal.available = reachable;
    }

    /// The liveness phase: heal every fault and restart crashed nodes; the checker then
    /// watches a window of sends that must each be delivered or dropped by the end.
    pub(super) fn on_liveness_phase(&mut self) {
        let (from, to) = liveness_window(&self.sc, self.now, self.end);
        self.emit(TraceEvent::LivenessPhase { from, to });
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
    }

    pub(super) fn on_fault(&mut self, idx: usize) {
        let f = self.plan[idx].fault.clone();
        self.stats.faults += 1;
        let n = self.slots.len();
        self.emit(TraceEvent::Fault {
            fault: f.kind_name().to_string(),
            detail: f.detail(),
        });
        match f {
            Fault::Partition { sides: [a, b] } => {
                for x in &a {
                    for y in &b {
                        self.net.cut(x.0 as usize, y.0 as usize);
                        self.net.cut(y.0 as usize, x.0 as usize);
                    }
                }
            }
            Fault::Isolate { node: x } => {
                for y in 0..n {
                    if y != x.0 as usize {
                        self.net.cut(x.0 as usize, y);
                        self.net.cut(y, x.0 as usize);
                    }
                }
            }
            Fault::OneWay { from, to } => self.net.cut(from.0 as usize, to.0 as usize),
            Fault::Bridge { a, b: _, c } => {
                self.net.cut(a.0 as usize, c.0 as usize);
                self.net.cut(c.0 as usize, a.0 as usize);
            }
            Fault::Heal => self.net.heal_nodes(),
            Fault::Crash { node } => self.node_down(node, "crash"),
            Fault::Restart { node } => self.on_join(node),
            Fault::Pause { node, duration_ms } => {
                if self.is_up(node) {
                    let until = self.now.0 + duration_ms * 1000;
                    let s = &mut self.slots[node.0 as usize];
                    s.paused_until = s.paused_until.max(until);
                    let at = Instant(s.paused_until);
                    self.paused_max = self.paused_max.max(at.0);
                    self.push(at, Ev::Resume { node });
                }
            }
            Fault::Down { node, by } => {
                let target = self.addr_of(node);
                let by = by
                    .filter(|b| self.is_up(*b))
                    .or_else(|| (0..n as u32).map(NodeId).find(|i| self.is_up(*i)));
                if let Some(by) = by {
                    self.with_node(by, NodeInput::Down(target));
                }
            }
            Fault::Leave { node, by } => {
                // `by`: `Cluster.leave(node)` on node `by`; nothing if `by` is not up.
                let asked = by.is_none_or(|b| self.is_up(b));
                if asked && self.is_up(node) {
                    // For the graceful-leave-loss rule (a second leave of the same incarnation
                    // changes nothing, there as here).
                    self.emit(TraceEvent::GracefulLeave {
                        node,
                        incarnation: self.slots[node.0 as usize].inc.0,
                        settle_ms: super::swarm::settle_ms(&self.sc),
                    });
                }
                match by {
                    None => self.with_node(node, NodeInput::Leave),
                    Some(by) if self.is_up(by) => {
                        let target = self.addr_of(node);
                        self.with_node(by, NodeInput::LeaveMember(target));
                    }
                    Some(_) => {}
                }
            }
            Fault::JournalUnavailable => self.set_journal_reachable(false),
            Fault::JournalAvailable => {
                self.set_journal_reachable(true);
                self.journal.heal();
            }
            Fault::JournalSlow { extra_latency_ms } => {
                self.journal.extra_latency_us = extra_latency_ms * 1000
            }
            Fault::JournalFailing => self.journal.failing = true,
        }
    }
}
