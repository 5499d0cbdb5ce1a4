//! What every host of [`Node`] shares, written once: the run's cluster state ([`Cluster`]: the
//! node slots, incarnations, journal, workload, checker and tracer) and the node's host
//! ([`Ctx`]: what a node's outputs do), generic over how a host moves things ([`Transport`]).
//!
//! The own world ([`crate::sim::World`]) implements [`Transport`] with its event queue and
//! simulated network; the madsim host ([`crate::host::madsim`]) with madsim's channels, tasks
//! and clock. Everything else a node's output asks of its host (a timer, a local message, a
//! sharding message to every region, a node's shutdown, the disk, the journal it reads, the
//! trace events of its observations) is decided here, so the two hosts cannot drift apart.
//!
//! [`Node`]: shardsim_core::node::Node

use crate::check::{Checker, Violation};
use crate::scenario::Scenario;
use crate::sim::journal::Journal;
use crate::sim::workload::Workload;
use crate::sim::{node_config, observation_event, outputs, swarm, RunResult, Stats};
use crate::trace::{TraceEvent, TraceMode, Tracer};
use shardsim_core::ddata::{Data, Key, ReplMsg};
use shardsim_core::ids::{EntityId, NodeId, NodeInc, ShardId};
use shardsim_core::membership::{MMsg, NodeAddr};
use shardsim_core::node::{
    Effect, Fact, Node, NodeConfig, NodeHost, NodeInput, NodeOutput, NodeTimer,
};
use shardsim_core::protocol::entity::SharedShards;
use shardsim_core::protocol::settings::RememberStore;
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, DropReason, EntityAct, Envelope, Incarnations, Local, MemberStatus,
    Msg, Observation, Role, StoreReply, StoreRequest,
};
use shardsim_core::rng::{Rng, Stream};
use shardsim_core::time::{Duration, Instant};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One node id's place in a run, in every host: the running incarnation, if any, and the
/// process state the fault injector controls.
pub(crate) struct NodeSlot {
    /// Whether an incarnation is running.
    pub(crate) up: bool,
    /// The running incarnation; taken out while it handles an input.
    pub(crate) node: Option<Box<Node>>,
    /// The current (or last) incarnation.
    pub(crate) inc: NodeInc,
    pub(crate) hosting: bool,
    /// The app version of the current (or last) incarnation (`[cluster] app-version`, one
    /// more per new incarnation with `upgrade-on-restart`).
    pub(crate) app_version: u32,
    /// Paused until this time (µs); 0: running.
    pub(crate) paused_until: u64,
    /// The node's disk: durable Distributed Data entries, kept across its incarnations.
    pub(crate) disk: BTreeMap<Key, Data>,
}

/// The state of one run that every host keeps.
pub(crate) struct Cluster {
    pub(crate) sc: Arc<Scenario>,
    pub(crate) seed: u64,
    pub(crate) end: Instant,
    pub(crate) slots: Vec<NodeSlot>,
    pub(crate) next_inc: u32,
    pub(crate) incarnations: Incarnations,
    /// Entity behaviour: stop durations, entity-initiated passivation.
    pub(crate) entity_rng: Rng,
    pub(crate) journal: Journal,
    pub(crate) workload: Workload,
    pub(crate) node_cfg: Arc<NodeConfig>,
    /// The shard of each entity id the workload sends to, when every region shares one
    /// extractor (the same answers as the regions' table): the send path's shard without a
    /// dynamic call. Empty for a per-incarnation extractor.
    pub(crate) shared_shards: SharedShards,
    pub(crate) checker: Checker,
    pub(crate) tracer: Tracer,
    pub(crate) stats: Stats,
    pub(crate) violation: Option<Violation>,
    /// The node whose outputs are being applied.
    pub(crate) cur: NodeAddr,
}

