//! Targeted delays (PCT-style): the network holds back a chosen message kind
//! and/or the messages of one directed node pair for a while.
//!
//! A `[[delays]]` entry matches the protocol messages (the names the trace prints, Akka's:
//! `HandOff`, `BeginHandOffAck`, `User`, ...) sent between two different nodes in its window
//! `[at-ms, until-ms]`, and adds `hold-ms` to their latency. The link stays FIFO (Akka remoting
//! is FIFO per pair of actor systems): a held message delays every later message on its link,
//! membership gossip included, as a slow TCP connection would ([`crate::sim::net::Net`] never
//! schedules an arrival before the previous one on a link). Messages between the actors of one
//! node are not network messages and are never held. No random draw is made for a delay, so a
//! scenario without `[[delays]]` keeps its exact trace.
//!
//! The swarm draws delays per seed when `[swarm] delays = true` ([`draw`], from its own stream
//! [`Stream::SwarmDelays`], so the other streams' draws do not move).

pub use crate::delay::{DelaySpec, KINDS};
use crate::scenario::Scenario;
use shardsim_core::protocol::Msg;
use shardsim_core::rng::{Rng, Stream};

/// The kinds the swarm and `fuzz --guided` draw from: the ones of allocation and hand-off,
/// where the hand-off hazards live (§5, §11.3), and the user messages they race with.
pub const DRAWN_KINDS: &[&str] = &[
    "User",
    "GetShardHome",
    "ShardHome",
    "HostShard",
    "ShardStarted",
    "BeginHandOff",
    "BeginHandOffAck",
    "HandOff",
    "ShardStopped",
    "RegisterAck",
];

/// A delay compiled for the network.
#[derive(Clone, Debug)]
struct Hold {
    kind: Option<&'static str>,
    from: Option<u32>,
    to: Option<u32>,
    at_us: u64,
    until_us: u64,
    hold_us: u64,
    left: Option<u32>,
}

/// The delays of one run, consulted for every protocol message sent between two nodes.
#[derive(Clone, Debug, Default)]
pub struct Holds {
    holds: Vec<Hold>,
}

impl Holds {
    /// The delays of `specs` (entries [`DelaySpec::check`] rejects are left out: only a
    /// scenario that skipped validation has them).
    pub fn new(specs: &[DelaySpec], nodes: u32) -> Self {
        let holds = specs
            .iter()
            .filter(|d| d.check(nodes).is_ok())
            .map(|d| Hold {
                kind: d
                    .message
                    .as_deref()
                    .and_then(|m| KINDS.iter().copied().find(|k| *k == m)),
                from: d.from,
                to: d.to,
                at_us: d.at_ms.saturating_mul(1000),
                until_us: d.until().saturating_mul(1000),
                hold_us: d.hold_ms.saturating_mul(1000),
                left: d.count,
            })
            .collect();
        Holds { holds }
    }

    /// Whether there is no delay at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.holds.is_empty()
    }

    /// How long a message `msg` sent at `now_us` on `from → to` is held, µs: the sum over
    /// the matching delays (each counts the message against its `count`).
    pub fn hold_us(&mut self, now_us: u64, from: u32, to: u32, msg: &Msg) -> u64 {
        let mut total = 0u64;
        let name = msg.name();
        for h in &mut self.holds {
            if now_us < h.at_us
                || now_us > h.until_us
                || h.from.is_some_and(|f| f != from)
                || h.to.is_some_and(|t| t != to)
                || h.kind.is_some_and(|k| k != name)
                || h.left == Some(0)
            {
                continue;
            }
            if let Some(l) = &mut h.left {
                *l -= 1;
            }
            total = total.saturating_add(h.hold_us);
        }
        total
    }
}

/// The delays of `sc` run with `seed`: its explicit `[[delays]]`, then, with `[swarm] delays`,
/// the swarm's draw for the seed.
pub fn plan(sc: &Scenario, seed: u64) -> Vec<DelaySpec> {
    let mut out = sc.delays.clone();
    if sc.swarm.enabled && sc.swarm.delays {
        out.extend(draw(sc, seed));
    }
    out
}

/// The swarm's delays for `seed`: one to `swarm.max-per-kind` entries, each a kind of
/// [`DRAWN_KINDS`] (or every kind, one time in five), a directed pair half of the time, a
/// window after `swarm.start-ms` of up to 2 s, and a hold of up to `swarm.max-hold-ms`.
pub fn draw(sc: &Scenario, seed: u64) -> Vec<DelaySpec> {
    let mut rng = Rng::fork(seed, Stream::SwarmDelays);
    let end = if sc.liveness.enabled {
        sc.run.duration_ms - sc.liveness.quiet_ms
    } else {
        sc.run.duration_ms
    };
    let n = sc.cluster.nodes;
    if n < 2 {
        return Vec::new();
    }
    let lo = sc.swarm.start_ms.min(end);
    let k = rng.range(1, u64::from(sc.swarm.max_per_kind.max(1)));
    (0..k)
        .map(|_| random_delay(&mut rng, n, lo, end, sc.swarm.max_hold_ms.max(1)))
        .collect()
}

