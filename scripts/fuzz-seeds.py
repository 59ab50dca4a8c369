#!/usr/bin/env python3
"""Writes the seed corpora of `make fuzz` (Fuzz/seeds/TARGET/*): small, valid examples of what
each target reads, made here from scratch so libFuzzer starts inside the interesting formats.
Deterministic: running it again rewrites the same bytes. Usage: fuzz-seeds.py OUTPUT_DIR"""
import gzip
import io
import json
import os
import sqlite3
import struct
import sys
import tempfile
import zlib

OUT = sys.argv[1] if len(sys.argv) > 1 else "Fuzz/seeds"


def write(target, name, data):
    path = os.path.join(OUT, target)
    os.makedirs(path, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


def gz(data):
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as f:
        f.write(data)
    return buffer.getvalue()


# --- http-request: raw bytes on a connection
write("http-request", "get", "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
write("http-request", "pipelined", "GET /hello HTTP/1.1\r\n\r\nGET /items/42?q=1 HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n")
write("http-request", "post-length", "POST /echo HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")
write("http-request", "post-chunked", "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nTrailer: 1\r\n\r\n")
write("http-request", "expect-continue", "PUT /big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc")
write("http-request", "streamed-upload", "POST /upload HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789")
write("http-request", "head-http10", "HEAD /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
write("http-request", "over-limit", "POST /echo HTTP/1.1\r\nContent-Length: 99999\r\n\r\n" + "x" * 64)
write("http-request", "bad-version", "GET / HTTP/9.9\r\n\r\n")

# --- region: API and MapLibre forms
write("region", "api-bounds", json.dumps({"style_url": "https://maps.example/style.json", "bounds": [5.9, 45.8, 10.5, 47.8],
                                          "min_zoom": 0, "max_zoom": 6, "pixel_ratio": 2}))
write("region", "api-geometry", json.dumps({"style_url": "https://maps.example/style.json", "max_zoom": 5, "geometry": {
    "type": "Polygon", "coordinates": [[[7, 46], [8, 46], [8, 47], [7, 47], [7, 46]], [[7.2, 46.2], [7.4, 46.2], [7.3, 46.4], [7.2, 46.2]]]}}))
write("region", "api-tiles", json.dumps({"tiles": ["https://{s}.tiles.example/{z}/{x}/{y}.pbf"], "subdomains": ["a", "b"],
                                         "scheme": "tms", "tile_size": 512, "bounds": [-180, -85, 180, 85], "max_zoom": 3}))
write("region", "maplibre-mapbox", '{"style_url":"mapbox://styles/mapbox/streets-v11","min_zoom":0.0,"max_zoom":4.0,'
                                   '"pixel_ratio":1.0,"include_ideographs":false,"bounds":[45.8,5.9,47.8,10.5]}')
write("region", "maplibre-multipolygon", json.dumps({"style_url": "asset://style.json", "min_zoom": 1.0, "pixel_ratio": 1.0,
    "geometry": {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 0]]], [[[170, -10], [-170, -10], [-170, 10], [170, -10]]]]}}))
write("region", "maplibre-points", json.dumps({"style_url": "file:///data/style.json", "min_zoom": 0.0, "max_zoom": 2.0, "pixel_ratio": 3.0,
    "geometry": {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [2.35, 48.85]},
                                                             {"type": "LineString", "coordinates": [[0, 0], [10, 10]]}]}}))

# --- style: style document, NUL, TileJSON
style = {"version": 8, "name": "seed",
         "sources": {"v": {"type": "vector", "url": "https://maps.example/tiles.json"},
                     "r": {"type": "raster", "tiles": ["https://maps.example/r/{z}/{x}/{y}.png"], "tileSize": 256, "maxzoom": 5},
                     "g": {"type": "geojson", "data": "https://maps.example/points.geojson"},
                     "i": {"type": "image", "url": "https://maps.example/img.png", "coordinates": [[0, 1], [1, 1], [1, 0], [0, 0]]}},
         "sprite": "https://maps.example/sprite", "glyphs": "https://maps.example/fonts/{fontstack}/{range}.pbf",
         "layers": [{"id": "bg", "type": "background"},
                    {"id": "labels", "type": "symbol", "source": "v", "source-layer": "place",
                     "layout": {"text-field": "{name}", "text-font": ["case", ["has", "x"], ["literal", ["Open Sans Bold"]], ["literal", ["Noto Sans Regular"]]]}}]}
