//! The trace: one event per line in JSON Lines, in the order the world applied them. Every line
//! has `t` (simulated microseconds) and `ev`. The same typed events feed the live checkers, so a
//! trace file re-checked by [`crate::check::recheck_file`] reaches the same verdict.

use crate::fault::Fault;
use serde::{Deserialize, Serialize};
use shardsim_core::ids::{EntityId, NodeId, RegionRef, SenderId, ShardId};
use shardsim_core::membership::{MembershipEvent, NodeAddr};
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, DropReason, Member, Msg, Role, StopReason, Timer,
};
use shardsim_core::time::Instant;
use std::hash::{Hash, Hasher};

mod flows;
pub mod schema;
pub use flows::{Flow, FlowLog};
pub use schema::{read_line, Line, StepLine, TraceFileError, TRACE_ID_BOUND};

/// One traced event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum TraceEvent {
    /// What the run checks, recorded first so a trace file can be re-checked from itself.
    CheckConfig {
        /// `journal.check-single-writer`: the journal-single-writer rule is on.
        single_writer: bool,
        /// `liveness.enabled`: the liveness rule is on.
        liveness: bool,
        /// `settings.handoff-timeout-ms`: how long a hand-off may take (liveness).
        handoff_timeout_ms: u64,
    },
    /// A node incarnation joined and is up.
    NodeUp {
        /// The node that joined and came up.
        node: NodeId,
        /// Its new incarnation, a number unique in the run (a restart gets a higher one).
        incarnation: u32,
    },
    /// A node incarnation stopped; every entity on it is dead.
    NodeDown {
        /// The node that stopped.
        node: NodeId,
        /// The incarnation that stopped; a restart of the node comes back as a new one.
        incarnation: u32,
        /// Why: `crash`, `left`, or the downing reason (`downed: operator`, `sbr: ...`).
        reason: String,
    },
    /// An entity incarnation started.
    EntityStarted {
        /// The entity that started, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// The shard whose Shard started it.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// The node whose region hosts the Shard that started it.
        node: NodeId,
        /// Run-unique incarnation.
        incarnation: u64,
    },
    /// An entity incarnation stopped.
    EntityStopped {
        /// The entity that stopped, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// The node whose region hosted it.
        node: NodeId,
        /// The run-unique incarnation that stopped, as its `EntityStarted` gave it.
        incarnation: u64,
        /// What stopped it: a hand-off, passivation, a crash, its node going down, ...
        reason: StopReason,
    },
    /// A sender handed a message to its local region.
    Send {
        /// The workload client that sent it, written `c<N>`.
        #[serde(with = "schema::sender")]
        sender: SenderId,
        /// The addressed entity, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// Sequence number.
        seq: u64,
        /// The sender's node.
        node: NodeId,
        /// The entity's shard under the extractor of the sender's node incarnation (where
        /// its region routes the message; with `per-incarnation` other nodes may disagree).
        #[serde(with = "schema::shard")]
        shard: ShardId,
    },
    /// A message reached its entity.
    Deliver {
        /// The workload client that sent it, written `c<N>`.
        #[serde(with = "schema::sender")]
        sender: SenderId,
        /// The entity that processed it, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// Sequence number.
        seq: u64,
        /// The node whose region hosts the receiving entity.
        node: NodeId,
        /// The receiving incarnation.
        incarnation: u64,
    },
    /// A user message was dropped.
    Drop {
        /// The workload client that sent it, written `c<N>`.
        #[serde(with = "schema::sender")]
        sender: SenderId,
        /// The addressed entity, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// Sequence number.
        seq: u64,
        /// What lost it: a full buffer, a dead letter, the network, its node going down, ...
        reason: DropReason,
        /// Where it was lost: the sending node on the network, the addressed node for a dead
        /// letter, else the node holding it.
        node: NodeId,
    },
    /// A protocol message was delivered to its actor.
    Msg {
        /// Sending node.
        from: NodeId,
        /// Receiving node.
        to: NodeId,
        /// The receiving actor.
        #[serde(with = "schema::role")]
        actor: Role,
        /// The message.
        #[serde(flatten, with = "schema::msg_fields")]
        msg: Msg,
    },
    /// A message reached a node incarnation that is gone, or an actor that is not running.
    DeadLetter {
        /// Sending node.
        from: NodeId,
        /// Receiving node.
        to: NodeId,
        /// The message.
        #[serde(flatten, with = "schema::msg_fields")]
        msg: Msg,
    },
    /// A timer fired.
    Timer {
        /// The node whose region or coordinator set the timer.
        node: NodeId,
        /// The region, coordinator or Shard timer that fired (membership timers are not traced).
        #[serde(flatten, with = "schema::timer_fields")]
        timer: Timer,
    },
    /// The journal appended a coordinator's write.
    Persisted {
        /// The writing coordinator's node.
        node: NodeId,
        /// That node's incarnation.
        incarnation: u32,
        /// The writing coordinator's generation on its node.
        generation: u32,
        /// The event written: a registration, a termination, a shard allocated or deallocated.
        event: CoordinatorEvent,
    },
    /// The journal's acknowledgement reached the coordinator that wrote (it applies the event).
    PersistAcked {
        /// The coordinator's node.
        node: NodeId,
        /// That node's incarnation.
        incarnation: u32,
        /// The coordinator's generation on its node.
        generation: u32,
    },
    /// A coordinator started on a node after replaying the journal.
    CoordinatorStarted {
        /// The node the coordinator singleton started on.
        node: NodeId,
        /// The node's incarnation.
        incarnation: u32,
        /// Counts coordinator instances on this node (journal writes carry it).
        generation: u32,
        /// Events replayed.
        replayed: usize,
    },
    /// A region started hosting a shard.
    ShardHosted {
        /// The shard now hosted.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// The node whose region hosts it.
        node: NodeId,
    },
    /// A region stopped hosting a shard.
    ShardUnhosted {
        /// The shard no longer hosted.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// The node whose region hosted it.
        node: NodeId,
    },
    /// The coordinator allocated a shard.
    ShardAllocated {
        /// The shard whose allocation the coordinator persisted.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// To this node's region.
        node: NodeId,
    },
    /// A hand-off began.
    RebalanceStarted {
        /// The shard being handed off.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// From this node's region.
        from: NodeId,
        /// The node of the coordinator running the hand-off.
        coordinator: NodeId,
    },
    /// A hand-off ended.
    RebalanceDone {
        /// The shard whose hand-off ended.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// False on handoff-timeout.
        ok: bool,
        /// The node of the coordinator running the hand-off.
        coordinator: NodeId,
    },
    /// A coordinator decided where a shard goes (before persisting the allocation).
    AllocationDecided {
        /// The coordinator's node.
        node: NodeId,
        /// The shard being placed; its allocation is not yet persisted.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// The chosen region.
        #[serde(flatten, with = "schema::region_fields")]
        region: RegionRef,
    },
    /// A node's member view changed (also empty when the node goes up or down).
    MemberView {
        /// The node whose view changed (the observer).
        node: NodeId,
        /// Its view, oldest first.
        #[serde(with = "schema::members")]
        members: Vec<Member>,
    },
    /// The coordinator a node's region is registered with changed.
    RegionCoordinator {
        /// The region's node.
        node: NodeId,
        /// The coordinator's node and incarnation; `None`: not registered.
        #[serde(with = "schema::opt_region")]
        coordinator: Option<RegionRef>,
    },
    /// A region stopped itself (its node stays up).
    RegionStopped {
        /// The node whose region stopped.
        node: NodeId,
        /// Why: `graceful shutdown complete` or `graceful shutdown timed out`.
        reason: String,
    },
    /// A region restarted after an exception.
    RegionRestarted {
        /// The node whose region restarted.
        node: NodeId,
    },
    /// A fault was injected (or healed).
    Fault {
        /// The fault, as the plan or the swarm's draw gave it; its line has its kind (`fault`),
        /// its parameters in words (`detail`) and its fields.
        #[serde(flatten, with = "schema::fault_fields")]
        fault: Fault,
    },
    /// A membership event seen by a node (reachability, status change, downing decision).
    Cluster {
        /// The observing node.
        node: NodeId,
        /// What happened.
        event: MembershipEvent,
    },
    /// The coordinator on a node stopped.
    CoordinatorStopped {
        /// The node the coordinator ran on.
        node: NodeId,
        /// Why, in words, e.g. `no longer the oldest member` or `handed over to the new oldest`.
        reason: String,
    },
    /// A coordinator could not recover from the journal.
    RecoveryFailed {
        /// The node whose coordinator failed to recover.
        node: NodeId,
        /// Why: `journal unreachable`, or why replaying the journal's events failed.
        reason: String,
    },
    /// The fault profile a swarm seed drew.
    SwarmProfile {
        /// Which fault kinds are on, and how many of each.
        profile: String,
    },
    /// The liveness phase began: faults healed, crashed nodes restarting. Every message sent
    /// in the window `from..=to` must be delivered or dropped by the end.
    LivenessPhase {
        /// The window's start.
        from: Instant,
        /// The window's end (inclusive).
        to: Instant,
    },
    /// The run reached its end time without a violation (the end-of-run verdicts follow).
    RunEnd {
        /// User messages still on their way at the end: on the network, between the actors of
        /// a node, or buffered in a region or a Shard.
        in_flight: u64,
    },
    /// An invariant broke.
    Violation {
        /// The broken invariant's kebab-case name (`at-most-one`, `per-sender-order`, ...).
        invariant: String,
        /// What happened, for a person.
        detail: String,
        /// What it names, for tools ([`Subject`]).
        about: Vec<Subject>,
    },
    /// A role's check of its own state failed after it handled an input (the last variant:
    /// the trace hash covers variant numbers).
    RoleBreach {
        /// The node whose region or coordinator failed its check.
        node: NodeId,
        /// `region` or `coordinator`.
        role: String,
        /// The rule, in kebab-case.
        rule: String,
        /// What broke it.
        detail: String,
    },
    /// A Shard threw and restarts in place.
    ShardFailed {
        /// The node whose region hosts the Shard.
        node: NodeId,
        /// The shard whose Shard threw.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// What it threw: `injected`, `remember store timeout`, `remember store stopped`, or the
        /// illegal-state text.
        cause: String,
        /// An `IllegalStateException` (or invalid actor name) of the modelled Akka version:
        /// the `shard-illegal-state` oracle.
        illegal: bool,
    },
    /// A remember-entities store accepted a write (§6.4): the entities now remembered for the
    /// shard gain `started` and lose `stopped`.
    StoreWrite {
        /// The writing Shard's node.
        node: NodeId,
        /// The shard whose remembered entities changed.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// Entities added.
        #[serde(with = "schema::entities")]
        started: Vec<EntityId>,
        /// Entities removed.
        #[serde(with = "schema::entities")]
        stopped: Vec<EntityId>,
    },
    /// Remember-entities is on: a remembered entity may be down for `slack_ms` after its
    /// last stop (restart back-off, Shard reload) before remembered-entity liveness counts it.
    RememberConfig {
        /// The allowance (ms).
        slack_ms: u64,
    },
    /// A remember-entities store answered `GetEntities`.
    StoreRead {
        /// The reading Shard's node.
        node: NodeId,
        /// The shard whose remembered entities were read.
        #[serde(with = "schema::shard")]
        shard: ShardId,
        /// The remembered entities it returned.
        #[serde(with = "schema::entities")]
        entities: Vec<EntityId>,
    },
    /// A ddata coordinator read its state (§3.3): the events that rebuild it from empty.
    CoordinatorStateLoaded {
        /// The coordinator's node.
        node: NodeId,
        /// Regions, proxies and allocations ([`CoordinatorState::as_events`]).
        ///
        /// [`CoordinatorState::as_events`]: shardsim_core::protocol::coordinator::CoordinatorState::as_events
        events: Vec<CoordinatorEvent>,
    },
    /// A ddata coordinator's state update succeeded on enough replicas; it applies `event`.
    CoordinatorStateUpdated {
        /// The coordinator's node.
        node: NodeId,
        /// The coordinator event the update wrote.
        event: CoordinatorEvent,
    },
    /// `liveness.check-graceful-shutdown` is on: the graceful-shutdown-timeout rule runs
    /// (recorded after [`TraceEvent::CheckConfig`], only when on).
    GracefulShutdownCheck,
    /// A node began a graceful leave (coordinated shutdown, §5.5): the graceful-leave-loss
    /// rule watches the drops at this incarnation from here until the node's next incarnation.
    GracefulLeave {
        /// The leaving node.
        node: NodeId,
        /// The incarnation that leaves, whose drops the rule watches.
        incarnation: u32,
        /// How long the cluster needs to settle after a fault (failure detection,
        /// stable-after, removal margin, 1 s): a leave this soon after one is not graceful.
        settle_ms: u64,
    },
    /// A user message still on its way at the end of the run, recorded just before
    /// [`TraceEvent::RunEnd`] (one per message, ordered by sender, entity, seq): the
    /// message-conservation balance (sent = delivered + dropped + pending) is re-checked from
    /// the file, and a run with a liveness phase fails on one sent before its window closed.
    Pending {
        /// The workload client that sent it, written `c<N>`.
        #[serde(with = "schema::sender")]
        sender: SenderId,
        /// The addressed entity, written `e<N>`.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// Sequence number.
        seq: u64,
        /// Where it is: the receiving node for one on the network or between a node's actors,
        /// the holding node otherwise.
        node: NodeId,
        /// In what.
        place: Place,
    },
    /// A Shard stopped itself while loading its remembered entities (the store stopped or
    /// the load timed out, §6.1, SH `awaitingRememberedEntities`): its region stays the
    /// shard's home and starts it again after shard-failure-backoff (SR:1050-1093). The
    /// hosting-ack rule lets this Shard's stop pass.
    ShardLoadFailed {
        /// The node whose region hosts the Shard.
        node: NodeId,
        /// The shard whose Shard stopped.
        #[serde(with = "schema::shard")]
        shard: ShardId,
    },
    /// A node that was not let in tries its seed nodes again (`join-retry` after the
    /// `seed-node-timeout`).
    JoinAgain {
        /// The joining node.
        node: NodeId,
        /// The seed nodes it asks.
        seeds: Vec<NodeAddr>,
    },
}

