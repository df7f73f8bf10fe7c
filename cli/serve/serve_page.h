// The dashboard `swarm serve` sends: a page (/), its style (/app.css) and
// its script (/app.js), all inside the binary, so that its Content Security
// Policy allows only its own scripts and styles ('self', never inline). It
// listens to /events (server-sent events: the whole view at each change)
// and ticks ages by itself. Record text reaches the page only through
// textContent, never as markup, its control characters shown as such; long
// names are cut with an ellipsis and whole in their title, but states,
// numbers, times (relative, the date in the title) and what each agent says
// are never cut. It signs in once with the key of its session (adr/0060).
#pragma once

namespace cli {

inline constexpr const char* kDashboardPage = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>swarm</title>
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<header><h1>swarm</h1><span id="bucket"></span><span id="summary">connecting…</span><span id="nats"></span></header>
<main>
  <section class="wide"><h2>Sessions</h2>
    <table id="sessions"><colgroup><col><col><col><col><col><col><col></colgroup>
      <thead><tr><th>slot</th><th>task</th><th>host</th><th>state</th><th class="num">age</th><th class="num">token</th><th>doing</th></tr></thead>
      <tbody></tbody></table><div id="sessions-more" class="empty"></div></section>
  <section><h2>Leases</h2>
    <table id="leases"><colgroup><col><col><col><col><col><col><col></colgroup>
      <thead><tr><th>lease</th><th>state</th><th>holder</th><th>host</th><th class="num">token</th><th class="num">left</th>
      <th class="num">waiting</th></tr></thead><tbody></tbody></table><div id="leases-more" class="empty"></div></section>
  <section><h2>Branches <span id="onto" class="muted"></span></h2>
    <table id="branches"><colgroup><col><col><col><col><col><col></colgroup>
      <thead><tr><th>slot</th><th>stands</th><th class="num">ahead</th><th>head</th><th>committed</th><th>why</th></tr></thead>
      <tbody></tbody></table><div id="branches-more" class="empty"></div></section>
  <section><h2>Tasks <span id="task-counts" class="muted"></span></h2>
    <table id="tasks"><colgroup><col><col><col><col><col><col></colgroup>
      <thead><tr><th>task</th><th>title</th><th>stands</th><th>slot</th><th class="num">pri</th><th class="num">age</th></tr></thead>
      <tbody></tbody></table><div id="tasks-more" class="empty"></div></section>
  <section><h2>Inboxes <span id="inbox-counts" class="muted"></span></h2>
    <table id="inboxes"><colgroup><col><col><col></colgroup>
      <thead><tr><th>inbox</th><th class="num">unread</th><th class="num">cursor</th></tr></thead>
      <tbody></tbody></table><div id="inboxes-more" class="empty"></div></section>
  <section><h2>Holds <span id="hold-counts" class="muted"></span></h2>
    <table id="holds"><colgroup><col><col><col><col><col></colgroup>
      <thead><tr><th>slot</th><th>kind</th><th>paths</th><th class="num">token</th><th>why</th></tr></thead>
      <tbody></tbody></table><div id="holds-more" class="empty"></div></section>
  <section><h2>Recent acts</h2>
    <table id="events"><colgroup><col><col><col><col><col></colgroup>
      <thead><tr><th>time</th><th>kind</th><th>subject</th><th>host</th><th>detail</th></tr></thead>
      <tbody></tbody></table></section>
  <section class="wide"><h2>Who held what
      <span class="ranges" id="ranges"><button data-range="900000">15 m</button><button data-range="3600000"
      class="on">1 h</button><button data-range="21600000">6 h</button><button data-range="86400000">24 h</button></span>
      <span class="legend"><i class="sw slot"></i>slot held <i class="sw lease"></i>lease held
      <i class="sw open"></i>held now <b class="end-success">✓</b> success <b class="end-fail">✗</b> fail, lost
      <b class="end-other">■</b> other end</span></h2>
    <svg id="timeline" width="100%" height="40"></svg></section>
</main>
</body>
</html>
)PAGE";

