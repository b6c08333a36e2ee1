# shellcheck shell=bash disable=SC2034 # FAILED, TAP_N: read by the sourcing test
# TAP for the shell tests of tests/redis: ok, not_ok, check; FAILED is 1
# once a check failed (the test's exit trap makes it the exit status).
# Sourced. The plan line ("1..$TAP_N") is printed by the test at its end.
#
#   ok DESC                  a passed check
#   not_ok DESC [NOTE...]    a failed one, each NOTE a "# " line
#   check DESC WANT GOT      ok when WANT = GOT, else not_ok showing both
#   tap_cluster_finish       an EXIT trap for a test on ../lib/cluster.sh:
#                            a PANIC in a log or a failed check fails the
#                            test; the cluster is stopped
TAP_N=0
FAILED=0
ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1"
}
not_ok() {
	local l
	TAP_N=$((TAP_N + 1))
	FAILED=1
	echo "not ok $TAP_N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
}
check() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "want: $(printf %q "$2")" "got:  $(printf %q "$3")"
	fi
}
tap_cluster_finish() {
	local rc=$?
	[ "$FAILED" -ne 0 ] && rc=1
	if grep -q PANIC "$CLUSTER_BASE"/*.log 2>/dev/null; then
		grep -h -B3 PANIC "$CLUSTER_BASE"/*.log
		rc=1
	fi
	cluster_down "$rc"
	exit "$rc"
}
