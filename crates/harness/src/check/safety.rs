//! The safety rules over entity and delivery facts:
//!
//! - **at-most-one**: never two live incarnations of one entity (live = started, not stopped,
//!   its node not down), and never one shard hosted by two regions at once;
//! - **per-sender-order**: for every (sender, entity) the delivered seqs strictly increase
//!   (gaps are allowed: delivery is at-most-once);
//! - **no-duplicate**: no (sender, entity, seq) delivered twice; every delivery was sent, and
//!   reached an incarnation of the entity it was addressed to.

use super::{Invariant, Violation};
use crate::trace::{Subject, TraceEvent};
use shardsim_core::idmap::{pair_key, unpair, Dense, IdMap};
use shardsim_core::ids::{EntityId, NodeId, SenderId, ShardId};
use shardsim_core::time::Instant;

/// Per (sender, entity) delivery record.
#[derive(Clone, Debug, Default)]
struct Pair {
    sent_max: u64,
    last_delivered: u64,
    /// Bitmap of delivered seqs 0..64 (bit seq), kept inline: most pairs never need more.
    first: u64,
    /// Bitmap of delivered seqs from 64 on (bit seq - 64).
    more: Vec<u64>,
}

impl Pair {
    #[inline]
    fn was_delivered(&self, seq: u64) -> bool {
        if seq < 64 {
            return self.first & (1 << seq) != 0;
        }
        let (w, b) = (((seq - 64) / 64) as usize, seq % 64);
        self.more.get(w).is_some_and(|x| x & (1 << b) != 0)
    }
    #[inline]
    fn mark(&mut self, seq: u64) {
        if seq < 64 {
            self.first |= 1 << seq;
            return;
        }
        self.mark_more(seq);
    }
    #[cold]
    fn mark_more(&mut self, seq: u64) {
        let (w, b) = (((seq - 64) / 64) as usize, seq % 64);
        if self.more.len() <= w {
            self.more.resize(w + 1, 0);
        }
        self.more[w] |= 1 << b;
    }
}

/// Entity ids below this index the pairs' dense rows (a sender's row grows to the highest
/// such id it sent to: at most 48 KB); higher ids go to the hash table, which holds only the
/// pairs that exchanged messages.
const DENSE_PAIR_ENTITIES: u32 = 1 << 10;
/// Entity ids below this index the live incarnations by vector (at most 96 KB), above in a
/// table of the entities that ever started.
const DENSE_LIVE_ENTITIES: u32 = 1 << 12;

/// The state of the three safety rules. Small ids index dense vectors that grow on demand;
/// large ones a table of the ids used, so memory follows the live state, not the id space.
#[derive(Debug)]
pub(super) struct Safety {
    /// entity → live incarnations (node, incarnation).
    live: Dense<Vec<(NodeId, u64)>>,
    /// shard → hosting nodes.
    hosts: Vec<Vec<NodeId>>,
    /// (sender, entity) → record, for the pairs outside `dense` (keys: [`pair_key`]).
    pairs: IdMap<Pair>,
    /// Dense fast path for pairs: sender → entity → record.
    dense: Vec<Vec<Pair>>,
}

impl Default for Safety {
    fn default() -> Self {
        Safety {
            live: Dense::new(DENSE_LIVE_ENTITIES),
            hosts: Vec::new(),
            pairs: IdMap::new(),
            dense: Vec::new(),
        }
    }
}

pub(super) fn slot<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

/// Which delivery rule broke (see [`Safety::on_deliver`]), with what its text needs.
#[derive(Clone, Copy, Debug)]
enum DeliverFault {
    /// The receiving incarnation is not a live incarnation of the entity.
    NotLive,
    /// The seq was never sent (the highest sent so far).
    NeverSent(u64),
    /// The seq was delivered before.
    Twice,
    /// A lower seq after a higher one (the last delivered).
    Reordered(u64),
}

