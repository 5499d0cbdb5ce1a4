//! The message vocabulary, named after Akka's `ShardCoordinator.Internal` messages (§2).

use crate::ids::{EntityId, RegionRef, SenderId, ShardId};
use crate::protocol::Addr;
use serde::{Deserialize, Serialize};

/// A user message for an entity. `seq` counts per (sender, entity) from 1.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub struct Envelope {
    /// The sending client.
    pub sender: SenderId,
    /// The addressed entity.
    pub entity: EntityId,
    /// Sequence number per (sender, entity), from 1.
    pub seq: u64,
}

/// Protocol messages between regions and the coordinator (§2.1-§2.3).
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub enum Msg {
    /// A user message forwarded region to region, as-is (§2.3).
    User(Envelope),
    /// region → coordinator: register a hosting region.
    Register {
        /// The region asking to register, by node and incarnation.
        region: RegionRef,
    },
    /// proxy → coordinator: register a proxy-only region.
    RegisterProxy {
        /// The proxy-only region asking to register, by node and incarnation.
        proxy: RegionRef,
    },
    /// coordinator → region: registration accepted.
    RegisterAck,
    /// region → coordinator: where is this shard?
    GetShardHome {
        /// The shard whose home the asking region does not know.
        shard: ShardId,
    },
    /// coordinator → requester: the shard's home.
    ShardHome {
        /// The shard whose home this answers.
        shard: ShardId,
        /// Its home.
        region: RegionRef,
    },
    /// coordinator → owner: start hosting this shard.
    HostShard {
        /// The shard the owner is to start hosting.
        shard: ShardId,
    },
    /// owner → coordinator: reply to HostShard.
    ShardStarted {
        /// The shard the owner has started hosting.
        shard: ShardId,
    },
    /// coordinator (RebalanceWorker) → every region: a hand-off begins; buffer from now on.
    BeginHandOff {
        /// The shard being handed off, whose messages the region buffers from now on.
        shard: ShardId,
    },
    /// region → coordinator (RebalanceWorker).
    BeginHandOffAck {
        /// The shard whose `BeginHandOff` the region acknowledges.
        shard: ShardId,
        /// The acknowledging region (Akka: the sender).
        region: RegionRef,
    },
    /// Protocol option `handoff-ack-via-owner`: a non-owner region sends its BeginHandOffAck
    /// through the region it last forwarded the shard's messages to, so that the ack reaches the
    /// coordinator only after those messages reached the owner (closes docs/akka-reference.md §11.3).
    BeginHandOffAckRelay {
        /// The shard whose `BeginHandOff` the region acknowledges.
        shard: ShardId,
        /// The acknowledging region.
        region: RegionRef,
        /// Where the owner relays the ack.
        coordinator: Addr,
    },
    /// coordinator → owner: stop the shard's entities.
    HandOff {
        /// The shard whose entities the owner is to stop.
        shard: ShardId,
    },
    /// owner → coordinator: the shard's entities have stopped.
    ShardStopped {
        /// The shard whose entities have stopped on the owner.
        shard: ShardId,
    },
    /// Death watch: the coordinator actor on the sending node stopped (Akka's
    /// `Terminated(coordinator)`, delivered like any message from that node).
    CoordinatorTerminated,
    /// `ShardRegion.StartEntity(id)` from a remember-entities starter, routed by the region
    /// like a user message (§2.6, akka#22289).
    StartEntity {
        /// The remembered entity the starter asks to have started.
        entity: EntityId,
        /// The starter's region.
        starter: RegionRef,
        /// The shard whose starter asks.
        for_shard: ShardId,
    },
    /// New oldest → previous oldest's singleton manager: stop the singleton and tell me when
    /// it has stopped (ClusterSingletonManager `HandOverToMe`, retried every
    /// `hand-over-retry-interval`).
    HandOverToMe,
    /// Previous oldest → new oldest: the singleton is stopping (`HandOverInProgress`).
    HandOverInProgress,
    /// Previous oldest → new oldest: the singleton has stopped; start it (`HandOverDone`).
    HandOverDone,
    /// region → coordinator candidates: hand off all my shards, I am shutting down
    /// gracefully (§4.4, §5.5; retried on every Retry tick, the fix of §12 B15).
    GracefulShutdownReq {
        /// The region shutting down, whose shards are to be handed off.
        region: RegionRef,
    },
    /// region → coordinator, from the region's `postStop`: it stopped; the coordinator
    /// handles it as the region's termination at once (akka#30402, SR:697-703).
    RegionStopped {
        /// The region that stopped, by node and incarnation.
        region: RegionRef,
    },
    /// `StartEntityAck(id, shardId)`: the entity runs in `shard`.
    StartEntityAck {
        /// The entity that now runs, as a `StartEntity` asked.
        entity: EntityId,
        /// The shard that started it.
        shard: ShardId,
        /// The shard whose starter asked.
        for_shard: ShardId,
    },
    /// coordinator → its local region: `ShardRegion.GracefulShutdown`, from the coordinator's
    /// `terminate()` when the singleton stops it while that region is alive (SC:1148-1177,
    /// §4.5): hand off every shard and stop.
    GracefulShutdown,
}

