//! The fault injector: applies one planned fault to the world, and heals them all for the
//! liveness phase.

use super::journal::Journal;
use super::{Ev, World};
use crate::fault::Fault;
use crate::scenario::Scenario;
use crate::trace::TraceEvent;
use shardsim_core::ids::NodeId;
use shardsim_core::membership::NodeAddr;
use shardsim_core::node::NodeInput;
use shardsim_core::time::Instant;

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

/// What a host offers the fault injector: the plan's faults and the liveness phase are
/// applied alike on every host ([`apply_fault`], [`liveness_phase`]), each host cutting links,
/// crashing, restarting and pausing nodes with its own means.
pub trait FaultHost {
    /// The cluster's node count (the journal's endpoint index).
    fn node_count(&self) -> usize;
    /// The scenario of the run.
    fn scenario(&self) -> &Scenario;
    /// Feed an event to the checker and the trace.
    fn emit(&mut self, ev: TraceEvent);
    /// Count one injected fault.
    fn count_fault(&mut self);
    /// Cut the link `from -> to` (node indices): what it carries is lost.
    fn cut(&mut self, from: usize, to: usize);
    /// Heal every link between nodes (not the journal's).
    fn heal_nodes(&mut self);
    /// Cut or heal every link to the journal; it is available exactly while reachable.
    fn set_journal_reachable(&mut self, reachable: bool);
    /// The journal.
    fn journal(&mut self) -> &mut Journal;
    /// Whether `node` runs an incarnation.
    fn is_up(&self, node: NodeId) -> bool;
    /// The address of `node`'s current (or last) incarnation.
    fn addr_of(&self, node: NodeId) -> NodeAddr;
    /// Run one input through `node`'s running incarnation.
    fn input(&mut self, node: NodeId, input: NodeInput);
    /// `node` crashes.
    fn crash(&mut self, node: NodeId);
    /// `node` (re)starts as a new incarnation, if it is not up.
    fn restart(&mut self, node: NodeId);
    /// `node`'s process pauses for `duration_ms`, if it is up.
    fn pause(&mut self, node: NodeId, duration_ms: u64);
}

/// The liveness phase starting at `now` (the run ends at `end`): heal every fault and restart
/// crashed nodes; the checker then watches a window of sends that must each be delivered or
/// dropped by the end.
pub fn liveness_phase(h: &mut impl FaultHost, now: Instant, end: Instant) {
    let (from, to) = liveness_window(h.scenario(), now, end);
    h.emit(TraceEvent::LivenessPhase { from, to });
    h.heal_nodes();
    h.set_journal_reachable(true);
    h.journal().heal();
    // Pauses are left to end on their own: cutting one short would let newer messages
    // overtake the ones it deferred.
    for i in 0..h.node_count() as u32 {
        if !h.is_up(NodeId(i)) {
            h.restart(NodeId(i));
        }
    }
}

