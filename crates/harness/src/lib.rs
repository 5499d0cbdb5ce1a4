//! # shardsim-harness
//!
//! What runs the model of [`shardsim_core`] and judges it: scenario files, typed faults, the
//! trace, the checker and the hosts.
//!
//! - [`scenario`]: TOML scenario files; [`fault`] and [`delay`]: the typed faults and targeted
//!   delays their plans become.
//! - [`sim`]: the own discrete-event world: one event queue ordered by (time, sequence), a
//!   simulated clock in microseconds, a FIFO-per-link network, a journal and a workload, all
//!   randomness forked from one ChaCha8 root seeded by the schedule's seed.
//! - [`check`]: invariants checked after every event; the first violation ends the schedule.
//! - [`trace`]: the JSON Lines trace, complete enough to re-check every invariant from the file.
//! - [`host`]: other hosts of the same `Node` (madsim); [`bare`]: the benchmark's bare loop.
//!
//! Same scenario, same seed, same binary: byte-identical trace.

#![warn(missing_docs)]

pub mod bare;
pub mod check;
pub mod delay;
pub mod fault;
pub mod host;
pub mod input;
pub mod options;
pub mod scenario;
pub mod sim;
pub mod trace;
