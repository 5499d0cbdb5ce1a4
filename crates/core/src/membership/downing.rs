//! The split-brain resolver's decision (Akka's `DowningStrategy` in `akka.cluster.sbr`), as a
//! pure function of one node's view: which members to down. No timers (the `stable-after`
//! wait and the `down-removal-margin` stay in the state machine), no I/O.
//!
//! The reference has no section on the strategies' rules themselves; it uses the resolver as
//! the thing that keeps a partition from becoming two clusters: docs/akka-reference.md §11.1 (I1,
//! from Akka's `split-brain-resolver.md`), §11.2 (a partition without proper downing yields
//! two coordinators; `stable-after`/`down-removal-margin` shorter than the other side's stop
//! breaks I1), §9.2 (`down-removal-margin` = `stable-after` under SBR), §13.1
//! (`SplitBrainResolverIntegrationSpec`) and §13.5 item 12 (partition + downing variants). The
//! strategies follow Akka's `split-brain-resolver.md`, as the code decided before this module
//! was split out.
//!
//! The decision is Akka's `DowningStrategy.scala` (akka/akka 9892c5e415), ported rule for rule:
//! Up and Leaving members count, Joining ones are downed with their side but do not count,
//! Exiting ones are neither counted nor downed; static quorum downs everyone when more than
//! `quorum-size * 2 - 1` members count; keep-majority and keep-oldest look again at a decision
//! to keep their side with the membership changes a partition may hide (this side without its
//! Leaving, the other with its Joining) and down everyone when that look disagrees. Indirectly
//! connected members (found through a cycle of unreachable records or through the seen set) are
//! downed, and the rest decided a second time without the records between them; a second
//! indirectly connected decision downs everyone. `crates/core/tests/sbr_spec.rs` holds Akka's
//! own unit cases against [`decide`].
//!
//! Every strategy compares "this side" (the deciding node and the members it reaches) with
//! "the unreachable side" (every unreachable member, however many partitions they are really
//! in): with three or more partitions each side sees all others as one.

use super::{GossipMember, GossipState, NodeAddr, SbrStrategy};
use crate::membership::MemberStatus;
use std::collections::BTreeSet;

/// The facts a downing decision is made from, as one node sees them.
#[derive(Clone, Copy, Debug)]
pub struct DowningFacts<'a> {
    /// The node's gossip state: the members with status, up-number and hosting, and the
    /// reachability records (who observed whom unreachable, for the indirectly connected).
    pub gossip: &'a GossipState,
    /// The live (neither Down nor Removed) members unreachable in this view: the set whose
    /// stability `stable-after` waited for.
    pub unreachable: &'a BTreeSet<NodeAddr>,
}

/// What a decision does.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Outcome {
    /// Nothing but the deciding node itself is unreachable: no decision.
    Nothing,
    /// This side survives: the unreachable side is downed.
    DownUnreachable,
    /// This side (the deciding node included) is downed.
    DownOwnSide,
    /// Every live member is downed (down-all).
    DownAll,
    /// Only the indirectly connected members are downed: the deciding node is one of them, or
    /// nobody else is unreachable.
    DownIndirectlyConnected,
}

/// A downing decision.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Decision {
    /// `keep-majority`, `keep-oldest`, `static-quorum`, `down-all` or `indirectly-connected`
    /// (the trace shows it as `sbr-<strategy>`).
    pub strategy: &'static str,
    /// What it does.
    pub outcome: Outcome,
    /// Human-readable decision (in the trace and in the downed nodes' shutdown reason).
    pub text: String,
    /// The members to mark Down: the side the strategy picked, in address order, then the
    /// indirectly connected ones not already in it.
    pub downed: Vec<NodeAddr>,
}

/// The name of a strategy as the trace shows it.
fn strategy_name(strategy: &SbrStrategy) -> &'static str {
    match strategy {
        SbrStrategy::KeepMajority => "keep-majority",
        SbrStrategy::KeepOldest { .. } => "keep-oldest",
        SbrStrategy::StaticQuorum { .. } => "static-quorum",
        SbrStrategy::DownAll => "down-all",
    }
}

