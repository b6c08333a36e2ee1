# shellcheck shell=bash
# Waiting in the shell tests, as wait.h does for the C ones: poll a condition
# until it holds or a timeout passes, instead of a fixed sleep. Sourced.
#
# wait_for TIMEOUT_MS CMD...: runs CMD (its output discarded) until it
# succeeds or TIMEOUT_MS have passed; CMD runs at least once, and once more
# at the deadline. Polls after 50 ms, then doubling up to 500 ms (a CMD that
# runs the CLI is not run in a tight loop). 0 if CMD succeeded, else 1.
wait_for() {
	local timeout_ms=$1 nap=50 now end left
	shift
	now=$(date +%s%3N)
	end=$((now + timeout_ms))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		now=$(date +%s%3N)
		[ "$now" -lt "$end" ] || return 1
		left=$((end - now))
		[ "$left" -lt "$nap" ] && nap=$left
		sleep "$((nap / 1000)).$(printf '%03d' $((nap % 1000)))"
		nap=$((nap * 2))
		[ "$nap" -gt 500 ] && nap=500
	done
}
