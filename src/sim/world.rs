//! The world: nodes, their roles, cluster membership, the network, the journal, the fault
//! injector, the workload and the checkers.
//!
//! Each node runs a [`Membership`] (heartbeats and gossip over the simulated network), a
//! ShardRegion, and, when its own member view says it is the oldest Up hosting member, the
//! ShardCoordinator singleton. The coordinator's journal is a separate endpoint on the network,
//! so it can be partitioned away; a write can succeed while its acknowledgement is lost.

use crate::check::{Checker, Violation};
use crate::ids::{EntityId, NodeId, NodeInc, RegionRef, SenderId, ShardId};
use crate::membership::{MInput, MMsg, MOutput, MTimer, Membership, NodeAddr};
use crate::protocol::allocation::LeastShardAllocationStrategy;
use crate::protocol::coordinator::Coordinator;
use crate::protocol::entity::{HashExtractor, RecordingFactory, ShardExtractor, TabledExtractor};
use crate::protocol::region::{Region, RegionConfig};
use crate::protocol::{
    Addr, CoordinatorEvent, DropReason, Envelope, Input, Member, MemberStatus, Msg, Observation,
    Outbox, Output, Role, Timer,
};
use crate::rng::{Rng, Stream};
use crate::scenario::{FaultKind, FaultSpec, Outcome, Scenario};
use crate::sim::queue::EventQueue;
use crate::time::{Duration, Instant};
use crate::trace::{TraceEvent, TraceMode, Tracer};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Akka's `seed-node-timeout` (5 s).
const SEED_NODE_TIMEOUT_S: u64 = 5;

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
        timer: Timer,
        gen: u64,
    },
    MTimer {
        node: NodeId,
        inc: NodeInc,
        timer: MTimer,
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
    SingletonCheck {
        node: NodeId,
        inc: NodeInc,
    },
    LivenessPhase,
    /// A pause ends: flush what arrived meanwhile.
    Resume {
        node: NodeId,
    },
    /// Akka's seed-node process: a joining node not welcomed by now tries again.
    JoinCheck {
        node: NodeId,
        inc: NodeInc,
    },
}

struct Node {
    inc: NodeInc,
    up: bool,
    hosting: bool,
    region: Option<Region>,
    coordinator: Option<Coordinator>,
    /// Counts coordinator instances on this node; acknowledgements carry it.
    coord_gen: u32,
    /// The singleton's back-off: no coordinator start before this time.
    coord_backoff_until: u64,
    membership: Option<Membership>,
    /// This node's current member view.
    view: Vec<Member>,
    timers: BTreeMap<(Role, Timer), u64>,
    mtimers: BTreeMap<MTimer, u64>,
    /// entity → current incarnation on this node (0: none).
    entity_inc: Vec<u64>,
    /// Paused until this time (µs); 0: running.
    paused_until: u64,
    /// Events that arrived while paused, in arrival order; flushed before anything newer.
    deferred: std::collections::VecDeque<Ev>,
}

struct Sender {
    id: SenderId,
    node: NodeId,
    focus: Vec<EntityId>,
    seqs: Vec<u64>,
}

#[derive(Default)]
struct JournalState {
    events: Vec<CoordinatorEvent>,
    available: bool,
    failing: bool,
    extra_latency_us: u64,
    /// (node, incarnation, coordinator generation) of the last writer.
    last_writer: Option<(NodeId, NodeInc, u32)>,
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
    nodes: Vec<Node>,
    next_inc: u32,
    next_incarnation: u64,
    timer_gen: u64,
    net_rng: Rng,
    wl_rng: Rng,
    journal_rng: Rng,
    /// Links between n nodes and the journal (index n): `from * (n + 1) + to`.
    link_last: Vec<u64>,
    link_cut: Vec<bool>,
    link_epoch: Vec<u32>,
    journal: JournalState,
    plan: Vec<FaultSpec>,
    senders: Vec<Sender>,
    region_cfg: Arc<RegionConfig>,
    extractor: Arc<TabledExtractor>,
    checker: Checker,
    tracer: Tracer,
    stats: Stats,
    violation: Option<Violation>,
    out: Outbox,
    mout: Vec<MOutput>,
    /// Liveness: messages sent in the checked window that are neither delivered nor dropped.
    pending: BTreeMap<(SenderId, EntityId, u64), u64>,
    window: Option<(u64, u64)>,
    window_shards: BTreeSet<ShardId>,
    senders_started: BTreeSet<NodeId>,
    /// When each hand-off in progress started (µs), for the liveness check.
    handoff_started: BTreeMap<ShardId, u64>,
}

