//! Unit tests of the sans-IO ShardCoordinator in ddata mode (`DDataShardCoordinator`,
//! docs/akka-reference.md §3.3, SC:1658-2108), and of the `LWWRegister` that holds its state.
//!
//! Every test drives one `Coordinator` through `handle` and asserts on the exact outputs appended.

mod common;
use common::coordinator_fixtures::*;
use common::*;

use shardsim_core::ddata::LwwRegister;
use shardsim_core::ids::{NodeId, NodeInc};
use shardsim_core::membership::NodeAddr;
use shardsim_core::protocol::allocation::LeastShardAllocationStrategy;
use shardsim_core::protocol::coordinator::{
    Coordinator, CoordinatorState, StateReadResult, StateWriteResult,
};
use shardsim_core::protocol::settings::{ProtocolOptions, Settings};
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, Input, Member, MemberStatus, Msg, Observation, Outbox, Timer,
};
use shardsim_core::time::Instant;

/// The coordinator runs on node 0; A, B are hosting regions on nodes 1, 2.
const C: u32 = 0;
const A: u32 = 1;
const B: u32 = 2;

fn member(n: u32, up_number: u32, status: MemberStatus) -> Member {
    Member {
        node: NodeId(n),
        inc: NodeInc(1),
        up_number,
        status,
        hosting: true,
        app_version: 0,
    }
}

