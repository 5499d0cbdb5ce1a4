//! Shard (docs/akka-reference.md §6): a child actor of its region, with its entities as children.
//!
//! Sans-IO like every role, but owned by its [`Region`](super::region::Region): the region
//! creates it, routes its local messages ([`Local`]) and timers to it, and learns of its
//! termination through [`Local::ShardTerminated`]. Every message between the region, a Shard
//! and an entity is its own event ([`Output::Local`](super::Output::Local)), so a message can
//! arrive while a stop is in flight: the races behind §12 B1, B19, B23 and the mailbox loss of
//! §8 step 6.
//!
//! Modelling choices (granularity, not behaviour):
//! - No lease: a Shard initialises for a time the host draws (the scenario's
//!   `shard-init-ms`, default 0), stashing what it receives meanwhile; with remember-entities
//!   it then loads its remembered entities from the store, and sends `ShardInitialized`
//!   (SH:489-614).
//! - A Shard that throws is restarted in place by the region's default supervision: every
//!   entity is stopped first (Akka waits for the children before recreating), the buffers of
//!   the old instance are lost, and the new instance initialises again under the same actor
//!   (its mailbox is kept). `instance` counts these, so a store answer for the old instance
//!   never reaches the new one (the store actor is the Shard's child and dies with it).
//! - An entity crash is its supervision stopping it (Akka Typed's default; a classic actor
//!   restarted in place is invisible to the Shard).
//! - An entity actor lives in its Shard's record. It processes its messages in order; its stop
//!   message makes it stop, and it terminates (postStop, finishing its work) after a stop
//!   duration the host draws. Messages that reach it meanwhile are lost, as Akka documents.
//! - The death-watch notice of an entity's termination (`EntityTerminated`) is the
//!   termination event itself.

use crate::ids::{EntityId, RegionRef, ShardId};
use crate::protocol::config::RegionConfig;
use crate::protocol::entity::Entity;
use crate::protocol::{
    Addr, DropReason, Envelope, Local, LocalDelay, Msg, Observation, Outbox, ShardFailure,
    ShardMsg, ShardTimer, StopReason, StoreOp, StoreReplyKind, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// The state of one entity in its Shard (§6.2, SH:120-271). An absent record is `NoState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityState {
    /// Running; messages go to it.
    Active,
    /// Its stop message went out after a `Passivate`; messages for it are buffered in the
    /// Shard until it terminates (§8 steps 2-3).
    Passivating,
    /// Loaded from the remember store, not started yet: the starter sends `StartEntity`
    /// through the region (§6.1).
    RememberedButNotCreated,
    /// Its start is being written to the store; messages are buffered (§6.4).
    RememberingStart,
    /// Remembered, stopped without passivating: it starts again after
    /// `entity-restart-backoff`, or at its next message (§6.4, akka#32749).
    WaitingForRestart,
    /// Passivated: its stop is being written to the store; messages are buffered (§8 step 4).
    RememberingStop,
}

/// One entity in the Shard: its state, and its actor while one lives.
struct EntityRec {
    /// The live actor's incarnation (run-unique); meaningless without an actor.
    inc: u64,
    state: EntityState,
    /// The entity actor, from creation to termination.
    actor: Option<Box<dyn Entity>>,
    /// The actor processed its stop message or was stopped by force: it handles nothing more
    /// and terminates after its stop duration.
    stopping: bool,
    /// Why it stops (for the `EntityStopped` fact).
    stop_reason: StopReason,
    /// When the Shard last delivered a message to it (idle passivation).
    last_active: Instant,
    /// Messages buffered in the Shard for it (SH `messageBuffers`).
    buffer: VecDeque<Envelope>,
    /// Its own `Passivate` named a stop message it never handles (§12 B32).
    ignores_stop: bool,
    /// Starters waiting for `StartEntityAck` while its start is remembered (`ackTo`).
    ack_to: Vec<(RegionRef, ShardId)>,
    /// Part of the store write in flight.
    in_write: bool,
}

impl EntityRec {
    fn new(state: EntityState, now: Instant) -> EntityRec {
        EntityRec {
            inc: 0,
            state,
            actor: None,
            stopping: false,
            stop_reason: StopReason::SelfStop,
            last_active: now,
            buffer: VecDeque::new(),
            ignores_stop: false,
            ack_to: Vec::new(),
            in_write: false,
        }
    }
}

/// Where the Shard is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Initialising (SH:489-614): everything is stashed until it is done; `loading`: waiting
    /// for `RememberedEntities` from the store.
    Initializing { stash: Vec<ShardMsg>, loading: bool },
    /// Handling messages.
    Running,
    /// `HandOff` received with live entities: the HandOffStopper waits for the entities it
    /// was given (`waiting`, by incarnation) and then sends `ShardStopped` to `to` (§7 t5-t6).
    /// The Shard handles only terminations meanwhile.
    HandingOff { to: Addr, waiting: BTreeSet<u64> },
    /// It threw: waiting for its children to terminate before the new instance starts; its
    /// mailbox (`stash`) is kept.
    Restarting { stash: Vec<ShardMsg> },
    /// Stopping itself: waiting for its remaining children to terminate.
    Stopping,
    /// Terminated (the region has been told).
    Stopped,
}

/// A Shard actor.
pub struct Shard {
    id: ShardId,
    uid: u32,
    /// Counts restarts in place; store answers carry it.
    instance: u32,
    cfg: Arc<RegionConfig>,
    phase: Phase,
    entities: BTreeMap<EntityId, EntityRec>,
    /// Messages in every entity's buffer (and `stranded`).
    buffered: usize,
    /// Whether a remember-entities write is in flight (`waitingForRememberEntitiesStore`).
    writing: bool,
    /// Entities whose `RestartTerminatedEntity` timer is armed.
    restart_timers: BTreeSet<EntityId>,
    /// Buffers left behind by `passivateCompleted` under the pre-fix behaviour of §12 B30:
    /// delivered only when a later message starts the entity again.
    stranded: BTreeMap<EntityId, VecDeque<Envelope>>,
    /// Actors a Shard forgot while they still terminate (§12 B35 pre-fix): entity → inc.
    reserved: BTreeMap<EntityId, u64>,
    /// A `HandOff` that arrived while a store write was in flight: coordinator messages are
    /// stashed in `waitingForRememberEntitiesStore` and handled once it is idle again.
    stashed_handoff: Option<Addr>,
    /// With `handoff-during-handoff-answered`: the senders of `HandOff`s that arrived during
    /// the hand-off (a new coordinator's worker), answered with `ShardStopped` when it ends.
    late_handoffs: Vec<Addr>,
}

