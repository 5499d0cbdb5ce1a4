//! The world: nodes, their roles, the network, the journal, the workload and the checkers.

use crate::check::{Checker, Violation};
use crate::ids::{EntityId, NodeId, NodeInc, RegionRef, SenderId, ShardId};
use crate::protocol::allocation::LeastShardAllocationStrategy;
use crate::protocol::coordinator::Coordinator;
use crate::protocol::entity::{HashExtractor, RecordingFactory, ShardExtractor};
use crate::protocol::region::{Region, RegionConfig};
use crate::protocol::{
    Addr, CoordinatorEvent, DropReason, Envelope, Input, Member, MemberStatus, Msg, Observation,
    Outbox, Output, Role, Timer,
};
use crate::rng::{Rng, Stream};
use crate::scenario::Scenario;
use crate::time::{Duration, Instant};
use crate::trace::{TraceEvent, TraceMode, Tracer};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
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
    },
    Timer {
        node: NodeId,
        inc: NodeInc,
        timer: Timer,
        gen: u64,
    },
    Persisted {
        node: NodeId,
        inc: NodeInc,
        event: CoordinatorEvent,
    },
    Join {
        node: NodeId,
    },
    Send {
        sender: u32,
    },
}

struct Item {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.seq == o.seq
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (t, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

struct Node {
    inc: NodeInc,
    up: bool,
    hosting: bool,
    region: Option<Region>,
    coordinator: Option<Coordinator>,
    /// timer → generation of the live instance.
    timers: BTreeMap<(Role, Timer), u64>,
    /// entity → current incarnation on this node (0: none).
    entity_inc: Vec<u64>,
}

struct Sender {
    id: SenderId,
    node: NodeId,
    focus: Vec<EntityId>,
    seqs: Vec<u64>,
}

/// One simulated cluster running one schedule.
pub struct World {
    sc: Arc<Scenario>,
    seed: u64,
    now: Instant,
    seq: u64,
    end: Instant,
    queue: BinaryHeap<Item>,
    nodes: Vec<Node>,
    members: Vec<Member>,
    next_up_number: u32,
    next_inc: u32,
    next_incarnation: u64,
    timer_gen: u64,
    net_rng: Rng,
    wl_rng: Rng,
    journal_rng: Rng,
    /// Last arrival time per directed link, `from * n + to`.
    link_last: Vec<u64>,
    journal: Vec<CoordinatorEvent>,
    senders: Vec<Sender>,
    region_cfg: Arc<RegionConfig>,
    extractor: HashExtractor,
    checker: Checker,
    tracer: Tracer,
    stats: Stats,
    violation: Option<Violation>,
    out: Outbox,
}

impl World {
    /// A world for `sc` and `seed`, with the given trace mode.
    pub fn new(sc: Arc<Scenario>, seed: u64, trace: TraceMode) -> Self {
        let n = sc.cluster.nodes as usize;
        let extractor = HashExtractor {
            shards: sc.entities.shards,
        };
        let region_cfg = Arc::new(RegionConfig {
            settings: sc.settings.clone(),
            options: sc.options.clone(),
            extractor: Arc::new(extractor),
            factory: Arc::new(RecordingFactory),
        });
        let proxies: Vec<u32> = sc.cluster.proxy_nodes.clone();
        let nodes = (0..n as u32)
            .map(|i| Node {
                inc: NodeInc(0),
                up: false,
                hosting: !proxies.contains(&i),
                region: None,
                coordinator: None,
                timers: BTreeMap::new(),
                entity_inc: Vec::new(),
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
            seq: 0,
            end,
            queue: BinaryHeap::with_capacity(1024),
            nodes,
            members: Vec::new(),
            next_up_number: 1,
            next_inc: 1,
            next_incarnation: 1,
            timer_gen: 0,
            net_rng: Rng::fork(seed, Stream::Net),
            wl_rng,
            journal_rng: Rng::fork(seed, Stream::Journal),
            link_last: vec![0; n * n],
            journal: Vec::new(),
            senders,
            region_cfg,
            extractor,
            checker: Checker::new(),
            tracer: Tracer::new(trace),
            stats: Stats::default(),
            violation: None,
            out: Outbox::default(),
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
        w
    }

    /// Run until the end of the schedule or the first violation.
    pub fn run(mut self) -> (RunResult, Tracer) {
        while let Some(item) = self.queue.pop() {
            if item.t > self.end.0 {
                break;
            }
            self.now = Instant(item.t);
            self.stats.events += 1;
            self.apply(item.ev);
            if self.violation.is_some() {
                break;
            }
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
        &self.journal
    }

    fn push(&mut self, t: Instant, ev: Ev) {
        self.seq += 1;
        self.queue.push(Item {
            t: t.0,
            seq: self.seq,
            ev,
        });
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

    fn apply(&mut self, ev: Ev) {
        match ev {
            Ev::Deliver { from, to, msg } => self.on_deliver(from, to, msg),
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
            Ev::Persisted { node, inc, event } => {
                let n = &self.nodes[node.0 as usize];
                if !n.up || n.inc != inc || n.coordinator.is_none() {
                    return;
                }
                self.journal.push(event);
                if self.tracer.on() {
                    self.emit(TraceEvent::Persisted { node, event });
                }
                self.handle(node, Role::Coordinator, Input::Persisted);
            }
            Ev::Join { node } => self.on_join(node),
            Ev::Send { sender } => self.on_send(sender),
        }
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
        self.handle(to.node, to.role, Input::Deliver { from, msg });
    }

    fn drop_msg(&mut self, node: NodeId, env: Envelope, reason: DropReason) {
        self.stats.drops += 1;
        self.emit(TraceEvent::Drop {
            sender: env.sender,
            entity: env.entity,
            seq: env.seq,
            reason,
            node,
        });
    }

    fn on_join(&mut self, node: NodeId) {
        let inc = NodeInc(self.next_inc);
        self.next_inc += 1;
        let up_number = self.next_up_number;
        self.next_up_number += 1;
        let entities = self.sc.entities.count as usize;
        let cfg = self.region_cfg.clone();
        let n = &mut self.nodes[node.0 as usize];
        n.inc = inc;
        n.up = true;
        n.timers.clear();
        n.entity_inc = vec![0; entities];
        let hosting = n.hosting;
        n.region = Some(Region::new(RegionRef { node, inc }, hosting, cfg));
        self.members.push(Member {
            node,
            inc,
            up_number,
            status: MemberStatus::Up,
            hosting,
        });
        self.emit(TraceEvent::NodeUp {
            node,
            incarnation: inc.0,
            up_number,
        });
        let mut out = std::mem::take(&mut self.out);
        if let Some(r) = self.nodes[node.0 as usize].region.as_mut() {
            r.start(self.now, &mut out);
        }
        self.apply_outputs(node, Role::Region, &mut out);
        self.out = out;
        self.ensure_coordinator();
        self.broadcast_members();
        // Start this node's senders.
        let start = Instant(0) + Duration::from_millis(self.sc.workload.start_ms);
        let first = if start > self.now { start } else { self.now };
        let [lo, hi] = self.sc.workload.interval_ms;
        for i in 0..self.senders.len() {
            if self.senders[i].node == node {
                let d = self.wl_rng.range(lo * 1000, hi * 1000);
                self.push(first + Duration(d), Ev::Send { sender: i as u32 });
            }
        }
    }

    /// The coordinator singleton runs on the oldest Up hosting member.
    fn ensure_coordinator(&mut self) {
        let Some(oldest) = self
            .members
            .iter()
            .filter(|m| {
                m.hosting && m.status == MemberStatus::Up && self.nodes[m.node.0 as usize].up
            })
            .min_by_key(|m| (m.up_number, m.node))
            .copied()
        else {
            return;
        };
        let idx = oldest.node.0 as usize;
        if self.nodes[idx].coordinator.is_some() {
            return;
        }
        let me = Addr {
            node: oldest.node,
            inc: oldest.inc,
            role: Role::Coordinator,
        };
        let strategy = Box::new(LeastShardAllocationStrategy::new(
            self.sc.settings.least_shard_allocation_strategy.clone(),
        ));
        let mut out = std::mem::take(&mut self.out);
        match Coordinator::recover(
            me,
            self.sc.settings.clone(),
            self.sc.options.clone(),
            strategy,
            &self.journal,
            &mut out,
        ) {
            Ok(c) => {
                self.nodes[idx].coordinator = Some(c);
                self.emit(TraceEvent::CoordinatorStarted {
                    node: oldest.node,
                    replayed: self.journal.len(),
                });
                self.apply_outputs(oldest.node, Role::Coordinator, &mut out);
            }
            Err(e) => {
                out.0.clear();
                self.emit(TraceEvent::Violation {
                    invariant: "recovery".into(),
                    detail: format!("coordinator recovery failed: {}", e.0),
                });
            }
        }
        self.out = out;
    }

    fn broadcast_members(&mut self) {
        let members = self.members.clone();
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                continue;
            }
            let node = NodeId(i as u32);
            if self.nodes[i].coordinator.is_some() {
                self.handle(
                    node,
                    Role::Coordinator,
                    Input::MembersChanged(members.clone()),
                );
            }
            self.handle(node, Role::Region, Input::MembersChanged(members.clone()));
        }
    }

    fn on_send(&mut self, sender: u32) {
        let s = &mut self.senders[sender as usize];
        let node = s.node;
        if !self.nodes[node.0 as usize].up {
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
        self.emit(TraceEvent::Send {
            sender: env.sender,
            entity,
            seq,
            node,
        });
        self.handle(node, Role::Region, Input::Request(env));
        let [lo, hi] = self.sc.workload.interval_ms;
        let next = self.now + Duration(self.wl_rng.range(lo * 1000, hi * 1000));
        if next <= Instant(0) + Duration::from_millis(self.sc.workload.stop_ms) {
            self.push(next, Ev::Send { sender });
        }
    }

    /// Run one input through one role of a node, then apply its outputs.
    fn handle(&mut self, node: NodeId, role: Role, input: Input) {
        let mut out = std::mem::take(&mut self.out);
        let now = self.now;
        let n = &mut self.nodes[node.0 as usize];
        match role {
            Role::Region => {
                if let Some(r) = n.region.as_mut() {
                    r.handle(now, input, &mut out);
                }
            }
            Role::Coordinator => {
                if let Some(c) = n.coordinator.as_mut() {
                    c.handle(now, input, &mut out);
                }
            }
        }
        self.apply_outputs(node, role, &mut out);
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
                    let [lo, hi] = self.sc.journal.write_latency_ms;
                    let d = Duration(self.journal_rng.range(lo * 1000, hi * 1000));
                    self.push(self.now + d, Ev::Persisted { node, inc, event });
                }
                Output::Observe(obs) => self.observe(node, obs),
            }
        }
    }

    fn send(&mut self, from: Addr, to: Addr, msg: Msg) {
        let n = self.nodes.len();
        if from.node == to.node {
            // Local: same instant, FIFO by sequence.
            self.push(self.now, Ev::Deliver { from, to, msg });
            return;
        }
        let spec = &self.sc.network;
        let (lo, hi) = if spec.slow_probability > 0.0 && self.net_rng.chance(spec.slow_probability)
        {
            (spec.slow_latency_ms[0], spec.slow_latency_ms[1])
        } else {
            (spec.latency_ms[0], spec.latency_ms[1])
        };
        let lat = self.net_rng.range(lo * 1000, hi * 1000);
        let link = from.node.0 as usize * n + to.node.0 as usize;
        // FIFO per directed link: never before the previous message on this link.
        let at = (self.now.0 + lat).max(self.link_last[link]);
        self.link_last[link] = at;
        self.push(Instant(at), Ev::Deliver { from, to, msg });
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
                self.emit(TraceEvent::Deliver {
                    sender: env.sender,
                    entity: env.entity,
                    seq: env.seq,
                    node,
                    incarnation: inc,
                });
            }
            Observation::Dropped { env, reason } => self.drop_msg(node, env, reason),
            Observation::ShardHosted(shard) => self.emit(TraceEvent::ShardHosted { shard, node }),
            Observation::ShardUnhosted(shard) => {
                self.emit(TraceEvent::ShardUnhosted { shard, node })
            }
            Observation::RebalanceStarted { shard, from } => {
                self.stats.rebalances += 1;
                if self.tracer.on() {
                    self.emit(TraceEvent::RebalanceStarted {
                        shard,
                        from: from.node,
                    });
                }
            }
            Observation::RebalanceDone { shard, ok } => {
                if ok {
                    self.stats.rebalances_done += 1;
                }
                if self.tracer.on() {
                    self.emit(TraceEvent::RebalanceDone { shard, ok });
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

    /// The shard of an entity under this run's extractor.
    pub fn shard_of(&self, e: EntityId) -> ShardId {
        self.extractor.shard_id(e)
    }
}
