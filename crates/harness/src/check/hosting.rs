//! **hosting-ack**: a region that acknowledged a shard with `ShardStarted`
//! hosts it until the coordinator takes it away with `HandOff` or the region's node goes.
//! Akka's region answers `HostShard` by starting the Shard and replying `ShardStarted`
//! (§5.4, SR:925-934), and its Shard stops only on `HandOff` (through the HandOffStopper,
//! §7), with its region (a restart after an exception or a stop, §1, SR:1026-1033) or with
//! its node. The one other stop Akka has is the Shard's own while it loads its remembered
//! entities (§6.1): the region stays the home and starts it again after
//! shard-failure-backoff (SR:1050-1093); the trace marks it ([`TraceEvent::ShardLoadFailed`]).
//!
//! From trace facts: `Msg` ShardStarted (region → coordinator, when delivered) and HandOff
//! (coordinator → region, when delivered), `ShardUnhosted`, `ShardLoadFailed`, `NodeUp`,
//! `NodeDown`, `RegionStopped`, `RegionRestarted`. A region's stop or restart emits its
//! Shards' `ShardUnhosted` before its own event, so an unhosting is judged once the instant
//! it happened at is over.

use super::{Invariant, Violation};
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::{NodeId, ShardId};
use shardsim_core::protocol::{Msg, Role};
use shardsim_core::time::Instant;
use std::collections::BTreeSet;

/// The state of the hosting-ack rule.
#[derive(Debug, Default)]
pub(super) struct HostingAck {
    /// (node, shard): the region on the node acknowledged the shard and has had no
    /// `HandOff` for it since.
    acked: BTreeSet<(NodeId, ShardId)>,
    /// Acknowledged shards whose Shard stopped, judged when their instant is over.
    suspects: Vec<(Instant, NodeId, ShardId)>,
}

impl HostingAck {
    /// Whether an unhosting waits for its verdict (checked before every event).
    #[inline]
    pub(super) fn waiting(&self) -> bool {
        !self.suspects.is_empty()
    }

    /// The verdict on the unhostings of instants before `t` (`None` for `t`: every one).
    pub(super) fn judge(&mut self, t: Option<Instant>) -> Option<Violation> {
        let due = self
            .suspects
            .iter()
            .position(|(at, _, _)| t.is_none_or(|t| t > *at))?;
        let (at, node, shard) = self.suspects[due];
        self.suspects.clear();
        Some(Violation {
            invariant: Invariant::HostingAck,
            t: at,
            detail: format!(
                "the region on node {} acknowledged shard {shard} with ShardStarted and stopped hosting it without a HandOff, while it and its node stayed up",
                node.0
            ),
            about: vec![Subject::Node { node }, Subject::Shard { shard }],
        })
    }

    fn forget_node(&mut self, node: NodeId) {
        let gone: Vec<(NodeId, ShardId)> = self
            .acked
            .range((node, ShardId(0))..=(node, ShardId(u32::MAX)))
            .copied()
            .collect();
        for k in gone {
            self.acked.remove(&k);
        }
        self.suspects.retain(|(_, n, _)| *n != node);
    }

    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) {
        match ev {
            TraceEvent::Msg {
                from,
                actor: Role::Coordinator,
                msg: Msg::ShardStarted { shard },
                ..
            } => {
                self.acked.insert((*from, *shard));
            }
            TraceEvent::Msg {
                to,
                actor: Role::Region,
                msg: Msg::HandOff { shard },
                ..
            } => {
                self.acked.remove(&(*to, *shard));
            }
            TraceEvent::ShardUnhosted { shard, node } if self.acked.remove(&(*node, *shard)) => {
                self.suspects.push((t, *node, *shard));
            }
            TraceEvent::ShardLoadFailed { node, shard } => {
                self.acked.remove(&(*node, *shard));
                self.suspects.retain(|(_, n, s)| (n, s) != (node, shard));
            }
            TraceEvent::NodeUp { node, .. }
            | TraceEvent::NodeDown { node, .. }
            | TraceEvent::RegionStopped { node, .. }
            | TraceEvent::RegionRestarted { node } => self.forget_node(*node),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{Checker, Invariant};
    use crate::trace::TraceEvent;
    use shardsim_core::ids::{NodeId, ShardId};
    use shardsim_core::protocol::{Msg, Role};
    use shardsim_core::time::Instant;

    fn msg(from: u32, to: u32, actor: Role, msg: Msg) -> TraceEvent {
        TraceEvent::Msg {
            from: NodeId(from),
            to: NodeId(to),
            actor,
            msg,
        }
    }
    const S: ShardId = ShardId(3);
    /// Node 1's region hosts shard 3 and acknowledges it to the coordinator on node 0; then
    /// `between` happens, the Shard stops at t = 5, and `after` at the same instant.
    fn unhost(between: &[TraceEvent], after: &[TraceEvent]) -> Option<Invariant> {
        let mut c = Checker::new();
        let hosted = TraceEvent::ShardHosted {
            shard: S,
            node: NodeId(1),
        };
        c.on_event(Instant(1), &hosted);
        let ack = msg(1, 0, Role::Coordinator, Msg::ShardStarted { shard: S });
        c.on_event(Instant(2), &ack);
        for e in between {
            assert!(c.on_event(Instant(3), e).is_none());
        }
        let gone = TraceEvent::ShardUnhosted {
            shard: S,
            node: NodeId(1),
        };
        assert!(c.on_event(Instant(5), &gone).is_none());
        for e in after {
            assert!(c.on_event(Instant(5), e).is_none());
        }
        // Judged when the instant is over, or at the end.
        let next = TraceEvent::Fault {
            fault: crate::fault::Fault::Heal,
        };
        c.on_event(Instant(6), &next)
            .or_else(|| c.on_event(Instant(7), &TraceEvent::RunEnd { in_flight: 0 }))
            .map(|v| v.invariant)
    }

    #[test]
    fn an_acknowledged_shard_is_hosted_until_hand_off_or_its_node_goes() {
        assert_eq!(unhost(&[], &[]), Some(Invariant::HostingAck));
        // A HandOff for another shard or to another region does not excuse it.
        let other = msg(0, 1, Role::Region, Msg::HandOff { shard: ShardId(4) });
        assert_eq!(unhost(&[other], &[]), Some(Invariant::HostingAck));
        let elsewhere = msg(0, 2, Role::Region, Msg::HandOff { shard: S });
        assert_eq!(unhost(&[elsewhere], &[]), Some(Invariant::HostingAck));
        // The HandOff does.
        let hand_off = msg(0, 1, Role::Region, Msg::HandOff { shard: S });
        assert_eq!(unhost(&[hand_off], &[]), None);
        // The region stopping or restarting (its Shards stop first, same instant), the node
        // going, a failed remember load.
        let node = NodeId(1);
        for e in [
            TraceEvent::RegionStopped {
                node,
                reason: "graceful shutdown timed out".into(),
            },
            TraceEvent::RegionRestarted { node },
            TraceEvent::NodeDown {
                node,
                incarnation: 2,
                reason: "crash".into(),
            },
            TraceEvent::ShardLoadFailed { node, shard: S },
        ] {
            assert_eq!(unhost(&[], std::slice::from_ref(&e)), None, "{e:?}");
        }
        // Never acknowledged (hosted through ShardHome to itself): not this rule's business.
        let mut c = Checker::new();
        let gone = TraceEvent::ShardUnhosted { shard: S, node };
        assert!(c.on_event(Instant(5), &gone).is_none());
        assert!(c
            .on_event(Instant(7), &TraceEvent::RunEnd { in_flight: 0 })
            .is_none());
    }
}
