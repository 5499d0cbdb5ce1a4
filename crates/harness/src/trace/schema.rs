//! The trace file's schema: how each field of a [`TraceEvent`] is written and read. The event
//! type derives its JSON; the modules here give the fields whose file form is not serde's
//! default (ids as `e5`, `c2` and `"3"`, a protocol message or timer as flat fields of its
//! line, a member as in Akka's gossip), each one function to write and its inverse to read.
//! [`read_line`] is the one reader of trace lines; [`TraceEvent::to_json`] and
//! [`StepLine::to_json`] the one writer.

use super::TraceEvent;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use shardsim_core::ids::{EntityId, NodeId, NodeInc, RegionRef, SenderId, ShardId};
use shardsim_core::membership::{Member, MemberStatus};
use shardsim_core::protocol::{Addr, Envelope, Msg, Role, ShardTimer, Timer};
use shardsim_core::time::Instant;
use std::fmt;

/// Node, shard, entity and sender ids a trace file may name: below this (the simulator's
/// scenarios use a few thousand at most). The checker indexes its tables by these ids, so a
/// file's ids are held to this bound: no line can make a table of billions of slots.
pub const TRACE_ID_BOUND: u32 = 1 << 20;

/// A trace file that could not be read.
#[derive(Debug)]
pub struct TraceFileError {
    /// 1-based line.
    pub line: usize,
    /// The field at fault, if one.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(fl) = &self.field {
            write!(f, ": field `{fl}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One line of a trace file, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A traced event: what the checkers and the trace hash see.
    Event(Instant, TraceEvent),
    /// A causal `step` or `lost` line of `run --trace` (for `explain`; no checker reads it).
    Step(StepLine),
}

impl Line {
    /// The line's simulated time.
    pub fn t(&self) -> Instant {
        match self {
            Line::Event(t, _) => *t,
            Line::Step(s) => Instant(s.t),
        }
    }
}

/// A causal step of the run, as `run --trace` writes it before the events of the step
/// (`sim::causal::Step::line` makes it): `ev` is `step` with its number, or `lost` (a message or
/// journal write lost when sent: a step of its receiver that never came).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepLine {
    /// Simulated µs.
    pub t: u64,
    /// `step` or `lost`.
    pub ev: String,
    /// The step's number (a `step` line only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The step that scheduled it (none: scheduled before the run began).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<u64>,
    /// The handling node (none: the journal or the fault injector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The handling actor (`region`, `coordinator`, `shard`, `entity`, `journal`, ...).
    pub actor: String,
    /// What it handles, in Akka's names.
    pub what: String,
    /// The shard of its lane or message.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_shard")]
    pub shard: Option<ShardId>,
    /// The entity of its lane.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_entity")]
    pub entity: Option<EntityId>,
    /// The sending node of a message between nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    /// The user message it carries: `[sender, entity, seq]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<(u32, u32, u64)>,
    /// Lost to a fault (a numbered step only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl StepLine {
    /// The JSON line (without the newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a step line is plain data")
    }
}

/// An event's line: `t`, then the event.
#[derive(Serialize)]
struct EventLine<'a> {
    t: u64,
    #[serde(flatten)]
    ev: &'a TraceEvent,
}

impl TraceEvent {
    /// The event's JSON line at `t` (without the newline): `t`, `ev` (its kind) and its fields.
    pub fn to_json(&self, t: Instant) -> String {
        serde_json::to_string(&EventLine { t: t.0, ev: self }).expect("a trace event is plain data")
    }

    /// The event's line at `t` as a JSON value (what [`TraceEvent::to_json`] writes, unparsed),
    /// for tools that read its fields by name.
    pub fn to_value(&self, t: Instant) -> Value {
        serde_json::to_value(EventLine { t: t.0, ev: self }).expect("a trace event is plain data")
    }
}

/// Keys whose integer values are node ids, held to [`TRACE_ID_BOUND`] (but in
/// `liveness_phase`, whose `from` and `to` are times).
const NODE_KEYS: [&str; 5] = ["node", "from", "to", "coordinator", "region"];

