#!/usr/bin/env python3
"""Renders a MapLibre style with MapLibre Native (the `mapli` package) and compares pictures.

usage:
  verify_render.py render STYLE_URL OUT_PREFIX LON LAT ZOOM [ZOOM...]  -> OUT_PREFIX-zZOOM.png
  verify_render.py compare A.png B.png                                 -> exit 1 unless pixel-identical
  verify_render.py page MAPLIBRE_GL_JS STYLE_URL LON LAT ZOOM REPORT_URL OUT.html
                                             -> a page for headless Chromium that POSTs its result
  verify_render.py receive PORT OUT.json SECONDS  -> waits for that one POST on 127.0.0.1:PORT
  verify_render.py pmtiles-style FIXTURES WWW BASE -> WWW/ne.pmtiles (the fixture's vector tiles, written
                                             by the reference writer) and WWW/style-pmtiles.json, the
                                             fixture style reading them through pmtiles://BASE/ne.pmtiles
  verify_render.py render-archive-layers STYLE_URL OUT_PREFIX LON LAT ZOOM [ZOOM...]
                                          -> renders only the style's background and the fills of its
                                             archive source `ne`
  verify_render.py observed STYLE_URL OUT_PREFIX REPORT.json CAP LON LAT ZOOM [ZOOM...]
                                          -> renders STYLE_URL with every request it leads to (style, TileJSON,
                                             tiles, sprites, glyphs, data) made through a handler that records
                                             its URL and status in REPORT.json; CAP > 0 also caps every TileJSON's
                                             `maxzoom` at CAP (the live upstream as a pack of zooms to CAP is)
  verify_render.py device EXPORT.db STYLE_URL OUT_PREFIX LON LAT ZOOM [ZOOM...]
                                          -> the same layers of the style stored in a `maplibre` export,
                                             every request answered from the export as MapLibre Native's
                                             offline database answers it (TileJSON by URL, tiles by URL
                                             template and z/x/y): what a device that side-loaded it sees

Each `render` runs in its own process, so nothing MapLibre Native cached while rendering from
the live upstream can serve the offline render.
"""
import io
import json
import os
import sys
import time


def render(style_url, prefix, lon, lat, zooms, style=None):
    """The style at `style_url` (or the `style` object) at each zoom, to PREFIX-zZOOM.png."""
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    import mapli

    pool = mapli.RenderPool(workers=1)
    if style is None:
        pool.register_style("s", url=style_url)
    else:
        pool.register_style("s", json=style)
    for zoom in zooms:
        png = pool.render("s", lon=float(lon), lat=float(lat), zoom=float(zoom), width=512, height=512)
        path = f"{prefix}-z{zoom}.png"
        with open(path, "wb") as handle:
            handle.write(png)
        print(f"rendered {path} ({len(png)} bytes)")


def pmtiles_style(fixtures, www, base):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import verify_pmtiles

    verify_pmtiles.write_ne_archive(os.path.join(www, "ne.pmtiles"), fixtures)
    with open(os.path.join(www, "style.json"), encoding="utf-8") as handle:
        style = json.load(handle)
    style["sources"]["ne"] = {"type": "vector", "url": f"pmtiles://{base}/ne.pmtiles"}
    with open(os.path.join(www, "style-pmtiles.json"), "w", encoding="utf-8") as handle:
        json.dump(style, handle)


def archive_layers(style):
    """The background and the fills of the archive source `ne`: no sprite, glyphs or other source."""
    layers = [layer for layer in style["layers"]
              if layer["type"] == "background" or (layer["type"] == "fill" and layer.get("source") == "ne")]
    return {"version": 8, "sources": {"ne": style["sources"]["ne"]}, "layers": layers}


def render_archive_layers(style_url, prefix, lon, lat, zooms):
    import urllib.request

    with urllib.request.urlopen(style_url) as response:
        render(None, prefix, lon, lat, zooms, style=archive_layers(json.load(response)))


