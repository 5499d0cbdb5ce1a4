//! **one-coordinator**: among nodes that can reach each other over the
//! simulated network, at most one ShardCoordinator runs. Akka's coordinator is a cluster
//! singleton on the oldest member (§1, CS:795-831; the regions find it by age, §5.1); two run
//! at once only where Akka documents it:
//!
//! - the two cannot reach each other: a partition, a cut, an isolation, a paused process (each
//!   side of a split brain has an oldest member and runs a coordinator, §11.2);
//! - take-over after the old oldest's removal: the new oldest starts when its view no longer
//!   has the old one as a live member (Down or removed, §9.2 `down-removal-margin`: "singleton
//!   delays take-over"; a downed node that has not learnt it yet is the documented zombie,
//!   §11.2 "JVM pause > margin");
//! - hand-over during a graceful leave: the leaving oldest is Exiting when the next oldest
//!   takes over (§4.5, SC:1148-1177: the old coordinator's `Terminate`; §9.2
//!   `hand-over-retry-interval`).
//!
//! Checked when a coordinator starts (`CoordinatorStarted`), against every coordinator
//! running then, from trace facts alone: `CoordinatorStarted`/`CoordinatorStopped`/`NodeDown`,
//! the starting node's `MemberView`, and the links as the `Fault` events cut and heal them
//! (not the nodes' views of reachability). Two coordinators that were apart and meet again
//! when a partition heals are not flagged: that is the split brain's aftermath, not a second
//! start. Cost: a start looks at the running coordinators (a handful); a fault updates a set.

use super::{Invariant, Violation};
use crate::fault::Fault;
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::NodeId;
use shardsim_core::protocol::{Member, MemberStatus};
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// The state of the one-coordinator rule.
#[derive(Debug, Default)]
pub(super) struct OneCoordinator {
    /// node → the incarnation of the node whose coordinator runs there.
    running: BTreeMap<NodeId, u32>,
    /// node → its latest member view.
    views: BTreeMap<NodeId, Vec<Member>>,
    /// Directed links cut by a partition, a one-way cut or a bridge.
    cut: BTreeSet<(u32, u32)>,
    /// Nodes cut off from every other node.
    isolated: BTreeSet<u32>,
    /// node → until when (µs) its process is paused.
    paused_until: BTreeMap<u32, u64>,
}

impl OneCoordinator {
    /// Whether `a` and `b` can reach each other at `t` over the simulated network.
    fn reachable(&self, t: Instant, a: NodeId, b: NodeId) -> bool {
        let (a, b) = (a.0, b.0);
        let paused = |n: u32| self.paused_until.get(&n).is_some_and(|u| *u > t.0);
        !self.cut.contains(&(a, b))
            && !self.cut.contains(&(b, a))
            && !self.isolated.contains(&a)
            && !self.isolated.contains(&b)
            && !paused(a)
            && !paused(b)
    }

    fn heal(&mut self) {
        self.cut.clear();
        self.isolated.clear();
    }

