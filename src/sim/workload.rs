//! The workload: senders on each node handing user messages to their local region, each with a
//! per-entity sequence number so the checkers can see order and duplicates.

use crate::ids::{EntityId, NodeId, SenderId};
use crate::protocol::Envelope;
use crate::rng::{Rng, Stream};
use crate::scenario::Scenario;
use crate::time::{Duration, Instant};
use std::collections::BTreeSet;

struct Sender {
    id: SenderId,
    node: NodeId,
    focus: Vec<EntityId>,
    seqs: Vec<u64>,
}

/// Every sender of a run and the workload's random stream.
pub struct Workload {
    senders: Vec<Sender>,
    rng: Rng,
    started: BTreeSet<NodeId>,
    entities: u32,
    interval_us: [u64; 2],
    start: Instant,
    stop: Instant,
}

impl Workload {
    /// The senders of `sc` for `seed`.
    pub fn new(sc: &Scenario, seed: u64) -> Self {
        let mut rng = Rng::fork(seed, Stream::Workload);
        let mut senders = Vec::new();
        for node in 0..sc.cluster.nodes {
            for _ in 0..sc.workload.senders_per_node {
                let id = SenderId(senders.len() as u32);
                let focus = if sc.workload.focus == 0 || sc.workload.focus >= sc.entities.count {
                    Vec::new()
                } else {
                    (0..sc.workload.focus)
                        .map(|_| EntityId(rng.range(0, u64::from(sc.entities.count) - 1) as u32))
                        .collect()
                };
                senders.push(Sender {
                    id,
                    node: NodeId(node),
                    focus,
                    seqs: vec![0; sc.entities.count as usize],
                });
            }
        }
        let [lo, hi] = sc.workload.interval_ms;
        Workload {
            senders,
            rng,
            started: BTreeSet::new(),
            entities: sc.entities.count,
            interval_us: [lo * 1000, hi * 1000],
            start: Instant(0) + Duration::from_millis(sc.workload.start_ms),
            stop: Instant(0) + Duration::from_millis(sc.workload.stop_ms),
        }
    }

    /// The node a sender runs on.
    pub fn node_of(&self, sender: u32) -> NodeId {
        self.senders[sender as usize].node
    }

    /// A node came up: the first sends of its senders, once per run (a sender survives its
    /// node's crash and resumes after). No send after `stop-ms`, not even the first.
    pub fn start_node(&mut self, node: NodeId, now: Instant) -> Vec<(Instant, u32)> {
        let mut first_sends = Vec::new();
        if !self.started.insert(node) {
            return first_sends;
        }
        let first = if self.start > now { self.start } else { now };
        let [lo, hi] = self.interval_us;
        for (i, s) in self.senders.iter().enumerate() {
            if s.node == node {
                let at = first + Duration(self.rng.range(lo, hi));
                if at <= self.stop {
                    first_sends.push((at, i as u32));
                }
            }
        }
        first_sends
    }

    /// When a sender that sends at `now` sends next, if before `stop-ms`.
    #[inline]
    pub fn next_send(&mut self, now: Instant) -> Option<Instant> {
        let [lo, hi] = self.interval_us;
        let next = now + Duration(self.rng.range(lo, hi));
        (next <= self.stop).then_some(next)
    }

    /// The next message of `sender`: a drawn entity and its next sequence number.
    #[inline]
    pub fn message(&mut self, sender: u32) -> Envelope {
        let s = &mut self.senders[sender as usize];
        let entity = if s.focus.is_empty() {
            EntityId(self.rng.range(0, u64::from(self.entities) - 1) as u32)
        } else {
            s.focus[self.rng.range(0, s.focus.len() as u64 - 1) as usize]
        };
        let slot = &mut s.seqs[entity.0 as usize];
        *slot += 1;
        Envelope {
            sender: s.id,
            entity,
            seq: *slot,
        }
    }
}
