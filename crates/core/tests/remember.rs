//! Remember-entities in the Shard and its region (docs/akka-reference.md §2.6, §6.1-§6.4, §8, §12.5),
//! pinned against Akka's code.
//!
//! The store is not simulated: when a Shard emits `O::Store(StoreRequest)`, the test answers
//! with `Region::store_reply` itself. Everything else is the harness of `tests/region.rs`
//! (`common::harness`): zero local delay, local messages queued and delivered by the test.
//!
//! Citations: `SH:n`, `SR:n` are lines of `Shard.scala` and `ShardRegion.scala` at akka
//! `9892c5e415`, the snapshot of docs/akka-reference.md (§0); `RES:n` and `DDS:n` are lines of
//! `internal/RememberEntityStarter.scala` and `internal/DDataRememberEntitiesShardStore.scala`
//! (the same at that snapshot and at the mirror's HEAD `2b829515c4`); `Stash.scala:n` is
//! `akka-actor/src/main/scala/akka/actor/Stash.scala` at the snapshot. A test that shows the
//! model disagreeing with Akka's code is `#[ignore]`d with the reason, and asserts Akka's
//! behaviour.

mod common;
use common::harness::*;
use common::*;

use shardsim_core::ids::EntityId;
use shardsim_core::protocol::settings::{ProtocolOptions, Settings};
use shardsim_core::protocol::shard::EntityState;
use shardsim_core::protocol::{
    DropReason, Input, Local, Msg, Observation, ShardFailure, ShardMsg, ShardTimer, StopReason,
    StoreOp, StoreReply, StoreReplyKind, StoreRequest, Timer,
};

// ---- helpers ----

/// Akka's defaults with remember-entities on (idle passivation off, as remember-entities
/// turns it off anyway, §6.4).
fn remember() -> Settings {
    Settings {
        remember_entities: true,
        ..quiet()
    }
}

/// `waiting-for-state-timeout`, `updating-state-timeout`, `entity-restart-backoff`,
/// `shard-failure-backoff`, `retry-interval` (§9.1).
const LOAD_TIMEOUT_MS: u64 = 2_000;
const WRITE_TIMEOUT_MS: u64 = 5_000;
const RESTART_BACKOFF_MS: u64 = 10_000;
const SHARD_FAILURE_BACKOFF_MS: u64 = 10_000;
const RETRY_MS: u64 = 2_000;
const HANDOFF_STOP_TIMEOUT_MS: u64 = 55_000;

fn host_shard(s: u32) -> Input {
    Input::Deliver {
        from: coord(0),
        msg: Msg::HostShard { shard: shard(s) },
    }
}

fn hand_off(s: u32) -> Input {
    Input::Deliver {
        from: coord(0),
        msg: Msg::HandOff { shard: shard(s) },
    }
}

fn to_shard(s: u32, uid: u32, msg: ShardMsg) -> O {
    O::Local(Local::ToShard {
        shard: shard(s),
        uid,
        msg,
    })
}

fn store(s: u32, uid: u32, instance: u32, op: StoreOp) -> O {
    O::Store(StoreRequest {
        shard: shard(s),
        uid,
        instance,
        op,
    })
}

fn get_entities(s: u32, uid: u32, instance: u32) -> O {
    store(s, uid, instance, StoreOp::GetEntities)
}

fn ids(v: &[u32]) -> Vec<EntityId> {
    v.iter().map(|e| EntityId(*e)).collect()
}

fn update(s: u32, uid: u32, instance: u32, started: &[u32], stopped: &[u32]) -> O {
    store(
        s,
        uid,
        instance,
        StoreOp::Update {
            started: ids(started),
            stopped: ids(stopped),
        },
    )
}

/// The Shard's `RememberEntityTimeout` timer.
fn ret(s: u32, uid: u32) -> Timer {
    shard_timer(s, uid, ShardTimer::RememberEntityTimeout)
}

fn rte(s: u32, uid: u32, e: u32) -> Timer {
    shard_timer(s, uid, ShardTimer::RestartTerminatedEntity(EntityId(e)))
}

fn pto(s: u32, uid: u32, e: u32) -> Timer {
    shard_timer(s, uid, ShardTimer::PassivationTimedOut(EntityId(e)))
}

fn failed(s: u32, cause: ShardFailure) -> O {
    obs(Observation::ShardFailed {
        shard: shard(s),
        cause,
    })
}

fn ack(entity: u32, s: u32, for_shard: u32) -> Msg {
    Msg::StartEntityAck {
        entity: EntityId(entity),
        shard: shard(s),
        for_shard: shard(for_shard),
    }
}

fn start_entity(entity: u32, starter: u32, for_shard: u32) -> Msg {
    Msg::StartEntity {
        entity: EntityId(entity),
        starter: reg(starter),
        for_shard: shard(for_shard),
    }
}

/// The store answers Shard actor `uid` of `s` (instance `instance`); every local message
/// that causes is delivered. The non-local outputs, in order.
fn reply(t: &mut T, s: u32, uid: u32, instance: u32, kind: StoreReplyKind) -> Vec<O> {
    let reply = StoreReply {
        shard: shard(s),
        uid,
        instance,
        kind,
    };
    let mut got = t.run(|r, now, out| r.store_reply(now, reply, out));
    got.retain(|o| !matches!(o, O::Local(_)));
    got.extend(t.pump());
    got
}

fn done(t: &mut T, s: u32, uid: u32, instance: u32) -> Vec<O> {
    reply(t, s, uid, instance, StoreReplyKind::UpdateDone)
}

fn fire(t: &mut T, timer: Timer) -> Vec<O> {
    t.h(Input::Timeout(timer))
}

/// The entity states of shard `s` here, by entity.
fn states(t: &T, s: u32) -> Vec<(EntityId, EntityState)> {
    t.slot(s).unwrap().shard.entity_states().collect()
}

fn shard_failed(out: &[O]) -> Option<ShardFailure> {
    out.iter().find_map(|o| match o {
        O::Obs(Observation::ShardFailed { cause, .. }) => Some(*cause),
        _ => None,
    })
}