impl World {
    /// A world for `sc` and `seed`, with the given trace mode.
    pub fn new(sc: Arc<Scenario>, seed: u64, trace: TraceMode) -> Self {
        let n = sc.cluster.nodes as usize;
        let m = n + 1;
        let extractor = Arc::new(TabledExtractor::new(
            HashExtractor {
                shards: sc.entities.shards,
            },
            sc.entities.count,
        ));
        let region_cfg = Arc::new(RegionConfig {
            settings: sc.settings.clone(),
            options: sc.options.clone(),
            extractor: extractor.clone(),
            factory: Arc::new(RecordingFactory),
        });
        let nodes = (0..n as u32)
            .map(|i| Node {
                inc: NodeInc(0),
                up: false,
                hosting: !sc.cluster.proxy_nodes.contains(&i),
                region: None,
                coordinator: None,
                coord_gen: 0,
                coord_backoff_until: 0,
                membership: None,
                view: Vec::new(),
                timers: BTreeMap::new(),
                mtimers: BTreeMap::new(),
                entity_inc: Vec::new(),
                paused_until: 0,
                deferred: std::collections::VecDeque::new(),
            })
            .collect();
        let mut wl_rng = Rng::fork(seed, Stream::Workload);
        let mut senders = Vec::new();
        for node in 0..n as u32 {
            for _ in 0..sc.workload.senders_per_node {
                let id = SenderId(senders.len() as u32);
                let focus = if sc.workload.focus == 0 || sc.workload.focus >= sc.entities.count {
                    Vec::new()
                } else {
                    (0..sc.workload.focus)
                        .map(|_| EntityId(wl_rng.range(0, u64::from(sc.entities.count) - 1) as u32))
                        .collect()
                };
                senders.push(Sender {
                    id,
                    node: NodeId(node),
                    focus,
                    seqs: vec![0; sc.entities.count as usize],
                });
            }
        }
        let end = Instant(0) + Duration::from_millis(sc.run.duration_ms);
        let mut w = World {
            seed,
            now: Instant::ZERO,
            end,
            queue: EventQueue::new(),
            deferred_total: 0,
            paused_max: 0,
            nodes,
            next_inc: 1,
            next_incarnation: 1,
            timer_gen: 0,
            net_rng: Rng::fork(seed, Stream::Net),
            wl_rng,
            journal_rng: Rng::fork(seed, Stream::Journal),
            link_last: vec![0; m * m],
            link_cut: vec![false; m * m],
            link_epoch: vec![0; m * m],
            journal: JournalState {
                available: true,
                ..JournalState::default()
            },
            plan: Vec::new(),
            senders,
            region_cfg,
            extractor,
            checker: Checker::new(),
            tracer: Tracer::new(trace),
            stats: Stats::default(),
            violation: None,
            out: Outbox::default(),
            mout: Vec::new(),
            pending: BTreeMap::new(),
            window: None,
            window_shards: BTreeSet::new(),
            senders_started: BTreeSet::new(),
            handoff_started: BTreeMap::new(),
            sc,
        };
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
        let mut plan = w.sc.faults.clone();
        if w.sc.swarm.enabled {
            let (extra, profile) = crate::sim::swarm::draw(&w.sc, seed);
            plan.extend(extra);
            w.emit(TraceEvent::SwarmProfile { profile });
        }
        plan.sort_by_key(|f| f.at_ms);
        for (i, f) in plan.iter().enumerate() {
            w.push(
                Instant(0) + Duration::from_millis(f.at_ms),
                Ev::Fault { idx: i as u32 },
            );
        }
        w.plan = plan;
        if w.sc.liveness.enabled {
            let t = w.sc.run.duration_ms - w.sc.liveness.quiet_ms;
            w.push(Instant(0) + Duration::from_millis(t), Ev::LivenessPhase);
        }
        w
    }

