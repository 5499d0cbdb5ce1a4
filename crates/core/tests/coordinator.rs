//! Unit tests of the sans-IO persistent ShardCoordinator (docs/akka-reference.md §2, §3.2, §3.4, §4, §7).
//!
//! Every test drives one `Coordinator` through `handle` and asserts on the exact outputs appended.

mod common;
use common::coordinator_fixtures::*;
use common::*;

use shardsim_core::ids::{NodeId, NodeInc, RegionRef, ShardId};
use shardsim_core::protocol::allocation::LeastShardAllocationStrategy;
use shardsim_core::protocol::coordinator::{Coordinator, HandOff};
use shardsim_core::protocol::settings::{Mutation, ProtocolOptions, Settings};
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, Input, Member, MemberStatus, Msg, Observation, Outbox, Timer,
};
use shardsim_core::time::{Duration, Instant};
use std::collections::BTreeMap;

// ---- helpers ----

/// The coordinator runs on node 0; A, B are hosting regions on nodes 1, 2; P a proxy on node 3.
const C: u32 = 0;
const A: u32 = 1;
const B: u32 = 2;
const P: u32 = 3;

fn me() -> Addr {
    Addr::coordinator(reg(C))
}

fn host(to: u32, s: u32) -> Vec<O> {
    vec![
        send(to, Msg::HostShard { shard: shard(s) }),
        O::Set(Timer::ResendShardHost(shard(s)), ms(10_000)),
    ]
}

fn registered(n: u32) -> CoordinatorEvent {
    CoordinatorEvent::ShardRegionRegistered { region: reg(n) }
}

fn allocated(s: u32, n: u32) -> CoordinatorEvent {
    CoordinatorEvent::ShardHomeAllocated {
        shard: shard(s),
        region: reg(n),
    }
}

fn deallocated(s: u32) -> CoordinatorEvent {
    CoordinatorEvent::ShardHomeDeallocated { shard: shard(s) }
}

fn member(n: u32, up_number: u32, status: MemberStatus, hosting: bool) -> Member {
    Member {
        node: NodeId(n),
        inc: NodeInc(1),
        up_number,
        status,
        hosting,
        app_version: 0,
    }
}

/// C, A, B hosting and Up (C oldest), P a proxy-only Up member.
fn all_up() -> Vec<Member> {
    vec![
        member(C, 0, MemberStatus::Up, true),
        member(A, 1, MemberStatus::Up, true),
        member(B, 2, MemberStatus::Up, true),
        member(P, 3, MemberStatus::Up, false),
    ]
}

fn sends(out: &[O]) -> Vec<(Addr, Msg)> {
    out.iter()
        .filter_map(|o| match o {
            O::Send(a, m) => Some((*a, *m)),
            _ => None,
        })
        .collect()
}

fn allocs(pairs: &[(u32, u32)]) -> BTreeMap<ShardId, RegionRef> {
    pairs.iter().map(|&(s, r)| (shard(s), reg(r))).collect()
}

struct T {
    c: Coordinator,
    now: Instant,
}

impl T {
    fn recover(
        settings: Settings,
        options: ProtocolOptions,
        journal: &[CoordinatorEvent],
    ) -> (T, Vec<O>) {
        let mut out = Outbox::default();
        let strategy = Box::new(LeastShardAllocationStrategy::new(
            settings.least_shard_allocation_strategy.clone(),
        ));
        let c = Coordinator::recover(me(), settings, options, strategy, journal, &mut out)
            .expect("recovery succeeds");
        (
            T {
                c,
                now: Instant::ZERO,
            },
            out.0.iter().map(norm).filter(not_persist_timer).collect(),
        )
    }

    /// A fresh coordinator (empty journal) with every member Up.
    fn fresh() -> T {
        T::fresh_with(Settings::default(), ProtocolOptions::default())
    }

    fn fresh_with(settings: Settings, options: ProtocolOptions) -> T {
        let (mut t, _) = T::recover(settings, options, &[]);
        t.h(Input::MembersChanged(all_up()));
        t
    }

    /// A coordinator recovered from `journal` (which registers A and B), initialised, with every
    /// member Up and A and B re-registered (immediate acks).
    fn active(journal: &[CoordinatorEvent]) -> T {
        T::active_with(Settings::default(), ProtocolOptions::default(), journal)
    }

    fn active_with(
        settings: Settings,
        options: ProtocolOptions,
        journal: &[CoordinatorEvent],
    ) -> T {
        let (mut t, _) = T::recover(settings, options, journal);
        t.h(Input::Timeout(Timer::StateInitialized));
        t.h(Input::MembersChanged(all_up()));
        assert_eq!(t.register(A), vec![send(A, Msg::RegisterAck)]);
        assert_eq!(t.register(B), vec![send(B, Msg::RegisterAck)]);
        t
    }

    fn h(&mut self, input: Input) -> Vec<O> {
        let mut out = Outbox::default();
        self.c.handle(self.now, input, &mut out);
        out.0.iter().map(norm).filter(not_persist_timer).collect()
    }

    fn from(&mut self, n: u32, msg: Msg) -> Vec<O> {
        self.h(Input::Deliver {
            from: raddr(n),
            msg,
        })
    }

    fn register(&mut self, n: u32) -> Vec<O> {
        self.from(n, Msg::Register { region: reg(n) })
    }