/// A registered region on node 1 (coordinator on node 0) hosting shard 1 with remember
/// entities on, its Shard (uid 0) loaded with no remembered entity and initialised.
fn loaded(opts: ProtocolOptions) -> T {
    let mut t = T::with(1, true, remember(), opts).registered();
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    assert_eq!(
        reply(&mut t, 1, 0, 0, StoreReplyKind::Remembered(vec![])),
        vec![O::Cancel(ret(1, 0))]
    );
    assert!(t.slot(1).unwrap().initialized);
    t
}

/// Entity `e` of shard 1 started through the write path (a message, then `UpdateDone`); its
/// incarnation.
fn started_by_message(t: &mut T, e: u32) -> u64 {
    t.req(env(0, e, 0));
    done(t, 1, 0, t.slot(1).unwrap().shard.instance());
    t.r.entity_incarnation(shard(1), EntityId(e)).unwrap()
}

// ---- 1. load (§6.1, §2.6) ----

#[test]
fn load_sends_get_entities_stashes_then_initializes_and_starts_each_remembered_id() {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    // HostShard creates the Shard; its initialisation (InitDone to itself) is in flight.
    assert_eq!(
        t.step(host_shard(1)),
        vec![
            to_shard(1, 0, ShardMsg::InitDone),
            obs(Observation::ShardHosted(shard(1))),
            send(coord(0), Msg::ShardStarted { shard: shard(1) }),
        ]
    );
    // While it starts the region buffers (the Shard is in `startingShards`, SR:1381).
    assert_eq!(t.step(Input::Request(env(1, 4, 1))), vec![]);
    assert_eq!(t.r.buffered_total(), 1);
    // §6.1, SH:555-568: GetEntities to the store, with `waiting-for-state-timeout`.
    assert_eq!(
        t.next_local(),
        vec![
            get_entities(1, 0, 0),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS))
        ]
    );
    // SH:578-585: anything else the Shard receives while loading is stashed.
    let direct = env(2, 7, 1);
    assert_eq!(
        t.run(|r, now, out| r.local(
            now,
            Local::ToShard {
                shard: shard(1),
                uid: 0,
                msg: ShardMsg::User(direct),
            },
            out
        )),
        vec![]
    );
    let slot = t.slot(1).unwrap();
    assert!(!slot.initialized);
    assert_eq!(
        slot.shard.buffered_messages().collect::<Vec<_>>(),
        vec![direct]
    );
    assert_eq!(slot.shard.entity_states().count(), 0);
    // SH:571-573, 597-612: RememberedEntities → the timer is cancelled, every id is
    // RememberedButNotCreated and goes to the starter (StartEntities), ShardInitialized goes
    // to the region, then the stash is replayed (here: a write for the unknown entity 7).
    assert_eq!(
        t.run(|r, now, out| r.store_reply(
            now,
            StoreReply {
                shard: shard(1),
                uid: 0,
                instance: 0,
                kind: StoreReplyKind::Remembered(ids(&[4, 10])),
            },
            out
        )),
        vec![
            O::Cancel(ret(1, 0)),
            O::Local(Local::StartRemembered {
                shard: shard(1),
                entity: EntityId(4),
            }),
            O::Local(Local::StartRemembered {
                shard: shard(1),
                entity: EntityId(10),
            }),
            O::Local(Local::ShardInitialized {
                shard: shard(1),
                uid: 0,
            }),
            update(1, 0, 0, &[7], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(4), EntityState::RememberedButNotCreated),
            (EntityId(7), EntityState::RememberingStart),
            (EntityId(10), EntityState::RememberedButNotCreated),
        ]
    );
}

/// Shard 1 loaded with remembered `ids`: the `StartRemembered` locals and `ShardInitialized`
/// are queued, not delivered.
fn loading_done(ids_: &[u32]) -> T {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    t.next_local(); // InitDone: GetEntities
    t.run(|r, now, out| {
        r.store_reply(
            now,
            StoreReply {
                shard: shard(1),
                uid: 0,
                instance: 0,
                kind: StoreReplyKind::Remembered(ids(ids_)),
            },
            out,
        )
    });
    t
}

#[test]
fn starter_routes_start_entity_to_the_local_shard_which_acks_and_the_ack_ends_the_retry() {
    let mut t = loading_done(&[4, 10]);
    // Akka's starter is two actors away (RememberEntityStarterManager, RememberEntityStarter),
    // so ShardInitialized normally reaches the region before the starter's StartEntity: deliver
    // it first.
    assert!(matches!(t.overtake(), Local::ShardInitialized { .. }));
    assert_eq!(t.next_local(), vec![]);
    // RES:148-152, 180-185: StartEntity for each id through the region, the retry timer armed;
    // the home is this region, so the region hands it to its Shard.
    assert_eq!(
        t.next_local(),
        vec![
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            to_shard(
                1,
                0,
                ShardMsg::StartEntity {
                    entity: EntityId(4),
                    starter: reg(1),
                    for_shard: shard(1),
                }
            ),
        ]
    );
    // SH:821-826: RememberedButNotCreated → the entity is created and StartEntityAck goes to
    // the starter.
    assert_eq!(
        t.pump(),
        vec![
            started(4, 1, 0),
            send(raddr(1), ack(4, 1, 1)),
            started(10, 1, 1),
            send(raddr(1), ack(10, 1, 1)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(4), EntityState::Active),
            (EntityId(10), EntityState::Active),
        ]
    );
    // RES:160-170: each ack clears its id; with none left the starter stops (its retry timer
    // with it).
    assert_eq!(t.from(raddr(1), ack(4, 1, 1)), vec![]);
    assert_eq!(
        t.from(raddr(1), ack(10, 1, 1)),
        vec![O::Cancel(Timer::StarterRetry(shard(1)))]
    );
    // A duplicate ack, or the retry timer firing late, does nothing.
    assert_eq!(t.from(raddr(1), ack(10, 1, 1)), vec![]);
    assert_eq!(fire(&mut t, Timer::StarterRetry(shard(1))), vec![]);
}

