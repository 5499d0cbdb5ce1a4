//! Unit tests of the sans-IO ShardRegion (docs/akka-reference.md §2, §5, §7) and of its Shards
//! (§6, §8) as the region drives them.
//!
//! Every test drives one `Region` and asserts on the exact outputs appended. Messages between
//! the region, a Shard and an entity are separate local events (`Output::Local`): `T::h` runs
//! one input and then delivers every local message back through `Region::local`, in order
//! (breadth-first, as a host with zero local delay and instant entity stops would), returning
//! the other outputs in order. `T::step` runs one input without delivering its local
//! messages, so a test can interleave an input with a stop that is still in flight.

mod common;
use common::harness::*;
use common::*;

use shardsim_core::ids::{EntityId, ShardId};
use shardsim_core::protocol::settings::{Mutation, ProtocolOptions, Settings};
use shardsim_core::protocol::shard::EntityState;
use shardsim_core::protocol::{
    DropReason, Input, Local, LocalDelay, MemberStatus, Msg, Observation, Outbox, ShardFailure,
    ShardMsg, ShardTimer, StopReason, Timer,
};
use shardsim_core::time::Instant;

// ---- registration (§5.1) ----

#[test]
fn start_arms_the_retry_tick() {
    let mut t = T::new(1);
    let mut out = Outbox::default();
    t.r.start(t.now, &mut out);
    let got: Vec<O> = out.0.iter().map(norm).filter(not_persist_timer).collect();
    assert_eq!(got, vec![O::Set(Timer::RegionRetry, ms(2_000))]);
}

