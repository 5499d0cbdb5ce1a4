//! Typed faults. A scenario file writes a fault as a flat [`FaultSpec`] (a kind and whichever
//! optional fields that kind needs); it is converted once, by [`TimedFault::try_from`], into a
//! [`Fault`] that carries exactly the fields of its kind. Everything that interprets a fault
//! (the world applying it, its trace line, the shrinker renumbering nodes, the generators) works
//! on the typed value, and [`FaultSpec::from`] writes it back in the file format.
//!
//! Adding a fault kind: a [`FaultKind`] variant (the file format), a [`Fault`] arm, and the
//! compiler lists every match to extend (none of them has a catch-all arm).
//!
//! This module depends on the ids and the file format only, not on the simulation.

use serde::{Deserialize, Serialize};
use shardsim_core::ids::NodeId;
use std::fmt;

/// What a fault does.
#[derive(Clone, Copy, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Cut every link between `sides[0]` and `sides[1]` (both directions).
    Partition,
    /// Cut `node` off from every other node (not from the journal).
    Isolate,
    /// Cut the single direction `from` → `to`.
    OneWay,
    /// Bridge: `a`–`b` and `b`–`c` stay connected, `a`–`c` is cut.
    Bridge,
    /// Heal every cut link (not the journal).
    Heal,
    /// Crash `node`: its volatile state is lost and its entities die at once.
    Crash,
    /// Restart a crashed `node` as a new incarnation that joins again.
    Restart,
    /// Pause `node` for `duration-ms`: nothing is processed, timers fire late.
    Pause,
    /// An operator on node `by` downs `node`.
    Down,
    /// `node` leaves the cluster gracefully.
    Leave,
    /// The journal becomes unreachable from every node.
    JournalUnavailable,
    /// The journal is reachable again, fast and accepting writes.
    JournalAvailable,
    /// Journal writes take `extra-latency-ms` longer.
    JournalSlow,
    /// The journal silently fails every write (no acknowledgement).
    JournalFailing,
    /// A swarm kind only (`swarm.kinds`), not a planned fault: a rolling restart, every
    /// hosting node in turn leaves gracefully and comes back as a new incarnation
    /// (expanded into `leave` and `restart` faults by the swarm's draw).
    RollingRestart,
}

/// One planned fault, as the file writes it. Which fields are needed depends on `kind`, and no
/// other may be set; [`TimedFault::try_from`] turns it into a typed fault.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FaultSpec {
    /// When, ms.
    pub at_ms: u64,
    /// What it does (`partition`, `crash`, `leave`, ...): it decides which fields are needed.
    pub kind: FaultKind,
    /// The node (isolate, crash, restart, pause, down, leave).
    #[serde(default)]
    pub node: Option<u32>,
    /// The two sides (partition).
    #[serde(default)]
    pub sides: Option<[Vec<u32>; 2]>,
    /// Source (one-way).
    #[serde(default)]
    pub from: Option<u32>,
    /// Destination (one-way).
    #[serde(default)]
    pub to: Option<u32>,
    /// Bridge nodes a, b, c.
    #[serde(default)]
    pub bridge: Option<[u32; 3]>,
    /// Pause length, ms.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The node that issues a down (default: the lowest node that is up).
    #[serde(default)]
    pub by: Option<u32>,
    /// Extra journal latency, ms (journal-slow).
    #[serde(default)]
    pub extra_latency_ms: Option<u64>,
}

impl FaultSpec {
    /// A fault of `kind` at `at_ms` with every optional field unset.
    pub fn new(at_ms: u64, kind: FaultKind) -> Self {
        FaultSpec {
            at_ms,
            kind,
            node: None,
            sides: None,
            from: None,
            to: None,
            bridge: None,
            duration_ms: None,
            by: None,
            extra_latency_ms: None,
        }
    }
}