impl Shard {
    /// A new Shard actor `uid` for `shard` (`getShard` creating the child, SR:1399-1437). It
    /// initialises (lease, then remember-entities load) and tells its region.
    pub fn new(
        id: ShardId,
        uid: u32,
        cfg: Arc<RegionConfig>,
        now: Instant,
        out: &mut Outbox,
    ) -> Shard {
        let _ = now;
        let mut s = Shard {
            id,
            uid,
            instance: 0,
            cfg,
            phase: Phase::Initializing {
                stash: Vec::new(),
                loading: false,
            },
            entities: BTreeMap::new(),
            buffered: 0,
            writing: false,
            restart_timers: BTreeSet::new(),
            stranded: BTreeMap::new(),
            reserved: BTreeMap::new(),
            stashed_handoff: None,
            late_handoffs: Vec::new(),
        };
        s.pre_start(out);
        s
    }

    /// `preStart` of an instance: initialisation, and the idle strategy's tick (automatic
    /// passivation is off with remember-entities, §6.4).
    fn pre_start(&mut self, out: &mut Outbox) {
        out.local(
            Local::ToShard {
                shard: self.id,
                uid: self.uid,
                msg: ShardMsg::InitDone,
            },
            LocalDelay::ShardInit,
        );
        if self.idle_passivation() {
            out.set_timer(
                self.timer(ShardTimer::PassivateIdleTick),
                Duration::from_millis(
                    (self.cfg.settings.passivate_idle_entity_after_ms / 2).max(1),
                ),
            );
        }
    }

    fn remember(&self) -> bool {
        self.cfg.settings.remember_entities
    }

    fn idle_passivation(&self) -> bool {
        self.cfg.settings.passivate_idle_entity_after_ms > 0 && !self.remember()
    }

    fn timer_of(shard: ShardId, uid: u32, kind: ShardTimer) -> Timer {
        Timer::Shard { shard, uid, kind }
    }

    fn timer(&self, kind: ShardTimer) -> Timer {
        Self::timer_of(self.id, self.uid, kind)
    }

    /// This Shard actor's uid in its region.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The current instance (restarts in place count up); store answers must carry it.
    pub fn instance(&self) -> u32 {
        self.instance
    }

    /// Whether a `HandOff` is in progress (the HandOffStopper runs).
    pub fn handing_off(&self) -> bool {
        matches!(self.phase, Phase::HandingOff { .. })
    }

    /// Whether the Shard is stopping or stopped.
    pub fn stopping(&self) -> bool {
        matches!(self.phase, Phase::Stopping | Phase::Stopped)
    }

