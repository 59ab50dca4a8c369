#!/usr/bin/env bash
# Checks packd's sharing end to end through a real `packd serve` and other people's readers.
# A pack is downloaded from the Natural Earth fixture upstream (../shared/fixtures/serve-ne.sh),
# then exported over HTTP by `packd export` in every format:
#   - mbtiles (vector source): GDAL's ogrinfo lists the vector layers;
#   - mbtiles (a raster tiles pack): gdalinfo reads it as a raster;
#   - pmtiles: the `pmtiles` Python package reads every tile identical to the stored one;
#   - maplibre: its SQL shape is exactly MapLibre's schema 6, and `packd import` into a second
#     packd stores every resource and tile byte for byte.
# Installs nginx and gdal-bin when missing; a tool still missing after that is a failure, never a
# skipped check. The pmtiles package comes from `make verify`'s virtual environment (.build/venv).
# Usage: make verify
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT="$(pwd)"
FIXTURES="$ROOT/../shared/fixtures"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
fail() { echo "FAIL: $*" >&2; exit 1; }

missing_packages=""
command -v nginx >/dev/null || missing_packages="$missing_packages nginx"
command -v ogrinfo >/dev/null && command -v gdalinfo >/dev/null || missing_packages="$missing_packages gdal-bin"
if [ -n "$missing_packages" ]; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing_packages >/dev/null || true
fi
for tool in nginx ogrinfo gdalinfo curl python3; do
  command -v "$tool" >/dev/null || fail "$tool is not installed and could not be installed"
done
python3 -c "import pmtiles.reader" 2>/dev/null || fail "the pmtiles Python package is missing: run this through make verify (.build/venv)"
[ -x "$FIXTURES/serve-ne.sh" ] || fail "the fixture upstream $FIXTURES/serve-ne.sh is missing"

swift build --product packd >/dev/null
PACKD="$(swift build --show-bin-path)/packd"

WORK="$(mktemp -d /tmp/packd-verify.XXXXXX)"
chmod 755 "$WORK" # nginx's workers (another user when run as root) read the fixture below it
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$WORK/ne/nginx.pid" ] && kill "$(cat "$WORK/ne/nginx.pid")" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
UPSTREAM_PORT=$(free_port); PORT_A=$(free_port); PORT_B=$(free_port)
KEY="verify-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
(umask 077; printf 'admin:%s\n' "$KEY" > "$WORK/api-keys"; printf '%s\n' "$KEY" > "$WORK/key")

STYLE_URL="$("$FIXTURES/serve-ne.sh" "$UPSTREAM_PORT" "$WORK/ne" 2>/dev/null)"
UPSTREAM="http://127.0.0.1:$UPSTREAM_PORT"

serve() { # serve NAME PORT [flags]
  local name=$1 port=$2; shift 2
  "$PACKD" serve --listen "127.0.0.1:$port" --database "$WORK/$name.sqlite" --api-keys-file "$WORK/api-keys" \
    --openapi "$ROOT/openapi.yaml" "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return 0
    sleep 0.1
  done
  cat "$WORK/$name.log" >&2
  fail "packd $name did not start"
}
serve a "$PORT_A" --allow-upstream-hosts 127.0.0.1
serve b "$PORT_B"
A="http://127.0.0.1:$PORT_A"
B="http://127.0.0.1:$PORT_B"
AUTH=(-H "Authorization: Bearer $KEY")

