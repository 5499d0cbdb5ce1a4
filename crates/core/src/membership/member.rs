//! A member of the cluster as a node sees it (Akka's `Member` and `MemberStatus`). Sharding
//! reads members; membership owns them.

use crate::ids::{NodeId, NodeInc, RegionRef};
use serde::{Deserialize, Serialize};

/// Member status, as in Akka's `MemberStatus`.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub enum MemberStatus {
    /// Joining, not yet moved to Up by the leader.
    Joining,
    /// Up.
    Up,
    /// Leaving gracefully.
    Leaving,
    /// Exiting.
    Exiting,
    /// Downed.
    Down,
    /// Removed.
    Removed,
}

/// One member as a node sees it.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Ord, PartialEq, PartialOrd, Serialize)]
pub struct Member {
    /// The member's node.
    pub node: NodeId,
    /// Its incarnation.
    pub inc: NodeInc,
    /// Akka's `upNumber`: lower is older.
    pub up_number: u32,
    /// Its status in this node's view (Joining, Up, Leaving, Exiting, Down, Removed).
    pub status: MemberStatus,
    /// Whether it hosts entities (has the sharding role); proxy-only nodes do not, and are never
    /// chosen as coordinator.
    pub hosting: bool,
    /// Its `akka.cluster.app-version` (Akka 2.6.10+), gossiped with the member: higher is newer
    /// (an integer stands for Akka's `Version`; 0 is Akka's default `0.0.0`). The rebalance gate
    /// and the allocation's suitability ordering read it (§10.1, §12 B38).
    pub app_version: u32,
}

/// Hashes the app version only when it is not 0, so trace hashes of scenarios without app
/// versions are the ones from before members carried it (equal members still hash equal).
impl std::hash::Hash for Member {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.node.hash(h);
        self.inc.hash(h);
        self.up_number.hash(h);
        self.status.hash(h);
        self.hosting.hash(h);
        if self.app_version != 0 {
            self.app_version.hash(h);
        }
    }
}

impl Member {
    /// The region on this member.
    pub fn region(&self) -> RegionRef {
        RegionRef {
            node: self.node,
            inc: self.inc,
        }
    }
}