/// The violation a broken delivery rule reports: built only when one breaks.
#[cold]
#[inline(never)]
fn deliver_violation(
    fault: DeliverFault,
    t: Instant,
    sender: SenderId,
    entity: EntityId,
    seq: u64,
    node: NodeId,
    incarnation: u64,
) -> Violation {
    let (invariant, detail) = match fault {
        DeliverFault::NotLive => (
            Invariant::NoDuplicate,
            format!(
                "{sender}→{entity} seq {seq} delivered on node {node} to incarnation {incarnation}, which is not a live incarnation of {entity}"
            ),
        ),
        DeliverFault::NeverSent(sent_max) => (
            Invariant::NoDuplicate,
            format!("{sender}→{entity} seq {seq} delivered but never sent (sent up to {sent_max})"),
        ),
        DeliverFault::Twice => (
            Invariant::NoDuplicate,
            format!("{sender}→{entity} seq {seq} delivered twice (now on node {node}, incarnation {incarnation})"),
        ),
        DeliverFault::Reordered(last) => (
            Invariant::PerSenderOrder,
            format!(
                "{sender}→{entity} seq {seq} delivered after seq {last} (node {node}, incarnation {incarnation})"
            ),
        ),
    };
    Violation {
        invariant,
        t,
        detail,
        about: vec![
            Subject::Message {
                sender,
                entity,
                seq,
            },
            Subject::Node { node },
        ],
    }
}

fn violation(
    invariant: Invariant,
    t: Instant,
    detail: String,
    about: Vec<Subject>,
) -> Option<Violation> {
    Some(Violation {
        invariant,
        t,
        detail,
        about,
    })
}

impl Safety {
    #[inline]
    fn pair(&mut self, sender: SenderId, entity: EntityId) -> &mut Pair {
        let (s, e) = (sender.0 as usize, entity.0 as usize);
        if s < self.dense.len() && e < self.dense[s].len() {
            return &mut self.dense[s][e];
        }
        self.pair_slow(sender, entity)
    }

    fn pair_slow(&mut self, sender: SenderId, entity: EntityId) -> &mut Pair {
        if sender.0 < 4096 && entity.0 < DENSE_PAIR_ENTITIES {
            let row = slot(&mut self.dense, sender.0 as usize);
            return slot(row, entity.0 as usize);
        }
        self.pairs
            .get_or_insert_with(pair_key(sender.0, entity.0), Pair::default)
    }

