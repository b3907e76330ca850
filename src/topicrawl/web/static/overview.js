// Overview: runs and their settings, live counts and rates, and why the crawl is slow.
"use strict";

(() => {
  const POLL_MS = 1000;
  let timer = null;
  let shownState = null;  // "run id / running" the runs table was last read for

  function lastMinuteRate(series, running) {
    if (!running) return null;
    const n = series.pages_per_second.length;
    if (!n) return 0;
    const points = Math.max(1, Math.round(60 / series.width));
    const recent = series.pages_per_second.slice(-points - 1, -1);
    if (!recent.length) return series.pages_per_second[n - 1];
    return recent.reduce((a, b) => a + b, 0) / recent.length;
  }

  function renderLive(data) {
    const t = data.totals;
    document.getElementById("live-run").textContent = data.run ? `run ${data.run}${data.running ? " (running)" : " (finished)"}` : "no run yet";
    document.getElementById("stat-pages").textContent = TC.num(t.pages);
    document.getElementById("stat-failures").textContent = TC.num(t.failures);
    document.getElementById("stat-bytes").textContent = TC.bytes(t.bytes);
    document.getElementById("stat-rate").textContent = TC.num(lastMinuteRate(data.series, data.running), 1);
    const last = data.samples.length ? data.samples[data.samples.length - 1] : null;
    document.getElementById("stat-queued").textContent = last ? TC.num(last.queued) : "n/a";
    document.getElementById("stat-inflight").textContent = last ? TC.num(last.in_flight) : "n/a";
    document.getElementById("live-updated").textContent =
      `updated ${TC.time(data.now)}` + (data.caught_up ? "" : " (still reading the database's history)") +
      (last ? "" : " · queued and in flight come from the crawl's samples, none stored for this run");
    const times = data.series.times.map((s) => new Date(s * 1000));
    TC.chart("chart-rate", [{ x: times, y: data.series.pages_per_second, type: "scatter", mode: "lines", name: "pages/s" }],
      "pages per second", "pages/s");
    const errorTraces = Object.entries(data.series.errors_per_second).map(([kind, ys]) => ({
      x: times, y: ys, type: "scatter", mode: "lines", stackgroup: "errors", name: kind,
    }));
    TC.chart("chart-errors", errorTraces.length ? errorTraces : [{ x: times, y: times.map(() => 0), name: "none" }],
      "errors per second by kind", "errors/s");
    renderFindings(data.findings, data.samples.length);
  }

  function renderFindings(findings, sampleCount) {
    const list = TC.clear(document.getElementById("findings"));
    if (!sampleCount) {
      list.append(TC.el("li", { className: "muted", text: "No samples of this run's queue and waits are stored, so no cause can be named (the crawl writes them every samples_interval seconds)." }));
      return;
    }
    if (!findings.length) {
      list.append(TC.el("li", { className: "ok", text: "Nothing holds the crawl back." }));
      return;
    }
    for (const f of findings) {
      const evidence = Object.entries(f.evidence).map(([k, v]) => `${k} ${TC.num(v, 2)}`).join(", ");
      list.append(TC.el("li", { className: `finding ${f.severity}`, "data-cause": f.cause },
        TC.el("strong", { text: f.severity }), " ", f.message, evidence ? TC.el("span", { className: "muted", text: ` (${evidence})` }) : null));
    }
  }

  function renderRuns(runs) {
    const body = TC.clear(document.querySelector("#runs tbody"));
    for (const run of runs) {
      const stats = run.stats || {};
      const errors = stats.errors ? Object.values(stats.errors).reduce((a, b) => a + b, 0) : null;
      const config = run.config || {};
      const settings = TC.el("details", {}, TC.el("summary", { text: (config.topics || []).join("; ") || "settings" }),
        TC.el("pre", { className: "text", text: JSON.stringify(config, null, 2) }));
      body.append(TC.row([`#${run.id}`, run.name, TC.time(run.started_at), run.finished_at ? TC.time(run.finished_at) : "running",
        stats.pages === undefined ? "–" : TC.num(stats.pages), errors === null ? "–" : TC.num(errors), settings]));
    }
  }

  async function loadRuns() {
    renderRuns((await TC.getJson("/api/runs")).runs);
  }

  async function poll() {
    try {
      const data = await TC.getJson("/api/live");
      renderLive(data);
      // A run that starts or ends changes the runs table: read it again then.
      const state = `${data.run}/${data.running}`;
      if (state !== shownState) {
        shownState = state;
        await loadRuns();
      }
      TC.clearError();
    } catch (error) {
      TC.showError(error);
    } finally {
      timer = window.setTimeout(poll, POLL_MS);
    }
  }

  document.addEventListener("DOMContentLoaded", poll);
  window.addEventListener("pagehide", () => window.clearTimeout(timer));
})();
