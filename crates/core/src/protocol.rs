//! The cluster-sharding protocol as sans-IO state machines (docs/akka-reference.md §2-§7).
//!
//! Every role is a plain struct driven through one entry point:
//! `handle(now, input, &mut out)` takes the current simulated time and exactly one [`Input`],
//! and appends plain-data [`Output`]s that the host (the simulated world, a test, or the
//! madsim host) applies in order. Nothing under `protocol` reads a clock, a socket, a global or
//! an unseeded random number generator, and nothing here panics on any input: stale or
//! unexpected messages are handled idempotently, as Akka does.

pub mod allocation;
pub mod config;
pub mod coordinator;
pub mod entity;
pub mod msg;
pub mod region;
pub mod settings;
pub mod shard;
pub mod shard_map;

pub use msg::{CoordinatorEvent, Envelope, Msg};

use crate::ids::{EntityId, NodeId, NodeInc, RegionRef, ShardId};
use crate::time::Duration;
use serde::{Deserialize, Serialize};

/// Which actor on a node a message is for.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub enum Role {
    /// The node's ShardRegion (hosting or proxy-only).
    Region,
    /// The ShardCoordinator singleton, when it runs on that node.
    Coordinator,
    /// The node's ClusterSingletonManager (hosting nodes): the hand-over of the coordinator
    /// between the leaving oldest and the new oldest.
    SingletonManager,
}

/// Where a message is addressed: a node incarnation and the role on it. A message for an
/// older incarnation of a node is a dead letter, as in Akka.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub struct Addr {
    /// The node the actor runs on.
    pub node: NodeId,
    /// Its incarnation.
    pub inc: NodeInc,
    /// The actor on it.
    pub role: Role,
}

impl Addr {
    /// The region actor of `r`.
    pub fn region(r: RegionRef) -> Addr {
        Addr {
            node: r.node,
            inc: r.inc,
            role: Role::Region,
        }
    }
    /// The coordinator actor on `r`'s node.
    pub fn coordinator(r: RegionRef) -> Addr {
        Addr {
            node: r.node,
            inc: r.inc,
            role: Role::Coordinator,
        }
    }
    /// The region ref on the same node incarnation.
    pub fn region_ref(self) -> RegionRef {
        RegionRef {
            node: self.node,
            inc: self.inc,
        }
    }
}

pub use crate::membership::{Member, MemberStatus};

/// The timers of every role, keyed per node. Re-setting a timer replaces it.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub enum Timer {
    /// Region: when to re-register if no coordinator, else re-ask `GetShardHome` for every
    /// shard with buffered messages (`retry-interval`, SR:966-984).
    RegionRetry,
    /// Region: when to resend `Register` during the exponential registration back-off
    /// (SR:1167-1184).
    RegisterRetry,
    /// Coordinator: when to ask the allocation strategy for shards to rebalance.
    RebalanceTick,
    /// Coordinator: when to resend `HostShard` for a shard without `ShardStarted`.
    ResendShardHost(ShardId),
    /// Coordinator: when a hand-off of this shard gives up (`handoff-timeout`, both phases).
    HandOffTimeout(ShardId),
    /// Coordinator: when recovery is complete and `HostShard` goes to every allocated shard
    /// (500 ms after `watchStateActors`, SC:1294-1322).
    StateInitialized,
    /// Coordinator: when a removed region's termination is processed, `down-removal-margin`
    /// after its node was removed (`DelayedShardRegionTerminated`, §3.5, akka#18314).
    DelayedShardRegionTerminated(RegionRef),
    /// Region: `RestartShard(shard)`, `shard-failure-backoff` after a Shard died unexpectedly
    /// with remember-entities on (SR:1050-1093).
    RestartShard(ShardId),
    /// Region: the remember-entities starter resends `StartEntity` for the entities of this
    /// shard not yet acknowledged (`retry-interval`, §2.6).
    StarterRetry(ShardId),
    /// Region: a graceful shutdown gives up and the region stops with what it still has
    /// (`GracefulShutdownTimeout`, SR:1026-1033).
    GracefulShutdownTimeout,
    /// Coordinator: when a journal write that has not been acknowledged counts as failed
    /// (the journal plugin's call-timeout); the coordinator then stops and its back-off
    /// supervisor restarts it (`coordinator-failure-backoff`).
    PersistTimeout,
    /// A Shard's timer (the Shard is a child of the region, so its timers are the region's):
    /// `uid` names the Shard actor, so a timer of a stopped Shard never reaches its successor.
    Shard {
        /// The shard of the Shard actor that owns the timer.
        shard: ShardId,
        /// The Shard actor's uid in its region.
        uid: u32,
        /// Which timer.
        kind: ShardTimer,
    },
}

