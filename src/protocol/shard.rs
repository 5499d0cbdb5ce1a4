//! Shard (akka-sharding.md §6): a child actor of its region, with its entities as children.
//!
//! Sans-IO like every role, but owned by its [`Region`](super::region::Region): the region
//! creates it, routes its local messages ([`Local`]) and timers to it, and learns of its
//! termination through [`Local::ShardTerminated`]. Every message between the region, a Shard
//! and an entity is its own event ([`Output::Local`](super::Output::Local)), so a message can
//! arrive while a stop is in flight: the races behind §12 B1, B19, B23 and the mailbox loss of
//! §8 step 6.
//!
//! Modelling choices (granularity, not behaviour):
//! - No lease and no remember-entities yet: a Shard initialises for a time the host draws
//!   (the scenario's `shard-init-ms`, default 0), stashing what it receives meanwhile, then
//!   sends `ShardInitialized` (SH:489-614).
//! - An entity actor lives in its Shard's record. It processes its messages in order; its stop
//!   message makes it stop, and it terminates (postStop, finishing its work) after a stop
//!   duration the host draws. Messages that reach it meanwhile are lost, as Akka documents.
//! - The death-watch notice of an entity's termination (`EntityTerminated`) is the
//!   termination event itself.

use crate::ids::{EntityId, ShardId};
use crate::protocol::entity::Entity;
use crate::protocol::region::RegionConfig;
use crate::protocol::{
    Addr, DropReason, Envelope, Local, LocalDelay, Msg, Observation, Outbox, ShardMsg, ShardTimer,
    StopReason, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// The state of one entity in its Shard (§6.2, SH:120-271). Without remember-entities an
/// entity is `Active` or `Passivating`, and an absent record is `NoState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityState {
    /// Running; messages go to it.
    Active,
    /// Its stop message went out after a `Passivate`; messages for it are buffered in the
    /// Shard until it terminates (§8 steps 2-3).
    Passivating,
}

/// One entity actor and its state in the Shard.
struct EntityRec {
    /// The actor's incarnation (run-unique).
    inc: u64,
    state: EntityState,
    actor: Box<dyn Entity>,
    /// The actor processed its stop message or was stopped by force: it handles nothing more
    /// and terminates after its stop duration.
    stopping: bool,
    /// Why it stops (for the `EntityStopped` fact).
    stop_reason: StopReason,
    /// When the Shard last delivered a message to it (idle passivation).
    last_active: Instant,
    /// Messages buffered in the Shard while it passivates (SH `messageBuffers`).
    buffer: VecDeque<Envelope>,
    /// Its own `Passivate` named a stop message it never handles (§12 B32).
    ignores_stop: bool,
}

/// Where the Shard is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Initialising (SH:489-614): everything is stashed until it is done.
    Initializing { stash: Vec<ShardMsg> },
    /// Handling messages.
    Running,
    /// `HandOff` received with live entities: the HandOffStopper waits for the entities it
    /// was given (`waiting`, by incarnation) and then sends `ShardStopped` to `to` (§7 t5-t6).
    /// The Shard handles only terminations meanwhile.
    HandingOff { to: Addr, waiting: BTreeSet<u64> },
    /// Stopping itself: waiting for its remaining children to terminate.
    Stopping,
    /// Terminated (the region has been told).
    Stopped,
}

/// A Shard actor.
pub struct Shard {
    id: ShardId,
    uid: u32,
    cfg: Arc<RegionConfig>,
    phase: Phase,
    entities: BTreeMap<EntityId, EntityRec>,
    /// Messages in every entity's buffer.
    buffered: usize,
}

