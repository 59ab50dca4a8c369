#!/usr/bin/env bash
# A pack rendered offline by real map clients (`make verify-render`).
#
# 1. The Natural Earth fixture upstream (../shared/fixtures/serve-ne.sh, nginx) and `packd serve`
#    start on free loopback ports; a pack of the fixture style is POSTed and downloaded.
# 2. MapLibre Native (PyPI `mapli`) renders the area at two zooms from the live upstream.
# 3. The upstream is stopped. MapLibre Native renders the same views from packd's
#    GET /v1/packs/{id}/style.json: each picture must equal the live one pixel for pixel. Zoomed
#    two levels past the pack's deepest zoom, it asks packd for nothing the pack lacks (every
#    source's maxzoom in packd's documents is where the pack ends) and draws what it draws from
#    the live upstream held to the pack's zooms (its TileJSONs capped there): the overzoomed tiles.
# 4. MapLibre GL JS (the `maplibre-gl.js` that PyPI `maplibre` ships) in headless Chromium loads
#    the offline style and must reach `idle` with no failed request (map errors or console).
# 5. The same for a style reading the fixture's tiles from a PMTiles archive (pmtiles://), and the
#    style a `maplibre` export of its pack stores, rendered from the export's database.
# A missing tool fails the run; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${PACKD_FIXTURES:-../shared/fixtures}
packd=${PACKD_BIN:-$(swift build --show-bin-path)/packd}
lon=10 lat=47.5 zooms="3 5"
# The pack's deepest zoom (the regions below end at 5; the fixture's raster source, 256 px tiles
# covered one zoom deeper, ends at 5 upstream too), and two levels past it.
deepest=5 past=7
work=$(mktemp -d /tmp/packd-verify-render.XXXXXX)
chmod 755 "$work"  # nginx workers (not root) read the fixture under it
pids=()
passed=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for copy in ne pm; do [ -f "$work/$copy/nginx.pid" ] && kill "$(cat "$work/$copy/nginx.pid")" 2>/dev/null || true; done
  # Kept for a look when the run failed (the failures say "see $work").
  [ -n "$passed" ] && rm -rf "$work"
  true
}
trap cleanup EXIT
fail() { echo "verify-render: FAIL: $*" >&2; exit 1; }

for tool in nginx curl python3; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || fail "chromium is not installed (apt-get install chromium)"
python3 -c "import mapli, PIL" 2>/dev/null || fail "the Python packages mapli and pillow are not installed"
gljs=$(python3 -c "import logging; logging.disable(logging.CRITICAL); import maplibre, os; print(os.path.join(os.path.dirname(maplibre.__file__), 'srcjs', 'maplibre-gl.js'))" 2>/dev/null) \
  || fail "the Python package maplibre is not installed"
[ -f "$gljs" ] || fail "maplibre-gl.js not found at $gljs"
[ -x "$packd" ] || fail "packd is not built at $packd"
[ -x "$fixtures/serve-ne.sh" ] || fail "the fixture upstream $fixtures/serve-ne.sh is missing"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. Upstream and packd; the pack downloads.
upstream_port=$(free_port)
style_url=$("$fixtures/serve-ne.sh" "$upstream_port" "$work/ne" 2>/dev/null)
curl -fsS -o /dev/null "$style_url" || fail "the fixture upstream does not answer at $style_url"
"$packd" serve --listen 127.0.0.1:0 --port-file "$work/port" --database "$work/packd.sqlite" \
  --allow-upstream-hosts 127.0.0.1 --cors-origins '*' --log-level warning 2>"$work/packd.log" &