/// The timers of a Shard (docs/akka-reference.md §2.7).
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub enum ShardTimer {
    /// HandOffStopper `StopTimeout`: `(handoff-timeout - 5 s).max(1 s)` after `HandOff`, the
    /// entities that have not stopped are stopped by force (SR:530-541).
    HandOffStopTimeout,
    /// `PassivationTimedOut(entity)`: `passivation.stop-timeout` after the stop message went to
    /// a passivating entity, it is stopped by force (akka#32439).
    PassivationTimedOut(EntityId),
    /// `PassivateIntervalTick` of the idle strategy: every `idle-timeout / 2`, entities idle for
    /// longer than the timeout are passivated (§9.1).
    PassivateIdleTick,
    /// `RestartTerminatedEntity(entity)`: `entity-restart-backoff` after a remembered entity
    /// stopped without passivating, it starts again (§6.4).
    RestartTerminatedEntity(EntityId),
    /// `RememberEntityTimeout`: the store did not answer a write within
    /// `updating-state-timeout` (the Shard throws) or the load within
    /// `waiting-for-state-timeout` (the Shard stops) (§6.1, §6.4).
    RememberEntityTimeout,
}

impl Timer {
    /// The role owning this timer.
    pub fn role(self) -> Role {
        match self {
            Timer::RegionRetry
            | Timer::RegisterRetry
            | Timer::Shard { .. }
            | Timer::RestartShard(_)
            | Timer::StarterRetry(_)
            | Timer::GracefulShutdownTimeout => Role::Region,
            _ => Role::Coordinator,
        }
    }
}

/// Everything a role can be told. Exactly one per `handle` call.
#[derive(Clone, Debug)]
pub enum Input {
    /// A message arrived from `from`.
    Deliver {
        /// The sending actor.
        from: Addr,
        /// The message.
        msg: Msg,
    },
    /// A timer set earlier through [`Output::SetTimer`] fired.
    Timeout(Timer),
    /// A local sender hands a message to its region (`region ! msg`).
    Request(Envelope),
    /// The node's view of the members changed (oldest first by up-number).
    MembersChanged(Vec<Member>),
    /// Coordinator: the members its node's view shows as unreachable changed (Akka's
    /// `clusterState.unreachable`, read by `isAGoodTimeToRebalance`, MIX; §12 B38).
    Unreachable(Vec<RegionRef>),
    /// The coordinator's last [`Output::Persist`] is durable.
    Persisted,
    /// Coordinator: the singleton manager hands it over (`ShardCoordinator.Internal.Terminate`,
    /// §4.5): stop, after the write in flight and what was stashed before it (the fix of
    /// §12 B5); answered with [`Output::Stop`].
    Terminate,
    /// Coordinator, `state-store-mode = ddata`: the answer to its [`Output::StateRead`] (§3.3).
    StateRead(coordinator::StateReadResult),
    /// Coordinator, `state-store-mode = ddata`: the answer to its last [`Output::StateWrite`]
    /// (§3.3).
    StateWritten(coordinator::StateWriteResult),
    /// Coordinator, ddata mode with remember-entities: its remember store's set of shards
    /// (`RememberedShards`), `None` when the read failed (the store reads again).
    RememberedShards(Option<Vec<ShardId>>),
    /// Coordinator, ddata mode with remember-entities: the remember store's answer to the
    /// `AddShard` in flight (`UpdateDone` or `UpdateFailed`).
    RememberShardAdded(bool),
}

/// Why an entity stopped.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Stopped by the hand-off stop message.
    HandOff,
    /// The region restarted after an unexpected change of shard home (SR:1095-1114).
    RegionRestart,
    /// The node went down.
    NodeDown,
    /// Passivated: its own `Passivate`, or the idle strategy (§8).
    Passivation,
    /// Stopped by force: the passivation stop-timeout or the HandOffStopper's stop timeout
    /// fired first, or its Shard stopped under it.
    Forced,
    /// It stopped by itself, without passivating (akka#29359, §12 B31).
    SelfStop,
    /// It failed (an exception drawn by the workload) and its supervisor stopped it.
    Crashed,
    /// Its Shard failed and restarted (Akka's restart stops every child first).
    ShardRestart,
    /// Its region stopped with it still running: a graceful shutdown that timed out.
    RegionStopped,
}

