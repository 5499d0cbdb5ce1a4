//! The application side of sharding: how a message maps to a shard, and the entity itself.
//!
//! Three extractors, chosen per scenario (`[entities] extractor`, [`ExtractorKind`]): the
//! default FNV-1a hash ([`HashExtractor`]), Akka's `HashCodeMessageExtractor`
//! ([`AkkaHashCodeExtractor`], Java's `String.hashCode`), and a hash seeded per node
//! incarnation ([`SeededHashExtractor`]) like .NET Core's randomized `string.GetHashCode()`,
//! which makes nodes disagree on an entity's shard (docs/akka-reference.md §12 B8, akka.net#3361).
//! Every region gets its own extractor from the run's [`Extractors`] when it starts, tabled
//! ([`TabledExtractor`]) so that routing a message is one array lookup.

use crate::ids::{EntityId, RegionRef, ShardId};
use crate::protocol::Envelope;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Akka's `extractShardId`: supplied by the application. Must be a pure function of the entity
/// id (a randomized hash breaks at-most-one, docs/akka-reference.md §12 B8).
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

/// Akka's `HashCodeMessageExtractor` (ShardRegion.scala, `object HashCodeMessageExtractor`):
/// `(math.abs(id.hashCode) % maxNumberOfShards).toString`, with the entity id string the
/// decimal digits of our numeric id and `hashCode` Java's `String.hashCode`
/// ([`java_string_hash`]). Stable across processes and JVM versions (the JLS specifies
/// `String.hashCode`), so every node agrees: the extractor of the B8 fix (§12 B8).
///
/// Akka keeps `abs(hashCode) % n` rather than `abs(hashCode % n)` (its comment cites
/// akka#25034: changing it would move shards in a rolling upgrade). The two differ only for a
/// hash of `Int.MinValue`, whose `abs` is itself: Akka's shard id is then `-k` (`k` =
/// `2^31 mod n`), a shard no other id maps to. Here it is `ShardId((-k) as u32)`, the same
/// 32 bits, likewise distinct from every non-negative shard (among decimal `u32` ids only
/// `"539019926"` hashes to `Int.MinValue`).
#[derive(Clone, Copy, Debug)]
pub struct AkkaHashCodeExtractor {
    /// Akka's `maxNumberOfShards` (a Java `Int`: at most `i32::MAX`; larger values are
    /// clamped, and the harness's `Scenario::validate` rejects them).
    pub max_number_of_shards: u32,
}

impl ShardExtractor for AkkaHashCodeExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        let n = i32::try_from(self.max_number_of_shards)
            .unwrap_or(i32::MAX)
            .max(1);
        let h = java_string_hash(&entity.0.to_string());
        // Scala's `math.abs` on an Int wraps at Int.MinValue; Java's `%` keeps the dividend's
        // sign (Rust's `%` on i32 does the same).
        ShardId((h.wrapping_abs() % n) as u32)
    }
}

/// Java's `String.hashCode`: `h = 31 * h + c` over the UTF-16 code units, wrapping at 32 bits
/// (`s[0]*31^(n-1) + ... + s[n-1]`, the empty string 0).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// A hash seeded per process, standing in for .NET Core's `string.GetHashCode()` (Marvin,
/// seeded at random in every process): Akka.NET's `HashCodeMessageExtractor` before PR
/// akka.net#3362 computed `Math.Abs(id.GetHashCode()) % maxNumberOfShards`, so two nodes (or
/// two incarnations of one node) could give one entity different shards (§12 B8,
/// akka.net#3361). Here: FNV-1a (64-bit) over the id's decimal digits from an offset basis
/// mixed with `seed`, finished with SplitMix64's mixer, modulo `shards`. Deterministic in
/// `seed`; [`Extractors::for_region`] derives the seed from the node incarnation.
#[derive(Clone, Copy, Debug)]
pub struct SeededHashExtractor {
    /// Number of shards.
    pub shards: u32,
    /// The process's hash seed.
    pub seed: u64,
}

impl ShardExtractor for SeededHashExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        let (buf, start) = decimal(entity.0);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ self.seed;
        for &b in &buf[start..] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        ShardId((splitmix64(h) % u64::from(self.shards.max(1))) as u32)
    }
}

/// SplitMix64's output function: a bijective 64-bit mixer.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An extractor with its answers for entities `0..entities` computed once: the same
/// function, one array lookup per message (the simulator's hot path).
#[derive(Clone, Debug)]
pub struct TabledExtractor<E = HashExtractor> {
    inner: E,
    table: Vec<ShardId>,
}

