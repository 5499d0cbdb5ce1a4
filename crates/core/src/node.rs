//! One node incarnation as a sans-IO unit: everything Akka runs inside one actor system.
//!
//! A [`Node`] holds the node's cluster [`Membership`], its ShardRegion, and, while its own member
//! view says it is the oldest Up hosting member, the ShardCoordinator singleton with its
//! recovery and back-off supervisor (`coordinator-failure-backoff`). It also runs death watch of
//! the coordinator (every region learns `CoordinatorTerminated`), Akka's seed-node join process
//! (`seed-node-timeout`), and the numbering of entity incarnations.
//!
//! Every host drives it the same way: `handle(now, input, &mut host)` with exactly one
//! [`NodeInput`]; the [`NodeOutput`]s go to the host in order, which applies them (messages onto its network, timers
//! onto its clock, journal writes onto its journal, observations into its checker and trace).
//! The node owns its timer table: a timer is set with a generation and a fired timer whose
//! generation is no longer current is ignored here, so a host only has to deliver what it was
//! asked to. Nothing here reads a clock, a socket or a global, and nothing panics.

use crate::ddata::{
    Data, GetResult, Key, ReadConsistency, RememberStores, ReplInput, ReplMsg, ReplOutput,
    ReplTimer, Replicator, ReplicatorConfig, StoreInput, StoreOutput, StoreSettings, UpdateOp,
    UpdateResult, WriteConsistency,
};
use crate::ids::{EntityId, NodeId, NodeInc, RegionRef, ShardId};
use crate::membership::MembershipEvent;
use crate::membership::{MInput, MMsg, MOutput, MTimer, Membership, MembershipConfig, NodeAddr};
use crate::protocol::allocation::LeastShardAllocationStrategy;
use crate::protocol::coordinator::{Coordinator, StateReadResult, StateWriteResult};
use crate::protocol::region::{Region, RegionConfig};
use crate::protocol::settings::{Mutation, RememberStore, StateStoreMode};
use crate::protocol::{
    Addr, CoordinatorEvent, DropReason, EntityAct, Envelope, Incarnations, Input, Local,
    LocalDelay, Member, MemberStatus, Msg, Observation, Outbox, Output, Role, RoleBreach,
    StopReason, StoreReply, StoreRequest, Timer,
};
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod join;
mod shutdown;
mod singleton;
mod stores;

/// Akka's `seed-node-timeout` (5 s).
pub const SEED_NODE_TIMEOUT: Duration = Duration::from_secs(5);

/// ClusterSingletonManager `hand-over-retry-interval` (1 s).
pub const HAND_OVER_RETRY: Duration = Duration::from_secs(1);

/// Coordinated shutdown's `cluster-exiting` phase timeout (10 s): how long an Exiting node
/// waits for the singleton hand-over.
pub const EXITING_TIMEOUT: Duration = Duration::from_secs(10);

/// What every node of a run shares.
pub struct NodeConfig {
    /// The region's settings, options, extractors and entity factory.
    pub region: Arc<RegionConfig>,
    /// Membership: heartbeats, gossip, the downing provider.
    pub membership: MembershipConfig,
    /// Entities in the run (sizes the incarnation table).
    pub entities: u32,
}

impl NodeConfig {
    /// A configuration built from its parts, without a scenario file: the region's
    /// configuration (Akka settings, protocol options, shard extractors, entity factory), the
    /// membership's, and the number of entities in the run ([`NodeConfig::entities`]).
    ///
    /// Every node of a run shares one configuration: wrap it in an [`Arc`] and hand a clone
    /// to each [`Node::new`]. For the defaults throughout, see [`NodeConfig::default_for`].
    pub fn new(region: RegionConfig, membership: MembershipConfig, entities: u32) -> Self {
        NodeConfig {
            region: Arc::new(region),
            membership,
            entities,
        }
    }

    /// The defaults throughout, for entity ids `0..entities` spread over `shards` shards:
    /// [`Settings::default`](crate::protocol::settings::Settings) (Akka's values, with
    /// Akka.NET's `persistence` state-store mode, so the coordinator writes to the journal;
    /// remember-entities off),
    /// [`ProtocolOptions::default`](crate::protocol::settings::ProtocolOptions) (Akka's
    /// behaviour: no fix, no mutation), the default FNV-1a hash extractor
    /// ([`HashExtractor`](crate::protocol::entity::HashExtractor), shared by every region),
    /// [`RecordingFactory`](crate::protocol::entity::RecordingFactory) entities, and
    /// [`MembershipConfig::default`](MembershipConfig) (no automatic downing, gossip seed 0).
    pub fn default_for(entities: u32, shards: u32) -> Self {
        use crate::protocol::entity::{ExtractorKind, Extractors, RecordingFactory};
        use crate::protocol::settings::{ProtocolOptions, Settings};
        let region = RegionConfig {
            settings: Settings::default(),
            options: ProtocolOptions::default(),
            extractors: Extractors::new(ExtractorKind::Fnv, shards, entities, 0),
            factory: Arc::new(RecordingFactory),
        };
        NodeConfig::new(region, MembershipConfig::default(), entities)
    }
}

/// The timers of one node: its roles', its membership's, and its own.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum NodeTimer {
    /// A timer of the region or the coordinator.
    Role(Timer),
    /// A membership timer.
    Membership(MTimer),
    /// The singleton manager looks again whether the coordinator should run here (after the
    /// back-off). Not generation-stamped: every one fires.
    SingletonCheck,
    /// The seed-node process looks whether this node was welcomed (`seed-node-timeout`). Not
    /// generation-stamped. The host answers it with [`NodeInput::JoinCheck`].
    JoinCheck,
    /// A timer of the node's Distributed Data replicator.
    Repl(ReplTimer),
    /// The singleton manager resends `HandOverToMe` (`hand-over-retry-interval`, 1 s).
    HandOverRetry,
    /// Coordinated shutdown's `cluster-exiting` phase gives up waiting for the singleton
    /// hand-over (10 s).
    ExitingTimeout,
}

