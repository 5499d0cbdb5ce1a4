//! What several commands share: loading a scenario file, and finding the scenario files
//! under a folder.

use crate::exit::Exit;
use shardsim_harness::host::{self, Host};
use shardsim_harness::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Load a scenario the host can run (else exit 2 naming the field).
pub fn load_on(path: &Path, host: Host) -> Result<Arc<Scenario>, Exit> {
    let sc = load(path)?;
    host::validate(host, &sc, path).map_err(|e| {
        eprintln!("error: {e}");
        Exit::BadInput
    })?;
    Ok(sc)
}

/// Load a scenario file (else exit 2, the error naming the file, line and field).
pub fn load(path: &Path) -> Result<Arc<Scenario>, Exit> {
    Scenario::load(path).map(Arc::new).map_err(|e| {
        eprintln!("error: {e}");
        Exit::BadInput
    })
}

/// Each `(flag, path)` that will be written can be (else exit 2 naming the flag and the path),
/// checked before the work starts.
pub fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<(), Exit> {
    for (flag, path) in outputs {
        if let Some(p) = path {
            if let Err(e) = shardsim::campaign::check_writable(p) {
                eprintln!("error: {flag} {}: cannot write there: {e}", p.display());
                return Err(Exit::BadInput);
            }
        }
    }
    Ok(())
}

/// Every `.toml` file under `dir`, recursively, in path order.
pub fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(scenario_files(&p));
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    out
}

/// The threads a campaign runs on: `--jobs`, or every core. More jobs than cores is allowed (the
/// answer does not depend on it) but only shares the cores, so it warns.
pub fn jobs_or_cores(jobs: Option<usize>) -> usize {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    match jobs {
        Some(j) if j > cores => {
            eprintln!(
                "warning: --jobs {j} is more than the {cores} cores here; the extra threads only share them"
            );
            j
        }
        Some(j) => j,
        None => cores,
    }
}
