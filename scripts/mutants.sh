#!/usr/bin/env bash
# Mutation testing with cargo-mutants: herdless-core's recipes, the engine
# parts, names and contract types they share, the wire codec, the wire
# session and the in-memory ZooKeeper the simulated tests run on; and
# herdless-embassy's driver and handles, against the real-server tests that
# run them on the host (these need ZooKeeper at /usr/share/java, as
# `./scripts/test.sh` installs it), and its embassy-net transport against
# the TAP tests (root and /dev/net/tun); herdless-std's driver, recipe handles,
# sessions, inspection and backend, against its tests on the in-memory
# ZooKeeper; and its real-server backend and connection options, against
# the real-server tests.
#
#   ./scripts/mutants.sh                 every module (hours on 2 cores)
#   ./scripts/mutants.sh lock barrier    some of them
#   ./scripts/mutants.sh --list          how many mutants each module has
#   ./scripts/mutants.sh --in-diff REV lock
#                                        only the mutants on lines changed
#                                        since REV (a quick check of a change)
#
# Each module is mutated on its own and checked against the tests that
# concern it (its unit tests and its test files), with fewer seeded
# schedules than `cargo test` runs (HERDLESS_SCHEDULES, default 200 here),
# so that a module finishes in minutes to an hour. Results land in
# mutants.out/<module>/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
#
# A mutant that survives is either killed by a new test or listed in
# core/mutants-equivalent.txt as `<file>:<line>:<col>: <mutation>  # why`;
# the summary counts those separately and fails if any other survives.
# Edits move lines: ./scripts/mutants-relocate.py re-locates the listed
# mutants (same file, column and mutation, nearest line).
# Not run in CI: too slow for it.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo-mutants >/dev/null 2>&1 || cargo install cargo-mutants --locked