impl Cluster {
    /// The cluster of `sc` for `seed`, every node down, and the description of the entity
    /// knobs this seed draws (`swarm.entity-knobs`), which the run's scenario then has.
    pub(crate) fn new(sc: Arc<Scenario>, seed: u64, trace: TraceMode) -> (Self, Option<String>) {
        let (sc, knobs) = match swarm::with_entity_knobs(&sc, seed) {
            Some((drawn, desc)) => (Arc::new(drawn), Some(desc)),
            None => (sc, None),
        };
        let n = sc.cluster.nodes;
        let (node_cfg, shared_shards) = node_config(&sc, seed);
        let slots = (0..n)
            .map(|i| NodeSlot {
                up: false,
                node: None,
                inc: NodeInc(0),
                hosting: sc.hosting(i),
                app_version: sc.app_version(i),
                paused_until: 0,
                disk: BTreeMap::new(),
            })
            .collect();
        let c = Cluster {
            seed,
            end: Instant(0) + Duration::from_millis(sc.run.duration_ms),
            slots,
            next_inc: 1,
            incarnations: Incarnations { next: 1 },
            entity_rng: Rng::fork(seed, Stream::Entities),
            journal: Journal::new(sc.journal.clone(), seed),
            workload: Workload::new(&sc, seed),
            node_cfg,
            shared_shards,
            checker: Checker::new(),
            tracer: Tracer::new(trace),
            stats: Stats::default(),
            violation: None,
            cur: NodeAddr {
                node: NodeId(0),
                inc: NodeInc(0),
            },
            sc,
        };
        (c, knobs)
    }

    /// The number of nodes.
    #[inline]
    pub(crate) fn n(&self) -> usize {
        self.slots.len()
    }

    /// The running incarnation of `node` (not while it handles an input).
    #[inline]
    pub(crate) fn node(&self, node: NodeId) -> Option<&Node> {
        self.slots[node.0 as usize].node.as_deref()
    }

    #[inline]
    pub(crate) fn is_up(&self, node: NodeId) -> bool {
        self.slots[node.0 as usize].up
    }

    /// Whether `inc` is the running incarnation of `node`.
    #[inline]
    pub(crate) fn running(&self, node: NodeId, inc: NodeInc) -> bool {
        let s = &self.slots[node.0 as usize];
        s.up && s.inc == inc
    }

    /// The current (or last) incarnation's address of `node`.
    pub(crate) fn addr_of(&self, node: NodeId) -> NodeAddr {
        NodeAddr {
            node,
            inc: self.slots[node.0 as usize].inc,
        }
    }

    /// Feed an event at `now` to the checker (until the first violation) and the tracer.
    #[inline]
    pub(crate) fn record(&mut self, now: Instant, ev: TraceEvent) {
        if self.violation.is_none() {
            if let Some(v) = self.checker.on_event(now, &ev) {
                self.violation = Some(v);
            }
        }
        self.tracer.record(now, ev);
    }

    /// `node` (re)starts as a new incarnation, running the next app version after a restart
    /// with `upgrade-on-restart` (a rolling update): its address, and the live nodes it joins
    /// through. The host then traces `NodeUp`, hands it `NodeInput::Start` with these seeds
    /// and starts the workload's senders on it.
    pub(crate) fn new_incarnation(&mut self, node: NodeId) -> (NodeAddr, Vec<NodeAddr>) {
        let inc = NodeInc(self.next_inc);
        self.next_inc += 1;
        let seeds: Vec<NodeAddr> = (0..self.n() as u32)
            .map(NodeId)
            .filter(|i| *i != node && self.is_up(*i))
            .map(|i| self.addr_of(i))
            .collect();
        let me = NodeAddr { node, inc };
        let upgrade = self.sc.cluster.upgrade_on_restart;
        let s = &mut self.slots[node.0 as usize];
        if s.inc != NodeInc(0) && upgrade {
            s.app_version = s.app_version.saturating_add(1);
        }
        s.inc = inc;
        s.up = true;
        s.paused_until = 0;
        s.node = Some(Box::new(
            Node::new(me, s.hosting, self.node_cfg.clone()).with_app_version(s.app_version),
        ));
        (me, seeds)
    }

    /// The seed-node timeout of `node`: the answer to the `InitJoin` it would send, the live
    /// nodes that are Up members and the first live node (see [`NodeInput::JoinCheck`]).
    pub(crate) fn join_check(&self, node: NodeId) -> NodeInput {
        let members: Vec<NodeAddr> = (0..self.n() as u32)
            .map(NodeId)
            .filter(|i| *i != node)
            .filter(|i| {
                self.node(*i)
                    .is_some_and(|n| n.status_of_self() == Some(MemberStatus::Up))
            })
            .map(|i| self.addr_of(i))
            .collect();
        let first_live = (0..self.n() as u32)
            .map(NodeId)
            .find(|i| self.is_up(*i))
            .map(|i| self.addr_of(i));
        NodeInput::JoinCheck {
            members,
            first_live,
        }
    }