/// At most this many entity ids are tabled (16 KB of table per extractor); the function
/// answers for the rest, so a million entities do not cost a million hashes per schedule and
/// 4 MB per extractor. Same answers either way.
pub const TABLED_ENTITIES: u32 = 1 << 12;

impl<E: ShardExtractor> TabledExtractor<E> {
    /// Tabulate `inner` for entity ids below `entities` (at most [`TABLED_ENTITIES`]).
    pub fn new(inner: E, entities: u32) -> Self {
        let table = (0..entities.min(TABLED_ENTITIES))
            .map(|e| inner.shard_id(EntityId(e)))
            .collect();
        TabledExtractor { inner, table }
    }
}

/// The shard of each entity id when every region shares one extractor, for the host's
/// workload (the shard a send is routed to): a table of the first [`TABLED_ENTITIES`] ids,
/// the extractor for the rest. Empty when regions do not share an extractor.
#[derive(Clone, Default)]
pub struct SharedShards {
    table: Vec<ShardId>,
    rest: Option<Arc<dyn ShardExtractor>>,
}

impl SharedShards {
    /// The table for `entities` ids of `extractors`' shared extractor (empty without one).
    pub fn new(extractors: &Extractors, entities: u32) -> Self {
        match extractors.shared() {
            Some(x) => SharedShards {
                table: (0..entities.min(TABLED_ENTITIES))
                    .map(|e| x.shard_id(EntityId(e)))
                    .collect(),
                rest: Some(x.clone()),
            },
            None => SharedShards::default(),
        }
    }

    /// The shard of entity `e`, if every region shares the extractor.
    #[inline]
    pub fn get(&self, e: usize) -> Option<ShardId> {
        match self.table.get(e) {
            Some(s) => Some(*s),
            None => self.rest.as_ref().map(|x| x.shard_id(EntityId(e as u32))),
        }
    }
}

impl<E: ShardExtractor> ShardExtractor for TabledExtractor<E> {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        match self.table.get(entity.0 as usize) {
            Some(s) => *s,
            None => self.inner.shard_id(entity),
        }
    }
}

/// The extractor a scenario names (`[entities] extractor`), with `shards` as its number of
/// shards (Akka's `maxNumberOfShards` for `akka-hash-code`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExtractorKind {
    /// FNV-1a of the decimal id modulo shards ([`HashExtractor`]): the default.
    #[default]
    Fnv,
    /// Akka's `HashCodeMessageExtractor` ([`AkkaHashCodeExtractor`]).
    AkkaHashCode,
    /// A hash seeded per node incarnation ([`SeededHashExtractor`]): nodes disagree on
    /// shards (§12 B8, akka.net#3361).
    PerIncarnation,
    /// The application changed its extractor in a full restart (§12 B9, akka#22289): a node's
    /// first incarnation (numbered up to the cluster's size: the initial joins) uses FNV, every
    /// later incarnation Akka's hash-code extractor. All nodes of one generation agree.
    ChangedOnRestart,
}

/// Where each region's extractor comes from. Akka's `ClusterSharding.start` takes the
/// extractor in every process, so nothing makes nodes agree but the application's care
/// (§12 B8). A region asks for its own at start ([`Extractors::for_region`]) and keeps it.
#[derive(Clone)]
pub enum Extractors {
    /// Every region uses this one: a pure function of the entity id.
    Shared(Arc<dyn ShardExtractor>),
    /// Each node incarnation hashes with its own seed ([`SeededHashExtractor`], tabled).
    PerIncarnation {
        /// Number of shards.
        shards: u32,
        /// Entity ids below this are tabled.
        entities: u32,
        /// Mixed into every incarnation's seed (the world passes the schedule's seed), so
        /// that schedules differ in how incarnations disagree.
        salt: u64,
    },
    /// Incarnations numbered up to `first_incs` use `first`, later ones `later` (§12 B9).
    ChangedOnRestart {
        /// The first generation's extractor.
        first: Arc<dyn ShardExtractor>,
        /// The extractor after a restart.
        later: Arc<dyn ShardExtractor>,
        /// The highest incarnation number of the first generation.
        first_incs: u32,
    },
}