    fn persisted(&mut self) -> Vec<O> {
        self.h(Input::Persisted)
    }

    fn get_home(&mut self, n: u32, s: u32) -> Vec<O> {
        self.from(n, Msg::GetShardHome { shard: shard(s) })
    }

    fn ack(&mut self, n: u32, s: u32) -> Vec<O> {
        self.from(
            n,
            Msg::BeginHandOffAck {
                shard: shard(s),
                region: reg(n),
            },
        )
    }
}

/// Journal with A holding shards 1..=4 and B none: imbalanced (old algorithm, threshold 1,
/// picks the lowest shard id: shard 1).
fn imbalanced() -> Vec<CoordinatorEvent> {
    vec![
        registered(A),
        registered(B),
        allocated(1, A),
        allocated(2, A),
        allocated(3, A),
        allocated(4, A),
    ]
}

/// An active coordinator that has just started the hand-off of shard 1 from A.
fn rebalancing(options: ProtocolOptions) -> T {
    let mut t = T::active_with(Settings::default(), options, &imbalanced());
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::RebalanceStarted {
                shard: shard(1),
                from: reg(A),
            }),
            send(A, Msg::BeginHandOff { shard: shard(1) }),
            send(B, Msg::BeginHandOff { shard: shard(1) }),
            O::Set(Timer::HandOffTimeout(shard(1)), ms(60_000)),
            O::Set(Timer::RebalanceTick, ms(10_000)),
        ]
    );
    t
}

// ---- registration (§4.1) ----

#[test]
fn fresh_coordinator_is_active_and_arms_the_rebalance_tick() {
    let (_, out) = T::recover(Settings::default(), ProtocolOptions::default(), &[]);
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::CoordinatorRecovered { events: 0 }),
            O::Set(Timer::RebalanceTick, ms(10_000)),
        ]
    );
}

#[test]
fn register_from_an_up_member_persists_then_acks() {
    let mut t = T::fresh();
    assert_eq!(t.register(A), vec![O::Persist(registered(A))]);
    assert_eq!(t.persisted(), vec![send(A, Msg::RegisterAck)]);
    assert!(t.c.state().regions.contains_key(&reg(A)));
}

#[test]
fn register_from_a_non_member_is_ignored() {
    let mut t = T::fresh();
    assert_eq!(t.register(9), vec![]);
    // Joining is not Up either.
    t.h(Input::MembersChanged(vec![member(
        A,
        1,
        MemberStatus::Joining,
        true,
    )]));
    assert_eq!(t.register(A), vec![]);
    assert!(t.c.state().regions.is_empty());
}

#[test]
fn register_from_the_local_node_needs_no_member_view() {
    // isMember: the local address counts even before any membership view.
    let (mut t, _) = T::recover(Settings::default(), ProtocolOptions::default(), &[]);
    assert_eq!(t.register(C), vec![O::Persist(registered(C))]);
}

#[test]
fn register_from_a_known_region_acks_immediately_without_persist() {
    let mut t = T::fresh();
    t.register(A);
    t.persisted();
    assert_eq!(t.register(A), vec![send(A, Msg::RegisterAck)]);
}

#[test]
fn register_proxy_persists_then_acks_and_known_proxy_acks_immediately() {
    let mut t = T::fresh();
    let msg = Msg::RegisterProxy { proxy: reg(P) };
    assert_eq!(
        t.from(P, msg),
        vec![O::Persist(CoordinatorEvent::ShardRegionProxyRegistered {
            proxy: reg(P)
        })]
    );
    assert_eq!(t.persisted(), vec![send(P, Msg::RegisterAck)]);
    assert_eq!(t.from(P, msg), vec![send(P, Msg::RegisterAck)]);
    assert!(t.c.state().proxies.contains(&reg(P)));
    assert!(t.c.state().regions.is_empty());
}

// ---- GetShardHome (§4.2) ----

#[test]
fn get_shard_home_allocates_to_least_loaded_then_host_shard_first_then_shard_home() {
    let mut t = T::active(&[registered(A), registered(B), allocated(1, A)]);
    // B has fewer shards: B is chosen even though A asks.
    assert_eq!(t.get_home(A, 7), vec![O::Persist(allocated(7, B))]);
    let mut expected = vec![O::Obs(Observation::ShardAllocated {
        shard: shard(7),
        region: reg(B),
    })];
    expected.extend(host(B, 7));
    expected.push(home(A, 7, B));
    assert_eq!(t.persisted(), expected);
    assert_eq!(t.c.allocations(), &allocs(&[(1, A), (7, B)]));
}

#[test]
fn get_shard_home_allocates_to_the_oldest_when_equally_loaded() {
    let mut t = T::fresh();
    t.register(B);
    t.persisted();
    t.register(A);
    t.persisted();
    assert_eq!(t.get_home(B, 3), vec![O::Persist(allocated(3, A))]);
}

#[test]
fn get_shard_home_for_an_allocated_shard_answers_immediately() {
    let mut t = T::active(&[registered(A), registered(B), allocated(1, A)]);
    assert_eq!(t.get_home(B, 1), vec![home(B, 1, A)]);
    assert_eq!(
        t.from(P, Msg::GetShardHome { shard: shard(1) }),
        vec![home(P, 1, A)]
    );
}

