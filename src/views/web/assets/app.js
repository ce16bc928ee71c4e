// The dashboard: the sessions of the project, and one session's events folded into its views.
// Events come over server-sent events with their `seq` as the id, so a reconnect resumes after
// the last one seen (the browser sends Last-Event-ID) without a gap or a repeat.
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

// The fold of one session's events: what every panel draws from.
function fresh() {
  return {
    seq: 0, kind: "fix", title: "", models: [], maxCost: 0, cost: 0, maxIterations: 0,
    iteration: 0, phase: null, paused: false, finished: null,
    iterations: new Map(), // n -> {phases: [[phase, start ms]], tests, cost, verdict, ended}
    costByRole: {}, costByModel: {}, thoughts: [], thoughtFrom: null, thoughtCount: 0,
    recalls: [], chaos: [], breaker: { state: "CLOSED", reason: "normal_operation" },
    warnings: [],
  };
}

function iter(s, n) {
  if (!s.iterations.has(n)) s.iterations.set(n, { n, phases: [], tests: null, cost: 0 });
  return s.iterations.get(n);
}

// Shows `who` on the model that answered last (a fallback, or one chosen in the TUI's picker).
function setModel(s, who, model) {
  const shown = s.models.find(x => x[0] === who);
  if (shown) shown[1] = model; else s.models.push([who, model]);
}

function apply(s, e) {
  s.seq = e.seq;
  const t = Date.parse(e.time);
  switch (e.type) {
    case "session_started":
      s.title = e.target; s.models = e.models; s.maxCost = e.max_cost_usd;
      s.maxIterations = e.max_iterations; s.cost = e.spent_usd || 0; break;
    case "loop_started":
      s.kind = "loop"; s.title = e.prompt_file; s.models = [["agent", e.agent]];
      if (e.model) s.models.push(["model", e.model]);
      s.maxCost = e.max_cost_usd; s.maxIterations = e.max_iterations; break;
    case "iteration_started": s.iteration = e.iteration; iter(s, e.iteration); break;
    case "phase_changed":
      s.phase = e.phase; iter(s, e.iteration).phases.push([e.phase, t]); break;
    case "llm_call_finished":
      s.cost = e.total_cost_usd; iter(s, e.iteration).cost += e.cost_usd;
      s.costByRole[e.role] = (s.costByRole[e.role] || 0) + e.cost_usd;
      s.costByModel[e.model] = (s.costByModel[e.model] || 0) + e.cost_usd;
      setModel(s, e.role, e.model); break;
    case "agent_started":
      iter(s, e.iteration).phases.push(["agent", t]);
      // The model picker may have changed the agent's model since the loop started.
      if (e.model) setModel(s, "model", e.model);
      break;
    case "agent_ended": {
      s.cost = e.total_cost_usd; iter(s, e.iteration).cost += e.cost_usd;
      s.costByRole.agent = (s.costByRole.agent || 0) + e.cost_usd;
      const model = s.models.length > 1 ? s.models[1][1] : e.agent || s.models[0][1];
      s.costByModel[model] = (s.costByModel[model] || 0) + e.cost_usd;
      iter(s, e.iteration).phases.push(["tests", t]); break;
    }
    case "tests_finished": iter(s, e.iteration).tests = e.tests; break;
    case "critic_verdict": iter(s, e.iteration).verdict = e; break;
    case "thought": think(s, e.role, e.text); break;
    case "agent_output":
      if (e.event.kind === "text" || e.event.type === "text") think(s, "agent", e.event.text + "\n");
      break;
    case "memory_recalled": s.recalls.push(e); break;
    case "chaos_judged": s.chaos.push(...e.kept.map((k) => ({ test: k, open: true }))); break;
    case "chaos_recheck":
      for (const c of s.chaos) c.open = e.open.includes(c.test); break;
    case "breaker_changed": s.breaker = { state: e.to, reason: e.reason }; break;
    case "paused": s.paused = true; break;
    case "resumed": s.paused = false; break;
    case "warning": s.warnings.push(e.message); break;
    case "session_finished":
      s.cost = e.report.cost_usd; s.finished = e.report; s.phase = null; ended(e.report.status); break;
    case "loop_finished":
      s.cost = e.report.total_cost_usd; s.finished = e.report; s.phase = null; ended(e.report.status); break;
  }
  if (!s.finished) iter(s, s.iteration).last = t;
}

// The list says how a run ended as soon as the page knows (not at the next poll), also when
// the dashboard closed with the run (`--ui web`) and cannot be asked again.
function ended(status) {
  if (exported) return;
  const mark = document.querySelector("#sessions li.current .status");
  if (mark) { mark.textContent = status; mark.className = "status " + status; }
  setTimeout(sessions, 0);
}

function think(s, from, text) {
  if (s.thoughtFrom !== from) {
    s.thoughts.push({ id: ++s.thoughtCount, from, text: "" });
    s.thoughtFrom = from;
  }
  s.thoughts[s.thoughts.length - 1].text += text;
  if (s.thoughts.length > 200) s.thoughts.shift();
}

// --- drawing -------------------------------------------------------------------------------

