#!/bin/sh
# Builds the RPC frame fuzz target with clang + libFuzzer (ASan, UBSan) and
# runs it for a bounded time. Run by meson (suite 'fuzz'):
#
#   run.sh <source root> <build dir>
#
# FUZZ_SECONDS (default 20) bounds the run. The corpus lives in
# <build dir>/corpus-rpc-frame and grows across runs (keep it in CI's cache
# to go deeper over time); seeds are (re)written each run. Exits 77 (meson:
# skipped) when clang or libFuzzer is missing. A crash leaves its input in
# <build dir> (crash-*, replay: <build dir>/fuzz_rpc_frame <file>).
set -eu

src=$1
out=$2
seconds=${FUZZ_SECONDS:-20}
cc=${FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "skip: $cc not found"
	exit 77
fi
mkdir -p "$out"
probe=$out/probe-libfuzzer
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe.c"
if ! "$cc" -fsanitize=fuzzer "$probe.c" -o "$probe" >/dev/null 2>&1; then
	echo "skip: $cc cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)"
	rm -f "$probe" "$probe.c"
	exit 77
fi
rm -f "$probe" "$probe.c"

bin=$out/fuzz_rpc_frame
"$cc" -std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$src/include" -I"$src/src" \
	"$src/tests/fuzz/fuzz_rpc_frame.c" "$src/src/common/rpc_frame.c" \
	"$src/src/common/buf.c" "$src/src/common/check.c" \
	-o "$bin"

# Seeds: byte 0 = max frame selector, byte 1 = chunking seed, then frames.
corpus=$out/corpus-rpc-frame
mkdir -p "$corpus"
seed() { printf "$2" >"$corpus/seed-$1"; }
req='\000\000\000\025\001\000\000\000\000\000\000\000\000\001\000\001\000\000\000\000\003\350abc'
resp='\000\000\000\022\002\000\000\000\000\000\000\000\000\001\000\001\000\013\000\000\000\000'
seed request "\000\001$req"
seed response "\000\002$resp"
seed two-frames "\003\007$req$resp"
seed truncated "\000\003\000\000\000\025\001\000\000\000"
seed too-big "\001\004\000\001\000\000\001\000\000\000\000\000\000\000\000\011\000\001\000\000\000\000\000\144"
seed bad-kind "\000\005\000\000\000\022\011\000\000\000\000\000\000\000\000\001\000\001\000\000\000\000"
seed short "\000\006\000\000\000\003\001\000\000\000\000\000\000\000\000\001\000\001\000\000\000\000"

log=$out/fuzz_rpc_frame.log
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$bin" "$corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/" >"$log" 2>&1
status=$?
set -e
if [ "$status" -eq 0 ]; then
	grep -E '^(INFO: (Seed|Loaded|-max_len)|Done |stat::)' "$log" || true
else
	tail -n 60 "$log"
fi
echo "corpus: $(ls "$corpus" | wc -l) inputs in $corpus; full log: $log"
exit $status
