//! Akka's `HeartbeatNodeRing` (akka-cluster ClusterHeartbeat.scala): the members on a ring
//! ordered by a hash of their address, and each node's heartbeat receivers, the
//! `monitored-by-nr-of-members` nodes that follow it on the ring (reference.conf
//! `akka.cluster.failure-detector.monitored-by-nr-of-members = 9`).

use super::NodeAddr;
use std::collections::BTreeSet;

/// Akka's default `monitored-by-nr-of-members` (reference.conf).
pub const MONITORED_BY_NR_OF_MEMBERS: usize = 9;

/// The ring position of `a`: Akka orders by `UniqueAddress.##` and then the address; here a
/// fixed 64-bit mix (splitmix64) of the node and incarnation, so it is the same on every run
/// and on every host, then the address.
fn ring_key(a: NodeAddr) -> (u64, NodeAddr) {
    let mut z =
        (u64::from(a.node.0) << 32 | u64::from(a.inc.0)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31), a)
}

/// Akka `HeartbeatNodeRing.receivers(sender)`: with `monitored >= nodes - 1` every other node
/// (`useAllAsReceivers`); otherwise the nodes after `me` on the ring until `monitored`
/// reachable ones are taken, wrapping around, with the unreachable ones met on the way
/// included but not counted while fewer than `monitored` were taken (issue #16624: the leader
/// must keep watching shut-down nodes so it can remove them). `nodes` holds `me`.
pub fn receivers(
    me: NodeAddr,
    nodes: &BTreeSet<NodeAddr>,
    unreachable: &BTreeSet<NodeAddr>,
    monitored: usize,
) -> BTreeSet<NodeAddr> {
    let others = nodes.iter().filter(|a| **a != me).count();
    if monitored >= others {
        return nodes.iter().copied().filter(|a| *a != me).collect();
    }
    let mut ring: Vec<(u64, NodeAddr)> = nodes.iter().map(|a| ring_key(*a)).collect();
    ring.sort_unstable();
    let mine = ring_key(me);
    // `nodeRing.rangeFrom(sender).tail` then, wrapping, `rangeTo(sender)` without the sender:
    // every other node once, in ring order starting after `me`.
    let start = ring.partition_point(|k| *k <= mine);
    let order = ring[start..]
        .iter()
        .chain(ring[..start].iter())
        .map(|(_, a)| *a)
        .filter(|a| *a != me);
    let mut acc = BTreeSet::new();
    let mut n = monitored;
    for next in order {
        if n == 0 {
            break;
        }
        if unreachable.contains(&next) {
            if acc.len() < monitored {
                acc.insert(next); // include the unreachable, but don't count it
            }
        } else {
            acc.insert(next);
            n -= 1;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::membership::test_addr as n;

    #[test]
    fn small_clusters_monitor_everyone() {
        let nodes: BTreeSet<NodeAddr> = (0..10).map(n).collect();
        let r = receivers(n(3), &nodes, &BTreeSet::new(), 9);
        assert_eq!(r.len(), 9);
        assert!(!r.contains(&n(3)));
    }

    #[test]
    fn large_clusters_monitor_nine_and_skip_past_unreachable() {
        let nodes: BTreeSet<NodeAddr> = (0..50).map(n).collect();
        let r = receivers(n(7), &nodes, &BTreeSet::new(), 9);
        assert_eq!(r.len(), 9);
        assert!(!r.contains(&n(7)));
        // Every node is watched by exactly nine others (a ring).
        let mut watched = std::collections::BTreeMap::new();
        for a in &nodes {
            for b in receivers(*a, &nodes, &BTreeSet::new(), 9) {
                *watched.entry(b).or_insert(0) += 1;
            }
        }
        assert!(watched.values().all(|c| *c == 9));
        // An unreachable receiver is kept and one more reachable node is added.
        let first = *r.iter().next().unwrap();
        let unr: BTreeSet<NodeAddr> = [first].into();
        let r2 = receivers(n(7), &nodes, &unr, 9);
        assert_eq!(r2.len(), 10);
        assert!(r2.contains(&first));
        assert_eq!(r2.iter().filter(|a| !unr.contains(a)).count(), 9);
    }
}
