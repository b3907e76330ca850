// One page: its fields, component scores, outlinks and what became of them, duplicates,
// failures, and how its run's topic vector moved.
"use strict";

(() => {
  const pageId = document.getElementById("page").dataset.pageId;

  function scores(reasons) {
    return Object.entries(reasons || {}).map(([k, v]) => `${k} ${TC.num(v, 3)}`).join(", ");
  }

  function render(data) {
    const p = data.page;
    document.title = `${p.title || p.url} · topicrawl dashboard`;
    document.getElementById("page-title").textContent = p.title || "(no title)";
    TC.clear(document.getElementById("page-url")).append(TC.outLink(p.url));
    const fields = TC.clear(document.querySelector("#page-fields tbody"));
    const shown = [
      ["final URL", p.final_url], ["status", p.status], ["relevance", TC.num(p.relevance, 4)], ["priority (score)", TC.num(p.score, 4)],
      ["depth", p.depth], ["parent", p.parent_url || "–"], ["fetched", TC.time(p.fetched_at)], ["content type", p.content_type],
      ["encoding", p.encoding || "–"], ["language", p.lang || "–"], ["size", TC.bytes(p.size)], ["elapsed", `${TC.num(p.elapsed, 3)} s`],
      ["content hash", p.content_hash || "–"], ["duplicate of", p.duplicate_of || "–"], ["redirects", (p.redirects || []).join(" → ") || "–"],
      ["noindex", p.noindex ? "yes" : "no"], ["run", p.run_id === null ? "–" : `#${p.run_id}`],
    ];
    for (const [k, v] of shown) fields.append(TC.el("tr", {}, TC.el("th", { text: k }), TC.el("td", { text: v })));
    const reasons = TC.clear(document.querySelector("#page-reasons tbody"));
    for (const [k, v] of Object.entries(p.reasons)) reasons.append(TC.row([k, TC.num(v, 4)]));
    const scoredNote = data.outlinks_scored ? `; priorities as this page's strategy gave them, ${data.outlinks_scored} stored`
      : data.outlinks_total ? "; no priorities stored with this page (a bfs crawl, storage.link_scores off, or stored before schema 8): those of fetched links as fetched" : "";
    document.getElementById("outlinks-count").textContent = `(${data.outlinks.length} shown of ${data.outlinks_total}${scoredNote})`;
    const links = TC.clear(document.querySelector("#page-outlinks tbody"));
    for (const link of data.outlinks) {
      const f = link.fetched;
      const s = link.scored || (f ? { score: f.score, reasons: f.reasons, asFetched: true } : null);
      const target = f ? TC.el("a", { href: `/pages/${f.id}`, text: String(f.status) }) : "not fetched";
      links.append(TC.row([TC.outLink(link.url), link.anchor + (link.nofollow ? " (nofollow)" : ""), String(link.block), target,
        f ? TC.num(f.relevance, 3) : "–", s ? TC.num(s.score, 3) + (s.asFetched ? " (as fetched)" : "") : "–", s ? scores(s.reasons) : "–"]));
    }
    const dups = TC.clear(document.getElementById("page-duplicates"));
    if (!data.duplicates.length) dups.append(TC.el("li", { className: "muted", text: "none stored" }));
    for (const d of data.duplicates) dups.append(TC.el("li", {}, TC.el("a", { href: `/pages/${d.id}`, text: d.url }), d.duplicate_of ? ` (duplicate of ${d.duplicate_of})` : ""));
    const failures = TC.clear(document.querySelector("#page-failures tbody"));
    for (const f of data.failures) failures.append(TC.row([f.url, f.kind, f.status === null ? "–" : String(f.status), String(f.attempts), f.message]));
    if (!data.failures.length) failures.append(TC.el("tr", {}, TC.el("td", { colspan: 5, className: "muted", text: "none" })));
    const evolution = TC.clear(document.getElementById("page-evolution"));
    if (!data.topic_evolution.length) evolution.append(TC.el("p", { className: "muted", text: "This run stored no topic vector (not a focused crawl)." }));
    for (const topic of data.topic_evolution) {
      const rows = topic.snapshots.map((s) => TC.row([String(s.pages), TC.num(s.threshold, 3), s.terms.map(([t, w]) => `${t} ${TC.num(w, 2)}`).join(", ")]));
      evolution.append(TC.el("h3", { text: topic.topic }), TC.el("table", { className: "grid" },
        TC.el("thead", {}, TC.el("tr", {}, TC.el("th", { text: "after pages" }), TC.el("th", { text: "threshold" }), TC.el("th", { text: "top terms" }))),
        TC.el("tbody", {}, ...rows)));
    }
    document.getElementById("page-text").textContent = data.text;
  }

  document.addEventListener("DOMContentLoaded", async () => {
    try {
      render(await TC.getJson(`/api/pages/${encodeURIComponent(pageId)}`));
    } catch (error) {
      TC.showError(error);
    }
  });
})();