#[test]
fn unacked_start_entity_is_resent_on_starter_retry() {
    let mut t = loading_done(&[4, 10]);
    t.pump();
    // RES:152, 187-196: every `retry-interval` StartEntity is sent again for each id not acked
    // (the acks of the first round, buffered until ShardInitialized, have not arrived); the
    // Shard, with both Active, acks again without a new start (SH:815-818).
    assert_eq!(
        fire(&mut t, Timer::StarterRetry(shard(1))),
        vec![
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            send(raddr(1), ack(4, 1, 1)),
            send(raddr(1), ack(10, 1, 1)),
        ]
    );
    // Only 4's ack arrives: the next retry resends for 10 alone; the Shard, with 10 Active,
    // acks again without a new start (SH:815-818).
    t.from(raddr(1), ack(4, 1, 1));
    assert_eq!(
        fire(&mut t, Timer::StarterRetry(shard(1))),
        vec![
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            send(raddr(1), ack(10, 1, 1)),
        ]
    );
    assert_eq!(
        t.from(raddr(1), ack(10, 1, 1)),
        vec![O::Cancel(Timer::StarterRetry(shard(1)))]
    );
}

#[test]
fn start_entity_for_a_starting_local_shard_is_buffered_until_shard_initialized() {
    let mut t = loading_done(&[4]);
    // With zero local delay the starter's StartEntity (StartRemembered) reaches the region
    // before ShardInitialized: Akka buffers it in the region, so the entity starts at once.
    assert_eq!(
        t.pump(),
        vec![
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            started(4, 1, 0),
            send(raddr(1), ack(4, 1, 1)),
        ]
    );
}

// ---- 2. load timeout (§6.1, SR:1050-1093) ----

#[test]
fn load_timeout_stops_the_shard_and_the_region_restarts_it_after_the_backoff() {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    // InitDone: GetEntities. A message meanwhile is buffered in the region.
    t.next_local();
    assert_eq!(t.req(env(1, 4, 1)), vec![]);
    // SH:574-575, 588-595: the load timed out → context.stop(self); SR:1078-1086: the region
    // sees it terminate while not handing off → RestartShard after shard-failure-backoff.
    assert_eq!(
        fire(&mut t, ret(1, 0)),
        vec![
            obs(Observation::ShardLoadFailed(shard(1))),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Cancel(ret(1, 0)),
            O::Set(Timer::RestartShard(shard(1)), ms(SHARD_FAILURE_BACKOFF_MS)),
        ]
    );
    assert!(t.slot(1).is_none());
    assert_eq!(t.r.buffered_total(), 1);
    // SR:1351-1355: RestartShard with this region still the home → getShard: a new Shard actor
    // (uid 1), which loads again.
    assert_eq!(
        fire(&mut t, Timer::RestartShard(shard(1))),
        vec![
            obs(Observation::ShardHosted(shard(1))),
            get_entities(1, 1, 0),
            O::Set(ret(1, 1), ms(LOAD_TIMEOUT_MS)),
        ]
    );
    // Loaded: the region's buffer reaches it (a write for entity 4).
    assert_eq!(
        reply(&mut t, 1, 1, 0, StoreReplyKind::Remembered(vec![])),
        vec![
            O::Cancel(ret(1, 1)),
            update(1, 1, 0, &[4], &[]),
            O::Set(ret(1, 1), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    // The old actor's late timer is ignored (uid).
    assert_eq!(fire(&mut t, ret(1, 0)), vec![]);
}

#[test]
fn host_shard_while_a_failed_shard_stops_starts_the_shard_when_it_has_terminated() {
    // The fix of §12 B19 (PR akka#32976) for a Shard that stops without a hand-off (its load
    // timed out): a HostShard that comes before its termination is held, and the new Shard
    // starts when the old one has terminated, acked then, with no RestartShard backoff.
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    t.next_local();
    assert_eq!(t.req(env(1, 4, 1)), vec![]);
    t.step(Input::Timeout(ret(1, 0))); // the Shard stops; its termination is in flight
    assert!(!t.slot(1).unwrap().handing_off);
    assert_eq!(t.step(host_shard(1)), vec![]);
    assert_eq!(t.slot(1).unwrap().host_pending, Some(coord(0)));
    assert_eq!(t.r.buffered_total(), 1);
    assert_eq!(
        t.pump(),
        vec![
            obs(Observation::ShardHosted(shard(1))),
            send(coord(0), Msg::ShardStarted { shard: shard(1) }),
            get_entities(1, 1, 0),
            O::Set(ret(1, 1), ms(LOAD_TIMEOUT_MS)),
        ]
    );
    assert_eq!(t.r.buffered_total(), 1); // until the new Shard has loaded
}

#[test]
fn restart_shard_starts_nothing_when_this_region_is_no_longer_the_home() {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    t.next_local();
    fire(&mut t, ret(1, 0));
    // The home is forgotten (BeginHandOff): RestartShard asks the coordinator (SR:1356-1360).
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    assert_eq!(
        fire(&mut t, Timer::RestartShard(shard(1))),
        vec![send(coord(0), Msg::GetShardHome { shard: shard(1) })]
    );
    // The home is another region: nothing (SR:1352-1354).
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(1),
            region: reg(2),
        },
    );
    assert_eq!(fire(&mut t, Timer::RestartShard(shard(1))), vec![]);
    assert!(t.slot(1).is_none());
}

#[test]
fn store_stopped_while_loading_stops_the_shard_for_the_region_to_restart() {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    t.next_local();
    let mut out = reply(&mut t, 1, 0, 0, StoreReplyKind::StoreStopped);
    out.extend(fire(&mut t, ret(1, 0)));
    assert_eq!(shard_failed(&out), None);
    assert!(out.contains(&O::Set(
        Timer::RestartShard(shard(1)),
        ms(SHARD_FAILURE_BACKOFF_MS)
    )));
    assert!(t.slot(1).is_none());
}

#[test]
fn store_stopped_while_loading_alone_stops_the_shard() {
    // SH awaitingRememberedEntities: the store's termination while loading stops the Shard at
    // once, without waiting for the load timeout.
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.step(host_shard(1));
    t.next_local();
    assert_eq!(
        reply(&mut t, 1, 0, 0, StoreReplyKind::StoreStopped),
        vec![
            obs(Observation::ShardLoadFailed(shard(1))),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Cancel(ret(1, 0)),
            O::Set(Timer::RestartShard(shard(1)), ms(SHARD_FAILURE_BACKOFF_MS)),
        ]
    );
    assert!(t.slot(1).is_none());
}

// ---- 3. write path (§6.3, §6.4) ----

#[test]
fn unknown_entity_is_buffered_written_batched_then_created_with_its_buffer_in_order() {
    let mut t = loaded(ProtocolOptions::default());
    // SH:1113, 1132-1143 (NoState, remember on, no write in flight): buffer, RememberingStart,
    // Update(started = {4}) with updating-state-timeout (SH:643-667).
    assert_eq!(
        t.req(env(1, 4, 1)),
        vec![
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![(EntityId(4), EntityState::RememberingStart)]
    );
    // A write is in flight: entity 7 joins the next batch (SH:1121-1131), and another
    // message for 4 is buffered behind the first (SH:1102-1103).
    assert_eq!(t.req(env(1, 7, 1)), vec![]);
    assert_eq!(t.req(env(2, 4, 2)), vec![]);
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 3);
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(4), EntityState::RememberingStart),
            (EntityId(7), EntityState::RememberingStart),
        ]
    );
    // SH:673-684, 723-762: UpdateDone → timer cancelled, 4 created and its buffer sent in
    // order, then the pending start of 7 written.
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 0),
            update(1, 0, 0, &[7], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
            delivered(env(1, 4, 1), 0),
            delivered(env(2, 4, 2), 0),
        ]
    );
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(7, 1, 1),
            delivered(env(1, 7, 1), 1),
        ]
    );
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 0);
    // Nothing pending: no further write; an Active entity gets its messages directly.
    assert_eq!(t.req(env(1, 4, 3)), vec![delivered(env(1, 4, 3), 0)]);
    // A stray UpdateDone with no write in flight is ignored.
    assert_eq!(done(&mut t, 1, 0, 0), vec![]);
}

