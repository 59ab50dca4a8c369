// The maps of the dashboard, drawn with MapLibre GL JS when packd has it installed
// (vendor/maplibre-gl.js, from the PyPI package `maplibre`; see setup.json). Without it the page
// works without maps. No map ever loads anything from the internet: the outline map draws a
// graticule and the regions on a plain background (or over a complete pack, served offline by
// packd), and the preview renders a pack from packd's own offline style.json.

import { apiURL, mapRequestHeaders, request } from "./api.js";
import { boxPolygon, fittableBounds, regionBounds, regionOutline } from "./regions.js";

let library;

/** MapLibre GL JS, loaded once from vendor/ when `available`; resolves null when it is not. */
export function loadMapLibrary(available) {
  if (!available) return Promise.resolve(null);
  library ??= new Promise((resolve) => {
    const stylesheet = document.createElement("link");
    stylesheet.rel = "stylesheet";
    stylesheet.href = "vendor/maplibre-gl.css";
    document.head.append(stylesheet);
    const script = document.createElement("script");
    script.src = "vendor/maplibre-gl.js";
    script.onload = () => resolve(window.maplibregl ?? null);
    script.onerror = () => resolve(null);
    document.head.append(script);
  });
  return library;
}

const transformRequest = (url) => ({ url, headers: mapRequestHeaders(url) });
const empty = { type: "FeatureCollection", features: [] };
const stateColours = ["match", ["get", "state"],
  "complete", "#2b7a3d", "failed", "#b3261e", "active", "#1f5f8b", "queued", "#9a6200", "#5b6773"];

function graticule(step = 15) {
  const features = [];
  for (let lng = -180; lng <= 180; lng += step) {
    features.push({ type: "Feature", properties: {}, geometry: { type: "LineString", coordinates: [[lng, -85], [lng, 85]] } });
  }
  for (let lat = -75; lat <= 75; lat += step) {
    features.push({ type: "Feature", properties: {}, geometry: { type: "LineString", coordinates: [[-180, lat], [180, lat]] } });
  }
  return { type: "FeatureCollection", features };
}

const plainStyle = {
  version: 8,
  sources: { graticule: { type: "geojson", data: graticule() } },
  layers: [
    { id: "background", type: "background", paint: { "background-color": "#dde6ec" } },
    { id: "graticule", type: "line", source: "graticule", paint: { "line-color": "#b3c2ce", "line-width": 1 } },
  ],
};

/** The outline map: every pack's region, the highlighted one stronger, and the rectangle being drawn. */
export class RegionMap {
  constructor(maplibregl, container) {
    this.maplibregl = maplibregl;
    this.container = container;
    this.packs = empty;
    this.draft = empty;
    this.startArea = empty;
    this.map = new maplibregl.Map({
      container, style: this.withOverlay(plainStyle), center: [10, 30], zoom: 0.6,
      attributionControl: false, dragRotate: false, pitchWithRotate: false, transformRequest,
    });
    this.map.touchZoomRotate.disableRotation();
    this.map.addControl(new maplibregl.NavigationControl({ showCompass: false }));
    this.map.on("error", (event) => console.warn("region map:", event.error && event.error.message));
  }

  /** `style` with the region sources and layers on top, holding the current data. */
  withOverlay(style) {
    return {
      ...style,
      sources: {
        ...style.sources,
        "packd-packs": { type: "geojson", data: this.packs },
        "packd-draft": { type: "geojson", data: this.draft },
        "packd-start": { type: "geojson", data: this.startArea },
      },
      layers: [
        ...style.layers,
        { id: "packd-packs-fill", type: "fill", source: "packd-packs",
          paint: { "fill-color": stateColours, "fill-opacity": ["case", ["get", "highlighted"], 0.35, 0.12] } },
        { id: "packd-packs-line", type: "line", source: "packd-packs",
          paint: { "line-color": stateColours, "line-width": ["case", ["get", "highlighted"], 3, 1.5] } },
        { id: "packd-draft-fill", type: "fill", source: "packd-draft", paint: { "fill-color": "#9a6200", "fill-opacity": 0.15 } },
        { id: "packd-draft-line", type: "line", source: "packd-draft",
          paint: { "line-color": "#9a6200", "line-width": 2, "line-dasharray": [2, 1] } },
        { id: "packd-start-fill", type: "fill", source: "packd-start", paint: { "fill-color": "#1b6ac9", "fill-opacity": 0.25 } },
        { id: "packd-start-line", type: "line", source: "packd-start", paint: { "line-color": "#1b6ac9", "line-width": 2 } },
      ],
    };
  }

