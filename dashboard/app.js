// The dashboard's entry point: asks for an API key when packd wants one, keeps the pack list
// current from the event stream (`GET /v1/events`, never polling), and connects the form, the
// list, the maps and the storage figures.

import { ApiError, apiKey, eventStream, request, trustPublicOrigin } from "./api.js";
import { ClusterPanel } from "./cluster.js";
import { CreateForm } from "./create.js";
import { KeyDialog } from "./key-dialog.js";
import { RegionMap, loadMapLibrary, previewPack } from "./maps.js";
import { PackList } from "./packs.js";
import { regionBounds } from "./regions.js";
import { State } from "./states.js";
import { StorageFigures } from "./storage.js";
import { WebhookPanel } from "./webhooks.js";

const $ = (selector) => document.querySelector(selector);

const storage = new StorageFigures($("#storage"));
const webhooks = new WebhookPanel($("#webhooks"), $("#webhooks-note"));
// Webhooks need an admin key: read only when asked for, so a read key's page makes no 403.
$("#webhooks-show").addEventListener("click", (event) => {
  event.target.hidden = true;
  webhooks.start();
});
const keys = new KeyDialog($("#key-dialog"), $("#forget-key"));
let maplibregl = null;
let regionMap = null;
let preview = null;
let highlighted = null;
/** Whether the person picked the region map's backdrop (else the newest complete pack is used). */
let backdropChosen = false;
let events = null;
/** While the list loads, events wait here and are applied after it (they may be newer). */
let deferred = null;

const cluster = new ClusterPanel(
  { section: $("#cluster"), summary: $("#cluster-summary"), nodes: $("#cluster-nodes"), packs: $("#cluster-packs") },
  (id) => packs.packs.get(id)?.name || `Pack ${id}`,
);
const packs = new PackList($("#packs"), $("#packs-empty"), $("#pack-template"), {
  confirm: confirmDialog,
  preview: openPreview,
  show: showOnMap,
  changed: packsChanged,
  failed: () => connect(),
});

const form = new CreateForm($("#create-form"), {
  created: (pack) => {
    packs.upsert(pack);
    showOnMap(pack);
  },
  draftChanged: (bounds) => regionMap?.setDraft(bounds),
  startAreaChanged: (area) => regionMap?.setStartArea(area),
  unauthorized: () => connect(),
});

function showPageError(text) {
  const element = $("#page-error");
  element.textContent = text || "";
  element.hidden = !text;
}

function setLive(state, text) {
  const element = $("#live");
  element.dataset.state = state;
  element.textContent = text;
}

/** Reads the storage figures until packd accepts the key (asking for one on 401), then listens. */
let connecting = null;
function connect() {
  connecting ??= (async () => {
    for (;;) {
      try {
        await storage.refresh();
        showPageError(null);
        break;
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          events?.close();
          setLive("offline", "API key needed");
          await keys.ask(Boolean(apiKey.get()));
          continue;
        }
        showPageError(`packd did not answer: ${error.message}`);
        setLive("offline", "offline");
        await new Promise((resolve) => setTimeout(resolve, 5000));
      }
    }
    listen();
    cluster.start();
  })().finally(() => { connecting = null; });
  return connecting;
}

function listen() {
  events?.close();
  setLive("connecting", "connecting…");
  events = eventStream();
  const on = (type, handle) => events.addEventListener(type, (event) => {
    const data = JSON.parse(event.data);
    if (deferred) deferred.push(() => handle(data));
    else handle(data);
  });
  events.addEventListener("open", () => {
    setLive("live", "live");
    // On every (re)connection: the list as it is now, then the events since.
    loadPacks();
  });
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED) {
      // Not retried by the browser (a 401, a server gone): check the key, then listen again.
      setLive("offline", "offline");
      setTimeout(() => connect(), 3000);
    } else {
      setLive("connecting", "reconnecting…");
    }
  });
  on("progress", (data) => { if (!packs.progressed(data)) refreshPack(data.pack_id); });
  on("state", (data) => {
    // Shown at once from the event; the document adds what the event lacks (completed_at, …).
    packs.stateChanged(data);
    refreshPack(data.pack_id);
    storage.refreshSoon();
  });
  on("pack_removed", (data) => {
    packs.remove(data.pack_id);
    storage.refreshSoon();
  });
  on("resource_error", (data) => packs.resourceFailed(data));
  on("version_created", (data) => { if (!packs.versionCreated(data)) refreshPack(data.pack_id); });
  on("start_area_ready", (data) => packs.startAreaReady(data));
}

