// The list of packs in creation order, kept current by the event stream: state, a progress bar,
// done of expected, rate, ETA, the error and the failed resources, the actions and the exports.

import { ApiError, apiURL, download, request } from "./api.js";
import * as format from "./format.js";
import { State, allows } from "./states.js";

const exportFormats = { maplibre: "sqlite", mbtiles: "mbtiles", pmtiles: "pmtiles" };

/** `progress.throttled` (`{host, reason, until?}`) for people. */
export function throttleNote({ host, reason, until }) {
  if (reason === "retry_after") {
    const end = until ? new Date(until) : null;
    const left = end && !Number.isNaN(end.getTime()) ? Math.max(0, Math.ceil((end.getTime() - Date.now()) / 1000)) : null;
    return `Upstream asked us to slow down: ${host} paused this download (Retry-After)`
      + `${left != null ? ` for about ${format.duration(left)} more` : ""}.`;
  }
  const why = reason === "rate_limited" ? "answered “too many requests”" : "timed out or dropped connections";
  return `Upstream asked us to slow down: ${host} ${why}, so fewer requests go to it for now.`;
}

export class PackList {
  /**
   * `hooks`: `confirm(text)` → Promise<boolean>, `preview(pack)`, `show(pack)`, `changed()` (the
   * set or a state changed: maps and storage follow), `failed(error)` for errors of no one pack.
   */
  constructor(list, empty, template, hooks) {
    this.list = list;
    this.empty = empty;
    this.template = template;
    this.hooks = hooks;
    this.packs = new Map();
    this.items = new Map();
    this.removed = new Set();
    /** Pack id → the style's tile source names (`[null]`: one source, no name needed; null: loading). */
    this.tileSources = new Map();
    list.addEventListener("click", (event) => this.clicked(event));
  }

  all() {
    return [...this.packs.values()];
  }

  /** Replaces the whole list (a fresh `GET /v1/packs`). */
  replace(packs) {
    this.packs.clear();
    for (const item of this.items.values()) item.remove();
    this.items.clear();
    for (const pack of packs) this.upsert(pack, { quiet: true });
    this.hooks.changed();
  }

  /** Adds or updates a pack from its full document. */
  upsert(pack, { quiet = false } = {}) {
    if (this.removed.has(pack.id)) return;
    this.packs.set(pack.id, pack);
    let item = this.items.get(pack.id);
    if (!item) {
      item = this.template.content.firstElementChild.cloneNode(true);
      item.dataset.packId = String(pack.id);
      this.items.set(pack.id, item);
      // Creation order is id order.
      const next = [...this.items.keys()].filter((id) => id > pack.id).sort((a, b) => a - b)[0];
      this.list.insertBefore(item, next === undefined ? null : this.items.get(next));
    }
    this.render(pack, item);
    this.empty.hidden = this.packs.size > 0;
    if (!quiet) this.hooks.changed();
  }

  /** Whether the pack was removed (its late events must not bring it back). */
  isRemoved(id) {
    return this.removed.has(id);
  }

  /** A `state` event: `{pack_id, state, error}`; false when the pack is not listed (yet). */
  stateChanged({ pack_id: id, state, error }) {
    const pack = this.packs.get(id);
    if (!pack) return false;
    pack.state = state;
    pack.error = error ?? null;
    this.render(pack, this.items.get(id));
    this.hooks.changed();
    return true;
  }

  remove(id) {
    this.removed.add(id);
    this.packs.delete(id);
    this.items.get(id)?.remove();
    this.items.delete(id);
    this.empty.hidden = this.packs.size > 0;
    this.hooks.changed();
  }

  /** A `progress` event: `{pack_id, state, progress}`. */
  progressed({ pack_id: id, state, progress, invalidation }) {
    const pack = this.packs.get(id);
    if (!pack) return false;
    pack.progress = progress;
    if (invalidation) pack.invalidation = invalidation;
    const stateChanged = state && state !== pack.state;
    if (state) pack.state = state;
    this.render(pack, this.items.get(id));
    if (stateChanged) this.hooks.changed();
    return true;
  }

  /** A `start_area_ready` event: the start area is usable offline. */
  startAreaReady({ pack_id: id, ready_at: readyAt }) {
    const pack = this.packs.get(id);
    if (!pack) return;
    pack.start_area_ready_at = readyAt;
    this.render(pack, this.items.get(id));
  }

