//! The **rebalance-quiescence** rule: a balanced cluster with no membership
//! change stops rebalancing; shards do not move forever.
//!
//! # The bound
//!
//! Let Φ = Σ (shards of a region)² over the regions the coordinator's strategy sees (its
//! registered regions whose member is in its node's view, `regionEntriesFor`, §10.1). Every
//! rebalance round of either of Akka's algorithms, in a *calm* cluster (below), lowers Φ by at
//! least 2 once its hand-offs are done and its shards allocated again:
//!
//! - a moved shard is deallocated from its region (size x) and allocated again, eagerly
//!   (`RebalanceDone` → `ShardHomeDeallocated` → self `GetShardHome`, §4.3, akka#29543), to
//!   the most suitable region (§10.2), which in a calm cluster (every member Up, one app
//!   version, no region shutting down) is the least loaded one: its size y ≤ x − 1, so Φ
//!   changes by 2(y − x + 1) ≤ 0. No move raises Φ.
//! - every shard a round picks comes from a region with at least 2 more shards than the least
//!   loaded one: old algorithm (§10.3, SC:362-390) only when `most − least > threshold ≥ 1`
//!   (threshold 0 picks nothing: n = min(diff − 0, 0, ...)); new algorithm (§10.4, LSAS)
//!   phase 1 only from regions above `optimal = ceil(N / R)` while some region is below it,
//!   phase 2 only from regions at `optimal` or above while some region is at `optimal − 2` or
//!   below. Moves with Φ change 0 swap two region sizes (x, x − 1) and leave the multiset of
//!   sizes as it was, so the first picked shard still moves at least 2 down and lowers Φ by
//!   at least 2.
//!
//! Φ ≥ Φmin(N, R), the value of the balanced spread (sizes ⌊N/R⌋ and ⌈N/R⌉), so after the
//! last change a calm cluster runs at most (Φ₀ − Φmin) / 2 rounds, where Φ₀ is Φ at the
//! first round after the change; a balanced state (max − min ≤ 1, Φ = Φmin) runs none. The
//! rule checks the sharper per-round form: comparing two *settled* round starts of one
//! coordinator (nothing in progress, every moved shard allocated again) with no change in
//! between, Φ must have fallen by at least 2. An endless mover (the new algorithm with
//! `optimal` rounded down: 8,142 → 160,000 rebalances in 5,000 schedules) is caught at its second
//! round.
//!
//! A *change* resets the rule: a node up or down, any member view change, a fault injected or
//! healed (the liveness phase's heals too), a graceful leave, a region stopped or (re-)registered, a
//! coordinator started or stopped, a hand-off that timed out, a region registered or
//! terminated in the coordinator's state, and an allocation that is not the re-allocation of a
//! rebalanced shard (a new shard, or one of a terminated region). A round is only compared
//! while the cluster is calm: the coordinator's view has every member Up on one app version
//! and no node is leaving gracefully (a Leaving, Joining or Down member, a rolling update and a
//! region in graceful shutdown all make the most suitable region other than the least
//! loaded).
//!
//! The coordinator's state is mirrored as the liveness rule mirrors it: the journal, replayed
//! when a coordinator starts, each write applied when its acknowledgement reaches the
//! coordinator; in ddata mode the state read and each successful update. Cost: O(log n) per
//! event, O(regions × members) per rebalance round.

use super::{Invariant, Violation};
use crate::trace::{Subject, TraceEvent};
use shardsim_core::ids::{NodeId, ShardId};
use shardsim_core::protocol::coordinator::CoordinatorState;
use shardsim_core::protocol::{CoordinatorEvent, Member, MemberStatus};
use shardsim_core::time::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// One running coordinator, as far as the rule needs it.
#[derive(Debug)]
struct Coord {
    incarnation: u32,
    generation: u32,
    /// Its state (allocations).
    state: CoordinatorState,
    /// The write appended by the journal and not yet acknowledged.
    in_flight: Option<CoordinatorEvent>,
    /// Shards it is handing off.
    handoffs: BTreeSet<ShardId>,
    /// Shards whose hand-off ended and that are not allocated again yet.
    awaiting: BTreeSet<ShardId>,
}

