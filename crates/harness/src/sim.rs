//! The deterministic discrete-event world that runs the protocol.
//!
//! One event queue ordered by (time, sequence); a simulated clock in microseconds; every random
//! draw from a ChaCha8 stream forked per subsystem from the schedule's seed. The world holds no
//! protocol rule: each node is a sans-IO [`Node`]; the world moves its messages over the
//! simulated network ([`net`]), fires its timers, serves its journal writes ([`journal`]),
//! drives the workload ([`workload`]), injects faults ([`faults`]), and feeds every fact to the
//! checker and the trace.

pub mod causal;
pub mod coverage;
pub mod delays;
pub mod faults;
pub mod journal;
pub(crate) mod kit;
pub mod net;
pub mod outputs;
pub mod queue;
pub mod swarm;
pub mod workload;

use crate::check::Violation;
use crate::fault::TimedFault;
use crate::scenario::Scenario;
use crate::trace::{Place, TraceEvent, TraceMode, Tracer};
use kit::{Cluster, Ctx, Transport};
use net::Net;
use queue::EventQueue;
use shardsim_core::ddata::ReplMsg;
use shardsim_core::ids::{EntityId, NodeId, NodeInc, ShardId};
use shardsim_core::membership::{MMsg, NodeAddr};
use shardsim_core::node::{Node, NodeConfig, NodeInput, NodeTimer};
use shardsim_core::protocol::entity::{Extractors, RecordingFactory, SharedShards};
use shardsim_core::protocol::region::RegionConfig;
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, DropReason, EntityAct, Envelope, Local, Msg, Observation, Role,
    ShardFailure, StoreOp, StoreReply, StoreRequest,
};
use shardsim_core::time::{Duration, Instant};
use std::collections::VecDeque;
use std::sync::Arc;

/// Counters of one schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Events applied.
    pub events: u64,
    /// Protocol messages delivered (including user messages forwarded between regions).
    pub messages: u64,
    /// User messages sent by the workload.
    pub sends: u64,
    /// User messages delivered to entities.
    pub deliveries: u64,
    /// User messages dropped.
    pub drops: u64,
    /// Hand-offs started.
    pub rebalances: u64,
    /// Hand-offs completed.
    pub rebalances_done: u64,
    /// Entity incarnations started.
    pub entity_starts: u64,
    /// Faults injected.
    #[serde(default)]
    pub faults: u64,
    /// Coordinators started (initial start, fail-overs and restarts).
    #[serde(default)]
    pub coordinator_starts: u64,
    /// The buffer high-water mark: the most messages any region buffered at once (the
    /// maximum over schedules in a campaign, not a sum).
    #[serde(default)]
    pub buffer_high_water: u64,
    /// The drops by reason (they sum to `drops`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub drops_by_reason: std::collections::BTreeMap<DropReason, u64>,
}

impl Stats {
    /// The drops by reason, as `buffer_full 2751, hand_off_buffer 3` (empty without drops).
    pub fn drops_by_reason_line(&self) -> String {
        let parts: Vec<String> = self
            .drops_by_reason
            .iter()
            .map(|(r, n)| {
                let name = serde_json::to_string(r).unwrap_or_default();
                format!("{} {n}", name.trim_matches('"'))
            })
            .collect();
        parts.join(", ")
    }
}

/// The result of one schedule.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The schedule's seed: every random draw of the run forks from it, so it replays the run.
    pub seed: u64,
    /// The first violation, if any.
    pub violation: Option<Violation>,
    /// Counters.
    pub stats: Stats,
    /// Simulated time at the end.
    pub end: Instant,
    /// Hash of the trace (0 when tracing was off).
    pub trace_hash: u64,
    /// The behaviour coverage reached, when [`World::with_coverage`] asked for it.
    pub coverage: Option<Box<coverage::Bitmap>>,
}

#[derive(Clone, Debug)]
pub(crate) enum Ev {
    Deliver {
        from: Addr,
        to: Addr,
        msg: Msg,
        epoch: u32,
    },
    Cluster {
        from: NodeAddr,
        to: NodeAddr,
        msg: Box<MMsg>,
        epoch: u32,
    },
    Timer {
        node: NodeId,
        inc: NodeInc,
        timer: NodeTimer,
        gen: u64,
    },
    JournalWrite {
        node: NodeId,
        inc: NodeInc,
        gen: u32,
        event: CoordinatorEvent,
        epoch: u32,
    },
    Persisted {
        node: NodeId,
        inc: NodeInc,
        gen: u32,
        epoch: u32,
    },
    Join {
        node: NodeId,
    },
    Send {
        sender: u32,
    },
    Fault {
        idx: u32,
    },
    LivenessPhase,
    /// An entity decided to passivate or stop itself (drawn when it processed a message).
    EntityActs {
        node: NodeId,
        inc: NodeInc,
        entity: EntityId,
        incarnation: u64,
        act: EntityAct,
    },
    /// A message between actors of one node incarnation (region, Shard, entity).
    Local {
        node: NodeId,
        inc: NodeInc,
        msg: Local,
    },
    /// A pause ends: flush what arrived meanwhile.
    Resume {
        node: NodeId,
    },
    /// A Shard's request reaches the eventsourced remember-entities store (the journal).
    StoreRequest {
        node: NodeId,
        inc: NodeInc,
        req: Box<StoreRequest>,
        epoch: u32,
    },
    /// A Shard's request reaches its node's `ddata` store (a local actor).
    DdataStore {
        node: NodeId,
        inc: NodeInc,
        req: Box<StoreRequest>,
    },
    /// The `ddata` store's answer reaches the Shard (local).
    DdataReply {
        node: NodeId,
        inc: NodeInc,
        reply: Box<StoreReply>,
    },
    /// A message between two nodes' Distributed Data replicators.
    Repl {
        from: NodeAddr,
        to: NodeAddr,
        msg: Box<ReplMsg>,
        epoch: u32,
    },
    /// The store's answer reaches the Shard's node.
    StoreReply {
        node: NodeId,
        inc: NodeInc,
        reply: Box<StoreReply>,
        epoch: u32,
    },
}

