//! Unit tests of the sans-IO ShardRegion (akka-sharding.md §2, §5, §7).
//!
//! Every test drives one `Region` through `handle` and asserts on the exact outputs appended.

mod common;
use common::*;

use shardsim::ids::{EntityId, NodeId, NodeInc, RegionRef, SenderId, ShardId};
use shardsim::protocol::entity::{RecordingFactory, ShardExtractor};
use shardsim::protocol::region::{Region, RegionConfig};
use shardsim::protocol::settings::{Mutation, ProtocolOptions, Settings};
use shardsim::protocol::{
    Addr, DropReason, Envelope, Input, Member, MemberStatus, Msg, Observation, Outbox, StopReason,
    Timer,
};
use shardsim::time::{Duration, Instant};
use std::sync::Arc;

// ---- helpers ----

/// Shard = entity % shards: easy to reason about.
struct ModExtractor(u32);

impl ShardExtractor for ModExtractor {
    fn shard_id(&self, entity: EntityId) -> ShardId {
        ShardId(entity.0 % self.0)
    }
}

const SHARDS: u32 = 3;

fn reg(n: u32) -> RegionRef {
    RegionRef {
        node: NodeId(n),
        inc: NodeInc(1),
    }
}

fn coord(n: u32) -> Addr {
    Addr::coordinator(reg(n))
}

fn raddr(n: u32) -> Addr {
    Addr::region(reg(n))
}

fn shard(s: u32) -> ShardId {
    ShardId(s)
}

fn env(sender: u32, entity: u32, seq: u64) -> Envelope {
    Envelope {
        sender: SenderId(sender),
        entity: EntityId(entity),
        seq,
    }
}

fn member(n: u32, up_number: u32, status: MemberStatus, hosting: bool) -> Member {
    Member {
        node: NodeId(n),
        inc: NodeInc(1),
        up_number,
        status,
        hosting,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn send(to: Addr, msg: Msg) -> O {
    O::Send(to, msg)
}

fn obs(o: Observation) -> O {
    O::Obs(o)
}

fn delivered(e: Envelope) -> O {
    obs(Observation::Delivered(e))
}

fn dropped(e: Envelope, reason: DropReason) -> O {
    obs(Observation::Dropped { env: e, reason })
}

fn started(entity: u32, s: u32) -> O {
    obs(Observation::EntityStarted {
        entity: EntityId(entity),
        shard: ShardId(s),
    })
}

fn stopped(entity: u32, reason: StopReason) -> O {
    obs(Observation::EntityStopped {
        entity: EntityId(entity),
        reason,
    })
}

/// Sends only, in order.
fn sends(out: &[O]) -> Vec<(Addr, Msg)> {
    out.iter()
        .filter_map(|o| match o {
            O::Send(a, m) => Some((*a, *m)),
            _ => None,
        })
        .collect()
}

struct T {
    r: Region,
    now: Instant,
}

impl T {
    fn with(me: u32, hosting: bool, settings: Settings, options: ProtocolOptions) -> T {
        let cfg = RegionConfig {
            settings,
            options,
            extractor: Arc::new(ModExtractor(SHARDS)),
            factory: Arc::new(RecordingFactory),
        };
        T {
            r: Region::new(reg(me), hosting, Arc::new(cfg)),
            now: Instant::ZERO,
        }
    }

    /// A hosting region on node `me` with default settings.
    fn new(me: u32) -> T {
        T::with(me, true, Settings::default(), ProtocolOptions::default())
    }

    fn h(&mut self, input: Input) -> Vec<O> {
        let mut out = Outbox::default();
        self.r.handle(self.now, input, &mut out);
        out.0.iter().map(norm).filter(not_persist_timer).collect()
    }

    fn from(&mut self, from: Addr, msg: Msg) -> Vec<O> {
        self.h(Input::Deliver { from, msg })
    }

    fn req(&mut self, e: Envelope) -> Vec<O> {
        self.h(Input::Request(e))
    }

    /// Member view with node 0 as the only (oldest, Up, hosting) coordinator candidate, plus this
    /// region's own node, then RegisterAck from node 0's coordinator.
    fn registered(mut self) -> T {
        let me = self.r.me().node.0;
        let mut members = vec![member(0, 1, MemberStatus::Up, true)];
        if me != 0 {
            members.push(member(me, 2, MemberStatus::Up, self.r.hosting()));
        }
        self.h(Input::MembersChanged(members));
        self.from(coord(0), Msg::RegisterAck);
        self
    }
}

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
    let mut t = T::with(5, false, Settings::default(), ProtocolOptions::default());
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
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(1))),
            started(4, 1),
            delivered(msgs[0]),
            started(7, 1),
            delivered(msgs[1]),
            delivered(msgs[2]),
        ]
    );
    // A later message to a live entity: delivered directly, no new start.
    assert_eq!(t.req(env(1, 4, 3)), vec![delivered(env(1, 4, 3))]);
    // A new entity of the hosted shard starts on its first message.
    assert_eq!(
        t.req(env(1, 10, 1)),
        vec![started(10, 1), delivered(env(1, 10, 1))]
    );
    let hosted: Vec<(ShardId, Vec<EntityId>)> =
        t.r.hosted()
            .map(|(s, sh)| (s, sh.entity_ids().collect()))
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
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(2))),
            started(2, 2),
            delivered(env(1, 2, 1)),
            started(5, 2),
            delivered(env(1, 5, 1)),
            send(coord(0), Msg::ShardStarted { shard: shard(2) }),
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
    assert_eq!(
        t.req(env(1, 3, 1)),
        vec![started(3, 0), delivered(env(1, 3, 1))]
    );
}

