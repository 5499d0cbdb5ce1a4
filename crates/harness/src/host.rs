//! Hosts other than the own discrete-event world ([`crate::sim`]) that drive the same [`Node`]
//! state machine.
//!
//! - [`madsim`] (built with `--cfg madsim`, which `.cargo/config.toml` sets): every cluster node
//!   a madsim node, messages over madsim's network on per-pair ordered channels, timers as
//!   madsim time, faults through madsim's controls. It cross-checks the own world's network
//!   model and shows how to drive [`Node`] from an async runtime.
//!
//! [`Node`]: shardsim_core::node::Node

#[cfg(madsim)]
pub mod madsim;

use crate::scenario::Scenario;

/// Which host runs a schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Host {
    /// The own discrete-event world ([`crate::sim::World`]).
    #[default]
    Own,
    /// The madsim host ([`madsim`]).
    Madsim,
}

impl Host {
    /// The name the CLI takes (`--host own|madsim`).
    pub fn name(self) -> &'static str {
        match self {
            Host::Own => "own",
            Host::Madsim => "madsim",
        }
    }

    /// Whether this build can run the host (madsim needs `--cfg madsim`).
    pub fn available(self) -> bool {
        match self {
            Host::Own => true,
            Host::Madsim => cfg!(madsim),
        }
    }
}

/// A scenario setting a host cannot express: the field (dotted, as in the file) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The field, e.g. `network.slow-probability`.
    pub field: &'static str,
    /// Why the host cannot run it.
    pub why: String,
}

/// The first setting of `sc` the madsim host cannot express, if any.
pub fn madsim_unsupported(sc: &Scenario) -> Option<Unsupported> {
    if !sc.delays.is_empty() || (sc.swarm.enabled && sc.swarm.delays) {
        return Some(Unsupported {
            field: if sc.delays.is_empty() {
                "swarm.delays"
            } else {
                "delays"
            },
            why: "targeted delays hold messages in the own world's network (src/sim/net.rs); \
                  the madsim host's network has no hold"
                .to_string(),
        });
    }
    if sc.network.slow_probability > 0.0 {
        return Some(Unsupported {
            field: "network.slow-probability",
            why: "the madsim host draws every message's latency from one range (madsim's \
                  `net.send_latency`); a second, slow range is not expressible"
                .to_string(),
        });
    }
    None
}

/// Whether `host` can run `sc` (loaded from `path`): a setting it cannot express, or a host
/// this build lacks, is bad input naming the field (the CLI exits 2).
pub fn validate(
    host: Host,
    sc: &Scenario,
    path: &std::path::Path,
) -> Result<(), crate::scenario::ScenarioError> {
    if !host.available() {
        return Err(crate::scenario::ScenarioError {
            file: path.to_path_buf(),
            line: None,
            field: None,
            message: format!(
                "the {} host needs a build with `--cfg madsim` (the repository's \
                 .cargo/config.toml sets it; a RUSTFLAGS in the environment replaces it: add \
                 `--cfg madsim` there)",
                host.name()
            ),
        });
    }
    if host == Host::Madsim {
        if let Some(u) = madsim_unsupported(sc) {
            let message = format!("not supported by the madsim host: {}", u.why);
            return Err(crate::scenario::field_error(path, u.field, message));
        }
    }
    Ok(())
}

/// Run one seed of `sc` on `host` (which [`validate`] accepted).
pub fn run_seed(
    host: Host,
    sc: &std::sync::Arc<Scenario>,
    seed: u64,
    mode: crate::trace::TraceMode,
) -> (crate::sim::RunResult, crate::trace::Tracer) {
    match host {
        Host::Own => crate::sim::World::new(sc.clone(), seed, mode).run(),
        #[cfg(madsim)]
        Host::Madsim => madsim::run_seed(sc, seed, mode),
        #[cfg(not(madsim))]
        Host::Madsim => panic!("the madsim host needs `--cfg madsim`"),
    }
}