#[test]
fn registers_with_the_oldest_up_hosting_member_on_members_changed() {
    let mut t = T::new(2);
    // Given out of order; the proxy-only node 9 is older but never a coordinator candidate, and
    // the Joining node 8 is not a candidate either.
    let out = t.h(Input::MembersChanged(vec![
        member(2, 3, MemberStatus::Up, true),
        member(9, 0, MemberStatus::Up, false),
        member(8, 0, MemberStatus::Joining, true),
        member(1, 1, MemberStatus::Up, true),
    ]));
    assert_eq!(
        out,
        vec![
            send(coord(1), Msg::Register { region: reg(2) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
    assert_eq!(t.r.coordinator(), None);
}

#[test]
fn registers_with_leaving_oldest_members_up_to_the_first_up_one() {
    // akka#28416: Leaving/Exiting oldest members are included, up to and including the first Up.
    let mut t = T::new(5);
    let out = t.h(Input::MembersChanged(vec![
        member(1, 1, MemberStatus::Leaving, true),
        member(2, 2, MemberStatus::Exiting, true),
        member(3, 3, MemberStatus::Up, true),
        member(4, 4, MemberStatus::Up, true),
    ]));
    assert_eq!(
        out,
        vec![
            send(coord(1), Msg::Register { region: reg(5) }),
            send(coord(2), Msg::Register { region: reg(5) }),
            send(coord(3), Msg::Register { region: reg(5) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
}

#[test]
fn pre_fix_registers_with_the_oldest_only_and_asks_the_two_oldest_to_shut_down() {
    // Akka before 2.6.2 (akka#28416, §12 B21, option register-to-oldest-only): `Register` to
    // the oldest member only, even while it is Leaving or Exiting; `GracefulShutdownReq` to
    // the two oldest (`gracefulShutdownCoordinatorSelections`).
    let opts = ProtocolOptions {
        register_to_oldest_only: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(5, true, quiet(), opts);
    let out = t.h(Input::MembersChanged(vec![
        member(1, 1, MemberStatus::Exiting, true),
        member(2, 2, MemberStatus::Up, true),
        member(3, 3, MemberStatus::Up, true),
    ]));
    assert_eq!(
        out,
        vec![
            send(coord(1), Msg::Register { region: reg(5) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
    t.from(coord(1), Msg::HostShard { shard: shard(1) });
    graceful(&mut t);
    let out = t.h(Input::Timeout(Timer::RegionRetry));
    let asked: Vec<&O> = out
        .iter()
        .filter(|o| matches!(o, O::Send(_, Msg::GracefulShutdownReq { .. })))
        .collect();
    assert_eq!(
        asked,
        vec![
            &send(coord(1), Msg::GracefulShutdownReq { region: reg(5) }),
            &send(coord(2), Msg::GracefulShutdownReq { region: reg(5) }),
        ]
    );
}

#[test]
fn equally_old_members_are_ordered_by_node() {
    let mut t = T::new(7);
    let out = t.h(Input::MembersChanged(vec![
        member(4, 1, MemberStatus::Up, true),
        member(3, 1, MemberStatus::Up, true),
    ]));
    assert_eq!(
        sends(&out),
        vec![(coord(3), Msg::Register { region: reg(7) })]
    );
}

#[test]
fn proxy_sends_register_proxy() {
    let mut t = T::with(5, false, quiet(), ProtocolOptions::default());
    // A proxy-only region hosts nothing (the harness announces its member as not hosting from
    // this; a survivor of cargo-mutants answered `true`).
    assert!(!t.r.hosting());
    let out = t.h(Input::MembersChanged(vec![
        member(1, 1, MemberStatus::Up, true),
        member(5, 2, MemberStatus::Up, false),
    ]));
    assert_eq!(
        out,
        vec![
            send(coord(1), Msg::RegisterProxy { proxy: reg(5) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
}

#[test]
fn no_candidate_means_no_register_but_back_off_still_armed() {
    let mut t = T::new(5);
    let out = t.h(Input::MembersChanged(vec![member(
        1,
        1,
        MemberStatus::Joining,
        true,
    )]));
    assert_eq!(out, vec![O::Set(Timer::RegisterRetry, ms(250))]);
}

#[test]
fn register_ack_cancels_register_retry_and_asks_home_of_each_buffered_shard() {
    let mut t = T::new(1);
    t.h(Input::MembersChanged(vec![member(
        0,
        1,
        MemberStatus::Up,
        true,
    )]));
    // Not registered yet: messages are buffered without GetShardHome.
    assert_eq!(t.req(env(1, 2, 1)), vec![]);
    assert_eq!(t.req(env(1, 4, 1)), vec![]);
    assert_eq!(t.req(env(1, 5, 1)), vec![]);
    assert_eq!(t.r.buffered_total(), 3);
    let out = t.from(coord(0), Msg::RegisterAck);
    assert_eq!(
        out,
        vec![
            O::Cancel(Timer::RegisterRetry),
            send(coord(0), Msg::GetShardHome { shard: shard(1) }),
            send(coord(0), Msg::GetShardHome { shard: shard(2) }),
        ]
    );
    assert_eq!(t.r.coordinator(), Some(coord(0)));
}

#[test]
fn members_changed_with_same_oldest_keeps_the_coordinator() {
    let mut t = T::new(1).registered();
    let out = t.h(Input::MembersChanged(vec![
        member(0, 1, MemberStatus::Up, true),
        member(1, 2, MemberStatus::Up, true),
        member(2, 3, MemberStatus::Up, true),
    ]));
    assert_eq!(out, vec![]);
    assert_eq!(t.r.coordinator(), Some(coord(0)));
}

#[test]
fn homes_on_a_down_or_removed_member_are_forgotten() {
    // Death watch of the other regions (§5.4, SR `Terminated(ref) if regions.contains(ref)`):
    // a region whose member is Down or gone from the view is Terminated, and the shards it
    // was home of are asked for again; homes on live members (and this region) stay.
    let mut t = T::new(1).registered();
    for (s, r) in [(1, 2), (2, 3), (3, 4), (4, 5)] {
        t.from(
            coord(0),
            Msg::ShardHome {
                shard: shard(s),
                region: reg(r),
            },
        );
    }
    let out = t.h(Input::MembersChanged(vec![
        member(0, 1, MemberStatus::Up, true),
        member(1, 2, MemberStatus::Up, true),
        member(2, 3, MemberStatus::Down, true),
        member(4, 5, MemberStatus::Leaving, true),
        member(5, 6, MemberStatus::Removed, true),
    ]));
    assert_eq!(out, vec![]);
    assert_eq!(t.r.coordinator(), Some(coord(0)));
    let homes: Vec<_> = (1..=4).map(|s| t.r.home_of(shard(s))).collect();
    assert_eq!(homes, vec![None, None, Some(reg(4)), None]);
    assert_eq!(
        t.req(env(3, 4, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
}

#[test]
fn oldest_change_forgets_the_coordinator_and_registers_again() {
    let mut t = T::new(1).registered();
    let out = t.h(Input::MembersChanged(vec![
        member(1, 2, MemberStatus::Up, true),
        member(2, 3, MemberStatus::Up, true),
    ]));
    assert_eq!(
        out,
        vec![
            send(coord(1), Msg::Register { region: reg(1) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
    assert_eq!(t.r.coordinator(), None);
}

#[test]
#[ignore = "not modelled: Akka 2.10.6 reRegisterIfCoordinatorNotUp (akka#32722, §5.1); shardsim follows Akka.NET and earlier Akka here"]
fn reregisters_when_the_coordinator_node_is_no_longer_up() {
    // §5.1: head unchanged, coordinator known, but its node became non-Up → send Register to the
    // candidates and start the RegisterRetry back-off, keeping the current coordinator.
    let mut t = T::new(1).registered();
    let out = t.h(Input::MembersChanged(vec![
        member(0, 1, MemberStatus::Leaving, true),
        member(1, 2, MemberStatus::Up, true),
    ]));
    assert!(
        sends(&out).contains(&(coord(1), Msg::Register { region: reg(1) })),
        "{out:?}"
    );
    assert!(
        out.contains(&O::Set(Timer::RegisterRetry, ms(250))),
        "{out:?}"
    );
    assert_eq!(t.r.coordinator(), Some(coord(0)));
}

#[test]
fn register_back_off_doubles_250ms_500ms_1s_then_stops() {
    let mut t = T::new(1);
    let out = t.h(Input::MembersChanged(vec![member(
        0,
        1,
        MemberStatus::Up,
        true,
    )]));
    assert_eq!(out.last(), Some(&O::Set(Timer::RegisterRetry, ms(250))));
    let reg_msg = send(coord(0), Msg::Register { region: reg(1) });
    for next in [500, 1_000] {
        let out = t.h(Input::Timeout(Timer::RegisterRetry));
        assert_eq!(
            out,
            vec![reg_msg.clone(), O::Set(Timer::RegisterRetry, ms(next))]
        );
    }
    // The next delay would be 2 s = retry-interval: no more RegisterRetry, the Retry tick takes over.
    assert_eq!(t.h(Input::Timeout(Timer::RegisterRetry)), vec![reg_msg]);
}

#[test]
fn register_back_off_restarts_at_250ms_on_a_new_registration() {
    let mut t = T::new(1);
    t.h(Input::MembersChanged(vec![member(
        0,
        1,
        MemberStatus::Up,
        true,
    )]));
    t.h(Input::Timeout(Timer::RegisterRetry));
    t.h(Input::Timeout(Timer::RegisterRetry));
    let out = t.h(Input::MembersChanged(vec![member(
        2,
        1,
        MemberStatus::Up,
        true,
    )]));
    assert_eq!(
        out,
        vec![
            send(coord(2), Msg::Register { region: reg(1) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
}

#[test]
fn register_retry_is_a_no_op_once_registered() {
    let mut t = T::new(1).registered();
    assert_eq!(t.h(Input::Timeout(Timer::RegisterRetry)), vec![]);
}

#[test]
fn retry_tick_registers_again_without_a_coordinator_and_rearms() {
    let mut t = T::new(1);
    t.h(Input::MembersChanged(vec![member(
        0,
        1,
        MemberStatus::Up,
        true,
    )]));
    let out = t.h(Input::Timeout(Timer::RegionRetry));
    assert_eq!(
        out,
        vec![
            send(coord(0), Msg::Register { region: reg(1) }),
            O::Set(Timer::RegionRetry, ms(2_000)),
        ]
    );
}

#[test]
fn retry_tick_with_coordinator_reasks_buffered_shards_and_rearms() {
    let mut t = T::new(1).registered();
    t.req(env(1, 1, 1));
    t.req(env(1, 2, 1));
    t.req(env(1, 4, 1));
    let out = t.h(Input::Timeout(Timer::RegionRetry));
    assert_eq!(
        out,
        vec![
            send(coord(0), Msg::GetShardHome { shard: shard(1) }),
            send(coord(0), Msg::GetShardHome { shard: shard(2) }),
            O::Set(Timer::RegionRetry, ms(2_000)),
        ]
    );
    // Nothing buffered: only the re-arm.
    let mut t = T::new(1).registered();
    assert_eq!(
        t.h(Input::Timeout(Timer::RegionRetry)),
        vec![O::Set(Timer::RegionRetry, ms(2_000))]
    );
}

#[test]
fn coordinator_timers_are_ignored_by_the_region() {
    let mut t = T::new(1).registered();
    for timer in [
        Timer::RebalanceTick,
        Timer::StateInitialized,
        Timer::ResendShardHost(shard(1)),
        Timer::HandOffTimeout(shard(1)),
    ] {
        assert_eq!(t.h(Input::Timeout(timer)), vec![]);
    }
    assert_eq!(t.h(Input::Persisted), vec![]);
}

// ---- delivering and buffering (§5.2, §5.3) ----

#[test]
fn message_for_unknown_shard_is_buffered_and_home_asked_once_per_shard() {
    let mut t = T::new(1).registered();
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    // Same shard (entity 7 % 3 = 1): buffered, no second GetShardHome.
    assert_eq!(t.req(env(1, 7, 1)), vec![]);
    assert_eq!(t.req(env(1, 4, 2)), vec![]);
    // Another shard: its own GetShardHome.
    assert_eq!(
        t.req(env(1, 5, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(2) })]
    );
    assert_eq!(t.r.buffered_total(), 4);
    assert_eq!(
        t.r.buffered_shards().collect::<Vec<_>>(),
        vec![shard(1), shard(2)]
    );
    assert_eq!(t.r.home_of(shard(1)), None);
}

#[test]
fn user_message_from_another_region_is_routed_like_a_request() {
    let mut t = T::new(1).registered();
    assert_eq!(
        t.from(raddr(2), Msg::User(env(1, 4, 1))),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    assert_eq!(t.r.buffered_total(), 1);
}

#[test]
fn shard_home_remote_flushes_the_buffer_in_order_to_that_region() {
    let mut t = T::new(1).registered();
    let msgs = [env(1, 4, 1), env(2, 7, 1), env(1, 4, 2), env(1, 1, 1)];
    for m in msgs {
        t.req(m);
    }
    t.req(env(1, 5, 1)); // shard 2, stays buffered
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    let expected: Vec<O> = msgs.iter().map(|m| send(raddr(2), Msg::User(*m))).collect();
    assert_eq!(out, expected);
    assert_eq!(t.r.home_of(shard(1)), Some(reg(2)));
    assert_eq!(t.r.buffered_total(), 1);
    assert_eq!(t.r.buffered_shards().collect::<Vec<_>>(), vec![shard(2)]);
}

#[test]
fn message_to_a_known_remote_home_is_forwarded_immediately() {
    let mut t = T::new(1).registered();
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(
        t.req(env(3, 4, 9)),
        vec![send(raddr(2), Msg::User(env(3, 4, 9)))]
    );
    assert_eq!(t.r.buffered_total(), 0);
}

#[test]
fn shard_home_self_creates_the_shard_and_starts_entities_on_first_message() {
    let mut t = T::new(1).registered();
    let msgs = [env(1, 4, 1), env(1, 7, 1), env(1, 4, 2)];
    for m in msgs {
        t.req(m);
    }
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(1),
        },
    );
    // The Shard starts; once it is initialized the region hands it the buffer in order; the
    // Shard starts each entity on its first message and passes every message on; each entity
    // then processes its messages (each hop its own local event).
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(1))),
            started(4, 1, 0),
            started(7, 1, 1),
            delivered(msgs[0], 0),
            delivered(msgs[1], 1),
            delivered(msgs[2], 0),
        ]
    );
    // A later message to a live entity: delivered directly, no new start.
    assert_eq!(t.req(env(1, 4, 3)), vec![delivered(env(1, 4, 3), 0)]);
    // A new entity of the hosted shard starts on its first message.
    assert_eq!(
        t.req(env(1, 10, 1)),
        vec![started(10, 1, 2), delivered(env(1, 10, 1), 2)]
    );
    let hosted: Vec<(ShardId, Vec<EntityId>)> =
        t.r.hosted()
            .map(|(s, sh)| (s, sh.shard.entity_ids().collect()))
            .collect();
    assert_eq!(
        hosted,
        vec![(shard(1), vec![EntityId(4), EntityId(7), EntityId(10)])]
    );
}

#[test]
fn host_shard_creates_the_shard_delivers_its_buffer_and_replies_shard_started() {
    let mut t = T::new(1).registered();
    t.req(env(1, 2, 1));
    t.req(env(1, 5, 1));
    let out = t.from(coord(0), Msg::HostShard { shard: shard(2) });
    // ShardStarted goes at once (SR:925-934); the buffer reaches the Shard when it has
    // initialized.
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(2))),
            send(coord(0), Msg::ShardStarted { shard: shard(2) }),
            started(2, 2, 0),
            started(5, 2, 1),
            delivered(env(1, 2, 1), 0),
            delivered(env(1, 5, 1), 1),
        ]
    );
    assert_eq!(t.r.home_of(shard(2)), Some(reg(1)));
    assert_eq!(t.r.buffered_total(), 0);
}

#[test]
fn host_shard_without_buffer_only_hosts_and_replies() {
    let mut t = T::new(1).registered();
    assert_eq!(
        t.from(coord(0), Msg::HostShard { shard: shard(0) }),
        vec![
            obs(Observation::ShardHosted(shard(0))),
            send(coord(0), Msg::ShardStarted { shard: shard(0) }),
        ]
    );
    // A second HostShard (coordinator resend) re-acks without re-hosting.
    assert_eq!(
        t.from(coord(0), Msg::HostShard { shard: shard(0) }),
        vec![send(coord(0), Msg::ShardStarted { shard: shard(0) })]
    );
    assert_eq!(t.r.hosted().count(), 1);
    assert_eq!(
        t.req(env(1, 3, 1)),
        vec![started(3, 0, 0), delivered(env(1, 3, 1), 0)]
    );
}

#[test]
fn a_workload_shard_failure_reaches_the_hosted_shard_as_a_local_fail() {
    // The workload's `shard-failure` fault (§12 B9/B35 schedules): the Shard of the entity
    // gets a local `Fail`, so it throws when it handles it; no Shard, no failure.
    let mut t = T::new(1).registered();
    let mut out = Outbox::default();
    t.r.shard_of_entity_fails(EntityId(3), &mut out);
    assert!(out.0.is_empty(), "{:?}", out.0);
    t.from(coord(0), Msg::HostShard { shard: shard(0) });
    t.r.shard_of_entity_fails(EntityId(3), &mut out);
    assert_eq!(
        out.0.iter().map(norm).collect::<Vec<_>>(),
        vec![to_shard(0, 0, ShardMsg::Fail)]
    );
}

#[test]
fn a_fail_restarts_a_running_shard_and_is_ignored_while_it_hands_off() {
    // The injected failure throws in a running Shard: default supervision restarts it (its
    // entities stop first). A Shard handing off (the HandOffStopper runs) does not fail.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    let fail = to_shard_local(1, 0, ShardMsg::Fail);
    let mut got = t.local(fail);
    got.retain(|o| !matches!(o, O::Local(_)));
    got.extend(t.pump());
    assert_eq!(
        got,
        vec![
            obs(Observation::ShardFailed {
                shard: shard(1),
                cause: ShardFailure::Injected,
            }),
            stopped(4, StopReason::ShardRestart, 0),
        ]
    );
    t.req(env(1, 4, 2)); // entity 4 again, in the restarted Shard
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    t.step(hand_off(1));
    t.next_local(); // HandOff at the Shard: entity 4's stop is in flight
    assert!(t.slot(1).unwrap().shard.handing_off());
    assert_eq!(t.local(fail), vec![]);
    assert!(t.slot(1).unwrap().shard.handing_off());
}

#[test]
fn a_passivating_entitys_buffer_dies_with_a_shard_restart() {
    // The Shard throws while an entity passivates with messages buffered for it: the
    // restart stops every child, and the buffer dies with the old instance (ShardRestart),
    // leaving the Shard's buffered count at zero.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    assert_eq!(t.buffer_behind_passivation(4, 0, env(2, 4, 1)), vec![]);
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 1);
    let fail = to_shard_local(1, 0, ShardMsg::Fail);
    let mut out = t.local(fail);
    out.extend(t.pump());
    assert!(
        out.contains(&dropped(env(2, 4, 1), DropReason::ShardRestart)),
        "{out:?}"
    );
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 0);
}

#[test]
fn a_termination_of_another_entity_incarnation_is_ignored() {
    // Akka's Shard matches `Terminated` by the entity's ActorRef: the termination of another
    // incarnation (7) of a live entity (incarnation 0) changes nothing.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    let stale = Local::EntityTerminated {
        shard: shard(1),
        uid: 0,
        entity: EntityId(4),
        inc: 7,
    };
    assert_eq!(t.local(stale), vec![]);
    assert_eq!(t.r.entity_incarnation(shard(1), EntityId(4)), Some(0));
    assert_eq!(t.req(env(1, 4, 2)), vec![delivered(env(1, 4, 2), 0)]);
}

#[test]
fn start_entity_for_a_shard_without_home_asks_the_coordinator_once() {
    // `deliverMessage` (§2.6): a StartEntity for a shard whose home is unknown asks
    // GetShardHome, unless a buffer for the shard shows the request is already out.
    let mut t = T::new(1).registered();
    let start = Msg::StartEntity {
        entity: EntityId(3),
        starter: reg(2),
        for_shard: shard(0),
    };
    assert_eq!(
        t.from(raddr(2), start),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(0) })]
    );
    t.req(env(1, 3, 1));
    assert_eq!(t.from(raddr(2), start), vec![]);
}

#[test]
fn coordinator_terminated_of_another_coordinator_is_ignored() {
    // Terminated(coordinator) (§5.1) concerns only the watched coordinator: the stop of one
    // on another node (same incarnation number) leaves the registration alone; the region's
    // own coordinator stopping makes it register again.
    let mut t = T::new(1).registered();
    assert_eq!(t.from(coord(2), Msg::CoordinatorTerminated), vec![]);
    assert_eq!(t.r.coordinator(), Some(coord(0)));
    t.from(coord(0), Msg::CoordinatorTerminated);
    assert_eq!(t.r.coordinator(), None);
}

#[test]
fn buffer_size_limit_drops_with_buffer_full() {
    let settings = Settings {
        buffer_size: 2,
        ..quiet()
    };
    let mut t = T::with(1, true, settings, ProtocolOptions::default()).registered();
    t.req(env(1, 1, 1));
    t.req(env(1, 2, 1));
    // Total limit across shards: the third message (shard 1 again) is dropped.
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![dropped(env(1, 4, 1), DropReason::BufferFull)]
    );
    assert_eq!(t.r.buffered_total(), 2);
    // Delivering a buffer frees room.
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(t.r.buffered_total(), 1);
    assert_eq!(t.req(env(1, 2, 2)), vec![]);
    assert_eq!(t.r.buffered_total(), 2);
}

#[test]
fn buffer_full_for_a_new_shard_still_asks_its_home() {
    // deliverMessage asks GetShardHome when no buffer exists, before bufferMessage drops it.
    let settings = Settings {
        buffer_size: 1,
        ..quiet()
    };
    let mut t = T::with(1, true, settings, ProtocolOptions::default()).registered();
    t.req(env(1, 1, 1));
    assert_eq!(
        t.req(env(1, 2, 1)),
        vec![
            send(coord(0), Msg::GetShardHome { shard: shard(2) }),
            dropped(env(1, 2, 1), DropReason::BufferFull),
        ]
    );
}

// ---- hand-off at the region (§5.4, §7) ----

#[test]
fn begin_hand_off_removes_the_home_and_acks_to_the_sender() {
    let mut t = T::new(1).registered();
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    let out = t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    assert_eq!(
        out,
        vec![send(
            coord(0),
            Msg::BeginHandOffAck {
                shard: shard(1),
                region: reg(1),
            }
        )]
    );
    assert_eq!(t.r.home_of(shard(1)), None);
    // From now on messages for the shard are buffered and the coordinator asked.
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    assert_eq!(t.r.buffered_total(), 1);
}

#[test]
fn begin_hand_off_is_acked_also_for_an_unknown_shard() {
    let mut t = T::new(1).registered();
    assert_eq!(
        t.from(coord(0), Msg::BeginHandOff { shard: shard(2) }),
        vec![send(
            coord(0),
            Msg::BeginHandOffAck {
                shard: shard(2),
                region: reg(1),
            }
        )]
    );
}

#[test]
fn begin_hand_off_is_acked_by_a_proxy() {
    let mut t = T::with(5, false, quiet(), ProtocolOptions::default()).registered();
    assert_eq!(
        t.from(coord(0), Msg::BeginHandOff { shard: shard(2) }),
        vec![send(
            coord(0),
            Msg::BeginHandOffAck {
                shard: shard(2),
                region: reg(5),
            }
        )]
    );
}

fn via_owner() -> ProtocolOptions {
    ProtocolOptions {
        handoff_ack_via_owner: true,
        ..ProtocolOptions::default()
    }
}

#[test]
fn handoff_ack_via_owner_relays_the_ack_through_the_previous_owner() {
    let mut t = T::with(1, true, quiet(), via_owner()).registered();
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(
        t.from(coord(0), Msg::BeginHandOff { shard: shard(1) }),
        vec![send(
            raddr(2),
            Msg::BeginHandOffAckRelay {
                shard: shard(1),
                region: reg(1),
                coordinator: coord(0),
            }
        )]
    );
    assert_eq!(t.r.home_of(shard(1)), None);
}

#[test]
fn handoff_ack_via_owner_acks_directly_when_owner_is_self_or_unknown() {
    let mut t = T::with(1, true, quiet(), via_owner()).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    let ack = |s: u32| {
        vec![send(
            coord(0),
            Msg::BeginHandOffAck {
                shard: shard(s),
                region: reg(1),
            },
        )]
    };
    assert_eq!(
        t.from(coord(0), Msg::BeginHandOff { shard: shard(1) }),
        ack(1)
    );
    assert_eq!(
        t.from(coord(0), Msg::BeginHandOff { shard: shard(2) }),
        ack(2)
    );
}

#[test]
fn begin_hand_off_ack_relay_is_forwarded_to_the_named_coordinator() {
    let mut t = T::new(2).registered();
    let out = t.from(
        raddr(1),
        Msg::BeginHandOffAckRelay {
            shard: shard(1),
            region: reg(1),
            coordinator: coord(7),
        },
    );
    assert_eq!(
        out,
        vec![send(
            coord(7),
            Msg::BeginHandOffAck {
                shard: shard(1),
                region: reg(1),
            }
        )]
    );
}

#[test]
fn hand_off_drops_the_buffer_stops_entities_unhosts_and_replies_shard_stopped() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1)); // entity 4, incarnation 0
    t.req(env(1, 1, 1)); // entity 1, incarnation 1
    t.req(env(1, 2, 1)); // shard 2: unknown home, buffered, must survive the hand-off of 1
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    // Buffered at the owner between BeginHandOff and HandOff.
    assert_eq!(
        t.req(env(1, 4, 2)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    t.req(env(2, 7, 1));
    // The region drops what it buffered since BeginHandOff ("to avoid re-ordering") and
    // forwards the HandOff to its Shard (SR:936-962); no ShardStopped yet.
    let out = t.step(Input::Deliver {
        from: coord(0),
        msg: Msg::HandOff { shard: shard(1) },
    });
    assert_eq!(
        out,
        vec![
            dropped(env(1, 4, 2), DropReason::HandOffBuffer),
            dropped(env(2, 7, 1), DropReason::HandOffBuffer),
            O::Local(Local::ToShard {
                shard: shard(1),
                uid: 0,
                msg: ShardMsg::HandOff { from: coord(0) },
            }),
        ]
    );
    assert!(t.slot(1).unwrap().handing_off);
    // The Shard's HandOffStopper sends the hand-off stop message to every entity and arms its
    // stop timeout; each entity stops and terminates after its stop duration.
    let out = t.next_local();
    let stop = |entity: u32, inc: u64| {
        O::Local(Local::StopEntity {
            shard: shard(1),
            uid: 0,
            entity: EntityId(entity),
            inc,
            reason: StopReason::HandOff,
        })
    };
    let stop_timeout = shard_timer(1, 0, ShardTimer::HandOffStopTimeout);
    assert_eq!(
        out,
        vec![
            stop(1, 1),
            stop(4, 0),
            O::Set(stop_timeout, ms(HANDOFF_STOP_TIMEOUT_MS)),
        ]
    );
    assert!(t.slot(1).unwrap().shard.handing_off());
    t.next_local();
    t.next_local();
    let terminations: Vec<LocalDelay> = t.pending.iter().map(|(_, d)| *d).collect();
    assert_eq!(terminations, vec![LocalDelay::EntityStop; 2]);
    // When every entity has terminated: ShardStopped to the coordinator (§7 t5-t6), then the
    // Shard stops; its termination reaches the region, which forgets it.
    assert_eq!(
        t.pump(),
        vec![
            stopped(1, StopReason::HandOff, 1),
            stopped(4, StopReason::HandOff, 0),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            O::Cancel(stop_timeout),
            obs(Observation::ShardUnhosted(shard(1))),
        ]
    );
    assert_eq!(t.r.hosted().count(), 0);
    assert_eq!(t.r.buffered_total(), 1);
    assert_eq!(t.r.buffered_shards().collect::<Vec<_>>(), vec![shard(2)]);
}

#[test]
fn hand_off_for_a_shard_not_hosted_still_replies_shard_stopped() {
    let mut t = T::new(1).registered();
    assert_eq!(
        t.from(coord(0), Msg::HandOff { shard: shard(2) }),
        vec![send(coord(0), Msg::ShardStopped { shard: shard(2) })]
    );
}

#[test]
fn shard_is_rehosted_after_hand_off_when_allocated_back() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    t.from(coord(0), Msg::HandOff { shard: shard(1) });
    t.req(env(1, 4, 2));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(1),
        },
    );
    // A new Shard, and a new incarnation of the entity.
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(1))),
            started(4, 1, 1),
            delivered(env(1, 4, 2), 1),
        ]
    );
}

#[test]
fn shard_home_elsewhere_for_a_hosted_shard_restarts_the_region() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.from(coord(0), Msg::HostShard { shard: shard(0) });
    t.req(env(1, 4, 1));
    t.req(env(1, 3, 1));
    t.req(env(1, 2, 1)); // buffered for shard 2
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(2),
            region: reg(2),
        },
    );
    t.req(env(1, 5, 1)); // forwarded, nothing buffered
    t.req(env(1, 1, 1));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    // The restart stops every child at once (default preRestart), without local messages.
    assert_eq!(
        out,
        vec![
            obs(Observation::RegionRestarted),
            obs(Observation::ShardUnhosted(shard(0))),
            stopped(3, StopReason::RegionRestart, 1),
            obs(Observation::ShardUnhosted(shard(1))),
            stopped(1, StopReason::RegionRestart, 2),
            stopped(4, StopReason::RegionRestart, 0),
            send(coord(0), Msg::Register { region: reg(1) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
    assert_eq!(t.r.coordinator(), None);
    assert_eq!(t.r.hosted().count(), 0);
    assert_eq!(t.r.home_of(shard(1)), None);
    assert_eq!(t.r.home_of(shard(2)), None);
}

#[test]
fn region_restart_drops_every_buffer_with_region_restart() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 2, 1));
    t.req(env(1, 0, 1));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(
        out,
        vec![
            obs(Observation::RegionRestarted),
            obs(Observation::ShardUnhosted(shard(1))),
            dropped(env(1, 0, 1), DropReason::RegionRestart),
            dropped(env(1, 2, 1), DropReason::RegionRestart),
            send(coord(0), Msg::Register { region: reg(1) }),
            O::Set(Timer::RegisterRetry, ms(250)),
        ]
    );
    assert_eq!(t.r.buffered_total(), 0);
}

#[test]
fn shard_home_self_again_for_a_hosted_shard_is_harmless() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    assert_eq!(
        t.from(
            coord(0),
            Msg::ShardHome {
                shard: shard(1),
                region: reg(1),
            }
        ),
        vec![]
    );
    assert_eq!(t.r.hosted().count(), 1);
}

