#!/usr/bin/env bash
# The dashboard in a real browser (`make verify-dashboard`): headless Chromium driven by Selenium
# (scripts/verify_dashboard.py) against a running `packd serve` and the Natural Earth fixture
# upstream (../shared/fixtures/serve-ne.sh, nginx).
#
# 1. packd without keys, with MapLibre GL JS (.build/maplibre-gl), downloads held to 150
#    requests per second so a download lasts long enough to watch and to suspend: the form, the
#    live bar, suspend/resume, delete, the offline preview with the upstream stopped.
# 2. A copy of the binary outside the repository (so no map library is found beside it), with
#    API keys: the key prompt, sessionStorage, events with access_token, the page without maps.
# 3. packd against an upstream the script starts, which pauses the pack with Retry-After: the
#    "upstream asked us to slow down" note, then transfers in flight once it is over.
# 4. Cluster mode: two nodes on a PostgreSQL the script starts (scripts/temporary-postgres.sh):
#    the Cluster panel lists both, shows each holding units while they share a pack, and adds up.
# Screenshots go to .build/verify-dashboard/. A missing tool fails the run; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${PACKD_FIXTURES:-../shared/fixtures}
packd=${PACKD_BIN:-$(swift build --show-bin-path)/packd}
shots=${PACKD_SCREENSHOTS:-.build/verify-dashboard}
work=$(mktemp -d /tmp/packd-verify-dashboard.XXXXXX)
chmod 755 "$work"  # nginx workers (not root) read the fixture under it
pids=()
source scripts/temporary-postgres.sh
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  temporary_postgres_stop "$work/pg"
  for ne in "$work"/ne "$work"/ne-cluster; do [ -f "$ne/nginx.pid" ] && kill "$(cat "$ne/nginx.pid")" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "verify-dashboard: FAIL: $*" >&2; exit 1; }
started=$(date +%s)

for tool in nginx curl chromium chromedriver; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
/usr/bin/python3 -c "import selenium" 2>/dev/null || fail "python3-selenium is not installed (apt-get install python3-selenium)"
[ -x "$packd" ] || fail "packd is not built at $packd"
[ -s .build/maplibre-gl/maplibre-gl.js ] || fail "MapLibre GL JS is not installed in .build/maplibre-gl (make dashboard-assets)"
[ -x "$fixtures/serve-ne.sh" ] || fail "the fixture upstream $fixtures/serve-ne.sh is missing"
mkdir -p "$shots"
rm -f "$shots"/*.png

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_packd() {  # start_packd NAME BINARY ARGS... -> sets $api (the database: $work/NAME.sqlite, or $database when set)
  local name=$1 binary=$2
  shift 2
  "$binary" serve --listen 127.0.0.1:0 --port-file "$work/$name.port" --database "${database:-$work/$name.sqlite}" "$@" \
    --log-level warning 2>"$work/$name.log" &
  pids+=($!)
  for _ in $(seq 600); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
  [ -s "$work/$name.port" ] || fail "packd ($name) did not start: $(cat "$work/$name.log")"
  api="http://127.0.0.1:$(cat "$work/$name.port")"
}

upstream_port=$(free_port)
style_url=$("$fixtures/serve-ne.sh" "$upstream_port" "$work/ne" 2>/dev/null)
curl -fsS -o /dev/null "$style_url" || fail "the fixture upstream does not answer at $style_url"

echo "== 1. dashboard with maps, no keys"
start_packd main "$packd" --allow-upstream-hosts 127.0.0.1 --requests-per-second-per-host 150
/usr/bin/python3 scripts/verify_dashboard.py main "$api/" "$style_url" "$work/ne/nginx.pid" "$shots" \
  || fail "the main run failed (packd log: $work/main.log, screenshots: $shots)"

echo "== 2. dashboard with API keys, without the map library"
mkdir -p "$work/bin"
cp "$packd" "$work/bin/packd"
read_key="read-key-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PACKD_API_KEYS="read:$read_key" start_packd keyed "$work/bin/packd" --dashboard-dir "$PWD/dashboard"
/usr/bin/python3 scripts/verify_dashboard.py keyed "$api/" "$read_key" "$shots" \
  || fail "the keyed run failed (packd log: $work/keyed.log, screenshots: $shots)"
grep -q "$read_key" "$work/keyed.log" && fail "the API key appears in packd's log"

echo "== 3. a pack its upstream pauses with Retry-After"
start_packd throttled "$packd" --allow-upstream-hosts 127.0.0.1
/usr/bin/python3 scripts/verify_dashboard.py throttled "$api/" "$shots" \
  || fail "the throttled run failed (packd log: $work/throttled.log, screenshots: $shots)"

echo "== 4. cluster mode: two nodes on one PostgreSQL"
# Run 1 stopped its upstream (the offline preview): a fixture upstream of this run's own.
style_url=$("$fixtures/serve-ne.sh" "$(free_port)" "$work/ne-cluster" 2>/dev/null)
curl -fsS -o /dev/null "$style_url" || fail "the fixture upstream does not answer at $style_url"
temporary_postgres_start "$work/pg" || fail "PostgreSQL did not start: $(cat "$work/pg/server.log" 2>/dev/null)"
database=$PG_URL start_packd node-a "$packd" --allow-upstream-hosts 127.0.0.1 --requests-per-second-per-host 60
node_a=$api
database=$PG_URL start_packd node-b "$packd" --allow-upstream-hosts 127.0.0.1 --requests-per-second-per-host 60
/usr/bin/python3 scripts/verify_dashboard.py cluster "$node_a/" "$api/" "$style_url" "$shots" \
  || fail "the cluster run failed (packd logs: $work/node-a.log, $work/node-b.log, screenshots: $shots)"

echo "verify-dashboard: OK in $(( $(date +%s) - started )) s; screenshots in $shots: $(cd "$shots" && ls *.png | tr '\n' ' ')"
