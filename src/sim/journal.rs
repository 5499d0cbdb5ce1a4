//! The coordinator's journal: an endpoint of the network with its own faults (unavailable,
//! slow, failing), holding the events written so far.

use crate::ids::{EntityId, ShardId};
use crate::protocol::CoordinatorEvent;
use crate::rng::{Rng, Stream};
use crate::scenario::JournalSpec;
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

    /// Clear every journal fault.
    pub fn heal(&mut self) {
        self.failing = false;
        self.extra_latency_us = 0;
    }
}
