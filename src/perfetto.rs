//! `shardsim run SCENARIO --seed N --perfetto FILE`: one schedule as a Chrome trace-event JSON
//! file, which ui.perfetto.dev and chrome://tracing open.
//!
//! - A process per node (`node 0`, ...), one for the journal and one for the world (faults,
//!   violations, the liveness phase), each named by a `process_name` metadata event.
//! - A thread (track) per actor of a node, named by `thread_name`: `membership`, `region`,
//!   `coordinator`, `singleton manager`, and one per Shard (`shard 3`: the Shard actor and its
//!   entities' starts, stops and deliveries).
//! - Every trace event is a slice (`"ph":"X"`) on its actor's track, with the trace line as its
//!   `args`; faults and violations are also global instant events (`"ph":"i"`, `"s":"g"`), and
//!   a role's broken rule a process instant.
//! - A protocol message is a flow (`"ph":"s"` on the sender's track at the send, `"ph":"f"`
//!   with `"bp":"e"` on the receiver's track at the delivery, one `id` per message) between a
//!   `send <Msg>` slice and the delivery's slice.
//! - `ts` is simulated time in µs. Slices are 1 ns long; the k-th slice within one simulated
//!   µs (over all tracks, in the order the world applied them) starts k ns into it (so slices
//!   never overlap, each flow binds to its own slice, and a send comes before its delivery; written as `t + (k + 0.1)/1000`, since viewers truncate µs to whole ns); the whole
//!   µs is the event's simulated time.
//!
//! The trace records a protocol message at its delivery only (`TraceEvent::Msg`: from, to,
//! actor, message). For the flows, the run that writes the file also keeps a [`FlowLog`], a
//! small recorder outside the trace (not hashed, not in the JSON Lines file): the send time,
//! sending actor and receiving actor of each message the world put on the network. The network
//! is FIFO per directed node pair (`sim::net`; a paused node's deferred events keep their
//! order), so the message arriving on a link is the oldest one pending on it: the log pairs them
//! exactly, and its arrivals come in the order of the trace's `Msg` and `DeadLetter` events.
//! Messages lost on a cut link get a `send <Msg> (lost)` slice and no flow.

use serde_json::{json, Value};
use shardsim_core::ids::{NodeId, ShardId};
use shardsim_core::protocol::{Role, Timer};
use shardsim_core::time::Instant;
use shardsim_harness::trace::{FlowLog, TraceEvent};
use std::collections::{BTreeMap, BTreeSet};

/// A track of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Track {
    World,
    Journal,
    Membership,
    Region,
    Coordinator,
    SingletonManager,
    Shard(u32),
}

impl Track {
    fn of(role: Role) -> Track {
        match role {
            Role::Region => Track::Region,
            Role::Coordinator => Track::Coordinator,
            Role::SingletonManager => Track::SingletonManager,
        }
    }

    fn index(self) -> u32 {
        match self {
            Track::World | Track::Journal => 1,
            Track::Membership => 1,
            Track::Region => 2,
            Track::Coordinator => 3,
            Track::SingletonManager => 4,
            Track::Shard(s) => 100 + s.min(99_000),
        }
    }

    fn name(self) -> String {
        match self {
            Track::World => "faults, checks".into(),
            Track::Journal => "journal".into(),
            Track::Membership => "membership".into(),
            Track::Region => "region".into(),
            Track::Coordinator => "coordinator".into(),
            Track::SingletonManager => "singleton manager".into(),
            Track::Shard(s) => format!("shard {s}"),
        }
    }
}

/// Where an event goes: a process (`None`: the world; `Some(node)`) and a track.
type Place = (Option<NodeId>, Track);

/// The world's process id.
pub const WORLD_PID: u32 = 1;
/// The journal's process id.
pub const JOURNAL_PID: u32 = 2;

/// The process id of a node.
pub fn node_pid(node: NodeId) -> u32 {
    10 + node.0
}

fn pid_of(p: Place) -> u32 {
    match p {
        (_, Track::World) => WORLD_PID,
        (_, Track::Journal) => JOURNAL_PID,
        (Some(n), _) => node_pid(n),
        (None, _) => WORLD_PID,
    }
}

/// Thread ids are unique over the whole file (some viewers key threads by tid alone).
fn tid_of(p: Place) -> u32 {
    pid_of(p) * 100_000 + p.1.index()
}

