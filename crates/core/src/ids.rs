//! Identifiers. Every id is a `Copy` newtype with a total order, so it can key a `BTreeMap` and
//! iteration order (which is part of the trace) never depends on hashing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A cluster node (one simulated process). Node ids are dense, starting at 0.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct NodeId(pub u32);

/// A shard. Printed in traces as a decimal string.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct ShardId(pub u32);

/// An entity id. Printed in traces as `e<N>`.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct EntityId(pub u32);

/// A workload sender. Printed in traces as `c<N>`.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct SenderId(pub u32);

/// The uid of one incarnation of a node (Akka's `UniqueAddress.longUid`): a restarted node gets a
/// new one, and messages addressed to an older incarnation are dead letters.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct NodeInc(pub u32);

/// One ShardRegion actor: the node it runs on and that node's incarnation (Akka's `ActorRef`,
/// which carries the uid). There is one region per node and entity type.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct RegionRef {
    /// The node hosting the region.
    pub node: NodeId,
    /// The incarnation of that node.
    pub inc: NodeInc,
}

/// A run-unique id of one entity incarnation (one start of one entity).
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct Incarnation(pub u64);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}
impl fmt::Display for SenderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}
impl fmt::Display for RegionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region@{}#{}", self.node.0, self.inc.0)
    }
}
