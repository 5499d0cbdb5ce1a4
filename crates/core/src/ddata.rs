//! Akka Distributed Data, as much of it as cluster sharding uses: the replicated data types
//! (an observed-remove set and a grow-only set), the keys sharding stores them under, and one
//! [`Replicator`] per node incarnation as a sans-IO state machine.
//!
//! Sharding keeps two things in Distributed Data (docs/akka-reference.md §3.3, §6.4):
//! - remember-entities, `ddata` store: per shard, 5 `ORSet[EntityId]` keys
//!   `shard-<type>-<shardId>-<0..4>`, an entity going to key `abs(id.hashCode % 5)`
//!   ([`Key::ShardEntities`], [`entity_key_part`]); the coordinator's set of shards with
//!   remembered entities, a `GSet[String]` under `shard-<type>-all` ([`Key::AllShards`]). Both
//!   are durable (`durable.keys = ["shard-*"]`, §9.1): they survive a restart of the node.
//! - the coordinator state (§3.3) with `state-store-mode = ddata`, an `LWWRegister[State]`
//!   under `<TypeName>CoordinatorState` ([`Key::CoordinatorState`], [`LwwRegister`]); not
//!   durable.
//!
//! Layout: this file holds the keys, the [`Data`] a key holds and the Java hash helpers;
//! `orset.rs` the CRDTs ([`OrSet`], [`GSet`]); `replicator.rs` the [`Replicator`] with its
//! inputs, outputs and messages; `tests.rs` a small deterministic network of replicators.
//!
//! Determinism: no hashing containers, no clock, no randomness; where Akka picks a random node
//! (gossip) or shuffles (read/write targets without `prefer-oldest`) the replicator takes a
//! fixed order instead.

use crate::ids::{EntityId, ShardId};
use crate::membership::NodeAddr;
use crate::protocol::coordinator::CoordinatorState;
use std::fmt;

mod orset;
mod replicator;
mod shard_store;
#[cfg(test)]
mod tests;

pub use orset::{GSet, OrSet};
pub use replicator::{
    calculate_majority, default_durable, GetResult, ReadConsistency, ReplInput, ReplMsg,
    ReplOutput, ReplTimer, Replicator, ReplicatorConfig, UpdateOp, UpdateResult, WriteConsistency,
};
pub use shard_store::{RememberStores, StoreInput, StoreOutput, StoreSettings};

/// Number of keys the remember-entities store splits a shard's entities over
/// (`DDataRememberEntitiesShardStore.numberOfKeys`, not configurable in Akka, §6.4).
pub const ENTITY_KEYS_PER_SHARD: u8 = 5;

/// A Distributed Data key, as sharding names them (§3.3, §6.4).
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum Key {
    /// `shard-<type>-<shardId>-<part>`: one fifth of the remembered entities of `shard`, an
    /// [`OrSet`] of entity ids (§6.4).
    ShardEntities {
        /// The shard whose remembered entities this key holds a part of.
        shard: ShardId,
        /// Which of the [`ENTITY_KEYS_PER_SHARD`] keys: [`entity_key_part`] of its entities.
        part: u8,
    },
    /// `shard-<type>-all`: the coordinator's remember store, a [`GSet`] of the shards that have
    /// remembered entities (§3.3).
    AllShards,
    /// `<TypeName>CoordinatorState`: the whole coordinator state in an [`LwwRegister`]
    /// (`state-store-mode = ddata`, §3.3). Not durable.
    CoordinatorState,
}

impl Key {
    /// The key that remembers `entity` of `shard` (`DDataRememberEntitiesShardStore.key`).
    pub fn for_entity(shard: ShardId, entity: EntityId) -> Key {
        Key::ShardEntities {
            shard,
            part: entity_key_part(entity),
        }
    }

    /// The kind of data this key holds.
    pub fn kind(&self) -> DataKind {
        match self {
            Key::ShardEntities { .. } => DataKind::OrSet,
            Key::AllShards => DataKind::GSet,
            Key::CoordinatorState => DataKind::Lww,
        }
    }
}

impl fmt::Display for Key {
    /// Akka's key id without the entity type name (the simulator has one type).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::ShardEntities { shard, part } => write!(f, "shard-{}-{}", shard.0, part),
            Key::AllShards => write!(f, "shard-all"),
            Key::CoordinatorState => write!(f, "CoordinatorState"),
        }
    }
}

/// The kinds of [`Data`]; each [`Key`] holds exactly one kind.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum DataKind {
    /// An [`OrSet`].
    OrSet,
    /// A [`GSet`].
    GSet,
    /// An [`LwwRegister`] of the coordinator state.
    Lww,
}

