//! The version of the gossip state: Akka's `VectorClock` (akka-cluster VectorClock.scala), one
//! counter per member incarnation (Akka's `vclockNode`, `Gossip.vclockName(uniqueAddress)`).
//! A member bumps its own counter on every local change of the state (ClusterDaemon
//! `updateLatestGossip`: `gossip :+ vclockNode`); a merge of concurrent states takes the
//! pointwise maximum (`VectorClock.merge`) without a bump. Entries of removed members are kept
//! (Akka prunes them, `Gossip.prune`): an entry that is never bumped again orders nothing
//! differently, and keeping it means no two nodes ever prune differently.

use super::NodeAddr;
use std::collections::BTreeMap;

/// How one version relates to another (Akka `VectorClock.Ordering`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum VcOrder {
    /// Equal.
    Same,
    /// Strictly older than the other.
    Before,
    /// Strictly newer than the other.
    After,
    /// Neither: both have changes the other lacks.
    Concurrent,
}

/// A vector clock over member incarnations; absent entries are 0.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct VectorClock(pub BTreeMap<NodeAddr, u64>);

impl VectorClock {
    /// Akka `VectorClock.:+`: this node's counter plus one.
    pub fn bump(&mut self, me: NodeAddr) {
        let c = self.0.entry(me).or_insert(0);
        *c = c.saturating_add(1);
    }

    /// Akka `VectorClock.merge`: the pointwise maximum.
    pub fn merge(&mut self, o: &VectorClock) {
        for (k, v) in &o.0 {
            let e = self.0.entry(*k).or_insert(0);
            *e = (*e).max(*v);
        }
    }

    /// Akka `VectorClock.compareTo`: how `self` relates to `o`.
    pub fn compare(&self, o: &VectorClock) -> VcOrder {
        let mut before = false; // some entry of self is lower
        let mut after = false; // some entry of self is higher
        let mut a = self.0.iter().peekable();
        let mut b = o.0.iter().peekable();
        loop {
            match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some((_, va)), None) => {
                    after |= **va > 0;
                    a.next();
                }
                (None, Some((_, vb))) => {
                    before |= **vb > 0;
                    b.next();
                }
                (Some((ka, va)), Some((kb, vb))) => match ka.cmp(kb) {
                    std::cmp::Ordering::Less => {
                        after |= **va > 0;
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        before |= **vb > 0;
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        after |= va > vb;
                        before |= va < vb;
                        a.next();
                        b.next();
                    }
                },
            }
            if before && after {
                return VcOrder::Concurrent;
            }
        }
        match (before, after) {
            (false, false) => VcOrder::Same,
            (true, false) => VcOrder::Before,
            (false, true) => VcOrder::After,
            (true, true) => VcOrder::Concurrent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::membership::test_addr as n;

    #[test]
    fn orders_as_akka() {
        let mut a = VectorClock::default();
        let b = VectorClock::default();
        assert_eq!(a.compare(&b), VcOrder::Same);
        a.bump(n(1));
        assert_eq!(a.compare(&b), VcOrder::After);
        assert_eq!(b.compare(&a), VcOrder::Before);
        let mut c = b.clone();
        c.bump(n(2));
        assert_eq!(a.compare(&c), VcOrder::Concurrent);
        let mut m = a.clone();
        m.merge(&c);
        assert_eq!(m.compare(&a), VcOrder::After);
        assert_eq!(c.compare(&m), VcOrder::Before);
        let mut z = VectorClock::default();
        z.0.insert(n(3), 0);
        assert_eq!(z.compare(&b), VcOrder::Same);
    }
}
