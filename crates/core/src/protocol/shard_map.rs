//! [`ShardMap`]: a map keyed by [`ShardId`] for the region's hot path.
//!
//! Shard ids from an extractor are small numbers (`hash % number-of-shards`), so they index a
//! vector directly: one bounds check instead of a B-tree search per message. Ids of
//! [`DENSE_LIMIT`] and above (a custom extractor may produce any `u32`) go to a `BTreeMap`, so
//! memory stays bounded by the shards actually used. Iteration is in ascending id order, as a
//! `BTreeMap`'s would be: dense ids first, then the larger sparse ones. Deterministic.

use crate::ids::ShardId;
use std::collections::BTreeMap;

/// Ids below this are stored densely.
pub const DENSE_LIMIT: u32 = 1 << 16;

/// A map from [`ShardId`] to `V`, iterated in ascending id order.
#[derive(Clone, Debug)]
pub struct ShardMap<V> {
    dense: Vec<Option<V>>,
    sparse: BTreeMap<ShardId, V>,
    len: usize,
}

impl<V> Default for ShardMap<V> {
    fn default() -> Self {
        ShardMap {
            dense: Vec::new(),
            sparse: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<V> ShardMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `k`.
    pub fn get(&self, k: &ShardId) -> Option<&V> {
        if k.0 < DENSE_LIMIT {
            self.dense.get(k.0 as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(k)
        }
    }

    /// The value of `k`, mutably.
    pub fn get_mut(&mut self, k: &ShardId) -> Option<&mut V> {
        if k.0 < DENSE_LIMIT {
            self.dense.get_mut(k.0 as usize).and_then(Option::as_mut)
        } else {
            self.sparse.get_mut(k)
        }
    }

    /// Whether `k` has a value.
    pub fn contains_key(&self, k: &ShardId) -> bool {
        self.get(k).is_some()
    }

    /// Set the value of `k`, returning the previous one.
    pub fn insert(&mut self, k: ShardId, v: V) -> Option<V> {
        let prev = if k.0 < DENSE_LIMIT {
            let i = k.0 as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i].replace(v)
        } else {
            self.sparse.insert(k, v)
        };
        if prev.is_none() {
            self.len += 1;
        }
        prev
    }

    /// Remove `k`, returning its value.
    pub fn remove(&mut self, k: &ShardId) -> Option<V> {
        let prev = if k.0 < DENSE_LIMIT {
            self.dense.get_mut(k.0 as usize).and_then(Option::take)
        } else {
            self.sparse.remove(k)
        };
        if prev.is_some() {
            self.len -= 1;
        }
        prev
    }

    /// The value of `k`, inserting `f()` first if there is none.
    pub fn get_or_insert_with(&mut self, k: ShardId, f: impl FnOnce() -> V) -> &mut V {
        if k.0 < DENSE_LIMIT {
            let i = k.0 as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            let slot = &mut self.dense[i];
            if slot.is_none() {
                self.len += 1;
            }
            slot.get_or_insert_with(f)
        } else {
            match self.sparse.entry(k) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    self.len += 1;
                    e.insert(f())
                }
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            }
        }
    }

    /// Remove every entry.
    pub fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
        self.len = 0;
    }

    /// Keep only the entries for which `f` is true.
    pub fn retain(&mut self, mut f: impl FnMut(ShardId, &mut V) -> bool) {
        for (i, slot) in self.dense.iter_mut().enumerate() {
            if let Some(v) = slot {
                if !f(ShardId(i as u32), v) {
                    *slot = None;
                    self.len -= 1;
                }
            }
        }
        let before = self.sparse.len();
        self.sparse.retain(|k, v| f(*k, v));
        self.len -= before - self.sparse.len();
    }

    /// Entries in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = (ShardId, &V)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (ShardId(i as u32), v)))
            .chain(self.sparse.iter().map(|(k, v)| (*k, v)))
    }

    /// Ids in ascending order.
    pub fn keys(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// Values in ascending id order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_btreemap() {
        // A deterministic mix of operations on dense and sparse ids, mirrored on a BTreeMap.
        let mut m = ShardMap::new();
        let mut b = BTreeMap::new();
        let mut x = 12345u64;
        for step in 0..5000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = match (x >> 33) % 4 {
                0 => DENSE_LIMIT + ((x >> 40) % 50) as u32,
                _ => ((x >> 40) % 70) as u32,
            };
            let k = ShardId(id);
            match (x >> 20) % 5 {
                0 | 1 => assert_eq!(m.insert(k, step), b.insert(k, step)),
                2 => assert_eq!(m.remove(&k), b.remove(&k)),
                3 => *m.get_or_insert_with(k, || 7) += 1,
                _ => m.retain(|k, v| (k.0 + *v) % 3 != 0),
            }
            match (x >> 20) % 5 {
                3 => *b.entry(k).or_insert(7) += 1,
                4 => b.retain(|k, v| (k.0 + *v) % 3 != 0),
                _ => {}
            }
            assert_eq!(m.len(), b.len());
            assert_eq!(m.get(&k), b.get(&k));
            assert_eq!(m.get_mut(&k).copied(), b.get_mut(&k).copied());
            assert_eq!(m.contains_key(&k), b.contains_key(&k));
        }
        let mv: Vec<(ShardId, u32)> = m.iter().map(|(k, v)| (k, *v)).collect();
        let bv: Vec<(ShardId, u32)> = b.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(mv, bv);
        m.clear();
        assert!(m.is_empty() && m.iter().next().is_none());
    }

    /// The ids on either side of [`DENSE_LIMIT`] land in their own store and are found there
    /// by every accessor.
    #[test]
    fn ids_at_the_dense_limit() {
        let mut m = ShardMap::new();
        let (below, at) = (ShardId(DENSE_LIMIT - 1), ShardId(DENSE_LIMIT));
        assert_eq!(m.insert(at, 2), None);
        assert_eq!(m.insert(below, 1), None);
        assert_eq!((m.get(&below), m.get(&at)), (Some(&1), Some(&2)));
        *m.get_mut(&at).unwrap() += 10;
        *m.get_mut(&below).unwrap() += 10;
        assert_eq!(*m.get_or_insert_with(at, || 0), 12);
        assert_eq!(*m.get_or_insert_with(below, || 0), 11);
        let all: Vec<(ShardId, u32)> = m.iter().map(|(k, v)| (k, *v)).collect();
        assert_eq!(all, vec![(below, 11), (at, 12)]);
        assert_eq!(
            (m.remove(&at), m.remove(&below), m.len()),
            (Some(12), Some(11), 0)
        );
    }
}
