#!/usr/bin/env bash
# wait_for of tests/lib/wait.sh (TAP): what was run and returned, no timing.
set -uo pipefail
. "$(dirname "$0")/wait.sh"
n=0
pass() { echo "ok $((n += 1)) - $1"; }
fail() { echo "not ok $((n += 1)) - $1"; }
calls=0
count_to() { calls=$((calls + 1)); [ "$calls" -ge "$1" ]; }
echo "1..4"
calls=0
if wait_for 10000 count_to 1 && [ "$calls" = 1 ]; then pass "true at once: run once"; else fail "true at once: run once ($calls)"; fi
calls=0
if wait_for 60000 count_to 3 && [ "$calls" = 3 ]; then pass "polls until it holds"; else fail "polls until it holds ($calls)"; fi
calls=0
if ! wait_for 100 count_to 1000000 && [ "$calls" -ge 2 ]; then pass "false after the timeout, run again at the deadline"; else fail "false after the timeout ($calls)"; fi
out=$(wait_for 1000 echo noisy)
if [ -z "$out" ]; then pass "the command's output is discarded"; else fail "output: $out"; fi