    /// The rules over every event but Send and Deliver (those come through the direct methods).
    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::EntityStarted {
                entity,
                node,
                incarnation,
                ..
            } => {
                let live = self.live.slot(entity.0);
                if let Some((other_node, other_inc)) = live.first().copied() {
                    live.push((*node, *incarnation));
                    return violation(
                        Invariant::AtMostOne,
                        t,
                        format!(
                            "entity {entity} started as incarnation {incarnation} on node {node} while incarnation {other_inc} is alive on node {other_node}"
                        ),
                        vec![
                            Subject::Entity { entity: *entity },
                            Subject::Node { node: *node },
                            Subject::Node { node: other_node },
                        ],
                    );
                }
                live.push((*node, *incarnation));
            }
            TraceEvent::EntityStopped {
                entity,
                incarnation,
                ..
            } => {
                let live = self.live.slot(entity.0);
                live.retain(|(_, i)| i != incarnation);
            }
            TraceEvent::NodeDown { node, .. } => {
                for l in self.live.values_mut() {
                    l.retain(|(n, _)| n != node);
                }
                for h in &mut self.hosts {
                    h.retain(|n| n != node);
                }
            }
            TraceEvent::ShardHosted { shard, node } => {
                let hosts = slot(&mut self.hosts, shard.0 as usize);
                if let Some(other) = hosts.iter().find(|n| *n != node).copied() {
                    hosts.push(*node);
                    return violation(
                        Invariant::AtMostOne,
                        t,
                        format!(
                            "shard {shard} hosted on node {node} while node {other} still hosts it"
                        ),
                        vec![
                            Subject::Shard { shard: *shard },
                            Subject::Node { node: *node },
                            Subject::Node { node: other },
                        ],
                    );
                }
                if !hosts.contains(node) {
                    hosts.push(*node);
                }
            }
            TraceEvent::ShardUnhosted { shard, node } => {
                slot(&mut self.hosts, shard.0 as usize).retain(|n| n != node);
            }
            _ => {}
        }
        None
    }

    /// A send: the highest seq sent per pair.
    #[inline]
    pub(super) fn on_send(&mut self, sender: SenderId, entity: EntityId, seq: u64) {
        let p = self.pair(sender, entity);
        p.sent_max = p.sent_max.max(seq);
    }

    /// A delivery: no-duplicate, then per-sender-order.
    #[inline]
    pub(super) fn on_deliver(
        &mut self,
        t: Instant,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        node: NodeId,
        incarnation: u64,
    ) -> Option<Violation> {
        // The rules run without building any text; only a broken one calls the cold path.
        let fault = self.deliver_fault(sender, entity, seq, node, incarnation)?;
        Some(deliver_violation(
            fault,
            t,
            sender,
            entity,
            seq,
            node,
            incarnation,
        ))
    }

    /// The delivery rules: which one the delivery breaks, if any.
    #[inline]
    fn deliver_fault(
        &mut self,
        sender: SenderId,
        entity: EntityId,
        seq: u64,
        node: NodeId,
        incarnation: u64,
    ) -> Option<DeliverFault> {
        let live_here = self
            .live
            .get(entity.0)
            .is_some_and(|l| l.iter().any(|(n, i)| *n == node && *i == incarnation));
        if !live_here {
            return Some(DeliverFault::NotLive);
        }
        let p = self.pair(sender, entity);
        if seq == 0 || seq > p.sent_max {
            return Some(DeliverFault::NeverSent(p.sent_max));
        }
        if p.was_delivered(seq) {
            return Some(DeliverFault::Twice);
        }
        let last = p.last_delivered;
        p.mark(seq);
        if seq < last {
            return Some(DeliverFault::Reordered(last));
        }
        p.last_delivered = seq;
        None
    }

    /// The highest seq of (sender, entity) sent so far (0: none).
    pub(super) fn sent_max(&self, sender: SenderId, entity: EntityId) -> u64 {
        let (s, e) = (sender.0 as usize, entity.0 as usize);
        match self.dense.get(s).and_then(|row| row.get(e)) {
            Some(p) => p.sent_max,
            None => self
                .pairs
                .get(pair_key(sender.0, entity.0))
                .map_or(0, |p| p.sent_max),
        }
    }

    /// Whether `seq` of (sender, entity) was delivered (message conservation).
    pub(super) fn was_delivered(&self, sender: SenderId, entity: EntityId, seq: u64) -> bool {
        let (s, e) = (sender.0 as usize, entity.0 as usize);
        match self.dense.get(s).and_then(|row| row.get(e)) {
            Some(p) => p.was_delivered(seq),
            None => self
                .pairs
                .get(pair_key(sender.0, entity.0))
                .is_some_and(|p| p.was_delivered(seq)),
        }
    }

    /// Every (sender, entity) pair with the highest seq sent (seqs 1..=that were all sent),
    /// in (sender, entity) order.
    pub(super) fn sent_pairs(&self) -> impl Iterator<Item = (SenderId, EntityId, u64)> + '_ {
        let dense = self.dense.iter().enumerate().flat_map(|(s, row)| {
            row.iter()
                .enumerate()
                .filter(|(_, p)| p.sent_max > 0)
                .map(move |(e, p)| (SenderId(s as u32), EntityId(e as u32), p.sent_max))
        });
        let sparse = self
            .pairs
            .iter()
            .filter(|(_, p)| p.sent_max > 0)
            .map(|(k, p)| {
                let (s, e) = unpair(k);
                (SenderId(s), EntityId(e), p.sent_max)
            });
        let mut all: Vec<(SenderId, EntityId, u64)> = dense.chain(sparse).collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// Live incarnations of `entity`.
    pub(super) fn live_incarnations(&self, entity: EntityId) -> &[(NodeId, u64)] {
        self.live.get(entity.0).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Nodes hosting `shard`.
    pub(super) fn hosts(&self, shard: ShardId) -> &[NodeId] {
        self.hosts
            .get(shard.0 as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}
