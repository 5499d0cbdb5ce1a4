//! The workload: senders on each node handing user messages to their local region, each with a
//! per-entity sequence number so the checkers can see order and duplicates.

use crate::scenario::Scenario;
use shardsim_core::idmap::Dense;
use shardsim_core::ids::{EntityId, NodeId, SenderId};
use shardsim_core::protocol::Envelope;
use shardsim_core::rng::{Rng, Stream};
use shardsim_core::time::{Duration, Instant};
use std::collections::BTreeSet;

struct Sender {
    id: SenderId,
    node: NodeId,
    focus: Vec<EntityId>,
    /// entity → the last seq sent to it: a vector for small ids, a table of the entities
    /// this sender addressed for the rest.
    seqs: Dense<u64>,
}

/// Entity ids below this count their seqs in a sender's vector (at most 8 KB per sender).
const DENSE_SEQ_ENTITIES: u32 = 1 << 10;

/// Every sender of a run and the workload's random stream.
pub struct Workload {
    senders: Vec<Sender>,
    rng: Rng,
    started: BTreeSet<NodeId>,
    entities: u32,
    interval_us: [u64; 2],
    start: Instant,
    stop: Instant,
    /// `workload.key-space-growth-ms`, when on: the entity choice draws from here.
    growth: Option<Growth>,
}

/// A growing key space (`workload.key-space-growth-ms`): its own stream, so a scenario without
/// it draws exactly as before.
struct Growth {
    rng: Rng,
    from_us: u64,
    to_us: u64,
}

impl Growth {
    /// How many of a population of `pop` are addressed at `now`: one until `from`, then a
    /// share growing linearly to all of them at `to` (at least one).
    fn addressed(&self, pop: u64, now: Instant) -> u64 {
        if now.0 >= self.to_us {
            return pop;
        }
        if now.0 < self.from_us {
            return 1;
        }
        let span = u128::from(self.to_us - self.from_us);
        let n = (u128::from(pop) * u128::from(now.0 - self.from_us)).div_ceil(span);
        (n as u64).clamp(1, pop)
    }
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
                    seqs: Dense::new(DENSE_SEQ_ENTITIES),
                });
            }
        }
        let [lo, hi] = sc.workload.interval_ms;
        let [from, to] = sc.workload.key_space_growth_ms;
        let growth = (to > 0).then(|| Growth {
            rng: Rng::fork(seed, Stream::WorkloadGrowth),
            from_us: from * 1000,
            to_us: to * 1000,
        });
        Workload {
            senders,
            rng,
            started: BTreeSet::new(),
            entities: sc.entities.count,
            interval_us: [lo * 1000, hi * 1000],
            start: Instant(0) + Duration::from_millis(sc.workload.start_ms),
            stop: Instant(0) + Duration::from_millis(sc.workload.stop_ms),
            growth,
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

    /// The next message of `sender` at `now`: a drawn entity and its next sequence number.
    #[inline]
    pub fn message(&mut self, sender: u32, now: Instant) -> Envelope {
        let s = &mut self.senders[sender as usize];
        let pop = if s.focus.is_empty() {
            u64::from(self.entities)
        } else {
            s.focus.len() as u64
        };
        let idx = match &mut self.growth {
            None => self.rng.range(0, pop - 1),
            Some(g) => {
                let n = g.addressed(pop, now);
                g.rng.range(0, n - 1)
            }
        };
        let entity = if s.focus.is_empty() {
            EntityId(idx as u32)
        } else {
            s.focus[idx as usize]
        };
        let slot = s.seqs.slot(entity.0);
        *slot += 1;
        Envelope {
            sender: s.id,
            entity,
            seq: *slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_key_space_addresses_one_entity_then_more_then_all() {
        let g = Growth {
            rng: Rng::fork(0, Stream::WorkloadGrowth),
            from_us: 1_000_000,
            to_us: 11_000_000,
        };
        assert_eq!(g.addressed(100, Instant(0)), 1);
        assert_eq!(g.addressed(100, Instant(999_999)), 1);
        assert_eq!(g.addressed(100, Instant(1_000_000)), 1);
        assert_eq!(g.addressed(100, Instant(6_000_000)), 50);
        assert_eq!(g.addressed(100, Instant(6_000_001)), 51);
        assert_eq!(g.addressed(100, Instant(11_000_000)), 100);
        assert_eq!(g.addressed(3, Instant(20_000_000)), 3);
        let step = Growth {
            from_us: 5,
            to_us: 5,
            ..g
        };
        assert_eq!(step.addressed(7, Instant(4)), 1);
        assert_eq!(step.addressed(7, Instant(5)), 7);
    }
}
