#!/usr/bin/env python3
"""PMTiles archives made by the reference writer (the `pmtiles` package), read by packd from nginx
(`make verify-pmtiles`, run by scripts/verify-pmtiles.sh).

  verify_pmtiles.py archives DIR FIXTURES   writes the archives into DIR
  verify_pmtiles.py check API ARCHIVES_URL DIR DATABASE
                                            packs of each archive through packd's API, every tile
                                            checked against the reference reader

The archives: the Natural Earth fixture's vector tiles (gzip, clustered, real data), and a
synthetic tileset large enough that the writer splits its directory into leaves, written twice:
clustered with gzip tiles, and unclustered (tiles in shuffled order) with uncompressed tiles.
The regions: bounds, bounds across the antimeridian, and a GeoJSON polygon. For every pack:
`complete`, its tile count equal to the tiles the region covers within the archive's zooms and
bounds (computed here, independently of packd), and every one of those tiles stored in packd's
database byte-identical to what the reference reader returns for it (its tile compression
undone), or stored as "no content" where the reader has none; a sample also served offline over
HTTP. Prints the requests and bytes packd read per archive.
"""
import gzip
import json
import math
import os
import random
import sqlite3
import sys
import time
import urllib.request
import zlib

from pmtiles.reader import MmapSource, Reader
from pmtiles.tile import Compression, TileType, zxy_to_tileid
from pmtiles.writer import Writer

MAX_LAT = 85.051128779806604


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


# --- archives -------------------------------------------------------------------------------

def write_archive(path, tiles, tile_compression, clustered, metadata, max_zoom):
    """`tiles`: {(z, x, y): stored bytes}. Written in Hilbert order (clustered) or shuffled."""
    order = sorted(tiles, key=lambda t: zxy_to_tileid(*t))
    if not clustered:
        random.Random(7).shuffle(order)
    with open(path, "wb") as f:
        writer = Writer(f)
        for zxy in order:
            writer.write_tile(zxy_to_tileid(*zxy), tiles[zxy])
        writer.finalize({
            "tile_type": TileType.MVT, "tile_compression": tile_compression,
            "min_lon_e7": -1800000000, "min_lat_e7": -850511287, "max_lon_e7": 1800000000, "max_lat_e7": 850511287,
            "center_zoom": 2, "center_lon_e7": 0, "center_lat_e7": 0,
        }, metadata)
    with open(path, "rb") as f:
        header = Reader(MmapSource(f)).header()
    assert header["clustered"] == clustered, (path, header["clustered"])
    assert header["max_zoom"] == max_zoom, header
    return header


def synthetic_tiles(max_zoom):
    """Every tile of the world to `max_zoom` but one in 9 (absent, as an ocean left out), one in
    13 sharing one content (deduplicated); the others distinct, 30 to 600 bytes."""
    rng = random.Random(2026)
    tiles = {}
    for z in range(max_zoom + 1):
        for x in range(1 << z):
            for y in range(1 << z):
                roll = rng.randrange(117)
                if roll % 9 == 0:
                    continue
                if roll % 13 == 0:
                    tiles[(z, x, y)] = b"shared ocean tile"
                    continue
                body = f"{z}/{x}/{y} ".encode() + rng.randbytes(rng.randrange(30, 600))
                tiles[(z, x, y)] = body
    return tiles


def write_ne_archive(path, fixtures):
    """The Natural Earth fixture's vector tiles (z0-6, gzip as the fixture serves them) as one archive."""
    ne = {}
    root = os.path.join(fixtures, "ne", "tiles")
    for z in os.listdir(root):
        for x in os.listdir(os.path.join(root, z)):
            for name in os.listdir(os.path.join(root, z, x)):
                with open(os.path.join(root, z, x, name), "rb") as f:
                    ne[(int(z), int(x), int(name.split(".")[0]))] = f.read()
    layers = [{"id": "countries", "fields": {}}, {"id": "cities", "fields": {}}]
    return write_archive(path, ne, Compression.GZIP, True, {"name": "Natural Earth", "vector_layers": layers}, 6)


