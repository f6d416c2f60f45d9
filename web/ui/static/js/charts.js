// Charts as plain SVG, drawn by this module (no library, no build step): a line of values per
// day and horizontal bars of values per name. Each chart is an image with a text alternative
// (role="img" and a label saying the total and the peak), and its figures in a table a
// screen-reader user (or anyone) can open below it.

import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

/** The figures of a chart as a table inside a closed <details>. */
function table(title, rows, what) {
  return h("details", { class: "chart-data" }, h("summary", {}, `${title}: the figures`),
    h("table", { class: "log" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, what), h("th", { scope: "col" }, "Count"))),
      h("tbody", {}, rows.map(([label, value]) => h("tr", {}, h("td", {}, label), h("td", {}, value.toLocaleString()))))));
}

/** A rounded-up axis maximum whose half is a whole number too: 2, 4, 10 × 10^n. */
function niceMax(value) {
  if (value <= 2) return 2;
  const power = 10 ** Math.floor(Math.log10(value));
  return [2, 4, 10, 20].map((step) => step * power).find((top) => top >= value);
}

/** A line chart of `points` ([{label, value}], oldest first), e.g. e-mails per day. */
export function lineChart(title, points) {
  const width = 640;
  const height = 220;
  const pad = { left: 44, right: 12, top: 12, bottom: 28 };
  const top = niceMax(Math.max(0, ...points.map((point) => point.value)));
  const x = (i) => pad.left + (points.length < 2 ? 0 : (i * (width - pad.left - pad.right)) / (points.length - 1));
  const y = (value) => pad.top + (height - pad.top - pad.bottom) * (1 - value / top);
  const total = points.reduce((sum, point) => sum + point.value, 0);
  const peak = points.reduce((best, point) => (point.value > best.value ? point : best), points[0] || { value: 0, label: "" });
  const summary = `${title}: ${total.toLocaleString()} in all${peak.value ? `, most on ${peak.label} (${peak.value.toLocaleString()})` : ""}`;
  const grid = [0, 0.5, 1].map((share) => s("g", {},
    s("line", { x1: pad.left, x2: width - pad.right, y1: y(top * share), y2: y(top * share), class: "grid" }),
    s("text", { x: pad.left - 6, y: y(top * share) + 4, "text-anchor": "end" }, Math.round(top * share).toLocaleString())));
  const ticks = points.length ? [0, Math.floor((points.length - 1) / 2), points.length - 1] : [];
  const labels = [...new Set(ticks)].map((i) => s("text", { x: x(i), y: height - 8,
    "text-anchor": i === 0 ? "start" : i === points.length - 1 ? "end" : "middle" }, points[i].label));
  const path = points.map((point, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(point.value).toFixed(1)}`).join(" ");
  const area = points.length ? `${path} L${x(points.length - 1).toFixed(1)},${y(0)} L${x(0).toFixed(1)},${y(0)} Z` : "";
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": summary, class: "chart line" },
    ...grid, s("path", { d: area, class: "area" }), s("path", { d: path, class: "stroke" }),
    ...points.map((point, i) => s("circle", { cx: x(i), cy: y(point.value), r: point.value ? 3 : 0 },
      s("title", {}, `${point.label}: ${point.value}`))), ...labels);
  return h("figure", { class: "chart card" }, h("figcaption", {}, title), svg,
    table(title, points.map((point) => [point.label, point.value]), "Day"));
}

/** Horizontal bars of `items` ([{label, value}], largest first), e.g. the busiest domains. */
export function barChart(title, items, what = "Name") {
  if (!items.length) return h("figure", { class: "chart card" }, h("figcaption", {}, title), h("p", { class: "note" }, "Nothing yet."));
  const row = 28;
  const width = 640;
  const labelWidth = 200;
  const top = Math.max(1, ...items.map((item) => item.value));
  const height = items.length * row + 4;
  const summary = `${title}: ${items.slice(0, 3).map((item) => `${item.label} ${item.value.toLocaleString()}`).join(", ")}${items.length > 3 ? "…" : ""}`;
  const bars = items.map((item, i) => {
    const length = Math.max(2, ((width - labelWidth - 70) * item.value) / top);
    return s("g", {},
      s("text", { x: labelWidth - 8, y: i * row + 19, "text-anchor": "end" }, item.label.length > 28 ? `${item.label.slice(0, 27)}…` : item.label),
      s("rect", { x: labelWidth, y: i * row + 5, width: length, height: row - 10, rx: 3, class: "bar" }),
      s("text", { x: labelWidth + length + 6, y: i * row + 19 }, item.value.toLocaleString()));
  });
  return h("figure", { class: "chart card" }, h("figcaption", {}, title),
    s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": summary, class: "chart bars" }, ...bars),
    table(title, items.map((item) => [item.label, item.value]), what));
}
