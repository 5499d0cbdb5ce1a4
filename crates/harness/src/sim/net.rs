//! The simulated network: FIFO links between the nodes and the journal, cut and healed by the
//! fault injector.
//!
//! Links join n nodes and the journal (index n). Each message draws a latency but never arrives
//! before an earlier message on the same link (Akka remoting is FIFO per pair of actor
//! systems). Cutting a link starts a new epoch: messages already in flight on it are lost.

use crate::scenario::NetworkSpec;
use crate::sim::delays::Holds;
use shardsim_core::rng::{Rng, Stream};
use shardsim_core::time::Instant;

/// The links of one run.
pub struct Net {
    /// Endpoints: the nodes and the journal.
    ends: usize,
    spec: NetworkSpec,
    rng: Rng,
    /// Per link (`from * ends + to`): the latest arrival scheduled, whether it is cut, and its
    /// epoch.
    last: Vec<u64>,
    cut: Vec<bool>,
    epoch: Vec<u32>,
    /// Targeted delays (`[[delays]]`, [`crate::sim::delays`]); empty in most runs.
    holds: Holds,
}

impl Net {
    /// Links among `nodes` nodes and the journal, for `seed`.
    pub fn new(nodes: usize, spec: NetworkSpec, seed: u64) -> Self {
        let ends = nodes + 1;
        Net {
            ends,
            spec,
            rng: Rng::fork(seed, Stream::Net),
            last: vec![0; ends * ends],
            cut: vec![false; ends * ends],
            epoch: vec![0; ends * ends],
            holds: Holds::default(),
        }
    }

    /// Hold back the messages `holds` matches (targeted delays).
    pub fn set_holds(&mut self, holds: Holds) {
        self.holds = holds;
    }

    /// When protocol message `msg` sent at `now` on `from → to` arrives: [`Net::schedule`]
    /// with the targeted delays' hold added to its latency. FIFO stays: the held message
    /// moves the link's latest arrival, so the messages behind it wait too (as TCP's would).
    #[inline]
    pub fn schedule_msg(
        &mut self,
        now: Instant,
        from: usize,
        to: usize,
        msg: &shardsim_core::protocol::Msg,
    ) -> Option<(Instant, u32)> {
        let extra = if self.holds.is_empty() || from == to || self.is_cut(from, to) {
            0
        } else {
            self.holds.hold_us(now.0, from as u32, to as u32, msg)
        };
        self.schedule(now, from, to, extra)
    }

    /// The journal's endpoint index.
    pub fn journal(&self) -> usize {
        self.ends - 1
    }

    #[inline]
    fn link(&self, from: usize, to: usize) -> usize {
        from * self.ends + to
    }

    /// Whether a message that travelled in `epoch` on `from → to` arrives.
    #[inline]
    pub fn ok(&self, from: usize, to: usize, epoch: u32) -> bool {
        if from == to {
            return true;
        }
        let l = self.link(from, to);
        !self.cut[l] && self.epoch[l] == epoch
    }

    /// Whether `from → to` is cut.
    pub fn is_cut(&self, from: usize, to: usize) -> bool {
        self.cut[self.link(from, to)]
    }

    /// When a message sent at `now` on `from → to` arrives, and the link epoch it travels in;
    /// `None` when the link is cut. FIFO: never before the previous message on the link.
    pub fn schedule(
        &mut self,
        now: Instant,
        from: usize,
        to: usize,
        extra_us: u64,
    ) -> Option<(Instant, u32)> {
        if from == to {
            return Some((now, 0));
        }
        let l = self.link(from, to);
        if self.cut[l] {
            return None;
        }
        let spec = &self.spec;
        let (lo, hi) = if spec.slow_probability > 0.0 && self.rng.chance(spec.slow_probability) {
            (spec.slow_latency_ms[0], spec.slow_latency_ms[1])
        } else {
            (spec.latency_ms[0], spec.latency_ms[1])
        };
        let lat = self.rng.range(lo * 1000, hi * 1000) + extra_us;
        let at = (now.0 + lat).max(self.last[l]);
        self.last[l] = at;
        Some((Instant(at), self.epoch[l]))
    }

    /// Cut `a → b`; messages in flight on it are lost (they travel in an older epoch).
    pub fn cut(&mut self, a: usize, b: usize) {
        let l = self.link(a, b);
        self.cut[l] = true;
        self.epoch[l] = self.epoch[l].wrapping_add(1);
    }

    /// Heal every link between nodes (not the journal's).
    pub fn heal_nodes(&mut self) {
        let n = self.journal();
        for a in 0..n {
            for b in 0..n {
                let l = self.link(a, b);
                self.cut[l] = false;
            }
        }
    }

    /// Cut or heal every link between the nodes and the journal.
    pub fn set_journal_links(&mut self, reachable: bool) {
        let j = self.journal();
        for a in 0..j {
            if reachable {
                let (l1, l2) = (self.link(a, j), self.link(j, a));
                self.cut[l1] = false;
                self.cut[l2] = false;
            } else {
                self.cut(a, j);
                self.cut(j, a);
            }
        }
    }
}
