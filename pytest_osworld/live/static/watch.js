// The watch page: one task's desktop in noVNC, read-only unless the run allows input and the person asked.
import RFB from "/novnc/core/rfb.js";

window.osworldWatchStarted = true; // watch.html's check: the viewer started
sessionStorage.removeItem("osworld-watch-reloads");

const params = new URLSearchParams(location.search);
const key = params.get("task") ?? "";
const wantsControl = params.get("control") === "1";
const $ = (id) => document.getElementById(id);

$("task").textContent = key;
document.title = `watch ${key}`;

// The run's state, asked again when an answer does not come within a few seconds (a busy machine).
async function runState() {
  for (let attempt = 1; ; attempt += 1) {
    $("connection").textContent = attempt > 1 ? `loading the run's state (attempt ${attempt})` : "loading the run's state";
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 5000);
    try {
      return await fetch("/api/state", { signal: abort.signal, cache: "no-store" }).then((r) => r.json());
    } catch {
      await new Promise((done) => setTimeout(done, 1000));
    } finally {
      clearTimeout(timer);
    }
  }
}
const state = await runState();
$("connection").textContent = "connecting";
const inputAllowed = Boolean(state.run.input_allowed);
const control = wantsControl && inputAllowed;
const task = state.tasks.find((t) => t.key === key);
// A kept sandbox's task has ended: its score stands, whatever a person does to its desktop now.
const kept = Boolean(task && task.kept);

function showTask(t) {
  if (!t) return;
  const where = t.state === "step" ? `step ${t.step} of ${t.max_steps ?? "?"}` : t.state;
  const why = t.kept ? ` (sandbox kept: ${t.kept})` : "";
  $("task-state").textContent = `${where}${t.sandbox ? ` on ${t.sandbox}` : ""}${why}`;
}
showTask(task);

if (control) {
  const voids = kept ? "its task has ended, its score stands" : "this task will be masked human_interference";
  $("mode").innerHTML = `<span class="warn">control: your keys and mouse reach the desktop, and ${voids}</span>`;
} else {
  $("mode").textContent = inputAllowed ? "view only" : "view only (this run does not allow input)";
  if (inputAllowed) {
    const button = $("take-control");
    button.hidden = false;
    button.addEventListener("click", () => {
      const voids = kept
        ? "This task has ended: its score stands, and its kept desktop is removed at the run's end."
        : "Any key or mouse input you send voids this task's score (it is masked human_interference).";
      if (confirm(`${voids} Take control?`)) {
        params.set("control", "1");
        location.search = params.toString();
      }
    });
  }
}

const scheme = location.protocol === "https:" ? "wss" : "ws";
const url = `${scheme}://${location.host}/vnc?task=${encodeURIComponent(key)}${control ? "&control=1" : ""}`;
// While the task runs (or its sandbox is kept), a view that drops or never finishes its handshake
// connects again: the desktop's VNC server is supervised and comes back when something kills it.
const RUNNING = new Set(["starting", "setup", "step", "evaluating"]);
const STALL_MS = 20000;
const RETRY_MS = 2000;
let current = task;
let attempts = 0;
const watchable = () => Boolean(current && (RUNNING.has(current.state) || current.kept));

function connect() {
  attempts += 1;
  const rfb = new RFB($("screen"), url, { shared: true });
  rfb.viewOnly = !control;
  rfb.scaleViewport = true;
  let stalled = false;
  const stall = setTimeout(() => {
    stalled = true;
    rfb.disconnect();
  }, STALL_MS);
  rfb.addEventListener("connect", () => {
    clearTimeout(stall);
    $("connection").textContent = attempts > 1 ? `connected (attempt ${attempts})` : "connected";
    document.body.dataset.connected = "1";
  });
  rfb.addEventListener("disconnect", (e) => {
    clearTimeout(stall);
    document.body.dataset.connected = "0";
    document.body.dataset.reconnects = String(attempts);
    if (watchable()) {
      $("connection").textContent = stalled ? "no answer; connecting again" : "connection lost; connecting again";
      setTimeout(connect, RETRY_MS);
    } else {
      $("connection").textContent = e.detail.clean && !stalled ? "disconnected" : "connection lost";
    }
  });
  window.osworldRfb = rfb; // for tools and tests that drive the page
}
connect();

const events = new EventSource("/events");
const onData = (e) => {
  const found = JSON.parse(e.data).tasks.find((t) => t.key === key);
  if (found) current = found;
  showTask(found);
};
events.addEventListener("snapshot", onData);
events.addEventListener("update", onData);
events.addEventListener("end", () => events.close());