// ---- 4. passivation with remember-entities (§8 step 4, §12 B30) ----

/// Entity 4 (incarnation 0) passivating; a message for it (`env(2, 4, 1)`) arrived meanwhile
/// and its stop is being written: the outputs of its termination.
fn passivated_with_buffer(t: &mut T) -> Vec<O> {
    let inc = started_by_message(t, 4);
    assert_eq!(inc, 0);
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    // §8 step 2 (SH:983-1005): Passivating, stop message, PassivationTimedOut.
    let out = t.next_local();
    assert!(out.contains(&O::Set(pto(1, 0, 4), ms(10_000))));
    t.step(Input::Request(env(2, 4, 1)));
    t.next_local(); // the entity processes its stop message; its termination is in flight
    assert_eq!(t.next_local(), vec![]); // §8 step 3: buffered
    assert_eq!(states(t, 1), vec![(EntityId(4), EntityState::Passivating)]);
    t.pump()
}

#[test]
fn passivation_writes_the_stop_and_restarts_the_entity_for_its_buffer() {
    let mut t = loaded(ProtocolOptions::default());
    // SH:938-952: Passivating entity terminated → RememberingStop, Update(stopped = {4}).
    assert_eq!(
        passivated_with_buffer(&mut t),
        vec![
            stopped(4, StopReason::Passivation, 0),
            O::Cancel(pto(1, 0, 4)),
            update(1, 0, 0, &[], &[4]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![(EntityId(4), EntityState::RememberingStop)]
    );
    // Messages arriving while the stop is written are buffered too (SH:1102-1103).
    assert_eq!(t.req(env(3, 4, 1)), vec![]);
    // SH:736-740, 1051-1071 (the fix of B30, akka#26957): the stop is stored; with buffered
    // messages the entity is remembered as started again (the next write)...
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![(EntityId(4), EntityState::RememberingStart)]
    );
    // ...and created with its buffer delivered in order when that is stored.
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 1),
            delivered(env(2, 4, 1), 1),
            delivered(env(3, 4, 1), 1),
        ]
    );
}

#[test]
fn passivation_without_buffered_messages_forgets_the_entity() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    assert_eq!(
        t.pump(),
        vec![
            O::Set(pto(1, 0, 4), ms(10_000)),
            stopped(4, StopReason::Passivation, 0),
            O::Cancel(pto(1, 0, 4)),
            update(1, 0, 0, &[], &[4]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    // SH:1062-1070: no buffer → NoState.
    assert_eq!(done(&mut t, 1, 0, 0), vec![O::Cancel(ret(1, 0))]);
    assert_eq!(states(&t, 1), vec![]);
}

/// §12 B30 (akka#26957, before commit 1ef65091f6): passivateCompleted forgot the buffer: the
/// stop of entity 4 is stored, nothing restarts it, its two messages wait in a stranded
/// buffer.
fn stranded_b30() -> T {
    let opts = ProtocolOptions {
        remember_passivation_forgets_buffer: true,
        ..ProtocolOptions::default()
    };
    let mut t = loaded(opts);
    passivated_with_buffer(&mut t);
    t.req(env(3, 4, 1));
    assert_eq!(done(&mut t, 1, 0, 0), vec![O::Cancel(ret(1, 0))]);
    t
}

#[test]
fn pre_fix_b30_the_buffer_stays_undelivered_until_a_later_message() {
    let mut t = stranded_b30();
    assert_eq!(states(&t, 1), vec![]);
    let slot = t.slot(1).unwrap();
    assert_eq!(slot.shard.buffered(), 2);
    assert_eq!(
        slot.shard.buffered_messages().collect::<Vec<_>>(),
        vec![env(2, 4, 1), env(3, 4, 1)]
    );
    // A later message starts it (a new write); the stranded buffer goes first.
    assert_eq!(
        t.req(env(4, 4, 1)),
        vec![
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 1),
            delivered(env(2, 4, 1), 1),
            delivered(env(3, 4, 1), 1),
            delivered(env(4, 4, 1), 1),
        ]
    );
}

/// Pre-fix B30 with a Shard restart: the stranded buffer dies with the old instance (each
/// message dropped as `ShardRestart`), and the Shard's count of buffered messages goes to zero
/// with it (a count that kept them would make later messages hit `buffer-size` early).
#[test]
fn pre_fix_b30_a_stranded_buffer_dies_with_a_restart_and_leaves_the_count_at_zero() {
    let mut t = stranded_b30();
    // A message for 7 starts a write; it times out and the Shard restarts.
    t.req(env(1, 7, 1));
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 3);
    let out = fire(&mut t, ret(1, 0));
    for e in [env(1, 7, 1), env(2, 4, 1), env(3, 4, 1)] {
        assert!(
            out.contains(&dropped(e, DropReason::ShardRestart)),
            "{e:?} in {out:?}"
        );
    }
    let shard = &t.slot(1).unwrap().shard;
    assert_eq!((shard.buffered(), shard.buffered_recount()), (0, 0));
}

