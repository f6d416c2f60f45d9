// Analytics of an org or a team, as charts read at a glance: the totals, e-mails per day (a
// line), the busiest receiving and sending domains and, for an org, its busiest teams (bars).
// Everything comes from the analytics API (append-only counters: cleanup never lowers them).

import { api } from "./api.js";
import { bytes, fill, h } from "./dom.js";
import { barChart, lineChart } from "./charts.js";

const PERIODS = [7, 30, 90];

function figures(totals) {
  const shown = [["total_emails", "E-mails received"], ["active_inboxes", "Active inboxes"],
    ["total_inboxes_created", "Inboxes created"], ["total_members", "Members"],
    ["total_teams", "Teams"], ["total_domains", "Domains"], ["total_storage_bytes", "Mail received (size)"]];
  return h("dl", { class: "figures" }, shown.filter(([key]) => key in totals).map(([key, label]) =>
    h("div", { class: "figure" }, h("dt", {}, label),
      h("dd", {}, key.endsWith("_bytes") ? bytes(totals[key]) : totals[key].toLocaleString()))));
}

/** The period links (7, 30, 90 days), kept in the address so a reload keeps the choice. */
function periods(days) {
  return h("nav", { class: "subnav", "aria-label": "Period" }, PERIODS.map((n) =>
    h("a", { href: `${location.pathname}?days=${n}`, "aria-current": n === days ? "page" : false }, `Last ${n} days`)));
}

function chosenDays() {
  const days = Number(new URLSearchParams(location.search).get("days"));
  return PERIODS.includes(days) ? days : 30;
}

async function draw(main, base, title, back, teams = null) {
  const days = chosenDays();
  const [totals, perDay, insights, teamTotals] = await Promise.all([
    api("GET", base), api("GET", `${base}/emails-per-day?days=${days}`),
    api("GET", `${base}/insights?days=${days}`), teams ? teams() : null]);
  const day = (date) => date.slice(5);  // MM-DD: the year is the period's
  fill(main, back, h("h1", {}, title), figures(totals), periods(days),
    h("div", { class: "charts" },
      lineChart(`E-mails per day, last ${days} days`,
        perDay.data.map((point) => ({ label: day(point.date), value: point.emails_received }))),
      barChart(`Busiest receiving domains, last ${days} days`,
        insights.domain_breakdown.map((item) => ({ label: item.domain || "(removed domain)", value: item.count })), "Domain"),
      barChart(`Busiest sender domains, last ${days} days`,
        insights.top_senders.map((item) => ({ label: item.domain, value: item.count })), "Sender domain"),
      teamTotals && barChart("Busiest teams, all time", teamTotals, "Team")));
}

export async function orgAnalyticsView(main, orgId) {
  const org = await api("GET", `/orgs/${orgId}`);
  const teams = async () => {
    const list = await api("GET", `/orgs/${orgId}/teams?per_page=100`);
    const totals = await Promise.all(list.data.map((team) =>
      api("GET", `/orgs/${orgId}/teams/${team.id}/analytics`).then((figures) =>
        ({ label: team.name, value: figures.total_emails }), () => null)));
    return totals.filter(Boolean).sort((a, b) => b.value - a.value).slice(0, 10);
  };
  await draw(main, `/orgs/${orgId}/analytics`, `Analytics of ${org.name}`,
    h("p", {}, h("a", { href: `/orgs/${orgId}` }, `← ${org.name}`)), teams);
}

export async function teamAnalyticsView(main, orgId, teamId) {
  const team = await api("GET", `/orgs/${orgId}/teams/${teamId}`);
  await draw(main, `/orgs/${orgId}/teams/${teamId}/analytics`, `Analytics of ${team.name}`,
    h("p", {}, h("a", { href: "/teams" }, "← Teams")));
}
