//! **graceful-leave-loss**: no loss on a graceful leave. A user message for
//! an entity whose node leaves gracefully is delivered by the entity's new home: coordinated
//! shutdown hands every shard of the region off (§5.5, SR:992-1025) the way a rebalance does
//! (§7), and the buffering of that hand-off carries the messages over. A graceful leave must
//! not lose what a crash loses.
//!
//! Which drops count: a drop at the leaving node, from its [`TraceEvent::GracefulLeave`] until
//! the node's next incarnation is up, for one of the reasons a crash has:
//!
//! - `region_stopped`: buffered in the region or its Shards when the region stopped after its
//!   shutdown timed out (`GracefulShutdownTimeout`, SR:1026-1033);
//! - `node_down`: buffered in the node, or on the way between its actors, when it stopped;
//! - `dead_letter`: addressed to the region after it stopped, or to the incarnation after the
//!   node left;
//! - `region_restart`: buffered in the region when it threw and restarted.
//!
//! The drops every hand-off has, by Akka's design, do not count: the owner's buffer dropped at
//! `HandOff` to keep the order (`hand_off_buffer`, SR:936-962), a stopping entity's mailbox
//! (`entity_stopped`, §8 step 6), a handing-off or stopped Shard's messages
//! (`handing_off_shard`, `shard_gone`, `shard_buffer_lost`, §12 B23); nor `buffer_full` (the
//! documented limit), `network`, `proxy_host_shard` or `shard_restart` (an injected Shard
//! failure).
//!
//! What takes a leave out of "graceful": the node stops for another reason than leaving
//! (crashed, downed); or a fault other than a leave or a restart is in effect while it leaves,
//! or ended less than the settling time before it began: a cut link (partition, isolation,
//! one-way, bridge: until `heal` or the liveness phase), a journal fault (until
//! `journal-available` or the liveness phase), a pause (for its length), a crash or an
//! operator's down, or any node stopping otherwise than by leaving. Other nodes leaving at the
//! same time do not (§12 B18 is about that).
//!
//! A drop when no other hosting node is up, staying, and shown Up by some member view (a lone
//! node, every other one leaving as well, or the others still joining) does not count either:
//! no node could be the new home.
//!
//! Drops during the leave wait until the node has left (its `node_down` with reason `left`):
//! a crash or a down before then excuses them. A drop after the node left counts at once; at
//! the end of the run, the drops of a leave still under way count.

use super::{Invariant, Violation};
use crate::fault::Fault;
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::{EntityId, NodeId, SenderId};
use shardsim_core::protocol::DropReason;
use shardsim_core::time::Instant;
use std::collections::BTreeMap;

/// A counted drop, held until the leave completes.
#[derive(Clone, Copy, Debug)]
struct Held {
    t: u64,
    sender: SenderId,
    entity: EntityId,
    seq: u64,
    reason: DropReason,
}

/// How long a member must have been Up before it counts as a home for the shards of a leaving
/// node: its region registers with the coordinator (back-off from 100 ms, then every
/// `retry-interval`, 2 s) before it can be allocated anything.
const HOME_READY_US: u64 = 2_000_000;

/// One graceful leave.
#[derive(Debug)]
struct Leave {
    inc: u32,
    start: u64,
    /// Why the leave is not graceful, once it is not.
    spoiled: Option<String>,
    /// When the node left (`node_down`, reason `left`).
    left: Option<u64>,
    held: Vec<Held>,
}

/// The rule's state.
#[derive(Debug, Default)]
pub(super) struct Graceful {
    leaves: BTreeMap<NodeId, Leave>,
    /// A cut link is in effect (from a partition, isolation, one-way or bridge until heal).
    cut: bool,
    /// A journal fault is in effect.
    journal: bool,
    /// The end of the last pause (µs).
    paused_until: u64,
    /// When the last disturbance ended (or happened, for a crash or a down), µs.
    last_disturbance: Option<u64>,
    /// Nodes up, with their incarnation; the incarnations some member view has shown Up; and
    /// the nodes some member view shows as proxy-only (they never host).
    up: BTreeMap<NodeId, u32>,
    /// When each incarnation was first seen as an Up member.
    seen_up: BTreeMap<(NodeId, u32), u64>,
    proxies: std::collections::BTreeSet<NodeId>,
}

/// Whether a drop for this reason is one a crash has and a graceful leave must not.
pub(super) fn counts(reason: DropReason) -> bool {
    matches!(
        reason,
        DropReason::RegionStopped
            | DropReason::NodeDown
            | DropReason::DeadLetter
            | DropReason::RegionRestart
    )
}

fn reason_name(r: DropReason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{r:?}"))
}

impl Graceful {
    /// Spoil every leave under way (its node not yet replaced).
    /// The hosting incarnations other than `node` that are up, not leaving, and were seen as
    /// Up members at least [`HOME_READY_US`] before `t`.
    fn homes(&self, node: NodeId, t: u64) -> Vec<(NodeId, u32)> {
        self.up
            .iter()
            .filter(|(n, inc)| {
                **n != node
                    && self
                        .seen_up
                        .get(&(**n, **inc))
                        .is_some_and(|up| up.saturating_add(HOME_READY_US) <= t)
                    && !self.proxies.contains(n)
                    && !self.leaves.contains_key(n)
            })
            .map(|(n, inc)| (*n, *inc))
            .collect()
    }

    fn spoil_all(&mut self, why: &str) {
        for l in self.leaves.values_mut() {
            if l.spoiled.is_none() {
                l.spoiled = Some(why.to_string());
                l.held.clear();
            }
        }
    }