// ---- 5. an entity stops without passivating (§6.4, §12 B33) ----

#[test]
fn self_stopped_entity_waits_for_restart_and_a_message_restarts_it_cancelling_the_timer() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::SelfStop, out));
    // SH:927-932: Active entity terminated, remember on → WaitingForRestart and
    // RestartTerminatedEntity after entity-restart-backoff.
    assert_eq!(
        t.pump(),
        vec![
            stopped(4, StopReason::SelfStop, 0),
            O::Set(rte(1, 0, 4), ms(RESTART_BACKOFF_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![(EntityId(4), EntityState::WaitingForRestart)]
    );
    // SH:1104-1112, 1151-1158 (the fix of B33, PR akka#32749): a message starts it at once and
    // the restart timer is cancelled. No write: it is still remembered.
    assert_eq!(
        t.req(env(1, 4, 2)),
        vec![
            O::Cancel(rte(1, 0, 4)),
            started(4, 1, 1),
            delivered(env(1, 4, 2), 1),
        ]
    );
    assert_eq!(states(&t, 1), vec![(EntityId(4), EntityState::Active)]);
}

#[test]
fn crashed_entity_is_restarted_by_the_restart_timer() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::Crashed, out));
    assert_eq!(
        t.pump(),
        vec![
            stopped(4, StopReason::Crashed, 0),
            O::Set(rte(1, 0, 4), ms(RESTART_BACKOFF_MS)),
        ]
    );
    // SH:781-785: RestartTerminatedEntity in WaitingForRestart → getOrCreateEntity.
    assert_eq!(fire(&mut t, rte(1, 0, 4)), vec![started(4, 1, 1)]);
    assert_eq!(states(&t, 1), vec![(EntityId(4), EntityState::Active)]);
    // SH:786-789: a second RestartTerminatedEntity for an Active entity is fine.
    assert_eq!(fire(&mut t, rte(1, 0, 4)), vec![]);
}

#[test]
fn pre_fix_b33_a_stale_restart_timer_after_passivation_fails_the_shard() {
    let opts = ProtocolOptions {
        restart_timer_not_cancelled: true,
        ..ProtocolOptions::default()
    };
    let mut t = loaded(opts);
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::SelfStop, out));
    t.pump();
    // Before PR akka#32749 the early restart left the timer armed.
    assert_eq!(
        t.req(env(1, 4, 2)),
        vec![started(4, 1, 1), delivered(env(1, 4, 2), 1)]
    );
    // The new incarnation passivates; its stop is stored: NoState.
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 1, false, out));
    t.pump();
    done(&mut t, 1, 0, 0);
    assert_eq!(states(&t, 1), vec![]);
    // SH:790-792: RestartTerminatedEntity in an unexpected state → IllegalStateException: the
    // Shard restarts in place (a new instance loads again).
    assert_eq!(
        fire(&mut t, rte(1, 0, 4)),
        vec![
            failed(
                1,
                ShardFailure::IllegalState(
                    "RestartTerminatedEntity in an unexpected state (akka#32749)"
                )
            ),
            O::Cancel(ret(1, 0)),
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS)),
        ]
    );
}

// ---- 6. the write is never answered (§6.4) ----

#[test]
fn write_timeout_fails_the_shard_which_stops_everything_and_loads_again() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.req(env(1, 7, 1));
    t.req(env(2, 7, 2));
    // SH:686-689: RememberEntityTimeout of the write in flight → throw; default supervision
    // restarts the Shard: every child stopped first (Actor.preRestart), the buffers die with
    // the old instance.
    assert_eq!(
        fire(&mut t, ret(1, 0)),
        vec![
            failed(1, ShardFailure::StoreTimeout),
            O::Cancel(ret(1, 0)),
            dropped(env(1, 7, 1), DropReason::ShardRestart),
            dropped(env(2, 7, 2), DropReason::ShardRestart),
            stopped(4, StopReason::ShardRestart, 0),
            // The new instance (same actor, uid 0) initialises: GetEntities again.
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS)),
        ]
    );
    let slot = t.slot(1).unwrap();
    assert_eq!((slot.shard.uid(), slot.shard.instance()), (0, 1));
    assert!(slot.initialized);
    assert_eq!(slot.shard.entity_states().count(), 0);
    // The region still sees an initialised Shard: a message goes to it and waits in its
    // mailbox (stashed while the new instance loads).
    assert_eq!(t.req(env(3, 4, 3)), vec![]);
    assert_eq!(
        t.slot(1)
            .unwrap()
            .shard
            .buffered_messages()
            .collect::<Vec<_>>(),
        vec![env(3, 4, 3)]
    );
    // The old instance's store died with it: its late UpdateDone is ignored.
    assert_eq!(done(&mut t, 1, 0, 0), vec![]);
    // The new instance loads, the starter starts 4, the stashed message reaches it.
    assert_eq!(
        reply(&mut t, 1, 0, 1, StoreReplyKind::Remembered(ids(&[4]))),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 1),
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            delivered(env(3, 4, 3), 1),
            send(raddr(1), ack(4, 1, 1)),
        ]
    );
}

#[test]
fn a_remember_timeout_with_no_write_in_flight_is_ignored() {
    // RememberEntityTimeout is handled in `waitingForUpdate` only (SH:686-689); a Shard with
    // no write in flight leaves it unhandled.
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    assert_eq!(fire(&mut t, ret(1, 0)), vec![]);
    assert_eq!(t.r.entity_incarnation(shard(1), EntityId(4)), Some(0));
}