/// Read one line of a trace file (`lineno`, 1-based, for the error).
pub fn read_line(line: &str, lineno: usize) -> Result<Line, TraceFileError> {
    let err = |field: Option<&str>, message: String| TraceFileError {
        line: lineno,
        field: field.map(str::to_string),
        message,
    };
    let v: Value = serde_json::from_str(line).map_err(|e| err(None, format!("not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| err(None, "not a JSON object".into()))?;
    let t = obj
        .get("t")
        .and_then(Value::as_u64)
        .ok_or_else(|| err(Some("t"), "missing or not an integer".into()))?;
    let ev = obj
        .get("ev")
        .and_then(Value::as_str)
        .ok_or_else(|| err(Some("ev"), "missing or not a string".into()))?;
    for k in NODE_KEYS.into_iter().filter(|_| ev != "liveness_phase") {
        if let Some(n) = obj.get(k).and_then(Value::as_u64) {
            if n >= u64::from(TRACE_ID_BOUND) {
                return Err(err(
                    Some(k),
                    format!("id {n} is beyond the trace reader's bound ({TRACE_ID_BOUND} ids)"),
                ));
            }
        }
    }
    let blame = |e: serde_json::Error| {
        let msg = e.to_string();
        err(field_of(&msg, ev, obj).as_deref(), msg)
    };
    if ev == "step" || ev == "lost" {
        let s = StepLine::deserialize(&v).map_err(blame)?;
        if ev == "step" && s.step.is_none() {
            return Err(err(Some("step"), "missing".into()));
        }
        return Ok(Line::Step(s));
    }
    let e = TraceEvent::deserialize(&v).map_err(blame)?;
    Ok(Line::Event(Instant(t), e))
}

/// The field a reading error names: a missing one, the event kind, or the field whose value
/// the message quotes.
fn field_of(msg: &str, ev: &str, obj: &serde_json::Map<String, Value>) -> Option<String> {
    let quoted = |after: &str| {
        let i = msg.find(after)? + after.len();
        let rest = &msg[i..];
        Some(rest[..rest.find('`')?].to_string())
    };
    if let Some(f) = quoted("missing field `") {
        return Some(f);
    }
    if quoted("unknown variant `").as_deref() == Some(ev) {
        return Some("ev".into());
    }
    // The message names the bad value (`e` is not an entity id, invalid type: string "x").
    obj.iter()
        .filter(|(k, _)| *k != "t" && *k != "ev")
        .find(|(_, x)| {
            let shown = match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            !shown.is_empty()
                && (msg.contains(&format!("`{shown}`"))
                    || msg.contains(&format!("\"{shown}\""))
                    || msg.contains(&format!(" {shown},")))
        })
        .map(|(k, _)| k.clone())
}

/// An id with a letter before its number (`e5`, `c2`) or none (`"3"`), as a string.
fn read_id<'de, D: Deserializer<'de>>(d: D, prefix: &str, what: &str) -> Result<u32, D::Error> {
    let s = String::deserialize(d)?;
    let n: u32 = s
        .strip_prefix(prefix)
        .and_then(|x| x.parse().ok())
        .ok_or_else(|| {
            D::Error::custom(format!("`{s}` is not {what} of the form {prefix}<number>"))
        })?;
    if n >= TRACE_ID_BOUND {
        return Err(D::Error::custom(format!(
            "`{s}`: id {n} is beyond the trace reader's bound ({TRACE_ID_BOUND} ids)"
        )));
    }
    Ok(n)
}

/// The file form of an id type and of its `Option`: a string, `prefix` and the number (`e5`,
/// `c2`, `"3"`), read back with the bound checked.
macro_rules! id_form {
    ($(#[$doc:meta])* $m:ident, $opt:ident, $ty:ident, $prefix:literal, $what:literal) => {
        $(#[$doc])*
        pub(crate) mod $m {
            use super::*;
            pub fn serialize<S: Serializer>(x: &$ty, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(x)
            }
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                read_id(d, $prefix, $what).map($ty)
            }
        }

        $(#[$doc])*
        /// Optional: absent or `null` for none.
        pub(crate) mod $opt {
            use super::*;
            pub fn serialize<S: Serializer>(x: &Option<$ty>, s: S) -> Result<S::Ok, S::Error> {
                match x {
                    Some(x) => s.collect_str(x),
                    None => s.serialize_none(),
                }
            }
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$ty>, D::Error> {
                struct W($ty);
                impl<'de> Deserialize<'de> for W {
                    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<W, D::Error> {
                        super::$m::deserialize(d).map(W)
                    }
                }
                Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
            }
        }
    };
}

id_form!(
    /// [`EntityId`] as `"e5"`.
    entity, opt_entity, EntityId, "e", "an entity id"
);
id_form!(
    /// [`SenderId`] as `"c2"`.
    sender, opt_sender, SenderId, "c", "a sender id"
);
id_form!(
    /// [`ShardId`] as `"3"`.
    shard, opt_shard, ShardId, "", "a shard id"
);

/// A list of [`EntityId`]s as `["e1", "e5"]`.
pub(crate) mod entities {
    use super::*;
    #[derive(Serialize, Deserialize)]
    struct W(#[serde(with = "entity")] EntityId);
    pub fn serialize<S: Serializer>(ids: &[EntityId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(|&e| W(e)))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EntityId>, D::Error> {
        Ok(Vec::<W>::deserialize(d)?.into_iter().map(|w| w.0).collect())
    }
}

/// A [`Role`] as `coordinator`, `region` or `singleton`.
pub(crate) mod role {
    use super::*;
    pub fn serialize<S: Serializer>(r: &Role, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match r {
            Role::Coordinator => "coordinator",
            Role::Region => "region",
            Role::SingletonManager => "singleton",
        })
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        let a = String::deserialize(d)?;
        match a.as_str() {
            "coordinator" => Ok(Role::Coordinator),
            "region" => Ok(Role::Region),
            "singleton" => Ok(Role::SingletonManager),
            _ => Err(D::Error::custom(format!(
                "`{a}` is not an actor (coordinator, region, singleton)"
            ))),
        }
    }
}

/// A [`RegionRef`] as two fields of its line: `region` (the node) and `region_incarnation`.
pub(crate) mod region_fields {
    use super::*;
    #[derive(Deserialize)]
    struct R {
        region: NodeId,
        #[serde(default)]
        region_incarnation: NodeInc,
    }
    pub fn serialize<S: Serializer>(r: &RegionRef, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("region", &r.node)?;
        m.serialize_entry("region_incarnation", &r.inc)?;
        m.end()
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RegionRef, D::Error> {
        let r = R::deserialize(d)?;
        Ok(RegionRef {
            node: r.region,
            inc: r.region_incarnation,
        })
    }
}

/// An optional [`RegionRef`] as `{"node", "incarnation"}` or `null`.
pub(crate) mod opt_region {
    use super::*;
    #[derive(Serialize, Deserialize)]
    struct R {
        node: NodeId,
        incarnation: NodeInc,
    }
    pub fn serialize<S: Serializer>(r: &Option<RegionRef>, s: S) -> Result<S::Ok, S::Error> {
        r.map(|r| R {
            node: r.node,
            incarnation: r.inc,
        })
        .serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RegionRef>, D::Error> {
        Ok(Option::<R>::deserialize(d)?.map(|r| RegionRef {
            node: r.node,
            inc: r.incarnation,
        }))
    }
}

/// A member view: each member `{"node", "incarnation", "up_number", "status", "hosting"}`,
/// and `"app_version"` when it is not 0.
pub(crate) mod members {
    use super::*;
    #[derive(Serialize, Deserialize)]
    struct M {
        node: NodeId,
        incarnation: NodeInc,
        up_number: u32,
        status: MemberStatus,
        hosting: bool,
        #[serde(default, skip_serializing_if = "is_zero")]
        app_version: u32,
    }
    fn is_zero(x: &u32) -> bool {
        *x == 0
    }
    pub fn serialize<S: Serializer>(ms: &[Member], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ms.iter().map(|m| M {
            node: m.node,
            incarnation: m.inc,
            up_number: m.up_number,
            status: m.status,
            hosting: m.hosting,
            app_version: m.app_version,
        }))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Member>, D::Error> {
        Ok(Vec::<M>::deserialize(d)?
            .into_iter()
            .map(|m| Member {
                node: m.node,
                inc: m.incarnation,
                up_number: m.up_number,
                status: m.status,
                hosting: m.hosting,
                app_version: m.app_version,
            })
            .collect())
    }
}

/// The fields a protocol message adds to its line. Every message has `msg` (Akka's name);
/// then what it carries: `shard`, `sender`/`entity`/`seq` (a user message), `region` and
/// `region_incarnation` (the region it names), `for_shard`, `coordinator` (a relayed ack).
#[derive(Default, Serialize, Deserialize)]
struct MsgLine {
    msg: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_shard")]
    shard: Option<ShardId>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_sender")]
    sender: Option<SenderId>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_entity")]
    entity: Option<EntityId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region_incarnation: Option<NodeInc>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_shard")]
    for_shard: Option<ShardId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    coordinator: Option<Addr>,
}

/// A protocol [`Msg`] as fields of its line ([`MsgLine`]).
pub(crate) mod msg_fields {
    use super::*;

    pub fn serialize<S: Serializer>(m: &Msg, s: S) -> Result<S::Ok, S::Error> {
        let mut l = MsgLine {
            msg: m.name().into(),
            shard: m.shard(),
            ..MsgLine::default()
        };
        let mut region = |r: &RegionRef| {
            l.region = Some(r.node);
            l.region_incarnation = Some(r.inc);
        };
        match m {
            Msg::User(e) => {
                l.sender = Some(e.sender);
                l.entity = Some(e.entity);
                l.seq = Some(e.seq);
            }
            Msg::ShardHome { region: r, .. }
            | Msg::Register { region: r }
            | Msg::RegisterProxy { proxy: r }
            | Msg::GracefulShutdownReq { region: r }
            | Msg::RegionStopped { region: r }
            | Msg::BeginHandOffAck { region: r, .. } => region(r),
            Msg::BeginHandOffAckRelay {
                region: r,
                coordinator,
                ..
            } => {
                region(r);
                l.coordinator = Some(*coordinator);
            }
            Msg::StartEntity {
                entity,
                starter,
                for_shard,
            } => {
                region(starter);
                l.entity = Some(*entity);
                l.for_shard = Some(*for_shard);
            }
            Msg::StartEntityAck {
                entity,
                shard,
                for_shard,
            } => {
                l.entity = Some(*entity);
                l.shard = Some(*shard);
                l.for_shard = Some(*for_shard);
            }
            _ => {}
        }
        l.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Msg, D::Error> {
        let l = MsgLine::deserialize(d)?;
        let need = |what: &str| D::Error::custom(format!("msg `{}` without `{what}`", l.msg));
        let shard = || l.shard.ok_or_else(|| need("shard"));
        let region = || {
            l.region
                .map(|node| RegionRef {
                    node,
                    inc: l.region_incarnation.unwrap_or_default(),
                })
                .ok_or_else(|| need("region"))
        };
        let entity = || l.entity.ok_or_else(|| need("entity"));
        let for_shard = || l.for_shard.ok_or_else(|| need("for_shard"));
        Ok(match l.msg.as_str() {
            "User" => Msg::User(Envelope {
                sender: l.sender.ok_or_else(|| need("sender"))?,
                entity: entity()?,
                seq: l.seq.ok_or_else(|| need("seq"))?,
            }),
            "Register" => Msg::Register { region: region()? },
            "RegisterProxy" => Msg::RegisterProxy { proxy: region()? },
            "RegisterAck" => Msg::RegisterAck,
            "GetShardHome" => Msg::GetShardHome { shard: shard()? },
            "ShardHome" => Msg::ShardHome {
                shard: shard()?,
                region: region()?,
            },
            "HostShard" => Msg::HostShard { shard: shard()? },
            "ShardStarted" => Msg::ShardStarted { shard: shard()? },
            "BeginHandOff" => Msg::BeginHandOff { shard: shard()? },
            "BeginHandOffAck" => Msg::BeginHandOffAck {
                shard: shard()?,
                region: region()?,
            },
            "BeginHandOffAckRelay" => Msg::BeginHandOffAckRelay {
                shard: shard()?,
                region: region()?,
                coordinator: l.coordinator.ok_or_else(|| need("coordinator"))?,
            },
            "HandOff" => Msg::HandOff { shard: shard()? },
            "ShardStopped" => Msg::ShardStopped { shard: shard()? },
            "CoordinatorTerminated" => Msg::CoordinatorTerminated,
            "StartEntity" => Msg::StartEntity {
                entity: entity()?,
                starter: region()?,
                for_shard: for_shard()?,
            },
            "StartEntityAck" => Msg::StartEntityAck {
                entity: entity()?,
                shard: shard()?,
                for_shard: for_shard()?,
            },
            "GracefulShutdownReq" => Msg::GracefulShutdownReq { region: region()? },
            "HandOverToMe" => Msg::HandOverToMe,
            "HandOverInProgress" => Msg::HandOverInProgress,
            "HandOverDone" => Msg::HandOverDone,
            "RegionStopped" => Msg::RegionStopped { region: region()? },
            "GracefulShutdown" => Msg::GracefulShutdown,
            other => {
                return Err(D::Error::custom(format!(
                    "`{other}` is not a protocol message"
                )))
            }
        })
    }
}

/// The fields a timer adds to its line: `timer` (Akka's name), then `shard`, and what else
/// tells it apart (`uid` of a Shard's timer, `entity`, `region`/`region_incarnation`).
#[derive(Default, Serialize, Deserialize)]
struct TimerLine {
    timer: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_shard")]
    shard: Option<ShardId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_entity")]
    entity: Option<EntityId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    region_incarnation: Option<NodeInc>,
}

/// A [`Timer`] as fields of its line ([`TimerLine`]).
pub(crate) mod timer_fields {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Timer, s: S) -> Result<S::Ok, S::Error> {
        let mut l = TimerLine::default();
        let name = match *t {
            Timer::RegionRetry => "Retry",
            Timer::RegisterRetry => "RegisterRetry",
            Timer::RebalanceTick => "RebalanceTick",
            Timer::ResendShardHost(x) => {
                l.shard = Some(x);
                "ResendShardHost"
            }
            Timer::HandOffTimeout(x) => {
                l.shard = Some(x);
                "HandOffTimeout"
            }
            Timer::StateInitialized => "StateInitialized",
            Timer::DelayedShardRegionTerminated(r) => {
                l.region = Some(r.node);
                l.region_incarnation = Some(r.inc);
                "DelayedShardRegionTerminated"
            }
            Timer::PersistTimeout => "PersistTimeout",
            Timer::RestartShard(x) => {
                l.shard = Some(x);
                "RestartShard"
            }
            Timer::StarterRetry(x) => {
                l.shard = Some(x);
                "RememberEntityStarterRetry"
            }
            Timer::GracefulShutdownTimeout => "GracefulShutdownTimeout",
            Timer::Shard { shard, uid, kind } => {
                l.shard = Some(shard);
                l.uid = Some(uid);
                match kind {
                    ShardTimer::HandOffStopTimeout => "HandOffStopTimeout",
                    ShardTimer::PassivationTimedOut(e) => {
                        l.entity = Some(e);
                        "PassivationTimedOut"
                    }
                    ShardTimer::PassivateIdleTick => "PassivateIdleTick",
                    ShardTimer::RestartTerminatedEntity(e) => {
                        l.entity = Some(e);
                        "RestartTerminatedEntity"
                    }
                    ShardTimer::RememberEntityTimeout => "RememberEntityTimeout",
                }
            }
        };
        l.timer = name.into();
        l.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timer, D::Error> {
        let l = TimerLine::deserialize(d)?;
        let need = |what: &str| D::Error::custom(format!("timer `{}` without `{what}`", l.timer));
        let shard = || l.shard.ok_or_else(|| need("shard"));
        let entity = || l.entity.ok_or_else(|| need("entity"));
        let of_shard = |kind: ShardTimer| -> Result<Timer, D::Error> {
            Ok(Timer::Shard {
                shard: shard()?,
                uid: l.uid.unwrap_or(0),
                kind,
            })
        };
        Ok(match l.timer.as_str() {
            "Retry" => Timer::RegionRetry,
            "RegisterRetry" => Timer::RegisterRetry,
            "RebalanceTick" => Timer::RebalanceTick,
            "ResendShardHost" => Timer::ResendShardHost(shard()?),
            "HandOffTimeout" => Timer::HandOffTimeout(shard()?),
            "StateInitialized" => Timer::StateInitialized,
            "DelayedShardRegionTerminated" => Timer::DelayedShardRegionTerminated(RegionRef {
                node: l.region.ok_or_else(|| need("region"))?,
                inc: l.region_incarnation.unwrap_or_default(),
            }),
            "PersistTimeout" => Timer::PersistTimeout,
            "RestartShard" => Timer::RestartShard(shard()?),
            "RememberEntityStarterRetry" => Timer::StarterRetry(shard()?),
            "GracefulShutdownTimeout" => Timer::GracefulShutdownTimeout,
            "HandOffStopTimeout" => of_shard(ShardTimer::HandOffStopTimeout)?,
            "PassivationTimedOut" => of_shard(ShardTimer::PassivationTimedOut(entity()?))?,
            "PassivateIdleTick" => of_shard(ShardTimer::PassivateIdleTick)?,
            "RestartTerminatedEntity" => of_shard(ShardTimer::RestartTerminatedEntity(entity()?))?,
            "RememberEntityTimeout" => of_shard(ShardTimer::RememberEntityTimeout)?,
            other => return Err(D::Error::custom(format!("`{other}` is not a timer"))),
        })
    }
}

/// The fields a fault adds to its line: `fault` (its kind), `detail` (its parameters in words,
/// for a person; not read back), then its own fields: `sides`, `node`, `from`/`to`, `a`/`b`/`c`
/// (a bridge), `by`, `duration_ms`, `extra_latency_ms`.
#[derive(Default, Serialize, Deserialize)]
struct FaultLine {
    fault: String,
    #[serde(default)]
    detail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sides: Option<[Vec<NodeId>; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra_latency_ms: Option<u64>,
}

/// A [`Fault`](crate::fault::Fault) as fields of its line ([`FaultLine`]).
pub(crate) mod fault_fields {
    use super::*;
    use crate::fault::Fault;

    pub fn serialize<S: Serializer>(f: &Fault, s: S) -> Result<S::Ok, S::Error> {
        let mut l = FaultLine {
            fault: f.kind_name().into(),
            detail: f.detail(),
            ..FaultLine::default()
        };
        match f.clone() {
            Fault::Partition { sides } => l.sides = Some(sides),
            Fault::Isolate { node } | Fault::Crash { node } | Fault::Restart { node } => {
                l.node = Some(node)
            }
            Fault::OneWay { from, to } => {
                l.from = Some(from);
                l.to = Some(to);
            }
            Fault::Bridge { a, b, c } => {
                l.a = Some(a);
                l.b = Some(b);
                l.c = Some(c);
            }
            Fault::Pause { node, duration_ms } => {
                l.node = Some(node);
                l.duration_ms = Some(duration_ms);
            }
            Fault::Down { node, by } | Fault::Leave { node, by } => {
                l.node = Some(node);
                l.by = by;
            }
            Fault::JournalSlow { extra_latency_ms } => l.extra_latency_ms = Some(extra_latency_ms),
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalFailing => {}
        }
        l.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Fault, D::Error> {
        let l = FaultLine::deserialize(d)?;
        let need = |what: &str| D::Error::custom(format!("fault `{}` without `{what}`", l.fault));
        let node = || l.node.ok_or_else(|| need("node"));
        Ok(match l.fault.as_str() {
            "Partition" => Fault::Partition {
                sides: l.sides.clone().ok_or_else(|| need("sides"))?,
            },
            "Isolate" => Fault::Isolate { node: node()? },
            "OneWay" => Fault::OneWay {
                from: l.from.ok_or_else(|| need("from"))?,
                to: l.to.ok_or_else(|| need("to"))?,
            },
            "Bridge" => Fault::Bridge {
                a: l.a.ok_or_else(|| need("a"))?,
                b: l.b.ok_or_else(|| need("b"))?,
                c: l.c.ok_or_else(|| need("c"))?,
            },
            "Heal" => Fault::Heal,
            "Crash" => Fault::Crash { node: node()? },
            "Restart" => Fault::Restart { node: node()? },
            "Pause" => Fault::Pause {
                node: node()?,
                duration_ms: l.duration_ms.ok_or_else(|| need("duration_ms"))?,
            },
            "Down" => Fault::Down {
                node: node()?,
                by: l.by,
            },
            "Leave" => Fault::Leave {
                node: node()?,
                by: l.by,
            },
            "JournalUnavailable" => Fault::JournalUnavailable,
            "JournalAvailable" => Fault::JournalAvailable,
            "JournalSlow" => Fault::JournalSlow {
                extra_latency_ms: l.extra_latency_ms.ok_or_else(|| need("extra_latency_ms"))?,
            },
            "JournalFailing" => Fault::JournalFailing,
            other => return Err(D::Error::custom(format!("`{other}` is not a fault"))),
        })
    }
}