/// What a violation names: the message, entity, shard or node a tool follows to explain it,
/// typed so that nothing reads the violation's prose. In the order the detail names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Subject {
    /// A user message.
    Message {
        /// The workload client that sent it.
        #[serde(with = "schema::sender")]
        sender: SenderId,
        /// The entity it is addressed to.
        #[serde(with = "schema::entity")]
        entity: EntityId,
        /// Its sequence number.
        seq: u64,
    },
    /// An entity.
    Entity {
        /// The entity the detail names, e.g. one alive twice or a remembered one running nowhere.
        #[serde(with = "schema::entity")]
        entity: EntityId,
    },
    /// A shard.
    Shard {
        /// The shard the detail names, e.g. one hosted twice or one still without a home.
        #[serde(with = "schema::shard")]
        shard: ShardId,
    },
    /// A node whose region or coordinator broke the rule.
    Node {
        /// The node the detail names, e.g. one hosting an entity twice or breaking a rule.
        node: NodeId,
    },
    /// The other coordinator a coordinator rule compares with (the one running).
    Coordinator {
        /// The node where that other coordinator runs.
        node: NodeId,
    },
    /// The region on this node is not registered with a coordinator.
    Unregistered {
        /// The node whose region is not registered.
        node: NodeId,
    },
    /// No coordinator is running.
    NoCoordinator,
    /// The hand-off of this shard has not ended.
    HandOff {
        /// The shard whose hand-off has not ended.
        #[serde(with = "schema::shard")]
        shard: ShardId,
    },
}

