//! The causal recorder of a run (`shardsim explain`): beside the trace, one
//! [`Step`] per event the world applies (a message delivered, a timer fired, a journal write
//! served, a fault injected, ...), with the step that scheduled it (the send of a message, the
//! setting of a timer, the write a journal acknowledgement answers) and the index of the first
//! trace event it produced. It is off unless asked for ([`crate::sim::World::with_causal`]): it
//! draws nothing and records nothing in the trace, so the trace and its hash are those of a run
//! without it.

use super::{Ev, World};
use crate::trace::StepLine;
use shardsim_core::ids::{EntityId, NodeId, ShardId};
use shardsim_core::node::NodeTimer;
use shardsim_core::protocol::{
    Addr, CoordinatorEvent, Local, Msg, Role, ShardMsg, ShardTimer, StoreOp, StoreReplyKind, Timer,
};
use std::collections::{BTreeMap, VecDeque};

/// No step: an event scheduled before the run began (joins, the fault plan).
pub const NO_STEP: u32 = u32::MAX;
/// The node id of world-level lanes (the journal, the fault injector).
pub const WORLD: u32 = u32::MAX;

/// One applied event of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Simulated µs.
    pub t: u64,
    /// The step whose handling scheduled this event ([`NO_STEP`]: scheduled up front).
    pub cause: u32,
    /// The node that handles it ([`WORLD`] for the journal and the fault injector).
    pub node: u32,
    /// The actor that handles it: `region`, `coordinator`, `singleton`, `shard`, `entity`,
    /// `membership`, `replicator`, `store`, `journal`, `sender`, `node`, `faults`.
    pub actor: &'static str,
    /// The shard of a Shard's or an entity's lane, or that the message is about.
    pub shard: Option<u32>,
    /// The entity of an entity's lane.
    pub entity: Option<u32>,
    /// What it handles, in Akka's names (`HostShard`, `ResendShardHost`, ...).
    pub what: String,
    /// The sending node of a message between nodes.
    pub from: Option<u32>,
    /// The (sender, entity, seq) of a user message it carries.
    pub user: Option<(u32, u32, u64)>,
    /// The event was lost: its link was cut or its receiver was gone.
    pub cut: bool,
    /// The index of its first trace event (its events run to the next step's).
    pub first_event: u32,
}

impl Step {
    /// Its line in a trace file: step number `i`, or `None` for a `lost` line.
    pub fn line(&self, i: Option<usize>) -> StepLine {
        StepLine {
            t: self.t,
            ev: if i.is_some() { "step" } else { "lost" }.into(),
            step: i.map(|i| i as u64),
            cause: (self.cause != NO_STEP).then_some(u64::from(self.cause)),
            node: (self.node != WORLD).then_some(self.node),
            actor: self.actor.into(),
            what: self.what.clone(),
            shard: self.shard.map(ShardId),
            entity: self.entity.map(EntityId),
            from: self.from,
            user: self.user,
            cut: self.cut && i.is_some(),
        }
    }
}

/// The causal log of one run.
#[derive(Clone, Debug, Default)]
pub struct CausalLog {
    /// Every applied event, in order.
    pub steps: Vec<Step>,
    /// The step that pushed each queued event, by the queue's sequence number.
    cause_of_seq: Vec<u32>,
    /// The step being applied.
    cur: u32,
    /// Sequence numbers of the events a paused node deferred, in its arrival order.
    deferred: BTreeMap<u32, VecDeque<u64>>,
    /// Messages and journal writes lost when sent (their link was cut): each with the step
    /// that sent it, as a step of its receiver that never came (`cut`, no trace events).
    pub lost: Vec<Step>,
}