// ---- the Shard layer: starting, hand-off races, passivation (§2.4-§2.5, §6, §8, §12) ----

fn host_shard(s: u32) -> Input {
    Input::Deliver {
        from: coord(0),
        msg: Msg::HostShard { shard: shard(s) },
    }
}

fn begin_hand_off(s: u32) -> Input {
    Input::Deliver {
        from: coord(0),
        msg: Msg::BeginHandOff { shard: shard(s) },
    }
}

fn hand_off(s: u32) -> Input {
    Input::Deliver {
        from: coord(0),
        msg: Msg::HandOff { shard: shard(s) },
    }
}

fn to_shard_local(s: u32, uid: u32, msg: ShardMsg) -> Local {
    Local::ToShard {
        shard: shard(s),
        uid,
        msg,
    }
}

fn to_shard(s: u32, uid: u32, msg: ShardMsg) -> O {
    O::Local(to_shard_local(s, uid, msg))
}

#[test]
fn a_message_for_a_starting_shard_is_buffered_at_the_region_until_shard_initialized() {
    let mut t = T::new(1).registered();
    // HostShard creates the Shard and acks at once (SR:925-934); the Shard initialises (its
    // InitDone to itself is in flight), then tells its region.
    assert_eq!(
        t.step(host_shard(1)),
        vec![
            O::Local(Local::ToShard {
                shard: shard(1),
                uid: 0,
                msg: ShardMsg::InitDone,
            }),
            obs(Observation::ShardHosted(shard(1))),
            send(coord(0), Msg::ShardStarted { shard: shard(1) }),
        ]
    );
    assert!(!t.slot(1).unwrap().initialized);
    // In `startingShards` getShard gives nothing: the region buffers (no GetShardHome: the home
    // is known), and nothing reaches the Shard.
    let msgs = [env(1, 4, 1), env(2, 7, 1), env(1, 4, 2)];
    for m in msgs {
        assert_eq!(t.step(Input::Request(m)), vec![]);
    }
    assert_eq!(t.r.buffered_total(), 3);
    assert_eq!(t.r.buffered_shards().collect::<Vec<_>>(), vec![shard(1)]);
    assert_eq!(t.slot(1).unwrap().shard.entity_ids().count(), 0);
    // InitDone: the Shard sends ShardInitialized.
    assert_eq!(
        t.next_local(),
        vec![O::Local(Local::ShardInitialized {
            shard: shard(1),
            uid: 0,
        })]
    );
    // ShardInitialized: out of `startingShards`, the buffer goes to the Shard in order
    // (`initializeShard` → `deliverBufferedMessages`).
    assert_eq!(
        t.next_local(),
        msgs.iter()
            .map(|m| to_shard(1, 0, ShardMsg::User(*m)))
            .collect::<Vec<_>>()
    );
    assert!(t.slot(1).unwrap().initialized);
    assert_eq!(t.r.buffered_total(), 0);
    assert_eq!(
        t.pump(),
        vec![
            started(4, 1, 0),
            started(7, 1, 1),
            delivered(msgs[0], 0),
            delivered(msgs[1], 1),
            delivered(msgs[2], 0),
        ]
    );
    // Initialized: the next message goes straight to the Shard.
    assert_eq!(
        t.step(Input::Request(env(1, 4, 3))),
        vec![to_shard(1, 0, ShardMsg::User(env(1, 4, 3)))]
    );
    assert_eq!(t.pump(), vec![delivered(env(1, 4, 3), 0)]);
}