tilejson = {"tilejson": "3.0.0", "tiles": ["https://maps.example/v/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14,
            "bounds": [-10, 40, 20, 60], "scheme": "xyz"}
write("style", "vector-and-raster", json.dumps(style).encode() + b"\0" + json.dumps(tilejson).encode())
write("style", "inline-only", json.dumps({"version": 8, "sources": {"t": {"type": "raster-dem", "tiles": ["https://dem.example/{z}/{x}/{y}.webp"],
                                                                        "encoding": "terrarium"}}, "layers": []}))
write("style", "relative-urls", json.dumps({"version": 8, "sources": {"v": {"type": "vector", "url": "../tiles.json"}},
                                            "sprite": [{"id": "a", "url": "/sprites/a"}], "layers": []}).encode()
      + b"\0" + json.dumps({"tiles": ["//cdn.example/{z}/{x}/{y}.mvt?key=1"], "maxzoom": 3}).encode())


# --- import: MapLibre offline databases, written with MapLibre's own statements
SCHEMA6 = """
CREATE TABLE resources (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, kind INTEGER NOT NULL,
  expires INTEGER, modified INTEGER, etag TEXT, data BLOB, compressed INTEGER NOT NULL DEFAULT 0,
  accessed INTEGER NOT NULL, must_revalidate INTEGER NOT NULL DEFAULT 0, UNIQUE (url));
CREATE TABLE tiles (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, url_template TEXT NOT NULL,
  pixel_ratio INTEGER NOT NULL, z INTEGER NOT NULL, x INTEGER NOT NULL, y INTEGER NOT NULL, expires INTEGER,
  modified INTEGER, etag TEXT, data BLOB, compressed INTEGER NOT NULL DEFAULT 0, accessed INTEGER NOT NULL,
  must_revalidate INTEGER NOT NULL DEFAULT 0, UNIQUE (url_template, pixel_ratio, z, x, y));
CREATE TABLE regions (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, definition TEXT NOT NULL, description BLOB);
CREATE TABLE region_resources (region_id INTEGER NOT NULL REFERENCES regions(id) ON DELETE CASCADE,
  resource_id INTEGER NOT NULL REFERENCES resources(id), UNIQUE (region_id, resource_id));
CREATE TABLE region_tiles (region_id INTEGER NOT NULL REFERENCES regions(id) ON DELETE CASCADE,
  tile_id INTEGER NOT NULL REFERENCES tiles(id), UNIQUE (region_id, tile_id));
CREATE INDEX resources_accessed ON resources (accessed);
CREATE INDEX tiles_accessed ON tiles (accessed);
CREATE INDEX region_resources_resource_id ON region_resources (resource_id);
CREATE INDEX region_tiles_tile_id ON region_tiles (tile_id);
"""


def database(version, definition, kind):
    handle, path = tempfile.mkstemp(suffix=".db")
    os.close(handle)
    os.unlink(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size = 1024")
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")
    schema = SCHEMA6 if version == 6 else SCHEMA6.replace(", must_revalidate INTEGER NOT NULL DEFAULT 0", "")
    db.executescript(schema)
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("INSERT INTO regions (definition, description) VALUES (?1, ?2)", (definition, b"seed"))
    style = b'{"version":8,"sources":{},"layers":[]}'
    body = zlib.compress(style * 4)
    columns = "(url, kind, etag, expires, modified, accessed, data, compressed)" if version == 5 else \
        "(url, kind, etag, expires, must_revalidate, modified, accessed, data, compressed)"
    values = (("mapbox://styles/mapbox/streets-v11", 1, '"e1"', 1800000000, 1700000000, 1700000001, body, 1),
              ("mapbox://sprites/mapbox/streets-v11@2x.json", kind, None, None, None, 1700000001, b"{}", 0))
    for row in values:
        if version == 6:
            row = row[:4] + (0,) + row[4:]
        db.execute(f"INSERT INTO resources {columns} VALUES ({', '.join('?' * len(row))})", row)
        db.execute("INSERT OR IGNORE INTO region_resources (region_id, resource_id) SELECT 1, id FROM resources WHERE url = ?1", (row[0],))
    for z, x, y in ((0, 0, 0), (1, 1, 0)):
        db.execute("INSERT INTO tiles (url_template, pixel_ratio, z, x, y, accessed, data, compressed) VALUES (?, 1, ?, ?, ?, 1700000001, ?, 0)",
                   ("mapbox://tiles/mapbox.mapbox-streets-v8/{z}/{x}/{y}.vector.pbf", z, x, y, mvt_tile("water")))
        db.execute("INSERT OR IGNORE INTO region_tiles (region_id, tile_id) SELECT 1, id FROM tiles WHERE z = ?1 AND x = ?2 AND y = ?3", (z, x, y))
    db.commit()
    db.close()
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return data


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def mvt_tile(layer):
    """A Mapbox Vector Tile with one layer, one point feature and two attributes."""
    value_s = field(1, 2, b"lake")
    value_n = field(3, 1, struct.pack("<d", 12.5))
    feature = field(1, 0, varint(7)) + field(2, 2, varint(0) + varint(0) + varint(1) + varint(1)) + \
        field(3, 0, varint(1)) + field(4, 2, varint(9) + varint(50) + varint(34))
    body = field(15, 0, varint(2)) + field(1, 2, layer.encode()) + field(2, 2, feature) + \
        field(3, 2, b"name") + field(3, 2, b"depth") + field(4, 2, value_s) + field(4, 2, value_n) + field(5, 0, varint(4096))
    return field(3, 2, body)


definition = '{"style_url":"mapbox://styles/mapbox/streets-v11","min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,' \
             '"include_ideographs":false,"bounds":[-10.0,-20.0,10.0,20.0]}'
write("import", "schema6-kind0", database(6, definition, 0))
write("import", "schema5", database(5, definition.replace("mapbox://", "https://api.example/"), 6))

# --- tile-readers: selector byte, then the reader's input
header = bytearray(b"PMTiles\x03")
for value in (127, 20, 147, 0, 0, 0, 167, 2, 1, 1, 1):
    header += struct.pack("<Q", value)
header += bytes([1, 2, 2, 1, 0, 14])
header += struct.pack("<iiii", -1800000000, -850000000, 1800000000, 850000000)
header += bytes([0]) + struct.pack("<ii", 0, 0)
write("tile-readers", "pmtiles-header", bytes([0]) + bytes(header[:127]))


def pmtiles_directory(entries, compress=True):
    """The spec's directory: count, then ids (delta), run lengths, lengths, offsets (0: follows)."""
    raw = varint(len(entries))
    last = 0
    for tile_id, _, _, _ in entries:
        raw += varint(tile_id - last)
        last = tile_id
    for _, _, _, run in entries:
        raw += varint(run)
    for _, _, length, _ in entries:
        raw += varint(length)
    previous = None
    for entry in entries:
        raw += varint(0 if previous and entry[1] == previous[1] + previous[2] else entry[1] + 1)
        previous = entry
    return gz(raw) if compress else raw


def pmtiles_archive(tiles, leaf=False, compress=True):
    """Header, root (or root and one leaf), metadata, tile data, as the reference writer lays it out."""
    data = b""
    entries = []
    for tile_id, body in tiles:
        entries.append((tile_id, len(data), len(body), 1))
        data += body
    metadata = json.dumps({"name": "seed", "vector_layers": [{"id": "water", "fields": {}}]}).encode()
    metadata = gz(metadata) if compress else metadata
    leaves = b""
    if leaf:
        leaves = pmtiles_directory(entries, compress)
        root = pmtiles_directory([(entries[0][0], 0, len(leaves), 0)], compress)
    else:
        root = pmtiles_directory(entries, compress)
    root_offset = 127
    metadata_offset = root_offset + len(root)
    leaf_offset = metadata_offset + len(metadata)
    data_offset = leaf_offset + len(leaves)
    out = bytearray(b"PMTiles\x03")
    for value in (root_offset, len(root), metadata_offset, len(metadata), leaf_offset, len(leaves), data_offset, len(data),
                  len(tiles), len(entries), len(tiles)):
        out += struct.pack("<Q", value)
    kind = 2 if compress else 1
    out += bytes([1, kind, kind, 1, 0, 2])
    out += struct.pack("<iiii", -1800000000, -850000000, 1800000000, 850000000)
    out += bytes([0]) + struct.pack("<ii", 0, 0)
    return bytes(out) + root + metadata + leaves + data


seed_tiles = [(0, gz(mvt_tile("water"))), (1, gz(mvt_tile("land"))), (3, gz(mvt_tile("roads"))), (7, gz(b"seven"))]
write("tile-readers", "pmtiles-archive", bytes([0]) + pmtiles_archive(seed_tiles))
write("tile-readers", "pmtiles-archive-leaf", bytes([0]) + pmtiles_archive(seed_tiles, leaf=True))
write("tile-readers", "pmtiles-archive-uncompressed", bytes([0]) + pmtiles_archive([(i, b"tile %d" % i) for i in range(6)], compress=False))
sep = b"\xff\x00\xff"
tile = mvt_tile("roads")
write("tile-readers", "rows-plain-and-zlib", bytes([1]) + b"\x00" + tile + sep + b"\x01" + zlib.compress(mvt_tile("water")) + sep + b"\x00" + gz(tile))
write("tile-readers", "rows-png", bytes([1]) + b"\x00" + b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
write("tile-readers", "body-gzip", bytes([2]) + gz(b'{"tilejson":"3.0.0"}' * 8))
write("tile-readers", "body-two-members", bytes([2]) + gz(b"first ") + gz(b"second"))

# --- upstream-response: whole responses
write("upstream-response", "ok-length", "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 4\r\n"
      "Cache-Control: max-age=60, must-revalidate\r\nETag: \"v1\"\r\nLast-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nabcd")
write("upstream-response", "gzip", b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " + str(len(gz(b"{}" * 50))).encode()
      + b"\r\nExpires: Thu, 01 Dec 2094 16:00:00 GMT\r\n\r\n" + gz(b"{}" * 50))
write("upstream-response", "chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwxyz\r\n0\r\n\r\n")
write("upstream-response", "not-modified", "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nExpires: 0\r\n\r\n")
write("upstream-response", "redirect", "HTTP/1.1 302 Found\r\nLocation: /other\r\nContent-Length: 0\r\n\r\n")
write("upstream-response", "retry-after", "HTTP/1.1 429 Too Many\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n")
write("upstream-response", "http10-close", "HTTP/1.0 200 OK\r\n\r\nbody until close")

# --- labels: a selector byte, then a vector tile (even) or a symbol layer's JSON (odd)
def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def mvt_layer(name, features, keys, values):
    body = varint(15 << 3) + varint(2) + field(1, name.encode())
    for tags, kind in features:
        packed = b"".join(varint(index) for index in tags)
        body += field(2, field(2, packed) + varint(3 << 3) + varint(kind) + field(4, varint(9) + varint(0) + varint(0)))
    body += b"".join(field(3, key.encode()) for key in keys)
    body += b"".join(field(4, field(1, value.encode())) for value in values)
    return field(3, body)


tile = mvt_layer("places", [([0, 0, 1, 1], 1), ([0, 2], 1)], ["name", "class"], ["Москва", "city", "東京(とうきょう)"]) \
    + mvt_layer("roads", [([0, 0, 1, 1], 2)], ["class", "ref"], ["a", "Α1"])
write("labels", "tile-places-roads", b"\x00" + tile)
write("labels", "layer-format", b"\x01" + json.dumps({"id": "x", "type": "symbol", "source": "s", "layout": {
    "text-field": ["format", ["get", "name"], {"text-font": ["literal", ["B"]]}, ["get", "list"], {}],
    "text-transform": ["get", "t"]}}).encode())
write("labels", "layer-legacy", b"\x01" + json.dumps({"id": "y", "type": "symbol", "source": "s",
    "filter": ["any", ["in", "class", "a", "b"], ["has", "flag"]],
    "layout": {"text-field": {"type": "identity", "property": "name"}, "symbol-placement": "line"}}).encode())