/// The last settled round since the last change.
#[derive(Debug, Clone, Copy)]
struct Baseline {
    coordinator: NodeId,
    /// Φ at its start.
    phi: u64,
    /// Φ at the first settled round after the change.
    phi0: u64,
    /// Φmin for the shards and regions of the first round.
    phi_min: u64,
    /// Settled rounds since the change.
    rounds: u64,
    /// When the previous round started.
    at: Instant,
}

/// The state of the rebalance-quiescence rule.
#[derive(Debug, Default)]
pub(super) struct Quiescence {
    journal: Vec<CoordinatorEvent>,
    coords: BTreeMap<NodeId, Coord>,
    /// node → its member view.
    views: Vec<Vec<Member>>,
    /// Nodes in a graceful leave (until their incarnation goes down).
    leaving: BTreeSet<NodeId>,
    baseline: Option<Baseline>,
    /// When the last change happened.
    last_change: Instant,
    /// (time, coordinator) of the last round: the hand-offs of one tick share both.
    last_round: Option<(u64, NodeId)>,
}

/// Σ size² of the balanced spread of `n` shards over `r` regions.
pub(super) fn phi_min(n: u64, r: u64) -> u64 {
    if r == 0 {
        return 0;
    }
    let (q, extra) = (n / r, n % r);
    (r - extra) * q * q + extra * (q + 1) * (q + 1)
}

impl Quiescence {
    fn change(&mut self, t: Instant) {
        self.baseline = None;
        self.last_change = t;
    }

    fn coordinator(
        &mut self,
        node: NodeId,
        incarnation: u32,
        generation: u32,
    ) -> Option<&mut Coord> {
        self.coords
            .get_mut(&node)
            .filter(|c| c.incarnation == incarnation && c.generation == generation)
    }

    /// Apply a state change of the coordinator on `node` as it applies it.
    fn apply(&mut self, t: Instant, node: NodeId, event: CoordinatorEvent) {
        let Some(c) = self.coords.get_mut(&node) else {
            return;
        };
        // A hand-off that ended because its region terminated (§3.5) deallocates nothing:
        // its shards leave with the region and are not awaited as re-allocations.
        let gone: Vec<ShardId> = match event {
            CoordinatorEvent::ShardRegionTerminated { region } => {
                c.state.regions.get(&region).cloned().unwrap_or_default()
            }
            _ => Vec::new(),
        };
        if c.state.updated(&event).is_err() {
            return; // the coordinator does not apply it either
        }
        for s in &gone {
            c.awaiting.remove(s);
        }
        let changed = match event {
            CoordinatorEvent::ShardHomeAllocated { shard, .. } => !c.awaiting.remove(&shard),
            CoordinatorEvent::ShardHomeDeallocated { .. } => false,
            _ => true,
        };
        if changed {
            self.change(t);
        }
    }

    /// Whether the cluster is calm as the coordinator on `node` sees it.
    fn calm(&self, node: NodeId) -> bool {
        let Some(view) = self.views.get(node.0 as usize) else {
            return false;
        };
        let version = view.iter().find(|m| m.hosting).map(|m| m.app_version);
        self.leaving.is_empty()
            && !view.is_empty()
            && view.iter().all(|m| m.status == MemberStatus::Up)
            && view
                .iter()
                .filter(|m| m.hosting)
                .all(|m| Some(m.app_version) == version)
    }

    /// (Φ, shards, regions) of the coordinator on `node`, over the regions its view knows.
    fn phi(&self, node: NodeId) -> Option<(u64, u64, u64)> {
        let c = self.coords.get(&node)?;
        let view = self.views.get(node.0 as usize)?;
        let (mut phi, mut n, mut r) = (0u64, 0u64, 0u64);
        for (region, shards) in &c.state.regions {
            if view.iter().any(|m| m.region() == *region) {
                let k = shards.len() as u64;
                phi += k * k;
                n += k;
                r += 1;
            }
        }
        Some((phi, n, r))
    }

