// The live page: a snapshot of every task, then the tasks that changed, over server-sent events.
"use strict";

const tasks = new Map();
let run = null;
let clockOffset = 0; // the server's clock minus this page's, in seconds

const $ = (id) => document.getElementById(id);
const now = () => Date.now() / 1000 + clockOffset;

function duration(seconds) {
  if (seconds == null || seconds < 0) return "–";
  const s = Math.floor(seconds);
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  return h ? `${h}h${String(m % 60).padStart(2, "0")}m` : m ? `${m}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

function percent(rate) {
  return rate == null ? "–" : `${(100 * rate).toFixed(1)}%`;
}

function stateText(t) {
  switch (t.state) {
    case "queued": return "queued";
    case "starting": return "setting up (sandbox)";
    case "setup": return "setting up";
    case "step": return `step ${t.step} of ${t.max_steps ?? "?"}`;
    case "evaluating": return "evaluating";
    case "passed": return `passed (score ${t.score ?? 1})`;
    case "failed": return `failed (score ${t.score ?? 0})`;
    case "masked": return `masked (${t.termination ?? "?"})`;
    case "skipped": return "skipped";
    default: return t.state;
  }
}

function elapsedOf(t) {
  if (t.started == null) return null;
  return (t.ended ?? now()) - t.started;
}

function cell(row, name) {
  return row.querySelector(`td.${name}`);
}

function rowFor(t) {
  let row = document.querySelector(`tr[data-key="${CSS.escape(t.key)}"]`);
  if (!row) {
    row = document.createElement("tr");
    row.dataset.key = t.key;
    for (const name of ["task", "state", "worker", "sandbox", "elapsed", "shot", "answer", "watch"]) {
      const td = document.createElement("td");
      td.className = name;
      row.appendChild(td);
    }
    cell(row, "task").textContent = t.name;
    const body = document.querySelector("#tasks tbody");
    const after = [...body.children].find((other) => tasks.get(other.dataset.key).order > t.order);
    body.insertBefore(row, after ?? null);
  }
  return row;
}

function renderTask(t) {
  const row = rowFor(t);
  row.dataset.state = t.state;
  const state = cell(row, "state");
  state.textContent = stateText(t);
  state.title = t.message ?? "";
  cell(row, "worker").textContent = t.worker ?? "";
  cell(row, "sandbox").textContent = t.sandbox ?? "";
  cell(row, "elapsed").textContent = duration(elapsedOf(t));
  const shot = cell(row, "shot");
  const running = !["queued", "passed", "failed", "masked", "skipped"].includes(t.state);
  if (running && t.shot > 0) {
    const src = `/shot?task=${encodeURIComponent(t.key)}&n=${t.shot}`;
    let img = shot.querySelector("img");
    if (!img) {
      img = document.createElement("img");
      img.alt = `last screen of ${t.key}`;
      shot.appendChild(img);
    }
    if (img.getAttribute("src") !== src) img.setAttribute("src", src);
  } else if (!running) {
    shot.replaceChildren();
  }
  const answer = cell(row, "answer");
  const pre = answer.querySelector("pre") ?? answer.appendChild(document.createElement("pre"));
  pre.textContent = t.response ?? (t.state === "masked" || t.state === "skipped" ? t.message ?? "" : "");
  const watch = cell(row, "watch");
  watch.replaceChildren();
  if (t.watchable) {
    const link = document.createElement("a");
    link.href = `/watch?task=${encodeURIComponent(t.key)}`;
    link.target = "_blank";
    link.className = "watch-link";
    link.textContent = "watch";
    watch.appendChild(link);
  }
  if (t.kept) {
    const note = document.createElement("div");
    note.className = "kept";
    note.textContent = `sandbox kept for a look (${t.kept}) until the run ends`;
    watch.appendChild(note);
  }
  if (t.input_sent > 0) {
    const note = document.createElement("div");
    note.className = "touched";
    note.textContent = `touched by a person at ${t.touched_at}`;
    watch.appendChild(note);
  }
}

function renderRun() {
  if (!run) return;
  $("run-id").textContent = run.run_id;
  const badge = $("run-state");
  badge.textContent = run.ended ? "ended" : "running";
  badge.className = `badge ${run.ended ? "ended" : "running"}`;
  const c = run.counts;
  $("counts").textContent =
    `${c.total} selected: ${c.queued} queued, ${c.running} running, ${c.passed} passed, ` +
    `${c.failed} failed, ${c.masked} masked, ${c.skipped} skipped` +
    (c.kept ? `; ${c.kept} sandbox${c.kept === 1 ? "" : "es"} kept for a look` : "");
  const all = run.views.all;
  const valid = run.views.valid;
  $("success-rate").textContent = `${percent(all.success_rate)} (${all.successes}/${all.episodes})`;
  $("raw-rate").textContent = `${percent(all.raw_rate)} (${all.score_sum}/${all.episodes})`;
  $("valid-rate").textContent = `${percent(valid.success_rate)} success, ${percent(valid.raw_rate)} raw (${valid.episodes} valid)`;
  const u = run.usage;
  $("cost").textContent =
    (u.cost == null ? "no prices set" : u.cost.toFixed(4)) + ` (${u.prompt_tokens} + ${u.completion_tokens} tokens)`;
  $("final-page").textContent = run.final_page ? `The run's final state is saved as ${run.final_page}.` : "";
  tick();
}

function tick() {
  if (run) $("run-elapsed").textContent = duration((run.ended ?? now()) - run.started);
  for (const t of tasks.values()) {
    if (t.started != null && t.ended == null) {
      cell(rowFor(t), "elapsed").textContent = duration(elapsedOf(t));
    }
  }
}

function apply(data) {
  clockOffset = data.now - Date.now() / 1000;
  for (const t of data.tasks) tasks.set(t.key, t);
  for (const t of data.tasks) renderTask(t);
  run = data.run;
  renderRun();
  document.body.dataset.version = String(data.version);
}

const events = new EventSource("/events");
events.addEventListener("snapshot", (e) => apply(JSON.parse(e.data)));
events.addEventListener("update", (e) => apply(JSON.parse(e.data)));
events.addEventListener("end", () => {
  events.close();
  document.body.dataset.ended = "1";
});
events.onerror = () => {
  if (!run || !run.ended) $("run-state").textContent = "reconnecting";
};
setInterval(tick, 1000);