    /// A workload sender's next message at `now`: the node it is sent on, the message, and
    /// the shard the node's region routes it to. `None` while that node has no region.
    #[inline]
    pub(crate) fn workload_message(
        &mut self,
        sender: u32,
        now: Instant,
    ) -> Option<(NodeId, Envelope, ShardId)> {
        let node = self.workload.node_of(sender);
        if !self.node(node).is_some_and(|n| n.has_role(Role::Region)) {
            return None;
        }
        let env = self.workload.message(sender, now);
        self.stats.sends += 1;
        // The shard the sender's region routes the message to: its node incarnation's
        // extractor decides (with a per-incarnation extractor, another node may route the
        // same entity elsewhere, §12 B8). The checker's liveness rule expects this shard to
        // get a home; the at-most-one rule is keyed by entity and needs no shard.
        let shard = match self.shared_shards.get(env.entity.0 as usize) {
            Some(s) => s,
            None => self
                .node(node)
                .and_then(|n| n.region().map(|r| r.shard_of(env.entity)))
                .unwrap_or_default(),
        };
        Some((node, env, shard))
    }

    /// The run's end, the same on every host: every user message still on its way (`pending`:
    /// those the host's transport carries, then those buffered in the running nodes' regions
    /// and Shards), sorted so the trace does not depend on the host's containers, one `pending`
    /// event each, then `RunEnd` with their count; each through the checker and the tracer at
    /// `end`, and shown to `seen` first (the own world's coverage).
    pub(crate) fn end_of_run(
        &mut self,
        end: Instant,
        mut pending: Vec<(Envelope, NodeId, crate::trace::Place)>,
        mut seen: impl FnMut(&TraceEvent),
    ) {
        self.buffered_user_messages(&mut pending);
        pending.sort_unstable_by_key(|(env, node, place)| (*env, *node, *place));
        let in_flight = pending.len() as u64;
        for (env, node, place) in pending {
            let ev = TraceEvent::Pending {
                sender: env.sender,
                entity: env.entity,
                seq: env.seq,
                node,
                place,
            };
            seen(&ev);
            self.record(end, ev);
        }
        let ev = TraceEvent::RunEnd { in_flight };
        seen(&ev);
        self.record(end, ev);
    }

    /// The user messages buffered in the running nodes' regions and Shards, for the
    /// end-of-run conservation balance.
    fn buffered_user_messages(&self, out: &mut Vec<(Envelope, NodeId, crate::trace::Place)>) {
        for (i, s) in self.slots.iter().enumerate() {
            if !s.up {
                continue;
            }
            if let Some(n) = s.node.as_ref() {
                outputs::buffered_user_messages(NodeId(i as u32), n, out);
            }
        }
    }

    /// The run's result, ending at `end`: the violation, if any, is traced last (at its
    /// time) and taken into the result.
    pub(crate) fn result(
        &mut self,
        end: Instant,
        coverage: Option<Box<crate::sim::coverage::Bitmap>>,
    ) -> RunResult {
        if let Some(v) = &self.violation {
            let t = v.t;
            self.tracer.record(
                t,
                TraceEvent::Violation {
                    invariant: v.invariant.name().to_string(),
                    detail: v.detail.clone(),
                    about: v.about.clone(),
                },
            );
        }
        RunResult {
            seed: self.seed,
            violation: self.violation.take(),
            stats: self.stats.clone(),
            end,
            trace_hash: self.tracer.hash(),
            coverage,
        }
    }
}