  /** A `resource_error` event: the latest failed request, shown until the next one. */
  resourceFailed({ pack_id: id, url, status, error, attempt, will_retry: willRetry }) {
    const item = this.items.get(id);
    if (!item) return;
    const what = status ? `HTTP ${status}` : error || "error";
    this.say(item, `Request ${attempt} for ${url} failed (${what})${willRetry ? "; retrying" : ""}.`, !willRetry);
  }

  highlight(id) {
    for (const [itemID, item] of this.items) item.classList.toggle("highlighted", itemID === id);
  }

  render(pack, item) {
    const progress = pack.progress || {};
    item.dataset.state = pack.state;
    item.querySelector(".pack-name").textContent = pack.name || `Pack ${pack.id}`;
    const state = item.querySelector(".state");
    state.textContent = pack.state;
    state.dataset.state = pack.state;
    item.querySelector(".pack-meta").textContent = `#${pack.id} · created ${format.date(pack.created_at)}`
      + (pack.completed_at ? ` · complete ${format.date(pack.completed_at)}` : "");

    const bar = item.querySelector(".bar");
    const expected = progress.expected_resources || 0;
    if (expected > 0) {
      bar.max = expected;
      bar.value = Math.min(progress.completed_resources || 0, expected);
    } else if (pack.state === State.complete) {
      bar.max = 1;
      bar.value = 1;
    } else {
      bar.removeAttribute("value"); // indeterminate until the plan is known
    }
    const fraction = expected > 0 ? (progress.completed_resources || 0) / expected : pack.state === State.complete ? 1 : 0;
    item.dataset.percent = String(Math.floor(fraction * 100));
    bar.setAttribute("aria-label", `${Math.floor(fraction * 100)} percent`);

    const parts = [];
    const done = `${format.count(progress.completed_resources)} of ${expected > 0 ? format.count(expected) : "?"}`
      + `${progress.expected_is_precise === false && expected > 0 ? " (so far)" : ""} resources`;
    parts.push(expected > 0 ? `${done} (${format.percent(progress.completed_resources || 0, expected)})` : done);
    parts.push(`${format.count(progress.completed_tiles)} tiles`);
    parts.push(format.bytes(progress.completed_bytes));
    const rate = format.rate(progress.bytes_per_second);
    if (rate) parts.push(rate);
    const eta = format.duration(progress.eta_seconds);
    if (eta) parts.push(`ETA ${eta}`);
    if (pack.state === State.active && progress.transfers_in_flight != null) {
      parts.push(`${format.count(progress.transfers_in_flight)} in flight`);
    }
    if (progress.failed_resources) parts.push(`${format.count(progress.failed_resources)} failed`);
    item.querySelector(".figures").textContent = parts.join(" · ");

    const throttled = item.querySelector(".throttled");
    const holding = pack.state === State.active ? progress.throttled : null;
    throttled.hidden = !holding;
    throttled.textContent = holding ? throttleNote(holding) : "";

    const update = item.querySelector(".update");
    const notes = [];
    if (pack.update_available === true) notes.push("The upstream changed since this pack was downloaded: invalidate to fetch what changed.");
    if (pack.refresh) {
      notes.push(`Refreshed every ${pack.refresh.every}`
        + `${pack.next_refresh_at ? `; next ${format.date(pack.next_refresh_at)}` : ""}.`);
    }
    if (pack.start_area) {
      const [longitude, latitude] = pack.start_area.center;
      const where = `${format.count(pack.start_area.radius_m)} m around ${longitude}, ${latitude}`;
      notes.push(pack.start_area_ready_at ? `Start area (${where}) ready ${format.date(pack.start_area_ready_at)}.`
        : `Start area: ${where}, downloaded first.`);
    }
    const skipped = pack.skipped_glyph_ranges;
    if (skipped) notes.push(`${format.count(skipped.ranges)} glyph ranges the labels do not need were left out.`);
    const check = pack.invalidation;
    if (check) {
      notes.push(`Revalidation${check.completed_at ? "" : " under way"}: ${format.count(check.unchanged)} unchanged, `
        + `${format.count(check.updated)} updated, ${format.count(check.removed)} removed.`);
    }
    update.hidden = notes.length === 0;
    update.textContent = notes.join(" ");

    const error = item.querySelector(".pack-error");
    error.hidden = !pack.error;
    if (pack.error) {
      const where = [pack.error.status ? `HTTP ${pack.error.status}` : null, pack.error.url].filter(Boolean).join(" ");
      error.textContent = `${pack.error.code}: ${pack.error.detail}${where ? ` (${where})` : ""}`;
    }
    const failures = item.querySelector(".failures");
    failures.hidden = !(progress.failed_resources > 0 || pack.state === State.failed);
    // An open list follows new failures (not every progress event: those come 10 a second).
    const failed = `${progress.failed_resources || 0}/${pack.state}`;
    if (failures.open && !failures.hidden && item.dataset.failuresShown !== failed) this.loadFailures(pack.id, item);
    const versions = item.querySelector(".versions");
    versions.hidden = !(pack.version > 0);
    versions.querySelector("summary").textContent = `Versions (current: ${pack.version || 0})`;
    if (versions.open && !versions.hidden && item.dataset.versionsShown !== String(pack.version)) this.loadVersions(pack.id, item);

    for (const button of item.querySelectorAll("button[data-action]")) {
      button.hidden = !allows(button.dataset.action, pack.state);
    }
    const exports = item.querySelector(".exports");
    exports.hidden = !allows("export", pack.state);
    if (!exports.hidden) this.renderExports(pack, exports);
  }

