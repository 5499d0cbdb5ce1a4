#!/bin/sh
# Regenerate tests/data/trace-hashes.txt with the RELEASE binary (the test re-computes each hash
# in the test profile, with debug assertions on, so the pins also check that both builds agree).
# Run from the repository root, deliberately, when a change is meant to change schedules; say
# why in the commit.
set -e
cargo build --release --quiet
out=tests/data/trace-hashes.txt
tmp=$(mktemp "$out.XXXXXX")
{
    echo "# scenario seed trace-hash: every scenario file, seeds 0 1 2, from the release build"
    echo "# (tests/data/pin-trace-hashes.sh); checked by tests/determinism.rs in the test profile."
    find sim-scenarios -name '*.toml' | LC_ALL=C sort | while read -r f; do
        for s in 0 1 2; do
            h=$(target/release/shardsim run "$f" --seed "$s" | sed -n 's/^trace hash //p')
            [ -n "$h" ] || { echo "no trace hash for $f seed $s" >&2; exit 1; }
            echo "$f $s $h"
        done
    done
} > "$tmp"
mv "$tmp" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") pins)"