impl Extractors {
    /// The extractors of `kind` over `shards` shards, tabled for `entities` entity ids;
    /// `salt` seeds the per-incarnation hash.
    pub fn new(kind: ExtractorKind, shards: u32, entities: u32, salt: u64) -> Self {
        match kind {
            ExtractorKind::Fnv => Extractors::Shared(Arc::new(TabledExtractor::new(
                HashExtractor { shards },
                entities,
            ))),
            ExtractorKind::AkkaHashCode => Extractors::Shared(Arc::new(TabledExtractor::new(
                AkkaHashCodeExtractor {
                    max_number_of_shards: shards,
                },
                entities,
            ))),
            ExtractorKind::PerIncarnation => Extractors::PerIncarnation {
                shards,
                entities,
                salt,
            },
            ExtractorKind::ChangedOnRestart => Extractors::ChangedOnRestart {
                first: Arc::new(TabledExtractor::new(HashExtractor { shards }, entities)),
                later: Arc::new(TabledExtractor::new(
                    AkkaHashCodeExtractor {
                        max_number_of_shards: shards,
                    },
                    entities,
                )),
                // Filled in by the host, which knows the cluster's size.
                first_incs: 0,
            },
        }
    }

    /// For [`ExtractorKind::ChangedOnRestart`]: incarnations up to `n` are the first
    /// generation.
    pub fn with_first_generation(mut self, n: u32) -> Self {
        if let Extractors::ChangedOnRestart { first_incs, .. } = &mut self {
            *first_incs = n;
        }
        self
    }

    /// The extractor of `region` (its node incarnation): the shared one, or one seeded by
    /// [`incarnation_seed`].
    pub fn for_region(&self, region: RegionRef) -> Arc<dyn ShardExtractor> {
        match self {
            Extractors::Shared(x) => x.clone(),
            Extractors::PerIncarnation {
                shards,
                entities,
                salt,
            } => Arc::new(TabledExtractor::new(
                SeededHashExtractor {
                    shards: *shards,
                    seed: incarnation_seed(*salt, region),
                },
                *entities,
            )),
            Extractors::ChangedOnRestart {
                first,
                later,
                first_incs,
            } => {
                if region.inc.0 <= *first_incs {
                    first.clone()
                } else {
                    later.clone()
                }
            }
        }
    }

    /// The extractor every region shares, if they share one (`None` for per-incarnation and
    /// changed-on-restart).
    pub fn shared(&self) -> Option<&Arc<dyn ShardExtractor>> {
        match self {
            Extractors::Shared(x) => Some(x),
            Extractors::PerIncarnation { .. } | Extractors::ChangedOnRestart { .. } => None,
        }
    }
}

impl From<Arc<dyn ShardExtractor>> for Extractors {
    fn from(x: Arc<dyn ShardExtractor>) -> Self {
        Extractors::Shared(x)
    }
}

/// The hash seed of one node incarnation: a deterministic function of the run's `salt` and the
/// incarnation, different for every incarnation of every node (§12 B8).
pub fn incarnation_seed(salt: u64, region: RegionRef) -> u64 {
    splitmix64(salt ^ splitmix64((u64::from(region.node.0) << 32) | u64::from(region.inc.0)))
}

/// The decimal digits of `n`, in `buf[start..]`.
fn decimal(n: u32) -> ([u8; 10], usize) {
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
    (buf, i)
}