/// Everything a node can be told. Exactly one per `handle` call.
#[derive(Clone, Debug)]
pub enum NodeInput {
    /// Start this incarnation: its region, and its membership joining through `seeds`.
    Start {
        /// Members to send `Join` to; empty: form a new cluster.
        seeds: Vec<NodeAddr>,
    },
    /// A sharding message for `role` on this node. The host checks [`Node::has_role`] first:
    /// a message for an actor that is not running is a dead letter.
    Deliver {
        /// The sending actor.
        from: Addr,
        /// The receiving actor.
        role: Role,
        /// The message.
        msg: Msg,
    },
    /// A local sender hands a message to the region.
    Request(Envelope),
    /// A membership message from another node.
    Cluster {
        /// The sender.
        from: NodeAddr,
        /// The message.
        msg: MMsg,
    },
    /// A timer set through [`Effect::SetTimer`] fired.
    Timer {
        /// The timer that fired, as the [`Effect::SetTimer`] that started it named it.
        timer: NodeTimer,
        /// The generation it was set with.
        gen: u64,
    },
    /// The seed-node timeout fired (see [`NodeTimer::JoinCheck`]). The host answers the
    /// `InitJoin` this node would send: `members` are the live nodes that are Up members and
    /// would answer it; `first_live` is the lowest live node (the one that may form a cluster).
    JoinCheck {
        /// Live Up members, in node order.
        members: Vec<NodeAddr>,
        /// The lowest live node.
        first_live: Option<NodeAddr>,
    },
    /// The journal acknowledged a write of coordinator generation `gen`.
    Persisted {
        /// The coordinator generation that wrote.
        gen: u32,
    },
    /// An operator on this node downs `target`.
    Down(NodeAddr),
    /// Leave the cluster gracefully.
    Leave,
    /// A message between actors of this node, sent through [`Effect::Local`], arrived.
    Local(Local),
    /// An entity decided, after a message, to passivate or to stop itself (the
    /// application's choice, drawn by the host's workload).
    EntityActs {
        /// The entity that decided, in one of this node's region's Shards.
        entity: EntityId,
        /// The entity incarnation that processed the message; acts of one no longer running are
        /// ignored.
        incarnation: u64,
        /// What it does.
        act: EntityAct,
    },
    /// A remember-entities store answered a Shard of this node's region.
    StoreReply(Box<StoreReply>),
    /// A Shard's request reaches this node's `ddata` remember-entities store (a local actor:
    /// the host delivers [`Effect::Store`] back as this, after the local delay).
    DdataStore(Box<StoreRequest>),
    /// A message from another node's Distributed Data replicator.
    Repl {
        /// The sender.
        from: NodeAddr,
        /// The message.
        msg: Box<ReplMsg>,
    },
    /// The process stops at once (a crash): buffered messages are lost.
    Stop {
        /// Why, for the trace and the node's `Shutdown` (the hosts pass `crash`).
        reason: String,
    },
    /// An operator on this node calls `Cluster.leave(target)`: the target becomes Leaving
    /// and runs coordinated shutdown once it is Exiting.
    LeaveMember(NodeAddr),
}

/// Everything a node asks of its host, applied in order: an [`Effect`], the host's work, or a
/// [`Fact`], for checkers and traces. A node emits them interleaved, in the order its roles
/// acted, and a host handles each as it comes.
#[derive(Clone, Debug)]
pub enum NodeOutput {
    /// Work for the host: a message to send, a timer, a journal or store request, the disk,
    /// the node's stop.
    Effect(Effect),
    /// Something that happened, for the host's checkers and trace; nothing to do but record
    /// it (and, for a delivery, draw what the entity does next).
    Fact(Fact),
}

/// The host's work: what a node asks of the world around it.
#[derive(Clone, Debug)]
pub enum Effect {
    /// A message between actors of this node: deliver it back as [`NodeInput::Local`] after
    /// the delay `delay` names, always as its own event.
    Local {
        /// The message.
        msg: Local,
        /// Which delay.
        delay: LocalDelay,
    },
    /// A Shard's request to its remember-entities store (§2.6): the host answers with
    /// [`NodeInput::StoreReply`] (or never, when the store is unreachable or failing).
    Store(Box<StoreRequest>),
    /// Send a message to another node's Distributed Data replicator.
    SendRepl {
        /// The recipient.
        to: NodeAddr,
        /// The message.
        msg: Box<ReplMsg>,
    },
    /// Write a durable Distributed Data entry to this node's disk (it survives a restart of
    /// the node; the host hands it back through [`NodeHost::disk`]).
    Durable {
        /// The durable key (a `shard-*` key) the entry is stored under, replacing what was there.
        key: Key,
        /// Its value.
        data: Data,
    },
    /// The `ddata` remember-entities store answers a Shard: deliver it back as
    /// [`NodeInput::StoreReply`] after the local delay.
    StoreReplyLocal(Box<StoreReply>),
    /// Send a sharding message from this node's `from` actor.
    Send {
        /// The sending actor on this node.
        from: Role,
        /// The destination.
        to: Addr,
        /// The message.
        msg: Msg,
    },
    /// Send a membership message.
    SendCluster {
        /// The recipient.
        to: NodeAddr,
        /// The message.
        msg: MMsg,
    },
    /// Death watch: the coordinator stopped, and every live region hears
    /// `CoordinatorTerminated` from it.
    CoordinatorTerminated,
    /// Start (or replace) a timer.
    SetTimer {
        /// The timer to start; it comes back as [`NodeInput::Timer`] when it fires.
        timer: NodeTimer,
        /// After how long.
        after: Duration,
        /// Its generation, handed back with [`NodeInput::Timer`].
        gen: u64,
    },
    /// Write an event to the coordinator's journal; the host answers with
    /// [`NodeInput::Persisted`] carrying `gen`.
    Persist {
        /// The writing coordinator's generation on this node.
        gen: u32,
        /// The event to append: a registration, a termination, a shard allocated or deallocated.
        event: CoordinatorEvent,
    },
    /// The node stopped (crash, or shut down after leaving, being downed or removed). Nothing
    /// follows; the host drops the node.
    Shutdown {
        /// Why: `crash`, `left`, or the downing reason (`downed: operator`, `sbr: ...`).
        reason: String,
    },
}

