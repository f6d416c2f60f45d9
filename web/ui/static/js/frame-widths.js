// The width an e-mail's HTML is shown at: as a phone, a tablet or a desktop reader would see
// it. The frame takes the chosen width (never more than the pane has: it then scrolls
// sideways in its stage) and the e-mail's own media queries answer to it. The choice stays
// for the tab's other e-mails until the page is reloaded.

import { h } from "./dom.js";

// CSS pixels of the frame's viewport: a common phone, a portrait tablet; desktop is the pane.
export const WIDTHS = {
  phone: { label: "Phone", pixels: 390 },
  tablet: { label: "Tablet", pixels: 768 },
  desktop: { label: "Desktop", pixels: null },
};
let chosen = "desktop";

/** The frame in its stage, under a group of buttons choosing its width (one pressed). */
export function widthToggle(frame) {
  const buttons = Object.entries(WIDTHS).map(([key, { label, pixels }]) => h("button", {
    type: "button", class: "small", dataset: { width: key },
    title: pixels ? `${pixels} px wide` : "the width of the pane",
    onclick: () => choose(key),
  }, label));

  function choose(key) {
    chosen = key;
    for (const button of buttons) button.setAttribute("aria-pressed", String(button.dataset.width === key));
    frame.style.width = WIDTHS[key].pixels ? `${WIDTHS[key].pixels}px` : "";
    frame.dataset.width = key;
  }

  choose(chosen);
  return [h("div", { class: "toggle-group", role: "group", "aria-label": "Width of the HTML view" },
    h("span", { class: "label" }, "Width"), buttons), h("div", { class: "frame-stage" }, frame)];
}