#[test]
fn a_shard_initialized_of_another_shard_instance_is_ignored() {
    // `initializeShard` runs for the Shard actor that sent ShardInitialized (SR:1275-1279): one
    // from another instance of the shard (here uid 5, while uid 0 starts) does not take the
    // starting Shard out of `startingShards`, and a repeated one does nothing.
    let mut t = T::new(1).registered();
    t.step(host_shard(1)); // uid 0; its InitDone is in flight
    assert_eq!(t.step(Input::Request(env(1, 4, 1))), vec![]); // buffered: starting
    let stale = Local::ShardInitialized {
        shard: shard(1),
        uid: 5,
    };
    assert_eq!(t.local(stale), vec![]);
    assert!(!t.slot(1).unwrap().initialized);
    assert_eq!(t.r.buffered_total(), 1);
    // The starting Shard's own ShardInitialized delivers the buffer to it, once.
    assert_eq!(t.pump(), vec![started(4, 1, 0), delivered(env(1, 4, 1), 0)]);
    let again = Local::ShardInitialized {
        shard: shard(1),
        uid: 0,
    };
    assert_eq!(t.local(again), vec![]);
    assert!(t.slot(1).unwrap().initialized);
}

#[test]
fn a_shard_terminated_of_another_shard_instance_is_ignored() {
    // `Terminated(shard)` (SR:1040-1093) is for the Shard actor the region watches: the
    // termination of another instance of the shard (uid 5) leaves the running Shard (uid 0) in
    // place, and messages keep reaching it.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    assert!(t.slot(1).unwrap().initialized);
    let stale = Local::ShardTerminated {
        shard: shard(1),
        uid: 5,
    };
    assert_eq!(t.local(stale), vec![]);
    assert_eq!(t.slot(1).unwrap().shard.uid(), 0);
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![started(4, 1, 0), delivered(env(1, 4, 1), 0)]
    );
}