def make_archives(directory, fixtures):
    os.makedirs(directory, exist_ok=True)
    headers = {"ne": write_ne_archive(os.path.join(directory, "ne.pmtiles"), fixtures)}
    synthetic = synthetic_tiles(8)
    headers["leaves-clustered-gzip"] = write_archive(
        os.path.join(directory, "leaves-clustered-gzip.pmtiles"), {k: gzip.compress(v, mtime=0) for k, v in synthetic.items()},
        Compression.GZIP, True, {"name": "synthetic", "vector_layers": [{"id": "x", "fields": {}}]}, 8)
    headers["leaves-unclustered-none"] = write_archive(
        os.path.join(directory, "leaves-unclustered-none.pmtiles"), synthetic, Compression.NONE, False,
        {"name": "synthetic"}, 8)
    for name, header in headers.items():
        leaves = header["leaf_directory_length"]
        print(f"{name}.pmtiles: {os.path.getsize(os.path.join(directory, name + '.pmtiles'))} bytes, "
              f"{header['addressed_tiles_count']} tiles, {header['tile_contents_count']} contents, "
              f"root {header['root_length']} bytes, leaves {leaves} bytes, clustered {header['clustered']}")
        if name != "ne" and leaves == 0:
            fail(f"{name}: the writer made no leaf directories")


# --- tile covers, independent of packd ------------------------------------------------------

def tile_x(lon, z):
    return (lon + 180) / 360 * (1 << z)


def tile_y(lat, z):
    lat = max(-MAX_LAT, min(MAX_LAT, lat))
    s = math.sin(math.radians(lat))
    return (0.5 - math.log((1 + s) / (1 - s)) / (4 * math.pi)) * (1 << z)


def bounds_cover(west, south, east, north, z):
    """Tiles whose area meets the box (the box's edges fall inside tiles here, not on them)."""
    n = 1 << z
    ys = range(max(0, int(tile_y(north, z))), min(n - 1, int(tile_y(south, z))) + 1)
    if west <= east:
        xs = list(range(max(0, int(tile_x(west, z))), min(n - 1, int(tile_x(east, z))) + 1))
    else:  # across the antimeridian
        xs = list(range(int(tile_x(west, z)), n)) + list(range(0, int(tile_x(east, z)) + 1))
    return {(z, x, y) for x in xs for y in ys}


def polygon_cover(ring, z):
    """Tiles whose square meets the polygon, in Web Mercator tile space (where its edges are
    straight, as MapLibre draws them): a corner of one inside the other, or crossing edges."""
    points = [(tile_x(lon, z), tile_y(lat, z)) for lon, lat in ring]
    edges = list(zip(points, points[1:]))

    def inside(px, py):
        winding = 0
        for (ax, ay), (bx, by) in edges:
            if ay <= py < by and (bx - ax) * (py - ay) - (px - ax) * (by - ay) > 0:
                winding += 1
            elif by <= py < ay and (bx - ax) * (py - ay) - (px - ax) * (by - ay) < 0:
                winding -= 1
        return winding != 0

    def crosses(p, q, r, s):
        def side(a, b, c):
            return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return side(p, q, r) * side(p, q, s) < 0 and side(r, s, p) * side(r, s, q) < 0

    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    cover = set()
    for x in range(int(min(xs)), int(max(xs)) + 1):
        for y in range(int(min(ys)), int(max(ys)) + 1):
            corners = [(x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1)]
            sides = list(zip(corners, corners[1:] + corners[:1]))
            if (inside(x + 0.5, y + 0.5) or any(inside(*c) for c in corners)
                    or any(x < px < x + 1 and y < py < y + 1 for px, py in points)
                    or any(crosses(a, b, c, d) for a, b in edges for c, d in sides)):
                cover.add((z, x, y))
    return cover


# --- packs ----------------------------------------------------------------------------------