/// The world's own state of a node id, beside the shared [`NodeSlot`]: the events that
/// arrived while its process was paused, in arrival order, flushed before anything newer.
type Deferred = VecDeque<Ev>;

/// What every node of a run shares, built from the scenario (for every host), and the shard of
/// each entity id when every region shares one extractor (empty otherwise).
pub fn node_config(sc: &Scenario, seed: u64) -> (Arc<NodeConfig>, SharedShards) {
    // The schedule's seed salts the per-incarnation hash (§12 B8): each schedule has its
    // own disagreement between incarnations, the same on every replay.
    let extractors = Extractors::new(
        sc.entities.extractor,
        sc.entities.shards,
        sc.entities.count,
        seed,
    )
    .with_first_generation(sc.cluster.nodes);
    let shared_shards = SharedShards::new(&extractors, sc.entities.count);
    let node_cfg = Arc::new(NodeConfig {
        region: Arc::new(RegionConfig {
            settings: sc.settings.clone(),
            options: sc.options.clone(),
            extractors,
            factory: Arc::new(RecordingFactory),
        }),
        membership: shardsim_core::membership::MembershipConfig {
            // The leader's gate reads the one `min-nr-of-members` setting (§9.2).
            min_nr_of_members: shardsim_core::membership::MinMembers {
                count: sc.settings.min_nr_of_members,
                of_role: sc.settings.role.is_some(),
            },
            // Each node's gossip target choice draws from a stream of this seed.
            gossip_seed: seed,
            gossip_skips_unreachable: sc.options.gossip_skips_unreachable_members,
            down_self_gossip_excludes_downed_observers: sc
                .options
                .down_self_gossip_excludes_downed_observers,
            ..sc.membership.clone()
        },
        entities: sc.entities.count,
    });
    (node_cfg, shared_shards)
}

/// The events a run's trace starts with: what the checker checks (a trace file is re-checked
/// from itself), for every host.
pub fn preamble(sc: &Scenario) -> Vec<TraceEvent> {
    let mut out = vec![TraceEvent::CheckConfig {
        single_writer: sc.journal.check_single_writer,
        liveness: sc.liveness.enabled,
        handoff_timeout_ms: sc.settings.handoff_timeout_ms,
    }];
    if sc.liveness.check_graceful_shutdown {
        out.push(TraceEvent::GracefulShutdownCheck);
    }
    if sc.settings.remember_entities {
        // How long a remembered entity may legitimately be down after its last stop:
        // its restart back-off, or its Shard's failed load, back-off and reload (§6.4).
        let st = &sc.settings;
        let e = &sc.entities;
        let slack_ms = st
            .entity_restart_backoff_ms
            .max(st.waiting_for_state_timeout_ms + st.shard_failure_backoff_ms)
            + st.updating_state_timeout_ms
            + e.stop_ms[1]
            + e.shard_init_ms[1]
            + 1_000;
        out.push(TraceEvent::RememberConfig { slack_ms });
    }
    out
}

/// One simulated cluster running one schedule.
pub struct World {
    /// What every host keeps of the run: slots, incarnations, journal, workload, checker,
    /// tracer.
    c: Cluster,
    now: Instant,
    queue: EventQueue<Ev>,
    /// Per node: the events deferred by its paused process.
    deferred: Vec<Deferred>,
    /// Events deferred by paused processes, over all nodes.
    deferred_total: usize,
    /// The latest end of any pause so far: no process is paused after it.
    paused_max: u64,
    net: Net,
    plan: Vec<TimedFault>,
    /// The causal recorder (`shardsim explain`); `None` unless asked for.
    causal: Option<Box<causal::CausalLog>>,
    /// The behaviour coverage collector (`fuzz --coverage`, `--guided`); `None` unless asked.
    coverage: Option<Box<coverage::Collector>>,
}

