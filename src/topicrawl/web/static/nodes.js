// Nodes: each worker of a distributed crawl, refreshed every two seconds.
"use strict";

(() => {
  function render(data) {
    const summary = document.getElementById("nodes-summary");
    const body = TC.clear(document.querySelector("#nodes tbody"));
    if (!data.configured) { summary.textContent = data.message; return; }
    if (data.error) { summary.textContent = `cannot read the registry: ${data.error}`; return; }
    const live = data.nodes.filter((n) => n.live).length;
    summary.textContent = `namespace ${data.namespace}: ${live} live of ${data.nodes.length} nodes · ${TC.num(data.queued)} queued, ` +
      `${TC.num(data.in_flight)} in flight · coordinator: ${data.coordinator || "none"}`;
    for (const n of data.nodes) {
      const name = TC.el("span", {}, n.node, n.coordinator ? TC.el("strong", { text: " (coordinator)" }) : null);
      const tr = TC.row([name, n.state, n.heartbeat_age === null ? "–" : `${TC.num(n.heartbeat_age, 1)} s`, TC.num(n.pages_per_second, 1),
        n.cpu_percent === null || n.cpu_percent === undefined ? "–" : `${TC.num(n.cpu_percent, 0)} %`,
        n.memory_bytes === null || n.memory_bytes === undefined ? "–" : TC.bytes(n.memory_bytes),
        TC.num(n.pages), TC.num(n.hosts), TC.num(n.leases), TC.num(n.errors), `${n.machine}/${n.pid}`,
        Object.entries(n.capacity).map(([k, v]) => `${k} ${v}`).join(", ") || "–", n.died_at ? `${TC.time(n.died_at)} (work returned to the pool)` : "–"]);
      tr.className = `state-${n.state}`;
      body.append(tr);
    }
  }

  async function poll() {
    try {
      render(await TC.getJson("/api/nodes"));
      TC.clearError();
    } catch (error) {
      TC.showError(error);
    } finally {
      window.setTimeout(poll, 2000);
    }
  }

  document.addEventListener("DOMContentLoaded", poll);
})();
