//! A targeted delay as the scenario file writes it (`[[delays]]`); the network applies it
//! ([`crate::sim::delays`] describes what it does).

use serde::{Deserialize, Serialize};

/// The message kinds a delay can name: [`Msg::name`](shardsim_core::protocol::Msg::name) of every protocol message.
pub const KINDS: &[&str] = &[
    "User",
    "Register",
    "RegisterProxy",
    "RegisterAck",
    "GetShardHome",
    "ShardHome",
    "HostShard",
    "ShardStarted",
    "BeginHandOff",
    "BeginHandOffAck",
    "BeginHandOffAckRelay",
    "HandOff",
    "ShardStopped",
    "CoordinatorTerminated",
    "StartEntity",
    "StartEntityAck",
    "GracefulShutdownReq",
    "HandOverToMe",
    "HandOverInProgress",
    "HandOverDone",
    "RegionStopped",
    "GracefulShutdown",
];

/// One `[[delays]]` entry, as the file writes it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DelaySpec {
    /// The message kind held (a name of [`KINDS`]); unset: every protocol message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Only messages sent by this node; unset: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    /// Only messages to this node; unset: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    /// The window opens: messages sent from then on are held, ms.
    #[serde(default)]
    pub at_ms: u64,
    /// The window closes (inclusive), ms; unset: `at-ms` + `hold-ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
    /// How long each matching message is held back, ms (at least 1).
    pub hold_ms: u64,
    /// Hold at most this many messages (unset: every matching one in the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

impl DelaySpec {
    /// The window's end, ms.
    pub fn until(&self) -> u64 {
        self.until_ms
            .unwrap_or(self.at_ms.saturating_add(self.hold_ms))
    }

    /// Check the entry against a cluster of `nodes`: (field within the entry, message).
    pub fn check(&self, nodes: u32) -> Result<(), (&'static str, String)> {
        if let Some(m) = &self.message {
            if !KINDS.contains(&m.as_str()) {
                return Err((
                    "message",
                    format!("unknown message kind {m:?}; one of {}", KINDS.join(", ")),
                ));
            }
        }
        for (field, v) in [("from", self.from), ("to", self.to)] {
            if let Some(v) = v {
                if v >= nodes {
                    return Err((field, format!("node {v} does not exist (0..{nodes})")));
                }
            }
        }
        if self.from.is_some() && self.from == self.to {
            return Err((
                "to",
                "`from` and `to` are one node: messages within a node are not held".into(),
            ));
        }
        if self.hold_ms == 0 {
            return Err(("hold-ms", "must be at least 1".into()));
        }
        if let Some(u) = self.until_ms {
            if u < self.at_ms {
                return Err((
                    "until-ms",
                    format!(
                        "the window ends ({u}) before it opens (at-ms = {})",
                        self.at_ms
                    ),
                ));
            }
        }
        if self.count == Some(0) {
            return Err((
                "count",
                "must be at least 1 (leave it out for every message)".into(),
            ));
        }
        Ok(())
    }
}