/// What a node reports: facts for the checkers and the trace.
#[derive(Clone, Debug)]
pub enum Fact {
    /// The `ddata` store completed a write on a majority (for the trace and the checker).
    StoreWritten {
        /// The shard whose remembered entities were written.
        shard: ShardId,
        /// Entities added.
        started: Vec<EntityId>,
        /// Entities removed.
        stopped: Vec<EntityId>,
    },
    /// The `ddata` store answered `GetEntities`.
    StoreRead {
        /// The shard whose remembered entities were read.
        shard: ShardId,
        /// The remembered entities.
        entities: Vec<EntityId>,
    },
    /// A fact from a role, with the entity incarnation it concerns (started, stopped or
    /// delivered to; 0 otherwise).
    Observe {
        /// The fact.
        obs: Observation,
        /// The entity incarnation.
        incarnation: u64,
    },
    /// A role timer fired and is being handled.
    TimerFired(Timer),
    /// This node's member view changed.
    View(Vec<Member>),
    /// A membership observation.
    Cluster(MembershipEvent),
    /// The seed-node process joins again through `seeds` (empty: as a new cluster).
    JoinAgain(Vec<NodeAddr>),
    /// The coordinator singleton started here after replaying `replayed` journal events.
    CoordinatorStarted {
        /// Its generation on this node.
        generation: u32,
        /// Events replayed.
        replayed: usize,
    },
    /// The journal acknowledged a write of the running coordinator (generation `gen`), which
    /// handles it next.
    PersistAcked {
        /// The coordinator's generation.
        gen: u32,
    },
    /// The region's coordinator changed (registered with one, or lost it).
    RegionCoordinator(Option<RegionRef>),
    /// A role's check of its own state failed after it handled an input (reported, never a
    /// panic).
    RoleBreach(RoleBreach),
    /// The region stopped itself.
    RegionStopped {
        /// Why, in words: `graceful shutdown complete` or `graceful shutdown timed out`.
        reason: &'static str,
    },
    /// The coordinator here stopped.
    CoordinatorStopped {
        /// Why, in words, e.g. `no longer the oldest member` or `handed over to the new oldest`.
        reason: &'static str,
    },
    /// The coordinator could not recover; the back-off supervisor retries.
    RecoveryFailed {
        /// Why: `journal unreachable`, or why replaying the journal's events failed.
        reason: String,
    },
}

impl From<Effect> for NodeOutput {
    fn from(e: Effect) -> Self {
        NodeOutput::Effect(e)
    }
}

impl From<Fact> for NodeOutput {
    fn from(f: Fact) -> Self {
        NodeOutput::Fact(f)
    }
}

/// The host a node runs on, seen from the node: where its outputs go, and the two things it
/// asks of the world (the journal recovery reads, and run-unique entity incarnation numbers).
///
/// [`Collect`] keeps the outputs as plain data (tests, a second host); the simulated world
/// implements it directly, so that a message a role sends is dispatched once, not collected and
/// dispatched again (`send` and `observe` are the hot path's fast doors).
pub trait NodeHost {
    /// Apply (or keep) one output.
    fn output(&mut self, o: NodeOutput);
    /// [`Effect::Send`].
    #[inline]
    fn send(&mut self, from: Role, to: Addr, msg: Msg) {
        self.output(NodeOutput::Effect(Effect::Send { from, to, msg }));
    }
    /// [`Fact::Observe`].
    #[inline]
    fn observe(&mut self, obs: Observation, incarnation: u64) {
        self.output(NodeOutput::Fact(Fact::Observe { obs, incarnation }));
    }
    /// [`Fact::Observe`] of a delivery to entity incarnation `incarnation` (the most
    /// frequent fact).
    #[inline]
    fn delivered(&mut self, env: Envelope, incarnation: u64) {
        self.observe(Observation::Delivered { env, incarnation }, incarnation);
    }
    /// The coordinator journal as recovery would read it now; `None` when it is unreachable
    /// from this node.
    fn journal(&self) -> Option<&[CoordinatorEvent]>;
    /// The run-wide entity incarnation counter (lent to the region for each input).
    fn incarnations(&mut self) -> &mut Incarnations;
    /// This node's disk: the durable Distributed Data entries written by its earlier
    /// incarnations ([`Effect::Durable`]). None by default.
    fn disk(&self) -> BTreeMap<Key, Data> {
        BTreeMap::new()
    }
}

/// A [`NodeHost`] that keeps the outputs as plain data.
pub struct Collect<'a> {
    /// The outputs, in order.
    pub out: Vec<NodeOutput>,
    /// What recovery reads (`None`: unreachable).
    pub journal: Option<&'a [CoordinatorEvent]>,
    /// The run-wide incarnation counter.
    pub incarnations: &'a mut Incarnations,
}

impl NodeHost for Collect<'_> {
    fn output(&mut self, o: NodeOutput) {
        self.out.push(o);
    }
    fn journal(&self) -> Option<&[CoordinatorEvent]> {
        self.journal
    }
    fn incarnations(&mut self) -> &mut Incarnations {
        self.incarnations
    }
}

