#!/usr/bin/env bash
# Glyph subsetting is invisible to the eye (`make verify-glyphs`).
#
# 1. `packd-bench label-fixture` writes the labelled test map (LabelWorld: labels from vector
#    tiles and from GeoJSON, in Latin, Cyrillic, Greek, Arabic and CJK, inside and outside the
#    region, a text-font expression, a format expression, text-transform: uppercase) with the
#    fixture's real SDF glyphs (../shared/fixtures/ne/fonts); nginx serves it and logs requests.
# 2. `packd serve` downloads the region with "glyphs": "region" — the glyph ranges nginx served
#    must be exactly the expected ones (none only a label outside the region needs) — then with
#    "glyphs": "all", every range.
# 3. nginx stops. MapLibre Native (PyPI mapli) renders both packs from packd's offline
#    style.json at several places and zooms: each pair must be pixel-identical, and differ from
#    the same view without its symbol layers (so labels are really drawn there). A control pack
#    without the CJK ranges (include_ideographs: false) must render differently where a CJK
#    label is: a missing range shows.
# A missing tool fails the run; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${PACKD_FIXTURES:-../shared/fixtures}
bin=${PACKD_BIN_DIR:-$(swift build --show-bin-path)}
packd=$bin/packd
bench=$bin/packd-bench
work=$(mktemp -d /tmp/packd-verify-glyphs.XXXXXX)
chmod 755 "$work"  # nginx workers (not root) read the files under it
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "verify-glyphs: FAIL: $*" >&2; exit 1; }