impl World {
    /// A world for `sc` and `seed`, with the given trace mode.
    pub fn new(sc: Arc<Scenario>, seed: u64, trace: TraceMode) -> Self {
        // With swarm.entity-knobs, this seed runs the entity knobs it draws.
        let (c, knobs) = Cluster::new(sc, seed, trace);
        let n = c.n();
        let mut w = World {
            now: Instant::ZERO,
            queue: EventQueue::new(),
            deferred: (0..n).map(|_| Deferred::new()).collect(),
            deferred_total: 0,
            paused_max: 0,
            net: Net::new(n, c.sc.network.clone(), seed),
            plan: Vec::new(),
            causal: None,
            coverage: None,
            c,
        };
        // What the checker checks, first: a trace file is re-checked from itself.
        for ev in preamble(&w.c.sc) {
            w.emit(ev);
        }
        // Joins, in node order at equal times: the first to join is the oldest.
        let mut joins: Vec<(u64, u32)> = (0..n as u32).map(|i| (w.c.sc.join_at_ms(i), i)).collect();
        joins.sort();
        for (t, i) in joins {
            w.push(
                Instant(0) + Duration::from_millis(t),
                Ev::Join { node: NodeId(i) },
            );
        }
        // The fault plan: the scenario's, then the swarm's draw for this seed.
        let plan = swarm::plan(&w.c.sc, seed);
        let delays = delays::plan(&w.c.sc, seed);
        if !delays.is_empty() {
            w.net
                .set_holds(delays::Holds::new(&delays, w.c.sc.cluster.nodes));
        }
        if let Some(mut profile) = plan.profile {
            if let Some(k) = knobs {
                profile = format!("{profile}; {k}");
            }
            if w.c.sc.swarm.delays {
                profile = format!(
                    "{profile}; {}",
                    delays::describe(&delays[w.c.sc.delays.len()..])
                );
            }
            w.emit(TraceEvent::SwarmProfile { profile });
        }
        for (i, f) in plan.faults.iter().enumerate() {
            w.push(
                Instant(0) + Duration::from_millis(f.at_ms),
                Ev::Fault { idx: i as u32 },
            );
        }
        w.plan = plan.faults;
        if w.c.sc.liveness.enabled {
            let t = w.c.sc.run.duration_ms - w.c.sc.liveness.quiet_ms;
            w.push(Instant(0) + Duration::from_millis(t), Ev::LivenessPhase);
        }
        w
    }

    /// Record the run's causal steps beside its trace ([`causal::CausalLog`]; nothing in the
    /// trace changes). Call before [`World::run_recorded`].
    pub fn with_causal(mut self) -> Self {
        self.causal = Some(Box::new(causal::CausalLog::new()));
        self
    }

    /// Collect the run's behaviour coverage ([`coverage`]; nothing in the trace
    /// changes); [`RunResult::coverage`] then holds it.
    pub fn with_coverage(mut self) -> Self {
        let (n, s) = (self.c.sc.cluster.nodes, self.c.sc.entities.shards);
        self.coverage = Some(Box::new(coverage::Collector::new(n, s)));
        self
    }

    /// Run until the end of the schedule or the first violation.
    pub fn run(self) -> (RunResult, Tracer) {
        let (r, t, _) = self.run_recorded();
        (r, t)
    }

    /// [`World::run`], also returning the causal log when [`World::with_causal`] asked for it.
    pub fn run_recorded(mut self) -> (RunResult, Tracer, Option<causal::CausalLog>) {
        loop {
            let next = if self.causal.is_some() {
                self.queue.pop_seq()
            } else {
                self.queue.pop().map(|(t, ev)| (t, 0, ev))
            };
            let Some((t, seq, ev)) = next else { break };
            if t > self.c.end.0 {
                // Past the end: back in the queue, so the end-of-run accounting sees it.
                self.queue.push(t, ev);
                break;
            }
            self.now = Instant(t);
            self.c.stats.events += 1;
            self.apply(ev, seq);
            if self.c.violation.is_some() {
                break;
            }
        }
        if self.c.violation.is_none() {
            // The end-of-run verdicts (liveness) are the checker's, at the end time. The
            // result's end stays the last event's time unless liveness is checked.
            let last = self.now;
            self.now = self.c.end;
            // Every message still on its way, for the conservation balance (check-trace
            // re-checks it from these lines), then the run's end.
            let pending = self.user_messages_in_transit();
            let coverage = &mut self.coverage;
            self.c.end_of_run(self.c.end, pending, |ev| {
                if let Some(c) = coverage.as_deref_mut() {
                    c.event(ev);
                }
            });
            if !self.c.sc.liveness.enabled {
                self.now = last;
            }
        }
        let live = self.c.slots.iter().filter_map(|s| s.node.as_ref());
        let hw = live.map(|n| n.buffer_high_water() as u64).max();
        self.c.stats.buffer_high_water = self.c.stats.buffer_high_water.max(hw.unwrap_or(0));
        let coverage = self.coverage.take().map(|c| Box::new(c.into_bitmap()));
        let result = self.c.result(self.now, coverage);
        (result, self.c.tracer, self.causal.map(|c| *c))
    }

    /// Also record when each protocol message was sent, for `run --perfetto` (the trace and
    /// its hash do not change; see `shardsim::perfetto`).
    pub fn record_flows(mut self) -> Self {
        self.c.tracer.record_flows();
        self
    }

    /// The journal written so far.
    pub fn journal(&self) -> &[CoordinatorEvent] {
        &self.c.journal.events
    }

    /// The shard of an entity under the extractor every node shares; `None` when each node
    /// incarnation has its own (`per-incarnation`, §12 B8), where no run-wide answer exists:
    /// ask [`World::shard_on`].
    pub fn shard_of(&self, e: EntityId) -> Option<ShardId> {
        self.c
            .node_cfg
            .region
            .extractors
            .shared()
            .map(|x| x.shard_id(e))
    }

    /// The shard `node`'s running region routes `e` to (its incarnation's extractor); `None`
    /// while the node has no region.
    pub fn shard_on(&self, node: NodeId, e: EntityId) -> Option<ShardId> {
        self.node(node)?.region().map(|r| r.shard_of(e))
    }