/// Where a user message pending at the end of a run is ([`TraceEvent::Pending`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// On the network, to the node's region.
    Network,
    /// Between the actors of the node (region, Shard, entity).
    Local,
    /// Held by the world for a paused node.
    Deferred,
    /// In a region's per-shard buffer.
    RegionBuffer,
    /// In a Shard's buffer (a passivating or restarting entity, a Shard initialising).
    ShardBuffer,
}

impl TraceEvent {
    /// The `ev` field.
    pub fn kind(&self) -> &'static str {
        match self {
            TraceEvent::NodeUp { .. } => "node_up",
            TraceEvent::NodeDown { .. } => "node_down",
            TraceEvent::EntityStarted { .. } => "entity_started",
            TraceEvent::EntityStopped { .. } => "entity_stopped",
            TraceEvent::Send { .. } => "send",
            TraceEvent::Deliver { .. } => "deliver",
            TraceEvent::Drop { .. } => "drop",
            TraceEvent::Msg { .. } => "msg",
            TraceEvent::DeadLetter { .. } => "dead_letter",
            TraceEvent::Timer { .. } => "timer",
            TraceEvent::Persisted { .. } => "persisted",
            TraceEvent::CoordinatorStarted { .. } => "coordinator_started",
            TraceEvent::CoordinatorStateLoaded { .. } => "coordinator_state_loaded",
            TraceEvent::CoordinatorStateUpdated { .. } => "coordinator_state_updated",
            TraceEvent::ShardHosted { .. } => "shard_hosted",
            TraceEvent::ShardUnhosted { .. } => "shard_unhosted",
            TraceEvent::ShardAllocated { .. } => "shard_allocated",
            TraceEvent::RebalanceStarted { .. } => "rebalance_started",
            TraceEvent::RebalanceDone { .. } => "rebalance_done",
            TraceEvent::RegionRestarted { .. } => "region_restarted",
            TraceEvent::Violation { .. } => "violation",
            TraceEvent::Fault { .. } => "fault",
            TraceEvent::Cluster { .. } => "cluster",
            TraceEvent::CoordinatorStopped { .. } => "coordinator_stopped",
            TraceEvent::RecoveryFailed { .. } => "recovery_failed",
            TraceEvent::SwarmProfile { .. } => "swarm_profile",
            TraceEvent::LivenessPhase { .. } => "liveness_phase",
            TraceEvent::CheckConfig { .. } => "check_config",
            TraceEvent::PersistAcked { .. } => "persist_acked",
            TraceEvent::AllocationDecided { .. } => "allocation_decided",
            TraceEvent::MemberView { .. } => "member_view",
            TraceEvent::RegionCoordinator { .. } => "region_coordinator",
            TraceEvent::RegionStopped { .. } => "region_stopped",
            TraceEvent::RoleBreach { .. } => "role_breach",
            TraceEvent::RunEnd { .. } => "run_end",
            TraceEvent::ShardFailed { .. } => "shard_failed",
            TraceEvent::StoreWrite { .. } => "store_write",
            TraceEvent::StoreRead { .. } => "store_read",
            TraceEvent::RememberConfig { .. } => "remember_config",
            TraceEvent::GracefulShutdownCheck => "graceful_shutdown_check",
            TraceEvent::GracefulLeave { .. } => "graceful_leave",
            TraceEvent::Pending { .. } => "pending",
            TraceEvent::ShardLoadFailed { .. } => "shard_load_failed",
            TraceEvent::JoinAgain { .. } => "join_again",
        }
    }
}