#[test]
fn hand_off_before_shard_initialized_goes_to_the_starting_shard() {
    // akka#18945 (§12 B1, fixed): a Shard that has not sent ShardInitialized yet is still one
    // the region has, so the HandOff goes to it and ShardStopped comes from it.
    let mut t = T::new(1).registered();
    t.step(host_shard(1)); // ShardInitialized in flight
    assert_eq!(t.step(Input::Request(env(1, 4, 1))), vec![]); // buffered: starting
    t.step(begin_hand_off(1));
    // HandOff drops the whole buffer of the shard and forwards; no ShardStopped yet.
    assert_eq!(
        t.step(hand_off(1)),
        vec![
            dropped(env(1, 4, 1), DropReason::HandOffBuffer),
            to_shard(1, 0, ShardMsg::HandOff { from: coord(0) }),
        ]
    );
    assert!(t.slot(1).unwrap().handing_off);
    // The Shard initializes, then handles the HandOff: no entity, so ShardStopped at once and
    // it stops; its termination reaches the region.
    assert_eq!(
        t.pump(),
        vec![
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            obs(Observation::ShardUnhosted(shard(1))),
        ]
    );
    assert_eq!(t.r.hosted().count(), 0);
}

#[test]
fn a_hand_off_reaching_the_shard_before_its_init_done_waits_for_it() {
    // The Shard's initialisation takes `shard-init-ms` and the region's HandOff only a mailbox
    // hop, so the HandOff can reach a Shard still initialising: it is stashed, not taken for
    // the end of the initialisation, and handled once the Shard has initialised.
    let mut t = T::new(1).registered();
    t.step(host_shard(1)); // InitDone queued
    t.step(begin_hand_off(1));
    t.step(hand_off(1)); // the HandOff to the Shard queued behind it
    t.overtake();
    assert_eq!(t.next_local(), vec![]); // the HandOff: stashed
    assert!(!t.slot(1).unwrap().initialized);
    assert_eq!(
        t.pump(),
        vec![
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            obs(Observation::ShardUnhosted(shard(1))),
        ]
    );
    assert_eq!(t.r.hosted().count(), 0);
}

