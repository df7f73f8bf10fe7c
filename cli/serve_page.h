// The dashboard `swarm serve` sends at /: one page, its style and script
// inside it (no asset from anywhere else). It listens to /events (server-sent
// events: the whole view at each change) and ticks ages by itself. Record
// text reaches the page only through textContent, never as markup.
#pragma once

namespace cli {

inline constexpr const char* kDashboardPage = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>swarm</title>
<style>
  :root { --fresh:#2e7d32; --late:#b26a00; --stale:#c62828; --corrupt:#6a1b9a; --muted:#667; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d24; background: #f6f7f9; }
  header { background: #1d1d24; color: #fff; padding: 10px 18px; display: flex; gap: 18px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  #nats { font-weight: 600; }
  #nats.down { color: #ff8a80; } #nats.up { color: #b9f6ca; }
  main { padding: 12px 18px; display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
  section { background: #fff; border-radius: 6px; padding: 10px 12px; box-shadow: 0 1px 2px #0002; overflow: auto; }
  section.wide { grid-column: 1 / span 2; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; white-space: nowrap; }
  th { color: var(--muted); font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .state { font-weight: 600; }
  .fresh { color: var(--fresh); } .late { color: var(--late); } .stale { color: var(--stale); }
  .corrupt { color: var(--corrupt); } .held { color: var(--fresh); } .expired { color: var(--muted); }
  #summary { color: #ddd; }
  .empty { color: var(--muted); font-style: italic; }
  svg text { font: 11px system-ui, sans-serif; fill: #333; }
</style>
</head>
<body>
<header><h1>swarm</h1><span id="bucket"></span><span id="summary">connecting…</span><span id="nats"></span></header>
<main>
  <section><h2>Sessions</h2><table id="sessions"><thead><tr><th>slot</th><th>task</th><th>host</th><th>state</th>
    <th>age</th><th>token</th></tr></thead><tbody></tbody></table><div id="sessions-more" class="empty"></div></section>
  <section><h2>Leases</h2><table id="leases"><thead><tr><th>name</th><th>state</th><th>holder</th><th>host</th>
    <th>token</th><th>left</th><th>waiters</th></tr></thead><tbody></tbody></table></section>
  <section class="wide"><h2>Who held what, the last hour</h2><svg id="timeline" width="100%" height="40"></svg></section>
  <section class="wide"><h2>Recent acts</h2><table id="events"><thead><tr><th>time</th><th>kind</th><th>subject</th>
    <th>host</th><th>token</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
"use strict";
let view = null, offset = 0;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
const now = () => Date.now() + offset;
function age(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
}
function stateOf(s) {
  if (s.state === "corrupt") return "corrupt";
  const a = now() - s.stored_ms, t = view.ttl_ms;
  return a < t / 3 ? "fresh" : a < 2 * t / 3 ? "late" : "stale";
}
function fill(id, rows) {
  const body = document.querySelector("#" + id + " tbody");
  body.replaceChildren(...rows);
}
function render() {
  if (!view) return;
  const c = view.counts;
  document.getElementById("bucket").textContent = view.bucket;
  document.getElementById("summary").textContent = view.sessions_total + " sessions: " + c.fresh + " fresh, " + c.late +
    " late, " + c.stale + " stale" + (c.corrupt ? ", " + c.corrupt + " corrupt" : "") + "; " + view.hosts + " hosts; " +
    view.leases.length + " leases";
  const nats = document.getElementById("nats");
  nats.textContent = view.nats_up ? "NATS up" : "NATS down";
  nats.className = view.nats_up ? "up" : "down";
  fill("sessions", view.sessions.map(s => {
    const tr = el("tr"); tr.dataset.slot = s.slot;
    const st = stateOf(s);
    tr.append(el("td", s.slot), el("td", s.task), el("td", s.host + (s.local ? " *" : "")), el("td", st, "state " + st),
              el("td", s.state === "corrupt" ? "-" : age(now() - s.stored_ms), "num"), el("td", s.token, "num"));
    return tr;
  }));
  document.getElementById("sessions-more").textContent = view.sessions_total > view.sessions.length ?
    "and " + (view.sessions_total - view.sessions.length) + " more (the most troubled are shown)" :
    view.sessions_total === 0 ? "no sessions" : "";
  fill("leases", view.leases.map(l => {
    const tr = el("tr"); tr.dataset.lease = l.name;
    const left = l.state === "held" ? Math.max(0, l.ttl_ms - (now() - l.stored_ms)) : 0;
    tr.append(el("td", l.name), el("td", l.state, "state " + l.state), el("td", l.holder || "-"), el("td", l.host || "-"),
              el("td", l.token === undefined ? "-" : l.token, "num"), el("td", l.state === "held" ? age(left) : "-", "num"),
              el("td", l.waiters, "num"));
    return tr;
  }));
  fill("events", view.events.slice(-30).reverse().map(e => {
    const tr = el("tr");
    tr.append(el("td", new Date(e.time_ms).toISOString().slice(11, 19)), el("td", e.kind),
              el("td", e.thing + "/" + e.name), el("td", e.host), el("td", e.token, "num"));
    return tr;
  }));
  timeline();
}
function hue(text) { let h = 0; for (const ch of text) h = (h * 31 + ch.codePointAt(0)) % 360; return h; }
function timeline() {
  const svg = document.getElementById("timeline");
  const width = svg.clientWidth || 900, label = 170, end = now(), start = end - 3600e3;
  const rows = new Map();
  const row = key => { if (!rows.has(key)) rows.set(key, { bars: [], open: null }); return rows.get(key); };
  const opens = { "join": true, "lease.grant": true }, closes = { "close": 1, "evict": 1, "lease.release": 1, "lease.lost": 1, "elect.resign": 1 };
  for (const e of view.events) {
    const r = row(e.thing + "/" + e.name);
    if (opens[e.kind]) { if (r.open) r.bars.push({ ...r.open, to: e.time_ms }); r.open = { from: e.time_ms, host: e.host, token: e.token }; }
    else if (closes[e.kind] && r.open) { r.bars.push({ ...r.open, to: e.time_ms, how: e.kind }); r.open = null; }
  }
  for (const s of view.sessions) { const r = row("slot/" + s.slot); if (!r.open) r.open = { from: start, host: s.host, token: s.token }; }
  for (const l of view.leases) if (l.state === "held") { const r = row("lease/" + l.name); if (!r.open) r.open = { from: start, host: l.host, token: l.token }; }
  for (const [key, r] of rows) {
    const held = key.startsWith("slot/") ? view.sessions.some(s => "slot/" + s.slot === key)
                                         : view.leases.some(l => "lease/" + l.name === key && l.state === "held");
    if (r.open) r.bars.push({ ...r.open, to: held ? end : r.open.from, open: held });
  }
  const keys = [...rows.keys()].sort().slice(0, 200);
  const h = 18, ns = "http://www.w3.org/2000/svg";
  svg.setAttribute("height", Math.max(40, keys.length * h + 24));
  const parts = [];
  const x = t => label + (Math.max(start, Math.min(end, t)) - start) / 3600e3 * (width - label - 10);
  keys.forEach((key, i) => {
    const y = i * h + 4;
    const t = document.createElementNS(ns, "text"); t.setAttribute("x", 0); t.setAttribute("y", y + 12); t.textContent = key; parts.push(t);
    for (const b of rows.get(key).bars) {
      if (b.to < start) continue;
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", x(b.from)); rect.setAttribute("y", y); rect.setAttribute("height", h - 6);
      rect.setAttribute("width", Math.max(2, x(b.to) - x(b.from)));
      rect.setAttribute("fill", "hsl(" + hue(b.host) + ",55%,55%)");
      const tip = document.createElementNS(ns, "title");
      tip.textContent = key + ": " + b.host + ", token " + b.token + (b.open ? ", holding" : ", " + (b.how || "replaced"));
      rect.appendChild(tip); parts.push(rect);
    }
  });
  for (let m = 0; m <= 60; m += 10) {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", x(start + m * 60e3) - 10); t.setAttribute("y", keys.length * h + 18);
    t.textContent = m === 60 ? "now" : "-" + (60 - m) + "m"; parts.push(t);
  }
  svg.replaceChildren(...parts);
}
const source = new EventSource("events");
source.addEventListener("view", msg => {
  view = JSON.parse(msg.data);
  offset = view.server_time_ms - Date.now();
  render();
  document.body.dataset.version = String(Number(document.body.dataset.version || 0) + 1);
});
source.onerror = () => { const n = document.getElementById("nats"); n.textContent = "swarm serve unreachable"; n.className = "down"; };
setInterval(render, 1000);
</script>
</body>
</html>
)PAGE";

}  // namespace cli
