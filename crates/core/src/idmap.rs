//! Tables keyed by small ids whose memory follows the ids used, not the id space
//! (memory proportional to live state).
//!
//! - [`IdMap`]: a hash table from `u64` keys (an id, or a pair of ids packed with [`pair_key`])
//!   to values, kept in an arena in insertion order, with an open-addressing index over it
//!   (linear probing, Fibonacci hashing). The hash is a fixed function of the key, so the table
//!   is deterministic; its iteration is the order of first insertion, which is itself a
//!   function of the schedule. It never removes a key.
//! - [`Dense`]: a vector by id for ids below a bound, an [`IdMap`] above it: a small
//!   population keeps its one-index lookups, a large one pays for what it uses.

/// Pack two 32-bit ids into one key (the first in the high half).
#[inline]
pub fn pair_key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// The ids of a key packed by [`pair_key`].
#[inline]
pub fn unpair(k: u64) -> (u32, u32) {
    ((k >> 32) as u32, k as u32)
}

/// An insert-only hash table from `u64` keys to values: see the module documentation.
#[derive(Clone, Debug)]
pub struct IdMap<V> {
    /// (key, value), in order of first insertion.
    entries: Vec<(u64, V)>,
    /// The index: 0 empty, else 1 + a position in `entries`. Its length is a power of two
    /// (or 0), at most three quarters full.
    slots: Vec<u32>,
    /// 64 - log2(slots.len()).
    shift: u32,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            entries: Vec::new(),
            slots: Vec::new(),
            shift: 64,
        }
    }
}

impl<V> IdMap<V> {
    /// An empty table (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No key yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The position of `key` in `entries`, if present.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            let at = (s - 1) as usize;
            if self.entries[at].0 == key {
                return Some(at);
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<&V> {
        self.find(key).map(|at| &self.entries[at].1)
    }

    /// The value of `key`, mutable.
    #[inline]
    pub fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        self.find(key).map(|at| &mut self.entries[at].1)
    }

    /// The value of `key`, inserted by `make` if absent.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: u64, make: impl FnOnce() -> V) -> &mut V {
        match self.find(key) {
            Some(at) => &mut self.entries[at].1,
            None => self.insert_new(key, make()),
        }
    }

    #[cold]
    #[inline(never)]
    fn insert_new(&mut self, key: u64, value: V) -> &mut V {
        if (self.entries.len() + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let at = self.entries.len();
        self.entries.push((key, value));
        self.place(key, at);
        &mut self.entries[at].1
    }

    fn place(&mut self, key: u64, at: usize) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = at as u32 + 1;
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(16);
        self.slots = vec![0; cap];
        self.shift = 64 - cap.trailing_zeros();
        for at in 0..self.entries.len() {
            let key = self.entries[at].0;
            self.place(key, at);
        }
    }

    /// Every (key, value), in order of first insertion.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        self.entries.iter().map(|(k, v)| (*k, v))
    }

    /// Every value, mutable, in order of first insertion.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// A vector by id below `limit`, an [`IdMap`] from `limit` on: see the module documentation.
#[derive(Clone, Debug)]
pub struct Dense<V> {
    low: Vec<V>,
    high: IdMap<V>,
    limit: u32,
}

impl<V: Default> Dense<V> {
    /// Ids below `limit` in a vector (grown on demand up to the highest id used).
    pub fn new(limit: u32) -> Self {
        Dense {
            low: Vec::new(),
            high: IdMap::new(),
            limit,
        }
    }

    /// The value of `id`, if it was ever touched (or lies within the vector).
    #[inline]
    pub fn get(&self, id: u32) -> Option<&V> {
        match self.low.get(id as usize) {
            Some(v) => Some(v),
            None if id < self.limit => None,
            None => self.high.get(u64::from(id)),
        }
    }

    /// The value of `id`, default-inserted if absent.
    #[inline]
    pub fn slot(&mut self, id: u32) -> &mut V {
        let i = id as usize;
        if i < self.low.len() {
            return &mut self.low[i];
        }
        self.slot_slow(id)
    }

    #[inline(never)]
    fn slot_slow(&mut self, id: u32) -> &mut V {
        if id < self.limit {
            self.low.resize_with(id as usize + 1, V::default);
            return &mut self.low[id as usize];
        }
        self.high.get_or_insert_with(u64::from(id), V::default)
    }

    /// Every value, mutable (the vector's, then the table's in order of first insertion).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.low.iter_mut().chain(self.high.values_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_as_a_map_and_iterates_in_insertion_order() {
        let mut m: IdMap<u64> = IdMap::new();
        let mut model = BTreeMap::new();
        let mut order = Vec::new();
        let mut x = 1u64;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = pair_key((x >> 60) as u32, (x >> 40) as u32 % 5000);
            if !model.contains_key(&k) {
                order.push(k);
            }
            *m.get_or_insert_with(k, || 0) += i;
            *model.entry(k).or_insert(0) += i;
        }
        assert_eq!(m.len(), model.len());
        for (k, v) in &model {
            assert_eq!(m.get(*k), Some(v));
        }
        assert_eq!(m.get(pair_key(99, 99)), None);
        let keys: Vec<u64> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, order);
        assert_eq!(unpair(pair_key(7, 9)), (7, 9));
    }

    #[test]
    fn dense_splits_at_its_limit() {
        let mut d: Dense<u32> = Dense::new(100);
        *d.slot(3) = 1;
        *d.slot(5_000_000) = 2;
        assert_eq!(d.get(3), Some(&1));
        assert_eq!(d.get(2), Some(&0));
        assert_eq!(d.get(50), None);
        assert_eq!(d.get(5_000_000), Some(&2));
        assert_eq!(d.get(5_000_001), None);
        assert_eq!(d.low.len(), 4);
        assert_eq!(d.values_mut().count(), 5);
    }
}
