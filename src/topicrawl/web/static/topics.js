// Topics: each tracked topic's heat by period with the DES, BP and combined forecasts, the CPU
// cap and processes it was given, and its words over time.
"use strict";

(() => {
  function topicSection(topic, index) {
    const heatId = `topic-heat-${index}`;
    const cpuId = `topic-cpu-${index}`;
    const words = topic.words.map(([w, v]) => `${w} (${TC.num(v, 2)})`).join(", ");
    const state = topic.retired_at === null ? `periods ${topic.first_seen}–${topic.last_seen}` : `retired at period ${topic.retired_at}`;
    const wordRows = topic.words_by_period.map((p) => TC.row([String(p.period), p.words.map(([w]) => w).join(", ")]));
    return TC.el("section", { className: "topic", "data-topic": topic.id },
      TC.el("h2", { text: `Topic ${topic.id}` }),
      TC.el("p", {}, TC.el("span", { className: "muted", text: state + " · " }), words),
      TC.el("div", { className: "charts" }, TC.el("div", { id: heatId, className: "chart" }), TC.el("div", { id: cpuId, className: "chart" })),
      TC.el("details", {}, TC.el("summary", { text: "topic words by period" }),
        TC.el("table", { className: "grid" }, TC.el("thead", {}, TC.el("tr", {}, TC.el("th", { text: "period" }), TC.el("th", { text: "top words" }))),
          TC.el("tbody", {}, ...wordRows))));
  }

  function drawTopic(topic, index) {
    const traces = [{ x: topic.heat.map((h) => h.period), y: topic.heat.map((h) => h.heat), name: "heat", mode: "lines+markers", type: "scatter" }];
    for (const [method, rows] of Object.entries(topic.forecasts)) {
      traces.push({
        x: rows.map((r) => r.target_period), y: rows.map((r) => r.value), name: `${method} forecast`,
        mode: "lines+markers", type: "scatter", line: { dash: method === "combined" ? "solid" : "dot" },
      });
    }
    TC.chart(`topic-heat-${index}`, traces, "heat by period, with forecasts", "heat");
    TC.chart(`topic-cpu-${index}`, [
      { x: topic.allocations.map((a) => a.period), y: topic.allocations.map((a) => a.cpu_cap), name: "CPU cap %", type: "bar" },
      { x: topic.allocations.map((a) => a.period), y: topic.allocations.map((a) => a.processes), name: "processes", type: "scatter", mode: "lines+markers", yaxis: "y2" },
    ], "CPU cap and processes", "CPU %", { yaxis2: { overlaying: "y", side: "right", rangemode: "tozero", title: { text: "processes" } } });
  }

  document.addEventListener("DOMContentLoaded", async () => {
    try {
      const data = await TC.getJson("/api/topics");
      const summary = document.getElementById("topics-summary");
      if (!data.topics.length) {
        summary.textContent = "No tracked topics in this database (run `topicrawl topics track` to make some).";
        return;
      }
      const last = data.periods[data.periods.length - 1];
      summary.textContent = `${data.topics.length} topics over ${data.periods.length} periods` +
        (last && last.cpu_total !== null ? ` · machine CPU ${TC.num(last.cpu_total, 0)} %, used by others ${TC.num(last.cpu_used_by_others, 0)} %` : "");
      const box = document.getElementById("topics");
      data.topics.forEach((topic, i) => box.append(topicSection(topic, i)));
      data.topics.forEach((topic, i) => drawTopic(topic, i));
    } catch (error) {
      TC.showError(error);
    }
  });
})();
