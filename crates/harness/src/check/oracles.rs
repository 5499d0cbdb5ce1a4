//! The oracles over coordinator facts:
//!
//! - **journal-single-writer** (§12 B5, B6; when `journal.check-single-writer` is on): the
//!   journal never appends a write from one coordinator while the coordinator that wrote last
//!   is still running, nor one from a coordinator after another has recovered from the journal;
//! - **allocation-to-downed** (§12 B10), at decision time: a coordinator never chooses a region
//!   that its own node's member view shows as downed or removed (or no longer shows at all).
//! - **graceful-shutdown-timeout** (§5.5, §12 B17, B18; when `liveness.check-graceful-shutdown`
//!   is on): a region in graceful shutdown hands
//!   off every shard and empties its buffers before its `GracefulShutdownTimeout` (the
//!   coordinated-shutdown phase timeout − 1 s); giving up there stops entities without a
//!   hand-off and drops what it buffered.

use super::{Invariant, Violation};
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::NodeId;
use shardsim_core::protocol::{CoordinatorEvent, Member, MemberStatus};
use shardsim_core::time::Instant;
use std::collections::BTreeMap;

/// What a journal-single-writer violation names: the writer's node, the other coordinator's,
/// and the shard of the event written, if it has one.
fn writers(writer: NodeId, other: NodeId, event: &CoordinatorEvent) -> Vec<Subject> {
    let mut about = vec![
        Subject::Node { node: writer },
        Subject::Coordinator { node: other },
    ];
    if let CoordinatorEvent::ShardHomeAllocated { shard, .. }
    | CoordinatorEvent::ShardHomeDeallocated { shard } = event
    {
        about.push(Subject::Shard { shard: *shard });
    }
    about
}

/// A coordinator instance: its node, that node's incarnation, and its generation on the node.
type Writer = (NodeId, u32, u32);

/// What the oracles know of the cluster.
#[derive(Debug, Default)]
pub(super) struct Oracles {
    /// Whether the journal-single-writer rule is on.
    pub(super) single_writer: bool,
    /// Whether the graceful-shutdown-timeout rule is on.
    pub(super) graceful_in_time: bool,
    /// node → (incarnation, generation) of the coordinator running there.
    running: BTreeMap<NodeId, (u32, u32)>,
    /// The coordinator whose write the journal appended last.
    last_writer: Option<Writer>,
    /// The coordinator that started (recovered from the journal) last.
    last_started: Option<Writer>,
    /// node → its member view.
    views: Vec<Vec<Member>>,
}

impl Oracles {
    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::NodeUp { node, .. } => {
                super::safety::slot(&mut self.views, node.0 as usize).clear()
            }
            TraceEvent::NodeDown { node, .. } => {
                self.running.remove(node);
                super::safety::slot(&mut self.views, node.0 as usize).clear();
            }
            TraceEvent::MemberView { node, members } => {
                *super::safety::slot(&mut self.views, node.0 as usize) = members.clone();
            }
            TraceEvent::CoordinatorStarted {
                node,
                incarnation,
                generation,
                ..
            } => {
                self.running.insert(*node, (*incarnation, *generation));
                self.last_started = Some((*node, *incarnation, *generation));
            }
            TraceEvent::CoordinatorStopped { node, .. } => {
                self.running.remove(node);
            }
            TraceEvent::Persisted {
                node,
                incarnation,
                generation,
                event,
            } => {
                let writer = (*node, *incarnation, *generation);
                // A write that lands after its coordinator stopped, while another one runs
                // (§12 B5: the stop overtook a write in flight; the running coordinator
                // recovered without it).
                let stopped = self.running.get(node) != Some(&(*incarnation, *generation));
                if self.single_writer && stopped {
                    if let Some((other, (oinc, _))) = self.running.iter().next() {
                        return Some(Violation {
                            invariant: Invariant::JournalSingleWriter,
                            t,
                            detail: format!(
                                "coordinator on node {} (incarnation {incarnation}) wrote {event:?} after it stopped, while the coordinator on node {} (incarnation {oinc}) runs",
                                node.0, other.0
                            ),
                            about: writers(*node, *other, event),
                        });
                    }
                }
                // A write from a coordinator that another one has recovered after (§12 B6, B7):
                // the newer coordinator's state lacks it, and its own writes will interleave
                // with it on the next recovery.
                if let Some(newer @ (nn, ninc, _)) = self.last_started {
                    if self.single_writer && newer != writer {
                        return Some(Violation {
                            invariant: Invariant::JournalSingleWriter,
                            t,
                            detail: format!(
                                "coordinator on node {} (incarnation {incarnation}) wrote {event:?} after the coordinator on node {} (incarnation {ninc}) recovered from the journal without it",
                                node.0, nn.0
                            ),
                            about: writers(*node, nn, event),
                        });
                    }
                }
                let last = self.last_writer.replace(writer);
                if let Some(last @ (ln, linc, lgen)) = last {
                    let still_running = self.running.get(&ln) == Some(&(linc, lgen));
                    if self.single_writer && last != writer && still_running {
                        return Some(Violation {
                            invariant: Invariant::JournalSingleWriter,
                            t,
                            detail: format!(
                                "coordinator on node {} (incarnation {incarnation}) wrote {event:?} while the coordinator on node {} (incarnation {linc}) is still running",
                                node.0, ln.0
                            ),
                            about: writers(*node, ln, event),
                        });
                    }
                }
            }
            TraceEvent::RegionStopped { node, reason }
                if self.graceful_in_time
                    && reason == shardsim_core::protocol::region::GRACEFUL_SHUTDOWN_TIMED_OUT =>
            {
                return Some(Violation {
                    invariant: Invariant::GracefulShutdownTimeout,
                    t,
                    detail: format!(
                        "the region on node {} gave up its graceful shutdown (GracefulShutdownTimeout) with shards or buffered messages left",
                        node.0
                    ),
                    about: vec![Subject::Node { node: *node }],
                });
            }
            TraceEvent::AllocationDecided {
                node,
                shard,
                region,
            } => {
                let known = self
                    .views
                    .get(node.0 as usize)
                    .and_then(|v| {
                        v.iter()
                            .find(|m| m.node == region.node && m.inc == region.inc)
                    })
                    .map(|m| m.status);
                if !matches!(known, Some(s) if s != MemberStatus::Down && s != MemberStatus::Removed)
                {
                    return Some(Violation {
                        invariant: Invariant::AllocationToDowned,
                        t,
                        detail: format!(
                            "coordinator on node {} allocated shard {shard} to node {} (incarnation {}), which its view shows as {}",
                            node.0,
                            region.node.0,
                            region.inc.0,
                            known.map(|s| format!("{s:?}")).unwrap_or_else(|| "removed".into())
                        ),
                        about: vec![
                            Subject::Node { node: *node },
                            Subject::Shard { shard: *shard },
                            Subject::Node { node: region.node },
                        ],
                    });
                }
            }
            _ => {}
        }
        None
    }
}