#[test]
fn proxy_is_never_allocated_a_shard() {
    let mut t = T::fresh();
    t.from(P, Msg::RegisterProxy { proxy: reg(P) });
    t.persisted();
    t.register(A);
    t.persisted();
    assert_eq!(
        t.from(P, Msg::GetShardHome { shard: shard(2) }),
        vec![O::Persist(allocated(2, A))]
    );
    assert_eq!(
        sends(&t.persisted()).last(),
        Some(&(
            raddr(P),
            Msg::ShardHome {
                shard: shard(2),
                region: reg(A),
            }
        ))
    );
}

#[test]
fn get_shard_home_without_registered_regions_is_ignored() {
    let mut t = T::fresh();
    assert_eq!(t.get_home(A, 1), vec![]);
}

#[test]
fn inputs_while_persisting_are_stashed_and_processed_in_order_after_persisted() {
    let mut t = T::fresh();
    assert_eq!(t.register(A), vec![O::Persist(registered(A))]);
    // All stashed: nothing happens until Persisted.
    assert_eq!(t.get_home(A, 5), vec![]);
    assert_eq!(t.register(B), vec![]);
    assert_eq!(t.get_home(B, 5), vec![]);
    assert_eq!(t.h(Input::Timeout(Timer::RebalanceTick)), vec![]);
    // RegisterAck, then the stashed GetShardHome(5) starts the next persist; unstash stops there.
    assert_eq!(
        t.persisted(),
        vec![send(A, Msg::RegisterAck), O::Persist(allocated(5, A))]
    );
    // Allocation done; then Register B persists.
    let mut expected = vec![O::Obs(Observation::ShardAllocated {
        shard: shard(5),
        region: reg(A),
    })];
    expected.extend(host(A, 5));
    expected.push(home(A, 5, A));
    expected.push(O::Persist(registered(B)));
    assert_eq!(t.persisted(), expected);
    // RegisterAck B, then GetShardHome(5) from B (already allocated), then the tick.
    assert_eq!(
        t.persisted(),
        vec![
            send(B, Msg::RegisterAck),
            home(B, 5, A),
            O::Set(Timer::RebalanceTick, ms(10_000)),
        ]
    );
}

#[test]
fn persisted_without_a_persist_in_flight_is_a_no_op() {
    let mut t = T::fresh();
    assert_eq!(t.persisted(), vec![]);
}

#[test]
fn shard_started_cancels_resend_shard_host() {
    let mut t = T::active(&[registered(A), registered(B)]);
    t.get_home(A, 1);
    t.persisted();
    assert_eq!(
        t.from(A, Msg::ShardStarted { shard: shard(1) }),
        vec![O::Cancel(Timer::ResendShardHost(shard(1)))]
    );
}

#[test]
fn resend_shard_host_timeout_resends_host_shard() {
    let mut t = T::active(&[registered(A), registered(B), allocated(1, B)]);
    assert_eq!(
        t.h(Input::Timeout(Timer::ResendShardHost(shard(1)))),
        host(B, 1)
    );
    // Not allocated: nothing.
    assert_eq!(
        t.h(Input::Timeout(Timer::ResendShardHost(shard(9)))),
        vec![]
    );
}

#[test]
fn min_nr_of_members_ignores_get_shard_home_until_enough_regions_registered() {
    let settings = Settings {
        min_nr_of_members: 2,
        ..Settings::default()
    };
    let mut t = T::fresh_with(settings, ProtocolOptions::default());
    t.register(A);
    t.persisted();
    assert_eq!(t.get_home(A, 1), vec![]);
    // A proxy does not count.
    t.from(P, Msg::RegisterProxy { proxy: reg(P) });
    t.persisted();
    assert_eq!(t.get_home(A, 1), vec![]);
    t.register(B);
    t.persisted();
    assert_eq!(t.get_home(A, 1), vec![O::Persist(allocated(1, A))]);
}

// ---- recovery (§3.2, §3.4) ----

#[test]
fn recovery_replays_the_journal_and_waits_for_state_initialized() {
    let journal = [
        registered(A),
        registered(B),
        allocated(1, A),
        allocated(2, B),
        allocated(3, A),
        deallocated(3),
        CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(P) },
    ];
    let (mut t, out) = T::recover(Settings::default(), ProtocolOptions::default(), &journal);
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::CoordinatorRecovered { events: 7 }),
            O::Set(Timer::StateInitialized, ms(500)),
            O::Set(Timer::RebalanceTick, ms(10_000)),
        ]
    );
    assert_eq!(t.c.allocations(), &allocs(&[(1, A), (2, B)]));
    assert_eq!(t.c.state().regions[&reg(A)], vec![shard(1)]);
    assert!(t.c.state().proxies.contains(&reg(P)));
    t.h(Input::MembersChanged(all_up()));
    // waitingForStateInitialized: Register ignored, GetShardHome ignored, no rebalance.
    assert_eq!(t.register(A), vec![]);
    assert_eq!(t.get_home(A, 1), vec![]);
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
    // StateInitialized: HostShard (with resend timer) for every allocated shard.
    let mut expected = host(A, 1);
    expected.extend(host(B, 2));
    assert_eq!(t.h(Input::Timeout(Timer::StateInitialized)), expected);
    // Regions must re-register before GetShardHome is answered.
    assert_eq!(t.get_home(A, 1), vec![]);
    assert_eq!(t.register(A), vec![send(A, Msg::RegisterAck)]);
    assert_eq!(t.get_home(A, 1), vec![home(A, 1, A)]);
}

