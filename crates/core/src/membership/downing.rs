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
//! The counting follows Akka's `DowningStrategy.scala`: Up and Leaving members count, Joining
//! ones are downed with their side but do not count, Exiting ones are neither counted nor
//! downed; static quorum downs everyone when more than `quorum-size * 2 - 1` members count;
//! keep-majority and keep-oldest look again at a decision to keep their side with the
//! membership changes a partition may hide (this side without its Leaving, the other with its
//! Joining) and down everyone when that look disagrees. `crates/core/tests/sbr_spec.rs` holds
//! Akka's own unit cases against [`decide`], with the departures that remain.
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

/// The split-brain resolver's decision at `me` under `strategy`, from `facts`: this side (`me`
/// and every live member it does not see unreachable) against the unreachable side.
///
/// Indirectly connected members (observers of an unreachability that are themselves observed
/// unreachable: one-way cuts, bridges) are downed, and the strategy decides only between the
/// clean sides; when `me` is indirectly connected, or nobody clean is unreachable, only the
/// indirectly connected are downed.
pub fn decide(strategy: &SbrStrategy, facts: &DowningFacts<'_>, me: NodeAddr) -> Decision {
    // The deciding node is always on its own side: other observers' records about it
    // (gossiped before a cut) must not move it to the other side (Akka's SBR decides from the
    // local node's side).
    let mut unreachable = facts.unreachable.clone();
    unreachable.remove(&me);
    if unreachable.is_empty() {
        return Decision {
            strategy: strategy_name(strategy),
            outcome: Outcome::Nothing,
            text: "nothing unreachable".to_string(),
            downed: Vec::new(),
        };
    }
    let gossip = facts.gossip;
    // Static quorum with more members than `quorum-size * 2 - 1`: both sides of a split could
    // keep a quorum, so Akka downs everyone, before looking at anything else
    // (DowningStrategy.scala `StaticQuorum.decide`, `isTooManyMembers`: members counted as
    // `membersWithRole`, so neither Joining, Exiting nor Down).
    if let SbrStrategy::StaticQuorum { quorum_size } = strategy {
        let members = gossip.members.iter().filter(|(_, m)| counts(m)).count();
        let most = (2 * *quorum_size as usize).saturating_sub(1);
        if members > most {
            let all: Vec<NodeAddr> = gossip
                .members
                .iter()
                .filter(|(_, m)| downable(m))
                .map(|(a, _)| *a)
                .collect();
            return Decision {
                strategy: strategy_name(strategy),
                outcome: Outcome::DownAll,
                text: format!(
                    "{members} members, more than quorum {quorum_size} allows ({most}): down everyone"
                ),
                downed: all,
            };
        }
    }
    // Down-all downs every downable member whatever the reachability says: Akka's
    // `DownAllNodes.decide` is `DownAll` unconditionally, before (and instead of) any look at
    // the indirectly connected (DowningStrategy.scala `DownAllNodes`).
    if let SbrStrategy::DownAll = strategy {
        return decide_clean(strategy, gossip, &unreachable, &BTreeSet::new());
    }
    // Akka SBR "indirectly connected" members: observers of an unreachability that are
    // themselves observed unreachable (one-way cuts, bridges, stale records from before a
    // cut). They are downed; the strategy decides only between the clean sides. Without this,
    // a one-way cut 0 -> 1 lets 0 and 1 each keep a "majority" with node 2.
    let full = gossip.unreachable();
    let observers: BTreeSet<NodeAddr> = gossip
        .reachability
        .iter()
        // Only records about live subjects: an observer of an already Down member (stale, e.g.
        // a crashed node's old incarnation) is not indirectly connected.
        .filter(|((_, subject), r)| r.unreachable && gossip.is_live(*subject))
        .map(|((o, _), _)| *o)
        .filter(|o| gossip.is_live(*o))
        .collect();
    let indirect: BTreeSet<NodeAddr> = observers
        .intersection(&full)
        .copied()
        .filter(|a| gossip.is_live(*a))
        .collect();
    if indirect.is_empty() {
        return decide_clean(strategy, gossip, &unreachable, &indirect);
    }
    let clean: BTreeSet<NodeAddr> = unreachable.difference(&indirect).copied().collect();
    let list: Vec<NodeAddr> = indirect.iter().copied().collect();
    if indirect.contains(&me) || clean.is_empty() {
        return Decision {
            strategy: "indirectly-connected",
            outcome: Outcome::DownIndirectlyConnected,
            text: format!("indirectly connected {list:?}: down them"),
            downed: list,
        };
    }
    let mut d = decide_clean(strategy, gossip, &clean, &indirect);
    for a in list {
        if !d.downed.contains(&a) {
            d.downed.push(a);
        }
    }
    d.text.push_str("; and down the indirectly connected");
    d
}

