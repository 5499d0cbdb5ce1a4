//! # shardsim-core
//!
//! Akka-style cluster sharding as sans-IO state machines: the model that shardsim's hosts run.
//!
//! - [`protocol`]: ShardRegion, Shard and entities, ShardCoordinator (journal or ddata store),
//!   the allocation strategy, with Akka's message names.
//! - [`membership`]: gossip, the leader's actions, failure detection and the downing providers
//!   (split-brain resolver, auto-down).
//! - [`ddata`]: the replicator and the ddata stores of the coordinator and remember entities.
//! - [`node`]: [`node::Node`], one cluster node incarnation: every role above behind one
//!   `handle(now, input, host)`.
//!
//! Every role takes the current time and one input and emits plain data; nothing here reads a
//! clock, a socket or a file, and nothing draws from an unseeded random source ([`rng`] forks
//! every stream from one ChaCha8 root).
//!
//! Comments cite Akka's behaviour by section (`§6.4`) and its known bugs by number (`§12 B35`):
//! both refer to `docs/akka-reference.md` in the repository.

#![warn(missing_docs)]

pub mod ddata;
pub mod idmap;
pub mod ids;
pub mod membership;
pub mod node;
pub mod protocol;
pub mod rng;
pub mod time;