impl Msg {
    /// Akka's name of the message, for the trace.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::User(_) => "User",
            Msg::Register { .. } => "Register",
            Msg::RegisterProxy { .. } => "RegisterProxy",
            Msg::RegisterAck => "RegisterAck",
            Msg::GetShardHome { .. } => "GetShardHome",
            Msg::ShardHome { .. } => "ShardHome",
            Msg::HostShard { .. } => "HostShard",
            Msg::ShardStarted { .. } => "ShardStarted",
            Msg::BeginHandOff { .. } => "BeginHandOff",
            Msg::BeginHandOffAck { .. } => "BeginHandOffAck",
            Msg::BeginHandOffAckRelay { .. } => "BeginHandOffAckRelay",
            Msg::HandOff { .. } => "HandOff",
            Msg::ShardStopped { .. } => "ShardStopped",
            Msg::CoordinatorTerminated => "CoordinatorTerminated",
            Msg::StartEntity { .. } => "StartEntity",
            Msg::StartEntityAck { .. } => "StartEntityAck",
            Msg::GracefulShutdownReq { .. } => "GracefulShutdownReq",
            Msg::HandOverToMe => "HandOverToMe",
            Msg::HandOverInProgress => "HandOverInProgress",
            Msg::HandOverDone => "HandOverDone",
            Msg::RegionStopped { .. } => "RegionStopped",
            Msg::GracefulShutdown => "GracefulShutdown",
        }
    }

    /// The shard the message is about, if any.
    pub fn shard(&self) -> Option<ShardId> {
        match *self {
            Msg::GetShardHome { shard }
            | Msg::ShardHome { shard, .. }
            | Msg::HostShard { shard }
            | Msg::ShardStarted { shard }
            | Msg::BeginHandOff { shard }
            | Msg::BeginHandOffAck { shard, .. }
            | Msg::BeginHandOffAckRelay { shard, .. }
            | Msg::HandOff { shard }
            | Msg::ShardStopped { shard } => Some(shard),
            _ => None,
        }
    }
}

/// The coordinator's persisted domain events (§3.1).
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, PartialEq, Serialize)]
#[serde(tag = "event")]
pub enum CoordinatorEvent {
    /// A region registered.
    ShardRegionRegistered {
        /// The registered region, by node and incarnation.
        region: RegionRef,
    },
    /// A proxy registered.
    ShardRegionProxyRegistered {
        /// The registered proxy-only region, by node and incarnation.
        proxy: RegionRef,
    },
    /// A region terminated: it and its shards are forgotten.
    ShardRegionTerminated {
        /// The terminated region, by node and incarnation.
        region: RegionRef,
    },
    /// A proxy terminated.
    ShardRegionProxyTerminated {
        /// The terminated proxy-only region.
        proxy: RegionRef,
    },
    /// A shard was allocated to a region.
    ShardHomeAllocated {
        /// The shard given a home.
        shard: ShardId,
        /// The region that is the shard's home (its owner) from now on.
        region: RegionRef,
    },
    /// A shard was deallocated after a hand-off.
    ShardHomeDeallocated {
        /// The shard that has no home after its hand-off.
        shard: ShardId,
    },
}
