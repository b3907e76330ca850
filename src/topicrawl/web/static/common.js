// Shared helpers of the dashboard's pages. Crawled strings only ever become text nodes
// (textContent), never markup, and only http(s) URLs become links.
"use strict";

const TC = (() => {
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "className") node.className = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function safeHref(url) {
    try {
      const parsed = new URL(url, window.location.href);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (_) {
      return null;
    }
  }

  // A link out to a crawled URL: plain text when it is not http(s); never sends a referrer.
  function outLink(url, label) {
    const href = safeHref(url);
    const text = label === undefined || label === "" ? url : label;
    if (href === null) return el("span", { className: "url", text });
    return el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank", className: "url", text });
  }

  async function getJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) {
      let detail = response.statusText;
      try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
      throw new Error(`${url}: ${response.status} ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    }
    return response.json();
  }

  function showError(error) {
    const box = document.getElementById("error");
    box.textContent = String(error && error.message ? error.message : error);
    box.hidden = false;
  }

  function clearError() {
    document.getElementById("error").hidden = true;
  }

  function num(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    if (digits === undefined) return Number(value).toLocaleString("en");
    return Number(value).toFixed(digits);
  }

  function bytes(value) {
    if (value === null || value === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = Number(value);
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
  }

  function time(epoch) {
    if (!epoch) return "–";
    return new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 19);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function row(cells) {
    return el("tr", {}, ...cells.map((cell) => el("td", {}, cell)));
  }

  // Plotly charts; layout shared by every chart of the dashboard.
  function chart(id, traces, title, yTitle, extraLayout) {
    const target = document.getElementById(id);
    if (!target || typeof Plotly === "undefined") return;
    Plotly.react(target, traces, {
      title: { text: title, font: { size: 14 } },
      margin: { l: 50, r: 10, t: 36, b: 40 },
      height: 260,
      yaxis: { title: { text: yTitle || "" }, rangemode: "tozero" },
      legend: { orientation: "h" },
      ...(extraLayout || {}),
    }, { displayModeBar: false, responsive: true });
  }

  return { el, safeHref, outLink, getJson, showError, clearError, num, bytes, time, clear, row, chart };
})();