/// How a host moves what a node emits: its own clock, queue and network. Everything else a
/// node's outputs ask is [`Ctx`]'s, the same for every host. A message between nodes is lost,
/// held or delivered by the transport's own rules, FIFO per ordered pair of nodes.
pub(crate) trait Transport {
    fn cluster(&self) -> &Cluster;
    fn cluster_mut(&mut self) -> &mut Cluster;
    /// The simulated time.
    fn now(&self) -> Instant;
    /// Feed an event to the checker and the tracer (and whatever else the host records).
    fn emit(&mut self, ev: TraceEvent);
    /// `env` delivered to its entity's incarnation `incarnation` on `node`: a
    /// `TraceEvent::Deliver` for the checker and the trace (a host may take a faster path than
    /// building the event).
    fn emit_deliver(&mut self, env: Envelope, node: NodeId, incarnation: u64);
    /// The current node incarnation's timer `timer` of generation `gen` fires at `at`
    /// (`NodeInput::Timer`).
    fn timer(&mut self, at: Instant, timer: NodeTimer, gen: u64);
    /// A message between the current node incarnation's own actors, arriving at `at`
    /// (`NodeInput::Local`).
    fn local_msg(&mut self, at: Instant, msg: Local);
    /// An entity's own decision after a message, an input of the current node incarnation at
    /// `at` (`NodeInput::EntityActs`).
    fn entity_acts(&mut self, at: Instant, entity: EntityId, incarnation: u64, act: EntityAct);
    /// A request to the node's own `ddata` remember-entities store at `at`
    /// (`NodeInput::DdataStore`).
    fn ddata_store(&mut self, at: Instant, req: Box<StoreRequest>);
    /// The answer of the node's own `ddata` store at `at` (`NodeInput::StoreReply`).
    fn ddata_reply(&mut self, at: Instant, reply: Box<StoreReply>);
    /// A sharding message between actors.
    fn send_msg(&mut self, from: Addr, to: Addr, msg: Msg);
    /// A membership message between nodes.
    fn send_cluster(&mut self, from: NodeAddr, to: NodeAddr, msg: MMsg);
    /// A message between two nodes' Distributed Data replicators.
    fn send_repl(&mut self, from: NodeAddr, to: NodeAddr, msg: Box<ReplMsg>);
    /// A coordinator's write to the journal; the answer comes back as `NodeInput::Persisted`.
    fn persist(&mut self, from: NodeAddr, gen: u32, event: CoordinatorEvent);
    /// A request to the eventsourced remember-entities store (the journal); the answer comes
    /// back as `NodeInput::StoreReply`.
    fn store(&mut self, from: NodeAddr, req: Box<StoreRequest>);
    /// Whether node index `node` reaches the journal both ways.
    fn journal_reachable(&self, node: usize) -> bool;
    /// Node index `node` has shut down (its slot is marked down already).
    fn shut_down(&mut self, _node: usize) {}
}

/// A sharding message from `from` reached `to`'s node, on any host: when that incarnation is
/// not up or its `to.role` actor is not running there, it is a dead letter (a user message is
/// dropped as `DeadLetter`, and the trace shows it); otherwise it counts as a message, and the
/// trace (or, untraced, the hosting-ack rule, which reads `ShardStarted` and `HandOff`) sees
/// it. Returns whether the host hands it to the node.
#[inline]
pub(crate) fn arrive<T: Transport>(t: &mut T, from: Addr, to: Addr, msg: Msg) -> bool {
    let c = t.cluster();
    let s = &c.slots[to.node.0 as usize];
    let present = s.up && s.inc == to.inc && s.node.as_ref().is_some_and(|n| n.has_role(to.role));
    let traced = c.tracer.on();
    if !present {
        if let Msg::User(env) = msg {
            let ev = outputs::drop_event(
                to.node,
                env,
                DropReason::DeadLetter,
                &mut t.cluster_mut().stats,
            );
            t.emit(ev);
        }
        if traced {
            t.emit(TraceEvent::DeadLetter {
                from: from.node,
                to: to.node,
                msg,
            });
        }
        return false;
    }
    t.cluster_mut().stats.messages += 1;
    if traced || matches!(msg, Msg::ShardStarted { .. } | Msg::HandOff { .. }) {
        t.emit(TraceEvent::Msg {
            from: from.node,
            to: to.node,
            actor: to.role,
            msg,
        });
    }
    true
}

/// A node's host while it handles one input, for any [`Transport`].
pub(crate) struct Ctx<'a, T>(pub(crate) &'a mut T);

impl<T: Transport> Ctx<'_, T> {
    fn drop_msg(&mut self, node: NodeId, env: Envelope, reason: DropReason) {
        let ev = outputs::drop_event(node, env, reason, &mut self.0.cluster_mut().stats);
        self.0.emit(ev);
    }
}