/// What a fault does, with the fields of its kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Cut every link between `sides[0]` and `sides[1]` (both directions).
    Partition {
        /// The two sides, both non-empty.
        sides: [Vec<NodeId>; 2],
    },
    /// Cut `node` off from every other node (not from the journal).
    Isolate {
        /// The isolated node.
        node: NodeId,
    },
    /// Cut the single direction `from` → `to`.
    OneWay {
        /// Source.
        from: NodeId,
        /// Destination.
        to: NodeId,
    },
    /// `a`–`b` and `b`–`c` stay connected, `a`–`c` is cut.
    Bridge {
        /// One end.
        a: NodeId,
        /// The bridge node.
        b: NodeId,
        /// The other end.
        c: NodeId,
    },
    /// Heal every cut link (not the journal).
    Heal,
    /// Crash `node`: its volatile state is lost and its entities die at once.
    Crash {
        /// The crashed node.
        node: NodeId,
    },
    /// Restart a crashed `node` as a new incarnation that joins again.
    Restart {
        /// The restarted node.
        node: NodeId,
    },
    /// Pause `node` for `duration_ms`: nothing is processed, timers fire late.
    Pause {
        /// The paused node.
        node: NodeId,
        /// Pause length, ms (positive).
        duration_ms: u64,
    },
    /// An operator on node `by` (default: the lowest node that is up) downs `node`.
    Down {
        /// The downed node.
        node: NodeId,
        /// The node that issues the down.
        by: Option<NodeId>,
    },
    /// `node` leaves the cluster gracefully: by itself (`by` unset), running coordinated
    /// shutdown (the region's hand-off first, then the cluster leave); or, with `by`, an
    /// operator on node `by` calls Akka's `Cluster.leave(node)`, so `node` is Leaving first and
    /// runs coordinated shutdown when it sees itself Exiting (ClusterDaemon).
    Leave {
        /// The leaving node.
        node: NodeId,
        /// The node that issues `Cluster.leave`, if not the leaving node itself.
        by: Option<NodeId>,
    },
    /// The journal becomes unreachable from every node.
    JournalUnavailable,
    /// The journal is reachable again, fast and accepting writes.
    JournalAvailable,
    /// Journal writes take `extra_latency_ms` longer.
    JournalSlow {
        /// Extra latency, ms (positive).
        extra_latency_ms: u64,
    },
    /// The journal silently fails every write (no acknowledgement).
    JournalFailing,
}

/// A fault and when it happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedFault {
    /// When, ms.
    pub at_ms: u64,
    /// The typed fault to inject, as [`TimedFault::try_from`] reads it from a [`FaultSpec`].
    pub fault: Fault,
}

/// Why a [`FaultSpec`] is not a fault ([`TimedFault::try_from`]), or a fault does not fit a
/// cluster ([`Fault::check`]). Each names the offending field as the file spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// The kind needs this field and it is unset (or empty or zero where it must not be).
    Missing(&'static str),
    /// The kind does not take this field and it is set.
    Extra(&'static str),
    /// The field names a node the cluster does not have.
    NoSuchNode(&'static str),
    /// The field names a node twice where the nodes must differ.
    NotDistinct(&'static str),
    /// The kind is one the swarm draws (`rolling-restart`), not a single fault.
    SwarmOnly,
}

impl FaultError {
    /// The offending field (kebab-case, as in the file).
    pub fn field(self) -> &'static str {
        match self {
            FaultError::Missing(f)
            | FaultError::Extra(f)
            | FaultError::NoSuchNode(f)
            | FaultError::NotDistinct(f) => f,
            FaultError::SwarmOnly => "kind",
        }
    }
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultError::Missing(x) => write!(f, "`{x}` is missing"),
            FaultError::Extra(x) => write!(f, "`{x}` does not apply to this kind"),
            FaultError::NoSuchNode(x) => write!(f, "`{x}` names a node that does not exist"),
            FaultError::NotDistinct(x) => write!(f, "`{x}` names a node twice"),
            FaultError::SwarmOnly => write!(f, "a swarm kind, not a planned fault"),
        }
    }
}