pids+=($!)
for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "packd did not start: $(cat "$work/packd.log")"
api="http://127.0.0.1:$(cat "$work/port")"
# download STYLE_URL NAME: a pack of the style over the test area, to complete; prints its id.
download() {
  local created pack state=""
  created=$(curl -fsS -X POST "$api/v1/packs" -H 'Content-Type: application/json' \
    -d "{\"name\": \"$2\", \"region\": {\"style_url\": \"$1\", \"bounds\": [-20, 25, 40, 65], \"min_zoom\": 0, \"max_zoom\": 5}}")
  pack=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  for _ in $(seq 1200); do
    state=$(curl -fsS "$api/v1/packs/$pack" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    case "$state" in complete|failed) break ;; esac
    sleep 0.25
  done
  [ "$state" = complete ] || fail "pack $pack ended $state: $(curl -fsS "$api/v1/packs/$pack")"
  echo "$pack"
}
pack=$(download "$style_url" verify-render)
echo "pack $pack downloaded: $(curl -fsS "$api/v1/packs/$pack" | python3 -c 'import json,sys; p=json.load(sys.stdin)["progress"]; print(p["completed_resources"], "resources,", p["completed_tiles"], "tiles")')"

# 2. Live pictures, and past the pack's zooms with the upstream held to them.
python3 scripts/verify_render.py render "$style_url" "$work/live" $lon $lat $zooms || fail "rendering from the live upstream failed"
python3 scripts/verify_render.py observed "$style_url" "$work/live-held" "$work/live-held.json" $deepest $lon $lat $past \
  || fail "rendering from the live upstream held to z$deepest failed"

# 3. Upstream off; offline pictures must be identical.
kill "$(cat "$work/ne/nginx.pid")"
for _ in $(seq 100); do curl -s -o /dev/null "$style_url" || break; sleep 0.1; done
curl -s -o /dev/null "$style_url" && fail "the upstream still answers"
offline="$api/v1/packs/$pack/style.json"
curl -fsS "$offline" | grep -q "127.0.0.1:$upstream_port" && fail "the offline style still points at the upstream"
python3 scripts/verify_render.py render "$offline" "$work/offline" $lon $lat $zooms || fail "rendering the offline style failed"
for z in $zooms; do
  python3 scripts/verify_render.py compare "$work/live-z$z.png" "$work/offline-z$z.png" || fail "zoom $z: the offline picture differs (see $work)"
done
python3 scripts/verify_render.py observed "$offline" "$work/past" "$work/past.json" 0 $lon $lat $past \
  || fail "rendering the offline style at z$past failed"
past_summary=$(python3 - "$work/past.json" $deepest <<'PY'
import json, re, sys
report = json.load(open(sys.argv[1]))
deepest = int(sys.argv[2])
failed = [r for r in report["requests"] if r["status"] not in (200, 204)]
zooms = [int(m.group(1)) for r in report["requests"] for m in [re.search(r"/tiles/[^/]+/(\d+)/\d+/\d+$", r["url"])] if m]
if failed:
    print(f"packd was asked for what the pack lacks: {failed[:5]}")
    sys.exit(1)
if not zooms or max(zooms) > deepest:
    print(f"tiles asked at zooms {sorted(set(zooms))}, the pack ends at {deepest}")
    sys.exit(1)
print(f"{len(report['requests'])} requests, {len(zooms)} tiles of zooms {min(zooms)}-{max(zooms)}, none failed")
PY
) || fail "zoomed past the pack: $past_summary"
python3 scripts/verify_render.py compare "$work/live-held-z$past.png" "$work/past-z$past.png" \
  || fail "zoom $past: the pack overzoomed differs from the upstream held to z$deepest (see $work)"
echo "MapLibre Native at z$past, two levels past the pack: $past_summary" >&2

# 4. MapLibre GL JS in headless Chromium, upstream still off. The page observes every request
#    the map makes (a custom protocol via transformRequest) and reports each failure.
# gljs STYLE_URL NAME: loads the style in headless Chromium; prints "N requests, M tiles loaded,".
gljs() {
  local report_port receiver result
  report_port=$(free_port)
  python3 scripts/verify_render.py page "$gljs" "$1" $lon $lat 4 "http://127.0.0.1:$report_port/result" "$work/$2.html"
  python3 scripts/verify_render.py receive "$report_port" "$work/$2.json" 90 &
  receiver=$!
  "$chromium" --headless --no-sandbox --use-angle=swiftshader --enable-unsafe-swiftshader \
    --user-data-dir="$work/chromium-$2" --enable-logging=stderr --v=0 --remote-debugging-port=0 \
    "file://$work/$2.html" >/dev/null 2>"$work/$2-chromium.log" &
  pids+=($!)
  wait "$receiver" || fail "MapLibre GL JS reported nothing within 90 s: $(tail -5 "$work/$2-chromium.log")"
  result=$(cat "$work/$2.json")
  echo "MapLibre GL JS ($2): $result" >&2
  echo "$result" | python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r["state"] == "ok" and not r["failures"] and r["loaded"] > 0 and r["requests"] > r["loaded"] else 1)' \
    || fail "MapLibre GL JS did not load the offline style cleanly: $result"
  if grep -E "Failed to load resource|net::ERR_" "$work/$2-chromium.log" >&2; then fail "Chromium reported failed requests"; fi
  echo "$result" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["requests"], "requests,", r["loaded"], "tiles loaded,")'
}
gljs_summary=$(gljs "$offline" gljs)

