#!/usr/bin/env bash
# The layering check: every #include in src/ must point at its own folder
# or at a folder its layer may use (the table below, drawn in docs/style.md
# "Layers"), and no meson.build may compile another folder's sources.
# Every folder must be in the table and have a README.md.
# Prints each violation as "file:line: folder -> used (not allowed)" and
# exits 1 when there is one, 0 otherwise. scripts/test.sh runs it before
# building; tests/layers/test_check_layers.sh proves it fails on an upward
# include.
#
#   scripts/check-layers.sh [--root DIR]     DIR: the repository (default: this one)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--root" ]; then
	root="$(cd "$2" && pwd)"
fi

# folder -> what it may include besides itself. "proto" is the generated
# messages (<name>.pb-c.h), "api" the public headers include/docraft/*.h
# other than error.h (error.h, the error codes, is for everyone); four
# libraries are layers too: "libraft" (<raft.h>, <raft/*.h>), "libuv"
# (<uv.h>), "rocksdb" (<rocksdb/*.h>) and "libmicrohttpd"
# (<microhttpd.h>). Other system headers are free.
declare -A allowed=(
	[common]=""
	[net]="common libuv"
	[docdb]="common rocksdb"
	[rpc]="common net docdb proto libuv"
	[http]="common libuv libmicrohttpd"
	[server]="common net docdb rpc http proto libuv"
	[raft]="common net libraft libuv"
	[raftlog]="common libraft libuv"
	[redis]="common libuv"
	[yedis]="common docdb redis"
	[tablet]="common net docdb rpc raft raftlog redis yedis proto libraft libuv"
	[cql]="common docdb"
	[client]="common net docdb rpc cql proto api libuv"
	[tserver]="common net docdb rpc raft raftlog tablet server http redis yedis client api proto libraft libuv"
	[master]="common net docdb rpc raft tablet server http proto libraft libuv"
	[tools]="common net docdb rpc raft raftlog tablet cql client proto libraft libuv rocksdb api"
)

bad=0
complain() {
	echo "$1" >&2
	bad=1
}

cd "$root/src"
for dir in */; do
	dir="${dir%/}"
	if [ -z "${allowed[$dir]+set}" ]; then
		complain "src/$dir: a folder the layer table does not know (add it to scripts/check-layers.sh and docs/style.md)"
	fi
	[ -f "$dir/README.md" ] ||
		complain "src/$dir: no README.md saying what the folder owns and may use"
done

while IFS= read -r hit; do
	file="${hit%%:*}"
	rest="${hit#*:}"
	line="${rest%%:*}"
	text="${rest#*:}"
	from="${file%%/*}"
	[[ "$text" =~ include[[:space:]]*[\<\"]([^\>\"]*)[\>\"] ]] || continue
	target="${BASH_REMATCH[1]}"
	if [[ "$text" == *"<"* ]]; then # a library or system header
		case "$target" in
		raft.h | raft/*) used=libraft ;;
		uv.h | uv/*) used=libuv ;;
		rocksdb/*) used=rocksdb ;;
		microhttpd.h) used=libmicrohttpd ;;
		docraft/error.h) continue ;;
		docraft/*) used=api ;;
		*) continue ;;
		esac
	else
		case "$target" in
		docraft/error.h) continue ;;
		docraft/*) used=api ;;
		*.pb-c.h) used=proto ;;
		*/*) used="${target%%/*}" ;;
		*) used="$from" ;; # "x.h": the file's own folder
		esac
	fi
	[ "$used" = "$from" ] && continue
	case " ${allowed[$from]:-} " in
	*" $used "*) ;;
	*) complain "src/$file:$line: $from -> $used (not allowed: $from may use ${allowed[$from]:-nothing})" ;;
	esac
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include' --include='*.c' --include='*.h' . | sed 's#^\./##')

# No folder's meson.build compiles sources of another folder.
while IFS= read -r hit; do
	complain "src/${hit#./}: compiles a source of another folder"
done < <(grep -rnE "'\.\./[^']*\.c'" --include=meson.build .)

if [ "$bad" -ne 0 ]; then
	echo "check-layers: FAILED (docs/style.md \"Layers\" has the table)" >&2
	exit 1
fi
echo "check-layers: ok ($(find . -name '*.[ch]' | wc -l) files)"
