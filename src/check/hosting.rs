//! **hosting-ack** (issue 17 item 3): a region that acknowledged a shard with `ShardStarted`
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
use crate::ids::{NodeId, ShardId};
use crate::protocol::{Msg, Role};
use crate::time::Instant;
use crate::trace::TraceEvent;
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
            TraceEvent::ShardUnhosted { shard, node } => {
                if self.acked.remove(&(*node, *shard)) {
                    self.suspects.push((t, *node, *shard));
                }
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