/// Why a user message was dropped.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The region's total buffer was full (`buffer-size`, SR:1281-1305).
    BufferFull,
    /// Buffered at the owning region between BeginHandOff and HandOff (SR:936-962).
    HandOffBuffer,
    /// The region restarted and lost its buffers.
    RegionRestart,
    /// Addressed to a node incarnation that no longer exists.
    DeadLetter,
    /// A proxy-only region was told to host a shard.
    ProxyHostShard,
    /// Lost on the network (partition).
    Network,
    /// Buffered at a region whose node went down.
    NodeDown,
    /// In the mailbox of an entity that stopped or was stopping when it arrived: Akka
    /// documents that such messages are lost (§8 step 6).
    EntityStopped,
    /// Sent to a Shard that was handing off: in hand-off a Shard handles only `Terminated`,
    /// so entity messages become dead letters (§12 B23).
    HandingOffShard,
    /// Buffered in the Shard for a passivating entity when the Shard stopped (hand-off).
    ShardBufferLost,
    /// Sent to a Shard actor that had already stopped (a dead letter on the node).
    ShardGone,
    /// Buffered in a Shard (for a passivating, restarting or remembering entity) when the
    /// Shard failed and restarted: the old instance's buffers die with it.
    ShardRestart,
    /// Buffered in a region, or in a Shard of it, when the region stopped after its graceful
    /// shutdown timed out (SR:1026-1033).
    RegionStopped,
}

/// Facts for checkers and the trace. Protocol code never reads them back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Observation {
    /// An entity started in a shard of this region.
    EntityStarted {
        /// The entity that started, as a new incarnation.
        entity: EntityId,
        /// The shard whose Shard started it.
        shard: ShardId,
        /// The run-unique incarnation number (from [`Outbox::new_incarnation`]).
        incarnation: u64,
    },
    /// An entity terminated.
    EntityStopped {
        /// The entity whose incarnation terminated.
        entity: EntityId,
        /// What stopped it: a hand-off, passivation, a crash, its node going down, ...
        reason: StopReason,
        /// Which incarnation.
        incarnation: u64,
    },
    /// A user message reached its entity (the entity processed it).
    Delivered {
        /// The message.
        env: Envelope,
        /// The entity incarnation that processed it.
        incarnation: u64,
    },
    /// A user message was dropped.
    Dropped {
        /// The message.
        env: Envelope,
        /// What lost it: a full buffer, a dead letter, the network, its node going down, ...
        reason: DropReason,
    },
    /// This region started hosting a shard.
    ShardHosted(ShardId),
    /// This region stopped hosting a shard.
    ShardUnhosted(ShardId),
    /// The coordinator began a hand-off of `shard` from `from`.
    RebalanceStarted {
        /// The shard being handed off.
        shard: ShardId,
        /// Its current owner.
        from: RegionRef,
    },
    /// A hand-off ended (`RebalanceDone`).
    RebalanceDone {
        /// The shard whose hand-off ended.
        shard: ShardId,
        /// `false` after `handoff-timeout`.
        ok: bool,
    },
    /// The coordinator decided where a shard goes (before persisting the allocation).
    AllocationDecided {
        /// The shard being placed; its allocation is not yet persisted.
        shard: ShardId,
        /// The chosen region.
        region: RegionRef,
    },
    /// The coordinator allocated a shard.
    ShardAllocated {
        /// The shard whose allocation is persisted; `HostShard` goes to its owner next.
        shard: ShardId,
        /// The new owner.
        region: RegionRef,
    },
    /// The coordinator finished recovering from its journal.
    CoordinatorRecovered {
        /// Events replayed.
        events: usize,
    },
    /// The region restarted (Akka: an exception in ShardRegion restarts it).
    RegionRestarted,
    /// A Shard threw: Akka's default supervision restarts it in place (every entity is
    /// stopped, buffers are lost, remembered entities are loaded again).
    ShardFailed {
        /// The shard whose Shard actor threw.
        shard: ShardId,
        /// What it threw: an injected failure, a remember-store failure or an illegal state.
        cause: ShardFailure,
    },
    /// A ddata coordinator read its state (`onInitialState`, §3.3): what it starts from.
    CoordinatorStateLoaded {
        /// The state read (empty for `NotFound`).
        state: Box<coordinator::CoordinatorState>,
    },
    /// A ddata coordinator's update succeeded on enough replicas (`UpdateSuccess`); it
    /// applies `event` next.
    CoordinatorStateUpdated {
        /// The coordinator event the update wrote.
        event: CoordinatorEvent,
    },
    /// A Shard stopped itself while loading its remembered entities (§6.1: the store stopped
    /// or the load timed out); the region starts it again after shard-failure-backoff.
    ShardLoadFailed(ShardId),
}