impl Shard {
    /// A new Shard actor `uid` for `shard` (`getShard` creating the child, SR:1399-1437). It
    /// initialises at once (no lease, no remember-entities) and tells its region.
    pub fn new(
        id: ShardId,
        uid: u32,
        cfg: Arc<RegionConfig>,
        now: Instant,
        out: &mut Outbox,
    ) -> Shard {
        let _ = now;
        out.local(
            Local::ToShard {
                shard: id,
                uid,
                msg: ShardMsg::InitDone,
            },
            LocalDelay::ShardInit,
        );
        let idle = cfg.settings.passivate_idle_entity_after_ms;
        if idle > 0 {
            out.set_timer(
                Self::timer_of(id, uid, ShardTimer::PassivateIdleTick),
                Duration::from_millis((idle / 2).max(1)),
            );
        }
        Shard {
            id,
            uid,
            cfg,
            phase: Phase::Initializing { stash: Vec::new() },
            entities: BTreeMap::new(),
            buffered: 0,
        }
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

    /// Whether a `HandOff` is in progress (the HandOffStopper runs).
    pub fn handing_off(&self) -> bool {
        matches!(self.phase, Phase::HandingOff { .. })
    }

    /// Whether the Shard is stopping or stopped.
    pub fn stopping(&self) -> bool {
        matches!(self.phase, Phase::Stopping | Phase::Stopped)
    }

    /// Ids of the live entity actors.
    pub fn entity_ids(&self) -> impl Iterator<Item = EntityId> + '_ {
        self.entities.keys().copied()
    }