fn timer_track(t: &Timer) -> Track {
    match t {
        Timer::RebalanceTick
        | Timer::ResendShardHost(_)
        | Timer::HandOffTimeout(_)
        | Timer::StateInitialized
        | Timer::DelayedShardRegionTerminated(_)
        | Timer::PersistTimeout => Track::Coordinator,
        Timer::Shard { shard, .. } => Track::Shard(shard.0),
        _ => Track::Region,
    }
}

/// What the exporter keeps while walking the trace.
#[derive(Default)]
struct State {
    /// Entity incarnation → shard (from `EntityStarted`).
    shard_of: BTreeMap<u64, ShardId>,
    /// The node of the latest coordinator to start.
    coordinator: Option<NodeId>,
}

/// The event's place; `None` for the world's global events.
fn place(e: &TraceEvent, st: &mut State) -> Place {
    use TraceEvent as E;
    let shard_track = |node: NodeId, shard: ShardId| (Some(node), Track::Shard(shard.0));
    match e {
        E::NodeUp { node, .. }
        | E::NodeDown { node, .. }
        | E::MemberView { node, .. }
        | E::Cluster { node, .. }
        | E::JoinAgain { node, .. }
        | E::GracefulLeave { node, .. } => (Some(*node), Track::Membership),
        E::EntityStarted {
            entity: _,
            shard,
            node,
            incarnation,
        } => {
            st.shard_of.insert(*incarnation, *shard);
            shard_track(*node, *shard)
        }
        E::EntityStopped {
            node, incarnation, ..
        }
        | E::Deliver {
            node, incarnation, ..
        } => match st.shard_of.get(incarnation) {
            Some(s) => shard_track(*node, *s),
            None => (Some(*node), Track::Region),
        },
        E::Send { node, .. }
        | E::Drop { node, .. }
        | E::RegionCoordinator { node, .. }
        | E::RegionStopped { node, .. }
        | E::RegionRestarted { node } => (Some(*node), Track::Region),
        E::Msg { to, actor, .. } => (Some(*to), Track::of(*actor)),
        E::DeadLetter { to, .. } => (Some(*to), Track::Region),
        E::Timer { node, timer } => (Some(*node), timer_track(timer)),
        E::Persisted { .. } => (None, Track::Journal),
        E::CoordinatorStarted { node, .. } => {
            st.coordinator = Some(*node);
            (Some(*node), Track::Coordinator)
        }
        E::PersistAcked { node, .. }
        | E::CoordinatorStopped { node, .. }
        | E::RecoveryFailed { node, .. }
        | E::CoordinatorStateLoaded { node, .. }
        | E::CoordinatorStateUpdated { node, .. }
        | E::AllocationDecided { node, .. } => (Some(*node), Track::Coordinator),
        E::RebalanceStarted { coordinator, .. } | E::RebalanceDone { coordinator, .. } => {
            (Some(*coordinator), Track::Coordinator)
        }
        // The coordinator that allocated is the latest to start (the event names the region).
        E::ShardAllocated { node, .. } => match st.coordinator {
            Some(c) => (Some(c), Track::Coordinator),
            None => (Some(*node), Track::Region),
        },
        E::ShardHosted { shard, node }
        | E::ShardUnhosted { shard, node }
        | E::ShardFailed { node, shard, .. }
        | E::StoreWrite { node, shard, .. }
        | E::StoreRead { node, shard, .. } => shard_track(*node, *shard),
        E::RoleBreach { node, role, .. } => (
            Some(*node),
            if role == "coordinator" {
                Track::Coordinator
            } else {
                Track::Region
            },
        ),
        _ => (None, Track::World),
    }
}

/// A slice's name: the message for a delivery, else the event kind with its ids.
fn slice_name(e: &TraceEvent, args: &Value) -> String {
    let s = |k: &str| {
        args.get(k).map(|v| match v {
            Value::String(x) => x.clone(),
            x => x.to_string(),
        })
    };
    match e {
        TraceEvent::Msg { msg, .. } => msg.name().to_string(),
        TraceEvent::DeadLetter { msg, .. } => format!("dead letter {}", msg.name()),
        TraceEvent::Timer { .. } => format!("timer {}", s("timer").unwrap_or_default()),
        TraceEvent::Deliver { .. } | TraceEvent::Send { .. } | TraceEvent::Drop { .. } => {
            format!(
                "{} {}→{} #{}",
                e.kind(),
                s("sender").unwrap_or_default(),
                s("entity").unwrap_or_default(),
                s("seq").unwrap_or_default()
            )
        }
        _ => {
            let mut n = e.kind().to_string();
            for k in ["entity", "shard"] {
                if let Some(v) = s(k) {
                    n.push(' ');
                    n.push_str(&v);
                }
            }
            n
        }
    }
}