# module: the files mutated, then the test targets that cover them.
declare -A FILES=(
    [lock]="core/src/recipes/lock.rs"
    [revoke]="core/src/recipes/revoke.rs"
    [election]="core/src/recipes/election/*.rs"
    [config]="core/src/recipes/config.rs"
    [barrier]="core/src/recipes/barrier.rs"
    [double_barrier]="core/src/recipes/double_barrier/*.rs"
    [queue]="core/src/recipes/queue/*.rs"
    [two_phase]="core/src/recipes/two_phase/*.rs"
    [membership]="core/src/recipes/group/*.rs"
    [link]="core/src/engine/link.rs"
    [sessions]="core/src/engine/sessions.rs"
    [ancestors]="core/src/engine/ancestors.rs"
    [contention]="core/src/engine/contention.rs core/src/engine/contention_flow.rs core/src/engine/catch_up.rs core/src/engine/deadline.rs"
    [pipeline]="core/src/engine/pipeline.rs core/src/engine/event_queue.rs"
    [names]="core/src/names/*.rs"
    [sim_tree]="core/src/sim/tree.rs core/src/sim/watches.rs"
    [sim_server]="core/src/sim/server.rs core/src/sim/server/lag.rs core/src/sim/owned.rs core/src/sim/acl.rs"
    [sim_world]="core/src/sim/world.rs core/src/sim/peer.rs core/src/sim/either.rs"
    [contract]="core/src/contract/*.rs"
    [wire]="core/src/wire/*.rs"
    [session]="core/src/wire/session/mod.rs core/src/wire/session/server_order.rs core/src/wire/session/watches.rs core/src/wire/session/auth.rs core/src/wire/session/config.rs core/src/wire/session/error.rs core/src/wire/session/output.rs"
    [embassy]="transport-embassy/src/zk/*.rs"
    [embassy_handles]="transport-embassy/src/handle.rs transport-embassy/src/erased.rs transport-embassy/src/lock.rs transport-embassy/src/election.rs transport-embassy/src/error.rs"
    [embassy_recipes]="transport-embassy/src/config.rs transport-embassy/src/member.rs transport-embassy/src/barrier.rs transport-embassy/src/queue.rs transport-embassy/src/two_phase.rs"
    [embassy_tcp]="transport-embassy/src/tcp.rs"
    [std_driver]="transport-std/src/driver/*.rs"
    [std_holders]="transport-std/src/recipes/lock.rs transport-std/src/recipes/election.rs transport-std/src/fence.rs"
    [std_recipes]="transport-std/src/recipes/queue.rs transport-std/src/recipes/two_phase.rs transport-std/src/recipes/config.rs transport-std/src/recipes/group.rs transport-std/src/recipes/member.rs transport-std/src/recipes/barrier.rs transport-std/src/recipes/revoke.rs transport-std/src/recipes/rwlock.rs transport-std/src/recipes/read_failure.rs transport-std/src/recipes/observed.rs"
    [std_session]="transport-std/src/renew.rs transport-std/src/connection.rs transport-std/src/inspect.rs transport-std/src/error.rs transport-std/src/backend/mod.rs transport-std/src/backend/reads.rs transport-std/src/backend/state.rs"
    [std_real]="transport-std/src/backend/real.rs transport-std/src/connect.rs transport-std/src/chroot.rs transport-std/src/session.rs"
    [std_sim]="transport-std/src/sim/client.rs transport-std/src/sim/server.rs transport-std/src/sim/session.rs"
)
declare -A TESTS=(
    [lock]="lock_safety lock_protocol lock_pitfalls lock_sim rwlock_protocol rwlock_pitfalls rwlock_sim wire_lock election_api election_faults election_pitfalls election_sim acl lost_before_sent any_answer"
    [revoke]="rwlock_protocol rwlock_sim any_answer"
    [election]="election_api election_faults election_pitfalls election_sim acl lost_before_sent any_answer"
    [config]="config_faults config_sim config_api lost_before_sent any_answer"
    [barrier]="barrier_faults barrier_sim lost_before_sent any_answer"
    [double_barrier]="barrier_double_faults double_barrier_pitfalls double_barrier_give_up double_barrier_parts barrier_sim lost_before_sent any_answer"
    [queue]="queue_faults queue_sim queue_api lost_before_sent any_answer"
    [two_phase]="two_phase_faults two_phase_sim two_phase_api any_answer"
    [membership]="membership_faults membership_sim membership_api lost_before_sent any_answer"
    [ancestors]="lock_protocol lock_pitfalls election_faults election_pitfalls queue_api queue_faults barrier_faults barrier_double_faults two_phase_faults two_phase_api membership_faults membership_api acl any_answer"
    [sessions]="membership_faults membership_api membership_sim barrier_double_faults barrier_sim lock_pitfalls lock_protocol lock_sim rwlock_sim election_pitfalls election_sim any_answer"
    [link]="lock_protocol election_faults queue_api barrier_double_faults membership_api membership_faults config_faults barrier_faults lost_before_sent any_answer"
    [contention]="lock_safety lock_protocol lock_pitfalls lock_sim rwlock_protocol rwlock_sim wire_lock election_api election_faults election_pitfalls election_sim acl any_answer"
    [pipeline]="lock_safety lock_protocol lock_pitfalls election_faults election_pitfalls wire_lock acl lost_before_sent any_answer double_barrier_give_up double_barrier_parts queue_api queue_faults"
    [names]="lock_protocol lock_pitfalls election_faults election_pitfalls queue_api membership_api barrier_double_faults two_phase_api config_api acl any_answer"
    [sim_tree]="sim_multi lock_sim election_sim queue_sim config_faults lock_protocol"
    [sim_server]="sim_acl sim_multi lock_safety lock_sim election_sim queue_sim config_faults config_sim election_faults barrier_double_faults barrier_sim membership_faults two_phase_sim"
    [sim_world]="sim_multi lock_safety lock_sim election_sim queue_sim config_faults election_faults barrier_double_faults membership_faults"
    [contract]="lock_protocol election_faults config_api queue_api acl wire_lock wire_roundtrip"
    [wire]="wire_lock wire_roundtrip"
    [session]="wire_lock wire_roundtrip"
    [embassy]="embassy_real embassy_silence_real embassy_recipes_real embassy_fleet_real security_real"
    [embassy_handles]="embassy_real embassy_silence_real embassy_recipes_real embassy_fleet_real security_real"
    [embassy_recipes]="embassy_recipes_real"
    [embassy_tcp]="embassy_tap"
    [std_driver]="sim_lock_election sim_recipes sim_driver sim_handles sim_inspect sim_acl"
    [std_holders]="sim_lock_election sim_recipes sim_driver sim_handles sim_inspect"
    [std_recipes]="sim_lock_election sim_recipes sim_driver sim_handles sim_inspect"
    [std_session]="sim_lock_election sim_recipes sim_driver sim_handles sim_inspect sim_acl"
    [std_real]="lock_real fence_real security_real config_real barrier_real chroot_real"
    [std_sim]="sim_lock_election sim_recipes sim_driver sim_handles sim_inspect sim_acl"
)
# Where a module's code and its tests live, when not both in herdless-core.
declare -A PACKAGE=([embassy]=herdless-embassy [embassy_handles]=herdless-embassy [embassy_recipes]=herdless-embassy [embassy_tcp]=herdless-embassy [std_driver]=herdless-std [std_holders]=herdless-std [std_recipes]=herdless-std [std_session]=herdless-std [std_real]=herdless-std [std_sim]=herdless-std)
declare -A TEST_PACKAGE=([embassy]=herdless-tests [embassy_handles]=herdless-tests [embassy_recipes]=herdless-tests [embassy_tcp]=herdless-tests [std_real]=herdless-tests)
# Cargo features a module's tests need: the contract's hand-written defmt
# output is tested on the host only with herdless-core's `defmt` feature.
declare -A FEATURES=([contract]=defmt)
# Arguments for the test binaries themselves: the TAP tests are ignored in a
# plain `cargo test` (they need root and /dev/net/tun); their file's plain
# tests run with them.
declare -A HARNESS_ARGS=([embassy_tcp]="--include-ignored")
ORDER=(lock revoke election config barrier double_barrier queue two_phase membership link ancestors contention pipeline names contract wire session sim_tree sim_server sim_world embassy embassy_handles embassy_recipes embassy_tcp std_driver std_holders std_recipes std_session std_real std_sim)