    /// User messages the world still carries, with where they are: queued (network, local) or
    /// deferred by a pause (the nodes' buffers are [`Cluster::end_of_run`]'s).
    fn user_messages_in_transit(&self) -> Vec<(Envelope, NodeId, Place)> {
        let carried = |ev: &Ev| match ev {
            Ev::Deliver {
                to,
                msg: Msg::User(env),
                ..
            } => Some((*env, to.node, Place::Network)),
            Ev::Local { node, msg, .. } => msg.user_message().map(|env| (env, *node, Place::Local)),
            _ => None,
        };
        let mut out: Vec<(Envelope, NodeId, Place)> =
            self.queue.iter().filter_map(carried).collect();
        for (i, d) in self.deferred.iter().enumerate() {
            out.extend(
                d.iter()
                    .filter_map(carried)
                    .map(|(env, _, _)| (env, NodeId(i as u32), Place::Deferred)),
            );
        }
        out
    }

    #[inline(always)]
    fn push(&mut self, t: Instant, ev: Ev) {
        self.queue.push_inlined(t.0, ev);
        if let Some(c) = self.causal.as_deref_mut() {
            c.pushed(self.queue.last_seq());
        }
    }

    /// The causal recorder's note that `ev` (queue sequence `seq`) is applied now.
    fn causal_begin(&mut self, seq: u64, ev: &Ev) {
        if let Some(mut c) = self.causal.take() {
            c.begin(self, seq, ev, self.c.tracer.events().len());
            self.causal = Some(c);
        }
    }

    /// Feed an event to the checker and the tracer.
    fn emit(&mut self, ev: TraceEvent) {
        if let Some(c) = self.coverage.as_deref_mut() {
            c.event(&ev);
        }
        self.c.record(self.now, ev);
    }

    /// The running incarnation of `node` (not while it handles an input).
    #[inline]
    fn node(&self, node: NodeId) -> Option<&Node> {
        self.c.node(node)
    }

    #[inline]
    fn is_up(&self, node: NodeId) -> bool {
        self.c.is_up(node)
    }

    /// Whether `inc` is the running incarnation of `node`.
    #[inline]
    pub(crate) fn running(&self, node: NodeId, inc: NodeInc) -> bool {
        self.c.running(node, inc)
    }

    /// The node an event is processed on, for pauses.
    fn target(&self, ev: &Ev) -> Option<NodeId> {
        match ev {
            Ev::Deliver { to, .. } => Some(to.node),
            Ev::Cluster { to, .. } | Ev::Repl { to, .. } => Some(to.node),
            Ev::Timer { node, .. }
            | Ev::Persisted { node, .. }
            | Ev::Local { node, .. }
            | Ev::EntityActs { node, .. }
            | Ev::StoreReply { node, .. }
            | Ev::DdataStore { node, .. }
            | Ev::DdataReply { node, .. }
            | Ev::Resume { node } => Some(*node),
            Ev::Send { sender } => Some(self.c.workload.node_of(*sender)),
            Ev::JournalWrite { .. }
            | Ev::StoreRequest { .. }
            | Ev::Join { .. }
            | Ev::Fault { .. }
            | Ev::LivenessPhase => None,
        }
    }

    #[inline]
    fn apply(&mut self, ev: Ev, seq: u64) {
        if self.deferred_total == 0 && self.paused_max <= self.now.0 {
            // No process is paused and none holds deferred events: the common case, decided
            // without looking at the event.
            self.causal_begin(seq, &ev);
            self.apply_now(ev);
            return;
        }
        if let Some(node) = self.target(&ev) {
            let i = node.0 as usize;
            if self.c.slots[i].paused_until > self.now.0 {
                // A paused process handles nothing; its events wait, in arrival order.
                self.deferred[i].push_back(ev);
                self.deferred_total += 1;
                if let Some(c) = self.causal.as_deref_mut() {
                    c.defer(node.0, seq);
                }
                return;
            }
            if !self.deferred[i].is_empty() {
                // Resumed: everything that arrived during the pause goes first (FIFO per link).
                let deferred = std::mem::take(&mut self.deferred[i]);
                self.deferred_total -= deferred.len();
                for e in deferred {
                    let seq = self.causal.as_deref_mut().map_or(0, |c| c.undefer(node.0));
                    self.causal_begin(seq, &e);
                    self.apply_now(e);
                }
            }
        }
        self.causal_begin(seq, &ev);
        self.apply_now(ev);
    }

