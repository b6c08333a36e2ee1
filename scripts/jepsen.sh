#!/usr/bin/env bash
# The failover suite, Jepsen style: installs what is missing, builds, then
# runs registers + set workloads against a local cluster (1 or 3 masters,
# 3 tservers, RF 3) while a nemesis injects faults, checks the history for
# linearizability and lost adds, compares the replicas' checksums, and
# writes DIR/report.md (docs/reliability.md).
#
#   ./scripts/jepsen.sh [--time SEC] [--nemesis LIST|all] [--clients N]
#                       [--workload registers|set|both|redis] [--netns auto|yes|no]
#                       [--masters 1|3] [--out DIR] [--buggy]
#                       [-- more tests/jepsen/run.sh options]
#
#   --time SEC        workload duration (default 600; 90 with --buggy)
#   --nemesis LIST    comma-separated nemeses or `all` (default all; pause
#                     with --buggy): kill kill-leader pause restart-all master
#                     master-replace (--masters 3) skew
#                     partition-halves partition-one partition-leader
#                     kill-permanently drain-and-stop add-node-and-rebalance
#                     (the last three: 4 tservers, tests/jepsen/nemesis.sh)
#   --clients N       client threads (default 10)
#   --workload W      default both; redis: registers and INCR counters
#                     through the tservers' Redis ports (issue 17)
#   --netns MODE      network namespaces (needed by the partition nemeses):
#                     auto (default) = when root and `ip netns` works
#   --masters 1|3     default 1
#   --out DIR         default ./jepsen-results/<timestamp>
#   --buggy           build build-buggy with -Djepsen_bug=follower-reads
#                     (stale follower reads, on purpose) and run against it;
#                     exit 0 when the checker catches the bug (INVALID)
#
# Exit: 0 when the run passes (valid, no lost add, checksums agree; with
# --buggy: INVALID), 1 otherwise, 2 for bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # the repo root is the working directory
. scripts/lib/deps.sh

time_s=""
nemesis=""
clients=10
workload=both
netns=auto
masters=1
out=""
buggy=0
extra=()

usage() { sed -n '8,32p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--buggy)
		buggy=1
		shift
		continue
		;;
	--)
		shift
		extra=("$@")
		break
		;;
	esac
	if [ $# -lt 2 ]; then
		echo "jepsen: $1 needs a value (or is unknown; --help)" >&2
		exit 2
	fi
	case $1 in
	--time) time_s=$2 ;;
	--nemesis) nemesis=$2 ;;
	--clients) clients=$2 ;;
	--workload) workload=$2 ;;
	--netns) netns=$2 ;;
	--masters) masters=$2 ;;
	--out) out=$2 ;;
	*)
		echo "jepsen: unknown option '$1' (--help)" >&2
		exit 2
		;;
	esac
	shift 2
done

case $netns in
auto)
	netns=no
	if [ "$(id -u)" -eq 0 ] && ip netns list >/dev/null 2>&1; then netns=yes; fi
	;;
yes | no) ;;
*)
	echo "jepsen: --netns: auto, yes or no" >&2
	exit 2
	;;
esac

docraft_ensure_packages iproute2 procps
werror=false
[ "${CI:-}" = "true" ] && werror=true
echo "jepsen: building build/ ..."
docraft_build build -Dwerror=$werror || {
	echo "jepsen: build failed: run 'ninja -C build'" >&2
	exit 1
}
build_dir=build
expect=valid
if [ "$buggy" -eq 1 ]; then
	echo "jepsen: building build-buggy/ (-Djepsen_bug=follower-reads) ..."
	if [ -f build-buggy/build.ninja ]; then # configured before: make sure of the bug
		meson configure build-buggy -Djepsen_bug=follower-reads >/dev/null
	fi
	docraft_build build-buggy -Djepsen_bug=follower-reads -Dwerror=$werror || {
		echo "jepsen: build failed: run 'ninja -C build-buggy'" >&2
		exit 1
	}
	build_dir=build-buggy
	expect=invalid
	: "${time_s:=90}"
	: "${nemesis:=pause}"
fi
: "${time_s:=600}"
: "${nemesis:=all}"
: "${out:=./jepsen-results/$(date +%Y%m%d-%H%M%S)$([ "$buggy" -eq 1 ] && echo -buggy)}"

export DOCRAFT_BUILD=$PWD/$build_dir
export DOCRAFT_LOCAL=$PWD/deploy/docraft-local
echo "jepsen: ${time_s}s, nemesis $nemesis, $clients clients, $workload, $masters master(s)," \
	"netns $netns, binaries $build_dir/, results in $out"
status=0
tests/jepsen/run.sh --out "$out" --time "$time_s" --nemesis "$nemesis" --clients "$clients" \
	--workload "$workload" --netns "$netns" --masters "$masters" --expect "$expect" \
	--label "scripts/jepsen.sh$([ "$buggy" -eq 1 ] && echo ' --buggy')" \
	${extra[@]+"${extra[@]}"} || status=$?
if [ -f "$out/report.md" ]; then
	echo
	sed -n '1,/^## Operations/p' "$out/report.md" | sed '$d'
fi
if [ "$buggy" -eq 1 ]; then
	if [ "$status" -eq 0 ]; then
		echo "jepsen: --buggy: the checker caught the deliberate stale reads (INVALID): good"
	else
		echo "jepsen: --buggy: the checker did NOT catch the deliberate bug" >&2
	fi
fi
exit "$status"