/// One item of the output before layout.
struct Item {
    t: u64,
    /// Order among the items of one µs: 2·i + 1 for trace event i, 2·L for a send made after
    /// L trace events.
    order: u64,
    place: Place,
    name: String,
    cat: &'static str,
    args: Value,
    /// Flow id leaving this slice (`s`) or arriving at it (`f`).
    flow_out: Option<u64>,
    flow_in: Option<u64>,
    /// Also a global (`g`) or process (`p`) instant event.
    instant: Option<&'static str>,
}

/// What the export found (for the caller's summary line and the file's `otherData`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Slices written.
    pub slices: u64,
    /// Flows (sender to receiver) written.
    pub flows: u64,
    /// Instant events written.
    pub instants: u64,
    /// Messages lost in flight (a send slice without a flow).
    pub lost: u64,
}

/// The Chrome trace-event JSON of a full trace (`events`) and its flow log (without one, no
/// flows are drawn). `meta` goes into `otherData` (scenario, seed, ...).
pub fn export(
    events: &[(Instant, TraceEvent)],
    flows: Option<&FlowLog>,
    meta: &[(&str, String)],
) -> (String, ExportStats) {
    let mut st = State::default();
    let mut items: Vec<Item> = Vec::with_capacity(events.len() * 2);
    // The log's arrivals pair with the trace's Msg and DeadLetter events, in order; if they do
    // not (a log from another run), no flow is drawn.
    let arrivals = flows.map(|f| f.arrived.as_slice()).unwrap_or(&[]);
    let deliveries = events
        .iter()
        .filter(|(_, e)| matches!(e, TraceEvent::Msg { .. } | TraceEvent::DeadLetter { .. }))
        .count();
    let paired = flows.is_some() && arrivals.len() == deliveries;
    let mut next_arrival = 0usize;
    let mut next_flow = 1u64;
    let mut stats = ExportStats::default();
    for (i, (t, e)) in events.iter().enumerate() {
        let args: Value = e.to_value(*t);
        let mut p = place(e, &mut st);
        let mut flow_in = None;
        if let TraceEvent::Msg { from, to, msg, .. } | TraceEvent::DeadLetter { from, to, msg } = e
        {
            if paired {
                let f = arrivals[next_arrival];
                next_arrival += 1;
                if f.msg == msg.name() && f.from_node == *from && f.to_node == *to {
                    if matches!(e, TraceEvent::DeadLetter { .. }) {
                        p = (Some(*to), Track::of(f.to));
                    }
                    let id = next_flow;
                    next_flow += 1;
                    flow_in = Some(id);
                    items.push(Item {
                        t: f.sent.0,
                        order: 2 * f.after as u64,
                        place: (Some(f.from_node), Track::of(f.from)),
                        name: format!("send {}", f.msg),
                        cat: "msg",
                        args: json!({
                            "msg": f.msg,
                            "to_node": f.to_node.0,
                            "to_actor": Track::of(f.to).name(),
                            "delivered_us": t.0,
                        }),
                        flow_out: Some(id),
                        flow_in: None,
                        instant: None,
                    });
                }
            }
        }
        let instant = match e {
            TraceEvent::Fault { .. } | TraceEvent::Violation { .. } => Some("g"),
            TraceEvent::RoleBreach { .. } => Some("p"),
            _ => None,
        };
        let name = match e {
            TraceEvent::Violation { invariant, .. } => format!("VIOLATION {invariant}"),
            TraceEvent::Fault { fault } => format!("fault {}", fault.kind_name()),
            _ => slice_name(e, &args),
        };
        items.push(Item {
            t: t.0,
            order: 2 * i as u64 + 1,
            place: p,
            name,
            cat: match e {
                TraceEvent::Msg { .. } | TraceEvent::DeadLetter { .. } => "msg",
                TraceEvent::Fault { .. } => "fault",
                TraceEvent::Violation { .. } | TraceEvent::RoleBreach { .. } => "violation",
                _ => "event",
            },
            args,
            flow_out: None,
            flow_in,
            instant,
        });
    }
    if let Some(f) = flows {
        for l in &f.lost {
            items.push(Item {
                t: l.sent.0,
                order: 2 * l.after as u64,
                place: (Some(l.from_node), Track::of(l.from)),
                name: format!("send {} (lost)", l.msg),
                cat: "msg",
                args: json!({
                    "msg": l.msg,
                    "to_node": l.to_node.0,
                    "to_actor": Track::of(l.to).name(),
                    "lost_us": l.arrived.0,
                }),
                flow_out: None,
                flow_in: None,
                instant: None,
            });
            stats.lost += 1;
        }
    }
    items.sort_by_key(|it| (it.t, it.order));
    // Layout: the k-th item of one µs (over all tracks, in causal order) starts k ns into it,
    // so a send never lies after its delivery in the same µs.
    let mut slot: (u64, u64) = (u64::MAX, 0);
    let mut places: BTreeSet<(u32, u32, Place)> = BTreeSet::new();
    let mut out: Vec<Value> = Vec::with_capacity(items.len() * 2 + 32);
    for it in &items {
        let (pid, tid) = (pid_of(it.place), tid_of(it.place));
        places.insert((pid, tid, it.place));
        if slot.0 != it.t {
            slot = (it.t, 0);
        }
        let k = slot.1.min(999);
        slot.1 += 1;
        // Viewers turn µs into whole ns by truncation: a tenth of a ns above k keeps k.
        let ts = if k == 0 {
            it.t as f64
        } else {
            it.t as f64 + (k as f64 + 0.1) / 1000.0
        };
        out.push(json!({
            "name": it.name, "cat": it.cat, "ph": "X", "ts": ts, "dur": 0.001,
            "pid": pid, "tid": tid, "args": it.args,
        }));
        stats.slices += 1;
        if let Some(id) = it.flow_out {
            out.push(json!({
                "name": it.name.trim_start_matches("send "), "cat": "flow", "ph": "s",
                "id": id, "ts": ts, "pid": pid, "tid": tid,
            }));
        }
        if let Some(id) = it.flow_in {
            out.push(json!({
                "name": flow_name(&it.name), "cat": "flow", "ph": "f", "bp": "e",
                "id": id, "ts": ts, "pid": pid, "tid": tid,
            }));
            stats.flows += 1;
        }
        if let Some(scope) = it.instant {
            out.push(json!({
                "name": it.name, "cat": it.cat, "ph": "i", "s": scope, "ts": it.t,
                "pid": pid, "tid": tid, "args": it.args,
            }));
            stats.instants += 1;
        }
    }
    // Metadata: names and order of processes and tracks.
    let mut meta_ev: Vec<Value> = Vec::new();
    let mut named: BTreeSet<u32> = BTreeSet::new();
    for (pid, tid, p) in &places {
        if named.insert(*pid) {
            let (name, sort) = match p {
                (_, Track::World) => ("world (faults, violations)".to_string(), 0),
                (_, Track::Journal) => ("journal".to_string(), 1),
                (Some(n), _) => (format!("node {}", n.0), 2 + n.0 as u64),
                (None, _) => ("world".to_string(), 0),
            };
            meta_ev.push(
                json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                "args": {"name": name}}),
            );
            meta_ev.push(
                json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                "args": {"sort_index": sort}}),
            );
        }
        meta_ev.push(
            json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": {"name": p.1.name()}}),
        );
        meta_ev.push(
            json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
            "args": {"sort_index": p.1.index()}}),
        );
    }
    meta_ev.extend(out);
    let mut other = serde_json::Map::new();
    for (k, v) in meta {
        other.insert((*k).to_string(), json!(v));
    }
    other.insert(
        "flows".into(),
        json!(if paired {
            "each protocol message from its send (recorded outside the trace) to its delivery"
        } else {
            "none: no send times recorded for this trace"
        }),
    );
    let doc = json!({
        "traceEvents": meta_ev,
        "displayTimeUnit": "ms",
        "otherData": other,
    });
    (doc.to_string(), stats)
}

/// A flow's name at its end: the message (`DeadLetter` slices carry a prefix).
fn flow_name(slice: &str) -> &str {
    slice.trim_start_matches("dead letter ")
}