/// What the tracer keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    /// Nothing (fastest; the default for campaigns).
    Off,
    /// A running hash of every event (determinism checks).
    Hash,
    /// Every event, plus the hash.
    Full,
}

/// FNV-1a, 64 bit: a fixed hasher, identical on every machine and Rust version.
#[derive(Clone, Debug)]
pub struct Fnv64(pub u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv64 {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }
    fn write_u32(&mut self, n: u32) {
        self.write(&n.to_le_bytes());
    }
    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }
}

/// Records the trace according to its mode.
#[derive(Debug)]
pub struct Tracer {
    mode: TraceMode,
    hash: Fnv64,
    events: Vec<(Instant, TraceEvent)>,
    /// Send times of protocol messages, for `run --perfetto` only (never hashed, never in the
    /// JSON Lines trace).
    flows: Option<Box<FlowLog>>,
}

impl Tracer {
    /// A tracer in `mode`.
    pub fn new(mode: TraceMode) -> Self {
        Tracer {
            mode,
            hash: Fnv64::default(),
            events: Vec::new(),
            flows: None,
        }
    }
    /// Also record when each protocol message was sent ([`FlowLog`]); the
    /// trace and its hash stay as they are.
    pub fn record_flows(&mut self) {
        self.flows = Some(Box::default());
    }
    /// The flow log, when [`Tracer::record_flows`] was called.
    pub fn flows(&self) -> Option<&FlowLog> {
        self.flows.as_deref()
    }
    /// A protocol message was put on the network (`sent`: false when its link was cut).
    #[inline]
    pub fn flow_sent(&mut self, t: Instant, from: Addr, to: Addr, msg: &Msg, sent: bool) {
        if let Some(f) = self.flows.as_deref_mut() {
            f.sent(t, from, to, msg.name(), sent, self.events.len());
        }
    }
    /// A protocol message reached the end of its link (`ok`: false when it was lost there).
    #[inline]
    pub fn flow_arrived(&mut self, t: Instant, from: Addr, to: Addr, ok: bool) {
        if let Some(f) = self.flows.as_deref_mut() {
            f.arrived(t, from, to, ok);
        }
    }
    /// Whether events are wanted at all.
    #[inline]
    pub fn on(&self) -> bool {
        self.mode != TraceMode::Off
    }
    /// Record one event.
    #[inline]
    pub fn record(&mut self, t: Instant, ev: TraceEvent) {
        if self.mode != TraceMode::Off {
            self.record_on(t, ev);
        }
    }