/// The value of one key: entity and shard ids as raw `u32`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Data {
    /// An observed-remove set (remembered entities of one key of a shard).
    OrSet(OrSet<u32>),
    /// A grow-only set (shards with remembered entities).
    GSet(GSet<u32>),
    /// The coordinator state register (boxed: the state is large next to the sets).
    Lww(Box<LwwRegister>),
}

impl Data {
    /// The empty value of `kind`.
    pub fn empty(kind: DataKind) -> Data {
        match kind {
            DataKind::OrSet => Data::OrSet(OrSet::new()),
            DataKind::GSet => Data::GSet(GSet::new()),
            DataKind::Lww => Data::Lww(Box::default()),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> DataKind {
        match self {
            Data::OrSet(_) => DataKind::OrSet,
            Data::GSet(_) => DataKind::GSet,
            Data::Lww(_) => DataKind::Lww,
        }
    }

    /// The CRDT merge of `self` and `other`, or `None` when their kinds differ (Akka throws
    /// "Couldn't merge" there, `Replicator.write`; here the caller keeps its value).
    pub fn merged(&self, other: &Data) -> Option<Data> {
        match (self, other) {
            (Data::OrSet(a), Data::OrSet(b)) => {
                let mut m = a.clone();
                m.merge(b);
                Some(Data::OrSet(m))
            }
            (Data::GSet(a), Data::GSet(b)) => {
                let mut m = a.clone();
                m.merge(b);
                Some(Data::GSet(m))
            }
            (Data::Lww(a), Data::Lww(b)) => Some(Data::Lww(Box::new(a.merged(b).clone()))),
            _ => None,
        }
    }

    /// The ids in the set, in order (whatever the kind; a register holds none).
    pub fn elements(&self) -> Vec<u32> {
        match self {
            Data::OrSet(s) => s.elements().collect(),
            Data::GSet(s) => s.elements().collect(),
            Data::Lww(_) => Vec::new(),
        }
    }
}

/// Akka's `LWWRegister[State]` (akka-distributed-data `LWWRegister.scala`) holding the
/// coordinator state (§3.3): the value, the timestamp of its write and the node that wrote it.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct LwwRegister {
    /// The coordinator state held: shard homes, regions, proxies and unallocated shards.
    pub value: CoordinatorState,
    /// When it was written (simulated µs), by [`LwwRegister::with_value`]'s clock.
    pub timestamp: u64,
    /// The writer (Akka's `UniqueAddress`: node and incarnation).
    pub node: NodeAddr,
}

impl LwwRegister {
    /// `withValue(node, value, defaultClock)`: the new value written by `node` at `now`, with
    /// Akka's `LWWRegister.defaultClock`: `max(current timestamp + 1, now)`, so a write always
    /// wins over the value it replaces on the same replica, even within one clock tick.
    pub fn with_value(&self, node: NodeAddr, value: CoordinatorState, now_us: u64) -> LwwRegister {
        LwwRegister {
            value,
            timestamp: now_us.max(self.timestamp.saturating_add(1)),
            node,
        }
    }

    /// `LWWRegister.merge`: the higher timestamp wins; on equal timestamps the lower node
    /// address (Akka: `that.node < node`), so every replica picks the same value.
    pub fn merged<'a>(&'a self, that: &'a LwwRegister) -> &'a LwwRegister {
        if that.timestamp > self.timestamp {
            that
        } else if that.timestamp < self.timestamp {
            self
        } else if that.node < self.node {
            that
        } else {
            self
        }
    }
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + … + s[n-1]` over the UTF-16 code units, in
/// 32-bit wrapping arithmetic. Akka's remember-entities key choice (§6.4) and its
/// `HashCodeMessageExtractor` (`abs(id.hashCode % maxNumberOfShards)`) both use it.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The remember-entities key part of `entity`: Akka's `math.abs(entityId.hashCode % 5)`
/// (`DDataRememberEntitiesShardStore.key`, §6.4), where the entity id string is the decimal
/// number. Java's `%` keeps the sign of the dividend (as Rust's does), then `abs`.
pub fn entity_key_part(entity: EntityId) -> u8 {
    let h = java_string_hash(&entity.0.to_string());
    // `h % 5` is in -4..=4, so `abs` cannot overflow and the cast cannot truncate.
    (h % i32::from(ENTITY_KEYS_PER_SHARD)).unsigned_abs() as u8
}
