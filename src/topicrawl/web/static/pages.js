// Pages: search with filters; results one page at a time with a "next" link (keyset cursor).
"use strict";

(() => {
  const form = document.getElementById("search");
  const params = new URLSearchParams(window.location.search);

  function apiQuery() {
    const query = new URLSearchParams();
    for (const key of ["q", "host", "status", "min_relevance", "max_relevance", "run", "topic", "after"]) {
      const value = params.get(key);
      if (value) query.set(key, value);
    }
    for (const [local, key] of [["since_local", "since"], ["until_local", "until"]]) {
      const value = params.get(local);
      if (value) {
        const when = Date.parse(value);
        if (!Number.isNaN(when)) query.set(key, String(when / 1000));
      }
    }
    return query;
  }

  function fillForm(runs) {
    const select = form.elements.namedItem("run");
    const topics = form.elements.namedItem("topic");
    const names = new Set();
    for (const run of runs) {
      const given = run.config && run.config.topics ? run.config.topics.join("; ") : "";
      select.append(TC.el("option", { value: run.id, text: `run ${run.id} (${run.name})${given ? ": " + given : ""}` }));
      for (const name of run.topic_names || []) names.add(name);
    }
    for (const name of names) topics.append(TC.el("option", { value: name, text: name }));
    for (const [key, value] of params) {
      const field = form.elements.namedItem(key);
      if (field && key !== "after") field.value = value;
    }
  }

  function render(data) {
    const body = TC.clear(document.querySelector("#results tbody"));
    if (!data.pages.length) {
      body.append(TC.el("tr", {}, TC.el("td", { colspan: 7, className: "muted", text: "no page matches" })));
    }
    for (const p of data.pages) {
      const title = TC.el("div", {}, TC.el("a", { href: `/pages/${p.id}`, className: "title", text: p.title || p.url }),
        TC.el("div", { className: "snippet", text: p.snippet }), TC.el("div", { className: "url muted", text: p.url }));
      body.append(TC.row([title, p.host, String(p.status), TC.num(p.relevance, 3), p.topic || "–", TC.num(p.score, 3), TC.time(p.fetched_at)]));
    }
    const next = document.getElementById("next");
    if (data.next) {
      const following = new URLSearchParams(params);
      following.set("after", data.next);
      next.href = `/pages?${following.toString()}`;
      next.hidden = false;
    } else {
      next.hidden = true;
    }
  }

  document.addEventListener("DOMContentLoaded", async () => {
    try {
      fillForm((await TC.getJson("/api/runs")).runs);
      render(await TC.getJson(`/api/pages?${apiQuery().toString()}`));
    } catch (error) {
      TC.showError(error);
    }
  });
})();
