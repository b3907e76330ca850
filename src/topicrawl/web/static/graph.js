// Knowledge graph: entities and relations drawn with vis-network, entity -> URLs in a table.
"use strict";

(() => {
  document.addEventListener("DOMContentLoaded", async () => {
    try {
      const data = await TC.getJson("/api/graph");
      const status = document.getElementById("graph-status");
      status.textContent = data.message || `${data.nodes.length} entities, ${data.edges.length} relations`;
      if (!data.nodes.length) return;
      const box = document.getElementById("graph");
      box.hidden = false;
      // Labels are set as data: vis-network draws them on a canvas, never as markup.
      const nodes = new vis.DataSet(data.nodes.map((n) => ({ id: n.id, label: String(n.label), group: n.group, borderWidth: n.preferred ? 3 : 1 })));
      const edges = new vis.DataSet(data.edges.map((e) => ({ from: e.from, to: e.to, label: String(e.label || "") })));
      new vis.Network(box, { nodes, edges }, { physics: { stabilization: true }, interaction: { hover: true } });
      const table = document.getElementById("entities");
      table.hidden = false;
      const body = TC.clear(table.querySelector("tbody"));
      for (const entity of data.entities) {
        const urls = TC.el("div", {}, ...entity.urls.slice(0, 10).map((u) => TC.el("div", {}, TC.outLink(u))));
        body.append(TC.row([entity.name, entity.type || "–", entity.preferred ? "yes" : "", urls]));
      }
    } catch (error) {
      TC.showError(error);
    }
  });
})();
