//! The split-brain resolver's decision (Akka's `DowningStrategy` in `akka.cluster.sbr`), as a
//! pure function of one node's view: which members to down. No timers (the `stable-after`
//! wait and the `down-removal-margin` stay in the state machine), no I/O.
//!
//! The reference has no section on the strategies' rules themselves; it uses the resolver as
//! the thing that keeps a partition from becoming two clusters: akka-sharding.md §11.1 (I1,
//! from Akka's `split-brain-resolver.md`), §11.2 (a partition without proper downing yields
//! two coordinators; `stable-after`/`down-removal-margin` shorter than the other side's stop
//! breaks I1), §9.2 (`down-removal-margin` = `stable-after` under SBR), §13.1
//! (`SplitBrainResolverIntegrationSpec`) and §13.5 item 12 (partition + downing variants). The
//! strategies follow Akka's `split-brain-resolver.md`, as the code decided before this module
//! was split out.
//!
//! Every strategy compares "this side" (the deciding node and the members it reaches) with
//! "the unreachable side" (every unreachable member, however many partitions they are really
//! in): with three or more partitions each side sees all others as one.

use super::{GossipMember, GossipState, NodeAddr, SbrStrategy};
use crate::protocol::MemberStatus;
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

/// The strategy between this side and the clean `unreachable` side, `excluded` (the indirectly
/// connected) counted on neither.
fn decide_clean(
    strategy: &SbrStrategy,
    gossip: &GossipState,
    unreachable: &BTreeSet<NodeAddr>,
    excluded: &BTreeSet<NodeAddr>,
) -> Decision {
    // Akka SBR counts Up/Leaving/Exiting members; Joining ones are downed with their side but
    // do not count.
    let live: Vec<(NodeAddr, &GossipMember)> = gossip
        .members
        .iter()
        .filter(|(a, m)| m.status < MemberStatus::Down && !excluded.contains(a))
        .map(|(a, m)| (*a, m))
        .collect();
    let counted = |m: &GossipMember| m.status != MemberStatus::Joining;
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
    let name = strategy_name(strategy);
    let (survive, text) = match strategy {
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
            (survive, format!("{n_mine} of {total} on this side"))
        }
        SbrStrategy::KeepOldest { down_if_alone } => {
            let oldest = live
                .iter()
                .filter(|(_, m)| counted(m) && m.up_number > 0)
                .min_by_key(|(a, m)| (m.up_number, *a))
                .map(|(a, _)| *a);
            let oldest_here = oldest.is_some_and(|o| !unreachable.contains(&o));
            let survive = if oldest_here {
                !(*down_if_alone && n_mine == 1 && n_theirs > 1)
            } else {
                *down_if_alone && n_theirs == 1 && n_mine > 1
            };
            let at = oldest.map_or("none".to_string(), |o| o.to_string());
            (
                survive,
                format!(
                    "oldest {at} {} (down-if-alone {down_if_alone})",
                    if oldest_here { "here" } else { "there" }
                ),
            )
        }
        SbrStrategy::StaticQuorum { quorum_size } => (
            n_mine >= *quorum_size as usize,
            format!("{n_mine} on this side, quorum {quorum_size}"),
        ),
        SbrStrategy::DownAll => (false, "down all".to_string()),
    };
    let (outcome, text, downed) = if let SbrStrategy::DownAll = strategy {
        let all: Vec<NodeAddr> = live.iter().map(|(a, _)| *a).collect();
        (Outcome::DownAll, format!("{text}: down everyone"), all)
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