    fn apply_now(&mut self, ev: Ev) {
        match ev {
            Ev::Deliver {
                from,
                to,
                msg,
                epoch,
            } => {
                let ok = self.net.ok(from.node.0 as usize, to.node.0 as usize, epoch);
                self.c.tracer.flow_arrived(self.now, from, to, ok);
                if !ok {
                    if let Msg::User(env) = msg {
                        self.drop_msg(from.node, env, DropReason::Network);
                    }
                    return;
                }
                self.on_deliver(from, to, msg)
            }
            Ev::Cluster {
                from,
                to,
                msg,
                epoch,
            } => {
                if self.net.ok(from.node.0 as usize, to.node.0 as usize, epoch)
                    && self.running(to.node, to.inc)
                {
                    self.with_node(to.node, NodeInput::Cluster { from, msg: *msg });
                }
            }
            Ev::Timer {
                node,
                inc,
                timer,
                gen,
            } => {
                if !self.running(node, inc) {
                    return;
                }
                if timer == NodeTimer::JoinCheck {
                    let input = self.c.join_check(node);
                    self.with_node(node, input);
                } else {
                    self.with_node(node, NodeInput::Timer { timer, gen });
                }
            }
            Ev::JournalWrite {
                node,
                inc,
                gen,
                event,
                epoch,
            } => self.on_journal_write(node, inc, gen, event, epoch),
            Ev::Persisted {
                node,
                inc,
                gen,
                epoch,
            } => {
                if self.net.ok(self.net.journal(), node.0 as usize, epoch)
                    && self.running(node, inc)
                {
                    self.with_node(node, NodeInput::Persisted { gen });
                }
            }
            Ev::Join { node } => self.on_join(node),
            Ev::Send { sender } => self.on_send(sender),
            Ev::Fault { idx } => self.on_fault(idx as usize),
            Ev::LivenessPhase => self.on_liveness_phase(),
            Ev::Local { node, inc, msg } => {
                if self.running(node, inc) {
                    if let Some(c) = self.coverage.as_deref_mut() {
                        c.local(node, &msg);
                    }
                    self.with_node(node, NodeInput::Local(msg));
                } else if let Some(env) = msg.user_message() {
                    // The node incarnation is gone, with its mailboxes.
                    self.drop_msg(node, env, DropReason::NodeDown);
                }
            }
            Ev::EntityActs {
                node,
                inc,
                entity,
                incarnation,
                act,
            } => {
                if self.running(node, inc) {
                    self.with_node(
                        node,
                        NodeInput::EntityActs {
                            entity,
                            incarnation,
                            act,
                        },
                    );
                }
            }
            Ev::Resume { .. } => {}
            Ev::StoreRequest {
                node,
                inc,
                req,
                epoch,
            } => self.on_store_request(node, inc, *req, epoch),
            Ev::DdataStore { node, inc, req } => {
                if self.running(node, inc) {
                    self.with_node(node, NodeInput::DdataStore(req));
                }
            }
            Ev::DdataReply { node, inc, reply } => {
                if self.running(node, inc) {
                    self.with_node(node, NodeInput::StoreReply(reply));
                }
            }
            Ev::Repl {
                from,
                to,
                msg,
                epoch,
            } => {
                if self.net.ok(from.node.0 as usize, to.node.0 as usize, epoch)
                    && self.running(to.node, to.inc)
                {
                    self.with_node(to.node, NodeInput::Repl { from, msg });
                }
            }
            Ev::StoreReply {
                node,
                inc,
                reply,
                epoch,
            } => {
                if self.net.ok(self.net.journal(), node.0 as usize, epoch)
                    && self.running(node, inc)
                {
                    self.with_node(node, NodeInput::StoreReply(reply));
                }
            }
        }
    }

    /// The eventsourced remember-entities store (a persistent actor per shard writing to the
    /// journal, §6.4) serves a request: with the journal's faults, a request that is lost or
    /// a write that fails gets no answer (the Shard's timeout fires).
    fn on_store_request(&mut self, node: NodeId, inc: NodeInc, req: StoreRequest, epoch: u32) {
        let j = self.net.journal();
        if !self.net.ok(node.0 as usize, j, epoch) || !self.c.journal.available {
            return;
        }
        let Some((kind, ev)) = self.c.journal.serve_store(node, &req) else {
            return;
        };
        self.emit(ev);
        if let Some((at, epoch)) = self.net.schedule(self.now, j, node.0 as usize, 0) {
            self.push(
                at,
                Ev::StoreReply {
                    node,
                    inc,
                    reply: Box::new(StoreReply {
                        shard: req.shard,
                        uid: req.uid,
                        instance: req.instance,
                        kind,
                    }),
                    epoch,
                },
            );
        }
    }

    fn on_deliver(&mut self, from: Addr, to: Addr, msg: Msg) {
        if !kit::arrive(self, from, to, msg) {
            return;
        }
        if self.coverage.is_some() {
            let shard = match msg {
                Msg::User(env) => self.shard_on(to.node, env.entity),
                _ => None,
            };
            if let Some(c) = self.coverage.as_deref_mut() {
                c.delivered(from, to, &msg, shard);
            }
        }
        if to.role == Role::Region {
            // `NodeInput::Deliver`, without building the input.
            self.in_node(to.node, |n, now, w| n.deliver(now, from, msg, w));
        } else {
            self.with_node(
                to.node,
                NodeInput::Deliver {
                    from,
                    role: to.role,
                    msg,
                },
            );
        }
    }

    fn drop_msg(&mut self, node: NodeId, env: Envelope, reason: DropReason) {
        let ev = outputs::drop_event(node, env, reason, &mut self.c.stats);
        self.emit(ev);
    }

    pub(crate) fn addr_of(&self, node: NodeId) -> NodeAddr {
        self.c.addr_of(node)
    }

    /// A node (re)starts as a new incarnation and joins through the live nodes.
    fn on_join(&mut self, node: NodeId) {
        if self.is_up(node) {
            return;
        }
        let (me, seeds) = self.c.new_incarnation(node);
        self.emit(TraceEvent::NodeUp {
            node,
            incarnation: me.inc.0,
        });
        self.with_node(node, NodeInput::Start { seeds });
        for (at, sender) in self.c.workload.start_node(node, self.now) {
            self.push(at, Ev::Send { sender });
        }
    }

