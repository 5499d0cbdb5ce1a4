//! One module per subcommand, each with its `run`.

pub mod agree;
pub mod bench;
pub mod check_trace;
pub mod explain;
pub mod fuzz;
pub mod merge;
pub mod run;
pub mod shrink;
pub mod sweep;