#[test]
fn no_rebalance_before_state_initialized_even_when_imbalanced() {
    // PersistentShardCoordinator `waitingForStateInitialized` leaves RebalanceTick unhandled:
    // A holds four shards and B none, yet nothing moves until StateInitialized.
    let (mut t, _) = T::recover(
        Settings::default(),
        ProtocolOptions::default(),
        &imbalanced(),
    );
    t.h(Input::MembersChanged(all_up()));
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
}

/// SC:1294-1322: `watchStateActors` whenever the recovered state names a region *or* a proxy;
/// only a state with neither is active at once.
#[test]
fn recovery_waits_for_state_initialized_with_regions_or_proxies_alone() {
    let proxy_only = [CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(P) }];
    for journal in [
        &[registered(A), allocated(1, A)][..],
        &proxy_only[..],
        &[][..],
    ] {
        let (_, out) = T::recover(Settings::default(), ProtocolOptions::default(), journal);
        let waits = out.contains(&O::Set(Timer::StateInitialized, ms(500)));
        assert_eq!(waits, !journal.is_empty(), "{journal:?}: {out:?}");
    }
}

#[test]
fn recovery_of_a_corrupt_journal_fails() {
    let strategy = || Box::new(LeastShardAllocationStrategy::new(Default::default()));
    let bad: [&[CoordinatorEvent]; 5] = [
        // ShardHomeAllocated twice for one shard (B5).
        &[
            registered(A),
            registered(B),
            allocated(1, A),
            allocated(1, B),
        ],
        // ShardHomeDeallocated for an unallocated shard (B6).
        &[registered(A), deallocated(1)],
        // Allocation to an unregistered region.
        &[registered(A), allocated(1, B)],
        // Region registered twice.
        &[registered(A), registered(A)],
        &[
            CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(P) },
            CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(P) },
        ],
    ];
    for journal in bad {
        let mut out = Outbox::default();
        let r = Coordinator::recover(
            me(),
            Settings::default(),
            ProtocolOptions::default(),
            strategy(),
            journal,
            &mut out,
        );
        assert!(r.is_err(), "{journal:?}");
    }
}

#[test]
fn recovery_tolerates_termination_of_unknown_regions_and_proxies() {
    let journal = [
        CoordinatorEvent::ShardRegionTerminated { region: reg(A) },
        CoordinatorEvent::ShardRegionProxyTerminated { proxy: reg(P) },
        registered(B),
        allocated(1, B),
        CoordinatorEvent::ShardRegionTerminated { region: reg(B) },
    ];
    let (t, _) = T::recover(Settings::default(), ProtocolOptions::default(), &journal);
    assert!(t.c.allocations().is_empty());
    assert!(t.c.state().regions.is_empty());
}

// ---- rebalance / hand-off (§4.3, §7) ----

#[test]
fn rebalance_tick_with_imbalance_sends_begin_hand_off_to_every_region_and_proxy() {
    let mut journal = imbalanced();
    journal.push(CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(P) });
    let mut t = T::active(&journal);
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::RebalanceStarted {
                shard: shard(1),
                from: reg(A),
            }),
            send(A, Msg::BeginHandOff { shard: shard(1) }),
            send(B, Msg::BeginHandOff { shard: shard(1) }),
            send(P, Msg::BeginHandOff { shard: shard(1) }),
            O::Set(Timer::HandOffTimeout(shard(1)), ms(60_000)),
            O::Set(Timer::RebalanceTick, ms(10_000)),
        ]
    );
    let pending = [reg(A), reg(B), reg(P)].into_iter().collect();
    assert_eq!(
        t.c.handoffs().get(&shard(1)),
        Some(&HandOff::AwaitingAcks {
            from: reg(A),
            pending,
        })
    );
}

#[test]
fn rebalance_tick_when_balanced_only_rearms() {
    let mut t = T::active(&[
        registered(A),
        registered(B),
        allocated(1, A),
        allocated(2, B),
        allocated(3, A),
    ]);
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
}

#[test]
fn rebalance_tick_is_skipped_while_a_member_is_joining() {
    let mut t = T::active(&imbalanced());
    let mut members = all_up();
    members.push(member(9, 9, MemberStatus::Joining, true));
    t.h(Input::MembersChanged(members));
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
}

