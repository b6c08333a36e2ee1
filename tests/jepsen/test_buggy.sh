#!/usr/bin/env bash
# Default-suite proof that the failover suite's checker catches a real bug
# (suite 'jepsen'): builds the servers, the client and the suite's tools
# with -Djepsen_bug=follower-reads into <build>-buggy (e.g. build-buggy, the
# directory scripts/jepsen.sh --buggy uses too; configured once, then
# incremental: ~30 s from scratch on 2 cores), runs tests/jepsen/run.sh
# against it for 30 s with the pause nemesis, and passes only when the
# checker says INVALID (stale reads served by followers). Prints TAP.
#
# Environment (tests/jepsen/meson.build): DOCRAFT_BUILD, DOCRAFT_REPO,
# DOCRAFT_LOCAL.
set -uo pipefail

REPO=${DOCRAFT_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${DOCRAFT_BUILD:-$REPO/build}
BUILD=${BUILD%/}
BUGGY=$BUILD-buggy
export DOCRAFT_LOCAL=${DOCRAFT_LOCAL:-$REPO/deploy/docraft-local}

echo "1..3"
out=$(mktemp -d "${TMPDIR:-/tmp}/docraft-buggy.XXXXXX")
RUN_PID=""
# shellcheck disable=SC2317 # a trap
on_signal() {
	if [ -n "$RUN_PID" ]; then
		kill -TERM "$RUN_PID" 2>/dev/null
		wait "$RUN_PID"
	fi
	exit 1
}
trap on_signal INT TERM

targets=(src/tserver/docraft-tserver src/master/docraft-master src/tools/docraft
	tests/jepsen/docraft-jepsen tests/jepsen/docraft-jepsen-check
	tests/jepsen/docraft-jepsen-report)
built=0
{
	if [ -f "$BUGGY/build.ninja" ]; then
		meson configure "$BUGGY" -Djepsen_bug=follower-reads
	else
		meson setup "$BUGGY" "$REPO" -Djepsen_bug=follower-reads -Dwerror=false
	fi && ninja -C "$BUGGY" "${targets[@]}"
} >"$out/build.log" 2>&1 && built=1
if [ "$built" -eq 1 ]; then
	echo "ok 1 - built $BUGGY with -Djepsen_bug=follower-reads"
else
	echo "not ok 1 - building $BUGGY failed"
	tail -n 20 "$out/build.log" | sed 's/^/# /'
fi

if [ "$built" -eq 1 ]; then
	DOCRAFT_BUILD=$BUGGY "$REPO/tests/jepsen/run.sh" --out "$out/run" --time 30 \
		--nemesis pause --clients 6 --workload both --netns no --skew no --masters 1 \
		--tservers 3 --rf 3 --interval 10 --final-timeout 60 --check-time-limit 60 \
		--expect invalid --label "default-suite buggy build (follower reads)" \
		2> >(sed 's/^/# /') &
	RUN_PID=$!
	wait "$RUN_PID"
	RUN_PID=""
fi
verdict=$(sed -n 's/^verdict=//p' "$out/run/result.env" 2>/dev/null)
if [ "$verdict" = INVALID ]; then
	echo "ok 2 - the checker caught the stale follower reads (verdict INVALID)"
	grep -m 3 'cannot be linearized' "$out/run/check.txt" | sed 's/^ */# /'
else
	echo "not ok 2 - the checker did not catch the deliberate bug (verdict ${verdict:-none})"
fi
left=$(pgrep -f -- "$out/run/cluster" || true)
if [ -z "$left" ]; then
	echo "ok 3 - every node stopped"
else
	echo "not ok 3 - every node stopped (left: $left)"
fi

if [ "$verdict" = INVALID ] && [ -z "$left" ]; then
	rm -rf "$out"
else
	echo "# FAILED: kept $out"
fi
exit 0