/// The split-brain resolver's decision at `me` under `strategy`, from `facts`, as Akka's
/// `DowningStrategy` makes it (`decide` then `nodesToDown`, DS:239-322 and 370-570 at akka/akka 9892c5e415):
///
/// - The strategy decides on this side (every counted member not unreachable) against the
///   unreachable side, unless some members are indirectly connected, when the decision is
///   `DownIndirectlyConnected` (DS:370-379, 406-409, 499-502).
/// - Indirectly connected (DS:226-254): observers of an unreachability that are themselves
///   observed unreachable (a cycle: one-way cuts, bridges), and both ends of a record whose
///   subject has seen this gossip version (the gossip reached it through a third node).
/// - `DownIndirectlyConnected` downs them, and, when some unreachable members are not among
///   them, decides a second time without the records between them (and without records about
///   members no longer downable), downing what that decides too; a second
///   `DownIndirectlyConnected` downs everyone (DS:288-322, SBR:436-444).
///
/// The records are every unreachable one between members not yet removed, whatever the
/// observer's status (the `ReachabilityChanged` event carries the gossip's whole reachability,
/// ClusterEvent:622-626, filtered to unreachable records between members by `setReachability`,
/// DS:213-219); the unreachable set is their subjects and the Down members (SBR:282:
/// `MemberDowned` is taken as unreachable), never `me` (SBR:491).
pub fn decide(strategy: &SbrStrategy, facts: &DowningFacts<'_>, me: NodeAddr) -> Decision {
    // The state machine decides once `stable-after` has passed on a live unreachable member
    // other than this node: otherwise nothing to decide.
    if facts.unreachable.iter().all(|a| *a == me) {
        return Decision {
            strategy: strategy_name(strategy),
            outcome: Outcome::Nothing,
            text: "nothing unreachable".to_string(),
            downed: Vec::new(),
        };
    }
    let view = View::of(facts.gossip, me);
    let first = view.decide(strategy);
    let ic = view.indirectly_connected();
    let (outcome, name, text, downed) = match first.kind {
        Kind::DownIndirectlyConnected => {
            let list: Vec<NodeAddr> = ic.iter().copied().collect();
            match view.additional_when_indirectly_connected(strategy) {
                Ok(None) => (
                    Outcome::DownIndirectlyConnected,
                    "indirectly-connected",
                    format!("indirectly connected {list:?}: down them"),
                    view.downable(&ic),
                ),
                Ok(Some((second, more))) => {
                    let mut all = ic.clone();
                    all.extend(more);
                    (
                        Outcome::DownIndirectlyConnected,
                        "indirectly-connected",
                        format!(
                            "indirectly connected {list:?}: down them; without their records, {}",
                            second.text
                        ),
                        view.downable(&all),
                    )
                }
                Err(()) => (
                    Outcome::DownAll,
                    "indirectly-connected",
                    format!(
                        "indirectly connected {list:?}, and again without their records: down \
                         everyone"
                    ),
                    view.nodes_to_down(Kind::DownAll),
                ),
            }
        }
        kind => (
            match kind {
                Kind::DownUnreachable => Outcome::DownUnreachable,
                Kind::DownReachable => Outcome::DownOwnSide,
                _ => Outcome::DownAll,
            },
            strategy_name(strategy),
            first.text,
            view.nodes_to_down(kind),
        ),
    };
    Decision {
        strategy: name,
        outcome,
        text,
        downed,
    }
}

/// Akka's `Decision`s without the lease's (DS:26-58).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[allow(clippy::enum_variant_names)] // Akka's names, to read beside DS:26-58.
enum Kind {
    DownUnreachable,
    DownReachable,
    DownAll,
    DownIndirectlyConnected,
}

/// A strategy's decision with the words for it.
struct Decided {
    kind: Kind,
    text: String,
}

/// What Akka's `DowningStrategy` holds (DS:62-220): the members and their statuses, the
/// unreachable records and set, the seen set; rebuilt from one gossip state.
struct View<'a> {
    gossip: &'a GossipState,
    /// Unreachable records (observer, subject) between members not removed.
    records: BTreeSet<(NodeAddr, NodeAddr)>,
    /// Akka's `_unreachable`.
    unreachable: BTreeSet<NodeAddr>,
}

impl<'a> View<'a> {
    fn of(gossip: &'a GossipState, me: NodeAddr) -> Self {
        let known = |a: &NodeAddr| {
            gossip
                .members
                .get(a)
                .is_some_and(|m| m.status != MemberStatus::Removed)
        };
        let records: BTreeSet<(NodeAddr, NodeAddr)> = gossip
            .reachability
            .iter()
            .filter(|((o, s), r)| r.unreachable && known(o) && known(s))
            .map(|(k, _)| *k)
            .collect();
        let mut unreachable: BTreeSet<NodeAddr> = records.iter().map(|(_, s)| *s).collect();
        unreachable.extend(
            gossip
                .members
                .iter()
                .filter(|(_, m)| m.status == MemberStatus::Down)
                .map(|(a, _)| *a),
        );
        unreachable.remove(&me);
        View {
            gossip,
            records,
            unreachable,
        }
    }

    /// Akka's `members(includingPossiblyUp, excludingPossiblyExiting)` (DS:108-115), in address
    /// order (`Member.ordering`): Up always, Leaving unless it may be Exiting on the other side
    /// already, Joining when it may be Up there already; never Exiting, Down or Removed.
    fn members(&self, possibly_up: bool, possibly_exiting: bool) -> Vec<(NodeAddr, &GossipMember)> {
        self.gossip
            .members
            .iter()
            .filter(|(_, m)| match m.status {
                MemberStatus::Up => true,
                MemberStatus::Leaving => !possibly_exiting,
                MemberStatus::Joining => possibly_up,
                _ => false,
            })
            .map(|(a, m)| (*a, m))
            .collect()
    }

