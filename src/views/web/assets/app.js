// The dashboard: the sessions of the project, and one session's view drawn. The view comes over
// server-sent events with the `seq` of the last event folded into it as the id, so a reconnect
// gets a view only once it holds something new (the browser sends Last-Event-ID).
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "grow") e.style.flexGrow = v; // CSSOM: the page's CSP allows no inline style
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
};
const money = (usd) => "$" + (usd || 0).toFixed(4);

// The run's view: the server folds its events (the one fold, `views::state::ViewState` in
// Rust) and sends the whole view after each batch of them; this script only draws it.

// The list says how a run ended as soon as the page knows (not at the next poll), also when
// the dashboard closed with the run (`--ui web`) and cannot be asked again.
function ended(status) {
  if (exported) return;
  const mark = document.querySelector("#sessions li.current .status");
  if (mark) { mark.textContent = status; mark.className = "status " + status; }
  setTimeout(sessions, 0);
}

// --- drawing -------------------------------------------------------------------------------

// The breaker as the view has it, or as the reset button's answer left it until the view's
// breaker changes (a loop that has ended tells no event of its reset).
function breakerOf(s) {
  const [state, reason] = s.breaker || ["CLOSED", "normal_operation"];
  if (reset && reset.was === JSON.stringify(s.breaker)) return reset;
  reset = null;
  return { state, reason };
}

function draw(s) {
  $("#title").textContent = s.title || "(starting)";
  $("#models").textContent = s.models.map(([r, m]) => `${r} ${m}`).join(" · ");
  const share = s.max_cost_usd > 0 ? Math.min(1, s.cost_usd / s.max_cost_usd) : 0;
  $("#cost").textContent = `${money(s.cost_usd)} of $${s.max_cost_usd.toFixed(2)}`;
  $("#budget-bar").style.width = (share * 100).toFixed(1) + "%";
  $("#budget-bar").className = share >= 0.8 ? "bar near" : "bar";
  const status = s.finished ? `finished: ${s.finished.status} · ${s.finished.reason}`
    : `iteration ${s.iteration} of ${s.max_iterations}` + (s.phase ? ` · ${s.phase}` : "")
      + (s.paused ? " · PAUSED" : "");
  $("#status").textContent = status;
  // The promise the run kept (a fix run's report; an agent loop's has none).
  const promise = s.finished && s.finished.promise_detail;
  $("#promise").hidden = !promise;
  $("#promise").textContent = promise || "";
  const breaker = breakerOf(s);
  const badge = $("#breaker");
  badge.textContent = breaker.state;
  badge.dataset.state = breaker.state;
  badge.title = breaker.reason;
  $("#breaker").hidden = !s.is_loop;
  $("#reset").hidden = !s.is_loop || !!exported;
  $("#pause").textContent = s.paused ? "Resume" : "Pause";
  for (const b of ["#pause", "#abort"]) {
    $(b).hidden = !controls;
    $(b).disabled = !!s.finished;
  }
  drawTimeline(s);
  drawCosts(s);
  drawThoughts(s);
  drawSigns(s);
}

// Rows drawn, by iteration: only a row whose iteration changed is drawn again, so a long run
// (or a replay at full speed) costs one row per frame, not all of them.
const drawnRows = new Map(); // n -> [key, element]

function drawTimeline(s) {
  const box = $("#timeline");
  for (const it of s.timeline) {
    if (it.n === 0 && !it.tests) continue;
    const live = !it.last && !s.finished;
    const key = JSON.stringify([it.phases.length, it.tests, it.cost_usd, it.last, live ? Date.now() : 0]);
    const drawn = drawnRows.get(it.n);
    if (drawn && drawn[0] === key) continue;
    const row = drawRow(it);
    if (drawn) drawn[1].replaceWith(row); else box.append(row);
    drawnRows.set(it.n, [key, row]);
  }
}

function drawRow(it) {
  const bar = el("div", { class: "phases" });
  const end = it.last ? Date.parse(it.last) : Date.now();
  const phases = it.phases.map(([phase, start]) => [phase, Date.parse(start)]);
  phases.forEach(([phase, start], i) => {
    const stop = phases[i + 1] ? phases[i + 1][1] : end;
    bar.append(el("span", {
      class: "phase " + phase, grow: String(Math.max(1, stop - start)),
      title: `${phase}: ${((stop - start) / 1000).toFixed(2)} s`,
    }));
  });
  const counted = it.tests && it.tests.passed + it.tests.failed > 0;
  const tests = it.tests
    ? el("span", { class: it.tests.criteria_met ? "ok" : "bad" }, counted
      ? `${it.tests.passed} passed, ${it.tests.failed} failed`
      : (it.tests.criteria_met ? "tests pass" : "tests fail"))
    : el("span", { class: "dim" }, "…");
  const row = el("div", { class: "iteration", "data-n": it.n },
    el("span", { class: "n" }, it.n === 0 ? "base" : `#${it.n}`), bar, tests,
    el("span", { class: "money" }, money(it.cost_usd)),
    el("button", { class: "diff", onclick: () => showDiff(it.n) }, "diff"));
  if (it.tests && it.tests.first_failure) row.title = it.tests.first_failure;
  return row;
}

function drawCosts(s) {
  const table = (obj) => Object.entries(obj).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", { class: "money" }, money(v))));
  $("#by-role").replaceChildren(...table(s.cost_by_role));
  $("#by-model").replaceChildren(...table(s.cost_by_model));
}

// Thoughts drawn: each once, the last one's text brought up to date.
const drawnThoughts = new Map(); // id -> [length, element]