/// `isAGoodTimeToRebalance` (§12 B38): an unreachable member (a proxy's too: its ack is
/// needed) or regions on two app versions skip the tick; the pre-2.6.10 coordinator
/// (`rebalance-during-rolling-update`) rebalances anyway.
#[test]
fn rebalance_tick_is_skipped_while_a_member_is_unreachable_or_versions_differ() {
    let only_rearms = vec![O::Set(Timer::RebalanceTick, ms(10_000))];
    let mut t = T::active(&imbalanced());
    t.h(Input::Unreachable(vec![reg(P)]));
    assert_eq!(t.h(Input::Timeout(Timer::RebalanceTick)), only_rearms);
    t.h(Input::Unreachable(vec![]));
    let mut members = all_up();
    members[1].app_version = 2; // A, a region, runs the new version
    t.h(Input::MembersChanged(members.clone()));
    assert_eq!(t.h(Input::Timeout(Timer::RebalanceTick)), only_rearms);
    // A proxy's version does not count.
    members[1].app_version = 0;
    members[3].app_version = 2;
    t.h(Input::MembersChanged(members));
    assert_ne!(t.h(Input::Timeout(Timer::RebalanceTick)), only_rearms);
    // Akka before 2.6.10.
    let options = ProtocolOptions {
        rebalance_during_rolling_update: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::active_with(Settings::default(), options, &imbalanced());
    t.h(Input::Unreachable(vec![reg(B)]));
    assert_ne!(t.h(Input::Timeout(Timer::RebalanceTick)), only_rearms);
}

#[test]
fn second_rebalance_tick_does_not_restart_a_hand_off_in_progress() {
    let mut t = rebalancing(ProtocolOptions::default());
    // Old algorithm: shard 1 in progress, next lowest free shard of A is 2 (diff 3 - 0 > 1).
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert!(!sends(&out).contains(&(raddr(A), Msg::BeginHandOff { shard: shard(1) })));
    assert!(sends(&out).contains(&(raddr(A), Msg::BeginHandOff { shard: shard(2) })));
}

#[test]
fn get_shard_home_for_a_shard_being_rebalanced_is_deferred() {
    let mut t = rebalancing(ProtocolOptions::default());
    assert_eq!(t.get_home(B, 1), vec![]);
    assert_eq!(t.get_home(A, 1), vec![]);
    // Other shards are answered.
    assert_eq!(t.get_home(B, 2), vec![home(B, 2, A)]);
}

#[test]
fn all_begin_hand_off_acks_send_hand_off_to_the_owner() {
    let mut t = rebalancing(ProtocolOptions::default());
    assert_eq!(t.ack(B, 1), vec![]);
    assert_eq!(t.ack(A, 1), vec![send(A, Msg::HandOff { shard: shard(1) })]);
    assert_eq!(
        t.c.handoffs().get(&shard(1)),
        Some(&HandOff::AwaitingStop { from: reg(A) })
    );
}

#[test]
fn full_hand_off_deallocates_then_reallocates_and_answers_the_deferred_requester() {
    let mut t = rebalancing(ProtocolOptions::default());
    assert_eq!(t.get_home(B, 1), vec![]);
    t.ack(A, 1);
    t.ack(B, 1);
    assert_eq!(
        t.from(A, Msg::ShardStopped { shard: shard(1) }),
        vec![
            O::Cancel(Timer::HandOffTimeout(shard(1))),
            O::Obs(Observation::RebalanceDone {
                shard: shard(1),
                ok: true,
            }),
            O::Persist(deallocated(1)),
        ]
    );
    // Deallocated: the deferred GetShardHome from B is re-sent first and re-allocates (B now
    // has the fewest shards).
    assert_eq!(t.persisted(), vec![O::Persist(allocated(1, B))]);
    assert_eq!(t.c.allocations().get(&shard(1)), None);
    let mut expected = vec![O::Obs(Observation::ShardAllocated {
        shard: shard(1),
        region: reg(B),
    })];
    expected.extend(host(B, 1));
    expected.push(home(B, 1, B));
    // The coordinator's own eager GetShardHome then finds it allocated: no further output.
    assert_eq!(t.persisted(), expected);
    assert_eq!(t.c.allocations().get(&shard(1)), Some(&reg(B)));
    assert!(t.c.handoffs().is_empty());
    // No longer rebalancing: answered at once.
    assert_eq!(t.get_home(A, 1), vec![home(A, 1, B)]);
}

#[test]
fn hand_off_without_deferred_requests_reallocates_eagerly() {
    let mut t = rebalancing(ProtocolOptions::default());
    t.ack(A, 1);
    t.ack(B, 1);
    t.from(A, Msg::ShardStopped { shard: shard(1) });
    // Self-sent GetShardHome (no requester): allocation, HostShard, no ShardHome reply.
    assert_eq!(t.persisted(), vec![O::Persist(allocated(1, B))]);
    let mut expected = vec![O::Obs(Observation::ShardAllocated {
        shard: shard(1),
        region: reg(B),
    })];
    expected.extend(host(B, 1));
    assert_eq!(t.persisted(), expected);
}

#[test]
fn handoff_timeout_keeps_the_allocation_and_answers_deferred_requesters_with_the_old_owner() {
    let mut t = rebalancing(ProtocolOptions::default());
    t.get_home(B, 1);
    t.ack(B, 1); // A never acks
    assert_eq!(
        t.h(Input::Timeout(Timer::HandOffTimeout(shard(1)))),
        vec![
            O::Cancel(Timer::HandOffTimeout(shard(1))),
            O::Obs(Observation::RebalanceDone {
                shard: shard(1),
                ok: false,
            }),
            home(B, 1, A),
        ]
    );
    assert_eq!(t.c.allocations().get(&shard(1)), Some(&reg(A)));
    assert!(t.c.handoffs().is_empty());
    assert_eq!(t.get_home(B, 1), vec![home(B, 1, A)]);
}

#[test]
fn handoff_timeout_also_covers_the_stopping_phase() {
    let mut t = rebalancing(ProtocolOptions::default());
    t.ack(A, 1);
    t.ack(B, 1);
    let out = t.h(Input::Timeout(Timer::HandOffTimeout(shard(1))));
    assert!(out.contains(&O::Obs(Observation::RebalanceDone {
        shard: shard(1),
        ok: false,
    })));
    assert!(!out.iter().any(|o| matches!(o, O::Persist(_))));
    // A late ShardStopped is now stale.
    assert_eq!(t.from(A, Msg::ShardStopped { shard: shard(1) }), vec![]);
    assert_eq!(t.c.allocations().get(&shard(1)), Some(&reg(A)));
}

#[test]
fn handoff_timeout_without_hand_off_is_ignored() {
    let mut t = T::active(&imbalanced());
    assert_eq!(t.h(Input::Timeout(Timer::HandOffTimeout(shard(1)))), vec![]);
}

#[test]
fn stale_shard_stopped_is_ignored() {
    // No hand-off at all.
    let mut t = T::active(&imbalanced());
    assert_eq!(t.from(A, Msg::ShardStopped { shard: shard(1) }), vec![]);
    // While still waiting for acks.
    let mut t = rebalancing(ProtocolOptions::default());
    assert_eq!(t.from(A, Msg::ShardStopped { shard: shard(1) }), vec![]);
    assert!(matches!(
        t.c.handoffs().get(&shard(1)),
        Some(HandOff::AwaitingAcks { .. })
    ));
    // From a region that is not the owner.
    t.ack(A, 1);
    t.ack(B, 1);
    assert_eq!(t.from(B, Msg::ShardStopped { shard: shard(1) }), vec![]);
    assert_eq!(
        t.c.handoffs().get(&shard(1)),
        Some(&HandOff::AwaitingStop { from: reg(A) })
    );
}

#[test]
fn stale_begin_hand_off_ack_is_ignored() {
    let mut t = T::active(&imbalanced());
    assert_eq!(t.ack(A, 1), vec![]);
    let mut t = rebalancing(ProtocolOptions::default());
    t.ack(A, 1);
    t.ack(B, 1);
    // A duplicate ack after HandOff went out: no second HandOff.
    assert_eq!(t.ack(B, 1), vec![]);
    assert_eq!(t.ack(A, 1), vec![]);
}

#[test]
fn mutation_coordinator_skips_shard_stopped_deallocates_right_after_the_last_ack() {
    let opts = ProtocolOptions {
        mutation: Mutation::CoordinatorSkipsShardStopped,
        ..ProtocolOptions::default()
    };
    let mut t = rebalancing(opts);
    t.ack(B, 1);
    assert_eq!(
        t.ack(A, 1),
        vec![
            send(A, Msg::HandOff { shard: shard(1) }),
            O::Cancel(Timer::HandOffTimeout(shard(1))),
            O::Obs(Observation::RebalanceDone {
                shard: shard(1),
                ok: true,
            }),
            O::Persist(deallocated(1)),
        ]
    );
}

#[test]
fn region_bound_messages_reaching_the_coordinator_are_ignored() {
    let mut t = T::active(&imbalanced());
    for m in [
        Msg::RegisterAck,
        Msg::HostShard { shard: shard(1) },
        Msg::HandOff { shard: shard(1) },
        Msg::BeginHandOff { shard: shard(1) },
        Msg::ShardHome {
            shard: shard(1),
            region: reg(B),
        },
    ] {
        assert_eq!(t.from(A, m), vec![], "{m:?}");
    }
    assert_eq!(t.c.allocations().get(&shard(1)), Some(&reg(A)));
}

#[test]
fn duplicate_register_during_its_persist_is_acked_without_a_second_persist() {
    let mut t = T::fresh();
    assert_eq!(t.register(A), vec![O::Persist(registered(A))]);
    assert_eq!(t.register(A), vec![]);
    assert_eq!(
        t.persisted(),
        vec![send(A, Msg::RegisterAck), send(A, Msg::RegisterAck)]
    );
}

#[test]
fn duplicate_get_shard_home_during_its_allocation_is_answered_from_the_new_state() {
    let mut t = T::active(&[registered(A), registered(B)]);
    assert_eq!(t.get_home(A, 4), vec![O::Persist(allocated(4, A))]);
    assert_eq!(t.get_home(B, 4), vec![]);
    let out = t.persisted();
    assert_eq!(out.last(), Some(&home(B, 4, A)));
    assert_eq!(
        out.iter().filter(|o| matches!(o, O::Persist(_))).count(),
        0,
        "{out:?}"
    );
}

#[test]
fn persist_sets_a_call_timeout_and_a_timed_out_write_stops_the_coordinator() {
    let mut out = Outbox::default();
    let me = Addr {
        node: NodeId(0),
        inc: NodeInc(1),
        role: shardsim_core::protocol::Role::Coordinator,
    };
    let mut c = Coordinator::recover(
        me,
        Settings::default(),
        ProtocolOptions::default(),
        Box::new(LeastShardAllocationStrategy::new(Default::default())),
        &[],
        &mut out,
    )
    .unwrap();
    let region = RegionRef {
        node: NodeId(0),
        inc: NodeInc(1),
    };
    c.handle(
        Instant(0),
        Input::MembersChanged(vec![Member {
            node: NodeId(0),
            inc: NodeInc(1),
            up_number: 1,
            status: MemberStatus::Up,
            hosting: true,
            app_version: 0,
        }]),
        &mut out,
    );
    out.0.clear();
    c.handle(
        Instant(0),
        Input::Deliver {
            from: Addr::region(region),
            msg: Msg::Register { region },
        },
        &mut out,
    );
    let got: Vec<O> = out.0.iter().map(norm).collect();
    assert!(
        got.contains(&O::Set(
            Timer::PersistTimeout,
            Duration::from_millis(10_000)
        )),
        "{got:?}"
    );
    out.0.clear();
    c.handle(
        Instant(10_000_000),
        Input::Timeout(Timer::PersistTimeout),
        &mut out,
    );
    let got: Vec<O> = out.0.iter().map(norm).collect();
    assert_eq!(
        got,
        vec![O::Stop("journal write timed out (onPersistFailure)")]
    );
    out.0.clear();
    // A stopped coordinator ignores everything.
    c.handle(Instant(10_000_001), Input::Persisted, &mut out);
    assert!(out.0.is_empty());
}

// ---- graceful shutdown of a region (§4.4, §5.5) ----

/// A holds shards 1 and 2, B holds 3, 4 and 5: A is the least loaded region.
fn a_least_loaded() -> Vec<CoordinatorEvent> {
    vec![
        registered(A),
        registered(B),
        allocated(1, A),
        allocated(2, A),
        allocated(3, B),
        allocated(4, B),
        allocated(5, B),
    ]
}

#[test]
fn graceful_shutdown_req_hands_off_every_shard_of_the_region_once() {
    let mut t = T::active(&a_least_loaded());
    let out = t.from(A, Msg::GracefulShutdownReq { region: reg(A) });
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::RebalanceStarted {
                shard: shard(1),
                from: reg(A),
            }),
            send(A, Msg::BeginHandOff { shard: shard(1) }),
            send(B, Msg::BeginHandOff { shard: shard(1) }),
            O::Set(Timer::HandOffTimeout(shard(1)), ms(60_000)),
            O::Obs(Observation::RebalanceStarted {
                shard: shard(2),
                from: reg(A),
            }),
            send(A, Msg::BeginHandOff { shard: shard(2) }),
            send(B, Msg::BeginHandOff { shard: shard(2) }),
            O::Set(Timer::HandOffTimeout(shard(2)), ms(60_000)),
        ]
    );
    // The region repeats its request on every Retry tick: nothing new starts.
    assert_eq!(
        t.from(A, Msg::GracefulShutdownReq { region: reg(A) }),
        vec![]
    );
}