/// Whether the resolver counts `m` on its side: Up and Leaving (Akka's `members`: neither
/// Joining, WeaklyUp, Exiting, Down nor Removed).
fn counts(m: &GossipMember) -> bool {
    matches!(m.status, MemberStatus::Up | MemberStatus::Leaving)
}

/// Whether the resolver may down `m`: every live member but an Exiting one (Akka's
/// `nodesToDown`: `members` without Down and Exiting, plus the joining).
fn downable(m: &GossipMember) -> bool {
    m.status < MemberStatus::Down && m.status != MemberStatus::Exiting
}

/// The strategy between this side and the clean `unreachable` side, `excluded` (the indirectly
/// connected) counted on neither.
fn decide_clean(
    strategy: &SbrStrategy,
    gossip: &GossipState,
    unreachable: &BTreeSet<NodeAddr>,
    excluded: &BTreeSet<NodeAddr>,
) -> Decision {
    // Akka SBR counts Up and Leaving members; Joining ones are downed with their side but do
    // not count; Exiting ones are neither counted nor downed (DowningStrategy.scala `members`
    // and `nodesToDown`'s `downable`).
    let live: Vec<(NodeAddr, &GossipMember)> = gossip
        .members
        .iter()
        .filter(|(a, m)| downable(m) && !excluded.contains(a))
        .map(|(a, m)| (*a, m))
        .collect();
    let counted = |m: &GossipMember| counts(m);
    let mine: Vec<NodeAddr> = live
        .iter()
        .filter(|(a, _)| !unreachable.contains(a))
        .map(|(a, _)| *a)
        .collect();
    let theirs: Vec<NodeAddr> = live
        .iter()
        .filter(|(a, _)| unreachable.contains(a))
        .map(|(a, _)| *a)
        .collect();
    let n_mine = live
        .iter()
        .filter(|(a, m)| !unreachable.contains(a) && counted(m))
        .count();
    let n_theirs = live
        .iter()
        .filter(|(a, m)| unreachable.contains(a) && counted(m))
        .count();
    // Akka's `members(includingPossiblyUp, excludingPossiblyExiting)`: Up always, Leaving unless
    // it may be Exiting on the other side already, Joining when it may be Up there already.
    let member_of = |m: &GossipMember, possibly_up: bool, possibly_exiting: bool| match m.status {
        MemberStatus::Up => true,
        MemberStatus::Leaving => !possibly_exiting,
        MemberStatus::Joining => possibly_up,
        _ => false,
    };
    // This side's (`here`) or the unreachable side's members in that sense.
    let side = |here: bool, possibly_up: bool, possibly_exiting: bool| {
        live.iter()
            .filter(|(a, m)| {
                unreachable.contains(a) != here && member_of(m, possibly_up, possibly_exiting)
            })
            .count()
    };
    let name = strategy_name(strategy);
    // `edge`: Akka's second look at a decision to keep this side, counting the membership
    // changes the partition may hide (`...WhenIncludingMembershipChangesEdgeCase`); when it
    // concludes otherwise, or nobody is left to count, Akka downs everyone.
    let (survive, edge, text) = match strategy {
        SbrStrategy::KeepMajority => {
            let total = n_mine + n_theirs;
            // Tie: the side with the lowest address survives.
            let lowest = live
                .iter()
                .filter(|(_, m)| counted(m))
                .map(|(a, _)| *a)
                .next();
            let survive = 2 * n_mine > total
                || (2 * n_mine == total && lowest.is_some_and(|l| !unreachable.contains(&l)));
            // This side as small as it could be (no Leaving), the other as large (its Joining).
            let edge = total == 0
                || survive && {
                    let lowest = live
                        .iter()
                        .find(|(_, m)| member_of(m, false, true))
                        .map(|(a, _)| *a);
                    let (here, there) = (side(true, false, true), side(false, true, false));
                    let keep = lowest.is_some_and(|l| {
                        here > there || (here == there && !unreachable.contains(&l))
                    });
                    !keep
                };
            (survive, edge, format!("{n_mine} of {total} on this side"))
        }
        SbrStrategy::KeepOldest { down_if_alone } => {
            let alone = *down_if_alone;
            let oldest_of = |possibly_exiting: bool| {
                live.iter()
                    .filter(|(_, m)| member_of(m, false, possibly_exiting) && m.up_number > 0)
                    .min_by_key(|(a, m)| (m.up_number, *a))
                    .map(|(a, _)| *a)
            };
            let keep = |oldest_here: bool, here: usize, there: usize| {
                if oldest_here {
                    !(alone && here == 1 && there > 1)
                } else {
                    alone && there == 1 && here > 1
                }
            };
            let oldest = oldest_of(false);
            let oldest_here = oldest.is_some_and(|o| !unreachable.contains(&o));
            let survive = keep(oldest_here, n_mine, n_theirs);
            // Without the Leaving (they may be Exiting there), with the Joining when down-if-alone
            // (they may be Up there and change who is alone).
            let edge = oldest.is_none()
                || survive
                    && oldest_of(true).is_none_or(|o| {
                        let (here, there) = (side(true, alone, true), side(false, alone, true));
                        !keep(!unreachable.contains(&o), here, there)
                    });
            let at = oldest.map_or("none".to_string(), |o| o.to_string());
            (
                survive,
                edge,
                format!(
                    "oldest {at} {} (down-if-alone {down_if_alone})",
                    if oldest_here { "here" } else { "there" }
                ),
            )
        }
        SbrStrategy::StaticQuorum { quorum_size } => (
            n_mine >= *quorum_size as usize,
            false,
            format!("{n_mine} on this side, quorum {quorum_size}"),
        ),
        SbrStrategy::DownAll => (false, false, "down all".to_string()),
    };
    let (outcome, text, downed) = if let SbrStrategy::DownAll = strategy {
        let all: Vec<NodeAddr> = live.iter().map(|(a, _)| *a).collect();
        (Outcome::DownAll, format!("{text}: down everyone"), all)
    } else if edge {
        let all: Vec<NodeAddr> = live.iter().map(|(a, _)| *a).collect();
        let why = "membership changing during the partition, down everyone";
        (Outcome::DownAll, format!("{text}: {why}"), all)
    } else if survive {
        (
            Outcome::DownUnreachable,
            format!("{text}: down unreachable side"),
            theirs,
        )
    } else {
        (Outcome::DownOwnSide, format!("{text}: down own side"), mine)
    };
    Decision {
        strategy: name,
        outcome,
        text,
        downed,
    }
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
    ///   unreachable: 2x3, 4x01, mixed) are downed by every other strategy, and
    ///   when nobody clean is unreachable (2x3, 4x01) or the viewer is one of them, only they
    ///   are. In 4x01, 4 is reachable from 2 and 3 but not from 0 and 1: all three are
    ///   indirectly connected, 2 and 3 survive.
    /// - A one-way cut (2>3) with no record about the observer is a clean 4|1 for everyone
    ///   but the subject, which sees nothing unreachable but itself: no decision.
    /// - In "mixed" the strategy decides between the clean sides {0, 3} and {4} (1 and 2
    ///   excluded, so static-quorum 3 is out of reach and {0, 3} downs itself).
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
            ("mixed",   0, [&[1, 2, 4],    &[1, 2, 4],     &[1, 2, 4],     &[0, 1, 2, 3], ALL]),
            ("mixed",   1, [&[1, 2],       &[1, 2],        &[1, 2],        &[1, 2],     ALL]),
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
            // The strategy's side first, then the indirectly connected.
            (
                km,
                "mixed",
                0,
                "keep-majority",
                Outcome::DownUnreachable,
                "2 of 3 on this side: down unreachable side; and down the indirectly connected",
                &[4, 1, 2],
            ),
            (
                &STRATEGIES[3],
                "mixed",
                0,
                "static-quorum",
                Outcome::DownOwnSide,
                "2 on this side, quorum 3: down own side; and down the indirectly connected",
                &[0, 3, 1, 2],
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

    /// Members already Down or Removed are on neither side, and records about them make no
    /// one indirectly connected (a crashed node's old incarnation).
    #[test]
    fn down_and_removed_members_do_not_count() {
        let mut g = view("2|3", 0);
        // 4 is Down (downed earlier); 3 observed it before: a stale record, not a bridge.
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
        // 2 of 4: a tie, and node 0 (lowest address) is here.
        let d = decide(&SbrStrategy::KeepMajority, &facts, addr(0));
        assert_eq!(d.downed, addrs(&[2, 3]), "{d:?}");
        assert_eq!(d.text, "2 of 4 on this side: down unreachable side");
        // The viewer in its own unreachable set (a record gossiped before the cut) stays on
        // its own side.
        let mut with_me = unreachable.clone();
        with_me.insert(addr(0));
        let facts = DowningFacts {
            gossip: &g,
            unreachable: &with_me,
        };
        assert_eq!(decide(&SbrStrategy::KeepMajority, &facts, addr(0)), d);
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
