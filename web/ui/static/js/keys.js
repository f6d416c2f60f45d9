// Keyboard shortcuts: `?` lists them in a dialog. The inbox page adds its own (j/k, Enter,
// Delete, /) while it is shown; the dialog lists those of the page on screen.

import { fill, h } from "./dom.js";

const GLOBAL = [["?", "Show these shortcuts"]];
let pageKeys = [];

/** The shortcuts of the page on screen, as [key, what it does], for the `?` dialog. */
export function describeKeys(keys) {
  pageKeys = keys;
}

/** The `?` dialog: a modal <dialog> (focus stays in it, Escape closes it). */
export function showShortcuts() {
  let dialog = document.getElementById("shortcuts");
  if (!dialog) {
    dialog = h("dialog", { id: "shortcuts", "aria-labelledby": "shortcuts-title" });
    document.body.append(dialog);
  }
  if (dialog.open) return;
  const rows = [...pageKeys, ...GLOBAL].map(([key, what]) => h("tr", {},
    h("th", { scope: "row" }, h("kbd", {}, key)), h("td", {}, what)));
  fill(dialog, h("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
    h("table", { class: "shortcuts" }, h("tbody", {}, rows)),
    h("form", { method: "dialog" }, h("button", { type: "submit" }, "Close")));
  dialog.showModal();
}