#[test]
fn no_shard_is_allocated_to_a_region_shutting_down() {
    let mut t = T::active(&a_least_loaded());
    t.from(A, Msg::GracefulShutdownReq { region: reg(A) });
    // A is the least loaded, but it is shutting down: shard 6 goes to B.
    let out = t.get_home(A, 6);
    assert_eq!(out, vec![O::Persist(allocated(6, B))]);
}

#[test]
fn graceful_shutdown_req_of_an_unknown_region_is_ignored() {
    let mut t = T::active(&a_least_loaded());
    assert_eq!(
        t.from(P, Msg::GracefulShutdownReq { region: reg(P) }),
        vec![]
    );
    // A proxy-like unknown region is not excluded from anything: A still gets shard 6.
    assert_eq!(t.get_home(A, 6), vec![O::Persist(allocated(6, A))]);
}

/// Active from `journal` with a down-removal-margin of 5 s; then the view `members`, where A's
/// member is no longer alive, delays A's termination by the margin.
fn a_terminating_within_the_margin(journal: &[CoordinatorEvent], members: Vec<Member>) -> T {
    let settings = Settings {
        down_removal_margin_ms: 5_000,
        ..Settings::default()
    };
    let mut t = T::active_with(settings, ProtocolOptions::default(), journal);
    assert_eq!(
        t.h(Input::MembersChanged(members)),
        vec![O::Set(
            Timer::DelayedShardRegionTerminated(reg(A)),
            ms(5_000)
        )]
    );
    t
}

