// The storage figures of `GET /v1/storage`: total, ambient cache (size of limit), tile limit.

import { request } from "./api.js";
import * as format from "./format.js";

export class StorageFigures {
  constructor(list) {
    this.list = list;
    this.timer = null;
  }

  /** Reads the figures again soon (several events in a burst make one request). */
  refreshSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh().catch(() => {}), 500);
  }

  async refresh() {
    const storage = await request("GET", "v1/storage");
    this.show(storage);
    return storage;
  }

  show(storage) {
    const ambient = storage.ambient_cache || {};
    const tiles = storage.tile_limit || {};
    const figures = [
      ["Stored", format.bytes(storage.bytes), "bytes"],
      ["Packs", format.count(storage.packs), "packs"],
      ["Ambient cache", ambient.maximum_size === 0
        ? `${format.bytes(ambient.size)} (disabled)` : `${format.bytes(ambient.size)} of ${format.bytes(ambient.maximum_size)}`, "ambient"],
      ["Tiles", tiles.maximum == null
        ? `${format.count(tiles.count)} (no limit)` : `${format.count(tiles.count)} of ${format.count(tiles.maximum)}`, "tiles"],
    ];
    this.list.replaceChildren(...figures.map(([term, value, key]) => {
      const group = document.createElement("div");
      group.dataset.figure = key;
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = value;
      group.append(dt, dd);
      return group;
    }));
  }
}
