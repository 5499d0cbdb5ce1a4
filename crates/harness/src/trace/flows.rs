//! The send and arrival times of a run's protocol messages, recorded beside the trace (not
//! hashed, not in the JSON Lines file) for the Perfetto export's flows
//! ([`crate::perfetto`] describes how they are paired).

use shardsim_core::ids::NodeId;
use shardsim_core::protocol::{Addr, Role};
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// A message waiting on its link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    sent: Instant,
    from: Role,
    to: Role,
    msg: &'static str,
    /// Trace events recorded before the send (orders it among the events of its µs).
    after: usize,
}

/// One protocol message's journey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// When it was sent.
    pub sent: Instant,
    /// When it reached the end of its link (or was found lost; the send time if never sent).
    pub arrived: Instant,
    /// Sending node.
    pub from_node: NodeId,
    /// Sending actor.
    pub from: Role,
    /// Receiving node.
    pub to_node: NodeId,
    /// Receiving actor.
    pub to: Role,
    /// The message's name.
    pub msg: &'static str,
    /// Trace events recorded before the send.
    pub after: usize,
}

/// The send times of a run's protocol messages (see `shardsim::perfetto`).
#[derive(Clone, Debug, Default)]
pub struct FlowLog {
    pending: BTreeMap<(u32, u32), VecDeque<Pending>>,
    /// Arrivals that were delivered (a `Msg` or `DeadLetter` event each), in order.
    pub arrived: Vec<Flow>,
    /// Messages lost: on a cut link at the send, or in flight when their link was cut.
    pub lost: Vec<Flow>,
}

impl FlowLog {
    pub(crate) fn sent(
        &mut self,
        t: Instant,
        from: Addr,
        to: Addr,
        msg: &'static str,
        sent: bool,
        after: usize,
    ) {
        let p = Pending {
            sent: t,
            from: from.role,
            to: to.role,
            msg,
            after,
        };
        if sent {
            self.pending
                .entry((from.node.0, to.node.0))
                .or_default()
                .push_back(p);
        } else {
            self.lost.push(flow(p, t, from.node, to.node));
        }
    }

    pub(crate) fn arrived(&mut self, t: Instant, from: Addr, to: Addr, ok: bool) {
        let Some(p) = self
            .pending
            .get_mut(&(from.node.0, to.node.0))
            .and_then(VecDeque::pop_front)
        else {
            return;
        };
        let f = flow(p, t, from.node, to.node);
        if ok {
            self.arrived.push(f);
        } else {
            self.lost.push(f);
        }
    }
}

fn flow(p: Pending, arrived: Instant, from: NodeId, to: NodeId) -> Flow {
    Flow {
        sent: p.sent,
        arrived,
        from_node: from,
        from: p.from,
        to_node: to,
        to: p.to,
        msg: p.msg,
        after: p.after,
    }
}