    fn round(&mut self, t: Instant, node: NodeId) -> Option<Violation> {
        let settled = self
            .coords
            .get(&node)
            .is_some_and(|c| c.handoffs.is_empty() && c.awaiting.is_empty());
        if !self.calm(node) {
            self.baseline = None;
            return None;
        }
        if !settled {
            return None; // compared at the next settled round
        }
        let (phi, n, r) = self.phi(node)?;
        match self.baseline {
            Some(b) if b.coordinator == node => {
                if phi + 2 > b.phi {
                    return Some(Violation {
                        invariant: Invariant::RebalanceQuiescence,
                        t,
                        detail: format!(
                            "the coordinator on node {} starts rebalance round {} since the last membership, region or allocation change (t={}) with Σ shards² = {phi} over {r} regions and {n} shards, {} at the previous round (t={}): a round in a calm cluster lowers it by at least 2, so at most (Φ₀ − Φmin) / 2 = ({} − {}) / 2 = {} rounds; the shards keep moving",
                            node.0,
                            b.rounds + 1,
                            self.last_change,
                            b.phi,
                            b.at,
                            b.phi0,
                            b.phi_min,
                            b.phi0.saturating_sub(b.phi_min) / 2
                        ),
                        about: vec![Subject::Node { node }],
                    });
                }
                self.baseline = Some(Baseline {
                    phi,
                    rounds: b.rounds + 1,
                    at: t,
                    ..b
                });
            }
            _ => {
                self.baseline = Some(Baseline {
                    coordinator: node,
                    phi,
                    phi0: phi,
                    phi_min: phi_min(n, r),
                    rounds: 1,
                    at: t,
                });
            }
        }
        None
    }

