// The webhooks panel (`/v1/webhooks`, admin key): each endpoint with its state, a ping, and its
// recent deliveries with a retry for each. Opened on request (a read key would only get 403s).
// Webhooks have no event stream: the panel reads them again after each action and every 10 s
// while the page is visible.

import { ApiError, request } from "./api.js";
import * as format from "./format.js";

const refreshInterval = 10_000;

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text != null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function button(text, handle) {
  const node = element("button", text);
  node.type = "button";
  node.addEventListener("click", handle);
  return node;
}

export class WebhookPanel {
  constructor(list, note) {
    this.list = list;
    this.note = note;
    /** Endpoints whose deliveries are open (kept across refreshes). */
    this.open = new Set();
    this.timer = null;
  }

  start() {
    this.refresh();
    clearInterval(this.timer);
    this.timer = setInterval(() => { if (!document.hidden) this.refresh(); }, refreshInterval);
  }

  async refresh() {
    let endpoints;
    try {
      endpoints = (await request("GET", "v1/webhooks")).webhooks;
    } catch (error) {
      this.list.replaceChildren();
      this.note.hidden = false;
      this.note.textContent = error instanceof ApiError && error.status === 403
        ? "Webhooks need an admin key." : `Listing the webhooks failed: ${error.message}`;
      return;
    }
    this.note.hidden = endpoints.length > 0;
    this.note.textContent = "No webhooks. Add one with POST /v1/webhooks or packd webhooks add.";
    const items = await Promise.all(endpoints.map((endpoint) => this.item(endpoint)));
    this.list.replaceChildren(...items);
  }

  async item(endpoint) {
    const item = element("li", null, "webhook");
    item.dataset.webhook = String(endpoint.id);
    const header = element("header");
    header.append(element("h3", endpoint.url, "webhook-url"),
      element("span", endpoint.enabled ? "enabled" : `disabled (${endpoint.disabled_reason})`,
        `state ${endpoint.enabled ? "complete" : "failed"}`));
    const events = endpoint.events.join(", ") + (endpoint.pack_ids ? ` — packs ${endpoint.pack_ids.join(", ")}` : "");
    const result = element("p", "", "action-result");
    result.setAttribute("aria-live", "polite");
    const actions = element("div", null, "pack-actions");
    const ping = button("Ping", async () => {
      try {
        const delivery = await request("POST", `v1/webhooks/${endpoint.id}/ping`);
        result.textContent = `Ping queued (${delivery.event_id}).`;
        this.open.add(endpoint.id);
        setTimeout(() => this.refresh(), 1000);
      } catch (error) {
        result.textContent = `Ping refused: ${error.message}`;
      }
    });
    ping.dataset.action = "ping";
    ping.disabled = !endpoint.enabled;
    const toggle = button(this.open.has(endpoint.id) ? "Hide deliveries" : "Deliveries", () => {
      if (this.open.has(endpoint.id)) this.open.delete(endpoint.id); else this.open.add(endpoint.id);
      this.refresh();
    });
    toggle.dataset.action = "deliveries";
    actions.append(ping, toggle);
    item.append(header, element("p", `Events: ${events}${endpoint.description ? ` · ${endpoint.description}` : ""}`, "figures"),
      result, actions);
    if (this.open.has(endpoint.id)) item.append(await this.deliveries(endpoint, result));
    return item;
  }

  async deliveries(endpoint, result) {
    const table = element("table", null, "deliveries");
    const head = element("tr");
    for (const title of ["Type", "Event id", "State", "Attempts", "Last answer", "When", ""]) head.append(element("th", title));
    table.append(head);
    let page;
    try {
      page = await request("GET", `v1/webhooks/${endpoint.id}/deliveries?limit=20`);
    } catch (error) {
      result.textContent = `Reading the deliveries failed: ${error.message}`;
      return table;
    }
    for (const delivery of page.deliveries) {
      const row = element("tr");
      row.dataset.delivery = String(delivery.id);
      const when = delivery.delivered_at ? `delivered ${format.date(delivery.delivered_at)}`
        : delivery.next_attempt_at ? `next ${format.date(delivery.next_attempt_at)}` : "";
      const last = delivery.last_status ?? delivery.last_error ?? "–";
      const retry = button("Retry", async () => {
        try {
          await request("POST", `v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`);
          result.textContent = `Delivery ${delivery.id} is due again.`;
          setTimeout(() => this.refresh(), 1000);
        } catch (error) {
          result.textContent = `Retry refused: ${error.message}`;
        }
      });
      retry.dataset.action = "retry";
      const cell = element("td");
      cell.append(retry);
      row.append(element("td", delivery.type), element("td", delivery.event_id, "mono"), element("td", delivery.state),
        element("td", format.count(delivery.attempts)), element("td", String(last)), element("td", when), cell);
      table.append(row);
    }
    if (page.deliveries.length === 0) {
      const row = element("tr");
      const cell = element("td", "No deliveries yet.");
      cell.colSpan = 7;
      row.append(cell);
      table.append(row);
    }
    return table;
  }
}
