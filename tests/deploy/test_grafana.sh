#!/usr/bin/env bash
# The observability glue stays true (TAP): deploy/grafana/docraft-dashboard.json
# loads as JSON, every panel expression parses (promtool check rules, when
# Debian's prometheus package is installed), every metric it uses is one the
# servers write; and docs/operations.md lists every metric family the
# servers write (the "docraft_..." names in src/http, src/server/web.c and
# the two http_*.c files).
#
# Environment (meson sets it): DOCRAFT_REPO.
set -uo pipefail
REPO=${DOCRAFT_REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
DASH=$REPO/deploy/grafana/docraft-dashboard.json
DOC=$REPO/docs/operations.md
WORK=$(mktemp -d "${TMPDIR:-/tmp}/docraft-grafana-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "1..4"

families() {
	grep -oh '"docraft_[a-z0-9_]*"' "$REPO"/src/http/*.c "$REPO/src/server/web.c" \
		"$REPO/src/tserver/http_tserver.c" "$REPO/src/master/http_master.c" | tr -d '"' | sort -u
}

if python3 - "$DASH" >"$WORK/exprs" 2>"$WORK/err" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["panels"], "no panels"
for p in d["panels"]:
    for t in p.get("targets", []):
        print(t["expr"])
PY
	echo "ok 1 - the dashboard is JSON with panels ($(wc -l <"$WORK/exprs") expressions)"
else
	echo "not ok 1 - the dashboard does not load"
	sed 's/^/# /' "$WORK/err"
fi

if [ ! -x /usr/bin/promtool ]; then
	echo "ok 2 - promtool check rules # SKIP /usr/bin/promtool absent (Debian package prometheus)"
else
	{
		echo "groups:"
		echo "  - name: dashboard"
		echo "    rules:"
		i=0
		while IFS= read -r e; do
			i=$((i + 1))
			printf '      - record: dashboard_expr_%d\n        expr: %s\n' "$i" \
				"$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$e")"
		done <"$WORK/exprs"
	} >"$WORK/rules.yml"
	if promtool check rules "$WORK/rules.yml" >"$WORK/out" 2>&1; then
		echo "ok 2 - every dashboard expression parses (promtool check rules)"
	else
		echo "not ok 2 - promtool rejects a dashboard expression"
		sed 's/^/# /' "$WORK/out"
	fi
fi

families >"$WORK/families"
bad=0
for m in $(grep -oh 'docraft_[a-z0-9_]*' "$WORK/exprs" | sed 's/_\(bucket\|sum\|count\)$//' | sort -u); do
	grep -qx "$m" "$WORK/families" || { echo "# the dashboard uses $m, which no server writes"; bad=1; }
done
[ "$bad" = 0 ] && echo "ok 3 - every metric the dashboard uses is written by a server" ||
	echo "not ok 3 - the dashboard uses unknown metrics"

bad=0
while IFS= read -r m; do
	grep -q "\`$m\`" "$DOC" || { echo "# docs/operations.md does not list $m"; bad=1; }
done <"$WORK/families"
[ "$bad" = 0 ] && echo "ok 4 - docs/operations.md lists all $(wc -l <"$WORK/families") metric families" ||
	echo "not ok 4 - docs/operations.md misses metric families"