impl<T: Transport> Ctx<'_, T> {
    /// Do the host's work an effect asks for.
    fn effect(&mut self, e: Effect) {
        let t = &mut *self.0;
        let me = t.cluster().cur;
        let NodeAddr { node, inc } = me;
        let now = t.now();
        match e {
            Effect::Local { msg, delay } => {
                let c = t.cluster_mut();
                let after = outputs::local_delay_us(&c.sc, delay, &mut c.entity_rng);
                t.local_msg(now + Duration::from_micros(after), msg);
            }
            Effect::Send { from, to, msg } => self.send(from, to, msg),
            Effect::SendCluster { to, msg } => t.send_cluster(me, to, msg),
            Effect::CoordinatorTerminated => {
                let from = Addr {
                    node,
                    inc,
                    role: Role::Coordinator,
                };
                for i in 0..t.cluster().n() {
                    let s = &t.cluster().slots[i];
                    if s.up {
                        let to = Addr {
                            node: NodeId(i as u32),
                            inc: s.inc,
                            role: Role::Region,
                        };
                        t.send_msg(from, to, Msg::CoordinatorTerminated);
                    }
                }
            }
            Effect::SetTimer { timer, after, gen } => t.timer(now + after, timer, gen),
            Effect::Persist { gen, event } => t.persist(me, gen, event),
            Effect::Store(req)
                if t.cluster().sc.settings.remember_entities_store == RememberStore::Ddata =>
            {
                let at = now + Duration::from_micros(t.cluster().sc.entities.local_delay_us);
                t.ddata_store(at, req);
            }
            Effect::Store(req) => t.store(me, req),
            Effect::StoreReplyLocal(reply) => {
                let at = now + Duration::from_micros(t.cluster().sc.entities.local_delay_us);
                t.ddata_reply(at, reply);
            }
            Effect::SendRepl { to, msg } => t.send_repl(me, to, msg),
            Effect::Durable { key, data } => {
                t.cluster_mut().slots[node.0 as usize]
                    .disk
                    .insert(key, data);
            }
            Effect::Shutdown { reason } => {
                let s = &mut t.cluster_mut().slots[node.0 as usize];
                s.up = false;
                s.paused_until = 0;
                t.shut_down(node.0 as usize);
                t.emit(TraceEvent::NodeDown {
                    node,
                    incarnation: inc.0,
                    reason,
                });
            }
        }
    }
}

impl<T: Transport> NodeHost for Ctx<'_, T> {
    fn output(&mut self, o: NodeOutput) {
        match o {
            NodeOutput::Effect(e) => self.effect(e),
            NodeOutput::Fact(Fact::Observe { obs, incarnation }) => self.observe(obs, incarnation),
            NodeOutput::Fact(f) => {
                let t = &mut *self.0;
                let NodeAddr { node, inc } = t.cluster().cur;
                let c = t.cluster_mut();
                let traced = c.tracer.on();
                if let Some(ev) = outputs::fact_event(node, inc, f, traced, &mut c.stats) {
                    t.emit(ev);
                }
            }
        }
    }

    #[inline]
    fn send(&mut self, from: Role, to: Addr, msg: Msg) {
        let NodeAddr { node, inc } = self.0.cluster().cur;
        let from = Addr {
            node,
            inc,
            role: from,
        };
        self.0.send_msg(from, to, msg);
    }

    #[inline]
    fn observe(&mut self, obs: Observation, incarnation: u64) {
        let node = self.0.cluster().cur.node;
        match obs {
            Observation::Delivered { env, .. } => self.delivered(env, incarnation),
            Observation::Dropped { env, reason } => self.drop_msg(node, env, reason),
            obs => {
                let c = self.0.cluster_mut();
                let traced = c.tracer.on();
                if let Some(ev) = observation_event(node, obs, incarnation, traced, &mut c.stats) {
                    self.0.emit(ev);
                }
            }
        }
    }

    #[inline]
    fn delivered(&mut self, env: Envelope, incarnation: u64) {
        let t = &mut *self.0;
        let node = t.cluster().cur.node;
        let c = t.cluster_mut();
        c.stats.deliveries += 1;
        // The entity's own decision after this message (an input to the node after this
        // one): passivate, or stop itself.
        let act = outputs::entity_act(&c.sc.workload, &mut c.entity_rng);
        if let Some(act) = act {
            let now = t.now();
            t.entity_acts(now, env.entity, incarnation, act);
        }
        t.emit_deliver(env, node, incarnation);
    }

    fn journal(&self) -> Option<&[CoordinatorEvent]> {
        let c = self.0.cluster();
        let reachable = c.journal.available && self.0.journal_reachable(c.cur.node.0 as usize);
        reachable.then_some(&c.journal.events[..])
    }

    fn disk(&self) -> BTreeMap<Key, Data> {
        let c = self.0.cluster();
        c.slots[c.cur.node.0 as usize].disk.clone()
    }

    fn incarnations(&mut self) -> &mut Incarnations {
        &mut self.0.cluster_mut().incarnations
    }
}