    fn record_on(&mut self, t: Instant, ev: TraceEvent) {
        match self.mode {
            TraceMode::Off => {}
            TraceMode::Hash => {
                t.0.hash(&mut self.hash);
                ev.hash(&mut self.hash);
            }
            TraceMode::Full => {
                t.0.hash(&mut self.hash);
                ev.hash(&mut self.hash);
                self.events.push((t, ev));
            }
        }
    }
    /// The hash of everything recorded.
    pub fn hash(&self) -> u64 {
        self.hash.0
    }
    /// The recorded events (Full mode).
    pub fn events(&self) -> &[(Instant, TraceEvent)] {
        &self.events
    }
    /// The whole trace as JSON Lines.
    pub fn to_jsonl(&self) -> String {
        let mut s = String::with_capacity(self.events.len() * 96);
        for (t, e) in &self.events {
            s.push_str(&e.to_json(*t));
            s.push('\n');
        }
        s
    }
}

/// A canonical, readable rebalance log of a full trace: which shard moved from which node to
/// which, when, and why (first allocation, rebalance hand-off, fail-over after its node left),
/// plus coordinator starts and timed-out hand-offs. Snapshot tests compare it, so a change to
/// the protocol or the allocation strategy shows up as a reviewable diff.
pub fn rebalance_log(events: &[(Instant, TraceEvent)]) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let mut home: BTreeMap<shardsim_core::ids::ShardId, NodeId> = BTreeMap::new();
    let mut handing_off: BTreeMap<shardsim_core::ids::ShardId, NodeId> = BTreeMap::new();
    let mut down: BTreeMap<NodeId, String> = BTreeMap::new();
    let mut out = String::new();
    for (t, e) in events {
        match e {
            TraceEvent::CoordinatorStarted { node, replayed, .. } => {
                let _ = writeln!(
                    out,
                    "{t} coordinator started on node {} (replayed {replayed} events)",
                    node.0
                );
            }
            TraceEvent::NodeDown { node, reason, .. } => {
                down.insert(*node, reason.clone());
                let _ = writeln!(out, "{t} node {} down: {reason}", node.0);
            }
            TraceEvent::NodeUp { node, .. } => {
                down.remove(node);
            }
            TraceEvent::RebalanceStarted { shard, from, .. } => {
                handing_off.insert(*shard, *from);
            }
            TraceEvent::RebalanceDone {
                shard, ok: false, ..
            } => {
                handing_off.remove(shard);
                let _ = writeln!(out, "{t} shard {shard}: hand-off timed out, stays put");
            }
            TraceEvent::ShardAllocated { shard, node } => {
                let why = match (home.get(shard), handing_off.remove(shard)) {
                    (None, _) => format!("shard {shard}: allocated to node {}", node.0),
                    (Some(prev), Some(_)) => {
                        format!(
                            "shard {shard}: node {} -> node {} (rebalance)",
                            prev.0, node.0
                        )
                    }
                    (Some(prev), None) => match down.get(prev) {
                        Some(r) => format!(
                            "shard {shard}: node {} -> node {} (fail-over: node {} {r})",
                            prev.0, node.0, prev.0
                        ),
                        None => format!(
                            "shard {shard}: node {} -> node {} (re-allocated)",
                            prev.0, node.0
                        ),
                    },
                };
                home.insert(*shard, *node);
                let _ = writeln!(out, "{t} {why}");
            }
            _ => {}
        }
    }
    out
}