impl std::error::Error for FaultError {}

fn ids(v: &[u32]) -> Vec<NodeId> {
    v.iter().copied().map(NodeId).collect()
}

fn raw(v: &[NodeId]) -> Vec<u32> {
    v.iter().map(|x| x.0).collect()
}

impl TryFrom<&FaultSpec> for TimedFault {
    type Error = FaultError;

    /// The typed fault of `s`: every field its kind needs is set (sides non-empty, durations
    /// positive) and no other field is. Node ranges are [`Fault::check`]'s.
    fn try_from(s: &FaultSpec) -> Result<Self, FaultError> {
        use FaultError::Missing;
        let node = || s.node.map(NodeId).ok_or(Missing("node"));
        let fault = match s.kind {
            FaultKind::Partition => match &s.sides {
                Some([a, b]) if !a.is_empty() && !b.is_empty() => Fault::Partition {
                    sides: [ids(a), ids(b)],
                },
                _ => return Err(Missing("sides")),
            },
            FaultKind::Isolate => Fault::Isolate { node: node()? },
            FaultKind::OneWay => Fault::OneWay {
                from: s.from.map(NodeId).ok_or(Missing("from"))?,
                to: s.to.map(NodeId).ok_or(Missing("to"))?,
            },
            FaultKind::Bridge => {
                let [a, b, c] = s.bridge.ok_or(Missing("bridge"))?;
                Fault::Bridge {
                    a: NodeId(a),
                    b: NodeId(b),
                    c: NodeId(c),
                }
            }
            FaultKind::Heal => Fault::Heal,
            FaultKind::Crash => Fault::Crash { node: node()? },
            FaultKind::Restart => Fault::Restart { node: node()? },
            FaultKind::Pause => Fault::Pause {
                node: node()?,
                duration_ms: s
                    .duration_ms
                    .filter(|d| *d > 0)
                    .ok_or(Missing("duration-ms"))?,
            },
            FaultKind::Down => Fault::Down {
                node: node()?,
                by: s.by.map(NodeId),
            },
            FaultKind::Leave => Fault::Leave {
                node: node()?,
                by: s.by.map(NodeId),
            },
            FaultKind::JournalUnavailable => Fault::JournalUnavailable,
            FaultKind::JournalAvailable => Fault::JournalAvailable,
            FaultKind::JournalSlow => Fault::JournalSlow {
                extra_latency_ms: s
                    .extra_latency_ms
                    .filter(|x| *x > 0)
                    .ok_or(Missing("extra-latency-ms"))?,
            },
            FaultKind::JournalFailing => Fault::JournalFailing,
            FaultKind::RollingRestart => return Err(FaultError::SwarmOnly),
        };
        let t = TimedFault {
            at_ms: s.at_ms,
            fault,
        };
        // A field the spec sets and the typed fault does not carry is one its kind does not take.
        let back = FaultSpec::from(&t);
        let set = [
            ("node", s.node.is_some(), back.node.is_some()),
            ("sides", s.sides.is_some(), back.sides.is_some()),
            ("from", s.from.is_some(), back.from.is_some()),
            ("to", s.to.is_some(), back.to.is_some()),
            ("bridge", s.bridge.is_some(), back.bridge.is_some()),
            (
                "duration-ms",
                s.duration_ms.is_some(),
                back.duration_ms.is_some(),
            ),
            ("by", s.by.is_some(), back.by.is_some()),
            (
                "extra-latency-ms",
                s.extra_latency_ms.is_some(),
                back.extra_latency_ms.is_some(),
            ),
        ];
        if let Some((field, _, _)) = set.iter().find(|(_, mine, typed)| *mine && !typed) {
            return Err(FaultError::Extra(field));
        }
        Ok(t)
    }
}

