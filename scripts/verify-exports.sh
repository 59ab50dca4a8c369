#!/usr/bin/env bash
# Checks packd's exports with other people's readers: the MBTiles export must open in GDAL's
# ogrinfo with the expected vector layers, and the PMTiles export must read back with the
# `pmtiles` Python package tile by tile identical to the pack database's tiles.
# Installs gdal-bin and the pmtiles package when missing. Usage: scripts/verify-exports.sh [tiles]
set -euo pipefail

cd "$(dirname "$0")/.."
TILES="${1:-2000}"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

if ! command -v ogrinfo >/dev/null; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gdal-bin
fi
if ! python3 -c "import pmtiles.reader" 2>/dev/null; then
  python3 -m pip install --quiet pmtiles
fi

swift build -c release --product packd-bench >/dev/null
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
.build/release/packd-bench export --tiles "$TILES" --directory "$WORK" --keep-exports

echo "== ogrinfo: MBTiles layers"
LAYERS="$(ogrinfo -ro -q "$WORK/pack.mbtiles" | sed -n 's/^[0-9]*: \([a-z_]*\).*/\1/p' | sort | tr '\n' ' ')"
echo "layers: $LAYERS"
[ "$LAYERS" = "roads water " ] || { echo "FAIL: expected layers 'roads water', got '$LAYERS'"; exit 1; }
ogrinfo -ro -so "$WORK/pack.mbtiles" water | grep -q "Feature Count" \
  || { echo "FAIL: ogrinfo cannot summarise layer water"; exit 1; }

echo "== pmtiles (Python): tile by tile against the pack database"
python3 - "$WORK/pack.pmtiles" "$WORK/pack.sqlite" <<'PY'
import gzip, sqlite3, sys, zlib
from pmtiles.reader import Reader, MmapSource, all_tiles
from pmtiles.tile import Compression, TileType

archive, database = sys.argv[1], sys.argv[2]
expected = {}
for z, x, y, data, compressed in sqlite3.connect(database).execute(
        "SELECT z, x, y, data, compressed FROM tiles WHERE data IS NOT NULL"):
    expected[(z, x, y)] = zlib.decompress(data) if compressed else data

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
    for (z, x, y), body in list(expected.items())[:200]:
        assert gzip.decompress(reader.get(z, x, y)) == body, (z, x, y)
    print(f"{seen} tiles identical; {header['tile_entries_count']} entries, "
          f"{header['tile_contents_count']} distinct contents, {header['leaf_directory_length']} bytes of leaf "
          f"directories, vector_layers in metadata: {reader.metadata().get('vector_layers') is not None}")
PY
echo "OK: exports verified"