/// FNV-1a over the decimal digits of `n`: portable and stable across versions.
pub fn fnv1a_u32(n: u32) -> u32 {
    let (buf, start) = decimal(n);
    let mut h: u32 = 0x811c_9dc5;
    for &b in &buf[start..] {
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

    #[test]
    fn java_string_hash_known_answers() {
        // Values of Java's String.hashCode.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("0"), 48);
        assert_eq!(java_string_hash("10"), 1567);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("539019926"), i32::MIN);
        // UTF-16 code units, not code points: U+1F600 is the pair D83D DE00.
        assert_eq!(java_string_hash("\u{e9}"), 0xe9);
        assert_eq!(java_string_hash("\u{1f600}"), 0xd83d * 31 + 0xde00);
    }

    #[test]
    fn akka_hash_code_is_abs_hash_mod_shards() {
        let x = AkkaHashCodeExtractor {
            max_number_of_shards: 10,
        };
        assert_eq!(x.shard_id(EntityId(0)), ShardId(8)); // 48 % 10
        assert_eq!(x.shard_id(EntityId(10)), ShardId(7)); // 1567 % 10
        for e in 0..1000 {
            let h = java_string_hash(&e.to_string());
            assert_eq!(x.shard_id(EntityId(e)).0, h.unsigned_abs() % 10);
        }
        // abs(Int.MinValue) is Int.MinValue, and -2147483648 % 10 is -8: Akka's shard "-8".
        assert_eq!(x.shard_id(EntityId(539_019_926)), ShardId((-8i32) as u32));
        let pow2 = AkkaHashCodeExtractor {
            max_number_of_shards: 16,
        };
        assert_eq!(pow2.shard_id(EntityId(539_019_926)), ShardId(0));
        let t = TabledExtractor::new(x, 50);
        for e in 0..100 {
            assert_eq!(t.shard_id(EntityId(e)), x.shard_id(EntityId(e)));
        }
    }

    fn region(node: u32, inc: u32) -> RegionRef {
        RegionRef {
            node: crate::ids::NodeId(node),
            inc: crate::ids::NodeInc(inc),
        }
    }

    #[test]
    fn shared_extractors_are_one_function() {
        let x = Extractors::new(ExtractorKind::Fnv, 10, 100, 7);
        let (a, b) = (x.for_region(region(0, 1)), x.for_region(region(1, 2)));
        assert!(Arc::ptr_eq(&a, &b));
        let f = HashExtractor { shards: 10 };
        for e in 0..200 {
            assert_eq!(a.shard_id(EntityId(e)), f.shard_id(EntityId(e)));
        }
        assert!(x.shared().is_some());
        let j = Extractors::new(ExtractorKind::AkkaHashCode, 10, 100, 7);
        assert_eq!(j.for_region(region(0, 1)).shard_id(EntityId(0)), ShardId(8));
    }

    #[test]
    fn per_incarnation_extractors_disagree_for_every_schedule_seed() {
        // The salt is the schedule's seed, and campaigns start at seed 0: incarnations must
        // disagree whatever the salt's bits, 0 included.
        for salt in [0, 1, 7, u64::MAX] {
            let x = Extractors::new(ExtractorKind::PerIncarnation, 20, 100, salt);
            let shards = |r: RegionRef| -> Vec<ShardId> {
                let ex = x.for_region(r);
                (0..100).map(|e| ex.shard_id(EntityId(e))).collect()
            };
            let (a, b) = (shards(region(0, 1)), shards(region(1, 1)));
            let differ = a.iter().zip(&b).filter(|(s, t)| s != t).count();
            assert!(differ > 50, "salt {salt}: only {differ} of 100 differ");
        }
    }

    #[test]
    fn changed_on_restart_hashes_with_fnv_then_with_akkas_hash_code() {
        // §12 B9: incarnations up to the first generation's number use FNV, later ones
        // Akka's HashCodeMessageExtractor.
        let x =
            Extractors::new(ExtractorKind::ChangedOnRestart, 20, 100, 0).with_first_generation(3);
        let fnv = HashExtractor { shards: 20 };
        let akka = AkkaHashCodeExtractor {
            max_number_of_shards: 20,
        };
        let shards = |ex: &dyn ShardExtractor| -> Vec<ShardId> {
            (0..100).map(|e| ex.shard_id(EntityId(e))).collect()
        };
        assert_ne!(shards(&fnv), shards(&akka));
        for inc in [1, 3] {
            assert_eq!(
                shards(&*x.for_region(region(0, inc))),
                shards(&fnv),
                "{inc}"
            );
        }
        assert_eq!(shards(&*x.for_region(region(0, 4))), shards(&akka));
    }

    #[test]
    fn per_incarnation_extractors_disagree_deterministically() {
        let x = Extractors::new(ExtractorKind::PerIncarnation, 20, 100, 7);
        assert!(x.shared().is_none());
        let shards = |r: RegionRef| -> Vec<ShardId> {
            let ex = x.for_region(r);
            (0..100).map(|e| ex.shard_id(EntityId(e))).collect()
        };
        let (a, b, a2) = (
            shards(region(0, 1)),
            shards(region(1, 2)),
            shards(region(0, 3)),
        );
        assert_eq!(a, shards(region(0, 1)), "one incarnation, one function");
        assert!(a.iter().chain(&b).all(|s| s.0 < 20));
        let differ = |p: &[ShardId], q: &[ShardId]| p.iter().zip(q).filter(|(s, t)| s != t).count();
        assert!(differ(&a, &b) > 50, "two nodes mostly disagree");
        assert!(
            differ(&a, &a2) > 50,
            "a restarted node disagrees with its old self"
        );
        // Another salt (schedule), another disagreement.
        let y = Extractors::new(ExtractorKind::PerIncarnation, 20, 100, 8);
        let ya: Vec<ShardId> = {
            let ex = y.for_region(region(0, 1));
            (0..100).map(|e| ex.shard_id(EntityId(e))).collect()
        };
        assert!(differ(&a, &ya) > 50);
        // Beyond the table, the same function.
        let ex = x.for_region(region(0, 1));
        let raw = SeededHashExtractor {
            shards: 20,
            seed: incarnation_seed(7, region(0, 1)),
        };
        for e in 0..300 {
            assert_eq!(ex.shard_id(EntityId(e)), raw.shard_id(EntityId(e)));
        }
    }
}
