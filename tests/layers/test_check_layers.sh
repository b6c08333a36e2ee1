#!/usr/bin/env bash
# scripts/check-layers.sh passes on this tree and fails on each kind of
# violation planted in a copy of it: an upward include (common -> tablet),
# a client include of the Raft glue, <raft.h> in net, and a meson.build that
# compiles another folder's source. TAP.
set -u
repo="${DOCRAFT_REPO:?}"
check="$repo/scripts/check-layers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }

if out=$("$check" --root "$repo" 2>&1); then ok "the tree passes ($out)"; else
	not_ok "the tree passes"; echo "$out" | sed 's/^/# /'; fi

# plant FILE LINE WHAT: copy src/ and scripts/, append LINE to FILE, expect
# a failure that names FILE.
copy_tree() {
	rm -rf "$tmp/r" && mkdir -p "$tmp/r/scripts" &&
		cp -r "$repo/src" "$tmp/r/" && cp "$check" "$tmp/r/scripts/"
}
plant() {
	copy_tree
	printf '%s\n' "$2" >>"$tmp/r/$1"
	if out=$("$tmp/r/scripts/check-layers.sh" 2>&1); then
		not_ok "$3: not caught"
	elif grep -q "$1" <<<"$out"; then
		ok "$3: caught ($(grep "$1" <<<"$out" | head -1))"
	else
		not_ok "$3: failed without naming $1"; echo "$out" | sed 's/^/# /'
	fi
}
plant src/common/buf.h '#include "tablet/tablet.h"' "upward include common -> tablet"
plant src/client/client.c '#include "raft/transport.h"' "client -> raft glue"
plant src/net/listener.c '#include <raft.h>' "net -> libraft"
plant src/docdb/key.c '#include "rpc.pb-c.h"' "docdb -> proto"
plant src/client/meson.build "x = files('../cql/lexer.c')" "a meson.build compiling another folder's source"

# A folder without its README.md.
copy_tree
rm "$tmp/r/src/cql/README.md"
if out=$("$tmp/r/scripts/check-layers.sh" 2>&1); then not_ok "a folder without README.md: not caught"
elif grep -q "src/cql: no README.md" <<<"$out"; then ok "a folder without README.md: caught"
else not_ok "a folder without README.md: other failure"; echo "$out" | sed 's/^/# /'; fi

echo "1..$n"
exit $fail