for tool in nginx curl python3; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
python3 -c "import mapli, PIL" 2>/dev/null || fail "the Python packages mapli and pillow are not installed"
[ -x "$packd" ] && [ -x "$bench" ] || fail "packd and packd-bench are not built in $bin"
[ -d "$fixtures/ne/fonts/Noto Sans Regular" ] || fail "the fixture glyphs $fixtures/ne/fonts are missing"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. The labelled map, served by nginx with the fixture's glyphs.
"$bench" label-fixture "$work/www" >/dev/null
cp -r "$fixtures/ne/fonts" "$work/www/fonts"
port=$(free_port)
base="http://127.0.0.1:$port"
for file in style.json tiles.json; do sed -i "s#{{BASE}}#$base#g" "$work/www/$file"; done
mkdir -p "$work/tmp" "$work/logs"
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 1024; }
http {
  log_format path '\$request_uri';
  access_log $work/access.log path;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  types { application/json json geojson; application/x-protobuf pbf; }
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    location /tiles/ { add_header Content-Encoding gzip; try_files \$uri =404; }
    location / { }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
curl -fsS -o /dev/null "$base/style.json" || fail "nginx does not answer at $base"

# 2. Both packs, the region one first so every range it needs is its own request.
"$packd" serve --listen 127.0.0.1:0 --port-file "$work/port" --database "$work/packd.sqlite" \
  --allow-upstream-hosts 127.0.0.1 --log-level warning 2>"$work/packd.log" &
pids+=($!)
for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "packd did not start: $(cat "$work/packd.log")"
api="http://127.0.0.1:$(cat "$work/port")"
region=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(json.dumps({"style_url": sys.argv[2], "bounds": e["region"], "min_zoom": e["min_zoom"], "max_zoom": e["max_zoom"]}))' "$work/www/expected.json" "$base/style.json")
create() {  # create GLYPHS [INCLUDE_IDEOGRAPHS] -> prints the pack id once it is complete
  local body id state=""
  body=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["glyphs"]=sys.argv[2]; r["include_ideographs"]=sys.argv[3]=="true"; print(json.dumps({"name": "glyphs-" + sys.argv[2], "region": r}))' "$region" "$1" "${2:-true}")
  id=$(curl -fsS -X POST "$api/v1/packs" -H 'Content-Type: application/json' -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  for _ in $(seq 1200); do
    state=$(curl -fsS "$api/v1/packs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    case "$state" in complete|failed) break ;; esac
    sleep 0.25
  done
  [ "$state" = complete ] || fail "the $1 pack ended $state: $(curl -fsS "$api/v1/packs/$id")"
  echo "$id"
}
: > "$work/access.log"
lean=$(create region)
cp "$work/access.log" "$work/region-requests.log"
python3 scripts/verify_glyphs.py fetched "$work/region-requests.log" "$work/www/expected.json" \
  || fail "the region pack did not fetch exactly the expected glyph ranges"
all=$(create all)
no_cjk=$(create all false)
echo "packs: region $lean ($(curl -fsS "$api/v1/packs/$lean" | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["progress"]["completed_resources"], "resources,", p["skipped_glyph_ranges"]["ranges"], "glyph ranges skipped")')), all $all ($(curl -fsS "$api/v1/packs/$all" | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["progress"]["completed_resources"], "resources")'))"

# 3. Upstream off; both packs render the same, with labels.
kill "$(cat "$work/nginx.pid")"
for _ in $(seq 100); do curl -s -o /dev/null "$base/style.json" || break; sleep 0.1; done
curl -s -o /dev/null "$base/style.json" && fail "the upstream still answers"
python3 scripts/verify_glyphs.py unlabelled "$api/v1/packs/$all/style.json" "$work/unlabelled.json"
views="8.54,47.37,6 9.2,45.46,7 13.0,46.6,6.5 7.45,46.95,8 10.0,47.0,5 10.0,46.2,8.5 6.9,45.9,9 11.4,47.27,7.5"
for view in $views; do
  IFS=, read -r lon lat zoom <<<"$view"
  name="$lon-$lat-z$zoom"
  python3 scripts/verify_glyphs.py render "$api/v1/packs/$lean/style.json" "$work/region-$name" "$lon" "$lat" "$zoom" >/dev/null \
    || fail "rendering the region pack at $view failed"
  python3 scripts/verify_glyphs.py render "$api/v1/packs/$all/style.json" "$work/all-$name" "$lon" "$lat" "$zoom" >/dev/null \
    || fail "rendering the all pack at $view failed"
  python3 scripts/verify_glyphs.py render "$work/unlabelled.json" "$work/unlabelled-$name" "$lon" "$lat" "$zoom" >/dev/null \
    || fail "rendering without labels at $view failed"
  python3 scripts/verify_render.py compare "$work/all-$name.png" "$work/region-$name.png" \
    || fail "at $view the region pack renders differently from the all pack (see $work)"
  python3 scripts/verify_render.py compare "$work/all-$name.png" "$work/unlabelled-$name.png" >/dev/null \
    && fail "at $view no label is drawn: the test would not see a missing glyph (see $work)"
  echo "$view: region == all, labels drawn"
done
# The control: without the CJK ranges the CJK label is not drawn as it is with them.
# MapLibre Native fails a render whose glyph range is missing (404); else the pictures must differ.
if python3 scripts/verify_glyphs.py render "$api/v1/packs/$no_cjk/style.json" "$work/no-cjk" 7.45 46.95 8 >"$work/no-cjk.log" 2>&1; then
  python3 scripts/verify_render.py compare "$work/all-7.45-46.95-z8.png" "$work/no-cjk.png" >/dev/null \
    && fail "a pack without the CJK ranges renders the same: a missing range would not show (see $work)"
  echo "control: a pack without the CJK ranges renders differently where the CJK label is"
else
  grep -q "404" "$work/no-cjk.log" || fail "the control render failed otherwise: $(tail -1 "$work/no-cjk.log")"
  echo "control: without the CJK ranges MapLibre Native fails the view where the CJK label is (glyphs 404)"
fi
echo "verify-glyphs: OK (the region pack fetched exactly the expected glyph ranges and renders pixel-identical to the all pack at $(echo $views | wc -w) views)"
rm -rf "$work"