    /// A node stops at once (crash).
    fn node_down(&mut self, node: NodeId, reason: &str) {
        self.with_node(
            node,
            NodeInput::Stop {
                reason: reason.to_string(),
            },
        );
    }

    fn on_send(&mut self, sender: u32) {
        if let Some(next) = self.c.workload.next_send(self.now) {
            self.push(next, Ev::Send { sender });
        }
        let Some((node, env, shard)) = self.c.workload_message(sender, self.now) else {
            return;
        };
        // `emit(TraceEvent::Send ..)`, without building the event unless it is traced.
        if self.c.violation.is_none() {
            self.c
                .checker
                .on_send(self.now, env.sender, env.entity, env.seq, shard);
        }
        if self.c.tracer.on() {
            self.c.tracer.record(
                self.now,
                TraceEvent::Send {
                    sender: env.sender,
                    entity: env.entity,
                    seq: env.seq,
                    node,
                    shard,
                },
            );
        }
        // `NodeInput::Request(env)`, without building the input.
        self.in_node(node, |n, now, w| n.request(now, env, w));
    }

    /// Run one input through `node` (if it is up), then apply its outputs.
    fn with_node(&mut self, node: NodeId, input: NodeInput) {
        self.in_node(node, |n, now, w| n.handle(now, input, w));
    }

    /// Run `f` on `node` (if it is up) through any of its entry points; its outputs are applied
    /// as it emits them (the world is its [`Transport`], under the hosts' shared [`Ctx`]).
    #[inline]
    fn in_node(&mut self, node: NodeId, f: impl FnOnce(&mut Node, Instant, &mut Ctx<'_, World>)) {
        let idx = node.0 as usize;
        let Some(mut n) = self.c.slots[idx].node.take() else {
            return;
        };
        self.c.cur = n.addr();
        f(&mut n, self.now, &mut Ctx(self));
        // A node that shut down while handling the input is dropped.
        let s = &mut self.c.slots[idx];
        if s.up {
            s.node = Some(n);
        } else {
            self.note_buffer_high_water(&n);
        }
    }

    /// Fold a node's region buffer high-water mark into the run's.
    fn note_buffer_high_water(&mut self, n: &Node) {
        let hw = n.buffer_high_water() as u64;
        self.c.stats.buffer_high_water = self.c.stats.buffer_high_water.max(hw);
    }

    /// A message between two node incarnations' processes (membership, replicator) over the
    /// network, unless `to` is no node: `ev` makes its event, given the link's epoch.
    fn between_nodes(&mut self, from: NodeAddr, to: NodeAddr, ev: impl FnOnce(u32) -> Ev) {
        if to.node.0 as usize >= self.c.n() {
            return;
        }
        let (a, b) = (from.node.0 as usize, to.node.0 as usize);
        if let Some((at, epoch)) = self.net.schedule(self.now, a, b, 0) {
            self.push(at, ev(epoch));
        }
    }

    fn send_msg(&mut self, from: Addr, to: Addr, msg: Msg) {
        if to.node.0 as usize >= self.c.slots.len() {
            return;
        }
        if let Some(c) = self.coverage.as_deref_mut() {
            c.sent(from, to, &msg);
        }
        let at = self
            .net
            .schedule_msg(self.now, from.node.0 as usize, to.node.0 as usize, &msg);
        self.c
            .tracer
            .flow_sent(self.now, from, to, &msg, at.is_some());
        match at {
            Some((at, epoch)) => self.push(
                at,
                Ev::Deliver {
                    from,
                    to,
                    msg,
                    epoch,
                },
            ),
            None => {
                if let Some(c) = self.causal.as_deref_mut() {
                    c.lost_msg(self.now.0, from, to, &msg);
                }
                if let Msg::User(env) = msg {
                    self.drop_msg(from.node, env, DropReason::Network);
                }
            }
        }
    }

    /// The journal receives a write: append, acknowledge.
    fn on_journal_write(
        &mut self,
        node: NodeId,
        inc: NodeInc,
        gen: u32,
        event: CoordinatorEvent,
        epoch: u32,
    ) {
        let j = self.net.journal();
        if !self.net.ok(node.0 as usize, j, epoch)
            || !self.c.journal.available
            || self.c.journal.failing
        {
            return; // lost, or failed without an answer: the coordinator's call-timeout fires
        }
        self.c.journal.events.push(event);
        self.emit(TraceEvent::Persisted {
            node,
            incarnation: inc.0,
            generation: gen,
            event,
        });
        if let Some((at, epoch)) = self.net.schedule(self.now, j, node.0 as usize, 0) {
            self.push(
                at,
                Ev::Persisted {
                    node,
                    inc,
                    gen,
                    epoch,
                },
            );
        }
    }
}

/// The trace event of a role's observation (a delivery and a drop excepted: the host records
/// those), counting it in `stats`; `None` when it is not recorded (untraced detail). Shared by
/// every host.
pub fn observation_event(
    node: NodeId,
    obs: Observation,
    incarnation: u64,
    traced: bool,
    stats: &mut Stats,
) -> Option<TraceEvent> {
    match obs {
        Observation::EntityStarted { entity, shard, .. } => {
            stats.entity_starts += 1;
            Some(TraceEvent::EntityStarted {
                entity,
                shard,
                node,
                incarnation,
            })
        }
        Observation::EntityStopped { entity, reason, .. } => Some(TraceEvent::EntityStopped {
            entity,
            node,
            incarnation,
            reason,
        }),
        // The host records these two itself (the checker's fast doors).
        Observation::Delivered { .. } | Observation::Dropped { .. } => None,
        Observation::ShardHosted(shard) => Some(TraceEvent::ShardHosted { shard, node }),
        Observation::ShardUnhosted(shard) => Some(TraceEvent::ShardUnhosted { shard, node }),
        Observation::RebalanceStarted { shard, from } => {
            stats.rebalances += 1;
            Some(TraceEvent::RebalanceStarted {
                shard,
                from: from.node,
                coordinator: node,
            })
        }
        Observation::RebalanceDone { shard, ok } => {
            if ok {
                stats.rebalances_done += 1;
            }
            Some(TraceEvent::RebalanceDone {
                shard,
                ok,
                coordinator: node,
            })
        }
        Observation::AllocationDecided { shard, region } => Some(TraceEvent::AllocationDecided {
            node,
            shard,
            region,
        }),
        Observation::ShardAllocated { shard, region } => {
            traced.then_some(TraceEvent::ShardAllocated {
                shard,
                node: region.node,
            })
        }
        Observation::CoordinatorRecovered { .. } => None,
        Observation::CoordinatorStateLoaded { state } => Some(TraceEvent::CoordinatorStateLoaded {
            node,
            events: state.as_events(),
        }),
        Observation::CoordinatorStateUpdated { event } => {
            Some(TraceEvent::CoordinatorStateUpdated { node, event })
        }
        Observation::ShardFailed { shard, cause } => {
            let (cause, illegal) = match cause {
                ShardFailure::Injected => ("injected".to_string(), false),
                ShardFailure::StoreTimeout => ("remember store timeout".to_string(), false),
                ShardFailure::StoreStopped => ("remember store stopped".to_string(), false),
                ShardFailure::IllegalState(s) => (s.to_string(), true),
            };
            Some(TraceEvent::ShardFailed {
                node,
                shard,
                cause,
                illegal,
            })
        }
        Observation::RegionRestarted => Some(TraceEvent::RegionRestarted { node }),
        Observation::ShardLoadFailed(shard) => Some(TraceEvent::ShardLoadFailed { node, shard }),
    }
}

/// The world applies a node's outputs as the node emits them.
/// How the own world moves what a node emits: events on its queue, messages over its
/// simulated network ([`Net`]), journal requests to its journal.
impl Transport for World {
    #[inline(always)]
    fn cluster(&self) -> &Cluster {
        &self.c
    }

