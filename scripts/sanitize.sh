#!/usr/bin/env bash
# `make sanitize`: the whole test suite under ThreadSanitizer, then under AddressSanitizer with
# LeakSanitizer, each from a clean build in its own scratch path (.build-tsan, .build-asan). Every
# process (the test runner and each `packd serve` it starts) writes its reports to
# .build-sanitize/SANITIZER/report.PID; any report, or any failed test, fails the run.
# Suppressions live in scripts/sanitizers/*.supp, each entry justified on the lines above it.
# SANITIZERS picks a subset ("thread", "address"); PACKD_TEST_TIME_SCALE stretches the tests'
# deadlines (default 10: the suite runs 3-10x slower instrumented), never what they assert.
# SANITIZE_REUSE_BUILD=1 keeps an existing scratch path and builds incrementally (a build from
# clean takes 35 minutes a sanitizer on two cores); the default is the clean build.
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SANITIZERS=${SANITIZERS:-thread address}
export PACKD_TEST_TIME_SCALE=${PACKD_TEST_TIME_SCALE:-10}
reports=.build-sanitize
status=0
summary=""

for sanitizer in $SANITIZERS; do
    case $sanitizer in
        thread) scratch=.build-tsan; options_var=TSAN_OPTIONS
                options="halt_on_error=0:second_deadlock_stack=1:suppressions=$PWD/scripts/sanitizers/thread.supp" ;;
        address) scratch=.build-asan; options_var=ASAN_OPTIONS
                options="detect_leaks=1:halt_on_error=0:detect_stack_use_after_return=0:suppressions=$PWD/scripts/sanitizers/address.supp"
                export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/leak.supp:print_suppressions=0" ;;
        *) echo "unknown sanitizer $sanitizer (thread, address)"; exit 2 ;;
    esac
    rm -rf "$reports/$sanitizer"
    mkdir -p "$reports/$sanitizer"
    if [ "${SANITIZE_REUSE_BUILD:-0}" = 1 ]; then
        echo "== $sanitizer: incremental build in $scratch (SANITIZE_REUSE_BUILD=1)"
    else
        rm -rf "$scratch"
        echo "== $sanitizer: clean build in $scratch"
    fi
    start=$(date +%s)
    if ! $SWIFT build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"; then
        echo "== $sanitizer: build failed"; exit 1
    fi
    built=$(date +%s)
    echo "== $sanitizer: swift test (reports in $reports/$sanitizer)"
    env "$options_var=$options:log_path=$PWD/$reports/$sanitizer/report" PACKD_SANITIZER="$sanitizer" \
        $SWIFT test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" 2>&1 | tee "$reports/$sanitizer/test.log"
    tests=${PIPESTATUS[0]}
    done_at=$(date +%s)
    count=$(cat "$reports/$sanitizer"/report.* 2>/dev/null | grep -cE "^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer))")
    line="$sanitizer: build $((built - start)) s, tests $((done_at - built)) s, test exit $tests, $count reports"
    echo "== $line"
    summary="$summary$line"$'\n'
    if [ "$count" -gt 0 ]; then
        for report in "$reports/$sanitizer"/report.*; do echo "--- $report"; head -60 "$report"; done
        status=1
    fi
    [ "$tests" -eq 0 ] || status=1
done
echo "== summary"
printf "%s" "$summary"
exit $status