#[test]
fn legacy_hand_off_before_shard_initialized_is_answered_at_once_and_the_shard_keeps_running() {
    // Akka before 2.4.1 (§12 B1): HandOff for a shard in `startingShards` is answered with
    // ShardStopped by the region, and the starting Shard keeps running.
    let opts = ProtocolOptions {
        handoff_ignores_starting_shard: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.step(host_shard(1)); // ShardInitialized in flight
    t.step(begin_hand_off(1));
    assert_eq!(
        t.step(hand_off(1)),
        vec![send(coord(0), Msg::ShardStopped { shard: shard(1) })]
    );
    // The Shard initializes and stays: no ShardUnhosted, no hand-off.
    assert_eq!(t.pump(), vec![]);
    let slot = t.slot(1).unwrap();
    assert!(slot.initialized && !slot.handing_off && !slot.shard.stopping());
    // The coordinator, told the shard stopped, allocates it elsewhere: this region forwards
    // there while its own Shard of it still runs.
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    assert_eq!(
        t.from(
            coord(0),
            Msg::ShardHome {
                shard: shard(1),
                region: reg(2),
            }
        ),
        vec![send(raddr(2), Msg::User(env(1, 4, 1)))]
    );
    assert_eq!(t.r.home_of(shard(1)), Some(reg(2)));
    assert_eq!(t.r.hosted().count(), 1);
}

#[test]
fn with_handoff_during_handoff_answered_each_worker_gets_one_shard_stopped() {
    // The fix option of hazards/handoff-cut-by-hand-over.toml: a HandOff during a running
    // hand-off is answered when it ends, once per worker; the running hand-off's own worker,
    // sending again, is not answered twice.
    let opts = ProtocolOptions {
        handoff_during_handoff_answered: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    t.step(hand_off(1));
    t.next_local(); // HandOff at the Shard: entity 4's stop message queued
    for from in [coord(0), coord(2), coord(2)] {
        t.step(Input::Deliver {
            from,
            msg: Msg::HandOff { shard: shard(1) },
        });
    }
    let stopped: Vec<_> = sends(&t.pump())
        .into_iter()
        .filter(|(_, m)| matches!(m, Msg::ShardStopped { .. }))
        .map(|(to, _)| to)
        .collect();
    assert_eq!(stopped, vec![coord(0), coord(2)]);
}

/// Shard 1 hosted here with entity 4 (incarnation 0), handed off up to the point where the
/// Shard has sent ShardStopped and stopped, but its termination has not reached the region.
fn shard_stopping_after_hand_off(opts: ProtocolOptions) -> T {
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    t.step(hand_off(1));
    t.next_local(); // HandOff at the Shard: the stop message goes to entity 4
    t.next_local(); // entity 4 stops; its termination is in flight
    assert_eq!(
        t.next_local(),
        vec![
            stopped(4, StopReason::HandOff, 0),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            O::Cancel(shard_timer(1, 0, ShardTimer::HandOffStopTimeout)),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Local(Local::ShardTerminated {
                shard: shard(1),
                uid: 0,
            }),
        ]
    );
    t
}

#[test]
fn host_shard_while_the_old_shard_stops_starts_the_shard_when_it_has_terminated() {
    // PR akka#32976 (§12 B19, fixed): HostShard and the old Shard's Terminated reach the region
    // in no set order. While the old Shard still stops, the region remembers the HostShard and
    // neither starts nor acks.
    let mut t = shard_stopping_after_hand_off(ProtocolOptions::default());
    assert_eq!(t.step(host_shard(1)), vec![]);
    assert_eq!(t.slot(1).unwrap().host_pending, Some(coord(0)));
    // Terminated(old Shard): a new Shard starts and ShardStarted goes to the coordinator.
    assert_eq!(
        t.pump(),
        vec![
            obs(Observation::ShardHosted(shard(1))),
            send(coord(0), Msg::ShardStarted { shard: shard(1) }),
        ]
    );
    let slot = t.slot(1).unwrap();
    assert_eq!(slot.shard.uid(), 1);
    assert!(slot.initialized && !slot.handing_off && slot.host_pending.is_none());
    assert_eq!(
        t.req(env(1, 4, 2)),
        vec![started(4, 1, 1), delivered(env(1, 4, 2), 1)]
    );
}

#[test]
fn legacy_host_shard_while_the_old_shard_stops_is_acked_and_nothing_starts() {
    // Akka before PR akka#32976 (§12 B19): getShard finds the dying Shard, so nothing is
    // created, yet ShardStarted is sent at once.
    let opts = ProtocolOptions {
        host_shard_acked_while_stopping: true,
        ..ProtocolOptions::default()
    };
    let mut t = shard_stopping_after_hand_off(opts);
    assert_eq!(
        t.step(host_shard(1)),
        vec![send(coord(0), Msg::ShardStarted { shard: shard(1) })]
    );
    // The old Shard terminates and the region forgets it: the shard is hosted nowhere, though
    // the coordinator was told it started here.
    assert_eq!(t.pump(), vec![]);
    assert_eq!(t.r.hosted().count(), 0);
    assert_eq!(t.r.home_of(shard(1)), Some(reg(1)));
}

#[test]
fn passivate_stops_the_entity_buffers_in_the_shard_and_restarts_it_for_the_buffer() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![started(4, 1, 0), delivered(env(1, 4, 1), 0)]
    );
    assert_eq!(t.r.entity_incarnation(shard(1), EntityId(4)), Some(0));
    // §8 step 1: the entity sends Passivate to its Shard.
    assert_eq!(
        t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out)),
        vec![O::Local(Local::Passivate {
            shard: shard(1),
            uid: 0,
            entity: EntityId(4),
            inc: 0,
            ignores_stop: false,
        })]
    );
    // §8 step 2: the Shard marks it passivating and sends it the stop message, with the
    // passivation stop-timeout armed (akka#32439).
    let timed_out = shard_timer(1, 0, ShardTimer::PassivationTimedOut(EntityId(4)));
    assert_eq!(
        t.next_local(),
        vec![
            O::Local(Local::StopEntity {
                shard: shard(1),
                uid: 0,
                entity: EntityId(4),
                inc: 0,
                reason: StopReason::Passivation,
            }),
            O::Set(timed_out, ms(10_000)),
        ]
    );
    // A message sent meanwhile goes to the Shard...
    assert_eq!(
        t.step(Input::Request(env(2, 4, 1))),
        vec![to_shard(1, 0, ShardMsg::User(env(2, 4, 1)))]
    );
    t.next_local(); // the entity processes its stop message; its termination is in flight
                    // ...which buffers it while the entity passivates (§8 step 3).
    assert_eq!(t.next_local(), vec![]);
    let slot = t.slot(1).unwrap();
    assert_eq!(slot.shard.buffered(), 1);
    assert_eq!(
        slot.shard.entities().collect::<Vec<_>>(),
        vec![(EntityId(4), 0, EntityState::Passivating)]
    );
    // The entity terminates; with messages buffered, the Shard starts it again (a new
    // incarnation) and delivers them (§8 step 4).
    assert_eq!(
        t.pump(),
        vec![
            stopped(4, StopReason::Passivation, 0),
            O::Cancel(timed_out),
            started(4, 1, 1),
            delivered(env(2, 4, 1), 1),
        ]
    );
    assert_eq!(t.r.entity_incarnation(shard(1), EntityId(4)), Some(1));
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 0);
    // A late Passivate from the old incarnation: Akka's Shard `passivate` acts only when the
    // sender is the entity's current actor (SH `entities.entityState(id)` matched against
    // the sender's ActorRef): the new incarnation is not stopped.
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    assert_eq!(t.next_local(), vec![]);
    assert_eq!(
        t.slot(1).unwrap().shard.entities().collect::<Vec<_>>(),
        vec![(EntityId(4), 1, EntityState::Active)]
    );
}

