#!/usr/bin/env bash
# herdless side by side with Curator 5.4, Kazoo 2.8 and a raw pipelined
# client (the floor), on one warm ZooKeeper 3.8 server of its own.
#
#   ./scripts/bench.sh            the full run (about 5 minutes)
#   ./scripts/bench.sh --quick    a smoke run: few cycles, figures meaningless
#
# Installs what is missing (scripts/deps.sh), builds the benchmark in
# release, then runs tests/src/bin/bench.rs, which starts the server on a
# free loopback port, warms it with 30,000 requests and runs every client in
# turn on it (the peers as programs of ours: tests/bench/). Prints progress on
# stderr and a markdown table with ratios on stdout, then the core's
# micro-benchmarks (time per recipe input). Benchmarks print figures:
# nothing here asserts a time.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

. "$(dirname "$0")/deps.sh"

step "building the benchmark (release)"
cargo build --release -p herdless-tests --bin bench >&2

step "running it on $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
./target/release/bench "$@"

# No server: the recipes alone, replaying traces recorded on the in-memory
# ZooKeeper (core/benches/recipe_inputs.rs). Divan prints inputs per second
# per replay; core/tests/no_heap.rs asserts that they allocate nothing.
step "herdless-core: time per recipe input (lock, election)"
if [ "${1:-}" = "--quick" ]; then
    cargo bench -p herdless-core --bench recipe_inputs -- --sample-count 10
else
    cargo bench -p herdless-core --bench recipe_inputs
fi
