#!/bin/sh
# Builds one fuzz target of tests/fuzz with clang + libFuzzer (ASan, UBSan)
# and runs it for a bounded time. Run by meson (suite 'fuzz', one test per
# target) and by scripts/fuzz.sh for long runs:
#
#   run.sh <source root> <build dir> <target>
#   run.sh --list          the names of the targets (meson and fuzz.sh read it)
#
# <target> is a name of the table below; its code is tests/fuzz/fuzz_<target>.c.
# Environment:
#   FUZZ_SECONDS  bound of the run in seconds (default 2)
#   FUZZ_RUNS     stop after this many executions instead (0: no bound)
#   FUZZ_CORPUS   corpus directory (default <build dir>/corpus-<target>); it
#                 grows across runs, seeds are (re)written each run by the
#                 target itself (fuzz.h, FUZZ_WRITE_SEEDS)
#   FUZZ_JOBS     > 1: libFuzzer's -fork=N (N processes, crashes do not stop it)
#   FUZZ_MAX_LEN  longest input (default 4096: every format reaches its deep
#                 paths in less; longer inputs only slow the run down)
#   FUZZ_ARTIFACTS  prefix of crash files (default <build dir>/)
#   FUZZ_CC       the compiler (default clang)
# Exits 77 (meson: skipped) when clang or libFuzzer is missing; a crash
# exits 1 (-error_exitcode: libFuzzer's default, 77, would read as skipped).
# A crash leaves its input in <build dir> (crash-*; replay: <build dir>/fuzz_<target>
# <file>). Objects are compiled once into <build dir>/obj and shared by the
# targets (rebuilt when a source or header is newer).
set -eu

targets="rpc_frame preamble rpc_request entry docdb_key docdb_value paging copy_stream raft_message resp rmux_frame"
if [ "${1:-}" = --list ]; then
	echo "$targets"
	exit 0
fi
src=$1
out=$2
target=$3
seconds=${FUZZ_SECONDS:-2}
runs=${FUZZ_RUNS:-0}
jobs=${FUZZ_JOBS:-1}
cc=${FUZZ_CC:-clang}

# ---- the table: sources of each target (one per name in $targets),
# relative to src/; PROTO, PROTO_RPC: the generated code of docraft.proto,
# rpc.proto ----
common="common/arena.c common/buf.c common/check.c common/err.c common/hash16.c common/hlc.c \
common/log.c common/mem.c common/fs.c net/rpc_limits.c"
docdb_pure="docdb/varint.c docdb/pv.c docdb/key.c docdb/value.c docdb/packed.c docdb/schema.c \
docdb/batch.c"
# condition.c and reader.c reach the store (RocksDB) and the rest of docdb.
docdb_all="$docdb_pure docdb/condition.c docdb/reader.c docdb/builder.c docdb/store.c \
docdb/store_env.c docdb/filter.c docdb/compaction.c docdb/compaction_repack.c \
docdb/compaction_filter.c docdb/compaction_history.c docdb/docwrite.c docdb/checksum.c docdb/dump.c"
case $target in
rpc_frame)   sources="net/rpc_frame.c common/buf.c common/check.c common/err.c common/mem.c" ;;
preamble)    sources="net/listener.c $common" ;;
rpc_request) sources="rpc/wire.c net/listener.c tablet/entry.c $docdb_all $common PROTO PROTO_RPC" ;;
entry)       sources="tablet/entry.c $docdb_all $common" ;;
docdb_key)   sources="$docdb_pure $common" ;;
docdb_value) sources="$docdb_pure $common" ;;
paging)      sources="$docdb_all $common" ;;
copy_stream) sources="tablet/copy_proto.c common/crc32c.c $common" ;;
raft_message) sources="raft/rwire.c $common" ;;
resp)        sources="redis/resp.c $common" ;;
rmux_frame)  sources="raft/rmuxwire.c raft/rwire.c $common" ;;
*)
	echo "run.sh: unknown target '$target'" >&2
	exit 2
	;;
esac
libs="-lrocksdb -lprotobuf-c -lraft -luv -lm -lpthread"

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "skip: $cc not found"
	exit 77
fi
mkdir -p "$out/obj"
probe=$out/probe-libfuzzer
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe.c"
if ! "$cc" -fsanitize=fuzzer "$probe.c" -o "$probe" >/dev/null 2>&1; then
	echo "skip: $cc cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)"
	rm -f "$probe" "$probe.c"
	exit 77
fi
rm -f "$probe" "$probe.c"

cflags="-std=gnu11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -fsanitize=address,undefined \
-fno-sanitize-recover=undefined -I$src/include -I$src/src -I$out/proto"

# The generated protobuf-c code, made here (the fuzz build is not meson's).
mkdir -p "$out/proto"
for p in docraft rpc; do
	if [ ! -f "$out/proto/$p.pb-c.c" ] || [ "$src/proto/$p.proto" -nt "$out/proto/$p.pb-c.c" ]; then
		protoc-c --proto_path="$src/proto" --c_out="$out/proto" "$src/proto/$p.proto"
	fi
done

# Newest header: an object older than it is rebuilt.
newest=$(ls -t "$src"/src/*/*.h "$src"/include/docraft/*.h "$out"/proto/*.pb-c.h | head -n 1)
objs=""
for s in $sources; do
	if [ "$s" = PROTO ] || [ "$s" = PROTO_RPC ]; then
		file=$out/proto/$([ "$s" = PROTO ] && echo docraft || echo rpc).pb-c.c
	else
		file=$src/src/$s
		# Absent in this version of the tree (as src/*/meson.build skip them).
		[ -f "$file" ] || continue
	fi
	o=$out/obj/$(echo "$s" | tr / _ | sed 's/\.c$//').o
	if [ ! -f "$o" ] || [ "$file" -nt "$o" ] || [ "$newest" -nt "$o" ]; then
		# shellcheck disable=SC2086
		"$cc" $cflags -fsanitize=fuzzer-no-link -c "$file" -o "$o"
	fi
	objs="$objs $o"
done
bin=$out/fuzz_$target
# shellcheck disable=SC2086
"$cc" $cflags -fsanitize=fuzzer "$src/tests/fuzz/fuzz_$target.c" $objs $libs -o "$bin"

corpus=${FUZZ_CORPUS:-$out/corpus-$target}
mkdir -p "$corpus"
FUZZ_WRITE_SEEDS=$corpus "$bin"

log=$out/fuzz_$target.log
set -- "$corpus" -max_len="${FUZZ_MAX_LEN:-4096}" -timeout=10 -error_exitcode=1 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="${FUZZ_ARTIFACTS:-$out/}"
[ "$seconds" -gt 0 ] && set -- "$@" -max_total_time="$seconds"
[ "$runs" -gt 0 ] && set -- "$@" -runs="$runs"
[ "$jobs" -gt 1 ] && set -- "$@" -fork="$jobs" -ignore_crashes=1
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$bin" "$@" >"$log" 2>&1
status=$?
set -e
if [ "$status" -eq 0 ]; then
	grep -E '^(INFO: (Seed|Loaded|-max_len)|Done |stat::)' "$log" || true
else
	tail -n 60 "$log"
fi
echo "corpus: $(ls "$corpus" | wc -l) inputs in $corpus; full log: $log"
exit $status