  setPacks(packs, highlightedID) {
    this.packs = {
      type: "FeatureCollection",
      features: packs.map((pack) => ({
        type: "Feature",
        properties: { id: pack.id, state: pack.state, highlighted: pack.id === highlightedID },
        geometry: regionOutline(pack.region),
      })).filter((feature) => feature.geometry),
    };
    this.map.getSource("packd-packs")?.setData(this.packs);
  }

  setDraft(bounds) {
    this.draft = bounds ? { type: "FeatureCollection", features: [{ type: "Feature", properties: {}, geometry: boxPolygon(bounds) }] } : empty;
    this.map.getSource("packd-draft")?.setData(this.draft);
  }

  /** The start area as a circle (null: none). */
  setStartArea(area) {
    const valid = area && area.center.every(Number.isFinite) && Number.isFinite(area.radius_m ?? 5000);
    this.startArea = valid ? { type: "FeatureCollection", features: [{ type: "Feature", properties: {},
      geometry: circlePolygon(area.center, area.radius_m ?? 5000) }] } : empty;
    this.map.getSource("packd-start")?.setData(this.startArea);
  }

  /** Lets a person click one place; calls `done([longitude, latitude])` once. Returns a function that cancels. */
  pickPoint(done) {
    const map = this.map;
    this.container.classList.add("drawing");
    const click = (event) => {
      finish();
      const point = event.lngLat.wrap();
      done([point.lng, point.lat]);
    };
    const finish = () => {
      map.off("click", click);
      this.container.classList.remove("drawing");
    };
    map.on("click", click);
    return finish;
  }

  fit(bounds) {
    if (bounds) this.map.fitBounds(fittableBounds(bounds), { padding: 30, maxZoom: 10, duration: 0 });
  }

  /** Shows a complete pack's offline style under the outlines (null: the plain graticule). */
  async setBackdrop(pack) {
    const style = pack ? await backdropStyle(pack).catch(() => plainStyle) : plainStyle;
    this.map.setStyle(style, { diff: false, transformStyle: (_, next) => this.withOverlay(next) });
  }

  /**
   * Lets a person drag a rectangle; calls `done([west, south, east, north])` once. Panning is off
   * meanwhile. Returns a function that cancels.
   */
  drawRectangle(done) {
    const map = this.map;
    let start = null;
    map.dragPan.disable();
    map.boxZoom.disable();
    map.doubleClickZoom.disable();
    this.container.classList.add("drawing");
    const bounds = (a, b) => {
      const first = a.wrap();
      const second = b.wrap();
      const round = (value) => Math.round(value * 10_000) / 10_000;
      return [Math.min(first.lng, second.lng), Math.min(first.lat, second.lat),
        Math.max(first.lng, second.lng), Math.max(first.lat, second.lat)].map(round);
    };
    const down = (event) => { start = event.lngLat; };
    const move = (event) => { if (start) this.setDraft(bounds(start, event.lngLat)); };
    const up = (event) => {
      if (!start) return;
      const result = bounds(start, event.lngLat);
      finish();
      if (result[0] !== result[2] && result[1] !== result[3]) done(result);
    };
    const finish = () => {
      map.off("mousedown", down);
      map.off("mousemove", move);
      map.off("mouseup", up);
      map.dragPan.enable();
      map.boxZoom.enable();
      map.doubleClickZoom.enable();
      this.container.classList.remove("drawing");
    };
    map.on("mousedown", down);
    map.on("mousemove", move);
    map.on("mouseup", up);
    return finish;
  }
}