/// One node incarnation.
pub struct Node {
    me: NodeAddr,
    hosting: bool,
    /// This incarnation's `akka.cluster.app-version` (0 unless [`Node::with_app_version`]).
    app_version: u32,
    /// The members this node's view shows as unreachable, as last told to its coordinator, and
    /// the membership content revision it was computed at.
    unreachable: (u64, Vec<RegionRef>),
    cfg: Arc<NodeConfig>,
    stopped: bool,
    /// Coordinated shutdown runs (a graceful leave): the region shuts down first, then the
    /// node leaves the cluster (§5.5, the phase order of Akka's `reference.conf`).
    leaving: bool,
    /// The membership said this node is Exiting: the `cluster-exiting` phase waits for the
    /// singleton hand-over before `ExitingCompleted`.
    exiting: bool,
    /// Coordinated shutdown started when this node saw itself Exiting (its leave came from
    /// `Cluster.leave`, not from coordinated shutdown): the region's phase runs first, then
    /// `cluster-exiting`.
    exiting_first: bool,
    /// ClusterSingletonManager `HandingOver`: the new oldest asked for the coordinator; it
    /// gets `HandOverDone` once the coordinator here has stopped.
    handing_over_to: Option<Addr>,
    /// ClusterSingletonManager `BecomingOldest`: the previous oldest (Exiting) asked with
    /// `HandOverToMe`, and the previous oldest members that answered `HandOverDone`.
    hand_over_from: Option<NodeAddr>,
    hand_over_done: BTreeSet<NodeAddr>,
    region: Option<Region>,
    /// The buffer high-water mark of this node's region after it stopped.
    stopped_region_high_water: usize,
    coordinator: Option<Coordinator>,
    /// Counts coordinator instances on this node; journal acknowledgements carry it.
    coord_gen: u32,
    /// The singleton's back-off: no coordinator start before this time (µs).
    coord_backoff_until: u64,
    membership: Membership,
    /// The node's Distributed Data replicator with the `ddata` remember-entities stores in
    /// front of it (hosting nodes with remember-entities on and `remember-entities-store =
    /// ddata`, or with `state-store-mode = ddata`: the coordinator's register shares it).
    stores: Option<RememberStores>,
    /// The replicator's answers to the coordinator, delivered once the coordinator's current
    /// input is done (the replicator is another actor: its reply is a later message).
    coord_inbox: Vec<Input>,
    /// The coordinator's input and its outputs are being handled.
    coord_busy: bool,
    sout: Vec<StoreOutput>,
    /// This node's current member view.
    view: Vec<Member>,
    /// Armed timers and their generations.
    timers: BTreeMap<NodeTimer, u64>,
    timer_gen: u64,
    /// Scratch buffers, reused across calls.
    out: Outbox,
    mout: Vec<MOutput>,
}

impl Node {
    /// A new incarnation `me`; send it [`NodeInput::Start`] next.
    pub fn new(me: NodeAddr, hosting: bool, cfg: Arc<NodeConfig>) -> Self {
        Node {
            me,
            hosting,
            app_version: 0,
            unreachable: (0, Vec::new()),
            stopped: false,
            leaving: false,
            exiting: false,
            exiting_first: false,
            handing_over_to: None,
            hand_over_from: None,
            hand_over_done: BTreeSet::new(),
            region: Some(Region::new(
                RegionRef {
                    node: me.node,
                    inc: me.inc,
                },
                hosting,
                cfg.region.clone(),
            )),
            stopped_region_high_water: 0,
            coordinator: None,
            coord_gen: 0,
            coord_backoff_until: 0,
            membership: Membership::new(me, hosting, cfg.membership.clone()),
            stores: None,
            coord_inbox: Vec::new(),
            coord_busy: false,
            sout: Vec::new(),
            view: Vec::new(),
            timers: BTreeMap::new(),
            timer_gen: 0,
            out: Outbox::default(),
            mout: Vec::new(),
            cfg,
        }
    }

    /// This incarnation runs app version `v` (`akka.cluster.app-version`, Akka 2.6.10+): its
    /// member carries it in `Join` and gossip. Call before [`NodeInput::Start`].
    pub fn with_app_version(mut self, v: u32) -> Self {
        self.app_version = v;
        self.membership.set_app_version(v);
        self
    }

    /// This incarnation's address.
    pub fn addr(&self) -> NodeAddr {
        self.me
    }

    /// Whether `role` is running here (a message for it is not a dead letter).
    pub fn has_role(&self, role: Role) -> bool {
        match role {
            Role::Region => self.region.is_some(),
            Role::Coordinator => self.coordinator.is_some(),
            Role::SingletonManager => self.hosting,
        }
    }

    /// The region, while it runs.
    pub fn region(&self) -> Option<&Region> {
        self.region.as_ref()
    }

    /// The most messages this node's region buffered at once (also after it stopped).
    pub fn buffer_high_water(&self) -> usize {
        self.region
            .as_ref()
            .map_or(0, Region::buffered_high_water)
            .max(self.stopped_region_high_water)
    }

    /// The coordinator, while it runs here.
    pub fn coordinator(&self) -> Option<&Coordinator> {
        self.coordinator.as_ref()
    }

    /// This node's member view.
    pub fn view(&self) -> &[Member] {
        &self.view
    }

    /// This node's own member status, once a member has welcomed it.
    pub fn status_of_self(&self) -> Option<MemberStatus> {
        self.membership.status_of_self()
    }