    /// How many of those are reachable (`here`) or unreachable.
    fn side(&self, here: bool, possibly_up: bool, possibly_exiting: bool) -> usize {
        self.members(possibly_up, possibly_exiting)
            .iter()
            .filter(|(a, _)| self.unreachable.contains(a) != here)
            .count()
    }

    /// Akka's `indirectlyConnectedFromIntersectionOfObserversAndSubjects` (DS:243-247).
    fn in_cycle(&self) -> BTreeSet<NodeAddr> {
        let observers: BTreeSet<NodeAddr> = self.records.iter().map(|(o, _)| *o).collect();
        let subjects: BTreeSet<NodeAddr> = self.records.iter().map(|(_, s)| *s).collect();
        observers.intersection(&subjects).copied().collect()
    }

    /// Akka's `indirectlyConnectedFromSeenCurrentGossip` (DS:249-254).
    fn through_seen(&self) -> BTreeSet<NodeAddr> {
        self.records
            .iter()
            .filter(|(_, s)| self.gossip.seen.contains(s))
            .flat_map(|(o, s)| [*o, *s])
            .collect()
    }

    /// Akka's `indirectlyConnected` (DS:239-241).
    fn indirectly_connected(&self) -> BTreeSet<NodeAddr> {
        let mut ic = self.in_cycle();
        ic.extend(self.through_seen());
        ic
    }

    /// `set` restricted to the downable members (Akka's `nodesToDown` `downable`, DS:260-264:
    /// Joining, Up and Leaving), in address order.
    fn downable(&self, set: &BTreeSet<NodeAddr>) -> Vec<NodeAddr> {
        self.gossip
            .members
            .iter()
            .filter(|(a, m)| downable(m) && set.contains(a))
            .map(|(a, _)| *a)
            .collect()
    }

    /// Akka's `nodesToDown` for a decision other than `DownIndirectlyConnected` (DS:265-269).
    fn nodes_to_down(&self, kind: Kind) -> Vec<NodeAddr> {
        self.gossip
            .members
            .iter()
            .filter(|(a, m)| {
                downable(m)
                    && match kind {
                        Kind::DownUnreachable => self.unreachable.contains(a),
                        Kind::DownReachable => !self.unreachable.contains(a),
                        Kind::DownAll | Kind::DownIndirectlyConnected => true,
                    }
            })
            .map(|(a, _)| *a)
            .collect()
    }

    /// Akka's `additionalNodesToDownWhenIndirectlyConnected` (DS:288-322): `None` when every
    /// unreachable member is indirectly connected; else the second decision, without the
    /// records between the indirectly connected and those about members no longer downable,
    /// and what it downs; `Err` when that decision is indirectly connected again (Akka throws,
    /// and the resolver downs everyone, SBR:436-444).
    fn additional_when_indirectly_connected(
        &self,
        strategy: &SbrStrategy,
    ) -> Result<Option<(Decided, Vec<NodeAddr>)>, ()> {
        let ic = self.indirectly_connected();
        if self.unreachable.iter().all(|a| ic.contains(a)) {
            return Ok(None);
        }
        let downable_set: BTreeSet<NodeAddr> = self
            .gossip
            .members
            .iter()
            .filter(|(_, m)| downable(m))
            .map(|(a, _)| *a)
            .collect();
        let (cycle, seen) = (self.in_cycle(), self.through_seen());
        let records: BTreeSet<(NodeAddr, NodeAddr)> = self
            .records
            .iter()
            .filter(|(o, s)| {
                downable_set.contains(o)
                    && downable_set.contains(s)
                    && !(cycle.contains(o) && cycle.contains(s)
                        || seen.contains(o) && seen.contains(s))
            })
            .copied()
            .collect();
        let unreachable = records.iter().map(|(_, s)| *s).collect();
        let second = View {
            gossip: self.gossip,
            records,
            unreachable,
        };
        let d = second.decide(strategy);
        if d.kind == Kind::DownIndirectlyConnected {
            return Err(());
        }
        let more = second.nodes_to_down(d.kind);
        Ok(Some((d, more)))
    }

