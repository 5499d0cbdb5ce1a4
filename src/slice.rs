//! Campaigns beyond one machine: `fuzz --slice I/N` runs the I-th of N disjoint, contiguous seed
//! ranges of a campaign, so N machines (a Kubernetes Indexed Job, a Slurm job array, or a
//! shell loop) each run one slice, write its summary, and `shardsim merge` combines them into
//! the summary one machine would have written.
//!
//! The split, exactly: the campaign is the seeds `[S, S + T)` (`--seed-start S`,
//! `--schedules T`). Slices are numbered from 0. Slice `I` of `N` is
//! `[S + floor(I·T / N), S + floor((I + 1)·T / N))`: contiguous, in order, together exactly the
//! campaign, and their sizes differ by at most one (with `T < N` some slices are empty).
//!
//! `--slice auto/N` takes `I` from the environment:
//! - `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job: 0 to `completions - 1`), else
//! - `SLURM_ARRAY_TASK_ID` (a Slurm job array), as `(SLURM_ARRAY_TASK_ID - MIN) / STEP` with
//!   `MIN = SLURM_ARRAY_TASK_MIN` (0 when unset) and `STEP = SLURM_ARRAY_TASK_STEP` (1 when
//!   unset): `--array=0-6` and `--array=1-7` both give slices 0 to 6. When Slurm sets
//!   `SLURM_ARRAY_TASK_COUNT`, it must equal `N`.

use std::fmt;
use std::str::FromStr;

/// What `--slice` said: an explicit index, or `auto` (from the environment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceSpec {
    /// `I/N`.
    Index {
        /// The slice, from 0.
        index: u64,
        /// The number of slices.
        count: u64,
    },
    /// `auto/N`.
    Auto {
        /// The number of slices.
        count: u64,
    },
}

/// One slice of a campaign: index (from 0) and count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The slice, `0..count`.
    pub index: u64,
    /// The number of slices, at least 1.
    pub count: u64,
}

/// Why a `--slice` value or its environment is bad input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceError(pub String);

impl fmt::Display for SliceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SliceError {}

fn count_of(s: &str, whole: &str) -> Result<u64, SliceError> {
    let n: u64 = s.trim().parse().map_err(|_| {
        SliceError(format!(
            "`{whole}`: the slice count `{s}` is not a whole number (expected I/N or auto/N, e.g. 0/7)"
        ))
    })?;
    if n == 0 {
        return Err(SliceError(format!(
            "`{whole}`: the slice count must be at least 1"
        )));
    }
    Ok(n)
}

fn check_index(index: u64, count: u64, label: &str) -> Result<(), SliceError> {
    if index >= count {
        return Err(SliceError(format!(
            "{label}: slice index {index} is out of range: slices are numbered from 0, so the index must be below {count}"
        )));
    }
    Ok(())
}

impl FromStr for SliceSpec {
    type Err = SliceError;

    fn from_str(s: &str) -> Result<Self, SliceError> {
        let Some((i, n)) = s.split_once('/') else {
            return Err(SliceError(format!(
                "`{s}`: expected I/N or auto/N (e.g. 0/7: the first of 7 slices)"
            )));
        };
        let count = count_of(n, s)?;
        if i.trim() == "auto" {
            return Ok(SliceSpec::Auto { count });
        }
        let index: u64 = i.trim().parse().map_err(|_| {
            SliceError(format!(
                "`{s}`: the slice index `{i}` is neither a whole number nor `auto` (expected I/N or auto/N)"
            ))
        })?;
        check_index(index, count, &format!("`{s}`"))?;
        Ok(SliceSpec::Index { index, count })
    }
}

impl fmt::Display for SliceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SliceSpec::Index { index, count } => write!(f, "{index}/{count}"),
            SliceSpec::Auto { count } => write!(f, "auto/{count}"),
        }
    }
}

/// Kubernetes Indexed Job: the pod's completion index (from 0).
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
/// Slurm job array: this task's array index.
pub const SLURM_ID: &str = "SLURM_ARRAY_TASK_ID";
/// Slurm job array: the lowest index of the array.
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
/// Slurm job array: the step between indices.
pub const SLURM_STEP: &str = "SLURM_ARRAY_TASK_STEP";
/// Slurm job array: the number of tasks.
pub const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";

fn env_num(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<u64>, SliceError> {
    match env(var) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| {
            SliceError(format!(
                "environment variable {var}=`{v}` is not a whole number"
            ))
        }),
    }
}

impl SliceSpec {
    /// The slice, reading `env` (the process environment in the CLI) for `auto`.
    pub fn resolve(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Slice, SliceError> {
        let count = match self {
            SliceSpec::Index { index, count } => return Ok(Slice { index, count }),
            SliceSpec::Auto { count } => count,
        };
        let whole = self.to_string();
        if let Some(index) = env_num(env, K8S_INDEX)? {
            check_index(index, count, &format!("`{whole}` with {K8S_INDEX}={index}"))?;
            return Ok(Slice { index, count });
        }
        let Some(id) = env_num(env, SLURM_ID)? else {
            return Err(SliceError(format!(
                "`{whole}`: neither {K8S_INDEX} (a Kubernetes Indexed Job) nor {SLURM_ID} (a Slurm job array) is set; give the index explicitly (I/{count}) or run inside one of those"
            )));
        };
        let min = env_num(env, SLURM_MIN)?.unwrap_or(0);
        let step = env_num(env, SLURM_STEP)?.unwrap_or(1).max(1);
        if id < min || (id - min) % step != 0 {
            return Err(SliceError(format!(
                "`{whole}`: {SLURM_ID}={id} is not on the array {min}, {min}+{step}, ..."
            )));
        }
        if let Some(tasks) = env_num(env, SLURM_COUNT)? {
            if tasks != count {
                return Err(SliceError(format!(
                    "`{whole}`: the Slurm array has {SLURM_COUNT}={tasks} tasks, not {count}"
                )));
            }
        }
        let index = (id - min) / step;
        check_index(
            index,
            count,
            &format!("`{whole}` with {SLURM_ID}={id}, {SLURM_MIN}={min}"),
        )?;
        Ok(Slice { index, count })
    }
}

impl Slice {
    /// The whole campaign as one slice.
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };

    /// This slice of the campaign `[seed_start, seed_start + schedules)`: its first seed and
    /// its number of schedules (see the module doc for the split).
    pub fn range(self, seed_start: u64, schedules: u64) -> (u64, u64) {
        let at = |i: u64| (u128::from(i) * u128::from(schedules) / u128::from(self.count)) as u64;
        let (lo, hi) = (at(self.index), at(self.index + 1));
        (seed_start.wrapping_add(lo), hi - lo)
    }

    /// The offset of this slice's first seed from the campaign's `seed_start`.
    pub fn offset(self, schedules: u64) -> u64 {
        self.range(0, schedules).0
    }
}

impl fmt::Display for Slice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let v: Vec<(String, String)> = vars
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k: &str| v.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
    }

    #[test]
    fn slices_are_contiguous_disjoint_and_cover_the_campaign() {
        for (start, total) in [(0u64, 0u64), (0, 1), (5, 10), (100, 20_000), (7, 999)] {
            for n in [1u64, 2, 3, 7, 13, 40] {
                let mut next = start;
                let mut sizes = Vec::new();
                for i in 0..n {
                    let (lo, len) = Slice { index: i, count: n }.range(start, total);
                    assert_eq!(lo, next, "start {start} total {total} n {n} i {i}");
                    next = lo + len;
                    sizes.push(len);
                }
                assert_eq!(next, start + total);
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(max.unwrap() - min.unwrap() <= 1, "{sizes:?}");
            }
        }
        assert_eq!(Slice { index: 2, count: 3 }.range(0, 10), (6, 4));
        assert_eq!(Slice::WHOLE.range(3, 10), (3, 10));
    }

    #[test]
    fn parse_and_reject() {
        assert_eq!(
            "2/7".parse::<SliceSpec>(),
            Ok(SliceSpec::Index { index: 2, count: 7 })
        );
        assert_eq!(
            "auto/4".parse::<SliceSpec>(),
            Ok(SliceSpec::Auto { count: 4 })
        );
        for (bad, says) in [
            ("7/7", "out of range"),
            ("0/0", "at least 1"),
            ("auto/0", "at least 1"),
            ("3", "expected I/N"),
            ("a/3", "neither a whole number nor `auto`"),
            ("1/x", "not a whole number"),
            ("1/2/3", "not a whole number"),
            ("-1/3", "neither a whole number"),
        ] {
            let e = bad.parse::<SliceSpec>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn auto_reads_kubernetes_then_slurm() {
        let auto = SliceSpec::Auto { count: 7 };
        let s = |vars: &[(&str, &str)]| auto.resolve(&env(vars));
        assert_eq!(s(&[(K8S_INDEX, "3")]), Ok(Slice { index: 3, count: 7 }));
        // Kubernetes wins over Slurm.
        assert_eq!(
            s(&[(K8S_INDEX, "0"), (SLURM_ID, "5")]),
            Ok(Slice { index: 0, count: 7 })
        );
        // Slurm arrays from 0 or from 1.
        assert_eq!(s(&[(SLURM_ID, "6")]), Ok(Slice { index: 6, count: 7 }));
        assert_eq!(
            s(&[(SLURM_ID, "7"), (SLURM_MIN, "1"), (SLURM_COUNT, "7")]),
            Ok(Slice { index: 6, count: 7 })
        );
        assert_eq!(
            s(&[(SLURM_ID, "14"), (SLURM_MIN, "2"), (SLURM_STEP, "2")]),
            Ok(Slice { index: 6, count: 7 })
        );
        for (vars, says) in [
            (&[][..], "neither JOB_COMPLETION_INDEX"),
            (&[(K8S_INDEX, "7")][..], "out of range"),
            (&[(K8S_INDEX, "x")][..], "JOB_COMPLETION_INDEX=`x`"),
            (&[(SLURM_ID, "7")][..], "out of range"),
            (&[(SLURM_ID, "0"), (SLURM_MIN, "1")][..], "not on the array"),
            (&[(SLURM_ID, "1"), (SLURM_COUNT, "8")][..], "8 tasks, not 7"),
        ] {
            let e = s(vars).unwrap_err().to_string();
            assert!(e.contains(says), "{vars:?}: {e}");
        }
        // An explicit index ignores the environment.
        assert_eq!(
            SliceSpec::Index { index: 1, count: 2 }.resolve(&env(&[(K8S_INDEX, "0")])),
            Ok(Slice { index: 1, count: 2 })
        );
    }
}