def device(export, style_url, prefix, lon, lat, zooms):
    import sqlite3
    import threading
    import zlib

    import mapli

    local = threading.local()

    def database():
        if not hasattr(local, "db"):
            local.db = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
        return local.db

    def body(row):
        if row is None:
            return None
        data, compressed = row
        return None if data is None else zlib.decompress(data) if compressed else data

    stored = body(database().execute("SELECT data, compressed FROM resources WHERE url = ?", (style_url,)).fetchone())
    if stored is None:
        raise SystemExit(f"the export holds no style {style_url}")
    style = archive_layers(json.loads(stored))
    key = style["sources"]["ne"]["url"]
    scheme = key.split("://")[0]
    asked = []

    def answer(request):
        asked.append(request.url)
        if request.kind == "tile":
            prefix_url, z, x, y = request.url.rsplit("/", 3)
            row = database().execute("SELECT data, compressed FROM tiles WHERE url_template = ? AND pixel_ratio = 1 AND "
                                     "z = ? AND x = ? AND y = ?", (prefix_url + "/{z}/{x}/{y}", int(z), int(x), int(y))).fetchone()
            if row is None:
                return mapli.Response.error(mapli.ErrorReason.NOT_FOUND, f"{request.url} is not in the database")
        else:
            row = database().execute("SELECT data, compressed FROM resources WHERE url = ?", (request.url,)).fetchone()
            if row is None:
                return mapli.Response.error(mapli.ErrorReason.NOT_FOUND, f"{request.url} is not in the database")
        data = body(row)
        return mapli.Response.no_content() if data is None else mapli.Response(data)

    mapli.register_scheme_handler(scheme, answer)
    render(None, prefix, lon, lat, zooms, style=style)
    tiles = [url for url in asked if url.count("/") > key.count("/")]
    print(f"the stored style's source is {key}: {len(asked)} requests answered from the export, {len(tiles)} of them tiles")
    if key not in asked or not tiles:
        raise SystemExit("the stored style did not lead to the export's TileJSON and tiles")


def observed(style_url, prefix, report, cap, lon, lat, zooms):
    """`render` with every request seen: http:// URLs in the style and in every JSON document it
    leads to are rewritten to observed://, which a handler answers by fetching them over http://,
    recording each URL with its status (`report`). With `cap` > 0 each TileJSON's `maxzoom` is
    capped at it on the way."""
    import gzip
    import re
    import urllib.error
    import urllib.request

    import mapli

    seen = []

    def fetch(url):
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = response.read()
                if response.headers.get("Content-Encoding", "") == "gzip":
                    body = gzip.decompress(body)
                return response.status, body, response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            return error.code, b"", ""

    def observe(body):
        return body.replace(b'"http://', b'"observed://')

    def answer(request):
        url = "http://" + request.url[len("observed://"):]
        status, body, kind = fetch(url)
        seen.append({"url": url, "status": status, "kind": str(request.kind)})
        if status == 204:
            return mapli.Response.no_content()
        if status != 200:
            return mapli.Response.error(mapli.ErrorReason.NOT_FOUND, f"{url}: HTTP {status}")
        if "json" in kind or body[:1] == b"{":
            if int(cap) > 0 and b'"tiles"' in body:
                document = json.loads(body)
                document["maxzoom"] = min(int(document.get("maxzoom", 22)), int(cap))
                body = json.dumps(document).encode()
            body = observe(body)
        return mapli.Response(body)

    mapli.register_scheme_handler("observed", answer)
    status, body, _ = fetch(style_url)
    if status != 200:
        raise SystemExit(f"{style_url}: HTTP {status}")
    style = json.loads(observe(body))
    render(None, prefix, lon, lat, zooms, style=style)
    tiles = [entry for entry in seen if re.search(r"/\d+/\d+/\d+(\.\w+)?(\?|$)", entry["url"])]
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"requests": seen, "tiles": len(tiles)}, handle, indent=1)
    failed = [entry for entry in seen if entry["status"] not in (200, 204)]
    print(f"{len(seen)} requests ({len(tiles)} tiles), {len(failed)} not answered 200/204")


