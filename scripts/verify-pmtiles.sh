#!/usr/bin/env bash
# PMTiles archives made by the reference writer (PyPI `pmtiles`), served by nginx with Range
# support, read by a real `packd serve` (`make verify-pmtiles`; see scripts/verify_pmtiles.py):
# clustered and unclustered, gzip and uncompressed tiles, directories split into leaves, regions of
# bounds, across the antimeridian and of a GeoJSON polygon; every tile checked against the
# reference reader. A missing tool fails the run; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${PACKD_FIXTURES:-../shared/fixtures}
packd=${PACKD_BIN:-$(swift build --show-bin-path)/packd}
work=$(mktemp -d /tmp/packd-verify-pmtiles.XXXXXX)
chmod 755 "$work"  # nginx workers (not root) read the archives under it
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "verify-pmtiles: FAIL: $*" >&2; exit 1; }

for tool in nginx curl python3; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
python3 -c "import pmtiles.writer" 2>/dev/null || fail "the Python package pmtiles is not installed (make verify-pmtiles installs it)"
[ -x "$packd" ] || fail "packd is not built at $packd"
[ -d "$fixtures/ne/tiles" ] || fail "the Natural Earth fixture $fixtures/ne is missing"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "== archives from the reference writer"
mkdir -p "$work/www" "$work/logs" "$work/tmp"
chmod 755 "$work/www"
python3 scripts/verify_pmtiles.py archives "$work/www" "$fixtures"
chmod 644 "$work/www"/*.pmtiles

echo "== nginx serving them (Range, ETag)"
port=$(free_port)
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 1024; }
http {
  access_log $work/logs/access.log;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  server { listen 127.0.0.1:$port; root $work/www; etag on; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
archives="http://127.0.0.1:$port"
curl -fsS -r 0-6 -o "$work/magic" "$archives/ne.pmtiles" && [ "$(cat "$work/magic")" = PMTiles ] || fail "nginx does not answer ranges"

echo "== packd reading them"
"$packd" serve --listen 127.0.0.1:0 --port-file "$work/port" --database "$work/packd.sqlite" \
  --allow-upstream-hosts 127.0.0.1 --log-level warning 2>"$work/packd.log" &
pids+=($!)
for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "packd did not start: $(cat "$work/packd.log")"
python3 scripts/verify_pmtiles.py check "http://127.0.0.1:$(cat "$work/port")" "$archives" "$work/www" "$work/packd.sqlite" \
  || { tail -n 30 "$work/packd.log" >&2; fail "see above"; }
ranges=$(grep -c '" 206 ' "$work/logs/access.log" || true)
others=$(grep -vc '" 206 ' "$work/logs/access.log" || true)
echo "nginx answered $ranges range requests with 206 and $others others"
[ "$others" = 0 ] || fail "packd made requests other than ranges: $(grep -v '" 206 ' "$work/logs/access.log" | head -3)"
echo "verify-pmtiles: OK"