    /// Run until the end of the schedule or the first violation.
    pub fn run(mut self) -> (RunResult, Tracer) {
        while let Some((t, ev)) = self.queue.pop() {
            if t > self.end.0 {
                break;
            }
            self.now = Instant(t);
            self.stats.events += 1;
            self.apply(ev);
            if self.violation.is_some() {
                break;
            }
        }
        if self.violation.is_none() && self.sc.liveness.enabled {
            self.now = self.end;
            self.check_liveness();
        }
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
        };
        (result, self.tracer)
    }

    /// The journal written so far.
    pub fn journal(&self) -> &[CoordinatorEvent] {
        &self.journal.events
    }

    /// The shard of an entity under this run's extractor.
    pub fn shard_of(&self, e: EntityId) -> ShardId {
        self.extractor.shard_id(e)
    }

    fn push(&mut self, t: Instant, ev: Ev) {
        self.queue.push(t.0, ev);
    }

    /// Feed an event to the checker and the tracer.
    fn emit(&mut self, ev: TraceEvent) {
        if self.violation.is_none() {
            if let Some(v) = self.checker.on_event(self.now, &ev) {
                self.violation = Some(v);
            }
        }
        self.tracer.record(self.now, ev);
    }

    fn violate(&mut self, invariant: Outcome, detail: String) {
        if self.violation.is_none() {
            self.violation = Some(Violation {
                invariant,
                t: self.now,
                detail,
            });
        }
    }

    /// A role's own rule broke after its `handle` (issue 9, item 5): a role-invariant violation.
    fn role_breach(&mut self, node: NodeId, breach: Option<crate::protocol::RoleBreach>) {
        if let Some(b) = breach {
            let detail = format!("{} on node {node}: {}: {}", b.role, b.rule, b.detail);
            self.violate(Outcome::RoleInvariant, detail);
        }
    }

    /// The node an event is processed on, for pauses.
    fn target(&self, ev: &Ev) -> Option<NodeId> {
        match ev {
            Ev::Deliver { to, .. } => Some(to.node),
            Ev::Cluster { to, .. } => Some(to.node),
            Ev::Timer { node, .. }
            | Ev::MTimer { node, .. }
            | Ev::Persisted { node, .. }
            | Ev::Resume { node }
            | Ev::JoinCheck { node, .. }
            | Ev::SingletonCheck { node, .. } => Some(*node),
            Ev::Send { sender } => Some(self.senders[*sender as usize].node),
            _ => None,
        }
    }

    fn apply(&mut self, ev: Ev) {
        if self.deferred_total == 0 && self.paused_max <= self.now.0 {
            // No process is paused and none holds deferred events: the common case, decided
            // without looking at the event.
            self.apply_now(ev);
            return;
        }
        if let Some(node) = self.target(&ev) {
            let n = &mut self.nodes[node.0 as usize];
            if n.paused_until > self.now.0 {
                // A paused process handles nothing; its events wait, in arrival order.
                n.deferred.push_back(ev);
                self.deferred_total += 1;
                return;
            }
            if !n.deferred.is_empty() {
                // Resumed: everything that arrived during the pause goes first (FIFO per link).
                let deferred = std::mem::take(&mut n.deferred);
                self.deferred_total -= deferred.len();
                for e in deferred {
                    self.apply_now(e);
                }
            }
        }
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
                if !self.link_ok(from.node.0 as usize, to.node.0 as usize, epoch) {
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
                if !self.link_ok(from.node.0 as usize, to.node.0 as usize, epoch) {
                    return;
                }
                let n = &self.nodes[to.node.0 as usize];
                if !n.up || n.inc != to.inc {
                    return;
                }
                self.handle_membership(to.node, MInput::Deliver { from, msg: *msg });
            }
            Ev::Timer {
                node,
                inc,
                timer,
                gen,
            } => {
                let n = &mut self.nodes[node.0 as usize];
                if !n.up || n.inc != inc || n.timers.get(&(timer.role(), timer)) != Some(&gen) {
                    return;
                }
                n.timers.remove(&(timer.role(), timer));
                if self.tracer.on() {
                    self.emit(TraceEvent::Timer { node, timer });
                }
                self.handle(node, timer.role(), Input::Timeout(timer));
            }
            Ev::MTimer {
                node,
                inc,
                timer,
                gen,
            } => {
                let n = &mut self.nodes[node.0 as usize];
                if !n.up || n.inc != inc || n.mtimers.get(&timer) != Some(&gen) {
                    return;
                }
                n.mtimers.remove(&timer);
                self.handle_membership(node, MInput::Timeout(timer));
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
                let j = self.nodes.len();
                if !self.link_ok(j, node.0 as usize, epoch) {
                    return;
                }
                let n = &self.nodes[node.0 as usize];
                if !n.up || n.inc != inc || n.coordinator.is_none() || n.coord_gen != gen {
                    return;
                }
                self.handle(node, Role::Coordinator, Input::Persisted);
            }
            Ev::Join { node } => self.on_join(node),
            Ev::Send { sender } => self.on_send(sender),
            Ev::Fault { idx } => self.on_fault(idx as usize),
            Ev::SingletonCheck { node, inc } => {
                if self.nodes[node.0 as usize].inc == inc {
                    self.singleton_check(node);
                }
            }
            Ev::LivenessPhase => self.on_liveness_phase(),
            Ev::Resume { .. } => {}
            Ev::JoinCheck { node, inc } => self.on_join_check(node, inc),
        }
    }

    fn link(&self, from: usize, to: usize) -> usize {
        from * (self.nodes.len() + 1) + to
    }

    fn link_ok(&self, from: usize, to: usize, epoch: u32) -> bool {
        if from == to {
            return true;
        }
        let l = self.link(from, to);
        !self.link_cut[l] && self.link_epoch[l] == epoch
    }

    /// When a message sent now on `from → to` arrives, and the link epoch it travels in;
    /// `None` when the link is cut. FIFO: never before the previous message on the link.
    fn schedule_link(&mut self, from: usize, to: usize, extra_us: u64) -> Option<(Instant, u32)> {
        if from == to {
            return Some((self.now, 0));
        }
        let l = self.link(from, to);
        if self.link_cut[l] {
            return None;
        }
        let spec = &self.sc.network;
        let (lo, hi) = if spec.slow_probability > 0.0 && self.net_rng.chance(spec.slow_probability)
        {
            (spec.slow_latency_ms[0], spec.slow_latency_ms[1])
        } else {
            (spec.latency_ms[0], spec.latency_ms[1])
        };
        let lat = self.net_rng.range(lo * 1000, hi * 1000) + extra_us;
        let at = (self.now.0 + lat).max(self.link_last[l]);
        self.link_last[l] = at;
        Some((Instant(at), self.link_epoch[l]))
    }

    fn on_deliver(&mut self, from: Addr, to: Addr, msg: Msg) {
        let n = &self.nodes[to.node.0 as usize];
        let present = n.up
            && n.inc == to.inc
            && match to.role {
                Role::Region => n.region.is_some(),
                Role::Coordinator => n.coordinator.is_some(),
            };
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
        if self.tracer.on() {
            self.emit(TraceEvent::Msg {
                from: from.node,
                to: to.node,
                to_coordinator: to.role == Role::Coordinator,
                msg,
            });
        }
        if to.role == Role::Region {
            // `handle(.., Input::Deliver { from, msg })`, without building the input.
            self.in_region(to.node, |r, now, out| r.deliver(now, from, msg, out));
        } else {
            self.handle(to.node, to.role, Input::Deliver { from, msg });
        }
    }

    fn drop_msg(&mut self, node: NodeId, env: Envelope, reason: DropReason) {
        self.stats.drops += 1;
        if !self.pending.is_empty() {
            self.pending.remove(&(env.sender, env.entity, env.seq));
        }
        self.emit(TraceEvent::Drop {
            sender: env.sender,
            entity: env.entity,
            seq: env.seq,
            reason,
            node,
        });
    }

    fn addr_of(&self, node: NodeId) -> NodeAddr {
        NodeAddr {
            node,
            inc: self.nodes[node.0 as usize].inc,
        }
    }

    fn on_join(&mut self, node: NodeId) {
        if self.nodes[node.0 as usize].up {
            return;
        }
        let inc = NodeInc(self.next_inc);
        self.next_inc += 1;
        let entities = self.sc.entities.count as usize;
        let cfg = self.region_cfg.clone();
        let seeds: Vec<NodeAddr> = (0..self.nodes.len())
            .filter(|i| *i != node.0 as usize && self.nodes[*i].up)
            .map(|i| self.addr_of(NodeId(i as u32)))
            .collect();
        let n = &mut self.nodes[node.0 as usize];
        n.inc = inc;
        n.up = true;
        n.timers.clear();
        n.mtimers.clear();
        n.view.clear();
        n.paused_until = 0;
        n.coord_backoff_until = 0;
        n.entity_inc = vec![0; entities];
        let hosting = n.hosting;
        n.region = Some(Region::new(RegionRef { node, inc }, hosting, cfg));
        n.membership = Some(Membership::new(
            NodeAddr { node, inc },
            hosting,
            self.sc.membership.clone(),
        ));
        self.emit(TraceEvent::NodeUp {
            node,
            incarnation: inc.0,
        });
        let mut out = std::mem::take(&mut self.out);
        if let Some(r) = self.nodes[node.0 as usize].region.as_mut() {
            r.start(self.now, &mut out);
        }
        self.apply_outputs(node, Role::Region, &mut out);
        self.out = out;
        self.handle_membership(node, MInput::Start { seeds });
        self.push(
            self.now + Duration::from_secs(SEED_NODE_TIMEOUT_S),
            Ev::JoinCheck { node, inc },
        );
        // Start this node's senders once (a sender survives its node's crash and resumes after).
        if self.senders_started.insert(node) {
            let start = Instant(0) + Duration::from_millis(self.sc.workload.start_ms);
            let first = if start > self.now { start } else { self.now };
            let [lo, hi] = self.sc.workload.interval_ms;
            let stop = Instant(0) + Duration::from_millis(self.sc.workload.stop_ms);
            for i in 0..self.senders.len() {
                if self.senders[i].node == node {
                    let d = self.wl_rng.range(lo * 1000, hi * 1000);
                    // "No sends after stop-ms" holds for the first send too.
                    if first + Duration(d) <= stop {
                        self.push(first + Duration(d), Ev::Send { sender: i as u32 });
                    }
                }
            }
        }
    }

    // ---- membership and the coordinator singleton ----

    fn handle_membership(&mut self, node: NodeId, input: MInput) {
        let mut mout = std::mem::take(&mut self.mout);
        let now = self.now;
        if let Some(m) = self.nodes[node.0 as usize].membership.as_mut() {
            m.handle(now, input, &mut mout);
        }
        let inc = self.nodes[node.0 as usize].inc;
        let me = NodeAddr { node, inc };
        for o in mout.drain(..) {
            if !self.nodes[node.0 as usize].up || self.nodes[node.0 as usize].inc != inc {
                break; // the node shut down while applying its outputs
            }
            match o {
                MOutput::Send { to, msg } => {
                    if to.node.0 as usize >= self.nodes.len() {
                        continue;
                    }
                    if let Some((at, epoch)) =
                        self.schedule_link(node.0 as usize, to.node.0 as usize, 0)
                    {
                        self.push(
                            at,
                            Ev::Cluster {
                                from: me,
                                to,
                                msg: Box::new(msg),
                                epoch,
                            },
                        );
                    }
                }
                MOutput::SetTimer { timer, after } => {
                    self.timer_gen += 1;
                    let gen = self.timer_gen;
                    self.nodes[node.0 as usize].mtimers.insert(timer, gen);
                    self.push(
                        self.now + after,
                        Ev::MTimer {
                            node,
                            inc,
                            timer,
                            gen,
                        },
                    );
                }
                MOutput::CancelTimer(timer) => {
                    self.nodes[node.0 as usize].mtimers.remove(&timer);
                }
                MOutput::MembersChanged(members) => self.on_view(node, members),
                MOutput::Shutdown { reason } => self.node_down(node, &reason),
                MOutput::Observe(ev) => {
                    if self.tracer.on() {
                        self.emit(TraceEvent::Cluster {
                            node,
                            event: format!("{ev:?}"),
                        });
                    }
                }
            }
        }
        self.mout = mout;
    }

    /// Akka's seed-node process (`seed-node-timeout`): a node that no member has welcomed joins
    /// again through the nodes that are members; when there are none (the whole cluster went
    /// down), the lowest live node joins itself and the others join it.
    fn on_join_check(&mut self, node: NodeId, inc: NodeInc) {
        let idx = node.0 as usize;
        let n = &self.nodes[idx];
        if !n.up || n.inc != inc {
            return;
        }
        if n.membership
            .as_ref()
            .is_none_or(|m| m.status_of_self().is_some())
        {
            return; // welcomed
        }
        let members: Vec<NodeAddr> = (0..self.nodes.len())
            .filter(|i| *i != idx && self.nodes[*i].up)
            .filter(|i| {
                self.nodes[*i]
                    .membership
                    .as_ref()
                    .is_some_and(|m| m.status_of_self() == Some(MemberStatus::Up))
            })
            .map(|i| self.addr_of(NodeId(i as u32)))
            .collect();
        let lowest_live = (0..self.nodes.len()).find(|i| self.nodes[*i].up);
        let seeds = if !members.is_empty() {
            members
        } else if lowest_live == Some(idx) {
            Vec::new() // join itself: a new cluster
        } else {
            lowest_live
                .map(|i| vec![self.addr_of(NodeId(i as u32))])
                .unwrap_or_default()
        };
        let hosting = self.nodes[idx].hosting;
        let n = &mut self.nodes[idx];
        n.mtimers.clear();
        n.membership = Some(Membership::new(
            NodeAddr { node, inc },
            hosting,
            self.sc.membership.clone(),
        ));
        if self.tracer.on() {
            self.emit(TraceEvent::Cluster {
                node,
                event: format!("join again via {seeds:?}"),
            });
        }
        self.handle_membership(node, MInput::Start { seeds });
        self.push(
            self.now + Duration::from_secs(SEED_NODE_TIMEOUT_S),
            Ev::JoinCheck { node, inc },
        );
    }

    /// A node's member view changed: tell its region and coordinator, then re-decide where the
    /// singleton runs.
    fn on_view(&mut self, node: NodeId, members: Vec<Member>) {
        self.nodes[node.0 as usize].view = members.clone();
        if self.tracer.on() {
            let view: Vec<String> = members
                .iter()
                .map(|m| format!("{}#{}:{:?}:{}", m.node.0, m.inc.0, m.status, m.up_number))
                .collect();
            self.emit(TraceEvent::Cluster {
                node,
                event: format!("view [{}]", view.join(" ")),
            });
        }
        if self.nodes[node.0 as usize].coordinator.is_some() {
            self.handle(
                node,
                Role::Coordinator,
                Input::MembersChanged(members.clone()),
            );
        }
        self.handle(node, Role::Region, Input::MembersChanged(members));
        self.singleton_check(node);
    }

    /// ClusterSingletonManager, from this node's own view: the coordinator runs here while this
    /// node is the oldest Up hosting member and no older hosting member is still in the view
    /// (an older Leaving/Exiting/Down member must be removed first: take-over, not hand-over).
    fn singleton_check(&mut self, node: NodeId) {
        let idx = node.0 as usize;
        let n = &self.nodes[idx];
        if !n.up || !n.hosting {
            return;
        }
        let inc = n.inc;
        let me = n
            .view
            .iter()
            .find(|m| m.node == node && m.inc == inc)
            .copied();
        let should_run = me.is_some_and(|me| {
            me.status == MemberStatus::Up
                && !n.view.iter().any(|m| {
                    m.hosting && (m.node, m.inc) != (node, inc) && m.up_number < me.up_number
                })
        });
        if n.coordinator.is_some() && !should_run {
            self.stop_coordinator(node, "no longer the oldest member (hand-over)");
            return;
        }
        if n.coordinator.is_some() || !should_run {
            return;
        }
        if self.now.0 < n.coord_backoff_until {
            let at = Instant(n.coord_backoff_until);
            self.push(at, Ev::SingletonCheck { node, inc });
            return;
        }
        // Recovery reads the journal over the network.
        let j = self.nodes.len();
        let l1 = self.link(idx, j);
        let l2 = self.link(j, idx);
        if self.link_cut[l1] || self.link_cut[l2] || !self.journal.available {
            self.recovery_failed(node, "journal unreachable".to_string());
            return;
        }
        let me_addr = Addr {
            node,
            inc,
            role: Role::Coordinator,
        };
        let strategy = Box::new(LeastShardAllocationStrategy::new(
            self.sc.settings.least_shard_allocation_strategy.clone(),
        ));
        let mut out = std::mem::take(&mut self.out);
        match Coordinator::recover(
            me_addr,
            self.sc.settings.clone(),
            self.sc.options.clone(),
            strategy,
            &self.journal.events,
            &mut out,
        ) {
            Ok(c) => {
                let n = &mut self.nodes[idx];
                n.coordinator = Some(c);
                n.coord_gen += 1;
                self.stats.coordinator_starts += 1;
                self.emit(TraceEvent::CoordinatorStarted {
                    node,
                    replayed: self.journal.events.len(),
                });
                self.apply_outputs(node, Role::Coordinator, &mut out);
                self.out = out;
                let view = self.nodes[idx].view.clone();
                self.handle(node, Role::Coordinator, Input::MembersChanged(view));
            }
            Err(e) => {
                out.0.clear();
                self.out = out;
                // Akka: recovery failure stops the coordinator; the back-off supervisor retries.
                self.recovery_failed(node, e.0);
            }
        }
    }

    fn recovery_failed(&mut self, node: NodeId, reason: String) {
        self.emit(TraceEvent::RecoveryFailed { node, reason });
        self.back_off_singleton(node);
    }

    /// The singleton's back-off supervisor (`coordinator-failure-backoff`): no coordinator on
    /// `node` before the back-off ends, then check again.
    fn back_off_singleton(&mut self, node: NodeId) {
        let backoff = self.sc.settings.coordinator_failure_backoff_ms * 1000;
        let n = &mut self.nodes[node.0 as usize];
        n.coord_backoff_until = self.now.0 + backoff;
        let (at, inc) = (Instant(n.coord_backoff_until), n.inc);
        self.push(at, Ev::SingletonCheck { node, inc });
    }

    /// Stop the coordinator on `node`; every region learns through death watch.
    fn stop_coordinator(&mut self, node: NodeId, reason: &str) {
        let idx = node.0 as usize;
        if self.nodes[idx].coordinator.take().is_none() {
            return;
        }
        let inc = self.nodes[idx].inc;
        self.nodes[idx]
            .timers
            .retain(|(role, _), _| *role != Role::Coordinator);
        self.emit(TraceEvent::CoordinatorStopped {
            node,
            reason: reason.to_string(),
        });
        let from = Addr {
            node,
            inc,
            role: Role::Coordinator,
        };
        for i in 0..self.nodes.len() {
            if self.nodes[i].up {
                let to = Addr {
                    node: NodeId(i as u32),
                    inc: self.nodes[i].inc,
                    role: Role::Region,
                };
                self.send(from, to, Msg::CoordinatorTerminated);
            }
        }
        self.back_off_singleton(node);
    }

    /// A node stops: crash, or shutdown after being downed, removed or leaving.
    fn node_down(&mut self, node: NodeId, reason: &str) {
        let idx = node.0 as usize;
        if !self.nodes[idx].up {
            return;
        }
        let buffered: Vec<Envelope> = self.nodes[idx]
            .region
            .as_ref()
            .map(|r| r.buffered_messages().collect())
            .unwrap_or_default();
        for env in buffered {
            self.drop_msg(node, env, DropReason::NodeDown);
        }
        let n = &mut self.nodes[idx];
        let inc = n.inc;
        n.up = false;
        n.region = None;
        n.coordinator = None;
        n.membership = None;
        n.view.clear();
        n.timers.clear();
        n.mtimers.clear();
        n.paused_until = 0;
        n.entity_inc.iter_mut().for_each(|x| *x = 0);
        self.emit(TraceEvent::NodeDown {
            node,
            incarnation: inc.0,
            reason: reason.to_string(),
        });
    }

    // ---- roles ----

    fn on_send(&mut self, sender: u32) {
        let [lo, hi] = self.sc.workload.interval_ms;
        let next = self.now + Duration(self.wl_rng.range(lo * 1000, hi * 1000));
        if next <= Instant(0) + Duration::from_millis(self.sc.workload.stop_ms) {
            self.push(next, Ev::Send { sender });
        }
        let s = &mut self.senders[sender as usize];
        let node = s.node;
        if !self.nodes[node.0 as usize].up || self.nodes[node.0 as usize].region.is_none() {
            return;
        }
        let entity = if s.focus.is_empty() {
            EntityId(self.wl_rng.range(0, u64::from(self.sc.entities.count) - 1) as u32)
        } else {
            s.focus[self.wl_rng.range(0, s.focus.len() as u64 - 1) as usize]
        };
        let seq = {
            let slot = &mut s.seqs[entity.0 as usize];
            *slot += 1;
            *slot
        };
        let env = Envelope {
            sender: s.id,
            entity,
            seq,
        };
        self.stats.sends += 1;
        if let Some((lo, hi)) = self.window {
            if self.now.0 >= lo && self.now.0 <= hi {
                self.pending.insert((env.sender, entity, seq), self.now.0);
                let shard = self.extractor.shard_id(entity);
                self.window_shards.insert(shard);
            }
        }
        // `emit(TraceEvent::Send ..)`, without building the event unless it is traced.
        if self.violation.is_none() {
            self.checker.on_send(env.sender, entity, seq);
        }
        if self.tracer.on() {
            self.tracer.record(
                self.now,
                TraceEvent::Send {
                    sender: env.sender,
                    entity,
                    seq,
                    node,
                },
            );
        }
        // `handle(node, Role::Region, Input::Request(env))`, without building the input.
        self.in_region(node, |r, _, out| r.request(env, out));
    }

    /// Run `f` on the region of `node` (if it has one), then apply its outputs: `handle` for
    /// the region, through any of its entry points.
    fn in_region(&mut self, node: NodeId, f: impl FnOnce(&mut Region, Instant, &mut Outbox)) {
        let mut out = std::mem::take(&mut self.out);
        let now = self.now;
        if let Some(r) = self.nodes[node.0 as usize].region.as_mut() {
            f(r, now, &mut out);
            let breach = r.check_invariants();
            self.role_breach(node, breach);
        }
        self.apply_outputs(node, Role::Region, &mut out);
        self.out = out;
    }

    /// Run one input through one role of a node, then apply its outputs.
    fn handle(&mut self, node: NodeId, role: Role, input: Input) {
        if role == Role::Region {
            self.in_region(node, |r, now, out| r.handle(now, input, out));
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        let now = self.now;
        if let Some(c) = self.nodes[node.0 as usize].coordinator.as_mut() {
            c.handle(now, input, &mut out);
            let breach = c.check_invariants();
            self.role_breach(node, breach);
        }
        self.apply_outputs(node, Role::Coordinator, &mut out);
        self.out = out;
    }

    fn apply_outputs(&mut self, node: NodeId, role: Role, out: &mut Outbox) {
        let inc = self.nodes[node.0 as usize].inc;
        let from = Addr { node, inc, role };
        for o in out.drain() {
            match o {
                Output::Send { to, msg } => self.send(from, to, msg),
                Output::SetTimer { timer, after } => {
                    self.timer_gen += 1;
                    let gen = self.timer_gen;
                    self.nodes[node.0 as usize]
                        .timers
                        .insert((role, timer), gen);
                    self.push(
                        self.now + after,
                        Ev::Timer {
                            node,
                            inc,
                            timer,
                            gen,
                        },
                    );
                }
                Output::CancelTimer(timer) => {
                    self.nodes[node.0 as usize].timers.remove(&(role, timer));
                }
                Output::Persist(event) => {
                    let gen = self.nodes[node.0 as usize].coord_gen;
                    let j = self.nodes.len();
                    let [lo, hi] = self.sc.journal.write_latency_ms;
                    let extra = self.journal_rng.range(lo * 1000, hi * 1000)
                        + self.journal.extra_latency_us;
                    if let Some((at, epoch)) = self.schedule_link(node.0 as usize, j, extra) {
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
                    }
                }
                Output::Observe(obs) => self.observe(node, obs),
                Output::Stop { reason } => match role {
                    Role::Coordinator => self.stop_coordinator(node, reason),
                    Role::Region => self.nodes[node.0 as usize].region = None,
                },
            }
        }
    }

    fn send(&mut self, from: Addr, to: Addr, msg: Msg) {
        if to.node.0 as usize >= self.nodes.len() {
            return;
        }
        match self.schedule_link(from.node.0 as usize, to.node.0 as usize, 0) {
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
                if let Msg::User(env) = msg {
                    self.drop_msg(from.node, env, DropReason::Network);
                }
            }
        }
    }

    /// The journal receives a write: append, check the single writer, acknowledge.
    fn on_journal_write(
        &mut self,
        node: NodeId,
        inc: NodeInc,
        gen: u32,
        event: CoordinatorEvent,
        epoch: u32,
    ) {
        let j = self.nodes.len();
        if !self.link_ok(node.0 as usize, j, epoch)
            || !self.journal.available
            || self.journal.failing
        {
            return; // lost, or failed without an answer: the coordinator's call-timeout fires
        }
        let writer = (node, inc, gen);
        if let Some(last) = self.journal.last_writer {
            let (ln, linc, lgen) = last;
            let l = &self.nodes[ln.0 as usize];
            let still_running =
                l.up && l.inc == linc && l.coord_gen == lgen && l.coordinator.is_some();
            if last != writer && still_running && self.sc.journal.check_single_writer {
                self.violate(
                    Outcome::JournalSingleWriter,
                    format!(
                        "coordinator on node {} (incarnation {}) wrote {:?} while the coordinator on node {} (incarnation {}) is still running",
                        node.0, inc.0, event, ln.0, linc.0
                    ),
                );
            }
        }
        self.journal.last_writer = Some(writer);
        self.journal.events.push(event);
        if self.tracer.on() {
            self.emit(TraceEvent::Persisted { node, event });
        }
        if let Some((at, epoch)) = self.schedule_link(j, node.0 as usize, 0) {
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

    fn observe(&mut self, node: NodeId, obs: Observation) {
        let idx = node.0 as usize;
        match obs {
            Observation::EntityStarted { entity, shard } => {
                let inc = self.next_incarnation;
                self.next_incarnation += 1;
                if let Some(slot) = self.nodes[idx].entity_inc.get_mut(entity.0 as usize) {
                    *slot = inc;
                }
                self.stats.entity_starts += 1;
                self.emit(TraceEvent::EntityStarted {
                    entity,
                    shard,
                    node,
                    incarnation: inc,
                });
            }
            Observation::EntityStopped { entity, reason } => {
                let inc = self.nodes[idx]
                    .entity_inc
                    .get(entity.0 as usize)
                    .copied()
                    .unwrap_or(0);
                if let Some(slot) = self.nodes[idx].entity_inc.get_mut(entity.0 as usize) {
                    *slot = 0;
                }
                self.emit(TraceEvent::EntityStopped {
                    entity,
                    node,
                    incarnation: inc,
                    reason,
                });
            }
            Observation::Delivered(env) => {
                let inc = self.nodes[idx]
                    .entity_inc
                    .get(env.entity.0 as usize)
                    .copied()
                    .unwrap_or(0);
                self.stats.deliveries += 1;
                if !self.pending.is_empty() {
                    self.pending.remove(&(env.sender, env.entity, env.seq));
                }
                // `emit(TraceEvent::Deliver ..)`, without building the event unless traced.
                if self.violation.is_none() {
                    self.violation = self
                        .checker
                        .on_deliver(self.now, env.sender, env.entity, env.seq, node, inc);
                }
                if self.tracer.on() {
                    self.tracer.record(
                        self.now,
                        TraceEvent::Deliver {
                            sender: env.sender,
                            entity: env.entity,
                            seq: env.seq,
                            node,
                            incarnation: inc,
                        },
                    );
                }
            }
            Observation::Dropped { env, reason } => self.drop_msg(node, env, reason),
            Observation::ShardHosted(shard) => self.emit(TraceEvent::ShardHosted { shard, node }),
            Observation::ShardUnhosted(shard) => {
                self.emit(TraceEvent::ShardUnhosted { shard, node })
            }
            Observation::RebalanceStarted { shard, from } => {
                self.stats.rebalances += 1;
                self.handoff_started.insert(shard, self.now.0);
                if self.tracer.on() {
                    self.emit(TraceEvent::RebalanceStarted {
                        shard,
                        from: from.node,
                    });
                }
            }
            Observation::RebalanceDone { shard, ok } => {
                self.handoff_started.remove(&shard);
                if ok {
                    self.stats.rebalances_done += 1;
                }
                if self.tracer.on() {
                    self.emit(TraceEvent::RebalanceDone { shard, ok });
                }
            }
            Observation::AllocationDecided { shard, region } => {
                // §12 B10 oracle, at decision time: never choose a region this coordinator's
                // node knows is downed or removed.
                let known = self.nodes[idx]
                    .view
                    .iter()
                    .find(|m| m.node == region.node && m.inc == region.inc)
                    .map(|m| m.status);
                if !matches!(known, Some(s) if s != MemberStatus::Down && s != MemberStatus::Removed)
                {
                    self.violate(
                        Outcome::AllocationToDowned,
                        format!(
                            "coordinator on node {} allocated shard {shard} to node {} (incarnation {}), which its view shows as {}",
                            node.0,
                            region.node.0,
                            region.inc.0,
                            known.map(|s| format!("{s:?}")).unwrap_or_else(|| "removed".into())
                        ),
                    );
                }
            }
            Observation::ShardAllocated { shard, region } => {
                if self.tracer.on() {
                    self.emit(TraceEvent::ShardAllocated {
                        shard,
                        node: region.node,
                    });
                }
            }
            Observation::CoordinatorRecovered { .. } => {}
            Observation::RegionRestarted => self.emit(TraceEvent::RegionRestarted { node }),
        }
    }

    // ---- faults ----

    fn cut(&mut self, a: usize, b: usize) {
        let l = self.link(a, b);
        self.link_cut[l] = true;
        // Messages in flight on a cut link are lost: they travel in an older epoch.
        self.link_epoch[l] = self.link_epoch[l].wrapping_add(1);
    }

    fn heal_nodes(&mut self) {
        let n = self.nodes.len();
        for a in 0..n {
            for b in 0..n {
                let l = self.link(a, b);
                self.link_cut[l] = false;
            }
        }
    }

    fn set_journal_reachable(&mut self, reachable: bool) {
        let j = self.nodes.len();
        for a in 0..j {
            if reachable {
                let (l1, l2) = (self.link(a, j), self.link(j, a));
                self.link_cut[l1] = false;
                self.link_cut[l2] = false;
            } else {
                self.cut(a, j);
                self.cut(j, a);
            }
        }
        self.journal.available = reachable;
    }

    fn on_fault(&mut self, idx: usize) {
        let f = self.plan[idx].clone();
        self.stats.faults += 1;
        let n = self.nodes.len();
        let detail = fault_detail(&f);
        self.emit(TraceEvent::Fault {
            fault: format!("{:?}", f.kind),
            detail,
        });
        let node = f.node.map(NodeId);
        match f.kind {
            FaultKind::Partition => {
                if let Some([a, b]) = &f.sides {
                    for x in a {
                        for y in b {
                            self.cut(*x as usize, *y as usize);
                            self.cut(*y as usize, *x as usize);
                        }
                    }
                }
            }
            FaultKind::Isolate => {
                if let Some(x) = node {
                    for y in 0..n {
                        if y != x.0 as usize {
                            self.cut(x.0 as usize, y);
                            self.cut(y, x.0 as usize);
                        }
                    }
                }
            }
            FaultKind::OneWay => {
                if let (Some(a), Some(b)) = (f.from, f.to) {
                    self.cut(a as usize, b as usize);
                }
            }
            FaultKind::Bridge => {
                if let Some([a, _, c]) = f.bridge {
                    self.cut(a as usize, c as usize);
                    self.cut(c as usize, a as usize);
                }
            }
            FaultKind::Heal => self.heal_nodes(),
            FaultKind::Crash => {
                if let Some(x) = node {
                    self.node_down(x, "crash");
                }
            }
            FaultKind::Restart => {
                if let Some(x) = node {
                    self.on_join(x);
                }
            }
            FaultKind::Pause => {
                if let (Some(x), Some(d)) = (node, f.duration_ms) {
                    if self.nodes[x.0 as usize].up {
                        let until = self.now.0 + d * 1000;
                        let n = &mut self.nodes[x.0 as usize];
                        n.paused_until = n.paused_until.max(until);
                        let at = Instant(n.paused_until);
                        self.paused_max = self.paused_max.max(at.0);
                        self.push(at, Ev::Resume { node: x });
                    }
                }
            }
            FaultKind::Down => {
                if let Some(x) = node {
                    let target = self.addr_of(x);
                    let by = f
                        .by
                        .map(NodeId)
                        .filter(|b| self.nodes[b.0 as usize].up)
                        .or_else(|| (0..n).find(|i| self.nodes[*i].up).map(|i| NodeId(i as u32)));
                    if let Some(by) = by {
                        self.handle_membership(by, MInput::DownCommand(target));
                    }
                }
            }
            FaultKind::Leave => {
                if let Some(x) = node {
                    if self.nodes[x.0 as usize].up {
                        self.handle_membership(x, MInput::Leave);
                    }
                }
            }
            FaultKind::JournalUnavailable => self.set_journal_reachable(false),
            FaultKind::JournalAvailable => {
                self.set_journal_reachable(true);
                self.journal.failing = false;
                self.journal.extra_latency_us = 0;
            }
            FaultKind::JournalSlow => {
                self.journal.extra_latency_us = f.extra_latency_ms.unwrap_or(0) * 1000
            }
            FaultKind::JournalFailing => self.journal.failing = true,
        }
    }

    // ---- liveness ----

    /// Heal every fault, restart crashed nodes, then watch a window of sends that must each be
    /// delivered or dropped by the end.
    fn on_liveness_phase(&mut self) {
        self.emit(TraceEvent::LivenessPhase);
        self.heal_nodes();
        self.set_journal_reachable(true);
        self.journal.failing = false;
        self.journal.extra_latency_us = 0;
        // Pauses are left to end on their own: cutting one short would let newer messages
        // overtake the ones it deferred.
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                self.on_join(NodeId(i as u32));
            }
        }
        let quiet = self.sc.liveness.quiet_ms * 1000;
        let lo = self.now.0 + quiet / 2;
        let hi = self.end.0.saturating_sub(quiet / 4);
        self.window = Some((lo, hi));
    }

    fn check_liveness(&mut self) {
        let mut pending: Vec<String> = Vec::new();
        let coordinators: Vec<usize> = (0..self.nodes.len())
            .filter(|i| self.nodes[*i].up && self.nodes[*i].coordinator.is_some())
            .collect();
        if coordinators.is_empty() {
            pending.push("no coordinator is running".into());
        }
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            if n.up && n.region.as_ref().is_some_and(|r| r.coordinator().is_none()) {
                pending.push(format!(
                    "the region on node {i} is not registered with a coordinator"
                ));
            }
        }
        if let Some(c) = coordinators
            .first()
            .and_then(|i| self.nodes[*i].coordinator.as_ref())
        {
            let homeless: Vec<String> = self
                .window_shards
                .iter()
                .filter(|s| !c.allocations().contains_key(s))
                .map(|s| s.to_string())
                .collect();
            match homeless.len() {
                0 => {}
                1 => pending.push(format!(
                    "shard {} received messages but has no home",
                    homeless[0]
                )),
                n if n <= 3 => pending.push(format!(
                    "shards {} received messages but have no home",
                    homeless.join(", ")
                )),
                n => pending.push(format!(
                    "shards {} and {} more received messages but have no home",
                    homeless[..3].join(", "),
                    n - 3
                )),
            }
            // I4: every hand-off ends within handoff-timeout; one that started just before the
            // end is not pending.
            let timeout = self.sc.settings.handoff_timeout_ms * 1000;
            for s in c.handoffs().keys() {
                let started = self.handoff_started.get(s).copied().unwrap_or(0);
                if self.end.0.saturating_sub(started) > timeout {
                    pending.push(format!(
                        "the hand-off of shard {s}, started at t={}, is still in progress after handoff-timeout",
                        Instant(started)
                    ));
                }
            }
        }
        for ((sender, entity, seq), t) in self.pending.iter().take(3) {
            pending.push(format!(
                "{sender}→{entity} seq {seq} sent at t={} was neither delivered nor dropped",
                Instant(*t)
            ));
        }
        if self.pending.len() > 3 {
            pending.push(format!(
                "and {} more pending messages",
                self.pending.len() - 3
            ));
        }
        if !pending.is_empty() {
            self.violate(Outcome::Liveness, pending.join("; "));
        }
    }
}

