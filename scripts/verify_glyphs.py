#!/usr/bin/env python3
"""Helpers of `make verify-glyphs` (scripts/verify-glyphs.sh).

usage:
  verify_glyphs.py fetched ACCESS_LOG EXPECTED_JSON
      the glyph ranges nginx served (its access log: one request path a line) must be exactly
      expected.json's `needed` ranges per font stack, and none of its `outside_only` ranges
  verify_glyphs.py unlabelled STYLE_URL OUT.json
      the style at STYLE_URL without its symbol layers (to prove a render draws labels)
  verify_glyphs.py render STYLE OUT_PREFIX LON LAT ZOOM
      renders STYLE (a URL, or a .json file) with MapLibre Native (mapli), 512 x 512
"""
import json
import os
import sys
import urllib.parse
import urllib.request


def fetched(log_path, expected_path):
    with open(expected_path, encoding="utf-8") as handle:
        expected = json.load(handle)
    served = {}
    with open(log_path, encoding="utf-8") as handle:
        for line in handle:
            path = line.strip().split("?")[0]
            if not path.startswith("/fonts/"):
                continue
            stack, name = path[len("/fonts/"):].split("/")
            start = int(name.split("-")[0])
            served.setdefault(urllib.parse.unquote(stack), set()).add(start)
    wanted = {stack: set(ranges) for stack, ranges in expected["needed"].items()}
    ok = served == wanted
    for stack in sorted(set(served) | set(wanted)):
        got, want = served.get(stack, set()), wanted.get(stack, set())
        print(f"{stack}: fetched {sorted(got)}; expected {sorted(want)}"
              + (f"; missing {sorted(want - got)}" if want - got else "") + (f"; extra {sorted(got - want)}" if got - want else ""))
    outside = [start for ranges in served.values() for start in ranges if start in expected["outside_only"]]
    if outside:
        print(f"ranges only labels outside the region need were fetched: {sorted(set(outside))}")
        ok = False
    return 0 if ok else 1


def unlabelled(style_url, out):
    with urllib.request.urlopen(style_url) as response:
        style = json.load(response)
    style["layers"] = [layer for layer in style["layers"] if layer.get("type") != "symbol"]
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(style, handle)
    return 0


def render(style, prefix, lon, lat, zoom):
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    import mapli

    pool = mapli.RenderPool(workers=1)
    if style.endswith(".json") and os.path.exists(style):
        with open(style, encoding="utf-8") as handle:
            pool.register_style("s", json=json.load(handle))
    else:
        pool.register_style("s", url=style)
    png = pool.render("s", lon=float(lon), lat=float(lat), zoom=float(zoom), width=512, height=512)
    path = f"{prefix}.png"
    with open(path, "wb") as handle:
        handle.write(png)
    print(f"rendered {path} ({len(png)} bytes)")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "fetched":
        return fetched(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "unlabelled":
        return unlabelled(argv[2], argv[3])
    if len(argv) == 7 and argv[1] == "render":
        return render(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
