//! # shardsim
//!
//! A deterministic simulation testbed for Akka-style cluster sharding: the tools and the
//! `shardsim` command, over two layers below them.
//!
//! - [`shardsim_core`]: the model, sans-IO state machines (regions, Shards, entities, the
//!   coordinator, membership and downing, ddata, the `Node` that holds them).
//! - [`shardsim_harness`]: scenario files, faults, the trace, the checker and the hosts that
//!   run the model.
//! - Here: [`campaign`]s over many seeds (and their [`slice`](mod@slice)s, [`sweep`]s and the [`scale`]
//!   measurements), [`shrink`]ing a failing seed, [`guided`] exploration and its [`coverage`]
//!   campaign, [`explain`]ing a failure, [`report`]s and [`perfetto`] exports, the proptest
//!   scenario generators of [`gen`], and [`agree`] (the hosts against each other).

#![warn(missing_docs)]

pub use shardsim_core as core;
pub use shardsim_harness as harness;

pub mod agree;
pub mod campaign;
pub mod coverage;
pub mod explain;
pub mod gen;
pub mod guided;
pub mod perfetto;
pub mod report;
pub mod scale;
pub mod shrink;
pub mod slice;
pub mod sweep;
