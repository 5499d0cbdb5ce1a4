//! The replicated membership state (Akka's `Gossip` with its `Reachability` table) and its pure
//! logic: merge (contents and seen set), prune, reachability, convergence and leader choice.
//! No timers, no I/O; every function here is a function of the state (and of `me` where the
//! answer is one node's view).

use super::vclock::{VcOrder, VectorClock};
use super::NodeAddr;
use crate::membership::{Member, MemberStatus};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One member in the gossip state.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct GossipMember {
    /// Akka's `upNumber`, 0 until the leader moves it to Up.
    pub up_number: u32,
    /// Its status; merged by taking the maximum (Akka's status precedence).
    pub status: MemberStatus,
    /// Whether it hosts entities.
    pub hosting: bool,
    /// Its app version (`akka.cluster.app-version`, carried in `Join` and gossip).
    pub app_version: u32,
    /// Why it was downed, if it was (shown in the downed node's `Shutdown`).
    pub down_reason: Option<String>,
}

/// One reachability observation (Akka's `Reachability.Record`); only its observer writes it.
#[derive(Clone, Copy, Debug, Eq, Ord, PartialEq, PartialOrd)]
pub struct ReachRecord {
    /// The observer's version counter; the higher version wins in a merge.
    pub version: u64,
    /// Whether the observer sees the subject as unreachable.
    pub unreachable: bool,
}

/// The content of the replicated membership state: members, reachability and version. Shared
/// copy-on-write between the states that hold it ([`GossipState`]), so adopting a received
/// state and then marking it seen copies the seen set only.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct GossipContent {
    /// Every member ever known, Removed ones included.
    pub members: BTreeMap<NodeAddr, GossipMember>,
    /// (observer, subject) → observation.
    pub reachability: BTreeMap<(NodeAddr, NodeAddr), ReachRecord>,
    /// The version (Akka's `Gossip.version`): bumped by a member on each local change, merged
    /// pointwise by a merge of concurrent states.
    pub version: VectorClock,
}

/// The replicated membership state (Akka's `Gossip`). Removed members stay as tombstones so a
/// merge never resurrects them. Its content is read through `Deref` and written through
/// `DerefMut`, which copies the content first if another state shares it.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct GossipState {
    content: Arc<GossipContent>,
    /// The members that have seen exactly this version (Akka's `seen` set).
    pub seen: BTreeSet<NodeAddr>,
}

impl std::ops::Deref for GossipState {
    type Target = GossipContent;
    fn deref(&self) -> &GossipContent {
        &self.content
    }
}

impl std::ops::DerefMut for GossipState {
    fn deref_mut(&mut self) -> &mut GossipContent {
        Arc::make_mut(&mut self.content)
    }
}

impl GossipState {
    /// Merge the contents (members and reachability); a join-semilattice, so commutative,
    /// associative and idempotent. The seen set is left alone (see [`Self::merge`]).
    pub(super) fn merge_content(&mut self, o: &GossipState) {
        for (a, m) in &o.members {
            match self.members.get_mut(a) {
                None => {
                    self.members.insert(*a, m.clone());
                }
                Some(x) => {
                    // Akka `Member.highestPriorityOf`: Removed > Down > Exiting > Leaving > Up
                    // > Joining, i.e. the derived order of `MemberStatus`.
                    x.status = x.status.max(m.status);
                    x.up_number = x.up_number.max(m.up_number);
                    x.hosting |= m.hosting;
                    x.app_version = x.app_version.max(m.app_version);
                    if m.down_reason > x.down_reason {
                        x.down_reason.clone_from(&m.down_reason);
                    }
                }
            }
        }
        for (k, r) in &o.reachability {
            let e = self.reachability.entry(*k).or_insert(*r);
            *e = (*e).max(*r);
        }
        self.prune();
    }

    /// `kept` becomes what `me` keeps after receiving `incoming` (ClusterDaemon
    /// `receiveGossip`): by the versions, Same unites the seen sets (`mergeSeen`), an older
    /// incoming one is ignored, a newer one is taken whole, and concurrent ones are merged
    /// (`Gossip.merge`: contents merged, versions merged, seen by nobody); then `me` has seen
    /// the result (`winningGossip.seen(selfUniqueAddress)`). Copy-on-write: a newer incoming
    /// state is shared, not copied, and a shared state is copied only when the seen set or the
    /// content really changes. Returns how the incoming version relates to the kept one.
    pub(super) fn merge_from(
        kept: &mut Arc<GossipState>,
        incoming: Arc<GossipState>,
        me: NodeAddr,
    ) -> VcOrder {
        let order = incoming.version.compare(&kept.version);
        match order {
            VcOrder::Same => {
                if !incoming.seen.is_subset(&kept.seen) {
                    Arc::make_mut(kept)
                        .seen
                        .extend(incoming.seen.iter().copied());
                }
            }
            VcOrder::Before => {}
            VcOrder::After => *kept = incoming,
            VcOrder::Concurrent => {
                let k = Arc::make_mut(kept);
                k.merge_content(&incoming);
                k.version.merge(&incoming.version);
                k.seen.clear();
            }
        }
        if !kept.seen.contains(&me) {
            Arc::make_mut(kept).seen.insert(me);
        }
        order
    }