inline constexpr const char* kDashboardStyle = R"CSS(:root { --fresh:#2e7d32; --late:#b26a00; --stale:#c62828; --corrupt:#6a1b9a; --muted:#667;
  --slot:#3f7fbf; --lease:#8a5cc2; }
* { box-sizing: border-box; }
html, body { overflow-x: hidden; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d24; background: #f6f7f9; }
header { background: #1d1d24; color: #fff; padding: 10px 18px; display: flex; flex-wrap: wrap; gap: 18px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
#nats { font-weight: 600; } #nats.down { color: #ff8a80; } #nats.up { color: #b9f6ca; }
#summary { color: #ddd; }
main { padding: 12px 18px; display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
@media (max-width: 900px) { main { grid-template-columns: minmax(0, 1fr); } section.wide { grid-column: auto; } }
section { background: #fff; border-radius: 6px; padding: 10px 12px; box-shadow: 0 1px 2px #0002; min-width: 0; overflow: hidden; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 15px; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 12px; align-items: baseline; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eee; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
th { color: var(--muted); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
/* Columns of names share what is left; states, numbers and times have the room their text needs. */
#sessions col:nth-child(1) { width: 13%; } #sessions col:nth-child(2) { width: 19%; } #sessions col:nth-child(3) { width: 15%; }
#sessions col:nth-child(4) { width: 76px; } #sessions col:nth-child(5) { width: 76px; } #sessions col:nth-child(6) { width: 84px; }
#leases col:nth-child(2) { width: 76px; } #leases col:nth-child(5) { width: 84px; } #leases col:nth-child(6) { width: 76px; }
#leases col:nth-child(7) { width: 76px; }
#branches col:nth-child(2) { width: 96px; } #branches col:nth-child(3) { width: 68px; } #branches col:nth-child(4) { width: 112px; }
#branches col:nth-child(5) { width: 100px; }
#tasks col:nth-child(2) { width: 30%; } #tasks col:nth-child(3) { width: 96px; } #tasks col:nth-child(5) { width: 52px; }
#tasks col:nth-child(6) { width: 76px; }
.ready, .approved, .completed { color: var(--fresh); } .in_review { color: var(--late); } .failed { color: var(--stale); }
.waiting, .cancelled { color: var(--muted); }
#inboxes col:nth-child(2) { width: 76px; } #inboxes col:nth-child(3) { width: 104px; }
#holds col:nth-child(2) { width: 96px; } #holds col:nth-child(4) { width: 84px; }
#events col:nth-child(1) { width: 84px; } #events col:nth-child(2) { width: 25%; }
td.doing { white-space: normal; overflow-wrap: anywhere; }
td.head { font: 12px ui-monospace, monospace; }
.state { font-weight: 600; }
.fresh, .held, .landed, .done { color: var(--fresh); } .late, .working { color: var(--late); }
.stale, .dead, .refused, .fail { color: var(--stale); } .corrupt { color: var(--corrupt); } .expired, .unfinished { color: var(--muted); }
.empty, .muted { color: var(--muted); font-style: italic; font-weight: normal; font-size: 13px; }
body.down main { opacity: 0.55; }
body.down .age { text-decoration: line-through; }
.ranges button { font: inherit; font-size: 12px; border: 1px solid #ccd; background: #fff; border-radius: 4px; padding: 1px 8px; cursor: pointer; }
.ranges button.on { background: #1d1d24; color: #fff; border-color: #1d1d24; }
.legend { font-size: 12px; color: var(--muted); font-weight: normal; display: inline-flex; gap: 6px; align-items: center; flex-wrap: wrap; }
.sw { display: inline-block; width: 14px; height: 10px; border-radius: 2px; }
.sw.slot { background: var(--slot); } .sw.lease { background: var(--lease); } .sw.open { background: #aaa; border: 2px solid #1d1d24; }
.end-success { color: var(--fresh); } .end-fail { color: var(--stale); } .end-other { color: #555; }
svg { display: block; width: 100%; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
)CSS";

inline constexpr const char* kDashboardScript = R"JS("use strict";
let view = null, offset = 0, range = 3600e3;
// Record text as shown: a control character as its picture (or its code), a bidi control named, never obeyed.
const shown = text => String(text).replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, c => {
  const n = c.charCodeAt(0);
  return n < 0x20 ? String.fromCharCode(0x2400 + n) : n === 0x7f ? "\u2421" : "<U+" + n.toString(16).toUpperCase() + ">";
});
const el = (tag, text, cls, title) => {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) { e.textContent = shown(text); if (tag === "td") e.title = title || e.textContent; }
  if (cls) e.className = cls;
  return e;
};
const now = () => Date.now() + offset;
function age(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
}
const clock = ms => new Date(ms).toISOString().slice(11, 19);
const date = ms => new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC";
// How long ago, in the largest unit: short enough for its column at any width.
function ago(ms) {
  const s = Math.max(0, Math.floor((now() - ms) / 1000));
  return s < 5 ? "just now" : s < 60 ? s + "s ago" : s < 3600 ? Math.floor(s / 60) + "m ago" :
    s < 86400 ? Math.floor(s / 3600) + "h ago" : Math.floor(s / 86400) + "d ago";
}
function stateOf(s) {
  if (s.state === "corrupt" || s.state === "dead") return s.state;
  const a = now() - s.stored_ms, t = view.ttl_ms;
  return a < t / 3 ? "fresh" : a < 2 * t / 3 ? "late" : "stale";
}
function fill(id, rows) { document.querySelector("#" + id + " tbody").replaceChildren(...rows); }
// A task lease is named by its task (and the slot working it), not by its hashed key.
const leaseName = l => l.task ? "task " + l.task + (l.slot ? " (" + l.slot + ")" : "") : l.name;
function header() {
  document.getElementById("bucket").textContent = view.bucket;
  document.getElementById("summary").textContent = view.summary + "; " + view.leases.length + " leases";
  const nats = document.getElementById("nats");
  const down = !view.nats_up;
  nats.textContent = !down ? "NATS up" : view.nats_down_since_ms ? "NATS down since " + clock(view.nats_down_since_ms) +
    " UTC: what you see is as it was then" : "NATS not reached yet";
  nats.className = down ? "down" : "up";
  document.body.classList.toggle("down", down);
}
function sessions() {
  fill("sessions", view.sessions.map(s => {
    const tr = el("tr"); tr.dataset.slot = s.slot;
    const st = stateOf(s);
    tr.append(el("td", s.slot), el("td", s.task || "-"), el("td", s.host + (s.local ? " *" : "")), el("td", st, "state " + st),
              el("td", s.state === "corrupt" ? "-" : age(now() - s.stored_ms), "num age"), el("td", s.token, "num"),
              el("td", [s.status, s.note].filter(Boolean).join(": ") || "-", "doing"));
    return tr;
  }));
  document.getElementById("sessions-more").textContent = view.sessions_total > view.sessions.length ?
    "and " + (view.sessions_total - view.sessions.length) + " more (the most troubled are shown)" :
    view.sessions_total === 0 ? "no sessions" : "";
}
function leases() {
  fill("leases", view.leases.map(l => {
    const tr = el("tr"); tr.dataset.lease = l.name;
    const left = l.state === "held" ? Math.max(0, l.ttl_ms - (now() - l.stored_ms)) : 0;
    tr.append(el("td", leaseName(l)), el("td", l.state, "state " + l.state), el("td", l.holder || "-"), el("td", l.host || "-"),
              el("td", l.token === undefined ? "-" : l.token, "num"), el("td", l.state === "held" ? age(left) : "-", "num age"),
              el("td", l.waiters, "num"));
    return tr;
  }));
  document.getElementById("leases-more").textContent = view.leases.length === 0 ? "no leases" : "";
}
function branches() {
  const b = view.branches;
  document.getElementById("onto").textContent = b.onto ? "onto " + b.onto : "";
  fill("branches", b.rows.map(r => {
    const tr = el("tr"); tr.dataset.branch = r.slot;
    const why = r.stands === "refused" ? "refused: " + (r.reason || "?") : r.result ? "closed " + r.result : "";
    tr.append(el("td", r.slot), el("td", r.stands, "state " + r.stands), el("td", r.ahead, "num"), el("td", r.head, "head"),
              el("td", r.committed_ms ? ago(r.committed_ms) : "-", "time", r.committed_ms ? date(r.committed_ms) : undefined),
              el("td", why));
    return tr;
  }));
  document.getElementById("branches-more").textContent = b.rows.length === 0 ? "no slot branches" : "";
}
// The queue: ready / waiting / working / in review / done, each with its age (since its last change).
function tasks() {
  const t = view.tasks, c = t.counts;
  document.getElementById("task-counts").textContent = t.total === 0 ? "" :
    c.ready + " ready, " + c.waiting + " waiting, " + c.working + " working, " + c.in_review + " in review, " +
    c.approved + " approved, " + c.completed + " done" + (c.failed ? ", " + c.failed + " failed" : "") +
    (c.corrupt ? ", " + c.corrupt + " corrupt" : "");
  fill("tasks", t.rows.map(r => {
    const tr = el("tr"); tr.dataset.task = r.id;
    tr.append(el("td", r.id), el("td", r.title), el("td", r.stands.replace("_", " "), "state " + r.stands),
              el("td", r.slot || "-"), el("td", r.priority, "num"), el("td", age(now() - r.updated_ms), "num age"));
    return tr;
  }));
  document.getElementById("tasks-more").textContent = t.total > t.rows.length ?
    "and " + (t.total - t.rows.length) + " more (swarm task list)" : t.total === 0 ? "no tasks" : "";
}
// Inboxes and their unread counts; never a message's body (see docs/messages.md).
function inboxes() {
  const rows = view.inboxes || [];
  const unread = rows.reduce((n, r) => n + r.unread, 0);
  document.getElementById("inbox-counts").textContent = rows.length === 0 ? "" : unread + " unread";
  fill("inboxes", rows.map(r => {
    const tr = el("tr"); tr.dataset.inbox = r.name;
    tr.append(el("td", r.name), el("td", r.unread, "num unread"), el("td", r.cursor, "num"));
    return tr;
  }));
  document.getElementById("inboxes-more").textContent = rows.length === 0 ? "no inboxes" : "";
}
// Who says they edit what (swarm hold): one row per hold, as text.
function holds() {
  const rows = view.holds || [];
  document.getElementById("hold-counts").textContent = rows.length === 0 ? "" : rows.length + " held";
  fill("holds", rows.map(h => {
    const tr = el("tr"); tr.dataset.hold = h.name;
    tr.append(el("td", h.slot || h.name), el("td", h.kind || h.state), el("td", (h.patterns || []).join(", ") || h.error),
              el("td", h.token || "-", "num"), el("td", h.reason || ""));
    return tr;
  }));
  document.getElementById("holds-more").textContent = rows.length === 0 ? "no holds" : "";
}
function acts() {
  fill("events", view.events.slice(-40).reverse().map(e => {
    const tr = el("tr");
    tr.append(el("td", clock(e.time_ms), "time", date(e.time_ms)), el("td", e.kind), el("td", e.thing + "/" + e.name), el("td", e.host),
              el("td", e.detail || ""));
    return tr;
  }));
}
function render() {
  if (!view) return;
  header(); sessions(); leases(); branches(); tasks(); inboxes(); holds(); acts(); timeline();
}
const ends = { success: "✓", fail: "✗", lost: "✗" };
function timeline() {
  const svg = document.getElementById("timeline");
  const width = svg.clientWidth || 900, label = 190, end = now(), start = end - range, h = 18;
  const rows = new Map();
  for (const s of view.spans) {
    // A hold no event ended ends at its expiry once that passes unrenewed.
    const expired = s.to_ms === null && s.until_ms !== undefined && s.until_ms <= end;
    const to = s.to_ms !== null ? s.to_ms : expired ? s.until_ms : end;
    if (to < start) continue;
    const key = s.thing + "/" + s.name;
    if (!rows.has(key)) rows.set(key, []);
    rows.get(key).push({ ...s, to, to_ms: expired ? s.until_ms : s.to_ms, end: expired ? "expired" : s.end });
  }
  const keys = [...rows.keys()].sort().slice(0, 60);
  const ns = "http://www.w3.org/2000/svg", parts = [];
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    parts.push(e); return e;
  };
  const x = t => label + (Math.max(start, Math.min(end, t)) - start) / range * (width - label - 40);
  keys.forEach((key, i) => {
    const y = i * h + 4;
    const name = add("text", { x: 0, y: y + 12 }, key.length > 30 ? key.slice(0, 29) + "…" : key);
    name.appendChild(document.createElementNS(ns, "title")).textContent = key;
    for (const b of rows.get(key)) {
      const open = b.to_ms === null;
      const rect = add("rect", { x: x(b.from_ms), y, height: h - 6, width: Math.max(2, x(b.to) - x(b.from_ms)),
        fill: b.thing === "slot" ? "var(--slot)" : "var(--lease)", stroke: open ? "#1d1d24" : "none", "stroke-width": 2 });
      rect.appendChild(document.createElementNS(ns, "title")).textContent = key + ": " + b.host + ", " +
        clock(b.from_ms) + " to " + (open ? "now (held)" : clock(b.to_ms) + " (" + b.end + ")");
      if (!open) add("text", { x: x(b.to) + 2, y: y + 11, class: ends[b.end] === "✓" ? "end-success" :
        ends[b.end] ? "end-fail" : "end-other" }, ends[b.end] || "■");
    }
  });
  if (keys.length === 0) add("text", { x: 0, y: 14, class: "empty" }, "nothing held in this range");
  const y = Math.max(1, keys.length) * h + 18;
  for (let i = 0; i <= 4; ++i) {
    const t = start + range * i / 4;
    add("text", { x: x(t), y, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" },
        i === 4 ? "now" : "-" + age(end - t));
  }
  svg.setAttribute("height", y + 6);
  svg.replaceChildren(...parts);
}
document.getElementById("ranges").addEventListener("click", ev => {
  const b = ev.target.closest("button");
  if (!b) return;
  range = Number(b.dataset.range);
  for (const other of document.querySelectorAll("#ranges button")) other.classList.toggle("on", other === b);
  if (view) timeline();
});
// The session's key: given once to the page that signed in, kept in this origin's storage (a page of another
// port is another origin and cannot read it); with it the cookie reads the workspace (adr/0060).
async function sessionKey() {
  const kept = "swarm-serve-key";
  let stored = null;
  try { stored = localStorage.getItem(kept); } catch (e) { /* no storage: this page's life only */ }
  try {
    const r = await fetch("session", { cache: "no-store" });
    if (r.ok) {
      const key = (await r.json()).key;
      try { if (key) localStorage.setItem(kept, key); else localStorage.removeItem(kept); } catch (e) { /* as above */ }
      return key;
    }
  } catch (e) { /* unreachable: the stream says so */ }
  return stored;
}
sessionKey().then(key => {
  const source = new EventSource("events" + (key ? "?key=" + encodeURIComponent(key) : ""));
  source.addEventListener("view", msg => {
    view = JSON.parse(msg.data);
    offset = view.server_time_ms - Date.now();
    render();
    document.body.dataset.version = String(Number(document.body.dataset.version || 0) + 1);
  });
  source.onerror = () => {
    const n = document.getElementById("nats");
    n.textContent = source.readyState === EventSource.CLOSED ?
      "signed out: open the newest link swarm serve printed" : "swarm serve unreachable";
    n.className = "down";
  };
});
setInterval(render, 1000);
)JS";

}  // namespace cli
