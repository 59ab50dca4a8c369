// The form that creates a pack: a style URL or a tile template, a region (a rectangle typed or
// drawn on the map, or pasted GeoJSON), zooms, the lean options (only the glyphs the labels need,
// a start area typed or clicked on the map) and a name. The estimate (`POST /v1/estimates`)
// is shown before Create can be pressed; every problem the API reports is shown at the field its
// `errors[].pointer` points to.

import { ApiError, request } from "./api.js";
import * as format from "./format.js";
import { geometryFromGeoJSON } from "./regions.js";

/** A problem found before asking the API (GeoJSON that does not parse), shaped like its errors. */
class FormProblem extends Error {
  constructor(pointer, detail) {
    super(detail);
    this.problem = { title: "Invalid input", detail, errors: [{ pointer, detail }] };
  }
}

export class CreateForm {
  /** `hooks`: `created(pack)`, `draftChanged(bounds | null)`, `startAreaChanged(area | null)`, `unauthorized(error)`. */
  constructor(form, hooks) {
    this.form = form;
    this.hooks = hooks;
    this.field = (id) => form.querySelector(`#${id}`);
    this.estimateView = form.querySelector("#estimate");
    this.createButton = form.querySelector("#create-button");
    this.sequence = 0;
    this.estimated = -1;
    this.key = null;
    this.timer = null;
    form.addEventListener("input", () => this.changed());
    form.addEventListener("change", () => this.changed());
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create();
    });
    this.showChoices();
  }

  radio(name) {
    return this.form.querySelector(`input[name="${name}"]:checked`).value;
  }

  /** Fills the rectangle (from the map) and selects it. */
  setBounds(bounds) {
    ["west", "south", "east", "north"].forEach((id, index) => { this.field(id).value = String(bounds[index]); });
    this.form.querySelector('input[name="region-kind"][value="bounds"]').checked = true;
    this.changed();
  }

  /** Fills the start area's centre (a click on the map). */
  setStartCenter([longitude, latitude]) {
    const round = (value) => Math.round(value * 100_000) / 100_000;
    this.field("start-longitude").value = String(round(longitude));
    this.field("start-latitude").value = String(round(latitude));
    this.changed();
  }

  /** The request's `start_area`, or null when no centre is given. */
  startArea() {
    const longitude = this.field("start-longitude").value.trim();
    const latitude = this.field("start-latitude").value.trim();
    if (longitude === "" && latitude === "") return null;
    const area = { center: [Number(longitude), Number(latitude)] };
    const radius = this.field("start-radius").value.trim();
    if (radius !== "") area.radius_m = Number(radius);
    return area;
  }

  bounds() {
    const values = ["west", "south", "east", "north"].map((id) => this.field(id).value.trim());
    return values.some((value) => value === "") ? null : values.map(Number);
  }

  showChoices() {
    const source = this.radio("source-kind");
    const region = this.radio("region-kind");
    for (const element of this.form.querySelectorAll("[data-source]")) element.hidden = element.dataset.source !== source;
    for (const element of this.form.querySelectorAll("[data-region]")) element.hidden = element.dataset.region !== region;
  }

  /** What the estimate depends on: the region as it would be sent (the name does not count). */
  regionKey() {
    try {
      return JSON.stringify(this.region());
    } catch (error) {
      return `invalid: ${error.message}`;
    }
  }

  changed() {
    this.showChoices();
    this.hooks.draftChanged(this.radio("region-kind") === "bounds" ? this.bounds() : null);
    this.hooks.startAreaChanged?.(this.startArea());
    const key = this.regionKey();
    if (key === this.key) return;
    this.key = key;
    this.sequence += 1;
    this.createButton.disabled = true;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.estimate(), 350);
  }

  /** The request's `region` as the form describes it. */
  region() {
    const region = {};
    const source = this.radio("source-kind");
    if (source === "style") {
      region.style_url = this.field("style-url").value.trim();
    } else if (source === "pmtiles") {
      region.pmtiles = this.field("pmtiles").value.trim();
    } else {
      region.tiles = [this.field("tiles").value.trim()];
    }
    if (this.radio("region-kind") === "bounds") {
      const values = ["west", "south", "east", "north"].map((id) => this.field(id).value.trim());
      region.bounds = values.map((value) => (value === "" ? null : Number(value)));
    } else {
      const text = this.field("geojson").value.trim();
      let parsed;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new FormProblem("/region/geometry", text ? `not JSON: ${error.message}` : "paste a GeoJSON geometry");
      }
      region.geometry = geometryFromGeoJSON(parsed);
    }
    const zoom = (id) => {
      const text = this.field(id).value.trim();
      return text === "" ? undefined : Number(text);
    };
    region.min_zoom = zoom("min-zoom") ?? 0;
    const maxZoom = zoom("max-zoom");
    if (maxZoom !== undefined) region.max_zoom = maxZoom;
    if (region.style_url !== undefined && this.field("region-glyphs").checked) region.glyphs = "region";
    return region;
  }

  async estimate() {
    const sequence = this.sequence;
    this.clearProblems();
    let region;
    try {
      region = this.region();
    } catch (error) {
      this.showProblem(error.problem);
      this.estimateView.replaceChildren();
      return;
    }
    if (!region.style_url && !region.pmtiles && !(region.tiles && region.tiles[0])) {
      this.estimateView.replaceChildren(paragraph("Enter a style URL, a tile template or an archive URL for an estimate."));
      return;
    }
    this.estimateView.dataset.state = "pending";
    this.estimateView.replaceChildren(paragraph("Estimating…"));
    try {
      const estimate = await request("POST", "v1/estimates", { region });
      if (sequence !== this.sequence) return;
      this.renderEstimate(estimate);
      this.estimated = sequence;
      this.createButton.disabled = estimate.within_tile_limit === false;
    } catch (error) {
      if (sequence !== this.sequence) return;
      this.estimateView.dataset.state = "failed";
      this.estimateView.replaceChildren(paragraph("No estimate: fix the marked fields."));
      this.failed(error);
    }
  }

  renderEstimate(estimate) {
    this.estimateView.dataset.state = "ready";
    const parts = [];
    const headline = document.createElement("p");
    const tiles = document.createElement("strong");
    tiles.textContent = `${format.count(estimate.tiles)} tiles`;
    headline.append(tiles, ` ${estimate.exact ? "(exact)" : "(estimated)"} · ${format.count(estimate.expected_resources)} resources in all`);
    parts.push(headline);
    const size = estimate.estimated_bytes == null
      ? "Size unknown until some tiles of these sources are stored."
      : `About ${format.bytes(estimate.estimated_bytes)} (from the average of ${format.count(estimate.sampled_tiles)} stored tiles of the same sources).`;
    parts.push(paragraph(size));
    const counts = estimate.resources || {};
    const others = [["styles", "style"], ["tilejsons", "TileJSON"], ["sprites", "sprite file"], ["glyphs", "glyph range"], ["data", "data file"]]
      .filter(([key]) => counts[key] > 0)
      .map(([key, noun]) => `${format.count(counts[key])} ${noun}${counts[key] === 1 ? "" : "s"}`);
    if (others.length) parts.push(paragraph(`Besides tiles: ${others.join(", ")}.`));
    if (estimate.within_tile_limit === false) {
      const over = paragraph(`Over the tile limit of ${format.count(estimate.tile_limit)}: this pack cannot be created.`);
      over.className = "over";
      parts.push(over);
    }
    parts.push(zoomTable(estimate.sources || []));
    this.estimateView.replaceChildren(...parts);
  }

  async create() {
    if (this.estimated !== this.sequence) return;
    const body = { start: true };
    try {
      body.region = this.region();
    } catch (error) {
      return this.showProblem(error.problem);
    }
    const name = this.field("name").value.trim();
    if (name) body.name = name;
    const startArea = this.startArea();
    if (startArea) body.start_area = startArea;
    this.clearProblems();
    this.createButton.disabled = true;
    try {
      const pack = await request("POST", "v1/packs", body);
      this.hooks.created(pack);
      this.estimateView.replaceChildren(paragraph(`Pack #${pack.id} created.`));
      this.estimateView.dataset.state = "created";
    } catch (error) {
      this.failed(error);
    } finally {
      this.createButton.disabled = this.estimated !== this.sequence;
    }
  }

  failed(error) {
    if (error instanceof ApiError && error.status === 401) this.hooks.unauthorized(error);
    this.showProblem(error.problem || { detail: error.message });
  }

  clearProblems() {
    for (const element of this.form.querySelectorAll(".field-error")) {
      element.hidden = true;
      element.textContent = "";
    }
    for (const element of this.form.querySelectorAll("[aria-invalid]")) element.removeAttribute("aria-invalid");
  }

  /** Each `errors[]` entry at the field whose pointer is the longest prefix of its own; the rest on the form. */
  showProblem(problem) {
    this.clearProblems();
    const places = [...this.form.querySelectorAll(".field-error[data-pointer]")];
    const entries = problem.errors && problem.errors.length ? problem.errors : [{ pointer: "", detail: problem.detail || problem.title }];
    for (const entry of entries) {
      const pointer = entry.pointer || "";
      const place = places
        .filter((element) => { const target = element.dataset.pointer; return pointer === target || pointer.startsWith(`${target}/`) || target === ""; })
        .filter((element) => !element.parentElement.closest("[hidden]"))
        .sort((a, b) => b.dataset.pointer.length - a.dataset.pointer.length)[0];
      if (!place) continue;
      const detail = place.dataset.pointer === pointer || !pointer ? entry.detail : `${pointer}: ${entry.detail}`;
      place.textContent = place.textContent ? `${place.textContent} ${detail}` : detail;
      place.hidden = false;
      place.closest(".field")?.querySelectorAll("input, textarea").forEach((input) => input.setAttribute("aria-invalid", "true"));
    }
  }
}

function paragraph(text) {
  const element = document.createElement("p");
  element.textContent = text;
  return element;
}

/** Tiles per zoom (rows) and source (columns). */
function zoomTable(sources) {
  const table = document.createElement("table");
  if (sources.length === 0) return table;
  const zooms = [...new Set(sources.flatMap((source) => source.zooms.map((entry) => entry.zoom)))].sort((a, b) => a - b);
  const head = table.createTHead().insertRow();
  head.append(Object.assign(document.createElement("th"), { textContent: "zoom" }));
  for (const source of sources) head.append(Object.assign(document.createElement("th"), { textContent: `${source.source} (${source.type})` }));
  const body = table.createTBody();
  for (const zoom of zooms) {
    const row = body.insertRow();
    row.insertCell().textContent = String(zoom);
    for (const source of sources) {
      const entry = source.zooms.find((candidate) => candidate.zoom === zoom);
      row.insertCell().textContent = entry ? `${format.count(entry.tiles)}${entry.exact ? "" : "≈"}` : "";
    }
  }
  return table;
}