    fn on_fault(&mut self, t: Instant, fault: &Fault) {
        match fault {
            Fault::Partition { sides: [a, b] } => {
                for x in a {
                    for y in b {
                        self.cut.insert((x.0, y.0));
                        self.cut.insert((y.0, x.0));
                    }
                }
            }
            Fault::Isolate { node } => {
                self.isolated.insert(node.0);
            }
            Fault::OneWay { from, to } => {
                self.cut.insert((from.0, to.0));
            }
            Fault::Bridge { a, c, .. } => {
                // a and c are cut from each other, both reach b.
                self.cut.insert((a.0, c.0));
                self.cut.insert((c.0, a.0));
            }
            Fault::Heal => self.heal(),
            Fault::Pause { node, duration_ms } => {
                // Only a node that is up pauses (its next incarnation starts unpaused, see
                // NodeUp).
                let until = t.0 + duration_ms * 1000;
                let e = self.paused_until.entry(node.0).or_default();
                *e = (*e).max(until);
            }
            _ => {}
        }
    }

    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::NodeUp { node, .. } | TraceEvent::NodeDown { node, .. } => {
                self.running.remove(node);
                self.views.remove(node);
                self.paused_until.remove(&node.0);
            }
            TraceEvent::MemberView { node, members } => {
                self.views.insert(*node, members.clone());
            }
            TraceEvent::Fault { fault } => self.on_fault(t, fault),
            // The liveness phase heals every link (pauses end on their own).
            TraceEvent::LivenessPhase { .. } => self.heal(),
            TraceEvent::CoordinatorStopped { node, .. } => {
                self.running.remove(node);
            }
            TraceEvent::CoordinatorStarted {
                node, incarnation, ..
            } => {
                let verdict = self.second_coordinator(t, *node);
                self.running.insert(*node, *incarnation);
                return verdict;
            }
            _ => {}
        }
        None
    }

    /// A coordinator starts on `b`: is another one running where `b` reaches it, outside the
    /// documented windows?
    fn second_coordinator(&self, t: Instant, b: NodeId) -> Option<Violation> {
        let view = self.views.get(&b).map(Vec::as_slice).unwrap_or(&[]);
        for (a, a_inc) in &self.running {
            if *a == b || !self.reachable(t, *a, b) {
                continue;
            }
            let status = view
                .iter()
                .find(|m| m.node == *a && m.inc.0 == *a_inc)
                .map(|m| m.status);
            // Take-over after removal (Down, removed, gone from the view) or hand-over
            // (Exiting): a documented window.
            let live = matches!(
                status,
                Some(MemberStatus::Joining | MemberStatus::Up | MemberStatus::Leaving)
            );
            if !live {
                continue;
            }
            return Some(Violation {
                invariant: Invariant::OneCoordinator,
                t,
                detail: format!(
                    "a coordinator started on node {} while the coordinator on node {} (incarnation {}) runs; the two nodes reach each other and node {}'s view has node {} as {:?}, not removed, downed or exiting",
                    b.0,
                    a.0,
                    a_inc,
                    b.0,
                    a.0,
                    status.unwrap_or(MemberStatus::Up)
                ),
                about: vec![Subject::Node { node: b }, Subject::Coordinator { node: *a }],
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{Checker, Invariant};
    use crate::fault::Fault;
    use crate::trace::TraceEvent;
    use shardsim_core::ids::{NodeId, NodeInc};
    use shardsim_core::protocol::{Member, MemberStatus};
    use shardsim_core::time::Instant;

    fn up(n: u32) -> TraceEvent {
        TraceEvent::NodeUp {
            node: NodeId(n),
            incarnation: n + 1,
        }
    }
    fn started(n: u32) -> TraceEvent {
        TraceEvent::CoordinatorStarted {
            node: NodeId(n),
            incarnation: n + 1,
            generation: 1,
            replayed: 0,
        }
    }
    /// Node `n`'s view: node 0 with `status`, and `n` itself Up.
    fn view(n: u32, status: MemberStatus) -> TraceEvent {
        let m = |node: u32, status| Member {
            node: NodeId(node),
            inc: NodeInc(node + 1),
            up_number: node + 1,
            status,
            hosting: true,
            app_version: 0,
        };
        TraceEvent::MemberView {
            node: NodeId(n),
            members: vec![m(0, status), m(n, MemberStatus::Up)],
        }
    }
    fn fault(fault: Fault) -> TraceEvent {
        TraceEvent::Fault { fault }
    }
    fn n(i: u32) -> NodeId {
        NodeId(i)
    }
    /// Nodes 0 and 2 up, node 0 runs the coordinator; `before` happens, then node 2 (whose
    /// view has node 0 as `status`) starts one at t = 10 s.
    fn second(status: MemberStatus, before: &[TraceEvent]) -> Option<Invariant> {
        let mut c = Checker::new();
        let s = |x: u64| Instant(x * 1_000_000);
        for e in [up(0), up(2), started(0), view(2, status)] {
            assert!(c.on_event(s(1), &e).is_none());
        }
        for e in before {
            assert!(c.on_event(s(5), e).is_none());
        }
        c.on_event(s(10), &started(2)).map(|v| v.invariant)
    }

    #[test]
    fn a_second_coordinator_among_nodes_that_reach_each_other() {
        let two = Some(Invariant::OneCoordinator);
        assert_eq!(second(MemberStatus::Up, &[]), two);
        assert_eq!(second(MemberStatus::Leaving, &[]), two);
        // The documented windows: take-over after removal, hand-over from an Exiting oldest.
        for s in [
            MemberStatus::Down,
            MemberStatus::Removed,
            MemberStatus::Exiting,
        ] {
            assert_eq!(second(s, &[]), None, "{s:?}");
        }
        // Apart over the network (each side of a split brain has its own): not flagged.
        let apart = [
            fault(Fault::Partition {
                sides: [vec![n(0), n(1)], vec![n(2)]],
            }),
            fault(Fault::Isolate { node: n(0) }),
            fault(Fault::OneWay {
                from: n(2),
                to: n(0),
            }),
            fault(Fault::Bridge {
                a: n(0),
                b: n(1),
                c: n(2),
            }),
            fault(Fault::Pause {
                node: n(0),
                duration_ms: 6000,
            }),
        ];
        for f in &apart {
            assert_eq!(
                second(MemberStatus::Up, std::slice::from_ref(f)),
                None,
                "{f:?}"
            );
        }
        // Healed, or a pause that is over: they reach each other again.
        assert_eq!(
            second(MemberStatus::Up, &[apart[0].clone(), fault(Fault::Heal)]),
            two
        );
        assert_eq!(
            second(
                MemberStatus::Up,
                &[fault(Fault::Pause {
                    node: n(0),
                    duration_ms: 4000,
                })]
            ),
            two
        );
        // A partition between other nodes does not separate them.
        assert_eq!(
            second(
                MemberStatus::Up,
                &[fault(Fault::Partition {
                    sides: [vec![n(1)], vec![n(0), n(2)]],
                })]
            ),
            two
        );
        // The first coordinator stopped, or its node went down: one at a time.
        let stopped = TraceEvent::CoordinatorStopped {
            node: NodeId(0),
            reason: "hand-over".into(),
        };
        assert_eq!(second(MemberStatus::Up, &[stopped]), None);
        let down = TraceEvent::NodeDown {
            node: NodeId(0),
            incarnation: 1,
            reason: "crash".into(),
        };
        assert_eq!(second(MemberStatus::Up, &[down]), None);
    }
}