/**
 * A pack's offline style as a backdrop for the whole world: each tile source's TileJSON is
 * inlined with the pack's bounds and zooms, so MapLibre asks only for tiles the pack holds
 * (elsewhere the map stays plain instead of requesting tiles packd does not have).
 */
async function backdropStyle(pack) {
  const region = pack.region;
  const style = await request("GET", `v1/packs/${pack.id}/style.json`);
  const bounds = regionBounds(region);
  for (const source of Object.values(style.sources || {})) {
    if (!["vector", "raster", "raster-dem"].includes(source.type)) continue;
    if (source.url) {
      const tileJSON = await request("GET", source.url);
      for (const key of ["tiles", "minzoom", "maxzoom", "scheme", "attribution", "encoding"]) {
        if (tileJSON[key] !== undefined) source[key] = tileJSON[key];
      }
      delete source.url;
    }
    if (bounds && bounds[0] <= bounds[2]) source.bounds = bounds;
    source.minzoom = Math.max(source.minzoom ?? 0, Math.floor(region.min_zoom ?? 0));
    if (region.max_zoom != null) source.maxzoom = Math.min(source.maxzoom ?? 22, Math.floor(region.max_zoom));
  }
  return style;
}

/**
 * Renders a pack from packd's offline `GET /v1/packs/{id}/style.json` (what a phone shows with
 * the upstream switched off). `report(text, failed)` hears progress; the container's
 * `data-state` becomes `drawn` once the map is idle (or `failed`). Returns the map, to `remove()`.
 */
export function previewPack(maplibregl, container, pack, report) {
  container.dataset.state = "loading";
  const region = pack.region;
  const bounds = regionBounds(region);
  const map = new maplibregl.Map({
    container,
    style: apiURL(`v1/packs/${pack.id}/style.json`).href,
    // Only what the pack holds: its zooms and its area (outside them the offline server has
    // nothing, as on a phone), and no look-ahead requests for lower zooms.
    ...(bounds ? { bounds: fittableBounds(bounds), maxBounds: fittableBounds(bounds) } : {}),
    minZoom: region.min_zoom ?? 0,
    ...(region.max_zoom != null ? { maxZoom: region.max_zoom } : {}),
    prefetchZoomDelta: 0,
    transformRequest,
    fadeDuration: 0,
    attributionControl: { compact: true },
    // Keeps the last frame readable (a screenshot, a pixel check) after it is presented.
    canvasContextAttributes: { preserveDrawingBuffer: true },
  });
  map.addControl(new maplibregl.NavigationControl());
  const errors = [];
  map.on("error", (event) => {
    const message = (event.error && event.error.message) || String(event.error);
    errors.push(message);
    container.dataset.state = "failed";
    report(`Map error: ${message}`, true);
  });
  map.once("idle", () => {
    if (errors.length === 0) {
      container.dataset.state = "drawn";
      report("Rendered from packd's offline style.json: every request went to packd, none upstream.", false);
    }
  });
  return map;
}

/** A circle of `radius` metres around `[longitude, latitude]`, as a 64-gon (metres to degrees at its latitude). */
function circlePolygon([longitude, latitude], radius) {
  const metresPerDegree = 111_320;
  const ring = [];
  for (let step = 0; step <= 64; step += 1) {
    const angle = (step / 64) * 2 * Math.PI;
    const dy = (radius * Math.sin(angle)) / metresPerDegree;
    const dx = (radius * Math.cos(angle)) / (metresPerDegree * Math.max(Math.cos((latitude * Math.PI) / 180), 0.01));
    ring.push([longitude + dx, Math.max(-85, Math.min(85, latitude + dy))]);
  }
  return { type: "Polygon", coordinates: [ring] };
}