#[test]
fn a_message_reaching_an_entity_after_its_stop_message_is_lost() {
    // §8 step 6: what is in the mailbox of an entity actor behind its stop message is lost
    // (dead letters): a message the Shard sent it before the passivation, but that reaches it
    // after the stop message, is dropped, not delivered.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    t.step(Input::Request(env(1, 4, 2)));
    t.next_local(); // at the Shard: to entity 4, queued
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    t.overtake();
    t.next_local(); // Passivate at the Shard: the stop message to entity 4, queued
    t.overtake();
    t.next_local(); // entity 4 processes its stop message first
    assert_eq!(
        t.next_local(),
        vec![dropped(env(1, 4, 2), DropReason::EntityStopped)]
    );
}

#[test]
fn start_entity_without_remember_entities_starts_the_entity_and_acks() {
    // `ShardRegion.StartEntity` is public API, also without remember-entities: the Shard
    // creates the entity (getOrCreateEntity) and acks the starter (SH `startEntity`).
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    let start = Msg::StartEntity {
        entity: EntityId(4),
        starter: reg(2),
        for_shard: shard(1),
    };
    assert_eq!(
        t.from(raddr(2), start),
        vec![
            started(4, 1, 0),
            send(
                raddr(2),
                Msg::StartEntityAck {
                    entity: EntityId(4),
                    shard: shard(1),
                    for_shard: shard(1),
                }
            ),
        ]
    );
}

#[test]
fn a_new_shard_arms_idle_passivation_which_passivates_an_idle_entity() {
    // Idle passivation is on by default (120 s, checked every 60 s, §9.1).
    let mut t = T::with(1, true, Settings::default(), ProtocolOptions::default()).registered();
    let tick = shard_timer(1, 0, ShardTimer::PassivateIdleTick);
    assert_eq!(
        t.h(host_shard(1)),
        vec![
            O::Set(tick, ms(60_000)),
            obs(Observation::ShardHosted(shard(1))),
            send(coord(0), Msg::ShardStarted { shard: shard(1) }),
        ]
    );
    t.req(env(1, 4, 1));
    // Not idle long enough yet: only the tick is re-armed.
    t.now = Instant::ZERO + ms(60_000);
    assert_eq!(t.h(Input::Timeout(tick)), vec![O::Set(tick, ms(60_000))]);
    // Idle for the timeout: the Shard passivates it with the hand-off stop message (§8).
    t.now = Instant::ZERO + ms(120_000);
    let timed_out = shard_timer(1, 0, ShardTimer::PassivationTimedOut(EntityId(4)));
    assert_eq!(
        t.h(Input::Timeout(tick)),
        vec![
            O::Set(timed_out, ms(10_000)),
            O::Set(tick, ms(60_000)),
            stopped(4, StopReason::Passivation, 0),
            O::Cancel(timed_out),
        ]
    );
    assert_eq!(t.slot(1).unwrap().shard.entity_ids().count(), 0);
    // A timer of a Shard actor that is gone never reaches its successor (uid).
    let stale = shard_timer(1, 7, ShardTimer::PassivateIdleTick);
    assert_eq!(t.h(Input::Timeout(stale)), vec![]);
}

// ---- proxy mode (§5.6) ----

#[test]
fn proxy_ignores_host_shard() {
    let mut t = T::with(5, false, quiet(), ProtocolOptions::default()).registered();
    assert_eq!(t.from(coord(0), Msg::HostShard { shard: shard(1) }), vec![]);
    assert_eq!(t.r.hosted().count(), 0);
    assert_eq!(t.r.home_of(shard(1)), None);
}

