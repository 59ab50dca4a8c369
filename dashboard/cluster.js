// The cluster as `GET /v1/cluster` tells it (cluster mode only; the panel stays hidden on a
// SQLite file): each node's held units, transfers in flight and part of the per-host cap as of
// its last heartbeat, dated; and each active pack's units by state. One snapshot of the database
// per answer, so the held units add up to the leased ones. Read again every few seconds while
// the page is visible (the event stream says nothing about nodes).

import { request } from "./api.js";
import * as format from "./format.js";

export class ClusterPanel {
  /**
   * `section`: the panel, `summary` a line of totals, `nodes` the table body, `packs` a list;
   * `packName(id)`: how the page names a pack.
   */
  constructor({ section, summary, nodes, packs }, packName) {
    this.section = section;
    this.summary = summary;
    this.nodes = nodes;
    this.packs = packs;
    this.packName = packName;
    this.timer = null;
    this.reading = false;
  }

  /** Reads now, then every `seconds` while the page is visible (called again: reads now). */
  start(seconds = 2) {
    const tick = () => {
      if (document.visibilityState === "visible") this.refresh().catch(() => {});
    };
    tick();
    if (this.timer) return;
    this.timer = setInterval(tick, seconds * 1000);
    document.addEventListener("visibilitychange", tick);
  }

  async refresh() {
    if (this.reading) return;
    this.reading = true;
    try {
      this.show(await request("GET", "v1/cluster"));
    } finally {
      this.reading = false;
    }
  }

  show(status) {
    this.section.hidden = status.mode !== "postgresql";
    if (this.section.hidden) return;
    const units = status.units;
    const working = status.nodes.filter((node) => node.units_held > 0).length;
    this.summary.textContent = `${format.count(status.nodes.length)} nodes, ${format.count(working)} working · units of `
      + `active packs: ${format.count(units.leased)} leased, ${format.count(units.pending)} pending, `
      + `${format.count(units.done)} done`;
    const now = Date.now();
    this.nodes.replaceChildren(...status.nodes.map((node) => {
      const row = document.createElement("tr");
      row.dataset.node = String(node.id);
      const age = (now - new Date(node.last_heartbeat_at).getTime()) / 1000;
      const cells = [
        String(node.id),
        node.listen || "–",
        format.count(node.units_held),
        format.count(node.transfers_in_flight),
        node.transfer_share == null ? "–" : format.count(node.transfer_share),
        Number.isFinite(age) ? `${format.duration(Math.max(0, age))} ago` : "–",
        node.version,
      ];
      const fields = ["id", "listen", "units-held", "transfers", "share", "heartbeat", "version"];
      row.append(...cells.map((text, index) => {
        const cell = document.createElement(index === 0 ? "th" : "td");
        if (index === 0) cell.scope = "row";
        cell.dataset.field = fields[index];
        cell.textContent = text;
        if (fields[index] === "heartbeat") cell.title = format.date(node.last_heartbeat_at);
        return cell;
      }));
      return row;
    }));
    this.packs.replaceChildren(...status.packs.map((pack) => {
      const item = document.createElement("li");
      item.dataset.pack = String(pack.id);
      const total = pack.units.pending + pack.units.leased + pack.units.done;
      const bar = document.createElement("div");
      bar.className = "units";
      bar.setAttribute("role", "img");
      bar.setAttribute("aria-label", `${pack.units.done} done, ${pack.units.leased} leased, ${pack.units.pending} pending`);
      for (const state of ["done", "leased", "pending"]) {
        const part = document.createElement("span");
        part.className = state;
        part.style.flexGrow = String(pack.units[state]);
        bar.append(part);
      }
      const label = document.createElement("span");
      label.className = "units-label";
      label.textContent = `${this.packName(pack.id)}: ${format.count(pack.units.done)} of ${format.count(total)} units done, `
        + `${format.count(pack.units.leased)} under way, ${format.count(pack.units.pending)} waiting`;
      item.append(label, bar);
      return item;
    }));
  }
}
