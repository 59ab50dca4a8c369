#!/usr/bin/env bash
# Copies MapLibre GL JS for the dashboard's maps out of the PyPI package `maplibre` (which ships
# maplibre-gl.js and maplibre-gl.css) into DEST (default .build/maplibre-gl, where `packd serve`
# looks beside a built binary; `make install` copies it to <prefix>/share/packd/maplibre-gl).
# Nothing third-party is committed: `make dashboard-assets` installs the package, pinned in
# scripts/python/dashboard.txt, into the build's virtual environment and runs this with that
# environment's python3 first on PATH.
#
# usage: scripts/install-map-library.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.build/maplibre-gl}
# find_spec locates the package without importing it (its import sets up logging and widgets).
package=$(python3 -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("maplibre").origin))')
mkdir -p "$dest"
for file in maplibre-gl.js maplibre-gl.css; do
  [ -s "$package/srcjs/$file" ] || { echo "install-map-library: $package/srcjs/$file is missing" >&2; exit 1; }
  install -m 0644 "$package/srcjs/$file" "$dest/$file"
done
echo "MapLibre GL JS $(grep -m1 -o 'maplibre-gl-js/blob/v[0-9.]*' "$dest/maplibre-gl.js" | sed 's#.*/v##') installed in $dest (PyPI maplibre $(python3 -c 'import importlib.metadata as m; print(m.version("maplibre"))'))"
