#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds twice
# (plain, and with AddressSanitizer + UBSan for the in-process layers), runs every
# default test through `meson test`, and ends with "N passed, N failed".
#
#   ./scripts/test.sh            the default suite: everything but suite 'long'
#   ./scripts/test.sh --long     also the opt-in suite 'long' (issue 15's
#                                failover runs and master-failover move tests,
#                                the buggy-build check; ~6 min more)
#   ./scripts/test.sh --suite docdb  one meson suite (both builds)
set -euo pipefail
cd "$(dirname "$0")/.."
skip_long=(--no-suite long)
if [ "${1:-}" = "--long" ]; then
	skip_long=()
	shift
fi
. scripts/lib/deps.sh

docraft_ensure_packages libclang-rt-14-dev clang prometheus chromium redis-server redis-tools python3-redis
# No arrow points up (docs/style.md "Layers"): fails before anything builds.
scripts/check-layers.sh
werror=false
[ "${CI:-}" = "true" ] && werror=true

# The sanitizer build runs the suites of the in-process layers (one per
# folder of tests/; lib: the shared test helpers; checker: the failover
# suite's history checkers), less their real-process tests (suite
# 'process'): build just those programs (the servers, tools and benchmarks
# are not run there).
ASAN_SUITES=(lib common docdb cql net redis yedis rpc http server raft raftlog tablet client master tools checker)
docraft_build build -Dwerror=$werror
docraft_configure build-asan -Db_sanitize=address,undefined -Dwerror=$werror
# Regenerate first when a meson.build changed, so the targets below are current.
ninja -C build-asan build.ninja >/dev/null
# shellcheck disable=SC2046 # one target per word
ninja -C build-asan $(docraft_suite_targets build-asan --no-suite process "${ASAN_SUITES[@]}") >/dev/null

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
status=0
meson test -C build --no-rebuild --print-errorlogs "${skip_long[@]}" "$@" || status=1
meson test -C build-asan --no-rebuild --print-errorlogs "${ASAN_SUITES[@]/#/--suite=}" \
	--no-suite=process "$@" || status=1

python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        continue
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $status
