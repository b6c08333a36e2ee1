# Sourced by the set-up scripts: installs the Debian 12 packages docraft
# needs, only those that are missing, then configures the build directory.
# shellcheck shell=bash

DOCRAFT_PACKAGES=(
	gcc pkg-config meson ninja-build python3
	librocksdb-dev libraft-dev libuv1-dev libprotobuf-c-dev protobuf-c-compiler
	libmicrohttpd-dev
)

docraft_ensure_packages() {
	local missing=() p
	for p in "${DOCRAFT_PACKAGES[@]}" "$@"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "docraft: installing ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# docraft_configure DIR [meson options...]: configure DIR once.
docraft_configure() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
}

# docraft_build DIR [meson options...]: configure DIR once, then build it.
docraft_build() {
	docraft_configure "$@"
	ninja -C "$1" >/dev/null
}

# docraft_suite_targets DIR [--no-suite X]... SUITE...: the ninja targets
# the tests of those suites run (as `meson test --suite SUITE... --no-suite
# X...` selects them): their programs and what they depend on (e.g. a tool a
# test runs). DIR must be configured.
docraft_suite_targets() {
	local dir=$1
	shift
	python3 - "$dir" "$@" <<'PY'
import json, os, subprocess, sys
d, args = sys.argv[1], sys.argv[2:]
suites, skip = [], []
while args:
    if args[0] == "--no-suite":
        skip.append("docraft:" + args[1])
        args = args[2:]
    else:
        suites.append("docraft:" + args[0])
        args = args[1:]
intro = lambda what: json.loads(subprocess.run(["meson", "introspect", d, what],
                                               check=True, capture_output=True).stdout)
files = {t["id"]: t["filename"] for t in intro("--targets")}
root = os.path.abspath(d)
out = set()
for t in intro("--tests"):
    if not any(s in suites for s in t["suite"]) or any(s in skip for s in t["suite"]):
        continue
    for dep in t.get("depends", []):
        for f in files.get(dep, []):
            out.add(os.path.relpath(f, root))
print("\n".join(sorted(out)))
PY
}