# 5. PMTiles: the fixture's vector tiles as one archive (the reference writer, PyPI pmtiles) on a
#    second copy of the upstream (nginx: Range), and the fixture style reading it through
#    pmtiles://. MapLibre Native renders it live (its own PMTiles source); packd downloads it; with
#    the upstream stopped, packd's style.json renders identically. Then the pack's `maplibre`
#    export: the style it stores, rendered with every request answered from the export as MapLibre
#    Native's offline database answers a device that side-loaded it, equals the live archive.
python3 -c "import pmtiles.writer" 2>/dev/null || fail "the Python package pmtiles is not installed"
pm_port=$(free_port)
"$fixtures/serve-ne.sh" "$pm_port" "$work/pm" >/dev/null 2>&1
pm_base="http://127.0.0.1:$pm_port"
python3 scripts/verify_render.py pmtiles-style "$fixtures" "$work/pm/www" "$pm_base"
chmod 644 "$work/pm/www/ne.pmtiles"
pm_style="$pm_base/style-pmtiles.json"
python3 scripts/verify_render.py render "$pm_style" "$work/pm-live" $lon $lat $zooms || fail "rendering the pmtiles:// style live failed"
python3 scripts/verify_render.py render-archive-layers "$pm_style" "$work/pm-layers-live" $lon $lat $zooms \
  || fail "rendering the archive's layers live failed"
pm_pack=$(download "$pm_style" "verify-render pmtiles")
echo "pack $pm_pack (pmtiles://) downloaded: $(curl -fsS "$api/v1/packs/$pm_pack" | python3 -c 'import json,sys; p=json.load(sys.stdin)["progress"]; print(p["completed_tiles"], "tiles,", p["archive_requests"], "archive requests")')"
kill "$(cat "$work/pm/nginx.pid")"
for _ in $(seq 100); do curl -s -o /dev/null "$pm_style" || break; sleep 0.1; done
curl -s -o /dev/null "$pm_style" && fail "the pmtiles upstream still answers"
python3 scripts/verify_render.py render "$api/v1/packs/$pm_pack/style.json" "$work/pm-offline" $lon $lat $zooms \
  || fail "rendering the pmtiles pack offline failed"
curl -fsS -o "$work/pm-export.db" "$api/v1/packs/$pm_pack/export?format=maplibre" || fail "the maplibre export failed"
python3 scripts/verify_render.py device "$work/pm-export.db" "$pm_style" "$work/pm-device" $lon $lat $zooms \
  || fail "the export's stored style did not render from the export"
pm_gljs_summary=$(gljs "$api/v1/packs/$pm_pack/style.json" gljs-pmtiles)
for z in $zooms; do
  python3 scripts/verify_render.py compare "$work/pm-live-z$z.png" "$work/pm-offline-z$z.png" \
    || fail "zoom $z: the pmtiles pack renders differently offline (see $work)"
  python3 scripts/verify_render.py compare "$work/pm-layers-live-z$z.png" "$work/pm-device-z$z.png" \
    || fail "zoom $z: the export's stored style renders differently from its database (see $work)"
done

echo "verify-render: OK (MapLibre Native at zooms $zooms identical offline, and at z$past past the pack overzoomed as the upstream held to z$deepest with $past_summary, also of a pmtiles:// style, also from a maplibre export's database; MapLibre GL JS made $gljs_summary none failed; of the pmtiles pack $pm_gljs_summary none failed)"
passed=1