impl From<&TimedFault> for FaultSpec {
    /// The file form of `t` (what [`TimedFault::try_from`] reads back to `t`).
    fn from(t: &TimedFault) -> FaultSpec {
        let mut s = FaultSpec::new(t.at_ms, t.fault.kind());
        match &t.fault {
            Fault::Partition { sides: [a, b] } => s.sides = Some([raw(a), raw(b)]),
            Fault::Isolate { node } | Fault::Crash { node } | Fault::Restart { node } => {
                s.node = Some(node.0)
            }
            Fault::OneWay { from, to } => {
                s.from = Some(from.0);
                s.to = Some(to.0);
            }
            Fault::Bridge { a, b, c } => s.bridge = Some([a.0, b.0, c.0]),
            Fault::Pause { node, duration_ms } => {
                s.node = Some(node.0);
                s.duration_ms = Some(*duration_ms);
            }
            Fault::Down { node, by } | Fault::Leave { node, by } => {
                s.node = Some(node.0);
                s.by = by.map(|b| b.0);
            }
            Fault::JournalSlow { extra_latency_ms } => s.extra_latency_ms = Some(*extra_latency_ms),
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalFailing => {}
        }
        s
    }
}

impl Fault {
    /// The file-format kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Isolate { .. } => FaultKind::Isolate,
            Fault::OneWay { .. } => FaultKind::OneWay,
            Fault::Bridge { .. } => FaultKind::Bridge,
            Fault::Heal => FaultKind::Heal,
            Fault::Crash { .. } => FaultKind::Crash,
            Fault::Restart { .. } => FaultKind::Restart,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Down { .. } => FaultKind::Down,
            Fault::Leave { .. } => FaultKind::Leave,
            Fault::JournalUnavailable => FaultKind::JournalUnavailable,
            Fault::JournalAvailable => FaultKind::JournalAvailable,
            Fault::JournalSlow { .. } => FaultKind::JournalSlow,
            Fault::JournalFailing => FaultKind::JournalFailing,
        }
    }

    /// The kind as the trace writes it (the `Debug` name of [`FaultKind`]).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Fault::Partition { .. } => "Partition",
            Fault::Isolate { .. } => "Isolate",
            Fault::OneWay { .. } => "OneWay",
            Fault::Bridge { .. } => "Bridge",
            Fault::Heal => "Heal",
            Fault::Crash { .. } => "Crash",
            Fault::Restart { .. } => "Restart",
            Fault::Pause { .. } => "Pause",
            Fault::Down { .. } => "Down",
            Fault::Leave { .. } => "Leave",
            Fault::JournalUnavailable => "JournalUnavailable",
            Fault::JournalAvailable => "JournalAvailable",
            Fault::JournalSlow { .. } => "JournalSlow",
            Fault::JournalFailing => "JournalFailing",
        }
    }

    /// The parameters as the trace writes them, e.g. `node 2, 500 ms` (empty for heal and the
    /// journal faults without parameters).
    pub fn detail(&self) -> String {
        match self {
            Fault::Partition { sides: [a, b] } => {
                format!("sides {:?} | {:?}", raw(a), raw(b))
            }
            Fault::Isolate { node }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::Leave { node, by: None }
            | Fault::Down { node, by: None } => format!("node {node}"),
            Fault::OneWay { from, to } => format!("{from} -> {to}"),
            Fault::Bridge { a, b, c } => format!("bridge {:?}", [a.0, b.0, c.0]),
            Fault::Pause { node, duration_ms } => format!("node {node}, {duration_ms} ms"),
            Fault::Down { node, by: Some(b) } | Fault::Leave { node, by: Some(b) } => {
                format!("node {node}, by node {b}")
            }
            Fault::JournalSlow { extra_latency_ms } => format!("+{extra_latency_ms} ms"),
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalFailing => String::new(),
        }
    }

    /// Every node the fault names, in field order (sides, node, from/to, bridge, by).
    pub fn nodes(&self) -> Vec<NodeId> {
        match self {
            Fault::Partition { sides: [a, b] } => a.iter().chain(b).copied().collect(),
            Fault::Isolate { node }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::Pause { node, .. } => vec![*node],
            Fault::Down { node, by } | Fault::Leave { node, by } => {
                std::iter::once(*node).chain(*by).collect()
            }
            Fault::OneWay { from, to } => vec![*from, *to],
            Fault::Bridge { a, b, c } => vec![*a, *b, *c],
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalFailing
            | Fault::JournalSlow { .. } => Vec::new(),
        }
    }

    /// The same fault with every node id replaced by `f(id)`.
    pub fn map_nodes(&self, f: impl Fn(NodeId) -> NodeId) -> Fault {
        match self {
            Fault::Partition { sides: [a, b] } => Fault::Partition {
                sides: [
                    a.iter().map(|x| f(*x)).collect(),
                    b.iter().map(|x| f(*x)).collect(),
                ],
            },
            Fault::Isolate { node } => Fault::Isolate { node: f(*node) },
            Fault::OneWay { from, to } => Fault::OneWay {
                from: f(*from),
                to: f(*to),
            },
            Fault::Bridge { a, b, c } => Fault::Bridge {
                a: f(*a),
                b: f(*b),
                c: f(*c),
            },
            Fault::Crash { node } => Fault::Crash { node: f(*node) },
            Fault::Restart { node } => Fault::Restart { node: f(*node) },
            Fault::Pause { node, duration_ms } => Fault::Pause {
                node: f(*node),
                duration_ms: *duration_ms,
            },
            Fault::Down { node, by } => Fault::Down {
                node: f(*node),
                by: by.map(&f),
            },
            Fault::Leave { node, by } => Fault::Leave {
                node: f(*node),
                by: by.map(&f),
            },
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalSlow { .. }
            | Fault::JournalFailing => self.clone(),
        }
    }

    /// The fault once node `k` is deleted from the cluster and the nodes above it are
    /// renumbered one down; `None` if it names `k` (a partition only loses `k` from its side,
    /// and is `None` only if that side becomes empty).
    pub fn renumber_without(&self, k: NodeId) -> Option<Fault> {
        let map = |x: NodeId| if x > k { NodeId(x.0 - 1) } else { x };
        if let Fault::Partition { sides } = self {
            let mut sides = sides.clone();
            for side in sides.iter_mut() {
                side.retain(|x| *x != k);
                if side.is_empty() {
                    return None;
                }
            }
            return Some(Fault::Partition { sides }.map_nodes(map));
        }
        if self.nodes().contains(&k) {
            return None;
        }
        Some(self.map_nodes(map))
    }

    /// Whether the fault fits a cluster of `nodes` nodes: every node it names exists, and the
    /// nodes that must differ do (partition sides disjoint, one-way and bridge nodes distinct).
    /// The first problem found, in field order.
    pub fn check(&self, nodes: u32) -> Result<(), FaultError> {
        let ok = |x: &NodeId| x.0 < nodes;
        let node = |x: &NodeId| {
            if ok(x) {
                Ok(())
            } else {
                Err(FaultError::NoSuchNode("node"))
            }
        };
        match self {
            Fault::Partition { sides: [a, b] } => {
                if !a.iter().chain(b).all(ok) {
                    return Err(FaultError::NoSuchNode("sides"));
                }
                if a.iter().any(|x| b.contains(x)) {
                    return Err(FaultError::NotDistinct("sides"));
                }
                Ok(())
            }
            Fault::Isolate { node: x }
            | Fault::Crash { node: x }
            | Fault::Restart { node: x }
            | Fault::Pause { node: x, .. } => node(x),
            Fault::Down { node: x, by } | Fault::Leave { node: x, by } => {
                node(x)?;
                match by {
                    Some(b) if !ok(b) => Err(FaultError::NoSuchNode("by")),
                    Some(_) | None => Ok(()),
                }
            }
            Fault::OneWay { from, to } => {
                if !ok(from) {
                    Err(FaultError::NoSuchNode("from"))
                } else if !ok(to) {
                    Err(FaultError::NoSuchNode("to"))
                } else if from == to {
                    Err(FaultError::NotDistinct("from"))
                } else {
                    Ok(())
                }
            }
            Fault::Bridge { a, b, c } => {
                if ![a, b, c].into_iter().all(ok) {
                    Err(FaultError::NoSuchNode("bridge"))
                } else if a == b || b == c || a == c {
                    Err(FaultError::NotDistinct("bridge"))
                } else {
                    Ok(())
                }
            }
            Fault::Heal
            | Fault::JournalUnavailable
            | Fault::JournalAvailable
            | Fault::JournalSlow { .. }
            | Fault::JournalFailing => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(x: u32) -> NodeId {
        NodeId(x)
    }

    /// One fault of every kind (Down and Leave twice: with and without `by`).
    fn every_kind() -> Vec<Fault> {
        vec![
            Fault::Partition {
                sides: [vec![n(0), n(2)], vec![n(1), n(3), n(4)]],
            },
            Fault::Isolate { node: n(1) },
            Fault::OneWay {
                from: n(2),
                to: n(0),
            },
            Fault::Bridge {
                a: n(0),
                b: n(1),
                c: n(2),
            },
            Fault::Heal,
            Fault::Crash { node: n(3) },
            Fault::Restart { node: n(3) },
            Fault::Pause {
                node: n(2),
                duration_ms: 750,
            },
            Fault::Down {
                node: n(2),
                by: None,
            },
            Fault::Down {
                node: n(2),
                by: Some(n(1)),
            },
            Fault::Leave {
                node: n(4),
                by: None,
            },
            Fault::Leave {
                node: n(4),
                by: Some(n(1)),
            },
            Fault::JournalUnavailable,
            Fault::JournalAvailable,
            Fault::JournalSlow {
                extra_latency_ms: 300,
            },
            Fault::JournalFailing,
        ]
    }

    /// The trace detail as the world wrote it from the flat spec before faults were typed.
    fn legacy_detail(f: &FaultSpec) -> String {
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

    #[test]
    fn every_kind_is_covered() {
        let mut kinds: Vec<String> = every_kind()
            .iter()
            .map(|f| format!("{:?}", f.kind()))
            .collect();
        kinds.dedup();
        assert_eq!(kinds.len(), 14);
    }

    #[test]
    fn spec_round_trips_for_every_kind() {
        for (i, fault) in every_kind().into_iter().enumerate() {
            let t = TimedFault {
                at_ms: 1_000 * i as u64,
                fault,
            };
            let spec = FaultSpec::from(&t);
            assert_eq!(spec.kind, t.fault.kind());
            assert_eq!(TimedFault::try_from(&spec), Ok(t.clone()));
            // And through the file format.
            let text = toml::to_string(&spec).unwrap();
            let read: FaultSpec = toml::from_str(&text).unwrap();
            assert_eq!(read, spec, "{text}");
        }
    }

    #[test]
    fn kind_name_and_detail_are_the_traces() {
        for fault in every_kind() {
            assert_eq!(fault.kind_name(), format!("{:?}", fault.kind()));
            let spec = FaultSpec::from(&TimedFault { at_ms: 0, fault });
            let fault = TimedFault::try_from(&spec).unwrap().fault;
            assert_eq!(fault.detail(), legacy_detail(&spec), "{fault:?}");
        }
        let f = Fault::Pause {
            node: n(2),
            duration_ms: 750,
        };
        assert_eq!(f.detail(), "node 2, 750 ms");
        let f = Fault::Partition {
            sides: [vec![n(0)], vec![n(1), n(2)]],
        };
        assert_eq!(f.detail(), "sides [0] | [1, 2]");
    }

    #[test]
    fn each_missing_field_is_named() {
        use FaultError::Missing;
        let spec = |k| FaultSpec::new(5, k);
        let err = |s: &FaultSpec| TimedFault::try_from(s).unwrap_err();
        for k in [
            FaultKind::Isolate,
            FaultKind::Crash,
            FaultKind::Restart,
            FaultKind::Pause,
            FaultKind::Down,
            FaultKind::Leave,
        ] {
            assert_eq!(err(&spec(k)), Missing("node"), "{k:?}");
        }
        assert_eq!(err(&spec(FaultKind::Partition)), Missing("sides"));
        let mut s = spec(FaultKind::Partition);
        s.sides = Some([vec![0], vec![]]);
        assert_eq!(err(&s), Missing("sides"));
        s.sides = Some([vec![], vec![1]]);
        assert_eq!(err(&s), Missing("sides"));
        let mut s = spec(FaultKind::OneWay);
        assert_eq!(err(&s), Missing("from"));
        s.from = Some(0);
        assert_eq!(err(&s), Missing("to"));
        assert_eq!(err(&spec(FaultKind::Bridge)), Missing("bridge"));
        let mut s = spec(FaultKind::Pause);
        s.node = Some(1);
        assert_eq!(err(&s), Missing("duration-ms"));
        s.duration_ms = Some(0);
        assert_eq!(err(&s), Missing("duration-ms"));
        let mut s = spec(FaultKind::JournalSlow);
        assert_eq!(err(&s), Missing("extra-latency-ms"));
        s.extra_latency_ms = Some(0);
        assert_eq!(err(&s), Missing("extra-latency-ms"));
        for k in [
            FaultKind::Heal,
            FaultKind::JournalUnavailable,
            FaultKind::JournalAvailable,
            FaultKind::JournalFailing,
        ] {
            assert!(TimedFault::try_from(&spec(k)).is_ok(), "{k:?}");
        }
    }

    #[test]
    fn each_extra_field_is_named() {
        let err = |s: &FaultSpec| TimedFault::try_from(s).unwrap_err();
        let mut s = FaultSpec::new(0, FaultKind::Heal);
        s.node = Some(1);
        assert_eq!(err(&s), FaultError::Extra("node"));
        let mut s = FaultSpec::new(0, FaultKind::Crash);
        s.node = Some(1);
        s.by = Some(0);
        assert_eq!(err(&s), FaultError::Extra("by"));
        s.by = None;
        s.duration_ms = Some(3);
        assert_eq!(err(&s), FaultError::Extra("duration-ms"));
        let mut s = FaultSpec::new(0, FaultKind::Isolate);
        s.node = Some(1);
        s.sides = Some([vec![0], vec![1]]);
        assert_eq!(err(&s), FaultError::Extra("sides"));
        let mut s = FaultSpec::new(0, FaultKind::JournalFailing);
        s.extra_latency_ms = Some(10);
        assert_eq!(err(&s), FaultError::Extra("extra-latency-ms"));
        let mut s = FaultSpec::new(0, FaultKind::Partition);
        s.sides = Some([vec![0], vec![1]]);
        s.from = Some(0);
        s.to = Some(1);
        s.bridge = Some([0, 1, 2]);
        assert_eq!(err(&s), FaultError::Extra("from"));
        assert_eq!(err(&s).field(), "from");
    }

    #[test]
    fn check_names_the_field_out_of_range_or_repeated() {
        for f in every_kind() {
            assert_eq!(f.check(5), Ok(()), "{f:?}");
        }
        let p = |a: Vec<u32>, b: Vec<u32>| Fault::Partition {
            sides: [ids(&a), ids(&b)],
        };
        assert_eq!(
            p(vec![0], vec![5]).check(5),
            Err(FaultError::NoSuchNode("sides"))
        );
        assert_eq!(
            p(vec![0, 1], vec![1]).check(5),
            Err(FaultError::NotDistinct("sides"))
        );
        assert_eq!(
            Fault::Crash { node: n(2) }.check(2),
            Err(FaultError::NoSuchNode("node"))
        );
        let down = Fault::Down {
            node: n(9),
            by: Some(n(9)),
        };
        assert_eq!(down.check(2), Err(FaultError::NoSuchNode("node")));
        let down = Fault::Down {
            node: n(0),
            by: Some(n(9)),
        };
        assert_eq!(down.check(2), Err(FaultError::NoSuchNode("by")));
        let ow = |a, b| Fault::OneWay {
            from: n(a),
            to: n(b),
        };
        assert_eq!(ow(3, 0).check(3), Err(FaultError::NoSuchNode("from")));
        assert_eq!(ow(0, 3).check(3), Err(FaultError::NoSuchNode("to")));
        assert_eq!(ow(1, 1).check(3), Err(FaultError::NotDistinct("from")));
        let br = |a, b, c| Fault::Bridge {
            a: n(a),
            b: n(b),
            c: n(c),
        };
        assert_eq!(br(0, 1, 3).check(3), Err(FaultError::NoSuchNode("bridge")));
        assert_eq!(br(0, 1, 0).check(3), Err(FaultError::NotDistinct("bridge")));
    }

    #[test]
    fn nodes_lists_every_named_node() {
        let all: Vec<Vec<u32>> = every_kind().iter().map(|f| raw(&f.nodes())).collect();
        assert_eq!(
            all,
            vec![
                vec![0, 2, 1, 3, 4],
                vec![1],
                vec![2, 0],
                vec![0, 1, 2],
                vec![],
                vec![3],
                vec![3],
                vec![2],
                vec![2],
                vec![2, 1],
                vec![4],
                vec![4, 1],
                vec![],
                vec![],
                vec![],
                vec![],
            ]
        );
    }

    #[test]
    fn renumber_without_drops_or_renumbers() {
        // A fault naming the deleted node goes.
        for f in every_kind() {
            let names_3 = f.nodes().contains(&n(3));
            let r = f.renumber_without(n(3));
            match &f {
                Fault::Partition { .. } => {}
                _ => assert_eq!(r.is_none(), names_3, "{f:?}"),
            }
        }
        // Nodes above the deleted one move down; below it they stay.
        assert_eq!(
            Fault::Down {
                node: n(4),
                by: Some(n(1))
            }
            .renumber_without(n(2)),
            Some(Fault::Down {
                node: n(3),
                by: Some(n(1))
            })
        );
        assert_eq!(
            Fault::Down {
                node: n(4),
                by: Some(n(2))
            }
            .renumber_without(n(2)),
            None
        );
        assert_eq!(
            Fault::Bridge {
                a: n(0),
                b: n(3),
                c: n(4)
            }
            .renumber_without(n(1)),
            Some(Fault::Bridge {
                a: n(0),
                b: n(2),
                c: n(3)
            })
        );
        assert_eq!(
            Fault::OneWay {
                from: n(2),
                to: n(0)
            }
            .renumber_without(n(0)),
            None
        );
        assert_eq!(
            Fault::Pause {
                node: n(2),
                duration_ms: 10
            }
            .renumber_without(n(0)),
            Some(Fault::Pause {
                node: n(1),
                duration_ms: 10
            })
        );
        assert_eq!(Fault::Heal.renumber_without(n(0)), Some(Fault::Heal));
        // A partition loses the node from its side, unless that side would be empty.
        let p = |a: Vec<u32>, b: Vec<u32>| Fault::Partition {
            sides: [ids(&a), ids(&b)],
        };
        assert_eq!(
            p(vec![0, 2], vec![1, 3, 4]).renumber_without(n(3)),
            Some(p(vec![0, 2], vec![1, 3]))
        );
        assert_eq!(
            p(vec![0, 2], vec![1, 3, 4]).renumber_without(n(0)),
            Some(p(vec![1], vec![0, 2, 3]))
        );
        assert_eq!(p(vec![0], vec![1, 2]).renumber_without(n(0)), None);
        assert_eq!(p(vec![0, 1], vec![2]).renumber_without(n(2)), None);
        assert_eq!(
            p(vec![0, 1], vec![2]).renumber_without(n(5)),
            Some(p(vec![0, 1], vec![2]))
        );
    }
}
