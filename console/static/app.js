// The console's router: each page is a module of pages/ exporting
// render(root, params); the hash names the page and its parameters
// (#/topics/orders, #/groups/billing). A new route ends the old page's
// polls (lib.newPage).
import {h, newPage, settings, showError} from "./lib.js";

const pages = [
  ["cluster", "Cluster"],
  ["topics", "Topics"],
  ["messages", "Messages"],
  ["groups", "Groups"],
  ["transactions", "Transactions"],
  ["extensions", "Extensions"],
  ["actors", "Actors"],
];

async function nav(name) {
  const el = document.getElementById("nav");
  const links = pages.map(([id, title]) =>
    h("a", {href: "#/" + id, class: id === name ? "active" : null}, title));
  el.replaceChildren(h("div.brand", "Skein"), ...links, h("div#who"));
  try {
    const s = await settings();
    document.getElementById("who").replaceChildren(
      h("div", "node " + (s.node_id ?? "?")),
      s.auth_enabled || s.user ? h("div.user", {title: "logged in as"}, s.user || "") : h("div", "no authentication"),
      s.super_user ? h("div", "super user") : null,
      s.can_inject ? h("div.chaos", "chaos on") : null);
  } catch (err) {
    console.error(err);
  }
}

async function route() {
  const [name, ...rest] = (location.hash.replace(/^#\/?/, "") || "cluster").split("/");
  newPage();
  nav(name);
  const root = document.getElementById("page");
  root.replaceChildren();
  if (!pages.some(([id]) => id === name)) {
    root.append(h("div.error", "no page " + name));
    return;
  }
  try {
    const page = await import("./pages/" + name + ".js");
    await page.render(root, rest.map(decodeURIComponent));
  } catch (err) {
    showError(root, err);
  }
}

addEventListener("hashchange", route);
route();
