// The UI's colour scheme: light, dark, or the device's preference (system), chosen by each user
// and kept on their account (`theme` of GET and PATCH /auth/me), so it follows them from one
// browser to the next.
//
// Painted from the first frame: the page as the server sends it is already marked with the
// last choice this browser applied (`data-theme`, from the `bb_theme` cookie, which holds
// nothing but that word: web/ui), so a reload never flashes the other scheme. Once the user
// is known, their account's choice is applied (another browser may have changed it).

import { api } from "./api.js";
import { errorBox, fill, h, notify } from "./dom.js";

export const THEMES = { system: "Same as the device", light: "Light", dark: "Dark" };
const COOKIE = "bb_theme";
const YEAR = 365 * 24 * 3600;

/** Show the UI in `theme` ("system": follow prefers-color-scheme) and remember it for this
 * browser's next page; anything else is taken as "system". */
export function applyTheme(theme) {
  const fixed = theme === "light" || theme === "dark" ? theme : null;
  const root = document.documentElement;
  if (fixed) root.dataset.theme = fixed;
  else delete root.dataset.theme;
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = fixed ? `${COOKIE}=${fixed}; Path=/; Max-Age=${YEAR}; SameSite=Lax${secure}`
    : `${COOKIE}=; Path=/; Max-Age=0; SameSite=Lax${secure}`;
}

/** The account page's choice of theme: a radio group, applied and saved the moment one is
 * picked; `saved(user)` gets the account as the API answered. */
export function themeChoice(current, saved) {
  const box = errorBox();
  const choose = async (event) => {
    const theme = event.target.value;
    applyTheme(theme);
    box.hidden = true;
    try {
      saved(await api("PATCH", "/auth/me", { theme }));
      current = theme;
      notify(`Theme: ${THEMES[theme]}`);
    } catch (error) {
      applyTheme(current);
      fill(box, error.message);
      box.hidden = false;
    }
  };
  return h("form", { class: "card", "aria-label": "Appearance" },
    h("fieldset", {}, h("legend", {}, "Theme"), Object.entries(THEMES).map(([value, words]) =>
      h("label", { class: "check" }, h("input", { type: "radio", name: "theme", value, checked: value === current,
        onchange: choose }), h("span", {}, words)))),
    h("p", { class: "note" }, "Kept with your account; the HTML of an e-mail keeps the colours its sender gave it."), box);
}
