//! ShardRegion (docs/akka-reference.md §5) and its child Shards (§6, in [`super::shard`]).
//!
//! Sans-IO: call [`Region::handle`] with the current time and one [`Input`], then apply every
//! [`Output`] in order. A region runs in hosting mode, or proxy-only
//! mode (§5.6) where it routes and buffers but never hosts shards.
//!
//! The region owns its Shards and routes their local messages ([`Region::local`]): a message
//! between the region, a Shard and an entity is its own event, so the region keeps Akka's
//! `startingShards` (a Shard created but not yet `ShardInitialized`) and `handingOff` (a Shard
//! told to hand off and not yet terminated) as states of its shard slots.

use crate::ids::{EntityId, RegionRef, ShardId};
pub use crate::protocol::config::RegionConfig;
use crate::protocol::entity::ShardExtractor;
use crate::protocol::settings::Mutation;
use crate::protocol::shard::Shard;
use crate::protocol::shard_map::ShardMap;
use crate::protocol::{
    Addr, DropReason, Envelope, Input, Local, LocalDelay, Member, MemberStatus, Msg, Observation,
    Outbox, Output, RoleBreach, ShardMsg, StopReason, StoreReply, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// The reason a region stops with when its graceful shutdown times out (SR:1026-1033).
pub const GRACEFUL_SHUTDOWN_TIMED_OUT: &str = "graceful shutdown timed out";

/// A Shard child of the region, with the region's view of it.
pub struct ShardSlot {
    /// The Shard actor.
    pub shard: Shard,
    /// `ShardInitialized` has arrived (not in `startingShards`).
    pub initialized: bool,
    /// `HandOff` was forwarded to it (in `handingOff`) and it has not terminated.
    pub handing_off: bool,
    /// A `HostShard` that arrived while this Shard was stopping after a hand-off, from this
    /// coordinator: the Shard is started again when the old one has terminated (the fix of
    /// §12 B19, PR akka#32976).
    pub host_pending: Option<Addr>,
}

/// A ShardRegion actor.
pub struct Region {
    me: RegionRef,
    hosting: bool,
    cfg: Arc<RegionConfig>,
    /// This region's extractor (`cfg.extractors.for_region(me)`): the one every region shares,
    /// or this node incarnation's own (§12 B8). Called on every message.
    extractor: Arc<dyn ShardExtractor>,
    /// Members that may run the coordinator, oldest first (§5.1 `membersByAge`).
    members_by_age: Vec<Member>,
    coordinator: Option<Addr>,
    register_backoff: Duration,
    region_by_shard: ShardMap<RegionRef>,
    /// Boxed: the map's vector spans every shard id up to the highest hosted, and a slot is
    /// large, so a region hosting a few of many shards holds a pointer per other id, not a
    /// whole Shard.
    shards: ShardMap<Box<ShardSlot>>,
    /// The uid of the next Shard actor.
    next_shard_uid: u32,
    buffers: ShardMap<VecDeque<Envelope>>,
    buffered_total: usize,
    /// The remember-entities starter (`RememberEntityStarter`, §2.6): per remembering shard,
    /// the entities whose `StartEntity` is not acknowledged yet.
    starter: BTreeMap<ShardId, BTreeSet<EntityId>>,
    /// Per remembering shard, the entities another shard acknowledged: reported together
    /// (`EntitiesMovedToOtherShard`) once every id is acknowledged (RememberEntityStarter).
    moved: BTreeMap<ShardId, Vec<EntityId>>,
    /// `StartEntity` for a local Shard that is still starting: buffered with the shard's
    /// messages in Akka (SR:1381) and delivered on `ShardInitialized` (SR:1275-1279).
    starting_starts: BTreeMap<ShardId, Vec<(EntityId, RegionRef, ShardId)>>,
    /// `gracefulShutdownInProgress` (§5.5): set by [`Region::graceful_shutdown`]; the region
    /// stops once it has no Shard and no buffer.
    graceful: bool,
    /// The region has stopped (its node still runs until it leaves the cluster).
    stopped: bool,
    /// The most messages this region buffered at once (the summary's buffer high-water mark).
    buffered_high_water: usize,
    /// `Mutation::RegionKeepsStaleEntities` only: per shard handed off, the entity actors its
    /// Shard had at `HandOff`.
    stale_entities: BTreeMap<ShardId, Vec<(EntityId, u64)>>,
}

impl Region {
    /// A new region; call [`Region::start`] next.
    pub fn new(me: RegionRef, hosting: bool, cfg: Arc<RegionConfig>) -> Self {
        let register_backoff = cfg.settings.register_backoff_start();
        let extractor = cfg.extractors.for_region(me);
        Region {
            me,
            hosting,
            cfg,
            extractor,
            members_by_age: Vec::new(),
            coordinator: None,
            register_backoff,
            region_by_shard: ShardMap::new(),
            shards: ShardMap::new(),
            next_shard_uid: 0,
            buffers: ShardMap::new(),
            buffered_total: 0,
            starter: BTreeMap::new(),
            moved: BTreeMap::new(),
            starting_starts: BTreeMap::new(),
            graceful: false,
            stopped: false,
            buffered_high_water: 0,
            stale_entities: BTreeMap::new(),
        }
    }

    /// `ShardRegion.GracefulShutdown` (§5.5, SR:1002-1024), sent by coordinated shutdown's
    /// `cluster-sharding-shutdown-region` phase on a graceful leave: ask the coordinator to
    /// hand off every shard of this region, and stop once none is left, or after
    /// `GracefulShutdownTimeout` with what is left. The region keeps routing meanwhile.
    pub fn graceful_shutdown(&mut self, out: &mut Outbox) {
        if self.graceful || self.stopped {
            return;
        }
        self.graceful = true;
        if self.cfg.options.mutation == Mutation::GracefulShutdownWithoutHandOff {
            return self.stop(
                out,
                "graceful shutdown (mutation: stopped without hand-off)",
            );
        }
        out.set_timer(
            Timer::GracefulShutdownTimeout,
            self.cfg.settings.graceful_shutdown_timeout(),
        );
        self.send_graceful_shutdown_req(out);
        self.try_complete_graceful_shutdown(out);
    }

    /// Whether a graceful shutdown is in progress.
    pub fn shutting_down(&self) -> bool {
        self.graceful
    }

    /// Whether the region has stopped (a graceful shutdown ended).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// `sendGracefulShutdownToCoordinatorIfInProgress` (SR:1452-1458): to every coordinator
    /// candidate, as `Register` goes, so a request made while the coordinator moves reaches
    /// the new one on a later Retry tick (the fix of §12 B15). Pre-fix: only to a coordinator
    /// the region knows.
    fn send_graceful_shutdown_req(&mut self, out: &mut Outbox) {
        if !self.graceful {
            return;
        }
        let msg = Msg::GracefulShutdownReq { region: self.me };
        if self.cfg.options.graceful_shutdown_req_not_retried {
            if let Some(c) = self.coordinator {
                out.send(c, msg);
            }
            return;
        }
        for m in self.coordinator_candidates(2) {
            out.send(Addr::coordinator(m.region()), msg);
        }
    }

    /// `coordinatorSelection` (§5.1, SR:842-882): the oldest members up to and including the
    /// first Up one (akka#28416, PR akka#28470, the fix of §12 B21). Pre-fix (Akka before
    /// 2.6.2, option `register-to-oldest-only`): `Register` to the oldest member only, even
    /// while it is Leaving or Exiting and the coordinator already runs on the next one, and
    /// `GracefulShutdownReq` to the two oldest (`gracefulShutdownCoordinatorSelections`):
    /// `pre_fix` members.
    fn coordinator_candidates(&self, pre_fix: usize) -> impl Iterator<Item = &Member> + '_ {
        let upto = if self.cfg.options.register_to_oldest_only {
            self.members_by_age.len().min(pre_fix)
        } else {
            self.members_by_age
                .iter()
                .position(|m| m.status == MemberStatus::Up)
                .map_or(self.members_by_age.len(), |i| i + 1)
        };
        self.members_by_age[..upto].iter()
    }

    /// `tryCompleteGracefulShutdownIfInProgress` (SR:1171-1175).
    fn try_complete_graceful_shutdown(&mut self, out: &mut Outbox) {
        if self.graceful && self.shards.is_empty() && self.buffers.is_empty() {
            self.stop(out, "graceful shutdown complete");
        }
    }

    /// `context.stop(self)`: every Shard and entity stops with the region, what is buffered
    /// is lost, and `postStop` tells the coordinator `RegionStopped` (akka#30402).
    fn stop(&mut self, out: &mut Outbox, reason: &'static str) {
        if self.stopped {
            return;
        }
        self.kill_children(StopReason::RegionStopped, DropReason::RegionStopped, out);
        out.cancel_timer(Timer::RegionRetry);
        out.cancel_timer(Timer::RegisterRetry);
        out.cancel_timer(Timer::GracefulShutdownTimeout);
        if let Some(c) = self.coordinator {
            out.send(c, Msg::RegionStopped { region: self.me });
        }
        self.stopped = true;
        out.0.push(Output::Stop { reason });
    }

    /// Start the fixed-delay Retry tick (SR:966).
    pub fn start(&mut self, _now: Instant, out: &mut Outbox) {
        out.set_timer(Timer::RegionRetry, self.cfg.settings.retry_interval());
    }

    /// Handle one input.
    pub fn handle(&mut self, now: Instant, input: Input, out: &mut Outbox) {
        match input {
            Input::Request(env) => self.request(env, out),
            Input::Deliver { from, msg } => self.deliver(now, from, msg, out),
            Input::Timeout(Timer::RegionRetry) => self.on_retry(out),
            Input::Timeout(Timer::RegisterRetry) => self.on_register_retry(out),
            Input::Timeout(Timer::Shard { shard, uid, kind }) => {
                if let Some(slot) = self.shards.get_mut(&shard) {
                    if slot.shard.uid() == uid {
                        slot.shard.timeout(now, kind, out);
                    }
                }
            }
            Input::Timeout(Timer::RestartShard(shard)) => self.on_restart_shard(shard, out),
            Input::Timeout(Timer::StarterRetry(shard)) => self.on_starter_retry(shard, out),
            Input::Timeout(Timer::GracefulShutdownTimeout) => {
                // SR:1026-1033: "Graceful shutdown of shard region timed out, region will be
                // stopped."
                self.stop(out, GRACEFUL_SHUTDOWN_TIMED_OUT)
            }
            Input::Timeout(_) => {}
            Input::MembersChanged(members) => self.on_members_changed(members, out),
            Input::Persisted
            | Input::Terminate
            | Input::Unreachable(_)
            | Input::StateRead(_)
            | Input::StateWritten(_)
            | Input::RememberedShards(_)
            | Input::RememberShardAdded(_) => {}
        }
    }

    /// `handle(now, Input::Request(env), out)` as a direct call: a local sender's message
    /// (`ShardRegion ! msg`). The simulator's hot path calls it without building an `Input`.
    pub fn request(&mut self, env: Envelope, out: &mut Outbox) {
        self.deliver_message(env, out)
    }

    /// `handle(now, Input::Deliver { from, msg }, out)` as a direct call: a message from
    /// another actor.
    pub fn deliver(&mut self, now: Instant, from: Addr, msg: Msg, out: &mut Outbox) {
        self.on_msg(now, from, msg, out)
    }

    /// A message between actors of this node ([`Local`]) arrived: route it to the Shard (and
    /// its entity) it names, or handle it here. A message for a Shard actor that is gone is
    /// a dead letter.
    pub fn local(&mut self, now: Instant, msg: Local, out: &mut Outbox) {
        match msg {
            Local::ShardInitialized { shard, uid } => self.on_shard_initialized(shard, uid, out),
            Local::ShardTerminated { shard, uid } => self.on_shard_terminated(shard, uid, out),
            Local::StartRemembered { .. }
                if self.cfg.options.mutation == Mutation::StarterNeverStarts => {}
            Local::StartRemembered { shard, entity } => {
                if self.starter.get_mut(&shard).is_none() {
                    out.set_timer(
                        Timer::StarterRetry(shard),
                        self.cfg.settings.retry_interval(),
                    );
                }
                self.starter.entry(shard).or_default().insert(entity);
                self.route_start_entity(entity, self.me, shard, out);
            }
            Local::ToShard { shard, uid, msg } => match self.shard_actor(shard, uid) {
                Some(s) => s.receive(now, msg, out),
                None => {
                    if let ShardMsg::User(env) = msg {
                        out.observe(Observation::Dropped {
                            env,
                            reason: DropReason::ShardGone,
                        });
                    }
                }
            },
            Local::ToEntity {
                shard,
                uid,
                inc,
                env,
            } => match self.shard_actor(shard, uid) {
                Some(s) => s.entity_receive(inc, env, out),
                None => out.observe(Observation::Dropped {
                    env,
                    reason: DropReason::EntityStopped,
                }),
            },
            Local::StopEntity {
                shard,
                uid,
                entity,
                inc,
                reason,
            } => {
                if let Some(s) = self.shard_actor(shard, uid) {
                    s.entity_stop(entity, inc, reason, out);
                }
            }
            Local::Passivate {
                shard,
                uid,
                entity,
                inc,
                ignores_stop,
            } => {
                if let Some(s) = self.shard_actor(shard, uid) {
                    s.passivate(entity, inc, ignores_stop, out);
                }
            }
            Local::EntityTerminated {
                shard,
                uid,
                entity,
                inc,
            } => {
                if let Some(s) = self.shard_actor(shard, uid) {
                    s.entity_terminated(now, entity, inc, out);
                }
            }
        }
    }

    /// Entity `entity` (incarnation `inc`) decided to passivate after a message: it sends
    /// `Passivate` to its Shard (§8 step 1), a local message.
    pub fn entity_passivates(
        &mut self,
        entity: EntityId,
        inc: u64,
        ignores_stop: bool,
        out: &mut Outbox,
    ) {
        let shard = self.extractor.shard_id(entity);
        if let Some(slot) = self.shards.get(&shard) {
            out.local(
                Local::Passivate {
                    shard,
                    uid: slot.shard.uid(),
                    entity,
                    inc,
                    ignores_stop,
                },
                LocalDelay::Message,
            );
        }
    }

    /// Entity `entity` (incarnation `inc`) stops itself without passivating
    /// (`context.stop(self)`, §12 B31), or crashes and its supervision stops it
    /// (`reason` `Crashed`): it terminates after its stop duration.
    pub fn entity_stops_itself(
        &mut self,
        entity: EntityId,
        inc: u64,
        reason: StopReason,
        out: &mut Outbox,
    ) {
        let shard = self.extractor.shard_id(entity);
        if let Some(slot) = self.shards.get_mut(&shard) {
            slot.shard.entity_stop(entity, inc, reason, out);
        }
    }

    /// The Shard of `entity` throws (the workload's choice): a local message to it, so it
    /// fails when it handles it.
    pub fn shard_of_entity_fails(&mut self, entity: EntityId, out: &mut Outbox) {
        let shard = self.extractor.shard_id(entity);
        if let Some(slot) = self.shards.get(&shard) {
            out.local(
                Local::ToShard {
                    shard,
                    uid: slot.shard.uid(),
                    msg: ShardMsg::Fail,
                },
                LocalDelay::Message,
            );
        }
    }

    /// A remember-entities store answered one of this region's Shards.
    pub fn store_reply(&mut self, now: Instant, reply: StoreReply, out: &mut Outbox) {
        if let Some(s) = self.shard_actor(reply.shard, reply.uid) {
            s.store_reply(now, reply.instance, reply.kind, out);
        }
    }

    /// Route `StartEntity(entity)` as `deliverMessage` would (§2.6): the current extractor
    /// picks the shard. It is not buffered here: where the home is unknown the region asks
    /// for it, and the starter's retry (every `retry-interval`) brings the request back.
    fn route_start_entity(
        &mut self,
        entity: EntityId,
        starter: RegionRef,
        for_shard: ShardId,
        out: &mut Outbox,
    ) {
        let shard = self.extractor.shard_id(entity);
        match self.region_by_shard.get(&shard).copied() {
            Some(r) if r == self.me => match self.get_shard(shard, out) {
                Some(uid) => {
                    Self::start_entity_local(shard, uid, (entity, starter, for_shard), out)
                }
                None if self.hosting => {
                    let q = self.starting_starts.entry(shard).or_default();
                    if !q.contains(&(entity, starter, for_shard)) {
                        q.push((entity, starter, for_shard));
                    }
                }
                None => {}
            },
            Some(r) => out.send(
                Addr::region(r),
                Msg::StartEntity {
                    entity,
                    starter,
                    for_shard,
                },
            ),
            None => {
                if !self.buffers.contains_key(&shard) {
                    if let Some(c) = self.coordinator {
                        out.send(c, Msg::GetShardHome { shard });
                    }
                }
            }
        }
    }

    /// `StartEntity` to the local Shard actor `uid` of `shard`.
    fn start_entity_local(
        shard: ShardId,
        uid: u32,
        (entity, starter, for_shard): (EntityId, RegionRef, ShardId),
        out: &mut Outbox,
    ) {
        out.local(
            Local::ToShard {
                shard,
                uid,
                msg: ShardMsg::StartEntity {
                    entity,
                    starter,
                    for_shard,
                },
            },
            LocalDelay::Message,
        );
    }

    /// `StartEntityAck(entity, shard)` for the starter of `for_shard`: done; acked by another
    /// shard → `EntitiesMovedToOtherShard` to the old one (akka#22289).
    fn on_start_entity_ack(
        &mut self,
        entity: EntityId,
        shard: ShardId,
        for_shard: ShardId,
        out: &mut Outbox,
    ) {
        let Some(pending) = self.starter.get_mut(&for_shard) else {
            return;
        };
        if !pending.remove(&entity) {
            return;
        }
        let done = pending.is_empty();
        if shard != for_shard {
            self.moved.entry(for_shard).or_default().push(entity);
        }
        if !done {
            return;
        }
        self.starter.remove(&for_shard);
        out.cancel_timer(Timer::StarterRetry(for_shard));
        // Every id acknowledged: the ones another shard started are reported to the old
        // shard together (RememberEntityStarter, akka#22289).
        let moved = self.moved.remove(&for_shard).unwrap_or_default();
        if let Some(slot) = self.shards.get(&for_shard) {
            let n = moved.len();
            for (i, entity) in moved.into_iter().enumerate() {
                out.local(
                    Local::ToShard {
                        shard: for_shard,
                        uid: slot.shard.uid(),
                        msg: ShardMsg::EntityMoved {
                            entity,
                            last: i + 1 == n,
                        },
                    },
                    LocalDelay::Message,
                );
            }
        }
    }

    fn on_starter_retry(&mut self, for_shard: ShardId, out: &mut Outbox) {
        let Some(pending) = self.starter.get(&for_shard) else {
            return;
        };
        let pending: Vec<EntityId> = pending.iter().copied().collect();
        for e in pending {
            self.route_start_entity(e, self.me, for_shard, out);
        }
        out.set_timer(
            Timer::StarterRetry(for_shard),
            self.cfg.settings.retry_interval(),
        );
    }

    /// `RestartShard(shard)` (SR:1050-1093): start it again here if this region is still its
    /// home; with no known home, ask the coordinator.
    fn on_restart_shard(&mut self, shard: ShardId, out: &mut Outbox) {
        match self.region_by_shard.get(&shard).copied() {
            Some(r) if r == self.me => {
                if !self.shards.contains_key(&shard) {
                    self.start_shard(shard, out);
                }
            }
            Some(_) => {}
            None => {
                if !self.buffers.contains_key(&shard) {
                    if let Some(c) = self.coordinator {
                        out.send(c, Msg::GetShardHome { shard });
                    }
                }
            }
        }
    }

    fn shard_actor(&mut self, shard: ShardId, uid: u32) -> Option<&mut Shard> {
        self.shards
            .get_mut(&shard)
            .filter(|slot| slot.shard.uid() == uid)
            .map(|slot| &mut slot.shard)
    }

    /// The shard of `entity` under this region's extractor (where this region routes it).
    #[inline]
    pub fn shard_of(&self, entity: EntityId) -> ShardId {
        self.extractor.shard_id(entity)
    }

    /// The live entity incarnation of `entity` in `shard` here, if any.
    pub fn entity_incarnation(&self, shard: ShardId, entity: EntityId) -> Option<u64> {
        self.shards.get(&shard)?.shard.incarnation_of(entity)
    }

    // ---- getters for checkers and tests ----

    /// This region.
    pub fn me(&self) -> RegionRef {
        self.me
    }
    /// Whether this region hosts entities (false: proxy-only).
    pub fn hosting(&self) -> bool {
        self.hosting
    }
    /// The coordinator this region registered with.
    pub fn coordinator(&self) -> Option<Addr> {
        self.coordinator
    }
    /// Where this region believes `shard` lives.
    pub fn home_of(&self, shard: ShardId) -> Option<RegionRef> {
        self.region_by_shard.get(&shard).copied()
    }
    /// Hosted shards (starting, running or handing off).
    pub fn hosted(&self) -> impl Iterator<Item = (ShardId, &ShardSlot)> + '_ {
        self.shards.iter().map(|(k, v)| (k, &**v))
    }
    /// Shards with buffered messages.
    pub fn buffered_shards(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.buffers.keys()
    }
    /// Messages buffered in total.
    pub fn buffered_total(&self) -> usize {
        self.buffered_total
    }

    /// The most messages this region buffered at once.
    pub fn buffered_high_water(&self) -> usize {
        self.buffered_high_water
    }
    /// Every buffered message, by shard.
    pub fn buffered_messages(&self) -> impl Iterator<Item = Envelope> + '_ {
        self.buffers.values().flat_map(|b| b.iter().copied())
    }
    /// Every message buffered here: in the region's buffers and in its Shards (for
    /// passivating entities, and stashed while a Shard initialises).
    pub fn all_buffered_messages(&self) -> impl Iterator<Item = Envelope> + '_ {
        self.buffered_messages().chain(
            self.shards
                .values()
                .flat_map(|slot| slot.shard.buffered_messages()),
        )
    }

    // ---- invariants ----

    /// Whether a constant-time rule of [`Region::check_invariants`] is broken: the host's fast
    /// door, asked after every input (a user message can only break these).
    #[inline]
    pub fn constant_time_rule_broken(&self) -> bool {
        self.buffered_total > self.cfg.settings.buffer_size
            || (!self.hosting && !self.shards.is_empty())
    }

    /// The rules this region's state keeps after every `handle` (and `request`/`deliver`),
    /// each true of Akka's ShardRegion (docs/akka-reference.md, sections cited per rule); the first
    /// broken one, as data. The O(1) rules always run; the rules that walk the buffers, the
    /// hosted shards or the entities run only with debug assertions (as under `cargo test`),
    /// to keep the simulator's hot path cheap in release builds.
    pub fn check_invariants(&self) -> Option<RoleBreach> {
        let breach = |rule: &'static str, detail: String| {
            Some(RoleBreach {
                role: "region",
                rule,
                detail,
            })
        };
        // §5.3 (SR:1281-1305): a message arriving when totalSize >= buffer-size goes to dead
        // letters, so the total across every shard never exceeds buffer-size.
        if self.buffered_total > self.cfg.settings.buffer_size {
            return breach(
                "buffered-total-within-buffer-size",
                format!(
                    "{} buffered, buffer-size {}",
                    self.buffered_total, self.cfg.settings.buffer_size
                ),
            );
        }
        // §5.6, §5.2 (SR:1399-1437): a proxy-only region never creates a Shard ("Shard must not
        // be allocated to a proxy only ShardRegion").
        if !self.hosting && !self.shards.is_empty() {
            return breach(
                "proxy-hosts-no-shard",
                format!("proxy hosts {} shards", self.shards.len()),
            );
        }
        if cfg!(debug_assertions) {
            return self.check_invariants_walking();
        }
        None
    }

    /// The rules of [`Region::check_invariants`] that walk the region's maps.
    fn check_invariants_walking(&self) -> Option<RoleBreach> {
        let breach = |rule: &'static str, detail: String| {
            Some(RoleBreach {
                role: "region",
                rule,
                detail,
            })
        };
        let mut sum = 0;
        for (shard, buf) in self.buffers.iter() {
            // §5.2-§5.3: a shard's buffer is created by appending a message and removed when
            // it is delivered (MessageBufferMap); an empty one would suppress the
            // GetShardHome that only the first buffered message of a shard sends.
            if buf.is_empty() {
                return breach("no-empty-buffer", format!("shard {shard}"));
            }
            // §5.2 (a known other home forwards at once, no buffering) and §5.4
            // receiveShardHome (SR:1095-1114: learning a remote home delivers the buffer to
            // it): no buffer waits for a shard whose home is another region.
            if let Some(home) = self.region_by_shard.get(&shard) {
                if *home != self.me {
                    return breach(
                        "no-buffer-for-a-remote-home",
                        format!("shard {shard}: {} buffered, home {home}", buf.len()),
                    );
                }
            }
            sum += buf.len();
        }
        // §5.3: buffer-size bounds MessageBufferMap.totalSize, the sum over every shard.
        if sum != self.buffered_total {
            return breach(
                "buffered-total-is-sum-of-buffers",
                format!(
                    "buffered total {}, per-shard buffers hold {sum}",
                    self.buffered_total
                ),
            );
        }
        // §6: a Shard's per-entity buffers (messageBuffers) hold what it counts, and a
        // HandOff was forwarded only to a Shard the region has (SR:936-962).
        for (shard, slot) in self.shards.iter() {
            let (counted, held) = (slot.shard.buffered(), slot.shard.buffered_recount());
            if counted != held {
                return breach(
                    "shard-buffered-is-sum-of-entity-buffers",
                    format!("shard {shard}: counts {counted}, entity buffers hold {held}"),
                );
            }
            if slot.shard.handing_off() && !slot.handing_off {
                return breach(
                    "handing-off-shard-is-in-handing-off",
                    format!("shard {shard} runs a HandOffStopper the region does not know of"),
                );
            }
        }
        None
    }

    // ---- message handling ----

    fn on_msg(&mut self, now: Instant, from: Addr, msg: Msg, out: &mut Outbox) {
        let _ = now;
        match msg {
            Msg::User(env) => self.deliver_message(env, out),
            Msg::RegisterAck => self.on_register_ack(from, out),
            Msg::ShardHome { shard, region } => self.on_shard_home(shard, region, out),
            Msg::HostShard { shard } => self.on_host_shard(from, shard, out),
            Msg::BeginHandOff { shard } => self.on_begin_hand_off(from, shard, out),
            Msg::BeginHandOffAckRelay {
                shard,
                region,
                coordinator,
            } => {
                // Protocol option handoff-ack-via-owner: every message `region` forwarded to us
                // before this relay has been processed (FIFO per link); pass the ack on.
                out.send(coordinator, Msg::BeginHandOffAck { shard, region });
            }
            Msg::HandOff { shard } => self.on_hand_off(from, shard, out),
            Msg::StartEntity {
                entity,
                starter,
                for_shard,
            } => self.route_start_entity(entity, starter, for_shard, out),
            Msg::StartEntityAck {
                entity,
                shard,
                for_shard,
            } => self.on_start_entity_ack(entity, shard, for_shard, out),
            // From the local coordinator's `terminate()` (SC:1148-1177): as from coordinated
            // shutdown (SR:1002-1024).
            Msg::GracefulShutdown => self.graceful_shutdown(out),
            Msg::CoordinatorTerminated => {
                // Terminated(coordinator) → coordinator = None; startRegistration() (§5.1).
                if self
                    .coordinator
                    .is_some_and(|c| c.node == from.node && c.inc == from.inc)
                {
                    self.coordinator = None;
                    self.start_registration(out);
                }
            }
            // Messages for the coordinator that reached a region are dead letters.
            Msg::Register { .. }
            | Msg::RegisterProxy { .. }
            | Msg::GetShardHome { .. }
            | Msg::ShardStarted { .. }
            | Msg::BeginHandOffAck { .. }
            | Msg::ShardStopped { .. }
            | Msg::GracefulShutdownReq { .. }
            | Msg::RegionStopped { .. }
            | Msg::HandOverToMe
            | Msg::HandOverInProgress
            | Msg::HandOverDone => {}
        }
    }

    /// `deliverMessage` (SR:1349-1397).
    fn deliver_message(&mut self, env: Envelope, out: &mut Outbox) {
        let shard = self.extractor.shard_id(env.entity);
        match self.region_by_shard.get(&shard).copied() {
            Some(r) if r == self.me => match self.get_shard(shard, out) {
                Some(uid) => {
                    if self.buffers.contains_key(&shard) {
                        // Keep order: append behind the buffer, then deliver the whole buffer.
                        self.buffer(shard, env, out);
                        self.deliver_buffer_locally(shard, out);
                    } else {
                        Self::to_shard(shard, uid, env, out);
                    }
                }
                None => self.buffer(shard, env, out),
            },
            Some(r) => out.send(Addr::region(r), Msg::User(env)),
            None => {
                if !self.buffers.contains_key(&shard) {
                    if let Some(c) = self.coordinator {
                        out.send(c, Msg::GetShardHome { shard });
                    }
                }
                self.buffer(shard, env, out);
            }
        }
    }

    #[inline]
    fn to_shard(shard: ShardId, uid: u32, env: Envelope, out: &mut Outbox) {
        out.local(
            Local::ToShard {
                shard,
                uid,
                msg: ShardMsg::User(env),
            },
            LocalDelay::Message,
        );
    }

    /// `bufferMessage` with the total `buffer-size` limit (SR:1281-1305).
    fn buffer(&mut self, shard: ShardId, env: Envelope, out: &mut Outbox) {
        if self.buffered_total >= self.cfg.settings.buffer_size
            && self.cfg.options.mutation != Mutation::RegionIgnoresBufferSize
        {
            out.observe(Observation::Dropped {
                env,
                reason: DropReason::BufferFull,
            });
            return;
        }
        self.buffers
            .get_or_insert_with(shard, VecDeque::new)
            .push_back(env);
        self.buffered_total += 1;
        self.buffered_high_water = self.buffered_high_water.max(self.buffered_total);
    }

    fn take_buffer(&mut self, shard: ShardId) -> VecDeque<Envelope> {
        let mut buf = self.buffers.remove(&shard).unwrap_or_default();
        self.buffered_total -= buf.len();
        match self.cfg.options.mutation {
            Mutation::BufferOutOfOrder if buf.len() > 1 => {
                buf.make_contiguous().reverse();
            }
            Mutation::BufferDuplicate if !buf.is_empty() => {
                let first = buf[0];
                buf.push_back(first);
            }
            _ => {}
        }
        buf
    }

    /// `deliverBufferedMessages` to the local Shard, once it is initialised.
    fn deliver_buffer_locally(&mut self, shard: ShardId, out: &mut Outbox) {
        let Some(uid) = self.get_shard(shard, out) else {
            return; // starting: delivered on ShardInitialized
        };
        let buf = self.take_buffer(shard);
        for env in buf {
            Self::to_shard(shard, uid, env, out);
        }
    }

    /// `getShard` (SR:1399-1437): the Shard's uid if it runs; `None` while it starts (it is in
    /// `startingShards`: the caller buffers), and for a proxy, which never hosts. An absent
    /// Shard is created (and starts).
    #[inline]
    fn get_shard(&mut self, shard: ShardId, out: &mut Outbox) -> Option<u32> {
        if let Some(slot) = self.shards.get(&shard) {
            return slot.initialized.then(|| slot.shard.uid());
        }
        self.start_shard(shard, out);
        None
    }

    fn start_shard(&mut self, shard: ShardId, out: &mut Outbox) {
        if !self.hosting {
            return;
        }
        let uid = self.next_shard_uid;
        self.next_shard_uid = self.next_shard_uid.wrapping_add(1);
        // `now` only matters to the Shard's idle clock, which starts at its first message.
        let mut s = Shard::new(shard, uid, self.cfg.clone(), Instant::ZERO, out);
        if let Some(stale) = self.stale_entities.remove(&shard) {
            s.revive_stale(&stale, Instant::ZERO); // Mutation::RegionKeepsStaleEntities
        }
        self.shards.insert(
            shard,
            Box::new(ShardSlot {
                shard: s,
                initialized: false,
                handing_off: false,
                host_pending: None,
            }),
        );
        out.observe(Observation::ShardHosted(shard));
    }

    /// `ShardInitialized` (SR `initializeShard`): out of `startingShards`, deliver the buffer.
    fn on_shard_initialized(&mut self, shard: ShardId, uid: u32, out: &mut Outbox) {
        match self.shards.get_mut(&shard) {
            Some(slot) if slot.shard.uid() == uid && !slot.initialized => {
                slot.initialized = true;
            }
            _ => return,
        }
        // Unconditionally, as Akka's `initializeShard` does.
        self.deliver_buffer_locally(shard, out);
        if let Some(starts) = self.starting_starts.remove(&shard) {
            for start in starts {
                Self::start_entity_local(shard, uid, start, out);
            }
        }
    }

    /// `Terminated(shard)` (SR:1040-1093): forget the Shard; with the fix of §12 B19, start
    /// it again for a `HostShard` that came while it stopped.
    fn on_shard_terminated(&mut self, shard: ShardId, uid: u32, out: &mut Outbox) {
        let (pending, handing_off) = match self.shards.get(&shard) {
            Some(slot) if slot.shard.uid() == uid => (slot.host_pending, slot.handing_off),
            _ => return,
        };
        self.shards.remove(&shard);
        if !handing_off && pending.is_none() && self.cfg.settings.remember_entities {
            // The Shard died unexpectedly (its remember load timed out): RestartShard after
            // shard-failure-backoff (SR:1050-1093).
            out.set_timer(
                Timer::RestartShard(shard),
                Duration::from_millis(self.cfg.settings.shard_failure_backoff_ms),
            );
        }
        if let Some(coordinator) = pending {
            if self.region_by_shard.get(&shard) == Some(&self.me) {
                self.start_shard(shard, out);
                out.send(coordinator, Msg::ShardStarted { shard });
            }
        }
        self.try_complete_graceful_shutdown(out); // SR:1101
    }

    /// Kill a Shard with everything in it (the region restarts).
    fn kill_shard(&mut self, shard: ShardId, reason: StopReason, out: &mut Outbox) {
        if let Some(mut slot) = self.shards.remove(&shard) {
            slot.shard.kill(reason, out);
        }
    }

    fn on_register_ack(&mut self, from: Addr, out: &mut Outbox) {
        // SR:915-919: watch the coordinator, stop the back-off, ask for every buffered shard.
        self.coordinator = Some(from);
        out.cancel_timer(Timer::RegisterRetry);
        self.request_shard_buffer_homes(out);
    }

    fn request_shard_buffer_homes(&mut self, out: &mut Outbox) {
        if self.cfg.options.mutation == Mutation::RegionNeverReasks {
            return;
        }
        if let Some(c) = self.coordinator {
            for shard in self.buffers.keys() {
                out.send(c, Msg::GetShardHome { shard });
            }
        }
    }

    /// `receiveShardHome` (SR:1095-1114).
    fn on_shard_home(&mut self, shard: ShardId, region: RegionRef, out: &mut Outbox) {
        if self.region_by_shard.get(&shard) == Some(&self.me) && region != self.me {
            // Akka throws IllegalStateException("Unexpected change of shard from self to R"),
            // and the region restarts: every local shard and entity is killed, buffers lost.
            self.restart(out);
            return;
        }
        self.region_by_shard.insert(shard, region);
        if region == self.me {
            if self.hosting {
                self.deliver_buffer_locally(shard, out);
            } else {
                self.drop_buffer(shard, DropReason::ProxyHostShard, out);
            }
        } else {
            let buf = self.take_buffer(shard);
            for env in buf {
                out.send(Addr::region(region), Msg::User(env));
            }
        }
    }

    /// `HostShard` (§5.4, SR:925-934): record, start the Shard (`getShard`; a no-op if it
    /// exists), reply `ShardStarted` at once. A Shard that is still stopping after a hand-off
    /// would swallow it (§12 B19): the fix starts the new one when the old has terminated.
    fn on_host_shard(&mut self, from: Addr, shard: ShardId, out: &mut Outbox) {
        if !self.hosting {
            // Akka: IllegalStateException in a proxy; the coordinator never allocates to one.
            return;
        }
        if self.graceful && !self.cfg.options.host_shard_accepted_while_shutting_down {
            // SR:891-899 (PR akka#29707, §12 B16): the coordinator missed our request (it
            // moved); tell it again at once instead of hosting the shard.
            return self.send_graceful_shutdown_req(out);
        }
        self.region_by_shard.insert(shard, self.me);
        if let Some(slot) = self.shards.get_mut(&shard) {
            if (slot.handing_off || slot.shard.stopping())
                && !self.cfg.options.host_shard_acked_while_stopping
            {
                slot.host_pending = Some(from);
                return;
            }
        }
        if self.cfg.options.mutation == Mutation::RegionDiscardsBufferOnHostShard {
            self.take_buffer(shard);
        }
        self.deliver_buffer_locally(shard, out);
        out.send(from, Msg::ShardStarted { shard });
    }

    /// `BeginHandOff` (§5.4): forget the home so new messages buffer; ack (even for a shard
    /// this region never knew).
    fn on_begin_hand_off(&mut self, from: Addr, shard: ShardId, out: &mut Outbox) {
        if self.cfg.options.mutation == Mutation::RegionForgetsAcknowledgedShard {
            self.kill_shard(shard, StopReason::HandOff, out);
        }
        let previous = self.region_by_shard.remove(&shard);
        match previous {
            Some(owner) if self.cfg.options.handoff_ack_via_owner && owner != self.me => {
                out.send(
                    Addr::region(owner),
                    Msg::BeginHandOffAckRelay {
                        shard,
                        region: self.me,
                        coordinator: from,
                    },
                );
            }
            _ => out.send(
                from,
                Msg::BeginHandOffAck {
                    shard,
                    region: self.me,
                },
            ),
        }
    }

    /// `HandOff` (§5.4, SR:936-962): drop what was buffered since BeginHandOff ("to avoid
    /// re-ordering"), then forward the `HandOff` to the Shard, which answers `ShardStopped`
    /// when its entities have stopped; with no Shard here, answer `ShardStopped` at once.
    /// Since akka#18945 (§12 B1) a starting Shard is one the region has.
    fn on_hand_off(&mut self, from: Addr, shard: ShardId, out: &mut Outbox) {
        self.drop_buffer(shard, DropReason::HandOffBuffer, out);
        self.starting_starts.remove(&shard);
        let legacy = self.cfg.options.handoff_ignores_starting_shard;
        match self.shards.get_mut(&shard) {
            Some(slot) if slot.initialized || !legacy => {
                slot.handing_off = true;
                if self.cfg.options.mutation == Mutation::RegionKeepsStaleEntities {
                    self.stale_entities
                        .insert(shard, slot.shard.live_entities());
                }
                let uid = slot.shard.uid();
                out.local(
                    Local::ToShard {
                        shard,
                        uid,
                        msg: ShardMsg::HandOff { from },
                    },
                    LocalDelay::Message,
                );
            }
            _ => out.send(from, Msg::ShardStopped { shard }),
        }
    }

    fn drop_buffer(&mut self, shard: ShardId, reason: DropReason, out: &mut Outbox) {
        if let Some(buf) = self.buffers.remove(&shard) {
            self.buffered_total -= buf.len();
            for env in buf {
                out.observe(Observation::Dropped { env, reason });
            }
        }
    }

    /// The region's children die with it (a stop, or the default `preRestart`): every Shard
    /// and its entities, every buffer, the remember-entities starter.
    fn kill_children(&mut self, stop: StopReason, drop: DropReason, out: &mut Outbox) {
        let shards: Vec<ShardId> = self.shards.keys().collect();
        for s in shards {
            self.kill_shard(s, stop, out);
        }
        let shards: Vec<ShardId> = self.buffers.keys().collect();
        for s in shards {
            self.drop_buffer(s, drop, out);
        }
        for shard in std::mem::take(&mut self.starter).into_keys() {
            out.cancel_timer(Timer::StarterRetry(shard));
        }
    }

    /// Region restart after an exception: default `preRestart` stops every child, so every
    /// shard and entity dies and every buffer is lost; the region then registers again.
    fn restart(&mut self, out: &mut Outbox) {
        out.observe(Observation::RegionRestarted);
        self.kill_children(StopReason::RegionRestart, DropReason::RegionRestart, out);
        self.region_by_shard.clear();
        self.moved.clear();
        self.starting_starts.clear();
        self.coordinator = None;
        self.start_registration(out);
    }

    fn on_retry(&mut self, out: &mut Outbox) {
        // SR:966-994
        if self.coordinator.is_none() {
            self.register(out);
        } else {
            self.request_shard_buffer_homes(out);
        }
        out.set_timer(Timer::RegionRetry, self.cfg.settings.retry_interval());
        // "eventually, also re-trigger a graceful shutdown if one is in progress"
        self.send_graceful_shutdown_req(out);
        self.try_complete_graceful_shutdown(out);
    }

    fn on_register_retry(&mut self, out: &mut Outbox) {
        // SR:1167-1184: exponential back-off while below retry-interval.
        if self.coordinator.is_none() {
            self.register(out);
            self.schedule_register_retry(out);
        }
    }

    fn schedule_register_retry(&mut self, out: &mut Outbox) {
        if self.register_backoff < self.cfg.settings.retry_interval() {
            out.set_timer(Timer::RegisterRetry, self.register_backoff);
            self.register_backoff = self.register_backoff.mul(2);
        }
    }

    fn start_registration(&mut self, out: &mut Outbox) {
        // §5.1: immediate register(), then RegisterRetry at 250 ms, 500 ms, 1 s.
        self.register_backoff = self.cfg.settings.register_backoff_start();
        self.register(out);
        self.schedule_register_retry(out);
    }

    /// Send `Register` (or `RegisterProxy`) to the oldest members up to and including the
    /// first Up one (§5.1, akka#28416).
    fn register(&mut self, out: &mut Outbox) {
        let msg = if self.hosting {
            Msg::Register { region: self.me }
        } else {
            Msg::RegisterProxy { proxy: self.me }
        };
        for m in self.coordinator_candidates(1) {
            out.send(Addr::coordinator(m.region()), msg);
        }
    }

    /// `changeMembers` (§5.1): keep hosting members with status Up/Leaving/Exiting, by age; if
    /// the oldest changed, forget the coordinator and register again.
    fn on_members_changed(&mut self, members: Vec<Member>, out: &mut Outbox) {
        // Death watch: a region whose member is gone (removed) or Down is Terminated for us:
        // forget every shard home pointing at it, so the next message re-asks (§5.4).
        let alive = |r: RegionRef| {
            members.iter().any(|m| {
                m.region() == r && !matches!(m.status, MemberStatus::Down | MemberStatus::Removed)
            })
        };
        let me = self.me;
        self.region_by_shard.retain(|_, r| *r == me || alive(*r));
        // Terminated(coordinator) → coordinator = None; startRegistration() (§5.1).
        let coordinator_gone = self.coordinator.is_some_and(|c| !alive(c.region_ref()));
        if coordinator_gone {
            self.coordinator = None;
        }
        let mut by_age: Vec<Member> = members
            .into_iter()
            .filter(|m| {
                m.hosting
                    && matches!(
                        m.status,
                        MemberStatus::Up | MemberStatus::Leaving | MemberStatus::Exiting
                    )
            })
            .collect();
        by_age.sort_by_key(|m| (m.up_number, m.node));
        let old_head = self.members_by_age.first().map(|m| m.region());
        let new_head = by_age.first().map(|m| m.region());
        self.members_by_age = by_age;
        if old_head != new_head {
            self.coordinator = None;
            self.start_registration(out);
        } else if self.coordinator.is_none() {
            self.start_registration(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deliver every local message the outputs hold, in order, until none is left (a host
    /// with zero local delay and instant entity stops); other outputs are dropped. Only its
    /// debug-build test uses it.
    #[cfg(debug_assertions)]
    fn pump(r: &mut Region, out: &mut Outbox) {
        loop {
            let locals: Vec<Local> = out
                .drain()
                .filter_map(|o| match o {
                    crate::protocol::Output::Local { msg, .. } => Some(msg),
                    _ => None,
                })
                .collect();
            if locals.is_empty() {
                return;
            }
            for m in locals {
                r.local(Instant::ZERO, m, out);
            }
        }
    }

    // ---- check_invariants: each rule, faithful and broken ----

    use crate::ids::{NodeId, NodeInc, SenderId};
    use crate::protocol::entity::{Extractors, HashExtractor, RecordingFactory};
    use crate::protocol::settings::{ProtocolOptions, Settings};

    fn region(buffer_size: usize, hosting: bool, mutation: Mutation) -> Region {
        let cfg = Arc::new(RegionConfig {
            settings: Settings {
                buffer_size,
                ..Settings::default()
            },
            options: ProtocolOptions {
                mutation,
                ..ProtocolOptions::default()
            },
            extractors: Extractors::Shared(Arc::new(HashExtractor { shards: 4 })),
            factory: Arc::new(RecordingFactory),
        });
        Region::new(rref(1), hosting, cfg)
    }

    fn rref(n: u32) -> RegionRef {
        RegionRef {
            node: NodeId(n),
            inc: NodeInc(1),
        }
    }

    fn env(entity: u32, seq: u64) -> Envelope {
        Envelope {
            sender: SenderId(0),
            entity: EntityId(entity),
            seq,
        }
    }

    /// The rule a region breaks, if any.
    fn broken(r: &Region) -> Option<&'static str> {
        r.check_invariants().map(|b| {
            assert_eq!(b.role, "region");
            b.rule
        })
    }

    /// A region without a coordinator buffering `n` messages for entity 0's shard.
    fn buffering(n: u64, buffer_size: usize, mutation: Mutation) -> (Region, ShardId) {
        let mut r = region(buffer_size, true, mutation);
        let mut out = Outbox::default();
        for seq in 1..=n {
            r.request(env(0, seq), &mut out);
        }
        let s = r.shard_of(EntityId(0));
        (r, s)
    }

    #[test]
    fn buffered_total_within_buffer_size() {
        // Faithful: the fourth and fifth messages are dropped as buffer_full.
        let (r, _) = buffering(5, 3, Mutation::None);
        assert_eq!(r.buffered_total(), 3);
        assert_eq!(r.check_invariants(), None);
        // Broken variant: buffered past buffer-size.
        let (r, _) = buffering(5, 3, Mutation::RegionIgnoresBufferSize);
        assert_eq!(r.buffered_total(), 5);
        assert_eq!(
            r.check_invariants(),
            Some(RoleBreach {
                role: "region",
                rule: "buffered-total-within-buffer-size",
                detail: "5 buffered, buffer-size 3".to_string(),
            })
        );
    }

    #[test]
    fn proxy_hosts_no_shard() {
        let mut r = region(10, false, Mutation::None);
        let mut out = Outbox::default();
        // A proxy told to host a shard ignores it (§5.6).
        r.deliver(
            Instant::ZERO,
            Addr::coordinator(rref(2)),
            Msg::HostShard { shard: ShardId(1) },
            &mut out,
        );
        assert_eq!(broken(&r), None);
        let shard = Shard::new(ShardId(1), 0, r.cfg.clone(), Instant::ZERO, &mut out);
        r.shards.insert(
            ShardId(1),
            Box::new(ShardSlot {
                shard,
                initialized: true,
                handing_off: false,
                host_pending: None,
            }),
        );
        assert_eq!(broken(&r), Some("proxy-hosts-no-shard"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn buffered_total_is_sum_of_buffers() {
        let (mut r, _) = buffering(2, 10, Mutation::None);
        assert_eq!(broken(&r), None);
        r.buffered_total = 1;
        assert_eq!(broken(&r), Some("buffered-total-is-sum-of-buffers"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn no_empty_buffer() {
        let (mut r, s) = buffering(1, 10, Mutation::None);
        let mut out = Outbox::default();
        // Learning the home delivers the buffer and removes it.
        r.deliver(
            Instant::ZERO,
            Addr::coordinator(rref(2)),
            Msg::ShardHome {
                shard: s,
                region: rref(2),
            },
            &mut out,
        );
        assert_eq!(r.buffered_shards().count(), 0);
        assert_eq!(broken(&r), None);
        r.buffers.insert(ShardId(3), VecDeque::new());
        assert_eq!(broken(&r), Some("no-empty-buffer"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn no_buffer_for_a_remote_home() {
        let (mut r, s) = buffering(2, 10, Mutation::None);
        assert_eq!(broken(&r), None);
        r.region_by_shard.insert(s, rref(2));
        assert_eq!(broken(&r), Some("no-buffer-for-a-remote-home"));
    }

    #[cfg(debug_assertions)]
    #[test]
    fn a_shard_hands_off_only_when_the_region_forwarded_hand_off() {
        let mut r = region(10, true, Mutation::None);
        let mut out = Outbox::default();
        let s = r.shard_of(EntityId(0));
        let c = Addr::coordinator(rref(2));
        r.deliver(Instant::ZERO, c, Msg::HostShard { shard: s }, &mut out);
        pump(&mut r, &mut out);
        r.request(env(0, 1), &mut out);
        pump(&mut r, &mut out);
        assert_eq!(r.hosted().count(), 1);
        assert_eq!(r.entity_incarnation(s, EntityId(0)), Some(0));
        assert_eq!(broken(&r), None);
        // A hand-off: the region marks the Shard, the Shard stops its entity, then itself.
        r.deliver(Instant::ZERO, c, Msg::BeginHandOff { shard: s }, &mut out);
        r.deliver(Instant::ZERO, c, Msg::HandOff { shard: s }, &mut out);
        assert_eq!(broken(&r), None);
        // A Shard running a HandOffStopper the region does not know of.
        let local: Vec<_> = out.drain().collect();
        r.shards.get_mut(&s).unwrap().handing_off = false;
        for o in local {
            if let crate::protocol::Output::Local { msg, .. } = o {
                r.local(Instant::ZERO, msg, &mut out);
            }
        }
        assert_eq!(broken(&r), Some("handing-off-shard-is-in-handing-off"));
        r.shards.get_mut(&s).unwrap().handing_off = true;
        pump(&mut r, &mut out);
        assert_eq!(r.hosted().count(), 0);
        assert_eq!(broken(&r), None);
    }
}