#[test]
fn with_down_removal_margin_a_removed_regions_termination_waits_for_the_margin() {
    // docs/akka-reference.md §3.5 (akka#18314): with `down-removal-margin`, the Terminated of a
    // region that was alive and whose node was removed is delayed by the margin
    // (`DelayedShardRegionTerminated`); the termination is persisted only when it fires.
    let mut members = all_up();
    members[1].status = MemberStatus::Removed;
    let mut t = a_terminating_within_the_margin(&a_least_loaded(), members);
    // In the window a GetShardHome for one of A's shards is ignored (no reply).
    assert_eq!(t.get_home(B, 1), vec![]);
    assert_eq!(
        t.h(Input::Timeout(Timer::DelayedShardRegionTerminated(reg(A)))),
        vec![O::Persist(CoordinatorEvent::ShardRegionTerminated {
            region: reg(A)
        })]
    );
}

#[test]
fn a_region_whose_member_left_the_view_is_invisible_to_the_rebalance() {
    // `regionEntriesFor` (§10.1): a region whose member is unknown in the current view is
    // left out. A's node is gone from the view while its termination waits out
    // down-removal-margin: its four shards are no imbalance for B to take.
    let members: Vec<Member> = all_up()
        .into_iter()
        .filter(|m| m.node != NodeId(A))
        .collect();
    let mut t = a_terminating_within_the_margin(&imbalanced(), members);
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
}

