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
pub mod net;
pub mod outputs;
pub mod queue;
pub mod swarm;
pub mod workload;

use crate::check::{Checker, Violation};
use crate::fault::TimedFault;
use crate::scenario::Scenario;
use crate::trace::{Place, TraceEvent, TraceMode, Tracer};
use journal::Journal;
use net::Net;
use queue::EventQueue;
use shardsim_core::ddata::{Data, Key, ReplMsg};
use shardsim_core::ids::{EntityId, NodeId, NodeInc, ShardId};
use shardsim_core::membership::{MMsg, NodeAddr};
use shardsim_core::node::{Node, NodeConfig, NodeHost, NodeInput, NodeOutput, NodeTimer};
use shardsim_core::protocol::entity::{Extractors, RecordingFactory, SharedShards};
use shardsim_core::protocol::region::RegionConfig;
use shardsim_core::protocol::settings::RememberStore;
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, DropReason, EntityAct, Envelope, Incarnations, Local, MemberStatus,
    Msg, Observation, Role, ShardFailure, StoreOp, StoreReply, StoreRequest,
};
use shardsim_core::rng::{Rng, Stream};
use shardsim_core::time::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use workload::Workload;

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
    /// The seed.
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
enum Ev {
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

/// One node id's place in the world: the running incarnation, if any, and the process state
/// the fault injector controls.
struct Slot {
    /// Whether an incarnation is running.
    up: bool,
    /// The running incarnation; taken out while it handles an input.
    node: Option<Box<Node>>,
    /// The current (or last) incarnation.
    inc: NodeInc,
    hosting: bool,
    /// The app version of the current (or last) incarnation (`[cluster] app-version`, one
    /// more per new incarnation with `upgrade-on-restart`).
    app_version: u32,
    /// Paused until this time (µs); 0: running.
    paused_until: u64,
    /// Events that arrived while paused, in arrival order; flushed before anything newer.
    deferred: VecDeque<Ev>,
    /// The node's disk: durable Distributed Data entries, kept across its incarnations.
    disk: BTreeMap<Key, Data>,
}

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
    sc: Arc<Scenario>,
    seed: u64,
    now: Instant,
    end: Instant,
    queue: EventQueue<Ev>,
    /// Events deferred by paused processes, over all nodes.
    deferred_total: usize,
    /// The latest end of any pause so far: no process is paused after it.
    paused_max: u64,
    slots: Vec<Slot>,
    next_inc: u32,
    incarnations: Incarnations,
    /// Entity behaviour: stop durations, entity-initiated passivation.
    entity_rng: Rng,
    net: Net,
    journal: Journal,
    workload: Workload,
    plan: Vec<TimedFault>,
    node_cfg: Arc<NodeConfig>,
    /// The shard of each entity id the workload sends to, when every region shares one
    /// extractor (the same answers as the regions' table): the send path's shard without a
    /// dynamic call. Empty for a per-incarnation extractor.
    shared_shards: SharedShards,
    checker: Checker,
    tracer: Tracer,
    stats: Stats,
    violation: Option<Violation>,
    /// The node whose outputs are being applied.
    cur: NodeAddr,
    /// The causal recorder (`shardsim explain`); `None` unless asked for.
    causal: Option<Box<causal::CausalLog>>,
    /// The behaviour coverage collector (`fuzz --coverage`, `--guided`); `None` unless asked.
    coverage: Option<Box<coverage::Collector>>,
}

