//! The application side of sharding: how a message maps to a shard, and the entity itself.

use crate::ids::{EntityId, ShardId};
use crate::protocol::Envelope;

/// Akka's `extractShardId`: supplied by the application. Must be a pure function of the entity
/// id (a randomized hash breaks at-most-one, akka-sharding.md §12 B8).
pub trait ShardExtractor: Send + Sync {
    /// The shard of `entity`.
    fn shard_id(&self, entity: EntityId) -> ShardId;
}

/// The default extractor: a fixed, portable hash of the entity id modulo `shards` (FNV-1a over
/// the id's decimal string, the same on every machine).
#[derive(Clone, Copy, Debug)]
pub struct HashExtractor {
    /// Number of shards.
    pub shards: u32,
}

impl ShardExtractor for HashExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        ShardId(fnv1a_u32(entity.0) % self.shards.max(1))
    }
}

/// [`HashExtractor`] with its answers for entities `0..entities` computed once: the same
/// function, one array lookup per message (the simulator's hot path).
#[derive(Clone, Debug)]
pub struct TabledExtractor {
    inner: HashExtractor,
    table: Vec<ShardId>,
}

impl TabledExtractor {
    /// Tabulate `inner` for entity ids below `entities`.
    pub fn new(inner: HashExtractor, entities: u32) -> Self {
        TabledExtractor {
            inner,
            table: (0..entities).map(|e| inner.shard_id(EntityId(e))).collect(),
        }
    }
}

impl ShardExtractor for TabledExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        match self.table.get(entity.0 as usize) {
            Some(s) => *s,
            None => self.inner.shard_id(entity),
        }
    }
}

/// FNV-1a over the decimal digits of `n`: portable and stable across versions.
pub fn fnv1a_u32(n: u32) -> u32 {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    let mut v = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut h: u32 = 0x811c_9dc5;
    for &b in &buf[i..] {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// An entity actor: the application's logic. Entities see messages one at a time, in the order
/// their shard delivers them.
pub trait Entity: Send {
    /// Handle one message.
    fn receive(&mut self, env: &Envelope);
}

/// Creates entities when their first message arrives.
pub trait EntityFactory: Send + Sync {
    /// A new incarnation of `entity`.
    fn create(&self, entity: EntityId) -> Box<dyn Entity>;
}

/// The default entity: it records how many messages it received and the last one.
#[derive(Clone, Debug, Default)]
pub struct RecordingEntity {
    /// Messages received.
    pub received: u64,
    /// The last message received.
    pub last: Option<Envelope>,
}

impl Entity for RecordingEntity {
    fn receive(&mut self, env: &Envelope) {
        self.received += 1;
        self.last = Some(*env);
    }
}

/// Factory for [`RecordingEntity`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordingFactory;

impl EntityFactory for RecordingFactory {
    fn create(&self, _entity: EntityId) -> Box<dyn Entity> {
        Box::new(RecordingEntity::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable() {
        // Known answers: changing these changes every scenario's shard map.
        assert_eq!(fnv1a_u32(0), 0x350c_a8af);
        let x = HashExtractor { shards: 10 };
        let shards: Vec<u32> = (0..5).map(|e| x.shard_id(EntityId(e)).0).collect();
        assert_eq!(shards.len(), 5);
        assert!(shards.iter().all(|s| *s < 10));
        let t = TabledExtractor::new(x, 3);
        for e in 0..6 {
            assert_eq!(t.shard_id(EntityId(e)), x.shard_id(EntityId(e)));
        }
    }
}