    /// The strategy's `decide` (DS:370-570).
    fn decide(&self, strategy: &SbrStrategy) -> Decided {
        let decided = |kind: Kind, text: String| Decided { kind, text };
        let has_ic = !self.indirectly_connected().is_empty();
        let ic = || decided(Kind::DownIndirectlyConnected, String::new());
        // The words for a decision the strategy names.
        let said = |kind: Kind, text: String| {
            let how = match kind {
                Kind::DownUnreachable => "down unreachable side",
                Kind::DownReachable => "down own side",
                _ => "membership changing during the partition, down everyone",
            };
            decided(kind, format!("{text}: {how}"))
        };
        // Akka's second look at a decision to keep this side, counting the membership changes
        // the partition may hide (`...WhenIncludingMembershipChangesEdgeCase`): a different
        // conclusion downs everyone.
        let confirmed = |first: Kind, edge: Kind| {
            if first == Kind::DownUnreachable && edge != Kind::DownUnreachable {
                Kind::DownAll
            } else {
                first
            }
        };
        match strategy {
            SbrStrategy::DownAll => decided(Kind::DownAll, "down all: down everyone".into()),
            SbrStrategy::StaticQuorum { quorum_size } => {
                // DS:370-379: more than `quorum-size * 2 - 1` members: both sides of a split
                // could keep a quorum, so everyone is downed, before anything else.
                let members = self.members(false, false).len();
                let most = (2 * *quorum_size as usize).saturating_sub(1);
                if members > most {
                    return decided(
                        Kind::DownAll,
                        format!(
                            "{members} members, more than quorum {quorum_size} allows ({most}): \
                             down everyone"
                        ),
                    );
                }
                if has_ic {
                    return ic();
                }
                let here = self.side(true, false, false);
                let kind = if here >= *quorum_size as usize {
                    Kind::DownUnreachable
                } else {
                    Kind::DownReachable
                };
                said(kind, format!("{here} on this side, quorum {quorum_size}"))
            }
            SbrStrategy::KeepMajority => {
                if has_ic {
                    return ic();
                }
                // DS:406-460.
                let majority = |here: usize, there: usize, lowest: NodeAddr| {
                    if here == there {
                        if self.unreachable.contains(&lowest) {
                            Kind::DownReachable
                        } else {
                            Kind::DownUnreachable
                        }
                    } else if here > there {
                        Kind::DownUnreachable
                    } else {
                        Kind::DownReachable
                    }
                };
                let ms = self.members(false, false);
                let (here, total) = (self.side(true, false, false), ms.len());
                let text = format!("{here} of {total} on this side");
                let Some(&(lowest, _)) = ms.first() else {
                    return said(Kind::DownAll, text);
                };
                let first = majority(here, self.side(false, false, false), lowest);
                // This side as small as it could be (no Leaving), the other as large (its
                // Joining).
                let edge = match self.members(false, true).first() {
                    None => Kind::DownAll,
                    Some(&(lowest, _)) => majority(
                        self.side(true, false, true),
                        self.side(false, true, false),
                        lowest,
                    ),
                };
                said(confirmed(first, edge), text)
            }
            SbrStrategy::KeepOldest { down_if_alone } => {
                if has_ic {
                    return ic();
                }
                // DS:499-560, oldest first by `Member.ageOrdering` (up-number, then address).
                let alone = *down_if_alone;
                let oldest_of = |possibly_exiting: bool| {
                    self.members(false, possibly_exiting)
                        .into_iter()
                        .min_by_key(|(a, m)| (m.up_number, *a))
                        .map(|(a, _)| a)
                };
                let decision = |oldest_here: bool, here: usize, there: usize| {
                    let keep = if oldest_here {
                        !(alone && here == 1 && there >= 2)
                    } else {
                        alone && there == 1 && here >= 2
                    };
                    if keep {
                        Kind::DownUnreachable
                    } else {
                        Kind::DownReachable
                    }
                };
                let oldest = oldest_of(false);
                let oldest_here = oldest.is_some_and(|o| !self.unreachable.contains(&o));
                let at = oldest.map_or("none".to_string(), |o| o.to_string());
                let text = format!(
                    "oldest {at} {} (down-if-alone {alone})",
                    if oldest_here { "here" } else { "there" }
                );
                if oldest.is_none() {
                    return said(Kind::DownAll, text);
                }
                let first = decision(
                    oldest_here,
                    self.side(true, false, false),
                    self.side(false, false, false),
                );
                // Without the Leaving (they may be Exiting there), with the Joining when
                // down-if-alone (they may be Up there and change who is alone).
                let edge = match oldest_of(true) {
                    None => Kind::DownAll,
                    Some(o) => decision(
                        !self.unreachable.contains(&o),
                        self.side(true, alone, true),
                        self.side(false, alone, true),
                    ),
                };
                said(confirmed(first, edge), text)
            }
        }
    }
}