    /// A digest of the seen set (Akka's `GossipOverview.seenDigest`, a SHA-1 of the sorted
    /// addresses; here FNV-1a over the sorted incarnations), sent in `GossipStatus`.
    pub(super) fn seen_digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for a in &self.seen {
            for b in a
                .node
                .0
                .to_le_bytes()
                .iter()
                .chain(a.inc.0.to_le_bytes().iter())
            {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    /// Akka drops the reachability records of removed members.
    pub(super) fn prune(&mut self) {
        let removed: BTreeSet<NodeAddr> = self
            .members
            .iter()
            .filter(|(_, m)| m.status == MemberStatus::Removed)
            .map(|(a, _)| *a)
            .collect();
        self.reachability
            .retain(|(o, s), _| !removed.contains(o) && !removed.contains(s));
    }

    /// The status of `a`, `None` if it is not a member.
    pub(super) fn status(&self, a: NodeAddr) -> Option<MemberStatus> {
        self.members.get(&a).map(|m| m.status)
    }

    /// Whether `a` is a member that is neither Down nor Removed.
    pub(super) fn is_live(&self, a: NodeAddr) -> bool {
        self.status(a).is_some_and(|st| st < MemberStatus::Down)
    }

    /// Whether `observer` has recorded `subject` as unreachable.
    pub(super) fn observes_unreachable(&self, observer: NodeAddr, subject: NodeAddr) -> bool {
        self.reachability
            .get(&(observer, subject))
            .is_some_and(|r| r.unreachable)
    }

    /// Members unreachable according to any observer that is not Down or Removed (Akka's
    /// `reachabilityExcludingDownedObservers`), Removed members excluded.
    pub(super) fn unreachable(&self) -> BTreeSet<NodeAddr> {
        self.reachability
            .iter()
            .filter(|((o, s), r)| {
                r.unreachable
                    && matches!(
                        self.status(*o),
                        Some(st) if st < MemberStatus::Down
                    )
                    && matches!(self.status(*s), Some(st) if st != MemberStatus::Removed)
            })
            .map(|((_, s), _)| *s)
            .collect()
    }

    /// [`Self::unreachable`] without the Down members: the unreachable ones a downing
    /// decision is about.
    pub(super) fn unreachable_live(&self) -> BTreeSet<NodeAddr> {
        self.unreachable()
            .into_iter()
            .filter(|a| self.is_live(*a))
            .collect()
    }

    /// The members, Removed excluded, sorted by (up-number, node): oldest first, Joining
    /// members (up-number `u32::MAX`, Akka's `Int.MaxValue`) last.
    pub(super) fn member_list(&self) -> Vec<Member> {
        let mut v: Vec<Member> = self
            .members
            .iter()
            .filter(|(_, m)| m.status != MemberStatus::Removed)
            .map(|(a, m)| Member {
                node: a.node,
                inc: a.inc,
                up_number: if m.up_number == 0 {
                    u32::MAX
                } else {
                    m.up_number
                },
                status: m.status,
                hosting: m.hosting,
                app_version: m.app_version,
            })
            .collect();
        v.sort_by_key(|m| (m.up_number, m.node, m.inc));
        v
    }

    /// The leader in `me`'s view (Akka `Gossip.leaderOf`).
    pub(super) fn leader(&self, me: NodeAddr) -> Option<NodeAddr> {
        let unreachable = self.unreachable();
        // Akka: candidates are members not Down/Removed that are reachable (or self); the first
        // by address with status Up or Leaving, else the lowest Joining/Exiting one.
        let cands: Vec<(NodeAddr, MemberStatus)> = self
            .members
            .iter()
            .filter(|(a, m)| {
                m.status < MemberStatus::Down && (**a == me || !unreachable.contains(a))
            })
            .map(|(a, m)| (*a, m.status))
            .collect();
        cands
            .iter()
            .find(|(_, s)| matches!(s, MemberStatus::Up | MemberStatus::Leaving))
            .or_else(|| cands.first())
            .map(|(a, _)| *a)
    }

    /// Akka `Gossip.convergence`: every unreachable member is Down or Exiting, and every Up or
    /// Leaving member has seen the current state.
    pub(super) fn convergence(&self) -> bool {
        let unreachable = self.unreachable();
        self.members.iter().all(|(a, m)| {
            let ok_reach = !unreachable.contains(a)
                || matches!(m.status, MemberStatus::Down | MemberStatus::Exiting);
            let ok_seen = !matches!(m.status, MemberStatus::Up | MemberStatus::Leaving)
                || self.seen.contains(a);
            ok_reach && ok_seen
        })
    }
}