def call(api, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, response.read()


def download(api, region, name):
    status, body = call(api, "POST", "/v1/packs", {"region": region, "name": name})
    pack = json.loads(body)
    for _ in range(2400):
        pack = json.loads(call(api, "GET", f"/v1/packs/{pack['id']}")[1])
        if pack["state"] in ("complete", "failed"):
            break
        time.sleep(0.1)
    if pack["state"] != "complete":
        fail(f"{name}: the pack ended {pack['state']}: {pack.get('error')}")
    return pack


def stored_tiles(database, pack_id, template):
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    rows = db.execute("SELECT t.z, t.x, t.y, t.data, t.compressed, t.etag FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id "
                      "WHERE rt.region_id = ? AND t.url_template = ?", (pack_id, template)).fetchall()
    return {(z, x, y): (None if data is None else zlib.decompress(data) if compressed else data, etag)
            for z, x, y, data, compressed, etag in rows}


def check(api, archives_url, directory, database):
    polygon = [[-9.6, 36.4], [27.3, 35.2], [31.7, 58.9], [4.2, 61.8], [-9.6, 36.4]]
    cases = [
        ("ne", {"bounds": [-12.3, 34.7, 31.4, 61.9]}, 0, 6),
        ("ne", {"bounds": [164.3, -27.2, -166.1, 6.3]}, 0, 6),
        ("leaves-clustered-gzip", {"bounds": [-21.7, 28.6, 44.2, 66.1]}, 2, 8),
        ("leaves-clustered-gzip", {"bounds": [158.2, -31.4, -151.8, 12.9]}, 0, 8),
        ("leaves-clustered-gzip", {"geometry": {"type": "Polygon", "coordinates": [polygon]}}, 3, 8),
        ("leaves-unclustered-none", {"bounds": [171.3, -22.6, -173.7, -8.1]}, 0, 8),
        ("leaves-unclustered-none", {"geometry": {"type": "Polygon", "coordinates": [polygon]}}, 1, 7),
    ]
    for name, area, min_zoom, max_zoom in cases:
        url = f"{archives_url}/{name}.pmtiles"
        with open(os.path.join(directory, name + ".pmtiles"), "rb") as f:
            reader = Reader(MmapSource(f))
            header = reader.header()
            region = {"pmtiles": url, "min_zoom": min_zoom, "max_zoom": max_zoom, **area}
            label = f"{name} {'polygon' if 'geometry' in area else area['bounds']} z{min_zoom}-{max_zoom}"
            expected = set()
            for z in range(max(min_zoom, header["min_zoom"]), min(max_zoom, header["max_zoom"]) + 1):
                expected |= polygon_cover(polygon, z) if "geometry" in area else bounds_cover(*area["bounds"], z)
            estimate = json.loads(call(api, "POST", "/v1/estimates", {"region": region})[1])
            if estimate["tiles"] != len(expected):
                fail(f"{label}: the estimate counts {estimate['tiles']} tiles, the region covers {len(expected)}")
            pack = download(api, region, label)
            progress = pack["progress"]
            if progress["completed_tiles"] != len(expected) or progress["expected_resources"] != len(expected) + 1:
                fail(f"{label}: {progress['completed_tiles']} tiles of {progress['expected_resources']} resources, "
                     f"the region covers {len(expected)} tiles")
            stored = stored_tiles(database, pack["id"], f"pmtiles+{url}/{{z}}/{{x}}/{{y}}")
            if set(stored) != expected:
                fail(f"{label}: stored tiles differ from the cover: {sorted(set(stored) ^ expected)[:5]}")
            etag = {e for _, e in stored.values()}
            present = 0
            for (z, x, y), (body, _) in stored.items():
                reference = reader.get(z, x, y)
                if reference is not None and header["tile_compression"] == Compression.GZIP:
                    reference = gzip.decompress(reference)
                if body != reference:
                    fail(f"{label}: tile {z}/{x}/{y} is stored as {None if body is None else len(body)} bytes, "
                         f"the reference reader returns {None if reference is None else len(reference)}")
                present += reference is not None
            if present in (0, len(stored)) or len(etag) != 1:
                fail(f"{label}: {present} of {len(stored)} tiles present, validators {etag}: the check proves too little")
            # A sample served offline: what a MapLibre client gets.
            for (z, x, y) in random.Random(3).sample(sorted(stored), min(40, len(stored))):
                status, body = call(api, "GET", f"/v1/packs/{pack['id']}/tiles/tiles/{z}/{x}/{y}")
                if (status, body) != ((200, stored[(z, x, y)][0]) if stored[(z, x, y)][0] is not None else (204, b"")):
                    fail(f"{label}: tile {z}/{x}/{y} served as {status}")
            print(f"{label}: {len(stored)} tiles ({present} in the archive) identical to the reference reader's; "
                  f"{progress['archive_requests']} requests, {progress['archive_bytes']} bytes "
                  f"({progress['archive_requests'] / len(stored):.3f} requests a tile)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["archives"]:
        make_archives(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["check"]:
        check(*sys.argv[2:6])
    else:
        fail(__doc__)