/// Whether the resolver may down `m`: every live member but an Exiting one (Akka's
/// `nodesToDown`: `members` without Down and Exiting, plus the joining).
pub(super) fn downable(m: &GossipMember) -> bool {
    m.status < MemberStatus::Down && m.status != MemberStatus::Exiting
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{NodeId, NodeInc};
    use crate::membership::ReachRecord;

    fn addr(i: u32) -> NodeAddr {
        NodeAddr {
            node: NodeId(i),
            inc: NodeInc(1),
        }
    }

    fn addrs(v: &[u32]) -> Vec<NodeAddr> {
        v.iter().map(|i| addr(*i)).collect()
    }

    /// Node `i`'s view of a 5-node cluster (all Up, node 0 the oldest: up-number `i + 1`) under
    /// `net`:
    /// - `"2|3"`, `"2|2|1"`, ...: a clean partition into consecutive sides ({0,1}|{2,3,4}, ...);
    ///   the viewer holds only its own side's records (each of its side observes everyone
    ///   outside unreachable), since nothing crosses the cut. A trailing `j` makes node 4 a
    ///   Joining member (up-number 0).
    /// - `"2x3"`: 2 and 3 cannot reach each other, everybody else reaches everyone;
    /// - `"2>3"`: one-way, 2 no longer hears 3 (3 still hears 2);
    /// - `"4x01"`: 4 and {0, 1} cannot reach each other; 2 and 3 reach everyone;
    /// - `"mixed"`: 4 crashed (0..3 observe it) and 1, 2 cannot reach each other.
    ///
    /// In the last four the records reach every viewer through the nodes that bridge the cut.
    fn view(net: &str, viewer: u32) -> GossipState {
        let (sides_spec, joining) = match net.strip_suffix('j') {
            Some(s) => (s, true),
            None => (net, false),
        };
        let mut g = GossipState::default();
        for i in 0..5 {
            let joining = joining && i == 4;
            g.members.insert(
                addr(i),
                GossipMember {
                    up_number: if joining { 0 } else { i + 1 },
                    status: if joining {
                        MemberStatus::Joining
                    } else {
                        MemberStatus::Up
                    },
                    hosting: true,
                    app_version: 0,
                    down_reason: None,
                },
            );
        }
        let cuts: Vec<(u32, u32)> = match net {
            "2x3" => vec![(2, 3), (3, 2)],
            "2>3" => vec![(2, 3)],
            "4x01" => vec![(0, 4), (1, 4), (4, 0), (4, 1)],
            "mixed" => vec![(0, 4), (1, 4), (2, 4), (3, 4), (1, 2), (2, 1)],
            _ => {
                let mut side_of = Vec::new();
                for (s, n) in sides_spec.split('|').enumerate() {
                    let n: usize = n.parse().expect("side size");
                    side_of.extend(std::iter::repeat_n(s, n));
                }
                assert_eq!(side_of.len(), 5, "{net}");
                let mine = side_of[viewer as usize];
                let mut v = Vec::new();
                for o in 0..5u32 {
                    for s in 0..5u32 {
                        if side_of[o as usize] == mine && side_of[s as usize] != mine {
                            v.push((o, s));
                        }
                    }
                }
                v
            }
        };
        for (o, s) in cuts {
            g.reachability.insert(
                (addr(o), addr(s)),
                ReachRecord {
                    version: 1,
                    unreachable: true,
                },
            );
        }
        g
    }

    /// `decide` at `viewer`, with the unreachable set the state machine hands it (its
    /// `stable-after` set: the live unreachable members of its view).
    fn decide_at(strategy: &SbrStrategy, net: &str, viewer: u32) -> Decision {
        let g = view(net, viewer);
        let unreachable = g.unreachable_live();
        decide(
            strategy,
            &DowningFacts {
                gossip: &g,
                unreachable: &unreachable,
            },
            addr(viewer),
        )
    }

    const STRATEGIES: [SbrStrategy; 5] = [
        SbrStrategy::KeepMajority,
        SbrStrategy::KeepOldest {
            down_if_alone: false,
        },
        SbrStrategy::KeepOldest {
            down_if_alone: true,
        },
        SbrStrategy::StaticQuorum { quorum_size: 3 },
        SbrStrategy::DownAll,
    ];

    const ALL: &[u32] = &[0, 1, 2, 3, 4];

    /// (partition, viewer) → the set each strategy downs, in the order of `STRATEGIES`:
    /// keep-majority, keep-oldest, keep-oldest with down-if-alone, static-quorum 3, down-all.
    /// Node 0 is the oldest and the lowest address. The viewer of each side is its lowest
    /// node (the side's leader, the node that decides).
    ///
    /// Rules behind the rows (Akka's `split-brain-resolver.md`; docs/akka-reference.md §11.1, §11.2):
    /// - Each side weighs itself against *all* unreachable members as one side, so with three
    ///   sides (2|2|1, 1|2|2) keep-majority and static-quorum find no side with more than half
    ///   (resp. 3) members and every side downs itself: the whole cluster goes down.
    /// - keep-oldest: only the oldest's side survives, however many sides there are. With
    ///   down-if-alone the oldest downs itself when alone against more than one member
    ///   (1|4, 1|2|2); the other side survives only if it is the single other side (1|4: 4
    ///   members see one unreachable node); in 1|2|2 each 2-side sees three unreachable
    ///   members, cannot tell the oldest is alone, and downs itself: all go down.
    /// - keep-majority tie (2|3j: node 4 is Joining and does not count, so 2 against 2): the
    ///   side with the lowest address (node 0) would survive, but Akka looks again counting
    ///   the Joining node on the other side (it may be Up there): 2 against 3, a different
    ///   conclusion, so node 0 downs everyone (`majorityDecisionWhenIncludingMembershipChanges
    ///   EdgeCase`); the other side downs itself, its Joining node with it.
    /// - Down-all downs everyone wherever anything is unreachable, indirectly connected members
    ///   or not (Akka's `DownAllNodes` decides `DownAll` unconditionally).
    /// - Indirectly connected (observers of an unreachability that are themselves observed
    ///   unreachable: 2x3, 4x01, mixed) are downed by every other strategy, and when nobody
    ///   else is unreachable (2x3, 4x01) only they are, wherever the viewer is. In 4x01, 4 is
    ///   reachable from 2 and 3 but not from 0 and 1: all three are indirectly connected, 2
    ///   and 3 survive.
    /// - A one-way cut (2>3) with no record about the observer is a clean 4|1 for everyone
    ///   but the subject, which sees nothing unreachable but itself: no decision.
    /// - In "mixed" Akka downs the indirectly connected 1 and 2 and decides a second time
    ///   without the records between them (DS:288-322): 1 and 2 are then reachable and count
    ///   on this side, 4 against 1, and the crashed 4 is downed too.
    #[test]
    fn decide_table() {
        type Row = (&'static str, u32, [&'static [u32]; 5]);
        #[rustfmt::skip]
        let rows: &[Row] = &[
            // net      viewer  keep-majority  keep-oldest     k-o alone       quorum 3     down-all
            ("2|3",     0, [&[0, 1],       &[2, 3, 4],     &[2, 3, 4],     &[0, 1],     ALL]),
            ("2|3",     2, [&[0, 1],       &[2, 3, 4],     &[2, 3, 4],     &[0, 1],     ALL]),
            ("3|2",     0, [&[3, 4],       &[3, 4],        &[3, 4],        &[3, 4],     ALL]),
            ("3|2",     3, [&[3, 4],       &[3, 4],        &[3, 4],        &[3, 4],     ALL]),
            ("1|4",     0, [&[0],          &[1, 2, 3, 4],  &[0],           &[0],        ALL]),
            ("1|4",     1, [&[0],          &[1, 2, 3, 4],  &[0],           &[0],        ALL]),
            ("4|1",     0, [&[4],          &[4],           &[4],           &[4],        ALL]),
            ("4|1",     4, [&[4],          &[4],           &[4],           &[4],        ALL]),
            ("2|2|1",   0, [&[0, 1],       &[2, 3, 4],     &[2, 3, 4],     &[0, 1],     ALL]),
            ("2|2|1",   2, [&[2, 3],       &[2, 3],        &[2, 3],        &[2, 3],     ALL]),
            ("2|2|1",   4, [&[4],          &[4],           &[4],           &[4],        ALL]),
            ("1|2|2",   0, [&[0],          &[1, 2, 3, 4],  &[0],           &[0],        ALL]),
            ("1|2|2",   1, [&[1, 2],       &[1, 2],        &[1, 2],        &[1, 2],     ALL]),
            ("1|2|2",   3, [&[3, 4],       &[3, 4],        &[3, 4],        &[3, 4],     ALL]),
            ("2|3j",    0, [ALL,           &[2, 3, 4],     &[2, 3, 4],     &[0, 1],     ALL]),
            ("2|3j",    2, [&[2, 3, 4],    &[2, 3, 4],     &[2, 3, 4],     &[2, 3, 4],  ALL]),
            ("2x3",     0, [&[2, 3],       &[2, 3],        &[2, 3],        &[2, 3],     ALL]),
            ("2x3",     2, [&[2, 3],       &[2, 3],        &[2, 3],        &[2, 3],     ALL]),
            ("2x3",     3, [&[2, 3],       &[2, 3],        &[2, 3],        &[2, 3],     ALL]),
            ("2>3",     0, [&[3],          &[3],           &[3],           &[3],        ALL]),
            ("2>3",     2, [&[3],          &[3],           &[3],           &[3],        ALL]),
            ("2>3",     3, [&[],           &[],            &[],            &[],         &[]]),
            ("4x01",    0, [&[0, 1, 4],    &[0, 1, 4],     &[0, 1, 4],     &[0, 1, 4],  ALL]),
            ("4x01",    2, [&[0, 1, 4],    &[0, 1, 4],     &[0, 1, 4],     &[0, 1, 4],  ALL]),
            ("4x01",    4, [&[0, 1, 4],    &[0, 1, 4],     &[0, 1, 4],     &[0, 1, 4],  ALL]),
            ("mixed",   0, [&[1, 2, 4],    &[1, 2, 4],     &[1, 2, 4],     &[1, 2, 4],  ALL]),
            ("mixed",   1, [&[1, 2, 4],    &[1, 2, 4],     &[1, 2, 4],     &[1, 2, 4],  ALL]),
        ];
        for &(net, viewer, expected) in rows {
            for (strategy, want) in STRATEGIES.iter().zip(expected) {
                let d = decide_at(strategy, net, viewer);
                let mut got = d.downed.clone();
                got.sort();
                assert_eq!(
                    got,
                    addrs(want),
                    "{strategy:?} {net} viewer {viewer}: {d:?}"
                );
                // `Nothing` exactly when nothing is downed.
                assert_eq!(
                    d.outcome == Outcome::Nothing,
                    want.is_empty(),
                    "{net} {viewer}"
                );
            }
        }
    }

    /// The oracle the table must satisfy (dst-anchors §12): in a clean partition no two sides
    /// both stay up, and no surviving side is downed by another side's decision.
    #[test]
    fn clean_partitions_never_keep_two_sides() {
        let nets: &[(&str, &[&[u32]])] = &[
            ("2|3", &[&[0, 1], &[2, 3, 4]]),
            ("3|2", &[&[0, 1, 2], &[3, 4]]),
            ("1|4", &[&[0], &[1, 2, 3, 4]]),
            ("4|1", &[&[0, 1, 2, 3], &[4]]),
            ("2|2|1", &[&[0, 1], &[2, 3], &[4]]),
            ("1|2|2", &[&[0], &[1, 2], &[3, 4]]),
            ("2|3j", &[&[0, 1], &[2, 3, 4]]),
        ];
        for strategy in &STRATEGIES {
            for &(net, sides) in nets {
                let downed: BTreeSet<NodeAddr> = sides
                    .iter()
                    .flat_map(|side| decide_at(strategy, net, side[0]).downed)
                    .collect();
                let up: Vec<&&[u32]> = sides
                    .iter()
                    .filter(|side| side.iter().any(|i| !downed.contains(&addr(*i))))
                    .collect();
                assert!(up.len() <= 1, "{strategy:?} {net}: {up:?} stay up");
                for side in up {
                    assert!(
                        side.iter().all(|i| !downed.contains(&addr(*i))),
                        "{strategy:?} {net}: side {side:?} partly downed"
                    );
                }
            }
        }
    }

    /// The names, texts and order of `downed` end up in the trace and in shutdown reasons:
    /// pinned here.
    #[test]
    fn decision_texts_and_order() {
        let km = &SbrStrategy::KeepMajority;
        // (strategy, net, viewer, name, outcome, text, downed in order)
        type Case<'a> = (
            &'a SbrStrategy,
            &'a str,
            u32,
            &'a str,
            Outcome,
            &'a str,
            &'a [u32],
        );
        let cases: &[Case] = &[
            (
                km,
                "2|3",
                0,
                "keep-majority",
                Outcome::DownOwnSide,
                "2 of 5 on this side: down own side",
                &[0, 1],
            ),
            (
                km,
                "2|3",
                2,
                "keep-majority",
                Outcome::DownUnreachable,
                "3 of 5 on this side: down unreachable side",
                &[0, 1],
            ),
            (
                &STRATEGIES[1],
                "2|3",
                2,
                "keep-oldest",
                Outcome::DownOwnSide,
                "oldest 0#1 there (down-if-alone false): down own side",
                &[2, 3, 4],
            ),
            (
                &STRATEGIES[2],
                "1|4",
                0,
                "keep-oldest",
                Outcome::DownOwnSide,
                "oldest 0#1 here (down-if-alone true): down own side",
                &[0],
            ),
            (
                &STRATEGIES[3],
                "3|2",
                0,
                "static-quorum",
                Outcome::DownUnreachable,
                "3 on this side, quorum 3: down unreachable side",
                &[3, 4],
            ),
            (
                &STRATEGIES[4],
                "4|1",
                4,
                "down-all",
                Outcome::DownAll,
                "down all: down everyone",
                &[0, 1, 2, 3, 4],
            ),
            (
                km,
                "2x3",
                0,
                "indirectly-connected",
                Outcome::DownIndirectlyConnected,
                "indirectly connected [NodeAddr { node: NodeId(2), inc: NodeInc(1) }, \
              NodeAddr { node: NodeId(3), inc: NodeInc(1) }]: down them",
                &[2, 3],
            ),
            // The indirectly connected, and the second decision without their records, in
            // address order.
            (
                km,
                "mixed",
                0,
                "indirectly-connected",
                Outcome::DownIndirectlyConnected,
                "indirectly connected [NodeAddr { node: NodeId(1), inc: NodeInc(1) }, \
              NodeAddr { node: NodeId(2), inc: NodeInc(1) }]: down them; without their records, \
              4 of 5 on this side: down unreachable side",
                &[1, 2, 4],
            ),
            (
                &STRATEGIES[3],
                "mixed",
                0,
                "indirectly-connected",
                Outcome::DownIndirectlyConnected,
                "indirectly connected [NodeAddr { node: NodeId(1), inc: NodeInc(1) }, \
              NodeAddr { node: NodeId(2), inc: NodeInc(1) }]: down them; without their records, \
              4 on this side, quorum 3: down unreachable side",
                &[1, 2, 4],
            ),
            (
                km,
                "2>3",
                3,
                "keep-majority",
                Outcome::Nothing,
                "nothing unreachable",
                &[],
            ),
        ];
        for &(strategy, net, viewer, name, outcome, text, downed) in cases {
            let d = decide_at(strategy, net, viewer);
            let want = Decision {
                strategy: name,
                outcome,
                text: text.to_string(),
                downed: addrs(downed),
            };
            assert_eq!(d, want, "{strategy:?} {net} viewer {viewer}");
        }
    }

    /// Members already Down or Removed are on neither side. A record about a Down member still
    /// counts until the member is removed, as in Akka (its `setReachability` keeps records
    /// between members it holds, and it holds a Down member until `MemberRemoved`, DS:213-219,
    /// SBR:605-612): its observer, itself unreachable, is indirectly connected. A record about a
    /// Removed member counts for nothing.
    #[test]
    fn down_and_removed_members_do_not_count() {
        let mut g = view("2|3", 0);
        // 4 is Down (downed earlier); 3 observed it before.
        g.members.get_mut(&addr(4)).expect("member").status = MemberStatus::Down;
        g.reachability.insert(
            (addr(3), addr(4)),
            ReachRecord {
                version: 1,
                unreachable: true,
            },
        );
        let unreachable = g.unreachable_live();
        assert_eq!(unreachable, BTreeSet::from([addr(2), addr(3)]));
        let facts = DowningFacts {
            gossip: &g,
            unreachable: &unreachable,
        };
        // 3 is indirectly connected; without its records, 2 of 4: a tie, and node 0 (lowest
        // address) is here.
        let d = decide(&SbrStrategy::KeepMajority, &facts, addr(0));
        assert_eq!(d.downed, addrs(&[2, 3]), "{d:?}");
        assert_eq!(
            d.text,
            "indirectly connected [NodeAddr { node: NodeId(3), inc: NodeInc(1) }]: down them; \
             without their records, 2 of 4 on this side: down unreachable side"
        );
        // The viewer in its own unreachable set (a record gossiped before the cut) stays on
        // its own side.
        let mut with_me = unreachable.clone();
        with_me.insert(addr(0));
        let facts = DowningFacts {
            gossip: &g,
            unreachable: &with_me,
        };
        assert_eq!(decide(&SbrStrategy::KeepMajority, &facts, addr(0)), d);
        // Once 4 is removed its records count for nothing: a clean 2 of 4.
        g.members.get_mut(&addr(4)).expect("member").status = MemberStatus::Removed;
        let facts = DowningFacts {
            gossip: &g,
            unreachable: &unreachable,
        };
        let d = decide(&SbrStrategy::KeepMajority, &facts, addr(0));
        assert_eq!(d.downed, addrs(&[2, 3]), "{d:?}");
        assert_eq!(d.text, "2 of 4 on this side: down unreachable side");
    }

    /// Akka `KeepOldest.oldestDecision`: down-if-alone downs the oldest only when it is alone
    /// against two or more (`thisSide == 1 && otherSide >= 2`). In a two-node cluster the
    /// node on the other side is no better, so the oldest is kept even though it is alone:
    /// both sides down the younger node.
    #[test]
    fn down_if_alone_keeps_the_oldest_of_a_two_node_cluster() {
        for viewer in [0, 1] {
            let mut g = view("1|4", viewer);
            g.members.retain(|a, _| a.node.0 < 2);
            g.reachability
                .retain(|(o, s), _| o.node.0 < 2 && s.node.0 < 2);
            let unreachable = g.unreachable_live();
            assert_eq!(unreachable, BTreeSet::from([addr(1 - viewer)]));
            let d = decide(
                &STRATEGIES[2],
                &DowningFacts {
                    gossip: &g,
                    unreachable: &unreachable,
                },
                addr(viewer),
            );
            assert_eq!(d.downed, addrs(&[1]), "viewer {viewer}: {d:?}");
        }
    }
}