    #[inline(always)]
    fn cluster_mut(&mut self) -> &mut Cluster {
        &mut self.c
    }

    #[inline(always)]
    fn now(&self) -> Instant {
        self.now
    }

    fn emit(&mut self, ev: TraceEvent) {
        World::emit(self, ev);
    }

    #[inline]
    fn emit_deliver(&mut self, env: Envelope, node: NodeId, incarnation: u64) {
        // `emit(TraceEvent::Deliver ..)`, without building the event unless traced.
        let c = &mut self.c;
        if c.violation.is_none() {
            if let Some(v) =
                c.checker
                    .on_deliver(self.now, env.sender, env.entity, env.seq, node, incarnation)
            {
                c.violation = Some(v);
            }
        }
        if c.tracer.on() {
            c.tracer.record(
                self.now,
                TraceEvent::Deliver {
                    sender: env.sender,
                    entity: env.entity,
                    seq: env.seq,
                    node,
                    incarnation,
                },
            );
        }
    }

    #[inline]
    fn timer(&mut self, at: Instant, timer: NodeTimer, gen: u64) {
        let NodeAddr { node, inc } = self.c.cur;
        self.push(
            at,
            Ev::Timer {
                node,
                inc,
                timer,
                gen,
            },
        );
    }

    #[inline]
    fn local_msg(&mut self, at: Instant, msg: Local) {
        let NodeAddr { node, inc } = self.c.cur;
        self.push(at, Ev::Local { node, inc, msg });
    }

    #[inline]
    fn entity_acts(&mut self, at: Instant, entity: EntityId, incarnation: u64, act: EntityAct) {
        let NodeAddr { node, inc } = self.c.cur;
        self.push(
            at,
            Ev::EntityActs {
                node,
                inc,
                entity,
                incarnation,
                act,
            },
        );
    }

    fn ddata_store(&mut self, at: Instant, req: Box<StoreRequest>) {
        let NodeAddr { node, inc } = self.c.cur;
        self.push(at, Ev::DdataStore { node, inc, req });
    }

    fn ddata_reply(&mut self, at: Instant, reply: Box<StoreReply>) {
        let NodeAddr { node, inc } = self.c.cur;
        self.push(at, Ev::DdataReply { node, inc, reply });
    }

    #[inline]
    fn send_msg(&mut self, from: Addr, to: Addr, msg: Msg) {
        World::send_msg(self, from, to, msg);
    }

    fn send_cluster(&mut self, from: NodeAddr, to: NodeAddr, msg: MMsg) {
        self.between_nodes(from, to, |epoch| Ev::Cluster {
            from,
            to,
            msg: Box::new(msg),
            epoch,
        });
    }