    /// Apply one input.
    pub fn handle(&mut self, now: Instant, input: NodeInput, out: &mut impl NodeHost) {
        if self.stopped {
            return;
        }
        match input {
            NodeInput::Start { seeds } => {
                let st = &self.cfg.region.settings;
                if self.hosting
                    && ((st.remember_entities
                        && st.remember_entities_store == RememberStore::Ddata)
                        || st.state_store_mode == StateStoreMode::Ddata)
                {
                    let replicator =
                        Replicator::new(self.me, ReplicatorConfig::default(), out.disk());
                    let settings = StoreSettings {
                        waiting_for_state_timeout: Duration::from_millis(
                            st.waiting_for_state_timeout_ms,
                        ),
                        updating_state_timeout: Duration::from_millis(st.updating_state_timeout_ms),
                        ..StoreSettings::default()
                    };
                    self.stores = Some(RememberStores::new(replicator, settings));
                    // The first input arms the replicator's gossip.
                    self.store_input(
                        now,
                        StoreInput::Replicator(ReplInput::Members(Vec::new())),
                        out,
                    );
                }
                let mut o = std::mem::take(&mut self.out);
                if let Some(r) = self.region.as_mut() {
                    r.start(now, &mut o);
                }
                self.apply(now, Role::Region, &mut o, out);
                self.restore_outbox(o);
                self.membership_input(now, MInput::Start { seeds }, out);
                self.set_timer(NodeTimer::JoinCheck, SEED_NODE_TIMEOUT, out);
            }
            NodeInput::Deliver { from, role, msg } => match role {
                Role::Region => self.deliver(now, from, msg, out),
                Role::SingletonManager => self.singleton_msg(now, from, msg, out),
                Role::Coordinator => self.coordinator_input(now, Input::Deliver { from, msg }, out),
            },
            NodeInput::Request(env) => self.request(now, env, out),
            NodeInput::Cluster { from, msg } => {
                self.membership_input(now, MInput::Deliver { from, msg }, out)
            }
            NodeInput::Timer { timer, gen } => self.on_timer(now, timer, gen, out),
            NodeInput::JoinCheck {
                members,
                first_live,
            } => self.on_join_check(now, members, first_live, out),
            NodeInput::Persisted { gen } => {
                if self.coordinator.is_some() && self.coord_gen == gen {
                    out.output(NodeOutput::Fact(Fact::PersistAcked { gen }));
                    self.coordinator_input(now, Input::Persisted, out);
                }
            }
            NodeInput::Down(target) => self.membership_input(now, MInput::DownCommand(target), out),
            NodeInput::Leave => self.coordinated_shutdown(now, out),
            NodeInput::Local(msg) => {
                let protocol = msg.user_message().is_none();
                self.in_region(now, out, protocol, |r, o| r.local(now, msg, o))
            }
            NodeInput::EntityActs {
                entity,
                incarnation,
                act,
            } => self.in_region(now, out, true, |r, o| match act {
                EntityAct::Passivate { ignores_stop } => {
                    r.entity_passivates(entity, incarnation, ignores_stop, o)
                }
                EntityAct::StopSelf => {
                    r.entity_stops_itself(entity, incarnation, StopReason::SelfStop, o)
                }
                EntityAct::Crash => {
                    r.entity_stops_itself(entity, incarnation, StopReason::Crashed, o)
                }
                EntityAct::FailShard => r.shard_of_entity_fails(entity, o),
            }),
            NodeInput::StoreReply(reply) => {
                self.in_region(now, out, true, |r, o| r.store_reply(now, *reply, o))
            }
            NodeInput::DdataStore(req) => self.store_input(now, StoreInput::Request(*req), out),
            NodeInput::Repl { from, msg } => self.store_input(
                now,
                StoreInput::Replicator(ReplInput::Msg { from, msg: *msg }),
                out,
            ),
            NodeInput::Stop { reason } => self.shutdown(reason, out),
            NodeInput::LeaveMember(target) => {
                self.membership_input(now, MInput::LeaveCommand(target), out)
            }
        }
    }

    /// [`NodeInput::Request`] as a direct call (the host's hot path).
    #[inline(always)]
    pub fn request(&mut self, now: Instant, env: Envelope, out: &mut impl NodeHost) {
        self.in_region(now, out, false, |r, o| r.request(env, o));
    }

    /// [`NodeInput::Deliver`] to the region as a direct call (the host's hot path).
    #[inline(always)]
    pub fn deliver(&mut self, now: Instant, from: Addr, msg: Msg, out: &mut impl NodeHost) {
        let protocol = !matches!(msg, Msg::User(_));
        self.in_region(now, out, protocol, |r, o| r.deliver(now, from, msg, o));
    }

    fn region_input(&mut self, now: Instant, input: Input, out: &mut impl NodeHost) {
        self.in_region(now, out, true, |r, o| r.handle(now, input, o));
    }

    /// Run `f` on the region (if it runs), then report what changed and apply its outputs.
    /// `may_reregister`: a protocol input, which can change the region's coordinator. A user
    /// message cannot (it is buffered, forwarded or delivered, §5.2 `deliverMessage`), so the
    /// hot path skips the comparison.
    #[inline(always)]
    fn in_region(
        &mut self,
        now: Instant,
        out: &mut impl NodeHost,
        may_reregister: bool,
        f: impl FnOnce(&mut Region, &mut Outbox),
    ) {
        let mut o = std::mem::take(&mut self.out);
        o.1 = *out.incarnations();
        if let Some(r) = self.region.as_mut() {
            let before = if may_reregister {
                r.coordinator()
            } else {
                None
            };
            f(r, &mut o);
            *out.incarnations() = o.1;
            if may_reregister {
                let after = r.coordinator();
                if after != before {
                    out.output(NodeOutput::Fact(Fact::RegionCoordinator(
                        after.map(|c| c.region_ref()),
                    )));
                }
            }
            // Every rule after a protocol input (the rules that walk the region's maps only
            // with debug assertions, as under `cargo test`); after a user message (to the
            // region, a Shard or an entity), the constant-time rules (a user message buffers,
            // forwards or delivers, and starts at most one entity or Shard).
            let check = if may_reregister {
                r.constant_time_rule_broken() || cfg!(debug_assertions)
            } else {
                r.constant_time_rule_broken()
            };
            if check {
                if let Some(b) = r.check_invariants() {
                    out.output(NodeOutput::Fact(Fact::RoleBreach(b)));
                }
            }
        }
        self.apply(now, Role::Region, &mut o, out);
        self.restore_outbox(o);
    }

    fn coordinator_input(&mut self, now: Instant, input: Input, out: &mut impl NodeHost) {
        let busy = std::mem::replace(&mut self.coord_busy, true);
        let mut o = std::mem::take(&mut self.out);
        if let Some(c) = self.coordinator.as_mut() {
            c.handle(now, input, &mut o);
            if let Some(b) = c.check_invariants() {
                out.output(NodeOutput::Fact(Fact::RoleBreach(b)));
            }
        }
        self.apply(now, Role::Coordinator, &mut o, out);
        self.restore_outbox(o);
        self.coord_busy = busy;
        self.drain_coord_inbox(now, out);
    }

    /// Hand the replicator's answers to the coordinator, unless it is handling an input now
    /// (then it gets them right after).
    fn drain_coord_inbox(&mut self, now: Instant, out: &mut impl NodeHost) {
        if self.coord_busy || self.coord_inbox.is_empty() {
            return;
        }
        let inbox = std::mem::take(&mut self.coord_inbox);
        for input in inbox {
            self.coordinator_input(now, input, out);
        }
    }

