//! The coordinator's journal: an endpoint of the network with its own faults (unavailable,
//! slow, failing), holding the events written so far.

use crate::scenario::JournalSpec;
use crate::trace::TraceEvent;
use shardsim_core::ids::{EntityId, NodeId, ShardId};
use shardsim_core::protocol::{CoordinatorEvent, StoreOp, StoreReplyKind, StoreRequest};
use shardsim_core::rng::{Rng, Stream};
use std::collections::{BTreeMap, BTreeSet};

/// The journal of one run.
pub struct Journal {
    /// Events written, in order.
    pub events: Vec<CoordinatorEvent>,
    /// The eventsourced remember-entities stores (`/sharding/<type>Shard/<shard>`, §6.4): the
    /// entities each shard's `EntitiesStarted`/`EntitiesStopped` events leave remembered.
    pub shard_stores: BTreeMap<ShardId, BTreeSet<EntityId>>,
    /// Reachable at all (the links are cut while not).
    pub available: bool,
    /// Every write silently fails.
    pub failing: bool,
    /// Extra write latency (µs).
    pub extra_latency_us: u64,
    spec: JournalSpec,
    rng: Rng,
}

impl Journal {
    /// An empty, available journal.
    pub fn new(spec: JournalSpec, seed: u64) -> Self {
        Journal {
            events: Vec::new(),
            shard_stores: BTreeMap::new(),
            available: true,
            failing: false,
            extra_latency_us: 0,
            spec,
            rng: Rng::fork(seed, Stream::Journal),
        }
    }

    /// How long the next write takes beyond the network (µs).
    pub fn write_latency_us(&mut self) -> u64 {
        let [lo, hi] = self.spec.write_latency_ms;
        self.rng.range(lo * 1000, hi * 1000) + self.extra_latency_us
    }

    /// The eventsourced remember-entities store (a persistent actor per shard writing to the
    /// journal, §6.4) serves a request of `node` that reached it: the answer and the trace event
    /// of what it read or wrote; `None` when a failing journal loses the write (no answer).
    pub fn serve_store(
        &mut self,
        node: NodeId,
        req: &StoreRequest,
    ) -> Option<(StoreReplyKind, TraceEvent)> {
        match &req.op {
            StoreOp::GetEntities => {
                let entities: Vec<EntityId> = self
                    .shard_stores
                    .get(&req.shard)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                let ev = TraceEvent::StoreRead {
                    node,
                    shard: req.shard,
                    entities: entities.clone(),
                };
                Some((StoreReplyKind::Remembered(entities), ev))
            }
            StoreOp::Update { started, stopped } => {
                if self.failing {
                    return None;
                }
                let set = self.shard_stores.entry(req.shard).or_default();
                for e in started {
                    set.insert(*e);
                }
                for e in stopped {
                    set.remove(e);
                }
                let ev = TraceEvent::StoreWrite {
                    node,
                    shard: req.shard,
                    started: started.clone(),
                    stopped: stopped.clone(),
                };
                Some((StoreReplyKind::UpdateDone, ev))
            }
        }
    }

    /// Clear every journal fault.
    pub fn heal(&mut self) {
        self.failing = false;
        self.extra_latency_us = 0;
    }
}
