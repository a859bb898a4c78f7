#!/usr/bin/env bash
# Runs every check and test of herdless on a fresh machine.
#
# Installs what is missing first (ZooKeeper 3.8 and a JRE from apt, the peers
# for interoperability tests, the thumbv7em target, llvm-tools), then:
# formatting, clippy, the docs' links, the whole test suite (the
# integration tests start their own ZooKeeper servers on free loopback
# ports), a no_std build of the core
# for a Cortex-M4F to prove it needs neither std nor alloc, and the STM32
# firmware example built for its board, with its flash and RAM use.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

. "$(dirname "$0")/deps.sh"

if ! rustup target list --installed | grep -qx thumbv7em-none-eabihf; then
    step "adding the thumbv7em-none-eabihf target"
    rustup target add thumbv7em-none-eabihf
fi
for component in rustfmt clippy llvm-tools; do
    rustup component list --installed | grep -q "^$component" || rustup component add "$component"
done

step "cargo fmt --check"
# The workspace's own packages only: `--all` would also check the vendored
# zookeeper-client (vendor/README.md), which keeps its upstream formatting.
cargo fmt -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc (no broken links, every feature set the docs build with)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
RUSTDOCFLAGS="-D warnings" cargo doc -p herdless-std --no-deps --features sim

step "cargo test"
cargo test --workspace

step "herdless-core's hand-written defmt output (host capture)"
cargo test -p herdless-core --features defmt --lib defmt

step "herdless-core for thumbv7em-none-eabihf (no std, no alloc)"
cargo build -p herdless-core --no-default-features --target thumbv7em-none-eabihf

step "herdless-embassy for thumbv7em-none-eabihf (no std, no alloc; embassy-net, defmt)"
cargo build -p herdless-embassy --features embassy-net,defmt --target thumbv7em-none-eabihf

# A workspace of its own (see its Cargo.toml), so it is checked from inside.
# Clippy runs after the release build to reuse its build scripts.
step "firmware-stm32: fmt, release build and size, clippy"
(cd examples/firmware-stm32 && cargo fmt -- --check)
./scripts/firmware-size.sh
(cd examples/firmware-stm32 && cargo clippy --release --locked -- -D warnings)

# The embassy-net end-to-end test needs a network namespace and TAP devices
# of its own, hence root and /dev/net/tun. Where the machine cannot give
# them, say so loudly: the run is then not a full pass.
skipped=()
step "embassy-net devices electing a gateway over TAP devices, in a network namespace"
tap_missing=""
[ "$(id -u)" = 0 ] || tap_missing="not root"
[ -e /dev/net/tun ] || tap_missing="${tap_missing:+$tap_missing, }no /dev/net/tun"
command -v ip >/dev/null 2>&1 || tap_missing="${tap_missing:+$tap_missing, }no ip (iproute2)"
if [ -z "$tap_missing" ]; then
    cargo test -p herdless-tests --test embassy_tap -- --ignored --nocapture
else
    printf '\n!!! SKIPPED: embassy_tap (%s)\n' "$tap_missing"
    skipped+=("embassy_tap: $tap_missing")
fi

if [ "${#skipped[@]}" -gt 0 ]; then
    step "all checks passed, but SKIPPED: ${skipped[*]}"
else
    step "all checks passed"
fi
