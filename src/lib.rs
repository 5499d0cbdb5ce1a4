//! # shardsim
//!
//! A deterministic simulation testbed for Akka-style cluster sharding.
//!
//! - [`protocol`]: ShardRegion, Shard/entities, ShardCoordinator and the allocation strategy as
//!   sans-IO state machines with Akka's message names.
//! - [`sim`]: the discrete-event world that runs them: one event queue ordered by
//!   (time, sequence), a simulated clock in microseconds, a FIFO-per-link network, a journal and
//!   a workload, all randomness forked from one ChaCha8 root seeded by the schedule's seed.
//! - [`check`]: invariants checked after every event (at-most-one, per-sender order, no
//!   duplicate); the first violation ends the schedule.
//! - [`trace`]: the JSON Lines trace, complete enough to re-check every invariant from the file.
//! - [`host`]: other hosts of the same `Node` (madsim).
//! - [`scenario`]: TOML scenario files; [`fault`]: the typed faults their fault plans become.
//!
//! Same scenario, same seed, same binary: byte-identical trace.

#![warn(missing_docs)]

pub mod agree;
pub mod bare;
pub mod campaign;
pub mod check;
pub mod coverage;
pub mod ddata;
pub mod delay;
pub mod explain;
pub mod fault;
pub mod gen;
pub mod guided;
pub mod host;
pub mod idmap;
pub mod ids;
pub mod input;
pub mod membership;
pub mod node;
pub mod perfetto;
pub mod protocol;
pub mod report;
pub mod rng;
pub mod scale;
pub mod scenario;
pub mod shrink;
pub mod sim;
pub mod slice;
pub mod sweep;
pub mod time;
pub mod trace;