    fn set_timer(&mut self, timer: NodeTimer, after: Duration, out: &mut impl NodeHost) {
        self.timer_gen += 1;
        let gen = self.timer_gen;
        if !matches!(timer, NodeTimer::SingletonCheck | NodeTimer::JoinCheck) {
            self.timers.insert(timer, gen);
        }
        out.output(NodeOutput::Effect(Effect::SetTimer { timer, after, gen }));
    }

    fn on_timer(&mut self, now: Instant, timer: NodeTimer, gen: u64, out: &mut impl NodeHost) {
        match timer {
            NodeTimer::SingletonCheck => return self.singleton_check(now, out),
            // Answered by the host with NodeInput::JoinCheck.
            NodeTimer::JoinCheck => return,
            NodeTimer::Role(_)
            | NodeTimer::Membership(_)
            | NodeTimer::Repl(_)
            | NodeTimer::HandOverRetry
            | NodeTimer::ExitingTimeout => {}
        }
        if self.timers.get(&timer) != Some(&gen) {
            return; // cancelled or replaced
        }
        self.timers.remove(&timer);
        match timer {
            NodeTimer::Role(t) => {
                out.output(NodeOutput::Fact(Fact::TimerFired(t)));
                match t.role() {
                    Role::Region | Role::SingletonManager => {
                        self.region_input(now, Input::Timeout(t), out)
                    }
                    Role::Coordinator => self.coordinator_input(now, Input::Timeout(t), out),
                }
            }
            NodeTimer::Membership(t) => self.membership_input(now, MInput::Timeout(t), out),
            NodeTimer::Repl(t) => {
                self.store_input(now, StoreInput::Replicator(ReplInput::Timeout(t)), out)
            }
            NodeTimer::HandOverRetry => self.ask_hand_over(now, out),
            NodeTimer::ExitingTimeout => {
                // `cluster-exiting` timed out: stop the singleton here and go on.
                if self.exiting {
                    self.stop_coordinator(now, "exiting: hand-over timed out", out);
                    self.exiting_completed(now, out);
                }
            }
            NodeTimer::SingletonCheck | NodeTimer::JoinCheck => {}
        }
    }

    /// Put the (drained) outbox back, keeping its allocation. The placeholder `mem::take` left
    /// has no allocation then: forgetting it frees nothing and saves its drop glue on the hot
    /// path.
    #[inline]
    fn restore_outbox(&mut self, o: Outbox) {
        let placeholder = std::mem::replace(&mut self.out, o);
        // Usually the placeholder never grew. A node-local output can nest another role's
        // handler inside `apply` (the local region stopping tells the coordinator here at once,
        // its local death watch), which took, grew and put back the placeholder: drop that one.
        if placeholder.0.capacity() == 0 {
            std::mem::forget(placeholder);
        }
    }
    /// Apply one role's outputs: the node-local ones here, the rest to the host.
    fn apply(&mut self, now: Instant, role: Role, o: &mut Outbox, out: &mut impl NodeHost) {
        for x in o.drain() {
            match x {
                Output::Send { to, msg } => out.send(role, to, msg),
                Output::SetTimer { timer, after } => {
                    self.set_timer(NodeTimer::Role(timer), after, out)
                }
                Output::CancelTimer(timer) => {
                    self.timers.remove(&NodeTimer::Role(timer));
                }
                Output::Persist(event) => out.output(NodeOutput::Effect(Effect::Persist {
                    gen: self.coord_gen,
                    event,
                })),
                o @ (Output::StateRead { .. }
                | Output::StateWrite { .. }
                | Output::RememberedShardsRead { .. }
                | Output::RememberShardAdd { .. }) => self.coordinator_state_request(now, o, out),
                Output::Observe(Observation::Delivered { env, incarnation }) => {
                    out.delivered(env, incarnation)
                }
                Output::Local { msg, delay } => {
                    out.output(NodeOutput::Effect(Effect::Local { msg, delay }))
                }
                Output::Store(req) => out.output(NodeOutput::Effect(Effect::Store(req))),
                Output::Observe(obs) => self.observe(obs, out),
                Output::Stop { reason } => match role {
                    Role::Coordinator | Role::SingletonManager => {
                        self.stop_coordinator(now, reason, out);
                        if self.handing_over_to.is_some() {
                            self.finish_hand_over(now, out);
                        }
                    }
                    Role::Region => {
                        self.stopped_region_high_water = self.buffer_high_water();
                        let region = self.region.take();
                        out.output(NodeOutput::Fact(Fact::RegionStopped { reason }));
                        self.local_region_terminated(now, region, out);
                        if self.leaving {
                            self.region_phase_done(now, out);
                        }
                    }
                },
            }
        }
    }

    /// Entity incarnation numbering, then the fact to the host.
    fn observe(&mut self, obs: Observation, out: &mut impl NodeHost) {
        let incarnation = match &obs {
            Observation::EntityStarted { incarnation, .. }
            | Observation::EntityStopped { incarnation, .. }
            | Observation::Delivered { incarnation, .. } => *incarnation,
            _ => 0,
        };
        out.observe(obs, incarnation);
    }

    fn membership_input(&mut self, now: Instant, input: MInput, out: &mut impl NodeHost) {
        let mut mout = std::mem::take(&mut self.mout);
        self.membership.handle(now, input, &mut mout);
        for o in mout.drain(..) {
            if self.stopped {
                break; // the node shut down while applying its outputs
            }
            match o {
                MOutput::Send { to, msg } => {
                    out.output(NodeOutput::Effect(Effect::SendCluster { to, msg }))
                }
                MOutput::SetTimer { timer, after } => {
                    self.set_timer(NodeTimer::Membership(timer), after, out)
                }
                MOutput::CancelTimer(timer) => {
                    self.timers.remove(&NodeTimer::Membership(timer));
                }
                MOutput::MembersChanged(members) => self.on_view(now, members, out),
                MOutput::Shutdown { reason } => {
                    self.final_member_removals(now, out);
                    self.shutdown(reason, out)
                }
                MOutput::SelfExiting => {
                    if self.leaving {
                        self.self_exiting(now, out)
                    } else {
                        // ClusterDaemon: "Exiting, starting coordinated shutdown" (its leave
                        // came from `Cluster.leave`): the region's phase first.
                        self.exiting_first = true;
                        self.coordinated_shutdown(now, out);
                    }
                }
                MOutput::Observe(ev) => out.output(NodeOutput::Fact(Fact::Cluster(ev))),
            }
        }
        self.mout = mout;
        if self.membership.content_rev() != self.unreachable.0 && !self.stopped {
            self.unreachable.0 = self.membership.content_rev();
            self.tell_unreachable(now, false, out);
        }
    }