async function loadPacks() {
  deferred = deferred ?? [];
  try {
    const all = [];
    let path = "v1/packs?limit=500";
    while (path) {
      const page = await request("GET", path);
      all.push(...page.packs);
      path = page.next ? page.next.replace(/^\//, "") : null;
    }
    packs.replace(all);
  } catch (error) {
    showPageError(`Listing the packs failed: ${error.message}`);
  } finally {
    const waiting = deferred;
    deferred = null;
    for (const apply of waiting) apply();
  }
}

async function refreshPack(id) {
  if (packs.isRemoved(id)) return;
  try {
    packs.upsert(await request("GET", `v1/packs/${id}`));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) packs.remove(id);
  }
}

function packsChanged() {
  regionMap?.setPacks(packs.all(), highlighted);
  const select = $("#backdrop");
  const chosen = select.value;
  const complete = packs.all().filter((pack) => pack.state === State.complete && pack.region.style_url);
  select.replaceChildren(select.options[0], ...complete.map((pack) => {
    const option = document.createElement("option");
    option.value = String(pack.id);
    option.textContent = pack.name || `Pack ${pack.id}`;
    return option;
  }));
  select.value = complete.some((pack) => String(pack.id) === chosen) ? chosen : "";
  if (!backdropChosen && select.value === "" && complete.length > 0 && $("#region-map").dataset.state === "ready") {
    // Until the person picks one: the newest complete pack, so the map shows real places.
    const newest = complete[complete.length - 1];
    select.value = String(newest.id);
    regionMap.setBackdrop(newest);
  } else if (chosen && select.value !== chosen) {
    regionMap?.setBackdrop(null);
  }
  storage.refreshSoon();
}

function showOnMap(pack) {
  highlighted = pack.id;
  packs.highlight(pack.id);
  regionMap?.setPacks(packs.all(), highlighted);
  regionMap?.fit(regionBounds(pack.region));
}

function confirmDialog(text) {
  const dialog = $("#confirm-dialog");
  $("#confirm-text").textContent = text;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
  });
}

function openPreview(pack) {
  const dialog = $("#preview-dialog");
  const status = $("#preview-status");
  $("#preview-title").textContent = `Preview: ${pack.name || `Pack ${pack.id}`}`;
  dialog.showModal();
  if (!maplibregl) {
    status.textContent = "Previews need MapLibre GL JS, which is not installed with this packd.";
    return;
  }
  status.textContent = "Loading the offline style…";
  preview?.remove();
  preview = previewPack(maplibregl, $("#preview-map"), pack, (text) => { status.textContent = text; });
}

$("#preview-dialog").addEventListener("close", () => {
  preview?.remove();
  preview = null;
  $("#preview-map").dataset.state = "";
});

async function startMaps(available) {
  maplibregl = await loadMapLibrary(available);
  const note = $("#map-note");
  if (!maplibregl) {
    note.textContent = "Maps are off: MapLibre GL JS is not installed with this packd (make dashboard-assets or "
      + "make install puts it in place). Everything else works: type the rectangle's bounds or paste GeoJSON.";
    return;
  }
  const container = $("#region-map");
  container.hidden = false;
  regionMap = new RegionMap(maplibregl, container);
  regionMap.map.once("load", () => {
    container.dataset.state = "ready";
    packsChanged();
    regionMap.setDraft(form.radio("region-kind") === "bounds" ? form.bounds() : null);
    regionMap.setStartArea(form.startArea());
  });
  note.textContent = "Outlines of every pack's region. A complete pack can be the backdrop, served offline by packd.";
  $("#backdrop-field").hidden = false;
  $("#backdrop").addEventListener("change", (event) => {
    backdropChosen = true;
    regionMap.setBackdrop(packs.packs.get(Number(event.target.value)) || null);
  });
  const draw = $("#draw");
  draw.hidden = false;
  let cancel = null;
  const reset = () => {
    cancel = null;
    draw.setAttribute("aria-pressed", "false");
    draw.textContent = "Draw a rectangle on the map";
  };
  draw.addEventListener("click", () => {
    if (cancel) {
      cancel();
      return reset();
    }
    draw.setAttribute("aria-pressed", "true");
    draw.textContent = "Drag on the map… (click here to cancel)";
    cancel = regionMap.drawRectangle((bounds) => {
      reset();
      form.setBounds(bounds);
    });
  });
  const pick = $("#pick-start");
  pick.hidden = false;
  let cancelPick = null;
  const resetPick = () => {
    cancelPick = null;
    pick.setAttribute("aria-pressed", "false");
    pick.textContent = "Click the map where to start";
  };
  pick.addEventListener("click", () => {
    if (cancelPick) {
      cancelPick();
      return resetPick();
    }
    pick.setAttribute("aria-pressed", "true");
    pick.textContent = "Click on the map… (click here to cancel)";
    cancelPick = regionMap.pickPoint((center) => {
      resetPick();
      form.setStartCenter(center);
    });
  });
}

async function start() {
  const setup = await request("GET", "dashboard/setup.json").catch(() => ({ map_library: false }));
  trustPublicOrigin(setup.public_origin);
  startMaps(setup.map_library === true);
  form.changed();
  await connect();
}

start();