#[test]
fn proxy_told_it_is_the_home_drops_the_buffer() {
    let mut t = T::with(5, false, quiet(), ProtocolOptions::default()).registered();
    t.req(env(1, 1, 1));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(5),
        },
    );
    assert_eq!(out, vec![dropped(env(1, 1, 1), DropReason::ProxyHostShard)]);
    assert_eq!(t.r.hosted().count(), 0);
}

#[test]
fn proxy_routes_and_flushes_like_a_region() {
    let mut t = T::with(5, false, quiet(), ProtocolOptions::default()).registered();
    assert_eq!(
        t.req(env(1, 1, 1)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    assert_eq!(
        t.from(
            coord(0),
            Msg::ShardHome {
                shard: shard(1),
                region: reg(2),
            }
        ),
        vec![send(raddr(2), Msg::User(env(1, 1, 1)))]
    );
}

// ---- dead letters and mutations ----

#[test]
fn coordinator_bound_messages_reaching_a_region_are_ignored() {
    let mut t = T::new(1).registered();
    for m in [
        Msg::Register { region: reg(2) },
        Msg::RegisterProxy { proxy: reg(2) },
        Msg::GetShardHome { shard: shard(1) },
        Msg::ShardStarted { shard: shard(1) },
        Msg::BeginHandOffAck {
            shard: shard(1),
            region: reg(2),
        },
        Msg::ShardStopped { shard: shard(1) },
    ] {
        assert_eq!(t.from(raddr(2), m), vec![], "{m:?}");
    }
}

#[test]
fn mutation_buffer_out_of_order_flushes_newest_first() {
    let opts = ProtocolOptions {
        mutation: Mutation::BufferOutOfOrder,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.req(env(1, 1, 1));
    t.req(env(1, 1, 2));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(
        sends(&out),
        vec![
            (raddr(2), Msg::User(env(1, 1, 2))),
            (raddr(2), Msg::User(env(1, 1, 1))),
        ]
    );
}

#[test]
fn mutation_buffer_duplicate_delivers_the_first_twice() {
    let opts = ProtocolOptions {
        mutation: Mutation::BufferDuplicate,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.req(env(1, 1, 1));
    t.req(env(1, 1, 2));
    let out = t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(
        sends(&out),
        vec![
            (raddr(2), Msg::User(env(1, 1, 1))),
            (raddr(2), Msg::User(env(1, 1, 2))),
            (raddr(2), Msg::User(env(1, 1, 1))),
        ]
    );
}

// ---- graceful shutdown (§5.5, SR:1002-1033, 1171-1175) ----

fn graceful(t: &mut T) -> Vec<O> {
    let mut got = t.run(|r, _, out| r.graceful_shutdown(out));
    got.retain(|o| !matches!(o, O::Local(_)));
    got.extend(t.pump());
    got
}

fn region_stops(reason: &'static str) -> Vec<O> {
    vec![
        O::Cancel(Timer::RegionRetry),
        O::Cancel(Timer::RegisterRetry),
        O::Cancel(Timer::GracefulShutdownTimeout),
        send(coord(0), Msg::RegionStopped { region: reg(1) }),
        O::Stop(reason),
    ]
}

#[test]
fn graceful_shutdown_without_shards_stops_at_once_and_tells_the_coordinator() {
    let mut t = T::new(1).registered();
    let mut want = vec![
        O::Set(Timer::GracefulShutdownTimeout, ms(9_000)),
        send(coord(0), Msg::GracefulShutdownReq { region: reg(1) }),
    ];
    want.extend(region_stops("graceful shutdown complete"));
    assert_eq!(graceful(&mut t), want);
    assert!(t.r.is_stopped());
}

#[test]
fn graceful_shutdown_completes_when_the_last_shard_is_handed_off() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    assert_eq!(
        graceful(&mut t),
        vec![
            O::Set(Timer::GracefulShutdownTimeout, ms(9_000)),
            send(coord(0), Msg::GracefulShutdownReq { region: reg(1) }),
        ]
    );
    assert!(t.r.shutting_down() && !t.r.is_stopped());
    // The coordinator hands the shard off; the region keeps working meanwhile.
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    let out = t.from(coord(0), Msg::HandOff { shard: shard(1) });
    let tail = out[out.len() - 5..].to_vec();
    assert_eq!(tail, region_stops("graceful shutdown complete"), "{out:?}");
    assert!(out.contains(&send(coord(0), Msg::ShardStopped { shard: shard(1) })));
    assert!(t.r.is_stopped());
}

#[test]
fn host_shard_while_shutting_down_is_ignored_and_the_request_repeated() {
    // PR akka#29707 (§12 B16): the coordinator missed the request; tell it again.
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    graceful(&mut t);
    assert_eq!(
        t.from(coord(0), Msg::HostShard { shard: shard(2) }),
        vec![send(coord(0), Msg::GracefulShutdownReq { region: reg(1) })]
    );
    assert!(t.slot(2).is_none());
    // Pre-fix: the region hosts it and acknowledges, so it cannot finish shutting down.
    let opts = ProtocolOptions {
        host_shard_accepted_while_shutting_down: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    graceful(&mut t);
    let out = t.from(coord(0), Msg::HostShard { shard: shard(2) });
    assert!(out.contains(&send(coord(0), Msg::ShardStarted { shard: shard(2) })));
}

#[test]
fn retry_tick_resends_the_request_to_the_candidates_even_without_a_coordinator() {
    // The fix of akka#26214 (§12 B15): to the coordinator selection on every Retry tick.
    let mut t = T::new(1);
    t.h(Input::MembersChanged(vec![
        member(0, 1, MemberStatus::Up, true),
        member(1, 2, MemberStatus::Up, true),
    ]));
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    graceful(&mut t);
    assert_eq!(t.r.coordinator(), None);
    let out = t.h(Input::Timeout(Timer::RegionRetry));
    assert!(
        out.contains(&send(coord(0), Msg::GracefulShutdownReq { region: reg(1) })),
        "{out:?}"
    );
    // Pre-fix: only to a coordinator it knows, so nothing goes out here.
    let opts = ProtocolOptions {
        graceful_shutdown_req_not_retried: true,
        ..ProtocolOptions::default()
    };
    let mut t = T::with(1, true, quiet(), opts);
    t.h(Input::MembersChanged(vec![
        member(0, 1, MemberStatus::Up, true),
        member(1, 2, MemberStatus::Up, true),
    ]));
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    graceful(&mut t);
    let out = t.h(Input::Timeout(Timer::RegionRetry));
    assert!(
        !out.iter()
            .any(|o| matches!(o, O::Send(_, Msg::GracefulShutdownReq { .. }))),
        "{out:?}"
    );
}

#[test]
fn graceful_shutdown_timeout_stops_the_region_with_what_is_left() {
    let mut t = T::new(1).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    t.req(env(1, 4, 1));
    t.req(env(1, 2, 1)); // shard 2: no home yet, buffered
    graceful(&mut t);
    let out = t.h(Input::Timeout(Timer::GracefulShutdownTimeout));
    assert!(
        out.contains(&stopped(4, StopReason::RegionStopped, 0)),
        "{out:?}"
    );
    assert!(out.contains(&dropped(env(1, 2, 1), DropReason::RegionStopped)));
    assert_eq!(out.last(), Some(&O::Stop("graceful shutdown timed out")));
    assert!(t.r.is_stopped());
}