  /**
   * A MapLibre database holds every source; MBTiles and PMTiles hold one tile source each, so a
   * style pack with several gets one link per source (named as in its offline style).
   */
  renderExports(pack, exports) {
    // A pack with a version links its immutable artifacts (cacheable, resumable); one without
    // (an unfinished pack's partial export) the current-version route.
    const versioned = pack.version > 0;
    const base = versioned ? `v1/packs/${pack.id}/versions/${pack.version}/export` : `v1/packs/${pack.id}/export`;
    const stem = versioned ? `pack-${pack.id}-v${pack.version}` : `pack-${pack.id}`;
    const database = exports.querySelector('a[data-format="maplibre"]');
    database.href = apiURL(`${base}?format=maplibre`).href;
    database.download = `${stem}.${exportFormats.maplibre}`;
    const archives = exports.querySelector(".archives");
    const sources = pack.region.style_url ? this.tileSources.get(pack.id) : [null];
    if (sources === undefined) {
      this.tileSources.set(pack.id, null);
      request("GET", `v1/packs/${pack.id}/style.json`).then((style) => {
        const names = Object.entries(style.sources || {})
          .filter(([, source]) => ["vector", "raster", "raster-dem"].includes(source.type)).map(([name]) => name);
        this.tileSources.set(pack.id, names.length === 1 ? [null] : names);
        const item = this.items.get(pack.id);
        if (item && this.packs.has(pack.id)) this.renderExports(this.packs.get(pack.id), item.querySelector(".exports"));
      }).catch(() => this.tileSources.delete(pack.id));
    }
    const links = [];
    for (const kind of ["mbtiles", "pmtiles"]) {
      for (const source of sources || []) {
        const link = document.createElement("a");
        link.dataset.format = kind;
        const query = source ? `&source=${encodeURIComponent(source)}` : "";
        link.href = apiURL(`${base}?format=${kind}${query}`).href;
        link.download = `${stem}${source ? `-${source}` : ""}.${exportFormats[kind]}`;
        link.textContent = `${kind === "mbtiles" ? "MBTiles" : "PMTiles"}${source ? ` (${source})` : ""}`;
        links.push(link);
      }
    }
    archives.replaceChildren(...links);
  }

  /** A `version_created` event: `{pack_id, version: {version, …}}`. */
  versionCreated({ pack_id: id, version }) {
    const pack = this.packs.get(id);
    if (!pack || !version) return false;
    pack.version = Math.max(pack.version || 0, version.version);
    this.render(pack, this.items.get(id));
    return true;
  }

  /**
   * The retained versions, newest first: what each changed. Each line carries `data-version`, so
   * the version's downloads can be put beside it.
   */
  async loadVersions(id, item) {
    const list = item.querySelector(".version-list");
    const pack = this.packs.get(id);
    item.dataset.versionsShown = String((pack && pack.version) || 0);
    try {
      const body = await request("GET", `v1/packs/${id}/versions`);
      list.replaceChildren(...(body.versions || []).map((version) => {
        const line = document.createElement("li");
        line.value = version.version;
        line.dataset.version = String(version.version);
        const changes = version.version === 1 ? "first version"
          : `${format.count(version.changed_resources)} changed (${format.bytes(version.changed_bytes)}), `
            + `${format.count(version.removed_resources)} removed`;
        line.textContent = `Version ${version.version} · ${format.date(version.created_at)} · `
          + `${format.count(version.resources)} resources, ${format.bytes(version.bytes)} · ${changes}`;
        return line;
      }));
    } catch (error) {
      list.replaceChildren(Object.assign(document.createElement("li"), { textContent: error.message }));
    }
  }