    fn send_repl(&mut self, from: NodeAddr, to: NodeAddr, msg: Box<ReplMsg>) {
        self.between_nodes(from, to, |epoch| Ev::Repl {
            from,
            to,
            msg,
            epoch,
        });
    }

    fn persist(&mut self, from: NodeAddr, gen: u32, event: CoordinatorEvent) {
        let NodeAddr { node, inc } = from;
        let extra = self.c.journal.write_latency_us();
        let j = self.net.journal();
        if let Some((at, epoch)) = self.net.schedule(self.now, node.0 as usize, j, extra) {
            self.push(
                at,
                Ev::JournalWrite {
                    node,
                    inc,
                    gen,
                    event,
                    epoch,
                },
            );
        } else if let Some(c) = self.causal.as_deref_mut() {
            c.lost_write(self.now.0, node, &event);
        }
    }

    fn store(&mut self, from: NodeAddr, req: Box<StoreRequest>) {
        let NodeAddr { node, inc } = from;
        let extra = match req.op {
            StoreOp::GetEntities => 0,
            StoreOp::Update { .. } => self.c.journal.write_latency_us(),
        };
        let j = self.net.journal();
        if let Some((at, epoch)) = self.net.schedule(self.now, node.0 as usize, j, extra) {
            self.push(
                at,
                Ev::StoreRequest {
                    node,
                    inc,
                    req,
                    epoch,
                },
            );
        }
    }

    fn journal_reachable(&self, node: usize) -> bool {
        let j = self.net.journal();
        !self.net.is_cut(node, j) && !self.net.is_cut(j, node)
    }
}

/// Run one seed of a scenario: the one way every tool runs a schedule on the own world.
pub fn run_seed(sc: &Arc<Scenario>, seed: u64, mode: TraceMode) -> (RunResult, Tracer) {
    World::new(sc.clone(), seed, mode).run()
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::trace::TraceMode;
    use std::sync::Arc;

    #[test]
    fn no_send_after_stop_ms_not_even_the_first() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../sim-scenarios/two-nodes.toml");
        let mut sc = Scenario::load(&path).unwrap();
        sc.workload.stop_ms = 0;
        let (r, _) = super::run_seed(&Arc::new(sc.clone()), 1, TraceMode::Off);
        assert_eq!(r.stats.sends, 0);
        // Every sender's first send is at least one interval minimum after its start.
        sc.workload.stop_ms = sc.workload.interval_ms[1];
        let (r, _) = super::run_seed(&Arc::new(sc.clone()), 1, TraceMode::Off);
        assert!(r.stats.sends >= 1, "{:?}", r.stats);
    }

    /// With a per-incarnation extractor (§12 B8), a send is recorded under the shard of the
    /// sender's node incarnation, the nodes disagree, and the world has no run-wide shard.
    #[test]
    fn per_incarnation_sends_are_recorded_under_the_senders_extractor() {
        use crate::trace::TraceEvent;
        use shardsim_core::ids::{EntityId, NodeId, NodeInc, RegionRef};
        use shardsim_core::protocol::entity::{
            ExtractorKind, Extractors, HashExtractor, ShardExtractor,
        };
        use std::collections::BTreeMap;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../sim-scenarios/hazards/randomized-extractor.toml");
        let sc = Arc::new(Scenario::load(&path).unwrap());
        assert_eq!(sc.entities.extractor, ExtractorKind::PerIncarnation);
        let seed = 3;
        let world = super::World::new(sc.clone(), seed, TraceMode::Off);
        assert_eq!(world.shard_of(EntityId(0)), None);
        assert_eq!(world.shard_on(NodeId(0), EntityId(0)), None, "not started");
        let (r, tracer) = super::run_seed(&sc, seed, TraceMode::Full);
        assert!(r.violation.is_some(), "{:?}", r.stats);
        let x = Extractors::new(
            ExtractorKind::PerIncarnation,
            sc.entities.shards,
            sc.entities.count,
            seed,
        );
        let mut inc: BTreeMap<NodeId, u32> = BTreeMap::new();
        let (mut sends, mut disagree) = (0, 0);
        for (_, ev) in tracer.events() {
            match ev {
                TraceEvent::NodeUp { node, incarnation } => {
                    inc.insert(*node, *incarnation);
                }
                TraceEvent::Send {
                    entity,
                    node,
                    shard,
                    ..
                } => {
                    let region = |n: NodeId| RegionRef {
                        node: n,
                        inc: NodeInc(inc[&n]),
                    };
                    assert_eq!(*shard, x.for_region(region(*node)).shard_id(*entity));
                    sends += 1;
                    let other = NodeId((node.0 + 1) % sc.cluster.nodes);
                    disagree += usize::from(
                        inc.contains_key(&other)
                            && x.for_region(region(other)).shard_id(*entity) != *shard,
                    );
                }
                _ => {}
            }
        }
        assert!(
            sends > 0 && disagree > 0,
            "{sends} sends, {disagree} disagreeing"
        );
        // A shared extractor: the run-wide answer is the regions' answer.
        let two = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../sim-scenarios/two-nodes.toml");
        let world = super::World::new(Arc::new(Scenario::load(&two).unwrap()), 1, TraceMode::Off);
        let fnv = HashExtractor { shards: 10 };
        assert_eq!(world.shard_of(EntityId(7)), Some(fnv.shard_id(EntityId(7))));
    }
}