/// Why a Shard threw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShardFailure {
    /// The workload made it fail (an application-level exception).
    Injected,
    /// A remember-entities write was not answered within `updating-state-timeout` (§6.4).
    StoreTimeout,
    /// The remember-entities store actor stopped (`RememberEntityStoreCrashed`, §6.4).
    StoreStopped,
    /// An `IllegalStateException` or an invalid actor name: a bug of the modelled Akka version
    /// (§12 B33, B34, B35), named by the text. The checker's `shard-illegal-state` oracle.
    IllegalState(&'static str),
}

/// Everything a role asks of its host, applied in order.
#[derive(Clone, Debug)]
pub enum Output {
    /// Send `msg` to `to`.
    Send {
        /// Destination.
        to: Addr,
        /// The message.
        msg: Msg,
    },
    /// Start (or restart) a timer.
    SetTimer {
        /// Which timer.
        timer: Timer,
        /// After how long.
        after: Duration,
    },
    /// Cancel a timer; a no-op when it is not set.
    CancelTimer(Timer),
    /// Write an event to the coordinator's journal; the host answers with [`Input::Persisted`].
    Persist(CoordinatorEvent),
    /// `state-store-mode = ddata`: read the coordinator state register
    /// (`Get(<TypeName>CoordinatorState, ReadMajorityPlus(timeout, additional, min-cap))`,
    /// §3.3); the host answers with [`Input::StateRead`].
    StateRead {
        /// `ReadMajorityPlus`'s additional replicas.
        additional: usize,
        /// `waiting-for-state-timeout`.
        timeout: Duration,
    },
    /// `state-store-mode = ddata` with remember-entities: the coordinator's remember store
    /// reads `shard-<type>-all` (a GSet, durable); the host answers with
    /// [`Input::RememberedShards`].
    RememberedShardsRead {
        /// `ReadMajorityPlus`'s additional replicas.
        additional: usize,
        /// `waiting-for-state-timeout`.
        timeout: Duration,
    },
    /// `state-store-mode = ddata` with remember-entities: `AddShard(shard)` to the
    /// coordinator's remember store; the host answers with [`Input::RememberShardAdded`].
    RememberShardAdd {
        /// The newly allocated shard.
        shard: ShardId,
        /// `WriteMajorityPlus`'s additional replicas.
        additional: usize,
        /// `updating-state-timeout`.
        timeout: Duration,
    },
    /// `state-store-mode = ddata`: write the whole new state (`Update(..., WriteMajorityPlus
    /// (timeout, additional, min-cap))` with `reg.withValueOf(state)`, §3.3); the host answers
    /// with [`Input::StateWritten`].
    StateWrite {
        /// `state.updated(evt)`.
        state: Box<coordinator::CoordinatorState>,
        /// `WriteMajorityPlus`'s additional replicas.
        additional: usize,
        /// `updating-state-timeout`.
        timeout: Duration,
    },
    /// A fact for the checkers and the trace.
    Observe(Observation),
    /// A request from a Shard to its remember-entities store (§2.6); the host answers with a
    /// [`StoreReply`].
    Store(Box<StoreRequest>),
    /// A message between actors of this node (region, Shard, entity): always its own event,
    /// after the node's local delay (or, for an entity's termination, its stop duration).
    Local {
        /// The message.
        msg: Local,
        /// Which delay the host applies.
        delay: LocalDelay,
    },
    /// The actor stops itself (coordinator: persist failure; region: its node was removed).
    /// The host drops it; a supervisor may start a new one.
    Stop {
        /// Why, in words, for the trace (e.g. `journal write timed out (onPersistFailure)`).
        reason: &'static str,
    },
}