#[test]
fn store_stopped_while_writing_fails_the_shard() {
    let mut t = loaded(ProtocolOptions::default());
    t.req(env(1, 7, 1));
    // SH:707, 1219-1221: RememberEntityStoreCrashed → throw → restart in place.
    assert_eq!(
        reply(&mut t, 1, 0, 0, StoreReplyKind::StoreStopped),
        vec![
            failed(1, ShardFailure::StoreStopped),
            O::Cancel(ret(1, 0)),
            dropped(env(1, 7, 1), DropReason::ShardRestart),
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS)),
        ]
    );
}

// ---- 7. hand-off and remember-entities (§7, SH:694, SH:871-915) ----

#[test]
fn hand_off_during_a_write_is_deferred_until_the_write_completes() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.req(env(1, 7, 1)); // Update(started = {7}) in flight
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    // SH:694: `case _: CoordinatorMessage => stash()` in waitingForRememberEntitiesStore:
    // nothing is stopped yet.
    assert_eq!(t.from(coord(0), Msg::HandOff { shard: shard(1) }), vec![]);
    assert!(t.slot(1).unwrap().handing_off);
    assert!(!t.slot(1).unwrap().shard.handing_off());
    // SH:748-751: UpdateDone with nothing pending → unstashAll, idle: 7 starts with its buffer,
    // then the HandOff runs (SH:871-910): both entities get the stop message, ShardStopped
    // when both terminated, and the region does not restart a handed-off Shard (SR:1078-1081).
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(7, 1, 1),
            O::Set(
                shard_timer(1, 0, ShardTimer::HandOffStopTimeout),
                ms(HANDOFF_STOP_TIMEOUT_MS)
            ),
            delivered(env(1, 7, 1), 1),
            stopped(4, StopReason::HandOff, 0),
            stopped(7, StopReason::HandOff, 1),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            O::Cancel(shard_timer(1, 0, ShardTimer::HandOffStopTimeout)),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Cancel(ret(1, 0)),
        ]
    );
    assert!(t.slot(1).is_none());
}

#[test]
fn in_hand_off_a_terminated_entity_is_not_restarted_for_its_buffer() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    t.next_local(); // Passivating: stop message sent
    t.step(Input::Request(env(2, 4, 1)));
    t.next_local(); // the entity stops; its termination is in flight
    t.next_local(); // the message is buffered in the Shard
    t.step(Input::Deliver {
        from: coord(0),
        msg: Msg::BeginHandOff { shard: shard(1) },
    });
    t.step(hand_off(1));
    // The termination comes after the entity's stop duration: the HandOff overtakes it.
    t.overtake();
    // SH:871-910: the HandOffStopper gets the live actor; the Shard now handles only the
    // stopper's Terminated (SH:903-905): the entity's termination restarts nothing, writes
    // nothing, and its buffer dies with the Shard.
    assert_eq!(
        t.pump(),
        vec![
            O::Set(
                shard_timer(1, 0, ShardTimer::HandOffStopTimeout),
                ms(HANDOFF_STOP_TIMEOUT_MS)
            ),
            stopped(4, StopReason::Passivation, 0),
            O::Cancel(pto(1, 0, 4)),
            dropped(env(2, 4, 1), DropReason::ShardBufferLost),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            O::Cancel(shard_timer(1, 0, ShardTimer::HandOffStopTimeout)),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Cancel(ret(1, 0)),
        ]
    );
    assert!(t.slot(1).is_none());
}

#[test]
fn hand_off_stashed_during_a_write_survives_a_shard_restart() {
    let mut t = loaded(ProtocolOptions::default());
    t.req(env(1, 7, 1));
    t.from(coord(0), Msg::BeginHandOff { shard: shard(1) });
    t.from(coord(0), Msg::HandOff { shard: shard(1) });
    fire(&mut t, ret(1, 0)); // the write times out: restart in place
    assert_eq!(
        reply(&mut t, 1, 0, 1, StoreReplyKind::Remembered(vec![])),
        vec![
            O::Cancel(ret(1, 0)),
            send(coord(0), Msg::ShardStopped { shard: shard(1) }),
            obs(Observation::ShardUnhosted(shard(1))),
            O::Cancel(ret(1, 0)),
        ]
    );
}

// ---- 8. §12 B35: restart while the failed incarnation still terminates ----

#[test]
fn crashed_remembered_entity_restarts_only_after_its_termination() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::Crashed, out));
    // A message before the termination: the Shard still holds the dying actor (Active until
    // EntityTerminated, SH:918-931), so it goes to its mailbox and is lost (§8 step 6).
    t.step(Input::Request(env(1, 4, 2)));
    t.overtake();
    assert_eq!(
        t.pump(),
        vec![
            stopped(4, StopReason::Crashed, 0),
            O::Set(rte(1, 0, 4), ms(RESTART_BACKOFF_MS)),
            dropped(env(1, 4, 2), DropReason::EntityStopped),
        ]
    );
    // Only now can a new incarnation start.
    assert_eq!(
        t.req(env(1, 4, 3)),
        vec![
            O::Cancel(rte(1, 0, 4)),
            started(4, 1, 1),
            delivered(env(1, 4, 3), 1),
        ]
    );
}

/// A loaded Shard 1 with the §12 B35 pre-fix (`entity-restart-before-terminated`) on top of
/// `opts`, entity 4 started (incarnation 0).
fn pre_fix_b35_with_entity_4(opts: ProtocolOptions) -> T {
    let mut t = loaded(ProtocolOptions {
        entity_restart_before_terminated: true,
        ..opts
    });
    started_by_message(&mut t, 4);
    t
}

#[test]
fn pre_fix_b35_a_passivating_entity_that_crashes_drops_its_buffer() {
    // akka.net#7979: the crashed entity is forgotten at once; what the Shard buffered for it
    // while it passivated goes to dead letters, and the Shard's buffered count with it.
    let mut t = pre_fix_b35_with_entity_4(ProtocolOptions::default());
    assert_eq!(t.buffer_behind_passivation(4, 0, env(1, 4, 2)), vec![]);
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 1);
    let out = t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::Crashed, out));
    assert!(
        out.contains(&dropped(env(1, 4, 2), DropReason::EntityStopped)),
        "{out:?}"
    );
    assert_eq!(states(&t, 1), vec![]);
    assert_eq!(t.slot(1).unwrap().shard.buffered(), 0);
}