/// The name of a value's variant from its `Debug` text (`Gossip { .. }` → `Gossip`).
fn variant(dbg: &str) -> String {
    dbg.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

impl CausalLog {
    pub(super) fn new() -> Self {
        CausalLog {
            cur: NO_STEP,
            ..Default::default()
        }
    }

    /// The queue gave sequence number `seq` to an event pushed now.
    #[inline]
    pub(super) fn pushed(&mut self, seq: u64) {
        let i = seq as usize;
        if self.cause_of_seq.len() <= i {
            self.cause_of_seq.resize(i + 1, NO_STEP);
        }
        self.cause_of_seq[i] = self.cur;
    }

    fn lost_step(&self, t: u64) -> Step {
        Step {
            t,
            cause: self.cur,
            node: WORLD,
            actor: "journal",
            shard: None,
            entity: None,
            what: String::new(),
            from: None,
            user: None,
            cut: true,
            first_event: 0,
        }
    }

    /// A protocol message could not be sent: its link is cut.
    pub(super) fn lost_msg(&mut self, t: u64, from: Addr, to: Addr, msg: &Msg) {
        let mut s = self.lost_step(t);
        s.node = to.node.0;
        s.from = Some(from.node.0);
        s.actor = role_name(to.role);
        s.shard = msg.shard().map(|x| x.0);
        s.what = msg_what(msg);
        if let Msg::User(e) = msg {
            s.user = Some((e.sender.0, e.entity.0, e.seq));
            s.entity = Some(e.entity.0);
        }
        self.lost.push(s);
    }

    /// A coordinator's journal write could not be sent: the journal is cut off.
    pub(super) fn lost_write(&mut self, t: u64, node: NodeId, event: &CoordinatorEvent) {
        let mut s = self.lost_step(t);
        s.from = Some(node.0);
        s.shard = event_shard(&format!("{event:?}"));
        s.what = format!("write {}", variant(&format!("{event:?}")));
        self.lost.push(s);
    }

    pub(super) fn defer(&mut self, node: u32, seq: u64) {
        self.deferred.entry(node).or_default().push_back(seq);
    }

    pub(super) fn undefer(&mut self, node: u32) -> u64 {
        self.deferred
            .get_mut(&node)
            .and_then(|q| q.pop_front())
            .unwrap_or(0)
    }

    /// The world is about to apply `ev` (queue sequence `seq`); `first_event` is the trace's
    /// length now.
    pub(super) fn begin(&mut self, w: &World, seq: u64, ev: &Ev, first_event: usize) {
        let cause = self
            .cause_of_seq
            .get(seq as usize)
            .copied()
            .unwrap_or(NO_STEP);
        let mut s = Step {
            t: w.now.0,
            cause,
            node: WORLD,
            actor: "node",
            shard: None,
            entity: None,
            what: String::new(),
            from: None,
            user: None,
            cut: false,
            first_event: u32::try_from(first_event).unwrap_or(u32::MAX),
        };
        describe(w, ev, &mut s);
        self.cur = u32::try_from(self.steps.len()).unwrap_or(NO_STEP);
        self.steps.push(s);
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Region => "region",
        Role::Coordinator => "coordinator",
        Role::SingletonManager => "singleton",
    }
}

fn msg_what(m: &Msg) -> String {
    match m {
        Msg::ShardHome { region, .. } => format!("{}(node {})", m.name(), region.node.0),
        Msg::Register { region }
        | Msg::GracefulShutdownReq { region }
        | Msg::RegionStopped { region } => format!("{}(node {})", m.name(), region.node.0),
        _ => m.name().to_string(),
    }
}

/// Akka's name and lane of a timer (the names of the trace's `timer` events).
fn timer_what(t: &NodeTimer) -> (&'static str, String, Option<u32>) {
    match t {
        NodeTimer::Role(r) => {
            let (lane, name, shard) = match r {
                Timer::RegionRetry => ("region", "Retry", None),
                Timer::RegisterRetry => ("region", "RegisterRetry", None),
                Timer::RebalanceTick => ("coordinator", "RebalanceTick", None),
                Timer::ResendShardHost(s) => ("coordinator", "ResendShardHost", Some(s.0)),
                Timer::HandOffTimeout(s) => ("coordinator", "HandOffTimeout", Some(s.0)),
                Timer::StateInitialized => ("coordinator", "StateInitialized", None),
                Timer::DelayedShardRegionTerminated(_) => {
                    ("coordinator", "DelayedShardRegionTerminated", None)
                }
                Timer::PersistTimeout => ("coordinator", "PersistTimeout", None),
                Timer::RestartShard(s) => ("region", "RestartShard", Some(s.0)),
                Timer::StarterRetry(s) => ("region", "RememberEntityStarterRetry", Some(s.0)),
                Timer::GracefulShutdownTimeout => ("region", "GracefulShutdownTimeout", None),
                Timer::Shard { shard, kind, .. } => (
                    "shard",
                    match kind {
                        ShardTimer::HandOffStopTimeout => "HandOffStopTimeout",
                        ShardTimer::PassivationTimedOut(_) => "PassivationTimedOut",
                        ShardTimer::PassivateIdleTick => "PassivateIdleTick",
                        ShardTimer::RestartTerminatedEntity(_) => "RestartTerminatedEntity",
                        ShardTimer::RememberEntityTimeout => "RememberEntityTimeout",
                    },
                    Some(shard.0),
                ),
            };
            (lane, name.to_string(), shard)
        }
        NodeTimer::Membership(m) => ("membership", variant(&format!("{m:?}")), None),
        NodeTimer::SingletonCheck => ("singleton", "SingletonCheck".into(), None),
        NodeTimer::JoinCheck => ("membership", "SeedNodeTimeout".into(), None),
        NodeTimer::Repl(r) => ("replicator", variant(&format!("{r:?}")), None),
        NodeTimer::HandOverRetry => ("singleton", "HandOverToMe retry".into(), None),
        NodeTimer::ExitingTimeout => ("node", "cluster-exiting timeout".into(), None),
    }
}

fn describe(w: &World, ev: &Ev, s: &mut Step) {
    let journal = w.net.journal();
    match ev {
        Ev::Deliver {
            from,
            to,
            msg,
            epoch,
        } => {
            s.node = to.node.0;
            s.from = Some(from.node.0);
            s.actor = role_name(to.role);
            s.shard = msg.shard().map(|x| x.0);
            s.what = msg_what(msg);
            if let Msg::User(e) = msg {
                s.user = Some((e.sender.0, e.entity.0, e.seq));
                s.entity = Some(e.entity.0);
            }
            let slot = &w.c.slots[to.node.0 as usize];
            let present =
                slot.inc == to.inc && slot.node.as_ref().is_some_and(|n| n.has_role(to.role));
            s.cut = !w.net.ok(from.node.0 as usize, to.node.0 as usize, *epoch) || !present;
        }
        Ev::Cluster {
            from,
            to,
            msg,
            epoch,
        } => {
            s.node = to.node.0;
            s.from = Some(from.node.0);
            s.actor = "membership";
            s.what = variant(&format!("{msg:?}"));
            s.cut = !w.net.ok(from.node.0 as usize, to.node.0 as usize, *epoch)
                || !w.running(to.node, to.inc);
        }
        Ev::Repl {
            from,
            to,
            msg,
            epoch,
        } => {
            s.node = to.node.0;
            s.from = Some(from.node.0);
            s.actor = "replicator";
            s.what = variant(&format!("{msg:?}"));
            s.cut = !w.net.ok(from.node.0 as usize, to.node.0 as usize, *epoch)
                || !w.running(to.node, to.inc);
        }
        Ev::Timer {
            node, inc, timer, ..
        } => {
            let (lane, what, shard) = timer_what(timer);
            s.node = node.0;
            s.actor = lane;
            s.what = what;
            s.shard = shard;
            s.cut = !w.running(*node, *inc);
        }
        Ev::JournalWrite {
            node, event, epoch, ..
        } => {
            s.actor = "journal";
            s.from = Some(node.0);
            s.shard = event_shard(&format!("{event:?}"));
            s.what = format!("write {}", variant(&format!("{event:?}")));
            s.cut = !w.net.ok(node.0 as usize, journal, *epoch)
                || !w.c.journal.available
                || w.c.journal.failing;
        }
        Ev::Persisted {
            node, inc, epoch, ..
        } => {
            s.node = node.0;
            s.actor = "coordinator";
            s.what = "persisted (journal ack)".into();
            s.cut = !w.net.ok(journal, node.0 as usize, *epoch) || !w.running(*node, *inc);
        }
        Ev::Join { node } => {
            s.node = node.0;
            s.what = "node starts and joins".into();
        }
        Ev::Send { sender } => {
            s.node = w.c.workload.node_of(*sender).0;
            s.actor = "sender";
            s.what = "user message".into();
        }
        Ev::Fault { .. } => {
            s.actor = "faults";
            s.what = "fault".into();
        }
        Ev::LivenessPhase => {
            s.actor = "faults";
            s.what = "liveness phase: heal everything".into();
        }
        Ev::EntityActs {
            node,
            inc,
            entity,
            act,
            ..
        } => {
            s.node = node.0;
            s.actor = "entity";
            s.entity = Some(entity.0);
            s.shard = w.shard_on(*node, *entity).map(|x| x.0);
            s.what = format!("entity {}", variant(&format!("{act:?}")));
            s.cut = !w.running(*node, *inc);
        }
        Ev::Local { node, inc, msg } => {
            s.node = node.0;
            s.cut = !w.running(*node, *inc);
            match msg {
                Local::ToShard { shard, msg, .. } => {
                    s.actor = "shard";
                    s.shard = Some(shard.0);
                    s.what = match msg {
                        ShardMsg::User(e) => {
                            s.user = Some((e.sender.0, e.entity.0, e.seq));
                            "User".into()
                        }
                        ShardMsg::StartEntity { entity, .. } => {
                            format!("StartEntity(e{})", entity.0)
                        }
                        m => variant(&format!("{m:?}")),
                    };
                }
                Local::ShardInitialized { shard, .. } | Local::ShardTerminated { shard, .. } => {
                    s.actor = "region";
                    s.shard = Some(shard.0);
                    s.what = if matches!(msg, Local::ShardInitialized { .. }) {
                        "ShardInitialized".into()
                    } else {
                        "Terminated(Shard)".into()
                    };
                }
                Local::ToEntity { shard, env, .. } => {
                    s.actor = "entity";
                    s.shard = Some(shard.0);
                    s.entity = Some(env.entity.0);
                    s.user = Some((env.sender.0, env.entity.0, env.seq));
                    s.what = "User".into();
                }
                Local::StopEntity {
                    shard,
                    entity,
                    reason,
                    ..
                } => {
                    s.actor = "entity";
                    s.shard = Some(shard.0);
                    s.entity = Some(entity.0);
                    s.what = format!("stop message ({})", variant(&format!("{reason:?}")));
                }
                Local::Passivate { shard, entity, .. } => {
                    s.actor = "shard";
                    s.shard = Some(shard.0);
                    s.entity = Some(entity.0);
                    s.what = format!("Passivate(e{})", entity.0);
                }
                Local::StartRemembered { shard, entity } => {
                    s.actor = "region";
                    s.shard = Some(shard.0);
                    s.entity = Some(entity.0);
                    s.what = format!("StartEntity(e{}) (remembered)", entity.0);
                }
                Local::EntityTerminated { shard, entity, .. } => {
                    s.actor = "shard";
                    s.shard = Some(shard.0);
                    s.entity = Some(entity.0);
                    s.what = format!("Terminated(e{})", entity.0);
                }
            }
        }
        Ev::Resume { node } => {
            s.node = node.0;
            s.what = "pause ends".into();
        }
        Ev::StoreRequest {
            node, req, epoch, ..
        } => {
            s.actor = "store";
            s.from = Some(node.0);
            s.shard = Some(req.shard.0);
            s.what = store_op(&req.op);
            s.cut = !w.net.ok(node.0 as usize, journal, *epoch) || !w.c.journal.available;
        }
        Ev::DdataStore { node, inc, req } => {
            s.node = node.0;
            s.actor = "store";
            s.shard = Some(req.shard.0);
            s.what = store_op(&req.op);
            s.cut = !w.running(*node, *inc);
        }
        Ev::DdataReply { node, inc, reply }
        | Ev::StoreReply {
            node, inc, reply, ..
        } => {
            s.node = node.0;
            s.actor = "shard";
            s.shard = Some(reply.shard.0);
            s.what = match &reply.kind {
                StoreReplyKind::Remembered(e) => format!("RememberedEntities({})", e.len()),
                k => variant(&format!("{k:?}")),
            };
            s.cut = !w.running(*node, *inc);
            if let Ev::StoreReply { epoch, .. } = ev {
                s.cut |= !w.net.ok(journal, node.0 as usize, *epoch);
            }
        }
    }
}

fn store_op(op: &StoreOp) -> String {
    match op {
        StoreOp::GetEntities => "GetEntities".into(),
        StoreOp::Update { started, stopped } => {
            format!("Update(+{} -{})", started.len(), stopped.len())
        }
    }
}

/// The `shard` of a coordinator event's `Debug` text, if it has one.
fn event_shard(dbg: &str) -> Option<u32> {
    let i = dbg.find("shard: ShardId(")? + "shard: ShardId(".len();
    dbg[i..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}