list=false
modules=()
diff_args=()
while [ $# -gt 0 ]; do
    arg="$1"
    shift
    case "$arg" in
        --list) list=true ;;
        --in-diff)
            [ $# -gt 0 ] || { echo "--in-diff needs a revision" >&2; exit 2; }
            mkdir -p mutants.out
            git diff "$1" -- core/src transport-embassy/src transport-std/src >mutants.out/since.diff
            diff_args=(--in-diff mutants.out/since.diff)
            shift
            ;;
        *)
            [ -n "${FILES[$arg]+x}" ] || { echo "unknown module: $arg (one of: ${ORDER[*]})" >&2; exit 2; }
            modules+=("$arg")
            ;;
    esac
done
[ "${#modules[@]}" -gt 0 ] || modules=("${ORDER[@]}")

export HERDLESS_SCHEDULES="${HERDLESS_SCHEDULES:-200}"
equivalent=core/mutants-equivalent.txt
failed=0
summary=()
for m in "${modules[@]}"; do
    package="${PACKAGE[$m]:-herdless-core}"
    package_args=(-p "$package")
    if [ -n "${FEATURES[$m]+x}" ]; then
        package_args+=(--features "${FEATURES[$m]}")
    fi
    test_args=()
    run_env=()
    if [ -n "${TEST_PACKAGE[$m]+x}" ]; then
        # cargo-mutants (27.1) runs its unmutated baseline on the mutated
        # package's own tests even with --test-package (`cargo mutants -p A
        # --test-package B -- --test t` fails its baseline: "no test target
        # named t in A"). So the baseline is run here instead, and the
        # timeout it would have derived from it (5 times ~30 s) is set.
        package_args+=(--test-package "${TEST_PACKAGE[$m]}" --baseline skip --timeout 150)
        # A real-server test that fails waits out its own limits (tens of
        # seconds); all of a file's tests at once make a caught mutant cost
        # the longest of them rather than their sum. They mostly wait on
        # the network, so two mutants at a time fit two cores
        # (CARGO_MUTANTS_JOBS overrides).
        run_env+=("RUST_TEST_THREADS=${RUST_TEST_THREADS:-16}" "CARGO_MUTANTS_JOBS=${CARGO_MUTANTS_JOBS:-2}")
    else
        test_args+=(--lib)
    fi
    if [ "$package" = herdless-std ] && [ -z "${TEST_PACKAGE[$m]+x}" ]; then
        # Its tests run on tokio's paused clock in a few seconds: a mutant
        # that makes one wait for ever is caught long before the default
        # minimum of a minute; and building dominates, so two mutants at a
        # time fit two cores.
        package_args+=(--timeout 20)
        run_env+=("CARGO_MUTANTS_JOBS=${CARGO_MUTANTS_JOBS:-2}")
    fi
    file_args=()
    for f in ${FILES[$m]}; do file_args+=(--file "$f"); done
    if $list; then
        printf '%-15s %4d mutants\n' "$m" "$(cargo mutants "${package_args[@]}" "${file_args[@]}" ${diff_args[@]+"${diff_args[@]}"} --list | wc -l)"
        continue
    fi
    for t in ${TESTS[$m]}; do test_args+=(--test "$t"); done
    if [ -n "${HARNESS_ARGS[$m]+x}" ]; then
        test_args+=(-- ${HARNESS_ARGS[$m]})
    fi
    out="mutants.out/$m"
    rm -rf "$out"
    mkdir -p "$out"
    if [ -n "${TEST_PACKAGE[$m]+x}" ]; then
        # Every mutant would count as caught if these failed unmutated.
        echo "==> $m: the unmutated baseline"
        env ${run_env[@]+"${run_env[@]}"} cargo test -p "${TEST_PACKAGE[$m]}" --profile mutants "${test_args[@]}"
    fi
    echo "==> $m: mutating ${FILES[$m]} against ${TESTS[$m]} (HERDLESS_SCHEDULES=$HERDLESS_SCHEDULES)"
    # Exit 2 means mutants were missed: judged below against the list.
    env ${run_env[@]+"${run_env[@]}"} cargo mutants "${package_args[@]}" "${file_args[@]}" ${diff_args[@]+"${diff_args[@]}"} --output "$out" --profile mutants \
        --minimum-test-timeout 60 -- "${test_args[@]}" || true
    dir="$out/mutants.out"
    count() { if [ -f "$dir/$1" ]; then grep -c . "$dir/$1" || true; else echo 0; fi; }
    caught=$(count caught.txt)
    missed=$(count missed.txt)
    timeout=$(count timeout.txt)
    unviable=$(count unviable.txt)
    listed=0
    unexplained=()
    if [ -f "$dir/missed.txt" ]; then
        while IFS= read -r line; do
            if grep -qF -- "$line" "$equivalent" 2>/dev/null; then
                listed=$((listed + 1))
            else
                unexplained+=("$line")
            fi
        done <"$dir/missed.txt"
    fi
    viable=$((caught + missed + timeout))
    # A mutant that makes the tests hang is caught (the tests did not pass).
    detected=$((caught + timeout))
    score=$(awk -v d="$detected" -v v="$viable" -v l="$listed" \
        'BEGIN { if (v - l > 0) printf "%.1f", 100 * d / (v - l); else print "n/a" }')
    summary+=("$(printf '%-15s caught %4d (+%d timeouts) of %4d viable, %d listed as equivalent, %d unviable: %s%%' \
        "$m" "$caught" "$timeout" "$viable" "$listed" "$unviable" "$score")")
    if [ "${#unexplained[@]}" -gt 0 ]; then
        failed=1
        printf '  survivor: %s\n' "${unexplained[@]}" | tee -a "$out/survivors.txt"
    fi
done
$list && exit 0
printf '\n==> mutation scores (equivalent mutants left out of the denominator)\n'
printf '%s\n' "${summary[@]}"
exit "$failed"
