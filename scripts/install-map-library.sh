#!/usr/bin/env bash
# Installs MapLibre GL JS for the dashboard's maps from the PyPI package `maplibre` (which ships
# maplibre-gl.js and maplibre-gl.css), through a virtual environment, into DEST (default
# .build/maplibre-gl, where `packd serve` looks beside a built binary; `make install` copies it to
# <prefix>/share/packd/maplibre-gl). Nothing third-party is committed: this runs at build or
# install time. Works with Debian's own python3 (PEP 668): pip only ever runs inside the venv.
#
# usage: scripts/install-map-library.sh [DEST] [VENV]   (MAPLIBRE_PYPI_VERSION pins the package)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.build/maplibre-gl}
venv=${2:-.build/dashboard-venv}
version=${MAPLIBRE_PYPI_VERSION:-0.3.6}
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv" || { echo "install-map-library: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
fi
"$venv/bin/pip" install -q --disable-pip-version-check "maplibre==$version"
# find_spec locates the package without importing it (its import sets up logging and widgets).
package=$("$venv/bin/python" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("maplibre").origin))')
mkdir -p "$dest"
for file in maplibre-gl.js maplibre-gl.css; do
  [ -s "$package/srcjs/$file" ] || { echo "install-map-library: $package/srcjs/$file is missing" >&2; exit 1; }
  install -m 0644 "$package/srcjs/$file" "$dest/$file"
done
echo "MapLibre GL JS $(grep -m1 -o 'maplibre-gl-js/blob/v[0-9.]*' "$dest/maplibre-gl.js" | sed 's#.*/v##') installed in $dest (PyPI maplibre $version)"