fn fault_detail(f: &FaultSpec) -> String {
    let mut parts = Vec::new();
    if let Some(n) = f.node {
        parts.push(format!("node {n}"));
    }
    if let Some([a, b]) = &f.sides {
        parts.push(format!("sides {a:?} | {b:?}"));
    }
    if let (Some(a), Some(b)) = (f.from, f.to) {
        parts.push(format!("{a} -> {b}"));
    }
    if let Some(b) = f.bridge {
        parts.push(format!("bridge {b:?}"));
    }
    if let Some(d) = f.duration_ms {
        parts.push(format!("{d} ms"));
    }
    if let Some(b) = f.by {
        parts.push(format!("by node {b}"));
    }
    if let Some(x) = f.extra_latency_ms {
        parts.push(format!("+{x} ms"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use crate::trace::TraceMode;
    use std::sync::Arc;

    #[test]
    fn no_send_after_stop_ms_not_even_the_first() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sim-scenarios/two-nodes.toml");
        let mut sc = Scenario::load(&path).unwrap();
        sc.workload.stop_ms = 0;
        let (r, _) = crate::campaign::run_seed(&Arc::new(sc.clone()), 1, TraceMode::Off);
        assert_eq!(r.stats.sends, 0);
        // Every sender's first send is at least one interval minimum after its start.
        sc.workload.stop_ms = sc.workload.interval_ms[1];
        let (r, _) = crate::campaign::run_seed(&Arc::new(sc.clone()), 1, TraceMode::Off);
        assert!(r.stats.sends >= 1, "{:?}", r.stats);
    }

    #[test]
    fn bare_loop_events_are_as_large_as_world_events() {
        assert_eq!(
            std::mem::size_of::<super::Ev>(),
            std::mem::size_of::<crate::bare::BareEvent>()
        );
    }
}