    fn disturbance_ends(&mut self, t: u64) {
        self.last_disturbance = Some(self.last_disturbance.map_or(t, |x| x.max(t)));
    }

    fn violation(node: NodeId, l: &Leave, h: &Held, t: Instant) -> Violation {
        Violation {
            invariant: Invariant::GracefulLeaveLoss,
            t,
            detail: format!(
                "{}→{} seq {} dropped ({}) at node {node} at t={}, which began a graceful leave (incarnation {}) at t={}{}; no crash, down, cut or journal fault explains it",
                h.sender,
                h.entity,
                h.seq,
                reason_name(h.reason),
                Instant(h.t),
                l.inc,
                Instant(l.start),
                match l.left {
                    Some(x) if x <= h.t => format!(" and left at t={}", Instant(x)),
                    _ => String::new(),
                }
            ),
            about: vec![
                Subject::Message {
                    sender: h.sender,
                    entity: h.entity,
                    seq: h.seq,
                },
                Subject::Node { node },
            ],
        }
    }

    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::GracefulLeave {
                node,
                incarnation,
                settle_ms,
            } => {
                if self.leaves.get(node).is_some_and(|l| l.inc == *incarnation) {
                    return None; // a second leave of the same incarnation changes nothing
                }
                let disturbed = self.cut || self.journal || t.0 < self.paused_until;
                let recent = self
                    .last_disturbance
                    .map(|x| x.max(self.paused_until))
                    .is_some_and(|x| t.0 < x.saturating_add(settle_ms.saturating_mul(1000)));
                let spoiled = if disturbed {
                    Some("a fault was in effect when it began".to_string())
                } else if recent {
                    Some("it began less than the settling time after a fault".to_string())
                } else {
                    None
                };
                self.leaves.insert(
                    *node,
                    Leave {
                        inc: *incarnation,
                        start: t.0,
                        spoiled,
                        left: None,
                        held: Vec::new(),
                    },
                );
            }
            TraceEvent::Fault { fault } => match fault {
                Fault::Leave { .. } | Fault::Restart { .. } => {}
                Fault::Heal => {
                    if self.cut {
                        self.cut = false;
                        self.disturbance_ends(t.0);
                    }
                }
                Fault::JournalAvailable => {
                    if self.journal {
                        self.journal = false;
                        self.disturbance_ends(t.0);
                    }
                }
                Fault::Partition { .. }
                | Fault::Isolate { .. }
                | Fault::OneWay { .. }
                | Fault::Bridge { .. } => {
                    self.cut = true;
                    self.spoil_all("a link was cut during it");
                }
                Fault::JournalUnavailable | Fault::JournalSlow { .. } | Fault::JournalFailing => {
                    self.journal = true;
                    self.spoil_all("a journal fault during it");
                }
                Fault::Pause { duration_ms, .. } => {
                    self.paused_until = self.paused_until.max(t.0 + duration_ms * 1000);
                    self.spoil_all("a node was paused during it");
                }
                Fault::Crash { .. } | Fault::Down { .. } => {
                    self.disturbance_ends(t.0);
                    self.spoil_all(&format!("{} during it", fault.kind_name()));
                }
            },
            TraceEvent::LivenessPhase { .. } if self.cut || self.journal => {
                self.cut = false;
                self.journal = false;
                self.disturbance_ends(t.0);
            }
            TraceEvent::NodeDown {
                node,
                incarnation,
                reason,
            } => {
                self.up.remove(node);
                if reason != "left" {
                    self.disturbance_ends(t.0);
                    self.spoil_all(&format!("node {node} stopped: {reason}"));
                    return None;
                }
                let l = self.leaves.get_mut(node)?;
                if l.inc != *incarnation || l.left.is_some() {
                    return None;
                }
                l.left = Some(t.0);
                if l.spoiled.is_none() {
                    if let Some(h) = l.held.first().copied() {
                        let l = &self.leaves[node];
                        return Some(Self::violation(*node, l, &h, t));
                    }
                }
            }
            TraceEvent::NodeUp { node, incarnation } => {
                self.leaves.remove(node);
                self.up.insert(*node, *incarnation);
            }
            TraceEvent::MemberView { members, .. } => {
                for m in members {
                    if m.status == shardsim_core::protocol::MemberStatus::Up {
                        self.seen_up.entry((m.node, m.inc.0)).or_insert(t.0);
                    }
                    if m.hosting {
                        self.proxies.remove(&m.node);
                    } else {
                        self.proxies.insert(m.node);
                    }
                }
            }
            TraceEvent::Drop {
                sender,
                entity,
                seq,
                reason,
                node,
            } if counts(*reason) => {
                // A new home needs a hosting node that stays and has been an Up member for at
                // least `HOME_READY_US`: with none (a lone node, every other one leaving too, the
                // others still joining, or only just arrived, as replacements after a downing
                // are) nothing can take the shards over before the shutdown gives up.
                let home = !self.homes(*node, t.0).is_empty();
                let l = self.leaves.get_mut(node)?;
                if l.spoiled.is_some() || !home {
                    return None;
                }
                let h = Held {
                    t: t.0,
                    sender: *sender,
                    entity: *entity,
                    seq: *seq,
                    reason: *reason,
                };
                if l.left.is_some() {
                    let l = &self.leaves[node];
                    return Some(Self::violation(*node, l, &h, t));
                }
                l.held.push(h);
            }
            TraceEvent::RunEnd { .. } => {
                for (node, l) in &self.leaves {
                    if l.spoiled.is_none() {
                        if let Some(h) = l.held.first() {
                            return Some(Self::violation(*node, l, h, t));
                        }
                    }
                }
            }
            _ => {}
        }
        None
    }
}