impl World {
    /// A world for `sc` and `seed`, with the given trace mode.
    pub fn new(sc: Arc<Scenario>, seed: u64, trace: TraceMode) -> Self {
        // With swarm.entity-knobs, this seed runs the entity knobs it draws.
        let (sc, knobs) = match swarm::with_entity_knobs(&sc, seed) {
            Some((drawn, desc)) => (Arc::new(drawn), Some(desc)),
            None => (sc, None),
        };
        let n = sc.cluster.nodes as usize;
        let (node_cfg, shared_shards) = node_config(&sc, seed);
        let slots = (0..n as u32)
            .map(|i| Slot {
                up: false,
                node: None,
                inc: NodeInc(0),
                hosting: sc.hosting(i),
                app_version: sc.app_version(i),
                paused_until: 0,
                deferred: VecDeque::new(),
                disk: BTreeMap::new(),
            })
            .collect();
        let end = Instant(0) + Duration::from_millis(sc.run.duration_ms);
        let mut w = World {
            seed,
            now: Instant::ZERO,
            end,
            queue: EventQueue::new(),
            deferred_total: 0,
            paused_max: 0,
            slots,
            next_inc: 1,
            incarnations: Incarnations { next: 1 },
            entity_rng: Rng::fork(seed, Stream::Entities),
            net: Net::new(n, sc.network.clone(), seed),
            journal: Journal::new(sc.journal.clone(), seed),
            workload: Workload::new(&sc, seed),
            plan: Vec::new(),
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
            causal: None,
            coverage: None,
            sc,
        };
        // What the checker checks, first: a trace file is re-checked from itself.
        for ev in preamble(&w.sc) {
            w.emit(ev);
        }
        // Joins, in node order at equal times: the first to join is the oldest.
        let mut joins: Vec<(u64, u32)> = (0..n as u32).map(|i| (w.sc.join_at_ms(i), i)).collect();
        joins.sort();
        for (t, i) in joins {
            w.push(
                Instant(0) + Duration::from_millis(t),
                Ev::Join { node: NodeId(i) },
            );
        }
        // The fault plan: the scenario's, then the swarm's draw for this seed.
        let plan = swarm::plan(&w.sc, seed);
        let delays = delays::plan(&w.sc, seed);
        if !delays.is_empty() {
            w.net
                .set_holds(delays::Holds::new(&delays, w.sc.cluster.nodes));
        }
        if let Some(mut profile) = plan.profile {
            if let Some(k) = knobs {
                profile = format!("{profile}; {k}");
            }
            if w.sc.swarm.delays {
                profile = format!(
                    "{profile}; {}",
                    delays::describe(&delays[w.sc.delays.len()..])
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
        if w.sc.liveness.enabled {
            let t = w.sc.run.duration_ms - w.sc.liveness.quiet_ms;
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
        let (n, s) = (self.sc.cluster.nodes, self.sc.entities.shards);
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
            if t > self.end.0 {
                // Past the end: back in the queue, so the end-of-run accounting sees it.
                self.queue.push(t, ev);
                break;
            }
            self.now = Instant(t);
            self.stats.events += 1;
            self.apply(ev, seq);
            if self.violation.is_some() {
                break;
            }
        }
        if self.violation.is_none() {
            // The end-of-run verdicts (liveness) are the checker's, at the end time. The
            // result's end stays the last event's time unless liveness is checked.
            let last = self.now;
            self.now = self.end;
            // Every message still on its way, for the conservation balance (check-trace
            // re-checks it from these lines).
            let pending = self.pending_user_messages();
            let in_flight = pending.len() as u64;
            for (env, node, place) in pending {
                self.emit(TraceEvent::Pending {
                    sender: env.sender,
                    entity: env.entity,
                    seq: env.seq,
                    node,
                    place,
                });
            }
            self.emit(TraceEvent::RunEnd { in_flight });
            if !self.sc.liveness.enabled {
                self.now = last;
            }
        }
        let live = self.slots.iter().filter_map(|s| s.node.as_ref());
        let hw = live.map(|n| n.buffer_high_water() as u64).max();
        self.stats.buffer_high_water = self.stats.buffer_high_water.max(hw.unwrap_or(0));
        if let Some(v) = &self.violation {
            let (inv, detail) = (v.invariant.name().to_string(), v.detail.clone());
            let t = v.t;
            self.tracer.record(
                t,
                TraceEvent::Violation {
                    invariant: inv,
                    detail,
                },
            );
        }
        let result = RunResult {
            seed: self.seed,
            violation: self.violation.take(),
            stats: self.stats.clone(),
            end: self.now,
            trace_hash: self.tracer.hash(),
            coverage: self.coverage.take().map(|c| Box::new(c.into_bitmap())),
        };
        (result, self.tracer, self.causal.map(|c| *c))
    }

    /// Also record when each protocol message was sent, for `run --perfetto` (the trace and
    /// its hash do not change; see [`crate::perfetto`]).
    pub fn record_flows(mut self) -> Self {
        self.tracer.record_flows();
        self
    }

    /// The journal written so far.
    pub fn journal(&self) -> &[CoordinatorEvent] {
        &self.journal.events
    }

    /// The shard of an entity under the extractor every node shares; `None` when each node
    /// incarnation has its own (`per-incarnation`, §12 B8), where no run-wide answer exists:
    /// ask [`World::shard_on`].
    pub fn shard_of(&self, e: EntityId) -> Option<ShardId> {
        self.node_cfg
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

    /// User messages still on their way, with where they are: queued (network, local),
    /// deferred by a pause, or buffered in a running node's region or Shards; ordered by
    /// (sender, entity, seq) so the trace does not depend on the queue's layout.
    fn pending_user_messages(&self) -> Vec<(Envelope, NodeId, Place)> {
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
        for (i, s) in self.slots.iter().enumerate() {
            out.extend(
                s.deferred
                    .iter()
                    .filter_map(carried)
                    .map(|(env, _, _)| (env, NodeId(i as u32), Place::Deferred)),
            );
            if !s.up {
                continue;
            }
            if let Some(n) = s.node.as_ref() {
                outputs::buffered_user_messages(NodeId(i as u32), n, &mut out);
            }
        }
        out.sort_unstable_by_key(|(env, node, place)| (*env, *node, *place));
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
            c.begin(self, seq, ev, self.tracer.events().len());
            self.causal = Some(c);
        }
    }

    /// Feed an event to the checker and the tracer.
    fn emit(&mut self, ev: TraceEvent) {
        if let Some(c) = self.coverage.as_deref_mut() {
            c.event(&ev);
        }
        if self.violation.is_none() {
            if let Some(v) = self.checker.on_event(self.now, &ev) {
                self.violation = Some(v);
            }
        }
        self.tracer.record(self.now, ev);
    }

    /// The running incarnation of `node` (not while it handles an input).
    fn node(&self, node: NodeId) -> Option<&Node> {
        self.slots[node.0 as usize].node.as_deref()
    }

    fn is_up(&self, node: NodeId) -> bool {
        self.slots[node.0 as usize].up
    }

    /// Whether `inc` is the running incarnation of `node`.
    fn running(&self, node: NodeId, inc: NodeInc) -> bool {
        let s = &self.slots[node.0 as usize];
        s.up && s.inc == inc
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
            Ev::Send { sender } => Some(self.workload.node_of(*sender)),
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
            let s = &mut self.slots[node.0 as usize];
            if s.paused_until > self.now.0 {
                // A paused process handles nothing; its events wait, in arrival order.
                s.deferred.push_back(ev);
                self.deferred_total += 1;
                if let Some(c) = self.causal.as_deref_mut() {
                    c.defer(node.0, seq);
                }
                return;
            }
            if !s.deferred.is_empty() {
                // Resumed: everything that arrived during the pause goes first (FIFO per link).
                let deferred = std::mem::take(&mut s.deferred);
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
                self.tracer.flow_arrived(self.now, from, to, ok);
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
                    self.on_join_check(node);
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
        if !self.net.ok(node.0 as usize, j, epoch) || !self.journal.available {
            return;
        }
        let Some((kind, ev)) = self.journal.serve_store(node, &req) else {
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
        let s = &self.slots[to.node.0 as usize];
        let present = s.inc == to.inc && s.node.as_ref().is_some_and(|n| n.has_role(to.role));
        if !present {
            if let Msg::User(env) = msg {
                self.drop_msg(to.node, env, DropReason::DeadLetter);
            }
            if self.tracer.on() {
                self.emit(TraceEvent::DeadLetter {
                    from: from.node,
                    to: to.node,
                    msg,
                });
            }
            return;
        }
        self.stats.messages += 1;
        if self.coverage.is_some() {
            let shard = match msg {
                Msg::User(env) => self.shard_on(to.node, env.entity),
                _ => None,
            };
            if let Some(c) = self.coverage.as_deref_mut() {
                c.delivered(from, to, &msg, shard);
            }
        }
        // The hosting-ack rule reads ShardStarted and HandOff: the checker gets them also
        // when nothing is traced.
        if self.tracer.on() || matches!(msg, Msg::ShardStarted { .. } | Msg::HandOff { .. }) {
            self.emit(TraceEvent::Msg {
                from: from.node,
                to: to.node,
                actor: to.role,
                msg,
            });
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
        let ev = outputs::drop_event(node, env, reason, &mut self.stats);
        self.emit(ev);
    }

    fn addr_of(&self, node: NodeId) -> NodeAddr {
        NodeAddr {
            node,
            inc: self.slots[node.0 as usize].inc,
        }
    }

    /// A node (re)starts as a new incarnation and joins through the live nodes.
    fn on_join(&mut self, node: NodeId) {
        if self.is_up(node) {
            return;
        }
        let inc = NodeInc(self.next_inc);
        self.next_inc += 1;
        let seeds: Vec<NodeAddr> = (0..self.slots.len() as u32)
            .map(NodeId)
            .filter(|i| *i != node && self.is_up(*i))
            .map(|i| self.addr_of(i))
            .collect();
        let me = NodeAddr { node, inc };
        let s = &mut self.slots[node.0 as usize];
        if s.inc != NodeInc(0) && self.sc.cluster.upgrade_on_restart {
            // A rolling update: the new incarnation runs the next app version.
            s.app_version = s.app_version.saturating_add(1);
        }
        s.inc = inc;
        s.up = true;
        s.paused_until = 0;
        s.node = Some(Box::new(
            Node::new(me, s.hosting, self.node_cfg.clone()).with_app_version(s.app_version),
        ));
        self.emit(TraceEvent::NodeUp {
            node,
            incarnation: inc.0,
        });
        self.with_node(node, NodeInput::Start { seeds });
        for (at, sender) in self.workload.start_node(node, self.now) {
            self.push(at, Ev::Send { sender });
        }
    }

    /// The seed-node timeout of `node`: answer the `InitJoin` it would send with the live nodes
    /// that are Up members (see [`NodeInput::JoinCheck`]).
    fn on_join_check(&mut self, node: NodeId) {
        let members: Vec<NodeAddr> = (0..self.slots.len() as u32)
            .map(NodeId)
            .filter(|i| *i != node)
            .filter(|i| {
                self.node(*i)
                    .is_some_and(|n| n.status_of_self() == Some(MemberStatus::Up))
            })
            .map(|i| self.addr_of(i))
            .collect();
        let first_live = (0..self.slots.len() as u32)
            .map(NodeId)
            .find(|i| self.is_up(*i))
            .map(|i| self.addr_of(i));
        self.with_node(
            node,
            NodeInput::JoinCheck {
                members,
                first_live,
            },
        );
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
        if let Some(next) = self.workload.next_send(self.now) {
            self.push(next, Ev::Send { sender });
        }
        let node = self.workload.node_of(sender);
        if !self.node(node).is_some_and(|n| n.has_role(Role::Region)) {
            return;
        }
        let env = self.workload.message(sender, self.now);
        self.stats.sends += 1;
        // The shard the sender's region routes the message to: its node incarnation's
        // extractor decides (with a per-incarnation extractor, another node may route the
        // same entity elsewhere, §12 B8). The checker's liveness rule expects this shard to
        // get a home; the at-most-one rule is keyed by entity and needs no shard.
        let shard = match self.shared_shards.get(env.entity.0 as usize) {
            Some(s) => s,
            None => self.shard_on(node, env.entity).unwrap_or_default(),
        };
        // `emit(TraceEvent::Send ..)`, without building the event unless it is traced.
        if self.violation.is_none() {
            self.checker
                .on_send(self.now, env.sender, env.entity, env.seq, shard);
        }
        if self.tracer.on() {
            self.tracer.record(
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
    /// as it emits them (the world is its [`NodeHost`]).
    #[inline]
    fn in_node(&mut self, node: NodeId, f: impl FnOnce(&mut Node, Instant, &mut World)) {
        let idx = node.0 as usize;
        let Some(mut n) = self.slots[idx].node.take() else {
            return;
        };
        self.cur = n.addr();
        f(&mut n, self.now, self);
        // A node that shut down while handling the input is dropped.
        let s = &mut self.slots[idx];
        if s.up {
            s.node = Some(n);
        } else {
            self.note_buffer_high_water(&n);
        }
    }

    /// Fold a node's region buffer high-water mark into the run's.
    fn note_buffer_high_water(&mut self, n: &Node) {
        let hw = n.buffer_high_water() as u64;
        self.stats.buffer_high_water = self.stats.buffer_high_water.max(hw);
    }

    fn send_msg(&mut self, from: Addr, to: Addr, msg: Msg) {
        if to.node.0 as usize >= self.slots.len() {
            return;
        }
        if let Some(c) = self.coverage.as_deref_mut() {
            c.sent(from, to, &msg);
        }
        let at = self
            .net
            .schedule_msg(self.now, from.node.0 as usize, to.node.0 as usize, &msg);
        self.tracer
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
            || !self.journal.available
            || self.journal.failing
        {
            return; // lost, or failed without an answer: the coordinator's call-timeout fires
        }
        self.journal.events.push(event);
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

    fn on_observation(&mut self, node: NodeId, obs: Observation, incarnation: u64) {
        match obs {
            Observation::Delivered { env, .. } => self.delivered(env, incarnation),
            Observation::Dropped { env, reason } => self.drop_msg(node, env, reason),
            obs => {
                let traced = self.tracer.on();
                if let Some(ev) = observation_event(node, obs, incarnation, traced, &mut self.stats)
                {
                    self.emit(ev);
                }
            }
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
impl NodeHost for World {
    fn output(&mut self, o: NodeOutput) {
        let NodeAddr { node, inc } = self.cur;
        match o {
            NodeOutput::Local { msg, delay } => {
                let after = outputs::local_delay_us(&self.sc, delay, &mut self.entity_rng);
                self.push(
                    self.now + Duration::from_micros(after),
                    Ev::Local { node, inc, msg },
                );
            }
            NodeOutput::Send { from, to, msg } => NodeHost::send(self, from, to, msg),
            NodeOutput::SendCluster { to, msg } => {
                if to.node.0 as usize >= self.slots.len() {
                    return;
                }
                if let Some((at, epoch)) =
                    self.net
                        .schedule(self.now, node.0 as usize, to.node.0 as usize, 0)
                {
                    self.push(
                        at,
                        Ev::Cluster {
                            from: NodeAddr { node, inc },
                            to,
                            msg: Box::new(msg),
                            epoch,
                        },
                    );
                }
            }
            NodeOutput::CoordinatorTerminated => {
                let from = Addr {
                    node,
                    inc,
                    role: Role::Coordinator,
                };
                for i in 0..self.slots.len() {
                    if self.slots[i].up {
                        let to = Addr {
                            node: NodeId(i as u32),
                            inc: self.slots[i].inc,
                            role: Role::Region,
                        };
                        self.send_msg(from, to, Msg::CoordinatorTerminated);
                    }
                }
            }
            NodeOutput::SetTimer { timer, after, gen } => self.push(
                self.now + after,
                Ev::Timer {
                    node,
                    inc,
                    timer,
                    gen,
                },
            ),
            NodeOutput::Persist { gen, event } => {
                let extra = self.journal.write_latency_us();
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
            NodeOutput::Observe { obs, incarnation } => self.on_observation(node, obs, incarnation),
            NodeOutput::Store(req)
                if self.sc.settings.remember_entities_store == RememberStore::Ddata =>
            {
                let at = self.now + Duration::from_micros(self.sc.entities.local_delay_us);
                self.push(at, Ev::DdataStore { node, inc, req });
            }
            NodeOutput::StoreReplyLocal(reply) => {
                let at = self.now + Duration::from_micros(self.sc.entities.local_delay_us);
                self.push(at, Ev::DdataReply { node, inc, reply });
            }
            NodeOutput::SendRepl { to, msg } => {
                if to.node.0 as usize >= self.slots.len() {
                    return;
                }
                if let Some((at, epoch)) =
                    self.net
                        .schedule(self.now, node.0 as usize, to.node.0 as usize, 0)
                {
                    self.push(
                        at,
                        Ev::Repl {
                            from: NodeAddr { node, inc },
                            to,
                            msg,
                            epoch,
                        },
                    );
                }
            }
            NodeOutput::Durable { key, data } => {
                self.slots[node.0 as usize].disk.insert(key, data);
            }
            NodeOutput::Store(req) => {
                let extra = match req.op {
                    StoreOp::GetEntities => 0,
                    StoreOp::Update { .. } => self.journal.write_latency_us(),
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
            NodeOutput::Shutdown { reason } => {
                let s = &mut self.slots[node.0 as usize];
                s.up = false;
                s.paused_until = 0;
                self.emit(TraceEvent::NodeDown {
                    node,
                    incarnation: inc.0,
                    reason,
                });
            }
            o => {
                let traced = self.tracer.on();
                if let Some(ev) = outputs::output_event(node, inc, o, traced, &mut self.stats) {
                    self.emit(ev);
                }
            }
        }
    }

    #[inline]
    fn send(&mut self, from: Role, to: Addr, msg: Msg) {
        let NodeAddr { node, inc } = self.cur;
        self.send_msg(
            Addr {
                node,
                inc,
                role: from,
            },
            to,
            msg,
        );
    }

    #[inline]
    fn observe(&mut self, obs: Observation, incarnation: u64) {
        self.on_observation(self.cur.node, obs, incarnation);
    }

    #[inline]
    fn delivered(&mut self, env: Envelope, incarnation: u64) {
        let node = self.cur.node;
        self.stats.deliveries += 1;
        // The entity's own decision after this message (an input to the node after this
        // one): passivate, or stop itself.
        let act = outputs::entity_act(&self.sc.workload, &mut self.entity_rng);
        if let Some(act) = act {
            let inc = self.cur.inc;
            self.push(
                self.now,
                Ev::EntityActs {
                    node,
                    inc,
                    entity: env.entity,
                    incarnation,
                    act,
                },
            );
        }
        // `emit(TraceEvent::Deliver ..)`, without building the event unless traced.
        if self.violation.is_none() {
            if let Some(v) = self.checker.on_deliver(
                self.now,
                env.sender,
                env.entity,
                env.seq,
                node,
                incarnation,
            ) {
                self.violation = Some(v);
            }
        }
        if self.tracer.on() {
            self.tracer.record(
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

    fn journal(&self) -> Option<&[CoordinatorEvent]> {
        let (idx, j) = (self.cur.node.0 as usize, self.net.journal());
        let reachable =
            self.journal.available && !self.net.is_cut(idx, j) && !self.net.is_cut(j, idx);
        reachable.then_some(&self.journal.events[..])
    }

    fn disk(&self) -> BTreeMap<Key, Data> {
        self.slots[self.cur.node.0 as usize].disk.clone()
    }

    fn incarnations(&mut self) -> &mut Incarnations {
        &mut self.incarnations
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

    #[test]
    fn bare_loop_events_are_as_large_as_world_events() {
        assert_eq!(
            std::mem::size_of::<super::Ev>(),
            std::mem::size_of::<crate::bare::BareEvent>()
        );
    }
}