    pub(super) fn on_event(&mut self, t: Instant, ev: &TraceEvent) -> Option<Violation> {
        match ev {
            TraceEvent::NodeUp { node, .. } => {
                super::safety::slot(&mut self.views, node.0 as usize).clear();
                self.change(t);
            }
            TraceEvent::NodeDown { node, .. } => {
                super::safety::slot(&mut self.views, node.0 as usize).clear();
                self.coords.remove(node);
                self.leaving.remove(node);
                self.change(t);
            }
            TraceEvent::MemberView { node, members } => {
                *super::safety::slot(&mut self.views, node.0 as usize) = members.clone();
                self.change(t);
            }
            TraceEvent::GracefulLeave { node, .. } => {
                self.leaving.insert(*node);
                self.change(t);
            }
            TraceEvent::Fault { .. }
            | TraceEvent::RegionStopped { .. }
            | TraceEvent::RegionCoordinator { .. } => self.change(t),
            TraceEvent::CoordinatorStarted {
                node,
                incarnation,
                generation,
                ..
            } => {
                // Recovery replays the journal (a ddata coordinator's state load follows).
                let mut state = CoordinatorState::default();
                for e in &self.journal {
                    if state.updated(e).is_err() {
                        break;
                    }
                }
                self.coords.insert(
                    *node,
                    Coord {
                        incarnation: *incarnation,
                        generation: *generation,
                        state,
                        in_flight: None,
                        handoffs: BTreeSet::new(),
                        awaiting: BTreeSet::new(),
                    },
                );
                self.change(t);
            }
            TraceEvent::CoordinatorStopped { node, .. } => {
                self.coords.remove(node);
                self.change(t);
            }
            TraceEvent::CoordinatorStateLoaded { node, events } => {
                if let Some(c) = self.coords.get_mut(node) {
                    let mut state = CoordinatorState::default();
                    for e in events {
                        if state.updated(e).is_err() {
                            break;
                        }
                    }
                    c.state = state;
                }
                self.change(t);
            }
            TraceEvent::CoordinatorStateUpdated { node, event } => self.apply(t, *node, *event),
            TraceEvent::Persisted {
                node,
                incarnation,
                generation,
                event,
            } => {
                self.journal.push(*event);
                if let Some(c) = self.coordinator(*node, *incarnation, *generation) {
                    c.in_flight = Some(*event);
                }
            }
            TraceEvent::PersistAcked {
                node,
                incarnation,
                generation,
            } => {
                let event = self
                    .coordinator(*node, *incarnation, *generation)
                    .and_then(|c| c.in_flight.take());
                if let Some(e) = event {
                    self.apply(t, *node, e);
                }
            }
            TraceEvent::RebalanceStarted {
                shard, coordinator, ..
            } => {
                let mut v = None;
                if self.last_round != Some((t.0, *coordinator)) {
                    self.last_round = Some((t.0, *coordinator));
                    v = self.round(t, *coordinator);
                }
                if let Some(c) = self.coords.get_mut(coordinator) {
                    c.handoffs.insert(*shard);
                }
                return v;
            }
            TraceEvent::RebalanceDone {
                shard,
                ok,
                coordinator,
            } => {
                if let Some(c) = self.coords.get_mut(coordinator) {
                    c.handoffs.remove(shard);
                    // §4.3: the coordinator deallocates (and then allocates again) only a shard
                    // still in its state.
                    if *ok && c.state.shards.contains_key(shard) {
                        c.awaiting.insert(*shard);
                    }
                }
                if !ok {
                    self.change(t);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardsim_core::ids::{NodeInc, RegionRef};

    fn region(n: u32) -> RegionRef {
        RegionRef {
            node: NodeId(n),
            inc: NodeInc(1),
        }
    }

    fn up(nodes: u32) -> TraceEvent {
        TraceEvent::MemberView {
            node: NodeId(0),
            members: (0..nodes)
                .map(|i| Member {
                    node: NodeId(i),
                    inc: NodeInc(1),
                    up_number: i,
                    status: MemberStatus::Up,
                    hosting: true,
                    app_version: 0,
                })
                .collect(),
        }
    }

    /// A checker with a coordinator on node 0 and `sizes[i]` shards on node i's region
    /// (shards numbered from 0 across them), the view all Up; returns the next free time.
    fn cluster(sizes: &[u32]) -> (Quiescence, u64) {
        let mut q = Quiescence::default();
        let mut t = 1;
        let started = TraceEvent::CoordinatorStarted {
            node: NodeId(0),
            incarnation: 1,
            generation: 1,
            replayed: 0,
        };
        assert_eq!(q.on_event(Instant(t), &started), None);
        let mut shard = 0;
        for (i, &k) in (0u32..).zip(sizes) {
            write(
                &mut q,
                &mut t,
                CoordinatorEvent::ShardRegionRegistered { region: region(i) },
            );
            for _ in 0..k {
                write(
                    &mut q,
                    &mut t,
                    CoordinatorEvent::ShardHomeAllocated {
                        shard: ShardId(shard),
                        region: region(i),
                    },
                );
                shard += 1;
            }
        }
        t += 1;
        assert_eq!(q.on_event(Instant(t), &up(sizes.len() as u32)), None);
        (q, t + 1)
    }

    fn write(q: &mut Quiescence, t: &mut u64, event: CoordinatorEvent) {
        for e in [
            TraceEvent::Persisted {
                node: NodeId(0),
                incarnation: 1,
                generation: 1,
                event,
            },
            TraceEvent::PersistAcked {
                node: NodeId(0),
                incarnation: 1,
                generation: 1,
            },
        ] {
            *t += 1;
            assert_eq!(q.on_event(Instant(*t), &e), None);
        }
    }

    /// One rebalance round at `t`: `shard` moves from `from` to `to`, completed.
    fn round(q: &mut Quiescence, t: &mut u64, shard: u32, from: u32, to: u32) -> Option<Violation> {
        *t += 1_000_000;
        let v = q.on_event(
            Instant(*t),
            &TraceEvent::RebalanceStarted {
                shard: ShardId(shard),
                from: NodeId(from),
                coordinator: NodeId(0),
            },
        );
        if v.is_some() {
            return v;
        }
        *t += 1;
        q.on_event(
            Instant(*t),
            &TraceEvent::RebalanceDone {
                shard: ShardId(shard),
                ok: true,
                coordinator: NodeId(0),
            },
        );
        write(
            q,
            t,
            CoordinatorEvent::ShardHomeDeallocated {
                shard: ShardId(shard),
            },
        );
        write(
            q,
            t,
            CoordinatorEvent::ShardHomeAllocated {
                shard: ShardId(shard),
                region: region(to),
            },
        );
        None
    }

    #[test]
    fn phi_min_is_the_balanced_spread() {
        assert_eq!(phi_min(12, 5), 2 * 9 + 3 * 4);
        assert_eq!(phi_min(10, 2), 50);
        assert_eq!(phi_min(0, 3), 0);
        assert_eq!(phi_min(3, 0), 0);
    }

    #[test]
    fn converging_rounds_pass() {
        // [6, 0, 0] → [5, 1, 0] → [4, 1, 1] → [3, 2, 1] → [2, 2, 2]: Φ 36, 26, 18, 14, 12.
        let (mut q, mut t) = cluster(&[6, 0, 0]);
        for (shard, to) in [(0, 1), (1, 2), (2, 1), (3, 2)] {
            assert_eq!(round(&mut q, &mut t, shard, 0, to), None);
        }
    }

    #[test]
    fn a_round_that_does_not_lower_phi_breaks_quiescence() {
        // The new algorithm with optimal rounded down: [4, 3, 3] moves a shard from the 4
        // to a 3 and back, for ever.
        let (mut q, mut t) = cluster(&[4, 3, 3]);
        assert_eq!(round(&mut q, &mut t, 0, 0, 1), None); // [3, 4, 3]
        let v = round(&mut q, &mut t, 4, 1, 0).expect("caught at the second round");
        assert_eq!(v.invariant, Invariant::RebalanceQuiescence);
        assert!(v.detail.contains("Σ shards² = 34"), "{}", v.detail);
        assert!(v.detail.contains("round 2"), "{}", v.detail);
    }

    #[test]
    fn a_change_between_rounds_resets_the_rule() {
        let (mut q, mut t) = cluster(&[4, 3, 3]);
        assert_eq!(round(&mut q, &mut t, 0, 0, 1), None);
        t += 1;
        let heal = TraceEvent::Fault {
            fault: crate::fault::Fault::Heal,
        };
        assert_eq!(q.on_event(Instant(t), &heal), None);
        assert_eq!(round(&mut q, &mut t, 4, 1, 0), None);
        // A new shard allocated by traffic is a change too.
        write(
            &mut q,
            &mut t,
            CoordinatorEvent::ShardHomeAllocated {
                shard: ShardId(99),
                region: region(2),
            },
        );
        assert_eq!(round(&mut q, &mut t, 0, 0, 1), None);
    }

    #[test]
    fn rounds_while_not_calm_or_not_settled_are_not_compared() {
        // A member Leaving: the most suitable region is not the least loaded; not compared.
        let (mut q, mut t) = cluster(&[4, 3, 3]);
        let mut view = up(3);
        if let TraceEvent::MemberView { members, .. } = &mut view {
            members[2].status = MemberStatus::Leaving;
        }
        t += 1;
        q.on_event(Instant(t), &view);
        assert_eq!(round(&mut q, &mut t, 0, 0, 1), None);
        assert_eq!(round(&mut q, &mut t, 4, 1, 0), None);
        // A round that starts while the previous one's shard is still moving is neither a
        // baseline nor compared; the next settled one is compared with the last settled one.
        let (mut q, mut t) = cluster(&[6, 0, 0]);
        assert_eq!(round(&mut q, &mut t, 0, 0, 1), None); // [5, 1, 0]: Φ 26
        let start = |s: u32| TraceEvent::RebalanceStarted {
            shard: ShardId(s),
            from: NodeId(0),
            coordinator: NodeId(0),
        };
        t += 1_000_000;
        assert_eq!(q.on_event(Instant(t), &start(1)), None); // settled: 26 < 36
        t += 1_000_000;
        assert_eq!(q.on_event(Instant(t), &start(2)), None); // 1 in progress
        assert_eq!(q.baseline.map(|b| (b.rounds, b.phi)), Some((2, 26)));
        for (s, to) in [(1, 1), (2, 2)] {
            t += 1;
            let done = TraceEvent::RebalanceDone {
                shard: ShardId(s),
                ok: true,
                coordinator: NodeId(0),
            };
            assert_eq!(q.on_event(Instant(t), &done), None);
            write(
                &mut q,
                &mut t,
                CoordinatorEvent::ShardHomeDeallocated { shard: ShardId(s) },
            );
            write(
                &mut q,
                &mut t,
                CoordinatorEvent::ShardHomeAllocated {
                    shard: ShardId(s),
                    region: region(to),
                },
            );
        }
        // [3, 2, 1]: Φ 14 < 26.
        assert_eq!(round(&mut q, &mut t, 3, 0, 2), None);
        assert_eq!(q.baseline.map(|b| (b.rounds, b.phi)), Some((3, 14)));
    }

    #[test]
    fn one_tick_is_one_round() {
        // Two shards of one tick: the second is not a round of its own.
        let (mut q, mut t) = cluster(&[6, 0, 0]);
        t += 1;
        for s in [0, 1] {
            let e = TraceEvent::RebalanceStarted {
                shard: ShardId(s),
                from: NodeId(0),
                coordinator: NodeId(0),
            };
            assert_eq!(q.on_event(Instant(t), &e), None);
        }
        assert_eq!(q.baseline.map(|b| b.rounds), Some(1));
    }
}