#[test]
fn region_stopped_is_the_regions_termination_at_once() {
    let mut t = T::active(&a_least_loaded());
    let out = t.from(A, Msg::RegionStopped { region: reg(A) });
    assert_eq!(
        out,
        vec![O::Persist(CoordinatorEvent::ShardRegionTerminated {
            region: reg(A)
        })]
    );
}

#[test]
fn a_failed_graceful_hand_off_makes_the_region_eligible_again() {
    // SC:1066-1070: a hand-off of a shutting-down region's shard timed out: the region
    // counts as alive again and retries its shutdown later.
    let mut t = T::active(&a_least_loaded());
    t.from(A, Msg::GracefulShutdownReq { region: reg(A) });
    t.h(Input::Timeout(Timer::HandOffTimeout(shard(1))));
    assert_eq!(t.get_home(B, 6), vec![O::Persist(allocated(6, A))]);
    t.persisted();
    // ... and its next request starts the hand-offs not in progress again (1 and 6; 2 is
    // still being handed off).
    let out = t.from(A, Msg::GracefulShutdownReq { region: reg(A) });
    assert_eq!(rebalance_started(&out), vec![shard(1), shard(6)], "{out:?}");
}

/// Which shards an input starts to hand off.
fn rebalance_started(out: &[O]) -> Vec<ShardId> {
    out.iter()
        .filter_map(|o| match o {
            O::Obs(Observation::RebalanceStarted { shard, .. }) => Some(*shard),
            _ => None,
        })
        .collect()
}

/// A coordinator with regions A, B and C (the coordinator node's own region) registered, A
/// holding shards `1..=a` and C shards `a+1..=a+c`, and B (holding none) in graceful shutdown.
fn b_shutting_down(options: ProtocolOptions, a: u32, c: u32) -> T {
    let mut journal = vec![registered(A), registered(B), registered(C)];
    journal.extend((1..=a).map(|s| allocated(s, A)));
    journal.extend((a + 1..=a + c).map(|s| allocated(s, C)));
    let mut t = T::active_with(Settings::default(), options, &journal);
    assert_eq!(t.register(C), vec![send(C, Msg::RegisterAck)]);
    // B has no shard: nothing to hand off, it just waits to be told it may stop.
    assert_eq!(
        t.from(B, Msg::GracefulShutdownReq { region: reg(B) }),
        vec![]
    );
    t
}

#[test]
fn rebalance_counts_a_shutting_down_region_unless_the_fix_option_is_on() {
    // SC:1005-1007: Akka passes every registered region to the strategy, the one shutting
    // down included: with A 2, C 1 and B 0, B makes the difference 2 and shard 1 moves.
    let mut t = b_shutting_down(ProtocolOptions::default(), 2, 1);
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert_eq!(rebalance_started(&out), vec![shard(1)], "{out:?}");
    // `rebalance-skips-shutting-down-regions`: B is left out, A 2 against C 1 is balanced.
    let fix = ProtocolOptions {
        rebalance_skips_shutting_down_regions: true,
        ..ProtocolOptions::default()
    };
    let mut t = b_shutting_down(fix.clone(), 2, 1);
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert_eq!(rebalance_started(&out), vec![], "{out:?}");
    // ... and the other regions still rebalance among themselves: A 4 against C 0.
    let mut t = b_shutting_down(fix, 4, 0);
    let out = t.h(Input::Timeout(Timer::RebalanceTick));
    assert_eq!(rebalance_started(&out), vec![shard(1)], "{out:?}");
}

// ---- singleton hand-over: Terminate (§4.5, the fix of §12 B5) ----

#[test]
fn terminate_stops_at_once_when_no_write_is_in_flight() {
    let mut t = T::active(&a_least_loaded());
    assert_eq!(
        t.h(Input::Terminate),
        vec![O::Stop("handed over to the new oldest (Terminate)")]
    );
    // Stopped: nothing more is handled.
    assert_eq!(t.get_home(A, 6), vec![]);
}

#[test]
fn terminate_waits_behind_the_write_in_flight_and_what_was_stashed_before_it() {
    let mut t = T::active(&a_least_loaded());
    // Shard 6 is being allocated (a write in flight); a request for shard 7 is stashed, then
    // Terminate, then a request for shard 8.
    assert_eq!(t.get_home(B, 6), vec![O::Persist(allocated(6, A))]);
    assert_eq!(t.get_home(B, 7), vec![]);
    assert_eq!(t.h(Input::Terminate), vec![]);
    assert_eq!(t.get_home(B, 8), vec![]);
    // The write completes: HostShard and ShardHome for 6; shard 7's request persists its
    // allocation, and Terminate waits behind that write too.
    let out = t.persisted();
    assert!(out.contains(&home(B, 6, A)), "{out:?}");
    assert_eq!(out.last(), Some(&O::Persist(allocated(7, A))), "{out:?}");
    // Then Terminate: the coordinator stops; the request for 8, after it, is never handled.
    let out = t.persisted();
    assert!(out.contains(&home(B, 7, A)), "{out:?}");
    assert_eq!(
        out.last(),
        Some(&O::Stop("handed over to the new oldest (Terminate)"))
    );
    assert!(!out.iter().any(|o| matches!(o, O::Persist(_))), "{out:?}");
}