function draw(s) {
  $("#title").textContent = s.title || "(starting)";
  $("#models").textContent = s.models.map(([r, m]) => `${r} ${m}`).join(" · ");
  const share = s.maxCost > 0 ? Math.min(1, s.cost / s.maxCost) : 0;
  $("#cost").textContent = `${money(s.cost)} of $${s.maxCost.toFixed(2)}`;
  $("#budget-bar").style.width = (share * 100).toFixed(1) + "%";
  $("#budget-bar").className = share >= 0.8 ? "bar near" : "bar";
  const status = s.finished ? `finished: ${s.finished.status} · ${s.finished.reason}`
    : `iteration ${s.iteration} of ${s.maxIterations}` + (s.phase ? ` · ${s.phase}` : "")
      + (s.paused ? " · PAUSED" : "");
  $("#status").textContent = status;
  // The promise the run kept (a fix run's report; an agent loop's has none).
  const promise = s.finished && s.finished.promise;
  const checks = promise && promise.checks ? promise.checks : [];
  $("#promise").hidden = checks.length === 0;
  $("#promise").textContent = checks.length === 0 ? "" : `promise (${promise.profile}): `
    + checks.map(c => `${c.name} ${c.status}` + (c.detail ? ` (${c.detail})` : "")).join(" · ");
  const badge = $("#breaker");
  badge.textContent = s.breaker.state;
  badge.dataset.state = s.breaker.state;
  badge.title = s.breaker.reason;
  $("#breaker").hidden = s.kind !== "loop";
  $("#reset").hidden = s.kind !== "loop" || !!exported;
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
  for (const it of s.iterations.values()) {
    if (it.n === 0 && !it.tests) continue;
    const live = !it.last && !s.finished;
    const key = JSON.stringify([it.phases.length, it.tests, it.cost, it.last, live ? Date.now() : 0]);
    const drawn = drawnRows.get(it.n);
    if (drawn && drawn[0] === key) continue;
    const row = drawRow(it);
    if (drawn) drawn[1].replaceWith(row); else box.append(row);
    drawnRows.set(it.n, [key, row]);
  }
}

function drawRow(it) {
  const bar = el("div", { class: "phases" });
  const end = it.last || Date.now();
  it.phases.forEach(([phase, start], i) => {
    const stop = it.phases[i + 1] ? it.phases[i + 1][1] : end;
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
    el("span", { class: "money" }, money(it.cost)),
    el("button", { class: "diff", onclick: () => showDiff(it.n) }, "diff"));
  if (it.tests && it.tests.first_failure) row.title = it.tests.first_failure;
  return row;
}

function drawCosts(s) {
  const table = (obj) => Object.entries(obj).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", { class: "money" }, money(v))));
  $("#by-role").replaceChildren(...table(s.costByRole));
  $("#by-model").replaceChildren(...table(s.costByModel));
}

// Thoughts drawn: each once, the last one's text brought up to date.
const drawnThoughts = new Map(); // id -> [length, element]

function drawThoughts(s) {
  const box = $("#thoughts");
  const follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  const kept = new Set(s.thoughts.map((t) => t.id));
  for (const [id, [, e]] of drawnThoughts) {
    if (!kept.has(id)) { e.remove(); drawnThoughts.delete(id); }
  }
  for (const t of s.thoughts) {
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

let state = fresh();
let source = null;
let session = null;
let pending = false;
let controls = false; // the open run takes pause, resume and abort
let exported = null; // an exported page: {id, events, diffs, exported}

function schedule() {
  // Many events at once make one frame.
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(state); });
}

function open(id) {
  if (source) source.close();
  session = id;
  state = fresh();
  controls = false;
  drawnRows.clear(); drawnThoughts.clear();
  $("#timeline").replaceChildren(); $("#thoughts").replaceChildren();
  $("#session").hidden = false;
  source = new EventSource(`api/sessions/${encodeURIComponent(id)}/events`
    + (speed ? `?speed=${encodeURIComponent(speed)}` : ""));
  source.addEventListener("ralph", (m) => {
    const e = JSON.parse(m.data);
    if (e.seq <= state.seq) return; // never twice
    apply(state, e);
    schedule();
  });
  source.onerror = () => {
    $("#conn").textContent = state.finished ? "ended" : "reconnecting…";
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
  if (body.breaker) { state.breaker = { state: body.breaker, reason: "manual_reset" }; schedule(); }
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

$("#pause").addEventListener("click", () => post(state.paused ? "resume" : "pause"));
$("#abort").addEventListener("click", () => { if (confirm("Abort the run? It is saved and can be resumed.")) post("abort"); });
$("#reset").addEventListener("click", () => post("breaker/reset"));
$("#diff-close").addEventListener("click", () => { $("#diff-box").hidden = true; });
const embedded = document.getElementById("ralph-export");
if (embedded) {
  // An exported page (`ralph-loop replay --export page.html`): the session is in it, no server.
  exported = JSON.parse(embedded.textContent);
  session = exported.id;
  for (const e of exported.events) apply(state, e);
  document.querySelector("nav").hidden = true;
  $("#session").hidden = false;
  $("#conn").textContent = `exported ${exported.exported}`;
  draw(state);
} else {
  if (wanted) open(wanted);
  sessions();
  setInterval(sessions, 2000);
}
setInterval(() => { if (!state.finished) schedule(); }, 1000);
