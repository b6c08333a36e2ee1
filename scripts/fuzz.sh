#!/usr/bin/env bash
# Long fuzzing runs of every decoder that reads network or disk data
# (tests/fuzz, issue 12).
#
#   scripts/fuzz.sh --time N [--runs R] [--target NAME] [--jobs J]
#                   [--corpus DIR] [--out DIR]
#
# Runs each target (tests/fuzz/run.sh --list; one with --target) in turn,
# never two at once, for N seconds (--time, 0: no time bound) or R
# executions (--runs), whichever comes first; with --jobs J > 1 a target
# runs as J libFuzzer processes (-fork=J; a crash does not stop the run).
# Installs clang and libFuzzer (Debian 12: clang, libclang-rt-14-dev) when
# missing, as scripts/lib/deps.sh installs the build packages.
#
# Corpora are kept across runs in --corpus (default
# ${XDG_CACHE_HOME:-~/.cache}/docraft-fuzz/corpus/<target>), outside the
# source tree; builds, logs and crash inputs go to --out (default
# ${TMPDIR:-/tmp}/docraft-fuzz): crashes as <out>/crashes-<target>/crash-*,
# to replay with <out>/fuzz_<target> <file>.
#
# Prints, per target, the executions, the executions per second, the wall
# seconds (build included), the corpus size and the crashes found; exits 1
# if any target crashed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=""
runs=0
only=""
jobs=1
corpus_root=${XDG_CACHE_HOME:-$HOME/.cache}/docraft-fuzz/corpus
out=${TMPDIR:-/tmp}/docraft-fuzz

usage() {
	sed -n '5,6p' "$0" | sed 's/^# *//'
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--time) seconds=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--target) only=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--corpus) corpus_root=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) usage ;;
	*) echo "fuzz.sh: unknown argument $1" >&2; usage ;;
	esac
done
[ -n "$seconds" ] || [ "$runs" -gt 0 ] || usage
seconds=${seconds:-0}

# shellcheck source=lib/deps.sh
. "$root/scripts/lib/deps.sh"
docraft_ensure_packages clang libclang-rt-14-dev

targets=$(sh "$root/tests/fuzz/run.sh" --list)
if [ -n "$only" ]; then
	case " $targets " in
	*" $only "*) targets=$only ;;
	*) echo "fuzz.sh: no target '$only' (targets: $targets)" >&2; exit 2 ;;
	esac
fi

mkdir -p "$out"
summary=()
failed=0
for t in $targets; do
	crashes=$out/crashes-$t
	mkdir -p "$corpus_root/$t" "$crashes"
	before=$(find "$crashes" -type f | wc -l)
	echo "== $t: ${seconds}s, runs ${runs}, jobs $jobs"
	start=$(date +%s)
	status=0
	FUZZ_SECONDS=$seconds FUZZ_RUNS=$runs FUZZ_JOBS=$jobs FUZZ_CORPUS=$corpus_root/$t \
		FUZZ_ARTIFACTS=$crashes/ sh "$root/tests/fuzz/run.sh" "$root" "$out" "$t" ||
		status=$?
	elapsed=$(($(date +%s) - start))
	log=$out/fuzz_$t.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [ -z "$execs" ]; then # -fork: the last "#N" line of the parent
		execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	fi
	execs=${execs:-0}
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	rate=${rate:-$((execs / (elapsed > 0 ? elapsed : 1)))}
	found=$(($(find "$crashes" -type f | wc -l) - before))
	[ "$status" -eq 0 ] && [ "$found" -eq 0 ] || failed=1
	summary+=("$(printf '%-12s %12s %8s %8s %8s %7s %s' "$t" "$execs" \
		"$rate" "$elapsed" \
		"$(find "$corpus_root/$t" -type f | wc -l)" "$found" \
		"$([ "$status" -eq 0 ] && echo ok || echo "exit $status")")")
done

echo
printf '%-12s %12s %8s %8s %8s %7s %s\n' target executions exec/s seconds corpus crashes status
printf '%s\n' "${summary[@]}"
echo "corpora: $corpus_root; builds, logs, crashes: $out"
exit $failed