  async loadFailures(id, item) {
    const list = item.querySelector(".failure-list");
    const pack = this.packs.get(id);
    item.dataset.failuresShown = `${(pack && pack.progress && pack.progress.failed_resources) || 0}/${pack && pack.state}`;
    try {
      const body = await request("GET", `v1/packs/${id}/errors?limit=100`);
      const entries = body.errors || [];
      list.replaceChildren(...entries.map((entry) => {
        const line = document.createElement("li");
        const what = entry.status ? `HTTP ${entry.status}` : entry.error || "error";
        line.textContent = `${what} · ${entry.url} · ${entry.attempts} attempt${entry.attempts === 1 ? "" : "s"} · ${format.date(entry.last_attempt_at)}`;
        return line;
      }));
      if (entries.length === 0) list.replaceChildren(Object.assign(document.createElement("li"), { textContent: "none recorded" }));
      if (body.total > entries.length) {
        list.append(Object.assign(document.createElement("li"), { textContent: `… ${format.count(body.total - entries.length)} more` }));
      }
    } catch (error) {
      list.replaceChildren(Object.assign(document.createElement("li"), { textContent: error.message }));
    }
  }

  say(item, text, bad = false) {
    const result = item.querySelector(".action-result");
    result.textContent = text;
    result.classList.toggle("bad", bad);
  }

  async clicked(event) {
    const item = event.target.closest(".pack");
    if (!item) return;
    const id = Number(item.dataset.packId);
    const pack = this.packs.get(id);
    if (!pack) return;
    if (event.target.matches(".failures summary")) {
      // Toggling happens after the click: load when it is about to open.
      if (!item.querySelector(".failures").open) this.loadFailures(id, item);
      return;
    }
    if (event.target.matches(".versions summary")) {
      if (!item.querySelector(".versions").open) this.loadVersions(id, item);
      return;
    }
    const link = event.target.closest("a[data-format]");
    if (link) {
      event.preventDefault();
      this.say(item, `Preparing the ${link.textContent} export…`);
      try {
        await download(link.href, link.download);
        this.say(item, `${link.textContent} export started.`);
      } catch (error) {
        this.say(item, `Export failed: ${error.message}`, true);
      }
      return;
    }
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "preview") return this.hooks.preview(pack);
    if (action === "show") return this.hooks.show(pack);
    button.disabled = true;
    try {
      await this.perform(action, pack, item);
    } catch (error) {
      this.say(item, error instanceof ApiError && error.status === 403
        ? "This API key's role may not do that." : `${action} failed: ${error.message}`, true);
      if (error instanceof ApiError && error.status === 401) this.hooks.failed(error);
    } finally {
      button.disabled = false;
    }
  }

  async perform(action, pack, item) {
    const id = pack.id;
    switch (action) {
      case "suspend":
      case "resume":
        this.upsert(await request("POST", `v1/packs/${id}/${action}`));
        this.say(item, action === "suspend" ? "Suspended." : "Resumed.");
        break;
      case "invalidate": {
        const body = await request("POST", `v1/packs/${id}/invalidate`);
        this.say(item, "Revalidating every stored resource; only what changed is downloaded.");
        if (body && body.id) this.upsert(body);
        break;
      }
      case "check-update": {
        const body = await request("POST", `v1/packs/${id}/check-update`);
        if (body && body.id) this.upsert(body);
        this.say(item, body && body.update_available ? "An update is available." : "No update: the upstream is unchanged.");
        break;
      }
      case "delete": {
        const name = pack.name ? `"${pack.name}" (#${id})` : `#${id}`;
        const confirmed = await this.hooks.confirm(
          `Delete pack ${name}? Downloading stops; resources no other pack uses become ambient cache.`);
        if (!confirmed) return;
        await request("DELETE", `v1/packs/${id}`);
        this.remove(id);
        break;
      }
    }
  }
}