def compare(a, b):
    from PIL import Image, ImageChops

    first = Image.open(a).convert("RGBA")
    second = Image.open(b).convert("RGBA")
    if first.size != second.size:
        print(f"{a} and {b} differ in size: {first.size} != {second.size}")
        return 1
    # Colour and alpha apart: the bbox of an RGBA image is its alpha channel's alone (Pillow), so a
    # difference of two opaque pictures would always look empty.
    box = ImageChops.difference(first.convert("RGB"), second.convert("RGB")).getbbox() \
        or ImageChops.difference(first.getchannel("A"), second.getchannel("A")).getbbox()
    colours = len(first.getcolors(1 << 24) or [])
    if box is not None:
        print(f"{a} and {b} differ inside {box}")
        return 1
    if colours < 3:
        # A blank picture equals another blank picture: that proves nothing.
        print(f"{a} has {colours} colours: nothing was drawn")
        return 1
    print(f"{a} == {b} ({first.size[0]}x{first.size[1]}, {colours} colours)")
    return 0


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>pending</title>
<style>body{margin:0} #map{width:512px;height:512px}</style>
<script>%(js)s</script></head>
<body><div id="map"></div><pre id="result">pending</pre>
<script>
const failures = [];
const requests = [];
let loaded = 0;
// Every request the map makes (style, TileJSON, tiles, sprites, glyphs, data; from workers too)
// goes through this protocol, so each one's outcome is seen: GL JS itself stays silent about
// some failures (a 404 tile is drawn as empty).
maplibregl.addProtocol("observed", async (params, abortController) => {
  const url = "http://" + params.url.slice("observed://".length);
  let response;
  try {
    response = await fetch(url, {signal: abortController.signal});
  } catch (error) {
    if (!abortController.signal.aborted) failures.push(`${url}: ${error}`);
    throw error;
  }
  requests.push(`${response.status} ${url}`);
  if (!response.ok) {
    failures.push(`${url}: HTTP ${response.status}`);
    throw new Error(`HTTP ${response.status}`);
  }
  if (response.status === 204 || params.type === "arrayBuffer" || params.type === "image") {
    return {data: await response.arrayBuffer()};
  }
  return {data: params.type === "json" ? await response.json() : await response.text()};
});
const map = new maplibregl.Map({container: "map", style: %(style)s, center: [%(lon)s, %(lat)s], zoom: %(zoom)s,
                                 fadeDuration: 0, attributionControl: false,
                                 transformRequest: (url) => ({url: url.startsWith("http://") ? "observed://" + url.slice(7) : url})});
map.on("error", (event) => failures.push(String(event.error && (event.error.message || event.error))));
map.on("data", (event) => { if (event.dataType === "source" && event.tile) loaded += 1; });
let finished = false;
function finish(state) {
  if (finished) return;
  finished = true;
  const result = JSON.stringify({state, failures, loaded, requests: requests.length, style: map.isStyleLoaded()});
  document.getElementById("result").textContent = result;
  fetch(%(report)s, {method: "POST", body: result});
}
map.once("idle", () => finish(failures.length === 0 ? "ok" : "failed"));
setTimeout(() => finish("timeout"), 60000);
</script></body></html>
"""


def page(js_path, style_url, lon, lat, zoom, report_url, out):
    with open(js_path, encoding="utf-8") as handle:
        js = handle.read()
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(PAGE % {"js": js, "style": json.dumps(style_url), "lon": float(lon), "lat": float(lat),
                             "zoom": float(zoom), "report": json.dumps(report_url)})


def receive(port, out, seconds):
    """Serves 127.0.0.1:PORT until the page POSTs its result (or SECONDS pass)."""
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with open(out, "wb") as handle:
                handle.write(body)
            self.send_response(204)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", int(port)), Handler)
    server.timeout = 1
    deadline = time.monotonic() + float(seconds)
    while time.monotonic() < deadline and not os.path.exists(out):
        server.handle_request()
    return 0 if os.path.exists(out) else 1


def main(argv):
    if len(argv) >= 7 and argv[1] == "render":
        render(argv[2], argv[3], argv[4], argv[5], argv[6:])
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    if len(argv) == 9 and argv[1] == "page":
        page(*argv[2:])
        return 0
    if len(argv) == 5 and argv[1] == "receive":
        return receive(*argv[2:])
    if len(argv) == 5 and argv[1] == "pmtiles-style":
        pmtiles_style(*argv[2:])
        return 0
    if len(argv) >= 7 and argv[1] == "render-archive-layers":
        render_archive_layers(argv[2], argv[3], argv[4], argv[5], argv[6:])
        return 0
    if len(argv) >= 9 and argv[1] == "observed":
        observed(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], argv[8:])
        return 0
    if len(argv) >= 8 and argv[1] == "device":
        device(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