    /// The coordinator's rebalance gate reads the members this node's view shows as
    /// unreachable (`clusterState.unreachable`, §12 B38): tell it when they change, and
    /// (`always`) when it starts.
    fn tell_unreachable(&mut self, now: Instant, always: bool, out: &mut impl NodeHost) {
        let me = self.me;
        let now_unreachable: Vec<RegionRef> = self
            .membership
            .unreachable()
            .into_iter()
            .filter(|a| *a != me)
            .map(|a| RegionRef {
                node: a.node,
                inc: a.inc,
            })
            .collect();
        if now_unreachable != self.unreachable.1 || always {
            self.unreachable.1 = now_unreachable;
            if self.coordinator.is_some() {
                let u = self.unreachable.1.clone();
                self.coordinator_input(now, Input::Unreachable(u), out);
            }
        }
    }

    /// This node's member view changed: tell its coordinator and region, then re-decide where
    /// the singleton runs.
    fn on_view(&mut self, now: Instant, members: Vec<Member>, out: &mut impl NodeHost) {
        self.view = members.clone();
        out.output(NodeOutput::Fact(Fact::View(members.clone())));
        if self.stores.is_some() {
            // The replicator's nodes: Up/Leaving/Exiting members with the sharding role,
            // oldest first (prefer-oldest); Exiting ones are not asked (§3.3).
            let mut replicas: Vec<&Member> = members
                .iter()
                .filter(|m| {
                    m.hosting
                        && matches!(
                            m.status,
                            MemberStatus::Up | MemberStatus::Leaving | MemberStatus::Exiting
                        )
                        && (m.node, m.inc) != (self.me.node, self.me.inc)
                })
                .collect();
            replicas.sort_by_key(|m| (m.up_number, m.node));
            let exiting: Vec<NodeAddr> = replicas
                .iter()
                .filter(|m| m.status == MemberStatus::Exiting)
                .map(|m| NodeAddr {
                    node: m.node,
                    inc: m.inc,
                })
                .collect();
            let nodes: Vec<NodeAddr> = replicas
                .iter()
                .map(|m| NodeAddr {
                    node: m.node,
                    inc: m.inc,
                })
                .collect();
            self.store_input(now, StoreInput::Replicator(ReplInput::Members(nodes)), out);
            self.store_input(
                now,
                StoreInput::Replicator(ReplInput::Exiting(exiting)),
                out,
            );
        }
        if self.coordinator.is_some() {
            self.coordinator_input(now, Input::MembersChanged(members.clone()), out);
        }
        self.region_input(now, Input::MembersChanged(members), out);
        self.singleton_check(now, out);
    }

    /// ClusterSingletonManager, from this node's own view. The oldest is the oldest hosting
    /// User messages buffered in this node's region and its Shards.
    pub fn buffered_user_messages(&self) -> u64 {
        self.region
            .as_ref()
            .map_or(0, |r| r.all_buffered_messages().count() as u64)
    }

    /// Whether this incarnation has stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The node id.
    pub fn id(&self) -> NodeId {
        self.me.node
    }