#[test]
fn pre_fix_b35_a_crashed_entity_forgotten_while_terminating_fails_the_shard_on_restart() {
    let mut t = pre_fix_b35_with_entity_4(ProtocolOptions::default());
    // akka.net#7979: the failed entity is NoState at once, its name still reserved.
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::Crashed, out));
    assert_eq!(states(&t, 1), vec![]);
    // A message before the termination: NoState, remember on → a start write.
    t.step(Input::Request(env(1, 4, 2)));
    t.overtake();
    assert_eq!(
        t.next_local(),
        vec![
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    // Stored: ActorOf with the reserved name → InvalidActorNameException → the Shard fails.
    let out = done(&mut t, 1, 0, 0);
    assert_eq!(
        out,
        vec![
            O::Cancel(ret(1, 0)),
            failed(
                1,
                ShardFailure::IllegalState(
                    "InvalidActorNameException: entity name still reserved (akka.net#7979)"
                )
            ),
            O::Cancel(ret(1, 0)),
            dropped(env(1, 4, 2), DropReason::ShardRestart),
            stopped(4, StopReason::Crashed, 0),
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS)),
        ]
    );
}

/// Deliver the oldest queued local message that `pick` selects, before the others.
fn deliver_first(t: &mut T, pick: impl Fn(&Local) -> bool) -> Vec<O> {
    let i = t
        .pending
        .iter()
        .position(|(m, _)| pick(m))
        .expect("the local message is queued");
    let m = t.pending.remove(i).unwrap();
    t.pending.push_front(m);
    t.next_local()
}

/// What a Shard stashed survives its failure while it loads: Akka's `UnrestrictedStash`
/// puts it back in the mailbox (`preRestart`, Stash.scala), and the next instance replays it.
/// §12 B35's and B9's pre-fix behaviours together make a Shard throw while loading: it creates
/// its remembered entities directly (B9), and one's name is still held by its crashed actor
/// (B35). A survivor of cargo-mutants dropped the stash of a Shard failing while it
/// initialises.
#[test]
fn pre_fix_b35_a_shard_failing_while_it_loads_keeps_its_stash() {
    let mut t = pre_fix_b35_with_entity_4(ProtocolOptions {
        remembered_started_directly: true,
        ..ProtocolOptions::default()
    });
    t.run(|r, _, out| r.entity_stops_itself(EntityId(4), 0, StopReason::Crashed, out));
    let terminated = |m: &Local| matches!(m, Local::EntityTerminated { .. });
    let not_terminated = |m: &Local| !terminated(m);
    // A message before the termination: a start write; stored, the reserved name fails the
    // Shard (as in the test above). The old actor's termination stays in flight throughout.
    t.step(Input::Request(env(1, 4, 2)));
    deliver_first(&mut t, not_terminated);
    let out = t.run(|r, now, out| {
        let reply = StoreReply {
            shard: shard(1),
            uid: 0,
            instance: 0,
            kind: StoreReplyKind::UpdateDone,
        };
        r.store_reply(now, reply, out)
    });
    assert!(shard_failed(&out).is_some(), "{out:?}");
    // The new instance loads (instance 1); a message reaches its mailbox and is stashed.
    assert_eq!(
        deliver_first(&mut t, not_terminated),
        vec![
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS))
        ]
    );
    t.step(Input::Request(env(2, 4, 3)));
    deliver_first(&mut t, not_terminated);
    let stashed = |t: &T| {
        t.slot(1)
            .unwrap()
            .shard
            .buffered_messages()
            .collect::<Vec<_>>()
    };
    assert_eq!(stashed(&t), vec![env(2, 4, 3)]);
    // Loaded: entity 4 is created directly while its name is still reserved → the Shard
    // throws again, while initialising. The stash goes back to the mailbox.
    let out = t.run(|r, now, out| {
        let reply = StoreReply {
            shard: shard(1),
            uid: 0,
            instance: 1,
            kind: StoreReplyKind::Remembered(ids(&[4])),
        };
        r.store_reply(now, reply, out)
    });
    assert_eq!(
        shard_failed(&out),
        Some(ShardFailure::IllegalState(
            "InvalidActorNameException: entity name still reserved (akka.net#7979)"
        ))
    );
    assert_eq!(stashed(&t), vec![env(2, 4, 3)]);
    // The old actor terminates, the third instance loads and creates 4, and the stashed
    // message reaches it.
    let out = t.pump();
    assert!(out.contains(&get_entities(1, 0, 2)), "{out:?}");
    let out = reply(&mut t, 1, 0, 2, StoreReplyKind::Remembered(ids(&[4])));
    assert!(
        out.contains(&delivered(env(2, 4, 3), 1)),
        "the stashed message is delivered: {out:?}"
    );
}

// ---- 9. §12 B34: StartEntity while a write is in flight ----

#[test]
fn start_entity_for_an_unknown_entity_during_a_write_joins_the_next_batch() {
    let mut t = loaded(ProtocolOptions::default());
    // Update(started = {7}) in flight.
    t.req(env(1, 7, 1));
    // SH:836-840 (the fix of B34, PR akka#32770): RememberingStart(ackTo), no second Update.
    assert_eq!(t.from(raddr(2), start_entity(10, 2, 1)), vec![]);
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(7), EntityState::RememberingStart),
            (EntityId(10), EntityState::RememberingStart),
        ]
    );
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(7, 1, 0),
            update(1, 0, 0, &[10], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
            delivered(env(1, 7, 1), 0),
        ]
    );
    // SH:723-735: stored → created, StartEntityAck to every ackTo.
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(10, 1, 1),
            send(raddr(2), ack(10, 1, 1)),
        ]
    );
}

#[test]
fn pre_fix_b34_start_entity_during_a_write_fails_the_shard() {
    let opts = ProtocolOptions {
        start_entity_concurrent_update: true,
        ..ProtocolOptions::default()
    };
    let mut t = loaded(opts);
    t.req(env(1, 7, 1));
    assert_eq!(
        t.from(raddr(2), start_entity(10, 2, 1)),
        vec![
            failed(
                1,
                ShardFailure::IllegalState(
                    "second concurrent remember-entities Update (akka#32770)"
                )
            ),
            O::Cancel(ret(1, 0)),
            dropped(env(1, 7, 1), DropReason::ShardRestart),
            get_entities(1, 0, 1),
            O::Set(ret(1, 0), ms(LOAD_TIMEOUT_MS)),
        ]
    );
}