    /// Ids of the entities with a live actor.
    pub fn entity_ids(&self) -> impl Iterator<Item = EntityId> + '_ {
        self.entities
            .iter()
            .filter(|(_, r)| r.actor.is_some())
            .map(|(e, _)| *e)
    }

    /// Each entity with a live actor: its id, incarnation and state.
    pub fn entities(&self) -> impl Iterator<Item = (EntityId, u64, EntityState)> + '_ {
        self.entities
            .iter()
            .filter(|(_, r)| r.actor.is_some())
            .map(|(e, r)| (*e, r.inc, r.state))
    }

    /// Every entity record, with or without an actor: id and state.
    pub fn entity_states(&self) -> impl Iterator<Item = (EntityId, EntityState)> + '_ {
        self.entities.iter().map(|(e, r)| (*e, r.state))
    }

    /// The incarnation of `entity`'s live actor here, if any.
    pub fn incarnation_of(&self, entity: EntityId) -> Option<u64> {
        self.entities
            .get(&entity)
            .filter(|r| r.actor.is_some())
            .map(|r| r.inc)
    }

    /// The live entity actors and their incarnations.
    pub fn live_entities(&self) -> Vec<(EntityId, u64)> {
        self.entities
            .iter()
            .filter(|(_, r)| r.actor.is_some())
            .map(|(e, r)| (*e, r.inc))
            .collect()
    }

    /// Broken on purpose (`Mutation::RegionKeepsStaleEntities`): records for entity actors
    /// of an earlier Shard of this shard, revived as Active under their old incarnations
    /// without a start. Akka's new Shard starts with no entity (SR:1399-1437).
    pub fn revive_stale(&mut self, stale: &[(EntityId, u64)], now: Instant) {
        for &(e, inc) in stale {
            if self.entities.contains_key(&e) {
                continue;
            }
            let mut rec = EntityRec::new(EntityState::Active, now);
            rec.inc = inc;
            rec.actor = Some(self.cfg.factory.create(e));
            self.entities.insert(e, rec);
        }
    }

    /// Messages buffered for entities.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Every message the Shard holds: buffered for entities, and stashed while it
    /// initialises or restarts.
    pub fn buffered_messages(&self) -> impl Iterator<Item = Envelope> + '_ {
        let stashed: &[ShardMsg] = match &self.phase {
            Phase::Initializing { stash, .. } | Phase::Restarting { stash } => stash,
            _ => &[],
        };
        self.entities
            .values()
            .flat_map(|r| r.buffer.iter().copied())
            .chain(self.stranded.values().flat_map(|b| b.iter().copied()))
            .chain(stashed.iter().filter_map(|m| match m {
                ShardMsg::User(env) => Some(*env),
                _ => None,
            }))
    }

    /// The per-entity buffers hold `buffered()` messages in total (for the region's check).
    pub fn buffered_recount(&self) -> usize {
        self.entities
            .values()
            .map(|r| r.buffer.len())
            .sum::<usize>()
            + self.stranded.values().map(|b| b.len()).sum::<usize>()
    }

    // ---- region → Shard ----

    /// A message from the region (or, `InitDone`, from itself).
    pub fn receive(&mut self, now: Instant, msg: ShardMsg, out: &mut Outbox) {
        let remember = self.remember();
        match &mut self.phase {
            Phase::Initializing { stash, loading } => {
                if msg != ShardMsg::InitDone || *loading {
                    stash.push(msg);
                    return;
                }
                if remember {
                    // §6.1: GetEntities from the store, with waiting-for-state-timeout.
                    *loading = true;
                    out.store(self.id, self.uid, self.instance, StoreOp::GetEntities);
                    out.set_timer(
                        self.timer(ShardTimer::RememberEntityTimeout),
                        Duration::from_millis(self.cfg.settings.waiting_for_state_timeout_ms),
                    );
                    return;
                }
                self.initialized(now, out);
                return;
            }
            Phase::Restarting { stash } => {
                stash.push(msg);
                return;
            }
            _ => {}
        }
        match msg {
            ShardMsg::InitDone => {}
            ShardMsg::User(env) => self.deliver(now, env, out),
            ShardMsg::HandOff { from } => {
                if self.writing {
                    // `case _: CoordinatorMessage => stash()` while waiting for the store.
                    self.stashed_handoff = Some(from);
                } else {
                    self.hand_off(from, out);
                }
            }
            ShardMsg::StartEntity {
                entity,
                starter,
                for_shard,
            } => {
                if self.phase == Phase::Running {
                    self.start_entity(now, entity, Some((starter, for_shard)), out);
                }
            }
            ShardMsg::EntityMoved { entity, last } => {
                // `EntitiesMovedToOtherShard` (akka#22289): forget them in this shard's store,
                // in one write (`rememberUpdate(remove = movedEntityIds)`).
                if self.phase == Phase::Running {
                    if let Some(rec) = self.entities.get_mut(&entity) {
                        if rec.state == EntityState::RememberedButNotCreated {
                            rec.state = EntityState::RememberingStop;
                        }
                    }
                    if last {
                        self.remember_update(out);
                    }
                }
            }
            ShardMsg::Fail => {
                if self.phase == Phase::Running {
                    self.fail(ShardFailure::Injected, out);
                }
            }
        }
    }

    /// Initialisation is complete: `ShardInitialized` to the region, then unstash (SH:606).
    fn initialized(&mut self, now: Instant, out: &mut Outbox) {
        let stash = match std::mem::replace(&mut self.phase, Phase::Running) {
            Phase::Initializing { stash, .. } => stash,
            _ => Vec::new(),
        };
        out.local(
            Local::ShardInitialized {
                shard: self.id,
                uid: self.uid,
            },
            LocalDelay::Message,
        );
        for m in stash {
            self.receive(now, m, out);
        }
    }

    /// The remember-entities store answered (`instance` is the Shard instance that asked).
    pub fn store_reply(
        &mut self,
        now: Instant,
        instance: u32,
        kind: StoreReplyKind,
        out: &mut Outbox,
    ) {
        if instance != self.instance {
            return; // for an instance that died in a restart
        }
        match kind {
            StoreReplyKind::Remembered(ids) => {
                if !matches!(self.phase, Phase::Initializing { loading: true, .. }) {
                    return;
                }
                out.cancel_timer(self.timer(ShardTimer::RememberEntityTimeout));
                for e in ids {
                    if self.cfg.options.remembered_started_directly {
                        // Akka before akka#22289 (§12 B9): remembered ids are created as
                        // children at once, whatever the extractor now says.
                        if !self.entities.contains_key(&e)
                            && self
                                .create_actor(now, e, EntityState::RememberedButNotCreated, out)
                                .is_none()
                        {
                            return; // it threw (§12 B35 pre-fix): nothing more of this message
                        }
                        continue;
                    }
                    self.entities.entry(e).or_insert_with(|| {
                        EntityRec::new(EntityState::RememberedButNotCreated, now)
                    });
                    // The starter starts it through the region (§6.1, akka#22289).
                    out.local(
                        Local::StartRemembered {
                            shard: self.id,
                            entity: e,
                        },
                        LocalDelay::Message,
                    );
                }
                self.initialized(now, out);
            }
            StoreReplyKind::StoreStopped => match self.phase {
                // While loading, the store's crash stops the Shard; the region starts it
                // again after shard-failure-backoff (SH awaitingRememberedEntities).
                Phase::Initializing { .. } => {
                    out.observe(Observation::ShardLoadFailed(self.id));
                    self.stop_self(out)
                }
                // Running: `rememberEntityStoreCrashed` throws, and the Shard restarts.
                Phase::Running => self.fail(ShardFailure::StoreStopped, out),
                _ => {}
            },
            StoreReplyKind::UpdateDone => {
                if !self.writing || self.phase != Phase::Running {
                    return; // in hand-off only the stopper's Terminated is handled
                }
                self.writing = false;
                out.cancel_timer(self.timer(ShardTimer::RememberEntityTimeout));
                self.update_done(now, out);
            }
        }
    }

    /// `onUpdateDone` (§6.4): start what was written as started, complete the passivation of
    /// what was written as stopped, then write the next batch.
    fn update_done(&mut self, now: Instant, out: &mut Outbox) {
        let written: Vec<(EntityId, EntityState)> = self
            .entities
            .iter()
            .filter(|(_, r)| r.in_write)
            .map(|(e, r)| (*e, r.state))
            .collect();
        for (e, state) in written {
            if let Some(rec) = self.entities.get_mut(&e) {
                rec.in_write = false;
            }
            match state {
                EntityState::RememberingStart => {
                    let acks = self
                        .entities
                        .get_mut(&e)
                        .map(|r| std::mem::take(&mut r.ack_to))
                        .unwrap_or_default();
                    let Some(inc) = self.create_actor(now, e, EntityState::RememberingStart, out)
                    else {
                        return; // it threw (§12 B35 pre-fix): no buffer, no ack
                    };
                    self.send_buffer(e, inc, out);
                    for (starter, for_shard) in acks {
                        self.ack(e, starter, for_shard, out);
                    }
                }
                EntityState::RememberingStop => self.passivate_completed(now, e, out),
                _ => {}
            }
            if self.phase != Phase::Running {
                return; // it failed meanwhile
            }
        }
        self.remember_update(out);
        if !self.writing {
            // Idle again: unstash.
            if let Some(from) = self.stashed_handoff.take() {
                self.hand_off(from, out);
            }
        }
    }

    /// `rememberUpdate`: write every start and stop not written yet, unless a write is in
    /// flight (then they go in the next batch, §6.4).
    fn remember_update(&mut self, out: &mut Outbox) {
        if self.writing {
            return;
        }
        let (mut started, mut stopped) = (Vec::new(), Vec::new());
        for (e, rec) in self.entities.iter_mut() {
            match rec.state {
                EntityState::RememberingStart => started.push(*e),
                EntityState::RememberingStop => stopped.push(*e),
                _ => continue,
            }
            rec.in_write = true;
        }
        if started.is_empty() && stopped.is_empty() {
            return;
        }
        self.writing = true;
        out.store(
            self.id,
            self.uid,
            self.instance,
            StoreOp::Update { started, stopped },
        );
        out.set_timer(
            self.timer(ShardTimer::RememberEntityTimeout),
            Duration::from_millis(self.cfg.settings.updating_state_timeout_ms),
        );
    }

    /// `passivateCompleted` (§8 step 4): the entity is gone; messages that arrived meanwhile
    /// start it again (the fix of §12 B30).
    fn passivate_completed(&mut self, now: Instant, e: EntityId, out: &mut Outbox) {
        let Some(mut rec) = self.entities.remove(&e) else {
            return;
        };
        let buffer = std::mem::take(&mut rec.buffer);
        if buffer.is_empty() {
            return;
        }
        if self.remember() {
            if self.cfg.options.remember_passivation_forgets_buffer {
                // §12 B30 pre-fix: the buffer stays, undelivered, until a later message.
                self.stranded.insert(e, buffer);
                return;
            }
            let mut rec = EntityRec::new(EntityState::RememberingStart, now);
            rec.buffer = buffer;
            self.entities.insert(e, rec);
            self.remember_update(out);
        } else {
            self.buffered -= buffer.len();
            if let Some(inc) = self.create_actor(now, e, EntityState::Active, out) {
                for env in buffer {
                    self.to_entity(inc, env, out);
                }
            }
        }
    }

    /// A user message from the region (Shard `deliverMessage`, SH:1073-1149).
    fn deliver(&mut self, now: Instant, env: Envelope, out: &mut Outbox) {
        match self.phase {
            Phase::Running => {}
            Phase::Initializing { .. } | Phase::Restarting { .. } => {} // stashed by `receive`
            // In hand-off the Shard handles only `Terminated`: entity messages are unhandled,
            // dead letters (§12 B23).
            Phase::HandingOff { .. } => {
                return out.observe(Observation::Dropped {
                    env,
                    reason: DropReason::HandingOffShard,
                })
            }
            Phase::Stopping | Phase::Stopped => {
                return out.observe(Observation::Dropped {
                    env,
                    reason: DropReason::ShardGone,
                })
            }
        }
        let e = env.entity;
        // The common case first, with one lookup: an active entity.
        if let Some(rec) = self.entities.get_mut(&e) {
            if rec.state == EntityState::Active {
                rec.last_active = now;
                let inc = rec.inc;
                return self.to_entity(inc, env, out);
            }
        }
        let state = self.entities.get(&e).map(|r| r.state);
        match state {
            Some(EntityState::Active) => {} // handled above
            Some(
                EntityState::Passivating
                | EntityState::RememberingStart
                | EntityState::RememberingStop,
            ) => self.buffer(e, env, out),
            Some(EntityState::WaitingForRestart | EntityState::RememberedButNotCreated) => {
                match self.restart_now(now, e, out) {
                    Some(inc) => self.to_entity(inc, env, out),
                    // The Shard threw while handling it: the message is lost with the instance.
                    None => out.observe(Observation::Dropped {
                        env,
                        reason: DropReason::ShardRestart,
                    }),
                }
            }
            None if !self.remember() => {
                if let Some(inc) = self.create_actor(now, e, EntityState::Active, out) {
                    self.to_entity(inc, env, out);
                }
            }
            None => {
                // §6.3: buffer, RememberingStart, write (or join the next batch).
                let mut rec = EntityRec::new(EntityState::RememberingStart, now);
                if let Some(old) = self.stranded.remove(&e) {
                    rec.buffer = old; // §12 B30 pre-fix: delivered with this one
                }
                self.entities.insert(e, rec);
                self.buffer(e, env, out);
                self.remember_update(out);
            }
        }
    }

    /// Start a `WaitingForRestart` or `RememberedButNotCreated` entity now (its next message
    /// or `StartEntity` came first); the fix of §12 B33 cancels the pending restart timer.
    fn restart_now(&mut self, now: Instant, e: EntityId, out: &mut Outbox) -> Option<u64> {
        if !self.cfg.options.restart_timer_not_cancelled && self.restart_timers.remove(&e) {
            out.cancel_timer(self.timer(ShardTimer::RestartTerminatedEntity(e)));
        }
        self.create_actor(now, e, EntityState::RememberedButNotCreated, out)
    }

    /// Append to the entity's buffer in the Shard, within `buffer-size`.
    fn buffer(&mut self, e: EntityId, env: Envelope, out: &mut Outbox) {
        if self.buffered >= self.cfg.settings.buffer_size {
            return out.observe(Observation::Dropped {
                env,
                reason: DropReason::BufferFull,
            });
        }
        if let Some(rec) = self.entities.get_mut(&e) {
            rec.buffer.push_back(env);
            self.buffered += 1;
        }
    }

    /// Deliver the entity's buffer to its new actor `inc` (`sendMsgBuffer`).
    fn send_buffer(&mut self, e: EntityId, inc: u64, out: &mut Outbox) {
        let Some(rec) = self.entities.get_mut(&e) else {
            return;
        };
        let buffer = std::mem::take(&mut rec.buffer);
        self.buffered -= buffer.len();
        for env in buffer {
            self.to_entity(inc, env, out);
        }
    }

    fn to_entity(&self, inc: u64, env: Envelope, out: &mut Outbox) {
        out.local(
            Local::ToEntity {
                shard: self.id,
                uid: self.uid,
                inc,
                env,
            },
            LocalDelay::Message,
        );
    }

    fn ack(&self, entity: EntityId, starter: RegionRef, for_shard: ShardId, out: &mut Outbox) {
        out.send(
            Addr::region(starter),
            Msg::StartEntityAck {
                entity,
                shard: self.id,
                for_shard,
            },
        );
    }

    /// `startEntity(id, ackTo)` (SH:813-847, with the fix of §12 B34).
    fn start_entity(
        &mut self,
        now: Instant,
        e: EntityId,
        ack: Option<(RegionRef, ShardId)>,
        out: &mut Outbox,
    ) {
        let state = self.entities.get(&e).map(|r| r.state);
        match state {
            Some(EntityState::Active) => {
                if let Some((s, f)) = ack {
                    self.ack(e, s, f, out);
                }
            }
            Some(EntityState::RememberingStart) => {
                if let (Some(a), Some(rec)) = (ack, self.entities.get_mut(&e)) {
                    rec.ack_to.push(a);
                }
            }
            Some(EntityState::RememberedButNotCreated | EntityState::WaitingForRestart) => {
                self.restart_now(now, e, out);
                if let Some((s, f)) = ack {
                    self.ack(e, s, f, out);
                }
            }
            // Akka buffers the StartEntity behind the passivation, or stashes it behind the
            // stop write; here it is dropped, and the starter's retry brings it back.
            Some(EntityState::Passivating | EntityState::RememberingStop) => {}
            None if !self.remember() => {
                self.create_actor(now, e, EntityState::Active, out);
                if let Some((s, f)) = ack {
                    self.ack(e, s, f, out);
                }
            }
            None => {
                if self.writing && self.cfg.options.start_entity_concurrent_update {
                    // §12 B34 pre-fix: a second Update while one is in flight, which the
                    // store's contract forbids (§2.6); Akka's Shard ended in an invalid state.
                    return self.fail(
                        ShardFailure::IllegalState(
                            "second concurrent remember-entities Update (akka#32770)",
                        ),
                        out,
                    );
                }
                let mut rec = EntityRec::new(EntityState::RememberingStart, now);
                rec.ack_to.extend(ack);
                if let Some(old) = self.stranded.remove(&e) {
                    rec.buffer = old; // §12 B30 pre-fix: sendMsgBuffer after the start write
                }
                self.entities.insert(e, rec);
                self.remember_update(out);
            }
        }
    }

    /// `getOrCreateEntity`: a new entity actor (→ Active). `from` is the state it leaves.
    /// Under the pre-fix behaviour of §12 B35 a name still reserved by a terminating actor
    /// makes the Shard throw instead.
    fn create_actor(
        &mut self,
        now: Instant,
        e: EntityId,
        from: EntityState,
        out: &mut Outbox,
    ) -> Option<u64> {
        let _ = from;
        if self.reserved.contains_key(&e) {
            self.fail(
                ShardFailure::IllegalState(
                    "InvalidActorNameException: entity name still reserved (akka.net#7979)",
                ),
                out,
            );
            return None;
        }
        let inc = out.new_incarnation();
        out.observe(Observation::EntityStarted {
            entity: e,
            shard: self.id,
            incarnation: inc,
        });
        let actor = self.cfg.factory.create(e);
        let rec = self
            .entities
            .entry(e)
            .or_insert_with(|| EntityRec::new(EntityState::Active, now));
        rec.inc = inc;
        rec.state = EntityState::Active;
        rec.actor = Some(actor);
        rec.stopping = false;
        rec.stop_reason = StopReason::SelfStop;
        rec.last_active = now;
        rec.ignores_stop = false;
        Some(inc)
    }

    /// `HandOff` (SH `handOff`): with no live entity actor, `ShardStopped` at once and stop
    /// (the fix of §12 B13 decides on live actors); else a HandOffStopper sends the hand-off
    /// stop message to every entity, force-stops the rest after its stop timeout, and sends
    /// `ShardStopped` when all have terminated (§7 t5-t6).
    fn hand_off(&mut self, from: Addr, out: &mut Outbox) {
        match self.phase {
            Phase::Running => {}
            // Fix option (hazards/handoff-cut-by-hand-over.toml): a second worker's HandOff
            // is answered when the running hand-off ends.
            Phase::HandingOff { to, .. } if self.cfg.options.handoff_during_handoff_answered => {
                if to != from && !self.late_handoffs.contains(&from) {
                    self.late_handoffs.push(from);
                }
                return;
            }
            // "HandOff shard received during existing handOff": ignored (SH:865-866), and
            // the HandOffStopper answers only the first worker.
            _ => return,
        }
        let mut waiting = BTreeSet::new();
        for (e, rec) in &self.entities {
            if rec.actor.is_none() {
                continue;
            }
            waiting.insert(rec.inc);
            out.local(
                Local::StopEntity {
                    shard: self.id,
                    uid: self.uid,
                    entity: *e,
                    inc: rec.inc,
                    reason: StopReason::HandOff,
                },
                LocalDelay::Message,
            );
        }
        let pre_fix_b13 = self.cfg.options.handoff_counts_remembered_entities;
        if waiting.is_empty() && (!pre_fix_b13 || self.entities.is_empty()) {
            out.send(from, Msg::ShardStopped { shard: self.id });
            self.stop_self(out);
            return;
        }
        // (With `handoff-counts-remembered-entities`, §12 B13 pre-fix, `waiting` may be empty
        // here: the stopper then never answers.)
        out.set_timer(
            self.timer(ShardTimer::HandOffStopTimeout),
            self.cfg.settings.handoff_stop_timeout(),
        );
        self.phase = Phase::HandingOff { to: from, waiting };
    }

    // ---- entity actors ----

    /// The live, not stopping entity actor `inc` of `entity`, if it is one.
    fn running_actor(&mut self, entity: EntityId, inc: u64) -> Option<&mut EntityRec> {
        self.entities
            .get_mut(&entity)
            .filter(|r| r.inc == inc && !r.stopping && r.actor.is_some())
    }

    /// A user message reaches entity actor `inc`, which processes it in order. If the actor
    /// has stopped or is stopping, what was in its mailbox is lost (§8 step 6).
    pub fn entity_receive(&mut self, inc: u64, env: Envelope, out: &mut Outbox) {
        match self.running_actor(env.entity, inc) {
            Some(rec) => {
                if let Some(a) = rec.actor.as_mut() {
                    a.receive(&env);
                }
                out.observe(Observation::Delivered {
                    env,
                    incarnation: inc,
                });
            }
            None => out.observe(Observation::Dropped {
                env,
                reason: DropReason::EntityStopped,
            }),
        }
    }

    /// Entity actor `inc` processes its stop message, stops itself or crashes: it stops, and
    /// terminates after its stop duration.
    pub fn entity_stop(
        &mut self,
        entity: EntityId,
        inc: u64,
        reason: StopReason,
        out: &mut Outbox,
    ) {
        let (shard, uid) = (self.id, self.uid);
        let remember = self.remember();
        let forget = self.cfg.options.entity_restart_before_terminated;
        if let Some(rec) = self.running_actor(entity, inc) {
            if reason == StopReason::Passivation && rec.ignores_stop {
                return; // the stop message it named is one it does not handle (§12 B32)
            }
            rec.stopping = true;
            rec.stop_reason = reason;
            out.local(
                Local::EntityTerminated {
                    shard,
                    uid,
                    entity,
                    inc,
                },
                LocalDelay::EntityStop,
            );
            if reason == StopReason::Crashed && remember && forget && self.phase == Phase::Running {
                // §12 B35 pre-fix: the failed entity is forgotten (NoState) while its actor
                // still terminates and its name stays reserved.
                let rec = self.entities.remove(&entity).expect("just found");
                self.buffered -= rec.buffer.len();
                drop_all(rec.buffer, DropReason::EntityStopped, out);
                self.reserved.insert(entity, inc);
            }
        }
    }

    /// `Passivate(stopMessage)` from entity actor `inc` (§8 step 2, SH:983-1071).
    pub fn passivate(&mut self, entity: EntityId, inc: u64, ignores_stop: bool, out: &mut Outbox) {
        if self.phase != Phase::Running {
            return; // in hand-off only `Terminated` is handled
        }
        self.start_passivation(entity, inc, ignores_stop, out);
    }

    /// Passivate entity actor `inc` (§8 step 2); `ignores_stop`: its stop message is one it
    /// never handles (§12 B32; the idle strategy's hand-off stop message always stops it).
    fn start_passivation(
        &mut self,
        entity: EntityId,
        inc: u64,
        ignores_stop: bool,
        out: &mut Outbox,
    ) {
        let Some(rec) = self.entities.get_mut(&entity) else {
            return; // "Unknown entity. Not sending stopMessage back to entity."
        };
        if rec.actor.is_none()
            || rec.inc != inc
            || rec.state != EntityState::Active
            || !rec.buffer.is_empty()
        {
            // Not this actor; "Passivation already in progress"; or it has buffered messages.
            return;
        }
        rec.state = EntityState::Passivating;
        rec.ignores_stop = ignores_stop;
        out.local(
            Local::StopEntity {
                shard: self.id,
                uid: self.uid,
                entity,
                inc,
                reason: StopReason::Passivation,
            },
            LocalDelay::Message,
        );
        let timeout = self.cfg.settings.passivation_stop_timeout_ms;
        if timeout > 0 {
            out.set_timer(
                self.timer(ShardTimer::PassivationTimedOut(entity)),
                Duration::from_millis(timeout),
            );
        }
    }

    /// Stop entity actor `rec` by force (`context.stop`): unless it is stopping already, it
    /// terminates after its stop duration.
    fn force_stop(
        id: ShardId,
        uid: u32,
        entity: EntityId,
        rec: &mut EntityRec,
        reason: StopReason,
        out: &mut Outbox,
    ) {
        if rec.stopping || rec.actor.is_none() {
            return;
        }
        rec.stopping = true;
        rec.stop_reason = reason;
        out.local(
            Local::EntityTerminated {
                shard: id,
                uid,
                entity,
                inc: rec.inc,
            },
            LocalDelay::EntityStop,
        );
    }

    /// Entity actor `inc` terminated (`entityTerminated`, SH:918-981).
    pub fn entity_terminated(
        &mut self,
        now: Instant,
        entity: EntityId,
        inc: u64,
        out: &mut Outbox,
    ) {
        if self.reserved.get(&entity) == Some(&inc) {
            // The forgotten actor of §12 B35 finally terminates; its name is free again.
            self.reserved.remove(&entity);
            out.observe(Observation::EntityStopped {
                entity,
                reason: StopReason::Crashed,
                incarnation: inc,
            });
            return;
        }
        let Some(rec) = self.entities.get_mut(&entity) else {
            return;
        };
        if rec.inc != inc || rec.actor.is_none() {
            return;
        }
        let reason = if rec.stopping {
            rec.stop_reason
        } else {
            StopReason::SelfStop
        };
        out.observe(Observation::EntityStopped {
            entity,
            reason,
            incarnation: inc,
        });
        rec.actor = None;
        let was_passivating = rec.state == EntityState::Passivating;
        if was_passivating {
            out.cancel_timer(self.timer(ShardTimer::PassivationTimedOut(entity)));
        }
        match &mut self.phase {
            Phase::Running => {}
            Phase::Stopping | Phase::Stopped | Phase::Restarting { .. } => {
                let rec = self.entities.remove(&entity).expect("just found");
                self.buffered -= rec.buffer.len();
                let why = match self.phase {
                    Phase::Restarting { .. } => DropReason::ShardRestart,
                    _ => DropReason::ShardBufferLost,
                };
                drop_all(rec.buffer, why, out);
                self.maybe_terminated(now, out);
                return;
            }
            Phase::HandingOff { waiting, .. } => {
                // The Shard unwatched its entities when the HandOffStopper started and handles
                // only the stopper's `Terminated` (SH `handOff`/`receiveTerminated`, since
                // akka#29230 in 2.6.7; before, `handOffStopper.isEmpty` guarded
                // `entityTerminated`): nothing restarts; what was buffered for the entity
                // dies with the Shard.
                waiting.remove(&inc);
                let rec = self.entities.remove(&entity).expect("just found");
                self.buffered -= rec.buffer.len();
                drop_all(rec.buffer, DropReason::ShardBufferLost, out);
                self.maybe_stopper_done(now, out);
                return;
            }
            Phase::Initializing { .. } => {}
        }
        // Running (or initialising).
        if !self.remember() && !was_passivating && self.cfg.options.self_stop_illegal_transition {
            // §12 B31 schedule B, Akka 2.6.7: "Transition from Active to NoState not allowed".
            return self.fail(
                ShardFailure::IllegalState(
                    "invalid entity state transition Active → NoState (akka#29383)",
                ),
                out,
            );
        }
        if !self.remember() {
            let rec = self.entities.remove(&entity).expect("just found");
            let mut buffer = rec.buffer;
            self.buffered -= buffer.len();
            if self.cfg.options.mutation
                == crate::protocol::settings::Mutation::ShardForgetsPassivationBuffer
            {
                buffer.clear(); // deliberately broken: no Dropped, no restart
            }
            if !buffer.is_empty() {
                // §8 step 4 (B30/B31 fix): messages arrived while it passivated: start it
                // again and deliver them.
                if let Some(inc) = self.create_actor(now, entity, EntityState::Active, out) {
                    for env in buffer {
                        self.to_entity(inc, env, out);
                    }
                }
            }
            return;
        }
        let rec = self.entities.get_mut(&entity).expect("just found");
        if was_passivating {
            // §8 step 4, remember on: RememberingStop, written now or in the next batch.
            rec.state = EntityState::RememberingStop;
            self.remember_update(out);
        } else {
            // §6.4: stopped without Passivate: WaitingForRestart, restarted after the back-off.
            rec.state = EntityState::WaitingForRestart;
            self.restart_timers.insert(entity);
            out.set_timer(
                self.timer(ShardTimer::RestartTerminatedEntity(entity)),
                Duration::from_millis(self.cfg.settings.entity_restart_backoff_ms),
            );
        }
    }

    /// The HandOffStopper saw every entity it was given terminate: `ShardStopped` to the
    /// worker, then the stopper stops and the Shard stops with it (SH `receiveTerminated`).
    fn maybe_stopper_done(&mut self, now: Instant, out: &mut Outbox) {
        if let Phase::HandingOff { to, waiting } = &self.phase {
            if waiting.is_empty() {
                let to = *to;
                out.send(to, Msg::ShardStopped { shard: self.id });
                for late in std::mem::take(&mut self.late_handoffs) {
                    out.send(late, Msg::ShardStopped { shard: self.id });
                }
                out.cancel_timer(self.timer(ShardTimer::HandOffStopTimeout));
                self.stop_self(out);
                let _ = now;
            }
        }
    }

    /// Cancel the instance's timers (an actor's timers die with the instance).
    fn cancel_timers(&mut self, out: &mut Outbox) {
        if self.idle_passivation() {
            out.cancel_timer(self.timer(ShardTimer::PassivateIdleTick));
        }
        if self.remember() {
            out.cancel_timer(self.timer(ShardTimer::RememberEntityTimeout));
        }
        for e in std::mem::take(&mut self.restart_timers) {
            out.cancel_timer(self.timer(ShardTimer::RestartTerminatedEntity(e)));
        }
        for (e, rec) in &self.entities {
            if rec.state == EntityState::Passivating {
                out.cancel_timer(self.timer(ShardTimer::PassivationTimedOut(*e)));
            }
        }
    }

    /// `context.stop(self)`: every child still alive is stopped; the Shard terminates when the
    /// last one has.
    fn stop_self(&mut self, out: &mut Outbox) {
        // From here on the Shard handles no message: for the checkers it is no longer hosted,
        // even while its remaining children stop.
        out.observe(Observation::ShardUnhosted(self.id));
        self.cancel_timers(out);
        // What it stashed while initialising goes to dead letters with it.
        if let Phase::Initializing { stash, .. } = &mut self.phase {
            drop_stash(std::mem::take(stash), DropReason::ShardGone, out);
        }
        self.phase = Phase::Stopping;
        self.forget_actorless(DropReason::ShardBufferLost, out);
        let (id, uid) = (self.id, self.uid);
        for (e, rec) in self.entities.iter_mut() {
            Self::force_stop(id, uid, *e, rec, StopReason::Forced, out);
        }
        self.maybe_terminated(Instant::ZERO, out);
    }

    /// Drop every entity record without an actor, and the stranded buffers, with their
    /// buffered messages.
    fn forget_actorless(&mut self, why: DropReason, out: &mut Outbox) {
        let gone: Vec<EntityId> = self
            .entities
            .iter()
            .filter(|(_, r)| r.actor.is_none())
            .map(|(e, _)| *e)
            .collect();
        for e in gone {
            if let Some(rec) = self.entities.remove(&e) {
                self.buffered -= rec.buffer.len();
                drop_all(rec.buffer, why, out);
            }
        }
        for (_, b) in std::mem::take(&mut self.stranded) {
            self.buffered -= b.len();
            drop_all(b, why, out);
        }
        self.writing = false;
        self.stashed_handoff = None;
    }

    /// The Shard threw: Akka's default supervision restarts it. Every entity is stopped, and
    /// when all have terminated the new instance initialises (and loads its remembered
    /// entities) again; the old instance's buffers are lost.
    fn fail(&mut self, cause: ShardFailure, out: &mut Outbox) {
        if !matches!(self.phase, Phase::Running | Phase::Initializing { .. }) {
            return;
        }
        out.observe(Observation::ShardFailed {
            shard: self.id,
            cause,
        });
        self.cancel_timers(out);
        let stash = match std::mem::replace(&mut self.phase, Phase::Running) {
            Phase::Initializing { stash, .. } => stash,
            _ => Vec::new(),
        };
        // Stash what the old instance stashed; later messages join it (the mailbox). A
        // `HandOff` stashed during a store write goes back to the mailbox too (Akka's
        // `UnrestrictedStash.preRestart` unstashes into the mailbox).
        let mut stash = stash;
        if let Some(from) = self.stashed_handoff.take() {
            stash.insert(0, ShardMsg::HandOff { from });
        }
        self.phase = Phase::Restarting { stash };
        self.forget_actorless(DropReason::ShardRestart, out);
        let (id, uid) = (self.id, self.uid);
        for (e, rec) in self.entities.iter_mut() {
            let buffer = std::mem::take(&mut rec.buffer);
            self.buffered -= buffer.len();
            drop_all(buffer, DropReason::ShardRestart, out);
            Self::force_stop(id, uid, *e, rec, StopReason::ShardRestart, out);
        }
        self.instance = self.instance.wrapping_add(1);
        self.maybe_terminated(Instant::ZERO, out);
    }

    fn maybe_terminated(&mut self, now: Instant, out: &mut Outbox) {
        if !self.entities.is_empty() {
            return;
        }
        match &mut self.phase {
            Phase::Stopping => {
                self.phase = Phase::Stopped;
                out.local(
                    Local::ShardTerminated {
                        shard: self.id,
                        uid: self.uid,
                    },
                    LocalDelay::Message,
                );
            }
            Phase::Restarting { stash } => {
                // The new instance: initialise again, with the kept mailbox.
                let stash = std::mem::take(stash);
                self.phase = Phase::Initializing {
                    stash,
                    loading: false,
                };
                self.pre_start(out);
                let _ = now;
            }
            _ => {}
        }
    }

    /// A timer of this Shard fired.
    pub fn timeout(&mut self, now: Instant, kind: ShardTimer, out: &mut Outbox) {
        let (id, uid) = (self.id, self.uid);
        match kind {
            ShardTimer::HandOffStopTimeout => {
                // The HandOffStopper's StopTimeout: stop the rest by force (SR:530-541).
                if let Phase::HandingOff { waiting, .. } = &self.phase {
                    let waiting = waiting.clone();
                    for (e, rec) in self.entities.iter_mut() {
                        if rec.actor.is_some() && waiting.contains(&rec.inc) {
                            Self::force_stop(id, uid, *e, rec, StopReason::Forced, out);
                        }
                    }
                }
            }
            ShardTimer::PassivationTimedOut(e) => {
                // akka#32439: still passivating after stop-timeout → context.stop(entity).
                if let Some(rec) = self.entities.get_mut(&e) {
                    if rec.state == EntityState::Passivating {
                        Self::force_stop(id, uid, e, rec, StopReason::Forced, out);
                    }
                }
            }
            ShardTimer::PassivateIdleTick => {
                if self.phase != Phase::Running {
                    return;
                }
                let idle = Duration::from_millis(self.cfg.settings.passivate_idle_entity_after_ms);
                let idle_ones: Vec<(EntityId, u64)> = self
                    .entities
                    .iter()
                    .filter(|(_, r)| {
                        r.actor.is_some()
                            && r.state == EntityState::Active
                            && now - r.last_active >= idle
                    })
                    .map(|(e, r)| (*e, r.inc))
                    .collect();
                for (e, inc) in idle_ones {
                    // Automatic passivation sends the hand-off stop message (§8 step 1).
                    self.start_passivation(e, inc, false, out);
                }
                out.set_timer(
                    self.timer(ShardTimer::PassivateIdleTick),
                    Duration::from_micros((idle.as_micros() / 2).max(1)),
                );
            }
            ShardTimer::RestartTerminatedEntity(e) => {
                self.restart_timers.remove(&e);
                if self.phase != Phase::Running {
                    return;
                }
                match self.entities.get(&e).map(|r| r.state) {
                    Some(EntityState::WaitingForRestart) => {
                        self.create_actor(now, e, EntityState::WaitingForRestart, out);
                    }
                    Some(EntityState::Active) => {} // "already restarted"
                    _ => self.fail(
                        ShardFailure::IllegalState(
                            "RestartTerminatedEntity in an unexpected state (akka#32749)",
                        ),
                        out,
                    ),
                }
            }
            ShardTimer::RememberEntityTimeout => match self.phase {
                // §6.1: the load timed out: the Shard stops (the region restarts it after
                // shard-failure-backoff).
                Phase::Initializing { loading: true, .. } => {
                    out.observe(Observation::ShardLoadFailed(self.id));
                    self.stop_self(out)
                }
                // §6.4: a write timed out: the Shard throws.
                Phase::Running if self.writing => self.fail(ShardFailure::StoreTimeout, out),
                _ => {}
            },
        }
    }

    /// The region restarts (an exception), or its node stops: its children die with it, at
    /// once; what the Shard buffered is lost.
    pub fn kill(&mut self, reason: StopReason, out: &mut Outbox) {
        if !self.stopping() {
            out.observe(Observation::ShardUnhosted(self.id));
        }
        for (e, rec) in std::mem::take(&mut self.entities) {
            if rec.actor.is_some() {
                out.observe(Observation::EntityStopped {
                    entity: e,
                    reason,
                    incarnation: rec.inc,
                });
            }
            drop_all(rec.buffer, DropReason::RegionRestart, out);
        }
        for (e, inc) in std::mem::take(&mut self.reserved) {
            out.observe(Observation::EntityStopped {
                entity: e,
                reason,
                incarnation: inc,
            });
        }
        for (_, b) in std::mem::take(&mut self.stranded) {
            drop_all(b, DropReason::RegionRestart, out);
        }
        if let Phase::Initializing { stash, .. } | Phase::Restarting { stash } = &mut self.phase {
            drop_stash(std::mem::take(stash), DropReason::RegionRestart, out);
        }
        self.buffered = 0;
        self.phase = Phase::Stopped;
    }
}

/// Report every user message of a Shard's stash (its mailbox) dropped for `reason`.
fn drop_stash(stash: Vec<ShardMsg>, reason: DropReason, out: &mut Outbox) {
    for m in stash {
        if let ShardMsg::User(env) = m {
            out.observe(Observation::Dropped { env, reason });
        }
    }
}

/// Report every message of `buffer` dropped for `reason`.
fn drop_all(buffer: VecDeque<Envelope>, reason: DropReason, out: &mut Outbox) {
    for env in buffer {
        out.observe(Observation::Dropped { env, reason });
    }
}