fn all_up() -> Vec<Member> {
    vec![
        member(C, 0, MemberStatus::Up),
        member(A, 1, MemberStatus::Up),
        member(B, 2, MemberStatus::Up),
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

/// The state `events` build from empty.
fn state_of(events: &[CoordinatorEvent]) -> CoordinatorState {
    let mut s = CoordinatorState::default();
    for e in events {
        s.updated(e).expect("a valid event");
    }
    s
}

/// The write of the whole state `events` build: WriteMajorityPlus(5 s, 3).
fn write(events: &[CoordinatorEvent]) -> O {
    O::StateWrite(Box::new(state_of(events)), 3, ms(5_000))
}

struct T {
    c: Coordinator,
    now: Instant,
}

impl T {
    fn start_with(options: ProtocolOptions) -> (T, Vec<O>) {
        let settings = Settings::default();
        let strategy = Box::new(LeastShardAllocationStrategy::new(
            settings.least_shard_allocation_strategy.clone(),
        ));
        let mut out = Outbox::default();
        let c = Coordinator::start_ddata(
            Addr::coordinator(reg(C)),
            settings,
            options,
            strategy,
            &mut out,
        );
        let t = T {
            c,
            now: Instant::ZERO,
        };
        (t, out.0.iter().map(norm).collect())
    }

    fn start() -> (T, Vec<O>) {
        T::start_with(ProtocolOptions::default())
    }

    fn h(&mut self, input: Input) -> Vec<O> {
        let mut out = Outbox::default();
        self.c.handle(self.now, input, &mut out);
        assert_eq!(self.c.check_invariants(), None);
        out.0
            .iter()
            .map(norm)
            .filter(|o| !matches!(o, O::Obs(Observation::AllocationDecided { .. })))
            .collect()
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

    fn get_home(&mut self, n: u32, s: u32) -> Vec<O> {
        self.from(n, Msg::GetShardHome { shard: shard(s) })
    }

    fn written(&mut self, r: StateWriteResult) -> Vec<O> {
        self.h(Input::StateWritten(r))
    }

    /// Started, every member Up, then the state `events` build read: it is loaded, and (not
    /// empty) the coordinator waits for StateInitialized.
    fn loading_non_empty(events: &[CoordinatorEvent]) -> T {
        let (mut t, _) = T::start();
        t.h(Input::MembersChanged(all_up()));
        let out = t.h(Input::StateRead(StateReadResult::Found(Box::new(
            state_of(events),
        ))));
        assert_eq!(
            out,
            vec![
                O::Obs(Observation::CoordinatorStateLoaded {
                    state: Box::new(state_of(events)),
                }),
                O::Set(Timer::StateInitialized, ms(500)),
            ]
        );
        t
    }

    /// Started, read the state `events` build (or `NotFound` for none), initialised, every
    /// member Up, A and B registered.
    fn active(events: &[CoordinatorEvent]) -> T {
        let (mut t, _) = T::start();
        t.h(Input::MembersChanged(all_up()));
        if events.is_empty() {
            t.h(Input::StateRead(StateReadResult::NotFound));
            assert_eq!(t.register(A), vec![write(&[registered(A)])]);
            t.written(StateWriteResult::Success);
            assert_eq!(t.register(B), vec![write(&[registered(A), registered(B)])]);
            t.written(StateWriteResult::Success);
        } else {
            let s = Box::new(state_of(events));
            t.h(Input::StateRead(StateReadResult::Found(s)));
            t.h(Input::Timeout(Timer::StateInitialized));
            assert_eq!(t.register(A), vec![send(A, Msg::RegisterAck)]);
            assert_eq!(t.register(B), vec![send(B, Msg::RegisterAck)]);
        }
        t
    }
}

#[test]
fn a_ddata_coordinator_reads_its_state_first_with_read_majority_plus() {
    let (t, out) = T::start();
    assert_eq!(
        out,
        vec![
            O::Set(Timer::RebalanceTick, ms(10_000)),
            O::StateRead(5, ms(2_000)),
        ]
    );
    assert!(t.c.is_ddata() && t.c.is_loading());
    // The B4 pre-fix reads and writes plain majorities.
    let plain = ProtocolOptions {
        coordinator_plain_majority: true,
        ..ProtocolOptions::default()
    };
    let (_, out) = T::start_with(plain);
    assert_eq!(out[1], O::StateRead(0, ms(2_000)));
}

#[test]
fn loading_drops_register_and_get_shard_home_and_retries_a_failed_read() {
    let (mut t, _) = T::start();
    t.h(Input::MembersChanged(all_up()));
    // waitingForInitialState: Register is dropped (the region retries), GetShardHome unhandled.
    assert_eq!(t.register(A), vec![]);
    assert_eq!(t.get_home(A, 1), vec![]);
    // The fixed-delay rebalance tick keeps coming.
    assert_eq!(
        t.h(Input::Timeout(Timer::RebalanceTick)),
        vec![O::Set(Timer::RebalanceTick, ms(10_000))]
    );
    // GetFailure: "repeat until GetSuccess".
    for _ in 0..3 {
        assert_eq!(
            t.h(Input::StateRead(StateReadResult::Failure)),
            vec![O::StateRead(5, ms(2_000))]
        );
        assert!(t.c.is_loading());
    }
}

#[test]
fn an_empty_state_activates_at_once() {
    let (mut t, _) = T::start();
    t.h(Input::MembersChanged(all_up()));
    assert_eq!(
        t.h(Input::StateRead(StateReadResult::NotFound)),
        vec![O::Obs(Observation::CoordinatorStateLoaded {
            state: Box::new(CoordinatorState::default()),
        })]
    );
    assert!(!t.c.is_loading());
    // Active: a Register is written as the whole new state, acked once the write succeeded.
    assert_eq!(t.register(A), vec![write(&[registered(A)])]);
    assert_eq!(
        t.written(StateWriteResult::Success),
        vec![
            O::Obs(Observation::CoordinatorStateUpdated {
                event: registered(A),
            }),
            send(A, Msg::RegisterAck),
        ]
    );
    assert_eq!(t.c.state().regions.len(), 1);
}

#[test]
fn a_non_empty_state_waits_for_state_initialized_stashing_and_deferring() {
    let mut t = T::loading_non_empty(&[registered(A), registered(B), allocated(1, A)]);
    // waitingForStateInitialized: Register is stashed, GetShardHome deferred (deduplicated).
    assert_eq!(t.register(A), vec![]);
    assert_eq!(t.get_home(B, 1), vec![]);
    assert_eq!(t.get_home(B, 1), vec![]);
    assert_eq!(t.c.pending_get_shard_homes(), vec![(shard(1), raddr(B))]);
    // StateInitialized: HostShard for every allocation, then the stash (Register), then the
    // one deferred GetShardHome.
    assert_eq!(
        t.h(Input::Timeout(Timer::StateInitialized)),
        vec![
            send(A, Msg::HostShard { shard: shard(1) }),
            O::Set(Timer::ResendShardHost(shard(1)), ms(10_000)),
            send(A, Msg::RegisterAck),
            home(B, 1, A),
        ]
    );
    assert!(t.c.pending_get_shard_homes().is_empty());
}

#[test]
fn a_state_holding_only_a_proxy_is_not_empty() {
    // `State.isEmpty` is `shards.isEmpty && regions.isEmpty && regionProxies.isEmpty` (SC):
    // a state with a registered proxy and nothing else waits for StateInitialized too, so
    // the proxy is watched before the coordinator answers anyone.
    let mut t =
        T::loading_non_empty(&[CoordinatorEvent::ShardRegionProxyRegistered { proxy: reg(B) }]);
    assert_eq!(t.register(A), vec![], "stashed until StateInitialized");
}

#[test]
fn during_an_update_a_known_home_is_answered_and_others_wait_one_at_a_time() {
    let mut t = T::active(&[registered(A), registered(B), allocated(1, A)]);
    let base = [registered(A), registered(B), allocated(1, A)];
    // Shard 2 is unknown: allocated to the least loaded region, B; the update is in flight.
    assert_eq!(
        t.get_home(A, 2),
        vec![write(&[&base[..], &[allocated(2, B)]].concat())]
    );
    // akka#24064: a GetShardHome for a known shard is answered at once.
    assert_eq!(t.get_home(B, 1), vec![home(B, 1, A)]);
    // Unknown shards wait in the pending set, one entry per shard and requester (akka#25444).
    assert_eq!(t.get_home(B, 3), vec![]);
    assert_eq!(t.get_home(B, 3), vec![]);
    assert_eq!(t.get_home(A, 4), vec![]);
    // Anything else is stashed.
    assert_eq!(t.h(Input::Timeout(Timer::RebalanceTick)), vec![]);
    assert_eq!(
        t.c.pending_get_shard_homes(),
        vec![(shard(3), raddr(B)), (shard(4), raddr(A))]
    );
    // UpdateSuccess: the continuation (HostShard first, then ShardHome), the stash, then ONE
    // deferred request, whose allocation is the next update.
    let after2 = [&base[..], &[allocated(2, B)]].concat();
    let out = t.written(StateWriteResult::Success);
    assert_eq!(
        out,
        vec![
            O::Obs(Observation::CoordinatorStateUpdated {
                event: allocated(2, B),
            }),
            O::Obs(Observation::ShardAllocated {
                shard: shard(2),
                region: reg(B),
            }),
            send(B, Msg::HostShard { shard: shard(2) }),
            O::Set(Timer::ResendShardHost(shard(2)), ms(10_000)),
            home(A, 2, B),
            // The stashed rebalance tick (A 1 shard, B 1: balanced).
            O::Set(Timer::RebalanceTick, ms(10_000)),
            write(&[&after2[..], &[allocated(3, A)]].concat()),
        ]
    );
    assert_eq!(t.c.pending_get_shard_homes(), vec![(shard(4), raddr(A))]);
    // The next success lets the last one in.
    let out = t.written(StateWriteResult::Success);
    let after3 = [&after2[..], &[allocated(3, A)]].concat();
    assert_eq!(
        out.last(),
        Some(&write(&[&after3[..], &[allocated(4, B)]].concat()))
    );
    assert!(t.c.pending_get_shard_homes().is_empty());
}

#[test]
fn an_update_timeout_resends_the_same_update_forever() {
    let mut t = T::active(&[]);
    let events = [registered(A), registered(B), allocated(1, A)];
    assert_eq!(t.get_home(A, 1), vec![write(&events)]);
    for _ in 0..6 {
        assert_eq!(t.written(StateWriteResult::Timeout), vec![write(&events)]);
    }
    let out = t.written(StateWriteResult::Success);
    assert!(out.contains(&home(A, 1, A)), "{out:?}");
}

#[test]
fn terminate_during_an_update_waits_for_it_or_stops_on_its_timeout() {
    // Terminate is stashed behind the update (the B5 fix in ddata mode); after the success the
    // continuation runs, then the coordinator stops.
    let mut t = T::active(&[]);
    let events = [registered(A), registered(B), allocated(1, A)];
    assert_eq!(t.get_home(A, 1), vec![write(&events)]);
    assert_eq!(t.h(Input::Terminate), vec![]);
    let out = t.written(StateWriteResult::Success);
    assert!(out.contains(&home(A, 1, A)), "{out:?}");
    assert_eq!(
        out.last(),
        Some(&O::Stop("handed over to the new oldest (Terminate)"))
    );
    // Terminating, an UpdateTimeout stops it instead of resending.
    let mut t = T::active(&[]);
    t.get_home(A, 1);
    t.h(Input::Terminate);
    assert_eq!(
        t.written(StateWriteResult::Timeout),
        vec![O::Stop("terminating: the state update timed out")]
    );
    // A ModifyFailure stops it (Akka throws; the singleton's back-off restarts it).
    let mut t = T::active(&[]);
    t.get_home(A, 1);
    assert_eq!(
        t.written(StateWriteResult::ModifyFailure),
        vec![O::Stop("the state update failed (ModifyFailure)")]
    );
    // While loading, Terminate stops at once.
    let (mut t, _) = T::start();
    assert_eq!(
        t.h(Input::Terminate),
        vec![O::Stop("Terminate while waiting for the state")]
    );
}

#[test]
fn register_from_a_joining_member_is_ignored_unless_the_b3_pre_fix_is_on() {
    let joining = vec![
        member(C, 0, MemberStatus::Up),
        member(A, u32::MAX, MemberStatus::Joining),
    ];
    for (pre_fix, expected) in [(false, vec![]), (true, vec![write(&[registered(A)])])] {
        let options = ProtocolOptions {
            register_from_non_up_members: pre_fix,
            ..ProtocolOptions::default()
        };
        let (mut t, _) = T::start_with(options);
        t.h(Input::MembersChanged(joining.clone()));
        t.h(Input::StateRead(StateReadResult::NotFound));
        assert_eq!(t.register(A), expected, "pre-fix {pre_fix}");
    }
}

// ---- the LWWRegister (akka-distributed-data LWWRegister.scala) ----

fn node(n: u32) -> NodeAddr {
    NodeAddr {
        node: NodeId(n),
        inc: NodeInc(1),
    }
}

fn lww(ts: u64, n: u32, shards: u32) -> LwwRegister {
    let mut value = CoordinatorState::default();
    value.regions.insert(reg(A), Vec::new());
    for s in 0..shards {
        value.updated(&allocated(s, A)).expect("valid");
    }
    LwwRegister {
        value,
        timestamp: ts,
        node: node(n),
    }
}

#[test]
fn lww_merge_keeps_the_higher_timestamp_then_the_lower_node() {
    let (old, new) = (lww(10, 0, 1), lww(20, 3, 2));
    assert_eq!(old.merged(&new), &new);
    assert_eq!(new.merged(&old), &new);
    // Equal timestamps: the lower node address wins, on both sides (commutative).
    let (a, b) = (lww(10, 1, 1), lww(10, 2, 2));
    assert_eq!(a.merged(&b), &a);
    assert_eq!(b.merged(&a), &a);
    // Idempotent.
    assert_eq!(a.merged(&a), &a);
}

#[test]
fn lww_with_value_uses_akkas_default_clock() {
    // max(current + 1, now): later than now when the register is ahead ...
    let r = lww(100, 0, 0).with_value(node(2), CoordinatorState::default(), 50);
    assert_eq!((r.timestamp, r.node), (101, node(2)));
    // ... else now.
    let r = lww(100, 0, 0).with_value(node(2), CoordinatorState::default(), 500);
    assert_eq!(r.timestamp, 500);
    // So a write replaces the value it read even within one clock tick.
    let before = lww(500, 0, 3);
    let after = before.with_value(node(4), CoordinatorState::default(), 500);
    assert_eq!(before.merged(&after), &after);
}

// ---- remember-entities: the coordinator's remember store (`shard-<type>-all`, §3.3) ----

fn remembering() -> (T, Vec<O>) {
    let settings = Settings {
        remember_entities: true,
        ..Settings::default()
    };
    let strategy = Box::new(LeastShardAllocationStrategy::new(
        settings.least_shard_allocation_strategy.clone(),
    ));
    let mut out = Outbox::default();
    let c = Coordinator::start_ddata(
        Addr::coordinator(reg(C)),
        settings,
        ProtocolOptions::default(),
        strategy,
        &mut out,
    );
    let t = T {
        c,
        now: Instant::ZERO,
    };
    (t, out.0.iter().map(norm).collect())
}

#[test]
fn with_remember_entities_the_remembered_shards_are_loaded_and_allocated() {
    let (mut t, out) = remembering();
    assert_eq!(
        out,
        vec![
            O::Set(Timer::RebalanceTick, ms(10_000)),
            O::StateRead(5, ms(2_000)),
            O::RememberedShardsRead(5, ms(2_000)),
        ]
    );
    t.h(Input::MembersChanged(all_up()));
    // A failed read is read again (the store's "repeat until GetSuccess").
    assert_eq!(
        t.h(Input::RememberedShards(None)),
        vec![O::RememberedShardsRead(5, ms(2_000))]
    );
    // Shards 3 and 4 are remembered: after an empty state (a new cluster) they are
    // unallocated, and the first region's registration allocates them eagerly.
    t.h(Input::RememberedShards(Some(vec![shard(3), shard(4)])));
    t.h(Input::StateRead(StateReadResult::NotFound));
    assert_eq!(
        t.c.state().unallocated.iter().copied().collect::<Vec<_>>(),
        vec![shard(3), shard(4)]
    );
    let mut registered_a = state_of(&[registered(A)]);
    registered_a.remember_entities = true;
    registered_a.unallocated = [shard(3), shard(4)].into_iter().collect();
    assert_eq!(
        t.register(A),
        vec![O::StateWrite(Box::new(registered_a), 3, ms(5_000))]
    );
    let out = t.written(StateWriteResult::Success);
    // RegisterAck, then the self-sent GetShardHome for shard 3: a new allocation, written to
    // the state and added to the remember store.
    assert_eq!(out[1], send(A, Msg::RegisterAck));
    assert!(matches!(out[2], O::StateWrite(..)), "{out:?}");
    assert_eq!(out[3], O::RememberShardAdd(shard(3), 3, ms(5_000)));
    // The update waits for both: the state write alone does not complete it ...
    assert_eq!(t.written(StateWriteResult::Success), vec![]);
    // ... a failed AddShard is retried ...
    assert_eq!(
        t.h(Input::RememberShardAdded(false)),
        vec![O::RememberShardAdd(shard(3), 3, ms(5_000))]
    );
    // ... and its success completes the allocation; shard 4 comes next.
    let out = t.h(Input::RememberShardAdded(true));
    assert!(
        out.contains(&send(A, Msg::HostShard { shard: shard(3) })),
        "{out:?}"
    );
    assert_eq!(
        out.last(),
        Some(&O::RememberShardAdd(shard(4), 3, ms(5_000)))
    );
}
