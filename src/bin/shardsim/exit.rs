//! The exit status of the `shardsim` command.

use std::process::ExitCode;

/// How a command ends, as its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything as declared (the scenario's outcome, its known hazards, a written file).
    Ok = 0,
    /// 1: a campaign, replay or check found what the scenario does not declare, or a sweep or
    /// agreement run found a mismatch.
    Failed = 1,
    /// 2: bad input: a file that does not parse, a bad flag combination, an unwritable output.
    BadInput = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}