#[test]
#[ignore = "disagrees with Akka (a deviation the model documents in Shard::start_entity): \
            StartEntity for a Passivating entity is dropped and left to the starter's retry; \
            Akka appends it to the entity's buffer (SH:827-830), so passivateCompleted restarts \
            the entity (SH:1051-1061) and sendMsgBuffer acks it (SH:1195-1210)"]
fn start_entity_for_a_passivating_entity_restarts_it_after_the_stop_is_stored() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    t.next_local(); // Passivating: stop message sent
    t.from(raddr(2), start_entity(4, 2, 1));
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 1),
            send(raddr(2), ack(4, 1, 1)),
        ]
    );
}

#[test]
#[ignore = "disagrees with Akka (a deviation the model documents in Shard::start_entity): \
            StartEntity for a RememberingStop entity is dropped and left to the starter's retry; \
            Akka stashes it (SH:832-835) and, unstashed once the stop is stored (SH:748-751), it \
            starts the entity through a new write (SH:836-847)"]
fn start_entity_during_a_stop_write_starts_the_entity_once_the_stop_is_stored() {
    let mut t = loaded(ProtocolOptions::default());
    started_by_message(&mut t, 4);
    t.run(|r, _, out| r.entity_passivates(EntityId(4), 0, false, out));
    t.pump(); // terminated: Update(stopped = {4}) in flight
    assert_eq!(
        states(&t, 1),
        vec![(EntityId(4), EntityState::RememberingStop)]
    );
    assert_eq!(t.from(raddr(2), start_entity(4, 2, 1)), vec![]);
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            update(1, 0, 0, &[4], &[]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        done(&mut t, 1, 0, 0),
        vec![
            O::Cancel(ret(1, 0)),
            started(4, 1, 1),
            send(raddr(2), ack(4, 1, 1)),
        ]
    );
}

// ---- 10. EntitiesMovedToOtherShard (akka#22289) ----

/// Shard 1 loaded with remembered entities 4 and 5, where the extractor now puts 5 in shard 2,
/// homed at region 2. The starter has sent StartEntity(5) to region 2; StartEntity(4) waited
/// in the region for ShardInitialized (SR:1381, 1275-1279), and 4 runs.
fn moved() -> T {
    let mut t = T::with(1, true, remember(), ProtocolOptions::default()).registered();
    t.from(
        coord(0),
        Msg::ShardHome {
            shard: shard(2),
            region: reg(2),
        },
    );
    t.from(coord(0), Msg::HostShard { shard: shard(1) });
    assert_eq!(
        reply(&mut t, 1, 0, 0, StoreReplyKind::Remembered(ids(&[4, 5]))),
        vec![
            O::Cancel(ret(1, 0)),
            O::Set(Timer::StarterRetry(shard(1)), ms(RETRY_MS)),
            send(raddr(2), start_entity(5, 1, 1)),
            started(4, 1, 0),
            send(raddr(1), ack(4, 1, 1)),
        ]
    );
    t
}

#[test]
fn entity_acked_by_another_shard_is_written_as_stopped_in_its_old_shard() {
    let mut t = moved();
    assert_eq!(t.from(raddr(1), ack(4, 1, 1)), vec![]);
    // The starter gets StartEntityAck(5, shard 2), its last: 5 was started elsewhere →
    // EntitiesMovedToOtherShard to shard 1, which writes it as stopped (SH:795-808:
    // RememberedButNotCreated → RememberingStop, rememberUpdate(remove)).
    assert_eq!(
        t.from(raddr(2), ack(5, 2, 1)),
        vec![
            O::Cancel(Timer::StarterRetry(shard(1))),
            update(1, 0, 0, &[], &[5]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(4), EntityState::Active),
            (EntityId(5), EntityState::RememberingStop),
        ]
    );
    // Stored: forgotten (passivateCompleted without buffer, SH:736-740, 1051-1070).
    assert_eq!(done(&mut t, 1, 0, 0), vec![O::Cancel(ret(1, 0))]);
    assert_eq!(states(&t, 1), vec![(EntityId(4), EntityState::Active)]);
    // An EntityMoved for an entity in another state changes nothing.
    t.run(|r, now, out| {
        r.local(
            now,
            Local::ToShard {
                shard: shard(1),
                uid: 0,
                msg: ShardMsg::EntityMoved {
                    entity: EntityId(5),
                    last: true,
                },
            },
            out,
        )
    });
    assert_eq!(t.pump(), vec![]);
}

#[test]
fn moved_entities_are_reported_once_every_remembered_id_is_acked() {
    let mut t = moved();
    assert_eq!(t.from(raddr(2), ack(5, 2, 1)), vec![]);
    assert_eq!(
        states(&t, 1),
        vec![
            (EntityId(4), EntityState::Active),
            (EntityId(5), EntityState::RememberedButNotCreated),
        ]
    );
    // 4 acked by its own shard: now the moved ones are reported.
    let out = fire(&mut t, Timer::StarterRetry(shard(1)));
    assert!(out.contains(&send(raddr(1), ack(4, 1, 1))));
    assert_eq!(
        t.from(raddr(1), ack(4, 1, 1)),
        vec![
            O::Cancel(Timer::StarterRetry(shard(1))),
            update(1, 0, 0, &[], &[5]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
}

#[test]
#[ignore = "disagrees with Akka: the model batches an EntityMoved that arrives while a write is \
            in flight; Akka's waitingForRememberEntitiesStore handles EntitiesMovedToOtherShard \
            at once (SH:695) and rememberUpdate(remove = moved) sends a second Update to the \
            store (SH:795-808, 634-667), as B34 did for StartEntity"]
fn entity_moved_during_a_write_is_written_at_once() {
    let mut t = moved();
    t.req(env(1, 7, 1)); // Update(started = {7}) in flight
    assert_eq!(
        t.from(raddr(2), ack(5, 2, 1)),
        vec![
            update(1, 0, 0, &[], &[5]),
            O::Set(ret(1, 0), ms(WRITE_TIMEOUT_MS)),
        ]
    );
}