function drawThoughts(s) {
  const box = $("#thoughts");
  const follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  const kept = new Set(s.paragraphs.map((t) => t.id));
  for (const [id, [, e]] of drawnThoughts) {
    if (!kept.has(id)) { e.remove(); drawnThoughts.delete(id); }
  }
  for (const t of s.paragraphs) {
    const drawn = drawnThoughts.get(t.id);
    if (drawn && drawn[0] === t.text.length) continue;
    const e = el("div", { class: "thought" }, el("div", { class: "from" }, t.from), el("pre", {}, t.text));
    if (drawn) drawn[1].replaceWith(e); else box.append(e);
    drawnThoughts.set(t.id, [t.text.length, e]);
  }
  if (follow) box.scrollTop = box.scrollHeight;
}

function drawSigns(s) {
  $("#recalls").replaceChildren(...s.recalls.map((r) => el("li", {},
    `iteration ${r.iteration}: ${r.attempts} attempts recalled, ${r.worked} worked, best ${r.best_similarity.toFixed(2)}`)));
  $("#chaos").replaceChildren(...s.chaos.map((c) =>
    el("li", { class: c.open ? "bad" : "ok" }, `${c.open ? "open" : "fixed"}: ${c.test}`)));
  $("#warnings").replaceChildren(...s.warnings.map((w) => el("li", {}, w)));
}

// --- the wire ------------------------------------------------------------------------------

let state = null; // the view drawn: null until the first arrives
let reset = null; // the reset button's answer, shown until the view's breaker changes
let source = null;
let session = null;
let pending = false;
let controls = false; // the open run takes pause, resume and abort
let exported = null; // an exported page: {id, events, diffs, exported}

function schedule() {
  // Many events at once make one frame.
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; if (state) draw(state); });
}

function open(id) {
  if (source) source.close();
  session = id;
  state = null;
  reset = null;
  controls = false;
  drawnRows.clear(); drawnThoughts.clear();
  $("#timeline").replaceChildren(); $("#thoughts").replaceChildren();
  $("#session").hidden = false;
  source = new EventSource(`api/sessions/${encodeURIComponent(id)}/view`
    + (speed ? `?speed=${encodeURIComponent(speed)}` : ""));
  source.addEventListener("view", (m) => {
    const view = JSON.parse(m.data);
    if (state && view.seq <= state.seq) return; // never an older one
    if (view.finished && !(state && state.finished)) ended(view.finished.status);
    state = view;
    schedule();
  });
  source.onerror = () => {
    $("#conn").textContent = state && state.finished ? "ended" : "reconnecting…";
  };
  source.onopen = () => { $("#conn").textContent = speed ? `replay ×${speed}` : "live"; };
  history.replaceState(null, "", `?session=${encodeURIComponent(id)}`
    + (speed ? `&speed=${encodeURIComponent(speed)}` : ""));
}

async function post(path) {
  const r = await fetch(`api/sessions/${encodeURIComponent(session)}/${path}`, { method: "POST" });
  const body = await r.json().catch(() => ({}));
  $("#said").textContent = body.message || (r.ok ? "done" : `failed (${r.status})`);
  // A loop that has ended is reset in its state file: no event will say so.
  if (body.breaker && state) {
    reset = { state: body.breaker, reason: "manual_reset", was: JSON.stringify(state.breaker) };
    schedule();
  }
}

async function showDiff(n) {
  let text;
  if (exported) {
    text = exported.diffs[n] || `iteration ${n} kept no change`;
  } else {
    const r = await fetch(`api/sessions/${encodeURIComponent(session)}/diff/${n}`);
    text = await r.text();
    if (!r.ok) { try { text = JSON.parse(text).message || text; } catch (_) { /* as sent */ } }
  }
  const pre = $("#diff");
  pre.replaceChildren(...text.split("\n").map((l) => el("div", {
    class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "",
  }, l || " ")));
  $("#diff-box").hidden = false;
}

async function sessions() {
  const r = await fetch("api/sessions");
  const list = await r.json();
  const open_ = list.find((s) => s.id === session);
  if (open_ && open_.controls !== controls) { controls = open_.controls; schedule(); }
  $("#sessions").replaceChildren(...list.map((s) => el("li", {
    class: s.id === session ? "current" : "", onclick: () => open(s.id),
  }, el("div", {}, el("span", { class: "status " + s.status }, s.status), " ", s.title || s.id),
  el("div", { class: "dim" }, [s.cost_usd == null ? null : money(s.cost_usd),
    s.started_at ? new Date(s.started_at).toLocaleString() : null].filter(Boolean).join(" · ")))));
  if (!session && list.length) open(wanted && list.some((s) => s.id === wanted) ? wanted : list[0].id);
}

// `--ui web` prints a URL that names its run; `replay --ui web` one with its speed too.
const params = new URLSearchParams(location.search);
const wanted = params.get("session");
const speed = params.get("speed");

$("#pause").addEventListener("click", () => post(state && state.paused ? "resume" : "pause"));
$("#abort").addEventListener("click", () => { if (confirm("Abort the run? It is saved and can be resumed.")) post("abort"); });
$("#reset").addEventListener("click", () => post("breaker/reset"));
$("#diff-close").addEventListener("click", () => { $("#diff-box").hidden = true; });
const embedded = document.getElementById("ralph-export");
if (embedded) {
  // An exported page (`ralph-loop replay --export page.html`): the session is in it, no server.
  exported = JSON.parse(embedded.textContent);
  session = exported.id;
  state = exported.view;
  document.querySelector("nav").hidden = true;
  $("#session").hidden = false;
  $("#conn").textContent = `exported ${exported.exported}`;
  draw(state);
} else {
  if (wanted) open(wanted);
  sessions();
  setInterval(sessions, 2000);
}
setInterval(() => { if (state && !state.finished) schedule(); }, 1000);