/// A message between the actors of one node (docs/akka-reference.md §2.4, §2.5): the region and its
/// Shards, a Shard and its entities. `uid` names a Shard actor within its region, `inc` an
/// entity actor, so a message for an actor that stopped never reaches its successor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local {
    /// Region → Shard.
    ToShard {
        /// The shard whose Shard actor receives it.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
        /// The message.
        msg: ShardMsg,
    },
    /// Shard → region: `ShardInitialized` (SH:606).
    ShardInitialized {
        /// The shard whose Shard finished initialising.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
    },
    /// Death watch: the Shard actor terminated (`Terminated(shard)` at the region).
    ShardTerminated {
        /// The shard whose Shard actor terminated.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
    },
    /// Shard → entity: a user message (the entity is `env.entity`).
    ToEntity {
        /// The entity's shard.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
        /// The entity actor.
        inc: u64,
        /// The message.
        env: Envelope,
    },
    /// Shard → entity: its stop message, `handOffStopMessage` (hand-off, idle passivation)
    /// or its own `Passivate` stop message. The entity stops when it processes it.
    StopEntity {
        /// The entity's shard.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
        /// The entity to stop.
        entity: EntityId,
        /// The entity actor.
        inc: u64,
        /// What the stop is for.
        reason: StopReason,
    },
    /// Entity → Shard: `Passivate(stopMessage)` (§8 step 1).
    Passivate {
        /// The entity's shard.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
        /// The entity that asks to passivate.
        entity: EntityId,
        /// The entity actor.
        inc: u64,
        /// The stop message is one the entity never handles (an application bug, §12 B32).
        ignores_stop: bool,
    },
    /// Shard → the region's remember-entities starter: start this remembered entity through
    /// the region (`StartEntity` routed by the current extractor, §2.6, akka#22289).
    StartRemembered {
        /// The Shard that remembered it.
        shard: ShardId,
        /// The remembered entity to start.
        entity: EntityId,
    },
    /// Death watch: the entity actor terminated (`EntityTerminated`, SH:918-981).
    EntityTerminated {
        /// The entity's shard.
        shard: ShardId,
        /// The Shard actor.
        uid: u32,
        /// The entity whose actor terminated.
        entity: EntityId,
        /// The entity actor.
        inc: u64,
    },
}

impl Local {
    /// The user message it carries, if any.
    pub fn user_message(&self) -> Option<Envelope> {
        match self {
            Local::ToShard {
                msg: ShardMsg::User(env),
                ..
            }
            | Local::ToEntity { env, .. } => Some(*env),
            _ => None,
        }
    }
}

/// What a region tells one of its Shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardMsg {
    /// The Shard's own initialisation (lease, remember-entities load) finished: sent by the
    /// Shard to itself when created, after the initialisation time.
    InitDone,
    /// A user message for one of its entities.
    User(Envelope),
    /// `HandOff` forwarded from the coordinator's RebalanceWorker (`from`).
    HandOff {
        /// Where `ShardStopped` goes.
        from: Addr,
    },
    /// `StartEntity(entity)` from a remember-entities starter on region `starter`, for the
    /// entities remembered by shard `for_shard`: answered with `StartEntityAck`.
    StartEntity {
        /// The remembered entity to start in this Shard.
        entity: EntityId,
        /// The starter's region.
        starter: RegionRef,
        /// The shard whose starter asks.
        for_shard: ShardId,
    },
    /// `EntitiesMovedToOtherShard`: the starter saw this remembered entity acked by another
    /// shard (the extractor changed): forget it here (akka#22289).
    EntityMoved {
        /// The remembered entity to forget here, now acknowledged by another shard.
        entity: EntityId,
        /// The last of one `EntitiesMovedToOtherShard(ids)`: the Shard writes them all then,
        /// in one `Update` (the starter sends the ids one local message each, back to back).
        last: bool,
    },
    /// The workload made the Shard throw while handling a message.
    Fail,
}

/// A Shard's request to its remember-entities store (§2.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreRequest {
    /// The shard whose remembered entities are read or written.
    pub shard: ShardId,
    /// The Shard actor.
    pub uid: u32,
    /// The Shard instance (restarts in place count up).
    pub instance: u32,
    /// What it asks.
    pub op: StoreOp,
}

/// The remember-entities shard store's requests (`RememberEntitiesShardStore`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreOp {
    /// `GetEntities`: answered with `RememberedEntities(ids)`.
    GetEntities,
    /// `Update(started, stopped)`: answered with `UpdateDone`.
    Update {
        /// Entities started.
        started: Vec<EntityId>,
        /// Entities stopped.
        stopped: Vec<EntityId>,
    },
}