    /// Each live entity: its id, incarnation and state.
    pub fn entities(&self) -> impl Iterator<Item = (EntityId, u64, EntityState)> + '_ {
        self.entities.iter().map(|(e, r)| (*e, r.inc, r.state))
    }

    /// The incarnation of `entity`'s live actor here, if any.
    pub fn incarnation_of(&self, entity: EntityId) -> Option<u64> {
        self.entities.get(&entity).map(|r| r.inc)
    }

    /// Messages buffered for passivating entities.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Every message the Shard holds: buffered for passivating entities, and stashed while it
    /// initialises.
    pub fn buffered_messages(&self) -> impl Iterator<Item = Envelope> + '_ {
        let stashed: &[ShardMsg] = match &self.phase {
            Phase::Initializing { stash } => stash,
            _ => &[],
        };
        self.entities
            .values()
            .flat_map(|r| r.buffer.iter().copied())
            .chain(stashed.iter().filter_map(|m| match m {
                ShardMsg::User(env) => Some(*env),
                _ => None,
            }))
    }

    /// The per-entity buffers hold `buffered()` messages in total (for the region's check).
    pub fn buffered_recount(&self) -> usize {
        self.entities.values().map(|r| r.buffer.len()).sum()
    }

    // ---- region → Shard ----

    /// A message from the region (or, `InitDone`, from itself).
    pub fn receive(&mut self, now: Instant, msg: ShardMsg, out: &mut Outbox) {
        if let Phase::Initializing { stash } = &mut self.phase {
            if msg != ShardMsg::InitDone {
                stash.push(msg);
                return;
            }
            // Initialised: tell the region, then unstash (SH:606).
            let stash = std::mem::take(stash);
            self.phase = Phase::Running;
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
            return;
        }
        match msg {
            ShardMsg::InitDone => {}
            ShardMsg::User(env) => self.deliver(now, env, out),
            ShardMsg::HandOff { from } => self.hand_off(from, out),
        }
    }

    /// A user message from the region (Shard `deliverMessage`, SH:1073-1149; remember off).
    fn deliver(&mut self, now: Instant, env: Envelope, out: &mut Outbox) {
        match self.phase {
            Phase::Running => {}
            Phase::Initializing { .. } => {} // not reached: stashed by `receive`
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
        let (id, uid) = (self.id, self.uid);
        let e = env.entity;
        match self.entities.get_mut(&e) {
            Some(rec) if rec.state == EntityState::Passivating => {
                // §8 step 3: buffered in the Shard until the entity terminates.
                if self.buffered >= self.cfg.settings.buffer_size {
                    out.observe(Observation::Dropped {
                        env,
                        reason: DropReason::BufferFull,
                    });
                } else {
                    rec.buffer.push_back(env);
                    self.buffered += 1;
                }
            }
            Some(rec) => {
                rec.last_active = now;
                out.local(
                    Local::ToEntity {
                        shard: id,
                        uid,
                        inc: rec.inc,
                        env,
                    },
                    LocalDelay::Message,
                );
            }
            None => {
                let inc = self.start_entity(now, e, out);
                out.local(
                    Local::ToEntity {
                        shard: id,
                        uid,
                        inc,
                        env,
                    },
                    LocalDelay::Message,
                );
            }
        }
    }

    /// `getOrCreateEntity`: a new entity actor (NoState → Active).
    fn start_entity(&mut self, now: Instant, e: EntityId, out: &mut Outbox) -> u64 {
        let inc = out.new_incarnation();
        out.observe(Observation::EntityStarted {
            entity: e,
            shard: self.id,
            incarnation: inc,
        });
        let actor = self.cfg.factory.create(e);
        self.entities.insert(
            e,
            EntityRec {
                inc,
                state: EntityState::Active,
                actor,
                stopping: false,
                stop_reason: StopReason::SelfStop,
                last_active: now,
                buffer: VecDeque::new(),
                ignores_stop: false,
            },
        );
        inc
    }

    /// `HandOff` (SH `handOff`): with no live entity, `ShardStopped` at once and stop (the
    /// fix of §12 B13 decides on live actors); else a HandOffStopper sends the hand-off stop
    /// message to every entity, force-stops the rest after its stop timeout, and sends
    /// `ShardStopped` when all have terminated (§7 t5-t6).
    fn hand_off(&mut self, from: Addr, out: &mut Outbox) {
        match self.phase {
            Phase::Running => {}
            // "HandOff shard received during existing handOff": ignored.
            _ => return,
        }
        if self.entities.is_empty() {
            out.send(from, Msg::ShardStopped { shard: self.id });
            self.stop_self(out);
            return;
        }
        let mut waiting = BTreeSet::new();
        for (e, rec) in &self.entities {
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
            .filter(|r| r.inc == inc && !r.stopping)
    }

    /// A user message reaches entity actor `inc`, which processes it in order. If the actor
    /// has stopped or is stopping, what was in its mailbox is lost (§8 step 6).
    pub fn entity_receive(&mut self, inc: u64, env: Envelope, out: &mut Outbox) {
        match self.running_actor(env.entity, inc) {
            Some(rec) => {
                rec.actor.receive(&env);
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

    /// Entity actor `inc` processes its stop message: it stops, and terminates after its
    /// stop duration.
    pub fn entity_stop(
        &mut self,
        entity: EntityId,
        inc: u64,
        reason: StopReason,
        out: &mut Outbox,
    ) {
        let (shard, uid) = (self.id, self.uid);
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
        if rec.inc != inc || rec.state == EntityState::Passivating || !rec.buffer.is_empty() {
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
    fn force_stop(id: ShardId, uid: u32, entity: EntityId, rec: &mut EntityRec, out: &mut Outbox) {
        if rec.stopping {
            return;
        }
        rec.stopping = true;
        rec.stop_reason = StopReason::Forced;
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

    /// Entity actor `inc` terminated (`entityTerminated`, SH:918-981; remember off).
    pub fn entity_terminated(
        &mut self,
        now: Instant,
        entity: EntityId,
        inc: u64,
        out: &mut Outbox,
    ) {
        let Some(rec) = self.entities.get_mut(&entity) else {
            return;
        };
        if rec.inc != inc {
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
        let was_passivating = rec.state == EntityState::Passivating;
        let mut buffer = std::mem::take(&mut rec.buffer);
        self.buffered -= buffer.len();
        if self.cfg.options.mutation
            == crate::protocol::settings::Mutation::ShardForgetsPassivationBuffer
        {
            buffer.clear(); // deliberately broken: no Dropped, no restart
        }
        self.entities.remove(&entity);
        if was_passivating {
            out.cancel_timer(self.timer(ShardTimer::PassivationTimedOut(entity)));
        }
        match &mut self.phase {
            Phase::Stopping | Phase::Stopped => {
                drop_all(buffer, DropReason::ShardBufferLost, out);
                self.maybe_terminated(out);
                return;
            }
            Phase::HandingOff { waiting, .. } => {
                waiting.remove(&inc);
                if self.cfg.options.handoff_drops_passivation_buffer {
                    drop_all(buffer, DropReason::ShardBufferLost, out);
                    self.maybe_stopper_done(out);
                    return;
                }
            }
            Phase::Running | Phase::Initializing { .. } => {}
        }
        if !buffer.is_empty() {
            // §8 step 4 (B30/B31 fix): messages arrived while it passivated: start it again
            // and deliver them. Akka does this in hand-off too: `receiveTerminated` does not
            // look at the HandOffStopper, and the new actor is not one the stopper waits for.
            let inc = self.start_entity(now, entity, out);
            for env in buffer {
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
        }
        self.maybe_stopper_done(out);
    }

    /// The HandOffStopper saw every entity it was given terminate: `ShardStopped` to the
    /// worker, then the stopper stops and the Shard stops with it (SH `receiveTerminated`).
    fn maybe_stopper_done(&mut self, out: &mut Outbox) {
        if let Phase::HandingOff { to, waiting } = &self.phase {
            if waiting.is_empty() {
                let to = *to;
                out.send(to, Msg::ShardStopped { shard: self.id });
                out.cancel_timer(self.timer(ShardTimer::HandOffStopTimeout));
                self.stop_self(out);
            }
        }
    }

    /// `context.stop(self)`: every child still alive is stopped; the Shard terminates when the
    /// last one has.
    fn stop_self(&mut self, out: &mut Outbox) {
        self.phase = Phase::Stopping;
        // From here on the Shard handles no message: for the checkers it is no longer hosted,
        // even while its remaining children stop.
        out.observe(Observation::ShardUnhosted(self.id));
        if self.cfg.settings.passivate_idle_entity_after_ms > 0 {
            out.cancel_timer(self.timer(ShardTimer::PassivateIdleTick));
        }
        let (id, uid) = (self.id, self.uid);
        for (e, rec) in self.entities.iter_mut() {
            Self::force_stop(id, uid, *e, rec, out);
        }
        self.maybe_terminated(out);
    }

    fn maybe_terminated(&mut self, out: &mut Outbox) {
        if self.phase == Phase::Stopping && self.entities.is_empty() {
            self.phase = Phase::Stopped;
            out.local(
                Local::ShardTerminated {
                    shard: self.id,
                    uid: self.uid,
                },
                LocalDelay::Message,
            );
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
                        if waiting.contains(&rec.inc) {
                            Self::force_stop(id, uid, *e, rec, out);
                        }
                    }
                }
            }
            ShardTimer::PassivationTimedOut(e) => {
                // akka#32439: still passivating after stop-timeout → context.stop(entity).
                if let Some(rec) = self.entities.get_mut(&e) {
                    if rec.state == EntityState::Passivating {
                        Self::force_stop(id, uid, e, rec, out);
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
                    .filter(|(_, r)| r.state == EntityState::Active && now - r.last_active >= idle)
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
        }
    }

    /// The region restarts (an exception): its children die with it, at once; what the
    /// Shard buffered is lost.
    pub fn kill(&mut self, reason: StopReason, out: &mut Outbox) {
        if !self.stopping() {
            out.observe(Observation::ShardUnhosted(self.id));
        }
        for (e, rec) in std::mem::take(&mut self.entities) {
            out.observe(Observation::EntityStopped {
                entity: e,
                reason,
                incarnation: rec.inc,
            });
            drop_all(rec.buffer, DropReason::RegionRestart, out);
        }
        self.buffered = 0;
        self.phase = Phase::Stopped;
    }
}

/// Report every message of `buffer` dropped for `reason`.
fn drop_all(buffer: VecDeque<Envelope>, reason: DropReason, out: &mut Outbox) {
    for env in buffer {
        out.observe(Observation::Dropped { env, reason });
    }
}
