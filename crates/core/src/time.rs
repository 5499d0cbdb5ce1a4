//! Simulated time. `Instant` counts microseconds since the start of the run; nothing in the
//! simulation reads the wall clock.

use serde::{Deserialize, Serialize};
use std::ops::{Add, Sub};

/// Microseconds since the start of the simulated run.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct Instant(pub u64);

/// A span of simulated time in microseconds.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct Duration(pub u64);

impl Duration {
    /// Zero.
    pub const ZERO: Duration = Duration(0);
    /// From microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us)
    }
    /// From milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000)
    }
    /// From seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000)
    }
    /// As microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    /// Saturating multiplication.
    pub const fn mul(self, k: u64) -> Self {
        Duration(self.0.saturating_mul(k))
    }
}

impl Instant {
    /// Time zero.
    pub const ZERO: Instant = Instant(0);
    /// As microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for human-readable output only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, o: Instant) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

impl std::fmt::Display for Instant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}