/// Apply one planned fault.
pub fn apply_fault(h: &mut impl FaultHost, f: Fault) {
    h.count_fault();
    let n = h.node_count();
    h.emit(TraceEvent::Fault { fault: f.clone() });
    match f {
        Fault::Partition { sides: [a, b] } => {
            for x in &a {
                for y in &b {
                    h.cut(x.0 as usize, y.0 as usize);
                    h.cut(y.0 as usize, x.0 as usize);
                }
            }
        }
        Fault::Isolate { node: x } => {
            for y in 0..n {
                if y != x.0 as usize {
                    h.cut(x.0 as usize, y);
                    h.cut(y, x.0 as usize);
                }
            }
        }
        Fault::OneWay { from, to } => h.cut(from.0 as usize, to.0 as usize),
        Fault::Bridge { a, b: _, c } => {
            h.cut(a.0 as usize, c.0 as usize);
            h.cut(c.0 as usize, a.0 as usize);
        }
        Fault::Heal => h.heal_nodes(),
        Fault::Crash { node } => h.crash(node),
        Fault::Restart { node } => h.restart(node),
        Fault::Pause { node, duration_ms } => h.pause(node, duration_ms),
        Fault::Down { node, by } => {
            let target = h.addr_of(node);
            let by = by
                .filter(|b| h.is_up(*b))
                .or_else(|| (0..n as u32).map(NodeId).find(|i| h.is_up(*i)));
            if let Some(by) = by {
                h.input(by, NodeInput::Down(target));
            }
        }
        Fault::Leave { node, by } => {
            // `by`: `Cluster.leave(node)` on node `by`; nothing if `by` is not up.
            let asked = by.is_none_or(|b| h.is_up(b));
            if asked && h.is_up(node) {
                // For the graceful-leave-loss rule (a second leave of the same incarnation
                // changes nothing, there as here).
                h.emit(TraceEvent::GracefulLeave {
                    node,
                    incarnation: h.addr_of(node).inc.0,
                    settle_ms: super::swarm::settle_ms(h.scenario()),
                });
            }
            match by {
                None => h.input(node, NodeInput::Leave),
                Some(by) if h.is_up(by) => {
                    let target = h.addr_of(node);
                    h.input(by, NodeInput::LeaveMember(target));
                }
                Some(_) => {}
            }
        }
        Fault::JournalUnavailable => h.set_journal_reachable(false),
        Fault::JournalAvailable => {
            h.set_journal_reachable(true);
            h.journal().heal();
        }
        Fault::JournalSlow { extra_latency_ms } => {
            h.journal().extra_latency_us = extra_latency_ms * 1000
        }
        Fault::JournalFailing => h.journal().failing = true,
    }
}

impl World {
    /// Cut or heal every link to the journal; it is available exactly while reachable.
    pub(super) fn set_journal_reachable(&mut self, reachable: bool) {
        self.net.set_journal_links(reachable);
        self.c.journal.available = reachable;
    }

    /// The liveness phase: heal every fault and restart crashed nodes; the checker then
    /// watches a window of sends that must each be delivered or dropped by the end.
    pub(super) fn on_liveness_phase(&mut self) {
        let (now, end) = (self.now, self.c.end);
        liveness_phase(self, now, end);
    }

    pub(super) fn on_fault(&mut self, idx: usize) {
        let f = self.plan[idx].fault.clone();
        apply_fault(self, f);
    }
}

impl FaultHost for World {
    fn node_count(&self) -> usize {
        self.c.slots.len()
    }

    fn scenario(&self) -> &Scenario {
        &self.c.sc
    }

    fn emit(&mut self, ev: TraceEvent) {
        World::emit(self, ev);
    }

    fn count_fault(&mut self) {
        self.c.stats.faults += 1;
    }

    fn cut(&mut self, from: usize, to: usize) {
        self.net.cut(from, to);
    }

    fn heal_nodes(&mut self) {
        self.net.heal_nodes();
    }

    fn set_journal_reachable(&mut self, reachable: bool) {
        World::set_journal_reachable(self, reachable);
    }

    fn journal(&mut self) -> &mut Journal {
        &mut self.c.journal
    }

    fn is_up(&self, node: NodeId) -> bool {
        World::is_up(self, node)
    }

    fn addr_of(&self, node: NodeId) -> NodeAddr {
        World::addr_of(self, node)
    }

    fn input(&mut self, node: NodeId, input: NodeInput) {
        self.with_node(node, input);
    }

    fn crash(&mut self, node: NodeId) {
        self.node_down(node, "crash");
    }

    fn restart(&mut self, node: NodeId) {
        self.on_join(node);
    }

    fn pause(&mut self, node: NodeId, duration_ms: u64) {
        if World::is_up(self, node) {
            let until = self.now.0 + duration_ms * 1000;
            let s = &mut self.c.slots[node.0 as usize];
            s.paused_until = s.paused_until.max(until);
            let at = Instant(s.paused_until);
            self.paused_max = self.paused_max.max(at.0);
            self.push(at, Ev::Resume { node });
        }
    }
}
