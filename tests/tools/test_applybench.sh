#!/bin/sh
# Smoke test of docraft-applybench (src/tools/applybench.c): a tiny run must
# exit 0 and print every layout's line and the ratio line. $1: the binary.
set -u
bin=$1
out=$("$bin" --tablets 4 --requests-per-entry 2 --turns 50) || {
	echo "docraft-applybench exited $?"; echo "$out"; exit 1; }
echo "$out"
for l in per-tablet shared-per-entry shared-per-turn; do
	echo "$out" | grep -q "^$l  *400 requests .* ns/request .* inserts/request .* writes/request" || {
		echo "missing layout line: $l"; exit 1; }
done
echo "$out" | grep -q '^ratio (time / per-tablet): shared-per-entry [0-9.]*, shared-per-turn [0-9.]*$' || {
	echo "missing ratio line"; exit 1; }
exit 0