#[test]
fn buffer_size_limit_drops_with_buffer_full() {
    let settings = Settings {
        buffer_size: 2,
        ..Settings::default()
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
        ..Settings::default()
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
    let mut t = T::with(5, false, Settings::default(), ProtocolOptions::default()).registered();
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
    let mut t = T::with(1, true, Settings::default(), via_owner()).registered();
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
    let mut t = T::with(1, true, Settings::default(), via_owner()).registered();
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
    t.req(env(1, 4, 1));
    t.req(env(1, 1, 1));
    t.req(env(1, 2, 1)); // shard 2: unknown home, buffered, must survive the hand-off of 1
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    // Buffered at the owner between BeginHandOff and HandOff.
    assert_eq!(
        t.req(env(1, 4, 2)),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    t.req(env(2, 7, 1));
    let out = t.from(coord(0), Msg::HandOff { shard: shard(1) });
    assert_eq!(
        out,
        vec![
            dropped(env(1, 4, 2), DropReason::HandOffBuffer),
            dropped(env(2, 7, 1), DropReason::HandOffBuffer),
            stopped(1, StopReason::HandOff),
            stopped(4, StopReason::HandOff),
            obs(Observation::ShardUnhosted(shard(1))),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
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
    assert_eq!(
        out,
        vec![
            obs(Observation::ShardHosted(shard(1))),
            started(4, 1),
            delivered(env(1, 4, 2)),
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
    assert_eq!(
        out,
        vec![
            obs(Observation::RegionRestarted),
            stopped(3, StopReason::RegionRestart),
            obs(Observation::ShardUnhosted(shard(0))),
            stopped(1, StopReason::RegionRestart),
            stopped(4, StopReason::RegionRestart),
            obs(Observation::ShardUnhosted(shard(1))),
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

// ---- proxy mode (§5.6) ----

#[test]
fn proxy_ignores_host_shard() {
    let mut t = T::with(5, false, Settings::default(), ProtocolOptions::default()).registered();
    assert_eq!(t.from(coord(0), Msg::HostShard { shard: shard(1) }), vec![]);
    assert_eq!(t.r.hosted().count(), 0);
    assert_eq!(t.r.home_of(shard(1)), None);
}

#[test]
fn proxy_told_it_is_the_home_drops_the_buffer() {
    let mut t = T::with(5, false, Settings::default(), ProtocolOptions::default()).registered();
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
    let mut t = T::with(5, false, Settings::default(), ProtocolOptions::default()).registered();
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
    let mut t = T::with(1, true, Settings::default(), opts).registered();
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
    let mut t = T::with(1, true, Settings::default(), opts).registered();
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
