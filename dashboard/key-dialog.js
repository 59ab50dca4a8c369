// Asks for an API key when packd answers 401, and keeps it for this tab (sessionStorage).

import { apiKey } from "./api.js";

export class KeyDialog {
  constructor(dialog, forgetButton) {
    this.dialog = dialog;
    this.input = dialog.querySelector("#api-key");
    this.error = dialog.querySelector("#key-error");
    this.forgetButton = forgetButton;
    this.pending = null;
    this.forgetButton.hidden = !apiKey.get();
    forgetButton.addEventListener("click", () => {
      apiKey.clear();
      location.reload();
    });
    dialog.addEventListener("close", () => {
      const key = this.input.value.trim();
      this.input.value = "";
      if (dialog.returnValue === "ok" && key) {
        apiKey.set(key);
        this.forgetButton.hidden = false;
        this.pending?.(key);
        this.pending = null;
      } else if (this.pending) {
        // Escape closes the dialog; without a key nothing works, so ask again.
        queueMicrotask(() => this.dialog.showModal());
      }
    });
  }

  /** Resolves with a key once the person gave one; `rejected`: the last key was refused. */
  ask(rejected) {
    if (rejected) apiKey.clear();
    this.forgetButton.hidden = true;
    this.error.hidden = !rejected;
    this.error.textContent = rejected ? "packd did not accept that key." : "";
    return new Promise((resolve) => {
      this.pending = resolve;
      if (!this.dialog.open) this.dialog.showModal();
      this.input.focus();
    });
  }
}
