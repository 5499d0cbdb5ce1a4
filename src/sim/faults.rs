//! The fault injector: applies one planned fault to the world.

use super::{Ev, World};
use crate::ids::NodeId;
use crate::node::NodeInput;
use crate::scenario::{FaultKind, FaultSpec};
use crate::time::Instant;
use crate::trace::TraceEvent;

impl World {
    /// Cut or heal every link to the journal; it is available exactly while reachable.
    pub(super) fn set_journal_reachable(&mut self, reachable: bool) {
        self.net.set_journal_links(reachable);
        self.journal.available = reachable;
    }

    pub(super) fn on_fault(&mut self, idx: usize) {
        let f = self.plan[idx].clone();
        self.stats.faults += 1;
        let n = self.slots.len();
        let detail = fault_detail(&f);
        self.emit(TraceEvent::Fault {
            fault: format!("{:?}", f.kind),
            detail,
        });
        let node = f.node.map(NodeId);
        match f.kind {
            FaultKind::Partition => {
                if let Some([a, b]) = &f.sides {
                    for x in a {
                        for y in b {
                            self.net.cut(*x as usize, *y as usize);
                            self.net.cut(*y as usize, *x as usize);
                        }
                    }
                }
            }
            FaultKind::Isolate => {
                if let Some(x) = node {
                    for y in 0..n {
                        if y != x.0 as usize {
                            self.net.cut(x.0 as usize, y);
                            self.net.cut(y, x.0 as usize);
                        }
                    }
                }
            }
            FaultKind::OneWay => {
                if let (Some(a), Some(b)) = (f.from, f.to) {
                    self.net.cut(a as usize, b as usize);
                }
            }
            FaultKind::Bridge => {
                if let Some([a, _, c]) = f.bridge {
                    self.net.cut(a as usize, c as usize);
                    self.net.cut(c as usize, a as usize);
                }
            }
            FaultKind::Heal => self.net.heal_nodes(),
            FaultKind::Crash => {
                if let Some(x) = node {
                    self.node_down(x, "crash");
                }
            }
            FaultKind::Restart => {
                if let Some(x) = node {
                    self.on_join(x);
                }
            }
            FaultKind::Pause => {
                if let (Some(x), Some(d)) = (node, f.duration_ms) {
                    if self.is_up(x) {
                        let until = self.now.0 + d * 1000;
                        let s = &mut self.slots[x.0 as usize];
                        s.paused_until = s.paused_until.max(until);
                        let at = Instant(s.paused_until);
                        self.paused_max = self.paused_max.max(at.0);
                        self.push(at, Ev::Resume { node: x });
                    }
                }
            }
            FaultKind::Down => {
                if let Some(x) = node {
                    let target = self.addr_of(x);
                    let by =
                        f.by.map(NodeId)
                            .filter(|b| self.is_up(*b))
                            .or_else(|| (0..n as u32).map(NodeId).find(|i| self.is_up(*i)));
                    if let Some(by) = by {
                        self.with_node(by, NodeInput::Down(target));
                    }
                }
            }
            FaultKind::Leave => {
                if let Some(x) = node {
                    self.with_node(x, NodeInput::Leave);
                }
            }
            FaultKind::JournalUnavailable => self.set_journal_reachable(false),
            FaultKind::JournalAvailable => {
                self.set_journal_reachable(true);
                self.journal.heal();
            }
            FaultKind::JournalSlow => {
                self.journal.extra_latency_us = f.extra_latency_ms.unwrap_or(0) * 1000
            }
            FaultKind::JournalFailing => self.journal.failing = true,
        }
    }
}

fn fault_detail(f: &FaultSpec) -> String {
    let mut parts = Vec::new();
    if let Some(n) = f.node {
        parts.push(format!("node {n}"));
    }
    if let Some([a, b]) = &f.sides {
        parts.push(format!("sides {a:?} | {b:?}"));
    }
    if let (Some(a), Some(b)) = (f.from, f.to) {
        parts.push(format!("{a} -> {b}"));
    }
    if let Some(b) = f.bridge {
        parts.push(format!("bridge {b:?}"));
    }
    if let Some(d) = f.duration_ms {
        parts.push(format!("{d} ms"));
    }
    if let Some(b) = f.by {
        parts.push(format!("by node {b}"));
    }
    if let Some(x) = f.extra_latency_ms {
        parts.push(format!("+{x} ms"));
    }
    parts.join(", ")
}