create_pack() { # create_pack JSON -> id
  curl -sf "${AUTH[@]}" -X POST "$A/v1/packs" -H 'Content-Type: application/json' -d "$1" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
wait_complete() { # wait_complete ID
  for _ in $(seq 1 1200); do
    state=$(curl -sf "${AUTH[@]}" "$A/v1/packs/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = complete ] && return 0
    [ "$state" = failed ] && fail "pack $1 failed: $(curl -s "${AUTH[@]}" "$A/v1/packs/$1")"
    sleep 0.1
  done
  fail "pack $1 did not complete"
}

echo "== download from the fixture upstream"
STYLE_PACK=$(create_pack "{\"region\": {\"style_url\": \"$STYLE_URL\", \"bounds\": [-10, 35, 20, 60], \"min_zoom\": 0, \"max_zoom\": 6}, \"name\": \"verify style\"}")
RASTER_PACK=$(create_pack "{\"region\": {\"tiles\": [\"$UPSTREAM/raster/{z}/{x}/{y}.png\"], \"bounds\": [-10, 35, 20, 60], \"min_zoom\": 1, \"max_zoom\": 5}, \"name\": \"verify raster\"}")
wait_complete "$STYLE_PACK"
wait_complete "$RASTER_PACK"
echo "packs $STYLE_PACK (style) and $RASTER_PACK (raster tiles) complete"

echo "== export over HTTP with packd export"
export_pack() { "$PACKD" export --server "$A" --api-key-file "$WORK/key" "$@"; }
export_pack --format maplibre "$STYLE_PACK" -o "$WORK/pack.db" | tee -a "$WORK/cli.log"
export_pack --format mbtiles --source ne "$STYLE_PACK" -o "$WORK/pack.mbtiles" | tee -a "$WORK/cli.log"
export_pack --format pmtiles --source ne "$STYLE_PACK" -o "$WORK/pack.pmtiles" | tee -a "$WORK/cli.log"
export_pack --format mbtiles "$RASTER_PACK" -o "$WORK/raster.mbtiles" | tee -a "$WORK/cli.log"
if export_pack --format mbtiles "$STYLE_PACK" -o "$WORK/ambiguous.mbtiles" 2>"$WORK/ambiguous.err"; then
  fail "an mbtiles export of a two-source pack without --source succeeded"
fi
grep -q "422" "$WORK/ambiguous.err" || fail "the CLI did not print the 422 problem: $(cat "$WORK/ambiguous.err")"
HEAD_LENGTH=$(curl -sfI "${AUTH[@]}" "$A/v1/packs/$STYLE_PACK/export?format=pmtiles&source=ne" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ll]ength: //p')
[ "$HEAD_LENGTH" = "$(stat -c %s "$WORK/pack.pmtiles")" ] || fail "HEAD Content-Length $HEAD_LENGTH differs from the file"

echo "== ogrinfo: vector layers of the MBTiles export"
LAYERS="$(ogrinfo -ro -q "$WORK/pack.mbtiles" | sed -n 's/^[0-9]*: \([a-z_]*\).*/\1/p' | sort | tr '\n' ' ')"
echo "layers: $LAYERS"
[ "$LAYERS" = "cities countries " ] || fail "expected layers 'cities countries', got '$LAYERS'"
ogrinfo -ro -so "$WORK/pack.mbtiles" countries | grep -q "Feature Count" || fail "ogrinfo cannot summarise layer countries"

echo "== gdalinfo: the raster MBTiles export"
gdalinfo "$WORK/raster.mbtiles" >"$WORK/gdalinfo.txt" || fail "gdalinfo cannot read the raster export"
grep -q "Driver: MBTiles/MBTiles" "$WORK/gdalinfo.txt" || fail "gdalinfo did not open it as MBTiles"
grep -q "^Band 1" "$WORK/gdalinfo.txt" || fail "gdalinfo found no raster band"
grep -E "^(Driver|Size is)" "$WORK/gdalinfo.txt"

echo "== pmtiles (Python): every tile against the pack database"
python3 - "$WORK/pack.pmtiles" "$WORK/a.sqlite" "$STYLE_PACK" "$UPSTREAM/tiles/{z}/{x}/{y}.pbf" <<'PY'
import gzip, sqlite3, sys, zlib
from pmtiles.reader import Reader, MmapSource, all_tiles
from pmtiles.tile import Compression, TileType

archive, database, pack, template = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
expected = {}
for z, x, y, data, compressed in sqlite3.connect(f"file:{database}?mode=ro", uri=True).execute(
        "SELECT t.z, t.x, t.y, t.data, t.compressed FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id "
        "WHERE rt.region_id = ? AND t.url_template = ? AND t.data IS NOT NULL", (pack, template)):
    expected[(z, x, y)] = zlib.decompress(data) if compressed else data
assert expected, "the pack holds no vector tiles"
with open(archive, "rb") as f:
    source = MmapSource(f)
    reader = Reader(source)
    header = reader.header()
    assert header["tile_type"] == TileType.MVT, header["tile_type"]
    assert header["tile_compression"] == Compression.GZIP, header["tile_compression"]
    seen = 0
    for (z, x, y), data in all_tiles(source):
        assert gzip.decompress(data) == expected[(z, x, y)], (z, x, y)
        seen += 1
    assert seen == len(expected), (seen, len(expected))
    for (z, x, y), body in expected.items():
        assert gzip.decompress(reader.get(z, x, y)) == body, (z, x, y)
print(f"{seen} tiles identical (read in order and one by one)")
PY

echo "== maplibre export: exactly MapLibre's schema 6"
python3 - "$WORK/pack.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
assert db.execute("PRAGMA user_version").fetchone()[0] == 6
# MapLibre Native's offline_schema.sql, version 6: (name, type, notnull, default, pk) per column.
common = [("expires", "INTEGER", 0, None, 0), ("modified", "INTEGER", 0, None, 0), ("etag", "TEXT", 0, None, 0),
          ("data", "BLOB", 0, None, 0), ("compressed", "INTEGER", 1, "0", 0), ("accessed", "INTEGER", 1, None, 0),
          ("must_revalidate", "INTEGER", 1, "0", 0)]
tables = {
    "resources": [("id", "INTEGER", 1, None, 1), ("url", "TEXT", 1, None, 0), ("kind", "INTEGER", 1, None, 0)] + common,
    "tiles": [("id", "INTEGER", 1, None, 1), ("url_template", "TEXT", 1, None, 0), ("pixel_ratio", "INTEGER", 1, None, 0),
              ("z", "INTEGER", 1, None, 0), ("x", "INTEGER", 1, None, 0), ("y", "INTEGER", 1, None, 0)] + common,
    "regions": [("id", "INTEGER", 1, None, 1), ("definition", "TEXT", 1, None, 0), ("description", "BLOB", 0, None, 0)],
    "region_resources": [("region_id", "INTEGER", 1, None, 0), ("resource_id", "INTEGER", 1, None, 0)],
    "region_tiles": [("region_id", "INTEGER", 1, None, 0), ("tile_id", "INTEGER", 1, None, 0)],
}
indexes = {  # explicit indexes and the UNIQUE constraints' automatic ones: (table, unique, columns)
    ("resources", 0, ("accessed",)), ("tiles", 0, ("accessed",)), ("region_resources", 0, ("resource_id",)),
    ("region_tiles", 0, ("tile_id",)), ("resources", 1, ("url",)), ("tiles", 1, ("url_template", "pixel_ratio", "z", "x", "y")),
    ("region_resources", 1, ("region_id", "resource_id")), ("region_tiles", 1, ("region_id", "tile_id")),
}
foreign = {("region_resources", "regions", "region_id", "CASCADE"), ("region_resources", "resources", "resource_id", "NO ACTION"),
           ("region_tiles", "regions", "region_id", "CASCADE"), ("region_tiles", "tiles", "tile_id", "NO ACTION")}
objects = db.execute("SELECT type, name FROM sqlite_master").fetchall()
assert not [o for o in objects if o[0] in ("trigger", "view")], objects
found = {name for kind, name in objects if kind == "table" and name != "sqlite_sequence"}
assert found == set(tables), found
for table, columns in tables.items():
    got = [(c[1], c[2], c[3], c[4], c[5]) for c in db.execute(f"PRAGMA table_info({table})")]
    assert got == columns, (table, got)
got_indexes = set()
for table in tables:
    for _, name, unique, _, _ in db.execute(f"PRAGMA index_list({table})"):
        got_indexes.add((table, unique, tuple(r[2] for r in db.execute(f"PRAGMA index_info({name})"))))
assert got_indexes == indexes, got_indexes ^ indexes
got_foreign = {(t, r[2], r[3], r[6]) for t in tables for r in db.execute(f"PRAGMA foreign_key_list({t})")}
assert got_foreign == foreign, got_foreign
assert db.execute("SELECT count(*) FROM regions").fetchone()[0] == 1
print("schema 6: 5 tables, their columns, 8 indexes and 4 foreign keys exactly; one region")
PY

echo "== maplibre export imported into a second packd over HTTP"
"$PACKD" import --server "$B" --api-key-file "$WORK/key" "$WORK/pack.db" >"$WORK/import.json"
IMPORTED=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["added"]) == 1, d; print(d["added"][0]["id"])' "$WORK/import.json")
python3 - "$WORK/a.sqlite" "$STYLE_PACK" "$WORK/b.sqlite" "$IMPORTED" <<'PY'
import sqlite3, sys
def contents(path, pack):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tiles = db.execute("SELECT t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.expires, t.modified, t.etag, t.data, "
                       "t.compressed, t.must_revalidate FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id "
                       "WHERE rt.region_id = ? ORDER BY 1, 2, 3, 4, 5", (pack,)).fetchall()
    resources = db.execute("SELECT r.url, r.kind, r.expires, r.modified, r.etag, r.data, r.compressed, r.must_revalidate "
                           "FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = ? "
                           "ORDER BY 1", (pack,)).fetchall()
    definition = db.execute("SELECT definition FROM regions WHERE id = ?", (pack,)).fetchone()
    return tiles, resources, definition
a, b = contents(sys.argv[1], int(sys.argv[2])), contents(sys.argv[3], int(sys.argv[4]))
assert a[0] and a[1], "the source pack is empty"
assert a == b, "the imported pack differs from the exported one"
print(f"{len(a[0])} tiles and {len(a[1])} resources identical, byte for byte, in the second packd")
PY

if grep -rqF "$KEY" "$WORK"/*.log "$WORK/import.json" "$WORK/ambiguous.err"; then
  fail "the API key appears in a log or in the CLI's output"
fi
echo "OK: exports verified"