/// A remember-entities store's answer to a Shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreReply {
    /// The shard whose Shard asked.
    pub shard: ShardId,
    /// The Shard actor.
    pub uid: u32,
    /// The Shard instance that asked.
    pub instance: u32,
    /// The answer.
    pub kind: StoreReplyKind,
}

/// What a store answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreReplyKind {
    /// `RememberedEntities(ids)`.
    Remembered(Vec<EntityId>),
    /// `UpdateDone` for the write in flight.
    UpdateDone,
    /// The store actor stopped (it gave up reading or writing): the Shard's death watch of
    /// it (`RememberEntityStoreCrashed`) makes the Shard throw.
    StoreStopped,
}

/// What an entity decides to do after processing a message (the application's choice; the
/// simulator's workload draws it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityAct {
    /// Send `Passivate(stopMessage)` to its Shard (§8 step 1); `ignores_stop`: the stop
    /// message is one it never handles (an application bug, §12 B32).
    Passivate {
        /// Whether it never handles its stop message.
        ignores_stop: bool,
    },
    /// `context.stop(self)` without passivating (akka#29359, §12 B31).
    StopSelf,
    /// It throws; the Shard's supervision stops it (it restarts after
    /// `entity-restart-backoff` when remembered).
    Crash,
    /// Its Shard throws while handling the message's aftermath (an application-level bug,
    /// e.g. in a custom passivation strategy); the Shard restarts in place.
    FailShard,
}

/// Which delay a [`Output::Local`] message takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalDelay {
    /// The node's local message delay (default 0: still its own event).
    Message,
    /// An entity's stop: the time from processing its stop message to its termination,
    /// drawn by the host from the scenario's range.
    EntityStop,
    /// A Shard's initialisation (lease, remember-entities load), drawn by the host from the
    /// scenario's range.
    ShardInit,
}

/// The output buffer passed to `handle`. Reused across calls by the host.
#[derive(Debug, Default)]
pub struct Outbox(pub Vec<Output>, pub Incarnations);

/// The run-wide entity incarnation counter, lent to a role for one `handle` call by its host
/// (incarnation numbers are unique in a run, so the trace can name them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Incarnations {
    /// The next number to hand out.
    pub next: u64,
}

impl Outbox {
    /// A fresh entity incarnation number.
    pub fn new_incarnation(&mut self) -> u64 {
        let i = self.1.next;
        self.1.next += 1;
        i
    }
    /// Send a local message.
    pub fn local(&mut self, msg: Local, delay: LocalDelay) {
        self.0.push(Output::Local { msg, delay });
    }
    /// Queue a message.
    pub fn send(&mut self, to: Addr, msg: Msg) {
        self.0.push(Output::Send { to, msg });
    }
    /// Start a timer.
    pub fn set_timer(&mut self, timer: Timer, after: Duration) {
        self.0.push(Output::SetTimer { timer, after });
    }
    /// Cancel a timer.
    pub fn cancel_timer(&mut self, timer: Timer) {
        self.0.push(Output::CancelTimer(timer));
    }
    /// Ask the remember-entities store.
    pub fn store(&mut self, shard: ShardId, uid: u32, instance: u32, op: StoreOp) {
        self.0.push(Output::Store(Box::new(StoreRequest {
            shard,
            uid,
            instance,
            op,
        })));
    }
    /// Report a fact.
    pub fn observe(&mut self, o: Observation) {
        self.0.push(Output::Observe(o));
    }
    /// Take every queued output.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Output> {
        self.0.drain(..)
    }
}

/// A rule of a role's own state that does not hold after a `handle`: found
/// by [`Region::check_invariants`](region::Region::check_invariants) or
/// [`Coordinator::check_invariants`](coordinator::Coordinator::check_invariants), and reported
/// as data, never by panicking. The host decides what a breach means (the simulator records a
/// `role-invariant` violation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleBreach {
    /// `"region"` or `"coordinator"`.
    pub role: &'static str,
    /// The rule, as a short kebab-case name (e.g. `buffered-total-within-buffer-size`).
    pub rule: &'static str,
    /// What was found, e.g. `1001 buffered, buffer-size 1000`.
    pub detail: String,
}

impl std::fmt::Display for RoleBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.role, self.rule, self.detail)
    }
}
