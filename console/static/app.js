// The console's router: each page is a module of pages/ exporting
// render(root, params); the hash names the page (#/actors, #/topics).
const pages = [
  ["cluster", "Cluster"],
];

async function route() {
  const [name, ...rest] = (location.hash.replace(/^#\/?/, "") || "cluster").split("/");
  const nav = document.getElementById("nav");
  nav.replaceChildren(...pages.map(([id, title]) => {
    const a = document.createElement("a");
    a.href = "#/" + id;
    a.textContent = title;
    if (id === name) a.className = "active";
    return a;
  }));
  const root = document.getElementById("page");
  root.replaceChildren();
  const page = await import("./pages/" + name + ".js");
  page.render(root, rest.map(decodeURIComponent));
}

addEventListener("hashchange", route);
route();