    /// The incarnation.
    pub fn inc(&self) -> NodeInc {
        self.me.inc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::entity::{Extractors, HashExtractor, RecordingFactory, TabledExtractor};
    use crate::protocol::settings::{ProtocolOptions, Settings};
    use std::collections::BTreeMap;

    /// Akka's default settings, 10 shards of 100 entities.
    fn config() -> Arc<NodeConfig> {
        Arc::new(NodeConfig {
            region: Arc::new(RegionConfig {
                settings: Settings::default(),
                options: ProtocolOptions::default(),
                extractors: Extractors::Shared(Arc::new(TabledExtractor::new(
                    HashExtractor { shards: 10 },
                    100,
                ))),
                factory: Arc::new(RecordingFactory),
            }),
            membership: MembershipConfig::default(),
            entities: 100,
        })
    }

    /// One node alone, driven by a host of twenty lines: timers fire in time order, messages to
    /// itself and its local messages arrive at once, journal writes are acknowledged after
    /// 1 ms.
    fn run_alone(sends: &[Envelope], until_ms: u64) -> Vec<(Instant, NodeOutput)> {
        run_alone_node(sends, until_ms).2
    }

    /// [`run_alone`], also returning the node and its journal.
    #[allow(clippy::type_complexity)]
    fn run_alone_node(
        sends: &[Envelope],
        until_ms: u64,
    ) -> (Node, Vec<CoordinatorEvent>, Vec<(Instant, NodeOutput)>) {
        let me = NodeAddr {
            node: NodeId(0),
            inc: NodeInc(1),
        };
        let mut node = Node::new(me, true, config());
        let (mut journal, mut next_inc, mut seen) =
            (Vec::new(), Incarnations { next: 1 }, Vec::new());
        let mut queue: BTreeMap<(u64, usize), NodeInput> = BTreeMap::new();
        queue.insert((0, 0), NodeInput::Start { seeds: vec![] });
        for (i, env) in sends.iter().enumerate() {
            queue.insert(
                (5_000_000 + i as u64 * 1000, 1 + i),
                NodeInput::Request(*env),
            );
        }
        let mut seq = queue.len();
        while let Some(((t, _), input)) = queue.pop_first() {
            if t > until_ms * 1000 {
                break;
            }
            let now = Instant(t);
            let mut host = Collect {
                out: Vec::new(),
                journal: Some(&journal),
                incarnations: &mut next_inc,
            };
            node.handle(now, input, &mut host);
            for o in host.out {
                seq += 1;
                let next = match &o {
                    NodeOutput::Effect(Effect::SetTimer { timer, after, gen }) => Some((
                        t + after.0,
                        match timer {
                            NodeTimer::JoinCheck => NodeInput::JoinCheck {
                                members: vec![],
                                first_live: Some(me),
                            },
                            _ => NodeInput::Timer {
                                timer: *timer,
                                gen: *gen,
                            },
                        },
                    )),
                    NodeOutput::Effect(Effect::Send { from, to, msg }) if to.node == me.node => {
                        Some((
                            t,
                            NodeInput::Deliver {
                                from: Addr {
                                    node: me.node,
                                    inc: me.inc,
                                    role: *from,
                                },
                                role: to.role,
                                msg: *msg,
                            },
                        ))
                    }
                    NodeOutput::Effect(Effect::Persist { gen, event }) => {
                        journal.push(*event);
                        Some((t + 1000, NodeInput::Persisted { gen: *gen }))
                    }
                    // Local messages at once, entity stops instantly.
                    NodeOutput::Effect(Effect::Local { msg, .. }) => {
                        Some((t, NodeInput::Local(*msg)))
                    }
                    _ => None,
                };
                if let Some((at, input)) = next {
                    queue.insert((at, seq), input);
                }
                seen.push((now, o));
            }
        }
        (node, journal, seen)
    }

    #[test]
    fn a_lone_node_runs_the_coordinator_and_delivers_in_order() {
        let sends: Vec<Envelope> = (1..=3)
            .map(|seq| Envelope {
                sender: crate::ids::SenderId(0),
                entity: EntityId(7),
                seq,
            })
            .collect();
        let seen = run_alone(&sends, 10_000);
        assert!(
            seen.iter().any(|(_, o)| matches!(
                o,
                NodeOutput::Fact(Fact::CoordinatorStarted {
                    generation: 1,
                    replayed: 0
                })
            )),
            "the oldest (only) member runs the coordinator"
        );
        let delivered: Vec<(u64, u64)> = seen
            .iter()
            .filter_map(|(_, o)| match o {
                NodeOutput::Fact(Fact::Observe {
                    obs: Observation::Delivered { env, .. },
                    incarnation,
                }) => Some((env.seq, *incarnation)),
                _ => None,
            })
            .collect();
        assert_eq!(delivered, vec![(1, 1), (2, 1), (3, 1)]);
    }

    /// The coordinator learns of the stop of the region on its own node by death watch
    /// (SC:1316-1327) when that region was not registered with it (so no `RegionStopped` of its
    /// postStop reaches it): the region's termination is persisted at once. A region registered
    /// with it tells it itself, and the node adds nothing.
    #[test]
    fn a_local_region_not_registered_here_is_watched_to_its_stop() {
        let sends = [Envelope {
            sender: crate::ids::SenderId(0),
            entity: EntityId(7),
            seq: 1,
        }];
        let (mut node, journal, _) = run_alone_node(&sends, 10_000);
        let region = node.region.take().expect("the region runs");
        let me = RegionRef {
            node: node.me.node,
            inc: node.me.inc,
        };
        let c = node.coordinator().expect("the coordinator runs");
        assert_eq!(region.coordinator(), Some(c.addr()));
        assert!(c.state().regions.contains_key(&me));
        let terminated = |out: &[NodeOutput]| {
            out.iter().any(|o| {
                matches!(o, NodeOutput::Effect(Effect::Persist { event: CoordinatorEvent::ShardRegionTerminated { region }, .. }) if *region == me)
            })
        };
        let mut next = Incarnations { next: 100 };
        let mut host = Collect {
            out: Vec::new(),
            journal: Some(&journal),
            incarnations: &mut next,
        };
        // Registered here: its own RegionStopped is on its way; the node sends nothing.
        node.local_region_terminated(Instant(10_000_000), Some(region), &mut host);
        assert!(host.out.is_empty());
        // The same region, not registered (a fresh instance, as after a hand-over of the
        // coordinator to this node): death watch tells the coordinator.
        let fresh = Region::new(me, true, config().region.clone());
        assert_eq!(fresh.coordinator(), None);
        node.local_region_terminated(Instant(10_000_000), Some(fresh), &mut host);
        assert!(terminated(&host.out), "{:?}", host.out);
    }

    #[test]
    fn a_stopped_node_drops_its_buffer_and_ignores_everything_after() {
        let cfg_sends = [Envelope {
            sender: crate::ids::SenderId(0),
            entity: EntityId(1),
            seq: 1,
        }];
        // Before the node is a member, a request buffers (no coordinator yet).
        let seen = run_alone(&cfg_sends, 1);
        assert!(!seen
            .iter()
            .any(|(_, o)| matches!(o, NodeOutput::Fact(Fact::Observe { .. }))));
        let me = NodeAddr {
            node: NodeId(0),
            inc: NodeInc(1),
        };
        let mut node = Node::new(me, true, config());
        let mut next = Incarnations { next: 1 };
        let mut host = Collect {
            out: Vec::new(),
            journal: None,
            incarnations: &mut next,
        };
        node.handle(Instant(0), NodeInput::Request(cfg_sends[0]), &mut host);
        node.handle(
            Instant(1),
            NodeInput::Stop {
                reason: "crash".into(),
            },
            &mut host,
        );
        let n = host.out.len();
        assert!(matches!(
            &host.out[n - 2..],
            [
                NodeOutput::Fact(Fact::Observe {
                    obs: Observation::Dropped {
                        reason: DropReason::NodeDown,
                        ..
                    },
                    ..
                }),
                NodeOutput::Effect(Effect::Shutdown { .. })
            ]
        ));
        node.handle(Instant(2), NodeInput::Request(cfg_sends[0]), &mut host);
        assert_eq!(host.out.len(), n, "a stopped node emits nothing");
        assert!(node.is_stopped() && !node.has_role(Role::Region));
    }
}