/// One random delay among `n` nodes with its window opening in `[lo, hi]` ms.
pub fn random_delay(rng: &mut Rng, n: u32, lo: u64, hi: u64, max_hold_ms: u64) -> DelaySpec {
    let message = if rng.chance(0.2) {
        None
    } else {
        Some(DRAWN_KINDS[rng.range(0, DRAWN_KINDS.len() as u64 - 1) as usize].to_string())
    };
    let (from, to) = if rng.chance(0.5) {
        let f = rng.range(0, u64::from(n) - 1) as u32;
        let mut t = rng.range(0, u64::from(n) - 2) as u32;
        if t >= f {
            t += 1;
        }
        (Some(f), Some(t))
    } else {
        (None, None)
    };
    let at_ms = rng.range(lo, hi.max(lo));
    let until_ms = Some(at_ms + rng.range(0, 2_000));
    let hold_ms = rng.range(1, max_hold_ms);
    DelaySpec {
        message,
        from,
        to,
        at_ms,
        until_ms,
        hold_ms,
        count: None,
    }
}

/// A one-line description of delays, for the swarm profile.
pub fn describe(ds: &[DelaySpec]) -> String {
    let parts: Vec<String> = ds
        .iter()
        .map(|d| {
            let pair = match (d.from, d.to) {
                (Some(f), Some(t)) => format!(" {f}->{t}"),
                (Some(f), None) => format!(" {f}->*"),
                (None, Some(t)) => format!(" *->{t}"),
                (None, None) => String::new(),
            };
            format!(
                "{}{pair} {}-{}ms +{}ms",
                d.message.as_deref().unwrap_or("*"),
                d.at_ms,
                d.until(),
                d.hold_ms
            )
        })
        .collect();
    format!("delays [{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardsim_core::ids::{EntityId, SenderId, ShardId};
    use shardsim_core::protocol::Envelope;

    fn spec(message: Option<&str>, from: Option<u32>, to: Option<u32>) -> DelaySpec {
        DelaySpec {
            message: message.map(str::to_string),
            from,
            to,
            at_ms: 10,
            until_ms: Some(20),
            hold_ms: 5,
            count: None,
        }
    }

    #[test]
    fn every_message_name_is_a_kind() {
        let m = Msg::HandOff { shard: ShardId(0) };
        assert!(KINDS.contains(&m.name()));
        for k in DRAWN_KINDS {
            assert!(KINDS.contains(k), "{k}");
        }
    }

    #[test]
    fn holds_match_kind_pair_window_and_count() {
        let user = Msg::User(Envelope {
            sender: SenderId(0),
            entity: EntityId(0),
            seq: 1,
        });
        let handoff = Msg::HandOff { shard: ShardId(1) };
        let mut h = Holds::new(&[spec(Some("HandOff"), Some(0), Some(1))], 3);
        assert_eq!(h.hold_us(15_000, 0, 1, &handoff), 5_000);
        assert_eq!(h.hold_us(15_000, 0, 1, &user), 0, "other kind");
        assert_eq!(h.hold_us(15_000, 1, 0, &handoff), 0, "other direction");
        assert_eq!(h.hold_us(9_999, 0, 1, &handoff), 0, "before the window");
        assert_eq!(h.hold_us(20_000, 0, 1, &handoff), 5_000, "window inclusive");
        assert_eq!(h.hold_us(20_001, 0, 1, &handoff), 0, "after the window");
        let mut c = spec(None, None, None);
        c.count = Some(1);
        let mut h = Holds::new(&[c], 3);
        assert_eq!(h.hold_us(15_000, 2, 1, &user), 5_000);
        assert_eq!(h.hold_us(15_000, 2, 1, &user), 0, "count spent");
    }

    #[test]
    fn a_held_message_delays_the_ones_behind_it_on_its_link_only() {
        use crate::scenario::NetworkSpec;
        use crate::sim::net::Net;
        use shardsim_core::time::Instant;
        let spec = NetworkSpec {
            latency_ms: [1, 1],
            ..NetworkSpec::default()
        };
        let mut net = Net::new(3, spec, 7);
        net.set_holds(Holds::new(&[spec_held()], 3));
        let user = Msg::User(Envelope {
            sender: SenderId(0),
            entity: EntityId(0),
            seq: 1,
        });
        let handoff = Msg::HandOff { shard: ShardId(1) };
        let t = Instant(15_000);
        let (held, _) = net.schedule_msg(t, 0, 1, &handoff).unwrap();
        assert_eq!(held.0, 15_000 + 1_000 + 5_000);
        // The next message on 0 → 1 is not held itself but waits behind the held one (FIFO).
        let (behind, _) = net.schedule_msg(t, 0, 1, &user).unwrap();
        assert_eq!(behind, held);
        // Another link is not affected.
        let (other, _) = net.schedule_msg(t, 0, 2, &user).unwrap();
        assert_eq!(other.0, 16_000);
    }

    fn spec_held() -> DelaySpec {
        spec(Some("HandOff"), Some(0), Some(1))
    }

    #[test]
    fn checks_name_the_field() {
        let bad = |d: DelaySpec| d.check(3).unwrap_err().0;
        assert_eq!(bad(spec(Some("Handoff"), None, None)), "message");
        assert_eq!(bad(spec(None, Some(3), None)), "from");
        assert_eq!(bad(spec(None, None, Some(5))), "to");
        assert_eq!(bad(spec(None, Some(1), Some(1))), "to");
        let mut d = spec(None, None, None);
        d.hold_ms = 0;
        assert_eq!(bad(d), "hold-ms");
        let mut d = spec(None, None, None);
        d.until_ms = Some(5);
        assert_eq!(bad(d), "until-ms");
        let mut d = spec(None, None, None);
        d.count = Some(0);
        assert_eq!(bad(d), "count");
        assert!(spec(Some("User"), Some(0), Some(2)).check(3).is_ok());
    }
}
