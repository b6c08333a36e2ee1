#!/usr/bin/env bash
# The public client library stays off the Raft and server layers: the
# shared libdocraft must not need libraft (ldd), and must export only the
# docraft_* API (-fvisibility=hidden). TAP.
set -u
lib="${DOCRAFT_LIB:?}"
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }

deps=$(ldd "$lib") || { echo "Bail out! ldd $lib failed"; exit 1; }
if grep -q "libraft" <<<"$deps"; then
	not_ok "libdocraft links libraft"; grep libraft <<<"$deps" | sed 's/^/# /'
else
	ok "libdocraft does not link libraft ($(wc -l <<<"$deps") libraries)"
fi
if grep -q "libraft" <<<"$(ldd "$lib" 2>/dev/null; objdump -p "$lib" | grep NEEDED)"; then
	not_ok "a NEEDED entry names libraft"
else
	ok "no NEEDED entry names libraft"
fi
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v '^docraft_' | grep -v '^_' || true)
if [ -z "$others" ]; then
	ok "only docraft_* symbols are exported"
else
	not_ok "symbols outside the API are exported"; head -5 <<<"$others" | sed 's/^/# /'
fi
echo "1..$n"
exit $fail
