export async function render(root) {
  const c = await (await fetch("/v1/cluster")).json();
  const h = document.createElement("h1");
  h.textContent = "Cluster " + c.cluster_id;
  root.append(h);
}
