//! Fixtures shared by the coordinator tests (`tests/coordinator.rs`,
//! `tests/coordinator_ddata.rs`): regions, shards, durations and expected sends.

use super::O;
use shardsim_core::ids::{NodeId, NodeInc, RegionRef, ShardId};
use shardsim_core::protocol::{Addr, Msg};
use shardsim_core::time::Duration;

/// The region on node `n`, incarnation 1.
pub fn reg(n: u32) -> RegionRef {
    RegionRef {
        node: NodeId(n),
        inc: NodeInc(1),
    }
}

/// The address of the region on node `n`.
pub fn raddr(n: u32) -> Addr {
    Addr::region(reg(n))
}

/// Shard `s`.
pub fn shard(s: u32) -> ShardId {
    ShardId(s)
}

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A message to the region on node `to`.
pub fn send(to: u32, msg: Msg) -> O {
    O::Send(raddr(to), msg)
}

/// `ShardHome(s, owner)` to the region on node `to`.
pub fn home(to: u32, s: u32, owner: u32) -> O {
    send(
        to,
        Msg::ShardHome {
            shard: shard(s),
            region: reg(owner),
        },
    )
}
