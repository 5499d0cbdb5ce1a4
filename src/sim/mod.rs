//! The deterministic discrete-event world that runs the protocol.
//!
//! One event queue ordered by (time, sequence); a simulated clock in microseconds; every random
//! draw from a ChaCha8 stream forked per subsystem from the schedule's seed. The network is FIFO
//! per directed pair of nodes (as Akka remoting guarantees): each message draws a latency, but
//! never arrives before an earlier message on the same link. Messages between actors on one
//! node stay local (delivered at the same instant, in send order).

pub mod queue;
pub mod swarm;
mod world;

pub use world::{RunResult, Stats, World};
